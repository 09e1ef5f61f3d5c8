/* AWS Signature Version 4 (see aws_sigv4.h). The steps are AWS's documented
 * ones: a canonical request, a string to sign over its hash, a signing key
 * derived from the secret by four HMACs (date, region, service,
 * "aws4_request"), and the hex HMAC of the string to sign under that key. */
#include "io/aws_sigv4.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

/* ---- a small growable string ------------------------------------------ */

typedef struct Buf {
    char *p;
    size_t len, cap;
    bool failed; /* out of memory once: every later append is dropped */
} Buf;

static void buf_add(Buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void buf_str(Buf *b, const char *s) { buf_add(b, s, strlen(s)); }

static void to_hex(const unsigned char *d, size_t n, char *hex)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[2 * n] = '\0';
}

void cv_sha256_hex(const void *data, size_t n, char hex[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(data, n, md, &len, EVP_sha256(), NULL);
    to_hex(md, 32, hex);
}

static void hmac(const unsigned char *key, size_t klen, const char *msg, unsigned char out[32])
{
    unsigned int len = 32;
    HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out, &len);
}

char *cv_aws_uri_encode(const char *s, bool keep_slash)
{
    static const char digits[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out = malloc(3 * n + 1), *o = out;
    if (!out)
        return NULL;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
            *c == '-' || *c == '_' || *c == '.' || *c == '~' || (keep_slash && *c == '/')) {
            *o++ = (char)*c;
        } else {
            *o++ = '%';
            *o++ = digits[*c >> 4];
            *o++ = digits[*c & 15];
        }
    }
    *o = '\0';
    return out;
}

void cv_aws_amz_date(long long t, char buf[17])
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, 17, "%Y%m%dT%H%M%SZ", &tm);
}

/* ---- canonical pieces -------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The query's pairs sorted by name then value ("k" becomes "k="). Sorting
 * "name=value" strings byte-wise orders by name first only when no name is a
 * prefix of another followed by a byte below '='; so compare the parts. */
typedef struct Pair {
    const char *name, *value;
    size_t nlen, vlen;
} Pair;

static int cmp_pair(const void *a, const void *b)
{
    const Pair *x = a, *y = b;
    size_t n = x->nlen < y->nlen ? x->nlen : y->nlen;
    int c = memcmp(x->name, y->name, n);
    if (c || x->nlen != y->nlen)
        return c ? c : (x->nlen < y->nlen ? -1 : 1);
    n = x->vlen < y->vlen ? x->vlen : y->vlen;
    c = memcmp(x->value, y->value, n);
    return c ? c : (x->vlen < y->vlen ? -1 : x->vlen > y->vlen);
}

static bool add_query(Buf *b, const char *q)
{
    size_t count = 0;
    Pair *pairs = NULL;
    if (q && *q) {
        count = 1;
        for (const char *c = q; *c; c++)
            count += *c == '&';
        if (!(pairs = calloc(count, sizeof *pairs)))
            return false;
        size_t i = 0;
        for (const char *c = q; i < count; i++) {
            const char *end = strchr(c, '&');
            size_t len = end ? (size_t)(end - c) : strlen(c);
            const char *eq = memchr(c, '=', len);
            pairs[i].name = c;
            pairs[i].nlen = eq ? (size_t)(eq - c) : len;
            pairs[i].value = eq ? eq + 1 : c + len;
            pairs[i].vlen = eq ? len - pairs[i].nlen - 1 : 0;
            c += len + (end != NULL);
        }
        qsort(pairs, count, sizeof *pairs, cmp_pair);
    }
    size_t written = 0;
    for (size_t i = 0; i < count; i++) {
        if (pairs[i].nlen == 0 && pairs[i].vlen == 0)
            continue; /* "a=1&&b=2" */
        if (written++)
            buf_str(b, "&");
        buf_add(b, pairs[i].name, pairs[i].nlen);
        buf_str(b, "=");
        buf_add(b, pairs[i].value, pairs[i].vlen);
    }
    buf_str(b, "\n");
    free(pairs);
    return true;
}

/* "name:value" lines, lower-cased names, values trimmed with inner spaces
 * folded, sorted by name (a repeated name's values joined by ',' in the
 * order given); `signed_names` gets "a;b;c". */
static bool add_headers(Buf *b, Buf *signed_names, const CvSigV4Header *h, size_t n)
{
    char **lines = calloc(n ? n : 1, sizeof *lines);
    bool ok = lines != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        size_t nl = strlen(h[i].name), vl = strlen(h[i].value);
        /* "name" NUL-free, then a '\x01' separator that sorts below every
         * name byte, so "a" sorts before "a-b"; the index keeps the order of
         * repeated names stable. */
        char *line = malloc(nl + vl + 32);
        if (!(ok = line != NULL))
            break;
        size_t k = 0;
        for (size_t j = 0; j < nl; j++)
            line[k++] = (char)((h[i].name[j] >= 'A' && h[i].name[j] <= 'Z') ? h[i].name[j] + 32
                                                                              : h[i].name[j]);
        k += (size_t)sprintf(line + k, "\x01%08zu\x01", i);
        const char *v = h[i].value;
        while (*v == ' ' || *v == '\t')
            v++;
        bool space = false;
        for (; *v; v++) {
            if (*v == ' ' || *v == '\t') {
                space = true;
                continue;
            }
            if (space && line[k - 1] != '\x01')
                line[k++] = ' ';
            space = false;
            line[k++] = *v;
        }
        line[k] = '\0';
        lines[i] = line;
    }
    if (ok && n)
        qsort(lines, n, sizeof *lines, cmp_str);
    for (size_t i = 0; ok && i < n; i++) {
        const char *name_end = strchr(lines[i], '\x01');
        size_t nl = (size_t)(name_end - lines[i]);
        const char *value = name_end + 10; /* past "\x01%08zu\x01" */
        bool same = i > 0 && strncmp(lines[i - 1], lines[i], nl + 1) == 0;
        if (same) {
            b->len--; /* drop the previous value's '\n' */
            buf_str(b, ",");
        } else {
            if (i)
                buf_str(signed_names, ";");
            buf_add(signed_names, lines[i], nl);
            buf_add(b, lines[i], nl);
            buf_str(b, ":");
        }
        buf_str(b, value);
        buf_str(b, "\n");
    }
    for (size_t i = 0; lines && i < n; i++)
        free(lines[i]);
    free(lines);
    return ok;
}

CvStatus cv_sigv4_authorization(const CvSigV4Request *req, char **out, char **canonical)
{
    Buf creq = {0}, names = {0}, sts = {0}, auth = {0};
    CvStatus s = CV_STATUS_OK;
    *out = NULL;
    if (canonical)
        *canonical = NULL;
    if (strlen(req->amz_date) != 16 || req->amz_date[8] != 'T' || req->amz_date[15] != 'Z') {
        s = cv_error(CV_INVALID_ARGUMENT, "SigV4: the date '%s' is not YYYYMMDDTHHMMSSZ",
                     req->amz_date);
        goto done;
    }
    buf_str(&creq, req->method);
    buf_str(&creq, "\n");
    buf_str(&creq, req->path && *req->path ? req->path : "/");
    buf_str(&creq, "\n");
    if (!add_query(&creq, req->query) ||
        !add_headers(&creq, &names, req->headers, req->header_count)) {
        s = cv_error_nomem();
        goto done;
    }
    buf_str(&creq, "\n");
    buf_str(&creq, names.p ? names.p : "");
    buf_str(&creq, "\n");
    buf_str(&creq, req->payload_sha256);
    if (creq.failed || names.failed) {
        s = cv_error_nomem();
        goto done;
    }

    char date[9], scope[160], hash[65];
    memcpy(date, req->amz_date, 8);
    date[8] = '\0';
    snprintf(scope, sizeof scope, "%s/%s/%s/aws4_request", date, req->region, req->service);
    cv_sha256_hex(creq.p, creq.len, hash);
    buf_str(&sts, "AWS4-HMAC-SHA256\n");
    buf_str(&sts, req->amz_date);
    buf_str(&sts, "\n");
    buf_str(&sts, scope);
    buf_str(&sts, "\n");
    buf_str(&sts, hash);

    /* The signing key: wiped after use. */
    size_t slen = strlen(req->secret_key);
    unsigned char *k0 = malloc(slen + 5), key[32], sig[32];
    if (!k0 || sts.failed) {
        free(k0);
        s = cv_error_nomem();
        goto done;
    }
    memcpy(k0, "AWS4", 4);
    memcpy(k0 + 4, req->secret_key, slen);
    hmac(k0, slen + 4, date, key);
    OPENSSL_cleanse(k0, slen + 4);
    free(k0);
    hmac(key, 32, req->region, sig);
    hmac(sig, 32, req->service, key);
    hmac(key, 32, "aws4_request", sig);
    memcpy(key, sig, 32);
    hmac(key, 32, sts.p, sig);
    OPENSSL_cleanse(key, sizeof key);
    char sighex[65];
    to_hex(sig, 32, sighex);

    buf_str(&auth, "AWS4-HMAC-SHA256 Credential=");
    buf_str(&auth, req->access_key);
    buf_str(&auth, "/");
    buf_str(&auth, scope);
    buf_str(&auth, ", SignedHeaders=");
    buf_str(&auth, names.p);
    buf_str(&auth, ", Signature=");
    buf_str(&auth, sighex);
    if (auth.failed) {
        s = cv_error_nomem();
        goto done;
    }
    *out = auth.p;
    auth.p = NULL;
    if (canonical) {
        *canonical = creq.p;
        creq.p = NULL;
    }
done:
    free(creq.p);
    free(names.p);
    free(sts.p);
    free(auth.p);
    return s;
}
