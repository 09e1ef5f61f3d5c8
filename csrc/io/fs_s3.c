/* s3:// over HTTP (io/http.h), signed with SigV4 (io/aws_sigv4.h) using the
 * credentials io/aws_credentials.h finds. Works against AWS (virtual-hosted
 * addressing: https://bucket.s3.REGION.amazonaws.com/key) and S3-compatible
 * stores at a custom endpoint (path-style: http://host:port/bucket/key).
 *
 * Directories are prefixes ending in '/'. make_dir writes an empty marker
 * object "dir/", as TensorFlow's S3 and GCS file systems do, so that a
 * directory made and still empty exists (isdir, listdir) as a local one
 * would; listings never report markers as entries, and remove_dir deletes
 * the marker. rename is a copy and a delete (the layer's), copy is S3's
 * server-side CopyObject (objects over 5 GiB are copied byte by byte here).
 *
 * Writes are buffered: a single PUT at commit when under one part (8 MiB),
 * else a multipart upload whose parts go out as they fill and which commit
 * completes (abort aborts it): an object appears only complete.
 *
 * Listings ask for CONVEYOR_S3_LIST_MAX_KEYS keys a page (default 1000, the
 * most S3 gives; tests make it small to walk many pages).
 *
 * Thread-safety: the table's methods from any thread; a file's from one at
 * a time. Messages name the s3:// URL, never the endpoint's URL or a key. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "io/aws_sigv4.h"
#include "io/fs.h"
#include "io/s3_client.h"

#define PART_SIZE ((size_t)8 << 20)
/* S3 takes at most 10,000 parts: the part size doubles every 1,000 parts
 * (8 MiB parts to 8 GiB, 16 MiB to 24 GiB, ...: up to 8 TB in all, past
 * S3's 5 TB object limit). */
#define PART_SIZE_FOR(parts) (PART_SIZE << ((parts) / 1000 < 9 ? (parts) / 1000 : 9))
#define MAX_COPY_SIZE ((uint64_t)5 << 30) /* CopyObject's limit */

/* The bucket as a directory: HEAD bucket. */
static CvStatus stat_bucket(CvS3 *s3, const CvS3Loc *l, CvFileInfo *out)
{
    CvHttpResponse resp;
    CvStatus s = cv_s3_request(s3, "HEAD", l->bucket, "", NULL, NULL, NULL, 0, &resp);
    if (!s && resp.status == 200) {
        memset(out, 0, sizeof *out);
        out->is_dir = true;
    } else if (!s) {
        s = cv_s3_error(s3, &resp, l->bucket, "");
    }
    cv_http_response_free(&resp);
    return s;
}

/* stat for a parsed location (s3 open). */
static CvStatus stat_loc(CvS3 *s3, const CvS3Loc *l, const char *url, CvFileInfo *out)
{
    long status = 0;
    CvStatus s;
    if (!*l->key)
        return stat_bucket(s3, l, out);
    size_t kl = strlen(l->key);
    if (l->key[kl - 1] != '/') {
        if ((s = cv_s3_head_object(s3, l, &status, out)) || status == 200)
            return s;
    }
    char *prefix = malloc(kl + 2);
    bool dir = false;
    if (!prefix)
        return cv_error_nomem();
    sprintf(prefix, "%s%s", l->key, l->key[kl - 1] == '/' ? "" : "/");
    s = cv_s3_prefix_exists(s3, l->bucket, prefix, &dir);
    free(prefix);
    if (s)
        return s;
    if (!dir)
        return cv_error(CV_NOT_FOUND, "%s: no such object or directory", url);
    memset(out, 0, sizeof *out);
    out->is_dir = true;
    return CV_STATUS_OK;
}

static CvStatus s3_stat(const char *url, CvFileInfo *out)
{
    CvS3 s3 = {0};
    CvS3Loc l;
    CvStatus s = cv_s3_loc_parse(url, &l);
    if (!s && !(s = cv_s3_begin(&s3)))
        s = stat_loc(&s3, &l, url, out);
    cv_s3_end(&s3);
    cv_s3_loc_free(&l);
    return s;
}

/* ---- reading ----------------------------------------------------------- */

typedef struct S3Read {
    CvReadFile base;
    CvS3 s3;           /* the stream's auth lives here: the struct never moves */
    char *endpoint;    /* the object's request URL */
    CvHttpHeaders if_match; /* "If-Match: <the ETag at open>": later reads see that object */
    CvHttpStream *stream; /* the first one starts at open */
    bool info_known;
    CvStatus info_error; /* sticky: the open's error, found by the first answer */
} S3Read;

static void read_close(CvReadFile *f)
{
    S3Read *r = (S3Read *)f;
    cv_http_stream_close(r->stream);
    cv_http_headers_free(&r->if_match);
    cv_status_free(r->info_error);
    cv_s3_end(&r->s3);
    free(r->endpoint);
    free(r->base.url);
    free(r);
}

/* What open_read said when it asked HEAD first (NOT_FOUND, "a directory",
 * HEAD's own error), for a first answer (`first_status`) that refused the
 * GET; `orig` when HEAD now finds the object. */
static CvStatus open_error(S3Read *r, long first_status, CvStatus orig)
{
    CvS3Loc l = {0};
    CvFileInfo info;
    long status = first_status;
    bool dir = false;
    char *prefix = NULL;
    CvStatus s = cv_s3_loc_parse(r->base.url, &l);
    /* A 404 already says there is no object: only the directory is asked. */
    if (!s && (status == 404 || (!(s = cv_s3_head_object(&r->s3, &l, &status, &info)) &&
                                 status == 404))) {
        CvStatus d = (prefix = malloc(strlen(l.key) + 2))
                         ? (sprintf(prefix, "%s/", l.key),
                            cv_s3_prefix_exists(&r->s3, l.bucket, prefix, &dir))
                         : cv_error_nomem();
        s = d == CV_STATUS_OK && dir
                ? cv_error(CV_FAILED_PRECONDITION, "%s: a directory, not an object", r->base.url)
                : cv_error(CV_NOT_FOUND, "%s: no such object", r->base.url);
        cv_status_free(d);
        free(prefix);
    }
    cv_s3_loc_free(&l);
    if (!s)
        return orig;
    cv_status_free(orig);
    return s;
}

/* Wait for the first answer and take size, ETag and time from it; later
 * GETs carry If-Match with that ETag. */
static CvStatus wait_info(CvReadFile *f)
{
    S3Read *r = (S3Read *)f;
    long status = 0;
    char v[128];
    if (r->info_known)
        return r->info_error ? cv_status_copy(r->info_error) : CV_STATUS_OK;
    CvStatus s = CV_STATUS_OK;
    if (!r->stream) /* the first stream's open failed (out of memory) */
        s = cv_http_stream_open(r->endpoint, r->base.url, NULL, &r->s3.auth, 0, UINT64_MAX,
                                &r->stream);
    if (!s)
        s = cv_http_stream_answer(r->stream, &status);
    if (s && (s->code == CV_CANCELLED || s->code == CV_INTERRUPTED))
        return s; /* may be asked again */
    if (s && status >= 300)
        s = open_error(r, status, s);
    r->info_known = true;
    if (s) {
        r->info_error = cv_status_copy(s);
        return s;
    }
    memset(&r->base.info, 0, sizeof r->base.info);
    r->base.info.size = cv_http_stream_total(r->stream);
    if (cv_http_stream_header(r->stream, "Last-Modified", v, sizeof v))
        r->base.info.mtime_ns = cv_s3_parse_time(v);
    if (cv_http_stream_header(r->stream, "ETag", v, sizeof v))
        cv_s3_set_version(&r->base.info, v);
    if (r->base.info.version[0])
        s = cv_http_headers_add(&r->if_match, "If-Match: \"%s\"", r->base.info.version);
    return s;
}

/* The fast path reads on from where the stream is; a read elsewhere starts
 * a new ranged GET there (to the end: reads usually go on). Each GET after
 * the first asks for the object the first answer showed (If-Match; the first
 * stream's resumed attempts compare its ETag): one rewritten since is
 * DATA_LOSS, never a mix of two versions. */
static CvStatus read_at(CvReadFile *f, uint64_t offset, void *dst, size_t n, size_t *got)
{
    S3Read *r = (S3Read *)f;
    *got = 0;
    CvStatus s = CV_STATUS_OK;
    if (!r->info_known && r->stream && cv_http_stream_offset(r->stream) != offset) {
        /* The first read is elsewhere (a restore seeks): its GET tells the
         * info instead, one round trip, not two. */
        cv_http_stream_close(r->stream);
        r->stream = NULL;
        s = cv_http_stream_open(r->endpoint, r->base.url, NULL, &r->s3.auth, offset, UINT64_MAX,
                                &r->stream);
    }
    if (!s)
        s = wait_info(f);
    if (s)
        return s;
    uint64_t size = r->base.info.size;
    if (n == 0 || (size != UINT64_MAX && offset >= size))
        return CV_STATUS_OK;
    if (!r->stream || cv_http_stream_offset(r->stream) != offset) {
        cv_http_stream_close(r->stream);
        r->stream = NULL;
        s = cv_http_stream_open(r->endpoint, r->base.url, &r->if_match, &r->s3.auth, offset,
                                UINT64_MAX, &r->stream);
        if (s)
            return s;
    }
    s = cv_http_stream_read(r->stream, dst, n, got);
    if (s && s->code == CV_FAILED_PRECONDITION && strstr(s->message, "412")) {
        cv_status_free(s);
        s = cv_error(CV_DATA_LOSS, "%s: the object changed while being read (its ETag is no "
                                   "longer \"%s\")", r->base.url, r->base.info.version);
    }
    return s;
}

static const CvReadFileMethods read_methods = {read_at, read_close, wait_info};

/* Starts the GET and returns: no HEAD first (wait_info). */
static CvStatus s3_open_read(const char *url, CvReadFile **out)
{
    CvS3Loc l = {0};
    S3Read *r = calloc(1, sizeof *r);
    CvStatus s = r ? cv_s3_loc_parse(url, &l) : cv_error_nomem();
    *out = NULL;
    if (s || (s = cv_s3_begin(&r->s3)))
        goto done;
    if (!*l.key || l.key[strlen(l.key) - 1] == '/') {
        s = cv_error(CV_FAILED_PRECONDITION, "%s: a directory, not an object", url);
        goto done;
    }
    r->base.methods = &read_methods;
    r->base.buffered = true; /* reads come from the stream's buffer */
    r->base.info.size = UINT64_MAX;
    if (!(r->base.url = strdup(url)) ||
        !(r->endpoint = cv_s3_endpoint_url(&r->s3, l.bucket, l.key, NULL))) {
        s = cv_error_nomem();
        goto done;
    }
    if ((s = cv_http_stream_open(r->endpoint, url, NULL, &r->s3.auth, 0, UINT64_MAX, &r->stream)))
        goto done;
    *out = &r->base;
    r = NULL;
done:
    if (r)
        read_close(&r->base);
    cv_s3_loc_free(&l);
    return s;
}

/* ---- writing ----------------------------------------------------------- */

typedef struct S3Write {
    CvWriteFile base;
    CvS3 s3;
    CvS3Loc loc;
    unsigned char *buf; /* the part being filled, grown up to PART_SIZE_FOR(parts) */
    size_t len, cap;
    char *upload_id;    /* the multipart upload, once started */
    char **etags;       /* each uploaded part's ETag */
    size_t parts, etags_cap;
} S3Write;

static void write_free(S3Write *w)
{
    for (size_t i = 0; i < w->parts; i++)
        free(w->etags[i]);
    free(w->etags);
    free(w->upload_id);
    free(w->buf);
    cv_s3_loc_free(&w->loc);
    cv_s3_end(&w->s3);
    free(w->base.url);
    free(w);
}

/* "uploadId=ID" (encoded) with an optional "partNumber=N&" before it. */
static char *upload_query(const S3Write *w, size_t part)
{
    char *id = cv_aws_uri_encode(w->upload_id, false);
    char *q = id ? malloc(strlen(id) + 48) : NULL;
    if (q && part)
        sprintf(q, "partNumber=%zu&uploadId=%s", part, id);
    else if (q)
        sprintf(q, "uploadId=%s", id);
    free(id);
    return q;
}

/* Start the multipart upload (CreateMultipartUpload). */
static CvStatus start_upload(S3Write *w)
{
    CvHttpResponse resp;
    CvStatus s = cv_s3_request(&w->s3, "POST", w->loc.bucket, w->loc.key, "uploads", NULL, NULL,
                               0, &resp);
    if (!s && resp.status != 200)
        s = cv_s3_error(&w->s3, &resp, w->loc.bucket, w->loc.key);
    bool oom = false;
    const char *p = resp.body;
    if (!s && !cv_s3_xml_next(&p, resp.body + resp.body_size, "UploadId", &w->upload_id, &oom))
        s = oom ? cv_error_nomem()
                : cv_error(CV_UNKNOWN, "%s: the store started a multipart upload without an "
                                       "UploadId", w->base.url);
    cv_http_response_free(&resp);
    return s;
}

/* Upload the buffer as the next part (UploadPart). */
static CvStatus upload_part(S3Write *w)
{
    CvHttpResponse resp = {0};
    char etag[256];
    CvStatus s = CV_STATUS_OK;
    char *q = NULL;
    if (w->parts == w->etags_cap) {
        size_t cap = w->etags_cap ? 2 * w->etags_cap : 16;
        char **e = realloc(w->etags, cap * sizeof *e);
        if (!e)
            return cv_error_nomem();
        w->etags = e;
        w->etags_cap = cap;
    }
    if (!(q = upload_query(w, w->parts + 1)))
        return cv_error_nomem();
    if ((s = cv_s3_request(&w->s3, "PUT", w->loc.bucket, w->loc.key, q, NULL, w->buf, w->len,
                           &resp)))
        goto done;
    if (resp.status != 200) {
        s = cv_s3_error(&w->s3, &resp, w->loc.bucket, w->loc.key);
        goto done;
    }
    if (!cv_http_response_header(&resp, "ETag", etag, sizeof etag)) {
        s = cv_error(CV_UNKNOWN, "%s: the store took part %zu without an ETag", w->base.url,
                     w->parts + 1);
        goto done;
    }
    if (!(w->etags[w->parts] = strdup(etag))) {
        s = cv_error_nomem();
        goto done;
    }
    w->parts++;
    w->len = 0;
done:
    cv_http_response_free(&resp);
    free(q);
    return s;
}

static CvStatus write_append(CvWriteFile *f, const void *src, size_t n)
{
    S3Write *w = (S3Write *)f;
    const unsigned char *p = src;
    CvStatus s = CV_STATUS_OK;
    while (n) {
        size_t part = PART_SIZE_FOR(w->parts);
        size_t take = part - w->len < n ? part - w->len : n;
        if (w->len + take > w->cap) {
            size_t cap = w->cap ? w->cap : 64 << 10;
            while (cap < w->len + take)
                cap *= 2;
            cap = cap < part ? cap : part;
            unsigned char *b = realloc(w->buf, cap);
            if (!b)
                return cv_error_nomem();
            w->buf = b;
            w->cap = cap;
        }
        memcpy(w->buf + w->len, p, take);
        w->len += take;
        p += take;
        n -= take;
        /* A full part goes out once more bytes come (commit may send the
         * last part, or a single PUT when there is only one). */
        if (w->len == part && n) {
            if ((!w->upload_id && (s = start_upload(w))) || (s = upload_part(w)))
                return s;
        }
    }
    return s;
}

static void abort_upload(S3Write *w)
{
    CvHttpResponse resp;
    char *q = upload_query(w, 0);
    if (q)
        cv_status_free(cv_s3_request(&w->s3, "DELETE", w->loc.bucket, w->loc.key, q, NULL, NULL,
                                     0, &resp));
    else
        memset(&resp, 0, sizeof resp);
    cv_http_response_free(&resp);
    free(q);
}

static CvStatus write_commit(CvWriteFile *f)
{
    S3Write *w = (S3Write *)f;
    CvHttpResponse resp = {0};
    char *q = NULL, *xml = NULL;
    CvStatus s = CV_STATUS_OK;
    if (!w->upload_id) { /* one PUT */
        if ((s = cv_s3_request(&w->s3, "PUT", w->loc.bucket, w->loc.key, NULL, NULL, w->buf,
                               w->len, &resp)))
            goto done;
        if (resp.status != 200)
            s = cv_s3_error(&w->s3, &resp, w->loc.bucket, w->loc.key);
        goto done;
    }
    if (w->len && (s = upload_part(w)))
        goto done;
    size_t cap = 128 + w->parts * 64;
    for (size_t i = 0; i < w->parts; i++)
        cap += strlen(w->etags[i]);
    if (!(xml = malloc(cap)) || !(q = upload_query(w, 0))) {
        s = cv_error_nomem();
        goto done;
    }
    size_t len = (size_t)sprintf(xml, "<CompleteMultipartUpload>");
    for (size_t i = 0; i < w->parts; i++)
        len += (size_t)sprintf(xml + len, "<Part><PartNumber>%zu</PartNumber><ETag>%s</ETag></Part>",
                               i + 1, w->etags[i]);
    len += (size_t)sprintf(xml + len, "</CompleteMultipartUpload>");
    if ((s = cv_s3_request(&w->s3, "POST", w->loc.bucket, w->loc.key, q, NULL, xml, len, &resp)))
        goto done;
    if (resp.status == 404 && resp.attempts > 1) {
        /* An earlier attempt completed the upload and its answer was lost:
         * the upload is gone and the object is there, with a multipart
         * ETag of our part count ("...-N"). */
        long st = 0;
        CvFileInfo info;
        char suffix[32];
        size_t vl;
        snprintf(suffix, sizeof suffix, "-%zu", w->parts);
        if (!(s = cv_s3_head_object(&w->s3, &w->loc, &st, &info)) && st == 200 &&
            (vl = strlen(info.version)) > strlen(suffix) &&
            strcmp(info.version + vl - strlen(suffix), suffix) == 0) {
            free(w->upload_id);
            w->upload_id = NULL; /* nothing to abort */
            goto done;
        }
    }
    if (!s)
        s = resp.status != 200 ? cv_s3_error(&w->s3, &resp, w->loc.bucket, w->loc.key)
                               : cv_s3_error_in_body(&resp, w->loc.bucket, w->loc.key,
                                                     "completing the multipart upload");
done:
    if (s && w->upload_id)
        abort_upload(w); /* nothing half-made is left behind */
    cv_http_response_free(&resp);
    free(q);
    free(xml);
    write_free(w);
    return s;
}

static void write_abort(CvWriteFile *f)
{
    S3Write *w = (S3Write *)f;
    if (w->upload_id)
        abort_upload(w);
    write_free(w);
}

static const CvWriteFileMethods write_methods = {write_append, write_commit, write_abort};

static CvStatus s3_open_write(const char *url, bool append, CvWriteFile **out)
{
    S3Write *w = calloc(1, sizeof *w);
    CvStatus s = w ? CV_STATUS_OK : cv_error_nomem();
    *out = NULL;
    if (s)
        return s;
    if (append) {
        s = cv_error(CV_UNIMPLEMENTED, "%s: S3 objects cannot be appended to", url);
        goto done;
    }
    if ((s = cv_s3_loc_parse(url, &w->loc)) || (s = cv_s3_begin(&w->s3)))
        goto done;
    if (!*w->loc.key || w->loc.key[strlen(w->loc.key) - 1] == '/') {
        s = cv_error(CV_FAILED_PRECONDITION, "%s: a directory, not an object", url);
        goto done;
    }
    w->base.methods = &write_methods;
    if (!(w->base.url = strdup(url))) {
        s = cv_error_nomem();
        goto done;
    }
    *out = &w->base;
    w = NULL;
done:
    if (w)
        write_free(w);
    return s;
}

/* ---- listing ----------------------------------------------------------- */

typedef struct Entry {
    char *name;
    CvFileInfo info;
} Entry;

typedef struct Entries {
    Entry *data;
    size_t len, cap;
} Entries;

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const Entry *)a)->name, ((const Entry *)b)->name);
}

/* Take `name` (owned) into the list. */
static bool entries_add(Entries *e, char *name, const CvFileInfo *info)
{
    if (e->len == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 64;
        Entry *d = realloc(e->data, cap * sizeof *d);
        if (!d) {
            free(name);
            return false;
        }
        e->data = d;
        e->cap = cap;
    }
    e->data[e->len++] = (Entry){name, *info};
    return true;
}

/* One page of ListObjectsV2 into `e`, names relative to `prefix`; *token
 * gets the next page's continuation token (NULL at the last page). Markers
 * ("dir/" objects) are not entries. */
static CvStatus list_page(CvS3 *s3, const char *bucket, const char *prefix, bool recursive,
                          char **token, Entries *e)
{
    CvHttpResponse resp = {0};
    CvStatus s = CV_STATUS_OK;
    const char *mk = getenv("CONVEYOR_S3_LIST_MAX_KEYS");
    long max_keys = mk && atol(mk) > 0 ? atol(mk) : 1000;
    char *ep = cv_aws_uri_encode(prefix, false);
    char *et = *token ? cv_aws_uri_encode(*token, false) : NULL;
    char *q = ep && (et || !*token) ? malloc(strlen(ep) + (et ? strlen(et) : 0) + 128) : NULL;
    bool oom = false;
    size_t plen = strlen(prefix);
    free(*token);
    *token = NULL;
    if (!q) {
        s = cv_error_nomem();
        goto done;
    }
    /* Parameters in sorted order (the signature sorts them anyway). */
    sprintf(q, "%s%s%s%slist-type=2&max-keys=%ld&prefix=%s", et ? "continuation-token=" : "",
            et ? et : "", et ? "&" : "", recursive ? "" : "delimiter=%2F&", max_keys, ep);
    if ((s = cv_s3_request(s3, "GET", bucket, "", q, NULL, NULL, 0, &resp)))
        goto done;
    if (resp.status != 200) {
        s = cv_s3_error(s3, &resp, bucket, prefix);
        goto done;
    }
    const char *end = resp.body + resp.body_size, *p = resp.body;
    const char *block, *bend;
    while (!oom && cv_s3_xml_span(&p, end, "Contents", &block, &bend)) {
        char *key = NULL, v[128];
        const char *bp = block;
        CvFileInfo info = {0};
        if (cv_s3_xml_next(&bp, bend, "Key", &key, &oom) && strlen(key) > plen &&
            key[strlen(key) - 1] != '/') {
            info.size = cv_s3_xml_get(block, bend, "Size", v, sizeof v) ? strtoull(v, NULL, 10) : 0;
            if (cv_s3_xml_get(block, bend, "LastModified", v, sizeof v))
                info.mtime_ns = cv_s3_parse_time(v);
            if (cv_s3_xml_get(block, bend, "ETag", v, sizeof v))
                cv_s3_set_version(&info, v);
            char *name = strdup(key + plen);
            oom = !name || !entries_add(e, name, &info);
        }
        free(key);
    }
    p = resp.body;
    while (!oom && cv_s3_xml_span(&p, end, "CommonPrefixes", &block, &bend)) {
        const char *bp = block;
        char *pre = NULL;
        CvFileInfo info = {.is_dir = true};
        if (cv_s3_xml_next(&bp, bend, "Prefix", &pre, &oom) &&
            strlen(pre) > plen + 1) {
            char *name = strndup(pre + plen, strlen(pre) - plen - 1); /* without its '/' */
            oom = !name || !entries_add(e, name, &info);
        }
        free(pre);
    }
    char truncated[16] = "";
    cv_s3_xml_get(resp.body, end, "IsTruncated", truncated, sizeof truncated);
    if (!oom && strcmp(truncated, "true") == 0) {
        p = resp.body;
        if (!cv_s3_xml_next(&p, end, "NextContinuationToken", token, &oom) && !oom)
            s = cv_error(CV_UNKNOWN, "s3://%s/%s: a truncated listing without a continuation "
                                     "token", bucket, prefix);
    }
    if (oom)
        s = cv_error_nomem();
done:
    cv_http_response_free(&resp);
    free(ep);
    free(et);
    free(q);
    return s;
}

static CvStatus s3_list(const char *url, bool recursive, CvFsListFn each, void *ctx)
{
    CvS3 s3 = {0};
    CvS3Loc l;
    Entries e = {0};
    char *prefix = NULL, *token = NULL;
    CvStatus s = cv_s3_loc_parse(url, &l);
    if (s || (s = cv_s3_begin(&s3)))
        goto done;
    size_t kl = strlen(l.key);
    if (!(prefix = malloc(kl + 2))) {
        s = cv_error_nomem();
        goto done;
    }
    sprintf(prefix, "%s%s", l.key, kl && l.key[kl - 1] != '/' ? "/" : "");
    do {
        if ((s = list_page(&s3, l.bucket, prefix, recursive, &token, &e)))
            goto done;
    } while (token);
    if (e.len)
        qsort(e.data, e.len, sizeof *e.data, cmp_entry);
    for (size_t i = 0; i < e.len; i++)
        if (each(ctx, e.data[i].name, &e.data[i].info))
            break;
done:
    for (size_t i = 0; i < e.len; i++)
        free(e.data[i].name);
    free(e.data);
    free(prefix);
    free(token);
    cv_s3_end(&s3);
    cv_s3_loc_free(&l);
    return s;
}

/* ---- removing, directories, copying ------------------------------------ */

static CvStatus delete_key(CvS3 *s3, const char *bucket, const char *key)
{
    CvHttpResponse resp;
    CvStatus s = cv_s3_request(s3, "DELETE", bucket, key, NULL, NULL, NULL, 0, &resp);
    if (!s && resp.status != 204 && resp.status != 200)
        s = cv_s3_error(s3, &resp, bucket, key);
    cv_http_response_free(&resp);
    return s;
}

/* DELETE answers 204 for a key that is not there: HEAD first, so that a
 * missing file is NOT_FOUND as on a local disk. */
static CvStatus s3_remove(const char *url)
{
    CvS3 s3 = {0};
    CvS3Loc l;
    CvFileInfo info;
    long status = 0;
    CvStatus s = cv_s3_loc_parse(url, &l);
    if (s || (s = cv_s3_begin(&s3)))
        goto done;
    if (!*l.key || l.key[strlen(l.key) - 1] == '/') {
        s = cv_error(CV_FAILED_PRECONDITION, "%s: a directory, not an object", url);
        goto done;
    }
    if ((s = cv_s3_head_object(&s3, &l, &status, &info)))
        goto done;
    s = status == 404 ? cv_error(CV_NOT_FOUND, "%s: no such object", url)
                      : delete_key(&s3, l.bucket, l.key);
done:
    cv_s3_end(&s3);
    cv_s3_loc_free(&l);
    return s;
}

/* "key/" for a directory's marker; malloc'd. */
static char *marker_key(const char *key)
{
    size_t kl = strlen(key);
    char *m = malloc(kl + 2);
    if (m)
        sprintf(m, "%s%s", key, kl && key[kl - 1] == '/' ? "" : "/");
    return m;
}

/* An empty "dir/" object (see the top of this file); the bucket itself must
 * exist. */
static CvStatus s3_make_dir(const char *url)
{
    CvS3 s3 = {0};
    CvS3Loc l;
    CvFileInfo info;
    CvHttpResponse resp = {0};
    char *marker = NULL;
    CvStatus s = cv_s3_loc_parse(url, &l);
    if (s || (s = cv_s3_begin(&s3)))
        goto done;
    if (!*l.key) {
        s = stat_loc(&s3, &l, url, &info);
        goto done;
    }
    if (!(marker = marker_key(l.key))) {
        s = cv_error_nomem();
        goto done;
    }
    if ((s = cv_s3_request(&s3, "PUT", l.bucket, marker, NULL, NULL, NULL, 0, &resp)))
        goto done;
    if (resp.status != 200)
        s = cv_s3_error(&s3, &resp, l.bucket, l.key);
done:
    cv_http_response_free(&resp);
    free(marker);
    cv_s3_end(&s3);
    cv_s3_loc_free(&l);
    return s;
}

typedef struct AnyFile {
    bool found;
} AnyFile;

static int note_any(void *ctx, const char *name, const CvFileInfo *info)
{
    (void)name;
    (void)info;
    ((AnyFile *)ctx)->found = true;
    return 1;
}

/* OK when nothing is under it (its marker, if any, is deleted; a bucket's
 * root is left as it is); FAILED_PRECONDITION when objects are. */
static CvStatus s3_remove_dir(const char *url)
{
    CvS3 s3 = {0};
    CvS3Loc l;
    AnyFile any = {false};
    char *marker = NULL;
    CvStatus s = cv_s3_loc_parse(url, &l);
    if (s || (s = cv_s3_begin(&s3)))
        goto done;
    if ((s = s3_list(url, false, note_any, &any))) /* files, and subdirectories' markers */
        goto done;
    if (any.found) {
        s = cv_error(CV_FAILED_PRECONDITION, "%s: the directory is not empty", url);
        goto done;
    }
    if (!*l.key)
        goto done; /* an empty bucket's root: the bucket stays (buckets are not made here) */
    if (!(marker = marker_key(l.key))) {
        s = cv_error_nomem();
        goto done;
    }
    s = delete_key(&s3, l.bucket, marker); /* 204 whether or not there was one */
done:
    free(marker);
    cv_s3_end(&s3);
    cv_s3_loc_free(&l);
    return s;
}

/* Bytes through a reader and a writer (objects CopyObject cannot take). */
static CvStatus copy_bytes(const char *from, const char *to)
{
    CvReadFile *r = NULL;
    CvWriteFile *w = NULL;
    enum { CHUNK = 8 << 20 };
    char *buf = malloc(CHUNK);
    uint64_t at = 0;
    CvStatus s = buf ? CV_STATUS_OK : cv_error_nomem();
    if (s || (s = s3_open_read(from, &r)) || (s = s3_open_write(to, false, &w)))
        goto done;
    for (size_t got = CHUNK; got == CHUNK; at += got)
        if ((s = r->methods->read(r, at, buf, CHUNK, &got)) ||
            (got && (s = w->methods->append(w, buf, got))))
            goto done;
    s = w->methods->commit(w);
    w = NULL;
done:
    if (w)
        w->methods->abort(w);
    if (r)
        r->methods->close(r);
    free(buf);
    return s;
}

/* Server-side CopyObject within the store. */
static CvStatus s3_copy(const char *from, const char *to, bool overwrite)
{
    CvS3 s3 = {0};
    CvS3Loc a = {0}, b = {0};
    CvFileInfo info;
    CvHttpHeaders h = {0};
    CvHttpResponse resp = {0};
    char *src = NULL;
    long status = 0;
    CvStatus s = cv_s3_loc_parse(from, &a);
    if (s || (s = cv_s3_loc_parse(to, &b)) || (s = cv_s3_begin(&s3)))
        goto done;
    if (!*a.key || !*b.key) {
        s = cv_error(CV_FAILED_PRECONDITION, "%s: a directory, not an object", *a.key ? to : from);
        goto done;
    }
    if (!overwrite) {
        if ((s = cv_s3_head_object(&s3, &b, &status, &info)))
            goto done;
        if (status == 200) {
            s = cv_error(CV_ALREADY_EXISTS, "%s; the target exists", to);
            goto done;
        }
    }
    if ((s = cv_s3_head_object(&s3, &a, &status, &info)))
        goto done;
    if (status == 404) {
        s = cv_error(CV_NOT_FOUND, "%s: no such object", from);
        goto done;
    }
    if (info.size != UINT64_MAX && info.size > MAX_COPY_SIZE) {
        s = copy_bytes(from, to);
        goto done;
    }
    char *path = cv_s3_display_url(a.bucket, a.key); /* "s3://b/k": encode "b/k" */
    src = path ? cv_aws_uri_encode(path + 5, true) : NULL;
    free(path);
    if (!src || (s = cv_http_headers_add(&h, "x-amz-copy-source: /%s", src))) {
        s = s ? s : cv_error_nomem();
        goto done;
    }
    if ((s = cv_s3_request(&s3, "PUT", b.bucket, b.key, NULL, &h, NULL, 0, &resp)))
        goto done;
    s = resp.status != 200 ? cv_s3_error(&s3, &resp, b.bucket, b.key)
                           : cv_s3_error_in_body(&resp, b.bucket, b.key, "copying");
done:
    cv_http_response_free(&resp);
    cv_http_headers_free(&h);
    free(src);
    cv_s3_end(&s3);
    cv_s3_loc_free(&a);
    cv_s3_loc_free(&b);
    return s;
}

const CvFileSystem cv_fs_s3 = {
    .scheme = "s3",
    .open_read = s3_open_read,
    .open_write = s3_open_write,
    .stat = s3_stat,
    .list = s3_list,
    .remove = s3_remove,
    .make_dir = s3_make_dir,
    .remove_dir = s3_remove_dir,
    .rename = NULL, /* the layer copies (server-side, above) and deletes */
    .copy = s3_copy,
};
