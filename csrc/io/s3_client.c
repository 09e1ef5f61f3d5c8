/* The S3 request layer under fs_s3.c (see s3_client.h): signing each
 * attempt, addressing, requests, errors and the small XML scanner. */
#include "io/s3_client.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "io/aws_sigv4.h"

/* ---- one call's configuration ------------------------------------------ */

/* Sign an attempt: x-amz-date, x-amz-content-sha256, x-amz-security-token
 * and Authorization over host and every x-amz-* header of the request. */
static CvStatus s3_sign(void *ctx, const CvHttpRequest *req, CvHttpHeaders *out)
{
    CvAwsConfig *conf = ctx;
    CvAwsCredentials cred = {0};
    CvSigV4Header *h = NULL;
    char *auth = NULL, host[512], path_buf[1], date[17], hash[65];
    CvStatus s = cv_aws_config_credentials(conf, &cred);
    if (s || !cred.access_key)
        goto done;
    /* The URL's parts as curl sends them. */
    const char *a = strstr(req->url, "://");
    a = a ? a + 3 : req->url;
    size_t alen = strcspn(a, "/?");
    if (alen >= sizeof host) {
        s = cv_error(CV_INVALID_ARGUMENT, "s3: the endpoint's host name is too long");
        goto done;
    }
    memcpy(host, a, alen);
    host[alen] = '\0';
    bool https = strncmp(req->url, "https:", 6) == 0;
    size_t hl = strlen(host);
    if ((https && hl > 4 && strcmp(host + hl - 4, ":443") == 0) ||
        (!https && hl > 3 && strcmp(host + hl - 3, ":80") == 0))
        *strrchr(host, ':') = '\0';
    const char *path = a + alen, *q = strchr(path, '?');
    char *path_copy = NULL;
    if (q && !(path_copy = strndup(path, (size_t)(q - path)))) {
        s = cv_error_nomem();
        goto done;
    }
    path_buf[0] = '\0';
    if (req->body_sha256[0])
        snprintf(hash, sizeof hash, "%s", req->body_sha256);
    else
        cv_sha256_hex(req->body ? req->body : (const void *)path_buf, req->body_size, hash);
    cv_aws_amz_date((long long)time(NULL), date);

    size_t extra = req->headers ? req->headers->count : 0, n = 0;
    char **names = calloc(extra + 1, sizeof *names);
    if (!names || !(h = calloc(extra + 4, sizeof *h))) {
        free(names);
        free(path_copy);
        s = cv_error_nomem();
        goto done;
    }
    h[n++] = (CvSigV4Header){"host", host};
    h[n++] = (CvSigV4Header){"x-amz-date", date};
    h[n++] = (CvSigV4Header){"x-amz-content-sha256", hash};
    if (cred.session_token)
        h[n++] = (CvSigV4Header){"x-amz-security-token", cred.session_token};
    for (size_t i = 0; i < extra; i++) {
        const char *line = req->headers->lines[i], *colon = strchr(line, ':');
        if (!colon || strncasecmp(line, "x-amz-", 6) != 0)
            continue;
        if (!(names[i] = strndup(line, (size_t)(colon - line)))) {
            s = cv_error_nomem();
            break;
        }
        h[n++] = (CvSigV4Header){names[i], colon + 1};
    }
    if (!s) {
        CvSigV4Request sr = {req->method, path_copy ? path_copy : path, q ? q + 1 : NULL, h, n,
                             hash, date, cv_aws_config_region(conf), "s3", cred.access_key,
                             cred.secret_key};
        s = cv_sigv4_authorization(&sr, &auth, NULL);
    }
    for (size_t i = 0; i < extra; i++)
        free(names[i]);
    free(names);
    free(path_copy);
    if (s || (s = cv_http_headers_add(out, "x-amz-date: %s", date)) ||
        (s = cv_http_headers_add(out, "x-amz-content-sha256: %s", hash)) ||
        (cred.session_token &&
         (s = cv_http_headers_add(out, "x-amz-security-token: %s", cred.session_token))) ||
        (s = cv_http_headers_add(out, "Authorization: %s", auth)))
        goto done;
done:
    free(h);
    free(auth);
    cv_aws_credentials_clear(&cred);
    return s;
}

CvStatus cv_s3_begin(CvS3 *s3)
{
    CvStatus s = cv_aws_config_get(&s3->conf);
    if (s)
        return s;
    s3->auth.sign = cv_aws_config_anonymous(s3->conf) ? NULL : s3_sign;
    s3->auth.ctx = s3->conf;
    s3->auth.source = cv_aws_config_source(s3->conf);
    return CV_STATUS_OK;
}

void cv_s3_end(CvS3 *s3)
{
    cv_aws_config_release(s3->conf);
    s3->conf = NULL;
}

/* ---- locations --------------------------------------------------------- */

void cv_s3_loc_free(CvS3Loc *l)
{
    free(l->bucket);
    free(l->key);
    l->bucket = l->key = NULL;
}

CvStatus cv_s3_loc_parse(const char *url, CvS3Loc *l)
{
    memset(l, 0, sizeof *l);
    if (strncmp(url, "s3://", 5) != 0)
        return cv_error(CV_INVALID_ARGUMENT, "%s: not an s3:// URL", url);
    const char *b = url + 5, *slash = strchr(b, '/');
    size_t blen = slash ? (size_t)(slash - b) : strlen(b);
    if (blen == 0)
        return cv_error(CV_INVALID_ARGUMENT, "%s: an s3:// URL names a bucket (s3://BUCKET/KEY)",
                        url);
    if (!(l->bucket = strndup(b, blen)) || !(l->key = strdup(slash ? slash + 1 : ""))) {
        cv_s3_loc_free(l);
        return cv_error_nomem();
    }
    /* "." and ".." segments would be folded away by the HTTP client's path
     * normalisation (another key, a broken signature): refuse them. */
    for (const char *seg = l->key; *seg;) {
        size_t n = strcspn(seg, "/");
        if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.')) {
            cv_s3_loc_free(l);
            return cv_error(CV_INVALID_ARGUMENT,
                            "%s: keys with '.' or '..' path segments are not supported", url);
        }
        seg += n + (seg[n] == '/');
    }
    return CV_STATUS_OK;
}

/* Virtual-hosted addressing needs a bucket name that is one DNS label. */
static bool virtual_hosted(const CvS3 *s3, const char *bucket)
{
    if (cv_aws_config_custom_endpoint(s3->conf))
        return false;
    for (const char *c = bucket; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-'))
            return false;
    return true;
}

/* The request URL for bucket/key (key "" for the bucket) with an encoded
 * query (NULL: none). malloc'd, NULL when out of memory. */
char *cv_s3_endpoint_url(const CvS3 *s3, const char *bucket, const char *key, const char *query)
{
    const char *ep = cv_aws_config_endpoint(s3->conf);
    char *ek = cv_aws_uri_encode(key, true), *eb = cv_aws_uri_encode(bucket, false);
    size_t n = strlen(ep) + (ek ? strlen(ek) : 0) + (eb ? strlen(eb) : 0) +
               (query ? strlen(query) : 0) + 8;
    char *url = ek && eb ? malloc(n) : NULL;
    if (url) {
        const char *rest = strstr(ep, "://");
        if (virtual_hosted(s3, bucket) && rest)
            snprintf(url, n, "%.*s%s.%s/%s%s%s", (int)(rest + 3 - ep), ep, eb, rest + 3, ek,
                     query ? "?" : "", query ? query : "");
        else
            snprintf(url, n, "%s/%s%s%s%s%s", ep, eb, *ek ? "/" : "", ek, query ? "?" : "",
                     query ? query : "");
    }
    free(ek);
    free(eb);
    return url;
}

/* "s3://bucket/key" for messages; malloc'd. */
char *cv_s3_display_url(const char *bucket, const char *key)
{
    size_t n = strlen(bucket) + strlen(key) + 8;
    char *d = malloc(n);
    if (d)
        snprintf(d, n, "s3://%s%s%s", bucket, *key ? "/" : "", key);
    return d;
}

/* Errors of cv_http_perform (UNAVAILABLE after its retries) name the
 * endpoint's URL: name the s3:// URL instead (the endpoint's host is kept
 * after it, for finding a misconfigured endpoint). */
static CvStatus name_display(CvStatus s, const char *url, const char *bucket, const char *key)
{
    size_t ulen = strcspn(url, "?");
    char *d = cv_s3_display_url(bucket, key);
    char *msg = NULL;
    if (d && strncmp(s->message, url, ulen) == 0) {
        const char *rest = s->message + ulen;
        if (*rest == '?') /* http.c shows a query as "?..." */
            rest += strcspn(rest, ":");
        size_t hl = strcspn(url + strcspn(url, ":") + 3, "/");
        size_t n = strlen(d) + strlen(rest) + hl + 64;
        if ((msg = malloc(n)))
            snprintf(msg, n, "%s (at %.*s)%s", d, (int)(strcspn(url, ":") + 3 + hl), url, rest);
    }
    if (msg) {
        free(s->message);
        s->message = msg;
    }
    free(d);
    return s;
}

/* Send one request (body hashed once here, not per attempt). */
CvStatus cv_s3_request(CvS3 *s3, const char *method, const char *bucket, const char *key,
                           const char *query, const CvHttpHeaders *headers, const void *body,
                           size_t body_size, CvHttpResponse *resp)
{
    memset(resp, 0, sizeof *resp);
    char *url = cv_s3_endpoint_url(s3, bucket, key, query);
    if (!url)
        return cv_error_nomem();
    CvHttpRequest req = {method, url, headers, body, body_size, &s3->auth, ""};
    if (s3->auth.sign)
        cv_sha256_hex(body ? body : (const void *)"", body_size, req.body_sha256);
    CvStatus s = cv_http_perform(&req, resp);
    if (s)
        s = name_display(s, url, bucket, key);
    free(url);
    return s;
}

/* The error for an answer the caller does not accept, naming bucket/key. */
CvStatus cv_s3_error(const CvS3 *s3, const CvHttpResponse *resp, const char *bucket,
                     const char *key)
{
    char *d = cv_s3_display_url(bucket, key);
    char region[64];
    if (!d)
        return cv_error_nomem();
    CvStatus s;
    /* A bucket in another region than the one signed for: AWS answers 301
     * (or 400) and names the bucket's region; say what to set. */
    if ((resp->status == 301 || resp->status == 400) &&
        cv_http_response_header(resp, "x-amz-bucket-region", region, sizeof region) &&
        strcmp(region, cv_aws_config_region(s3->conf)) != 0)
        s = cv_error(CV_FAILED_PRECONDITION,
                     "%s: the bucket is in region %s, not %s (set AWS_REGION=%s)", d, region,
                     cv_aws_config_region(s3->conf), region);
    else
        s = cv_http_error(resp, d, &s3->auth);
    free(d);
    return s;
}

/* ---- XML answers ------------------------------------------------------- */

/* The text of the next <tag>...</tag> in [*p, end), unescaped into a malloc'd
 * string (*out); *p moves past it. false when there is none (or no memory:
 * *out stays NULL and *oom is set). */
bool cv_s3_xml_span(const char **p, const char *end, const char *tag, const char **a,
                    const char **b)
{
    char open[64], close[64];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    const char *x = memmem(*p, (size_t)(end - *p), open, strlen(open));
    if (!x)
        return false;
    x += strlen(open);
    const char *y = memmem(x, (size_t)(end - x), close, strlen(close));
    if (!y)
        return false;
    *p = y + strlen(close);
    *a = x;
    *b = y;
    return true;
}

bool cv_s3_xml_next(const char **p, const char *end, const char *tag, char **out, bool *oom)
{
    const char *a, *b;
    *out = NULL;
    if (!cv_s3_xml_span(p, end, tag, &a, &b))
        return false;
    char *o = malloc((size_t)(b - a) + 1);
    if (!o) {
        *oom = true;
        return false;
    }
    *out = o;
    for (const char *c = a; c < b;) {
        static const struct { const char *ent; char ch; } ents[] = {
            {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
        bool done = false;
        if (*c == '&') {
            for (size_t i = 0; i < sizeof ents / sizeof *ents && !done; i++) {
                size_t el = strlen(ents[i].ent);
                if ((size_t)(b - c) >= el && memcmp(c, ents[i].ent, el) == 0) {
                    *o++ = ents[i].ch;
                    c += el;
                    done = true;
                }
            }
            if (!done && c + 2 < b && c[1] == '#') {
                char *stop;
                unsigned long cp = c[2] == 'x' ? strtoul(c + 3, &stop, 16) : strtoul(c + 2, &stop, 10);
                if (stop < b && *stop == ';' && cp > 0 && cp < 0x110000) {
                    /* UTF-8 */
                    if (cp < 0x80) {
                        *o++ = (char)cp;
                    } else if (cp < 0x800) {
                        *o++ = (char)(0xC0 | (cp >> 6));
                        *o++ = (char)(0x80 | (cp & 0x3F));
                    } else if (cp < 0x10000) {
                        *o++ = (char)(0xE0 | (cp >> 12));
                        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                        *o++ = (char)(0x80 | (cp & 0x3F));
                    } else {
                        *o++ = (char)(0xF0 | (cp >> 18));
                        *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
                        *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                        *o++ = (char)(0x80 | (cp & 0x3F));
                    }
                    c = stop + 1;
                    done = true;
                }
            }
        }
        if (!done)
            *o++ = *c++;
    }
    *o = '\0';
    return true;
}

/* The text of <tag> in [p, end) into dst (cut at cap); false when absent. */
bool cv_s3_xml_get(const char *p, const char *end, const char *tag, char *dst, size_t cap)
{
    char *v = NULL;
    bool oom = false;
    if (!cv_s3_xml_next(&p, end, tag, &v, &oom))
        return false;
    snprintf(dst, cap, "%s", v);
    free(v);
    return true;
}

/* A 200 answer whose body is an <Error> (CompleteMultipartUpload and
 * CopyObject may fail after answering 200). */
CvStatus cv_s3_error_in_body(const CvHttpResponse *resp, const char *bucket, const char *key,
                              const char *what)
{
    const char *end = resp->body + resp->body_size;
    char code[128];
    if (!resp->body || !memmem(resp->body, resp->body_size, "<Error>", 7) ||
        !cv_s3_xml_get(resp->body, end, "Code", code, sizeof code))
        return CV_STATUS_OK;
    return cv_error(CV_UNAVAILABLE, "s3://%s/%s: %s failed (%s)", bucket, key, what, code);
}

/* ---- objects and prefixes -------------------------------------------------------------- */

static const char *const MONTHS = "JanFebMarAprMayJunJulAugSepOctNovDec";

/* "Sun, 06 Nov 1994 08:49:37 GMT" or "1994-11-06T08:49:37.000Z" to ns. */
int64_t cv_s3_parse_time(const char *v)
{
    struct tm tm = {0};
    char mon[4] = "";
    if (sscanf(v, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec) == 6) {
        tm.tm_mon -= 1;
    } else if (sscanf(v, "%*3s, %d %3s %d %d:%d:%d", &tm.tm_mday, mon, &tm.tm_year, &tm.tm_hour,
                      &tm.tm_min, &tm.tm_sec) == 6) {
        const char *m = strstr(MONTHS, mon);
        if (!m || strlen(mon) != 3)
            return 0;
        tm.tm_mon = (int)(m - MONTHS) / 3;
    } else {
        return 0;
    }
    tm.tm_year -= 1900;
    return (int64_t)timegm(&tm) * 1000000000;
}

/* An ETag without its quotes into a CvFileInfo's version. */
void cv_s3_set_version(CvFileInfo *info, const char *etag)
{
    size_t n = strlen(etag);
    if (n >= 2 && etag[0] == '"' && etag[n - 1] == '"') {
        etag++;
        n -= 2;
    }
    n = n < sizeof info->version - 1 ? n : sizeof info->version - 1;
    memcpy(info->version, etag, n);
    info->version[n] = '\0';
}

/* HEAD the object: *status gets the answer (200: *info filled). */
CvStatus cv_s3_head_object(CvS3 *s3, const CvS3Loc *l, long *status, CvFileInfo *info)
{
    CvHttpResponse resp;
    char v[128];
    CvStatus s = cv_s3_request(s3, "HEAD", l->bucket, l->key, NULL, NULL, NULL, 0, &resp);
    if (!s) {
        *status = resp.status;
        if (resp.status == 200) {
            memset(info, 0, sizeof *info);
            info->size = cv_http_response_header(&resp, "Content-Length", v, sizeof v)
                             ? strtoull(v, NULL, 10)
                             : UINT64_MAX;
            if (cv_http_response_header(&resp, "Last-Modified", v, sizeof v))
                info->mtime_ns = cv_s3_parse_time(v);
            if (cv_http_response_header(&resp, "ETag", v, sizeof v))
                cv_s3_set_version(info, v);
        } else if (resp.status != 404) {
            s = cv_s3_error(s3, &resp, l->bucket, l->key);
        }
    }
    cv_http_response_free(&resp);
    return s;
}

/* Whether any object has a key starting with `prefix` (a directory). */
CvStatus cv_s3_prefix_exists(CvS3 *s3, const char *bucket, const char *prefix, bool *exists)
{
    CvHttpResponse resp;
    char *ep = cv_aws_uri_encode(prefix, false), *q = NULL;
    CvStatus s = CV_STATUS_OK;
    if (!ep || !(q = malloc(strlen(ep) + 64))) {
        s = cv_error_nomem();
        goto done;
    }
    sprintf(q, "list-type=2&max-keys=1&prefix=%s", ep);
    if ((s = cv_s3_request(s3, "GET", bucket, "", q, NULL, NULL, 0, &resp)))
        goto done_resp;
    if (resp.status != 200) {
        s = cv_s3_error(s3, &resp, bucket, prefix);
        goto done_resp;
    }
    *exists = memmem(resp.body, resp.body_size, "<Key>", 5) ||
              memmem(resp.body, resp.body_size, "<CommonPrefixes>", 16);
done_resp:
    cv_http_response_free(&resp);
done:
    free(ep);
    free(q);
    return s;
}

