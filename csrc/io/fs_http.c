/* http:// and https:// (see fs.h): read-only objects behind a URL. open_read
 * and stat ask HEAD (or, where HEAD is refused, GET bytes=0-0) for the size,
 * ETag and Last-Modified; reads go through a stream (http.h) kept ahead of
 * the reader, opened again where a read does not continue the last one.
 * Every other method: UNIMPLEMENTED. No credentials: the URL is all. */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "io/fs.h"
#include "io/http.h"
#include "io/http_retry.h"

typedef struct HttpFile {
    CvReadFile base; /* first: the engine sees a CvReadFile */
    CvHttpStream *stream;
    char display[512];
} HttpFile;

/* The total size after the slash of a Content-Range ("bytes 0-0/1234", or
 * a 416 answer's "bytes" star "/1234"); false when absent. */
static bool content_range_size(const CvHttpResponse *r, uint64_t *size)
{
    char v[128];
    if (!cv_http_response_header(r, "Content-Range", v, sizeof v))
        return false;
    const char *slash = strchr(v, '/');
    if (!slash || slash[1] < '0' || slash[1] > '9')
        return false;
    *size = strtoull(slash + 1, NULL, 10);
    return true;
}

static CvStatus http_stat(const char *url, CvFileInfo *out)
{
    char display[512];
    cv_http_display(url, display, sizeof display);
    memset(out, 0, sizeof *out);
    out->size = UINT64_MAX;
    CvHttpResponse r = {0};
    CvHttpRequest req = {.method = "HEAD", .url = url};
    CvStatus s = cv_http_perform(&req, &r);
    if (!s && (r.status == 405 || r.status == 501 || r.status == 403)) {
        /* HEAD refused (a presigned URL is signed for GET only): ask for one byte. */
        cv_http_response_free(&r);
        CvHttpHeaders h = {0};
        s = cv_http_headers_add(&h, "Range: bytes=0-0");
        req = (CvHttpRequest){.method = "GET", .url = url, .headers = &h};
        if (!s)
            s = cv_http_perform(&req, &r);
        cv_http_headers_free(&h);
        if (!s && (r.status == 206 || r.status == 416)) {
            if (!content_range_size(&r, &out->size))
                out->size = UINT64_MAX;
            r.status = 200;
        }
    } else if (!s && r.status == 200) {
        char v[64];
        if (cv_http_response_header(&r, "Content-Length", v, sizeof v))
            out->size = strtoull(v, NULL, 10);
    }
    if (s)
        goto done;
    if (r.status != 200) {
        s = cv_http_error(&r, display, NULL);
        goto done;
    }
    char v[128];
    if (cv_http_response_header(&r, "Last-Modified", v, sizeof v)) {
        time_t t = curl_getdate(v, NULL);
        if (t > 0)
            out->mtime_ns = (int64_t)t * 1000000000;
    }
    if (!cv_http_response_header(&r, "x-goog-generation", out->version, sizeof out->version))
        cv_http_response_header(&r, "ETag", out->version, sizeof out->version);
done:
    cv_http_response_free(&r);
    return s;
}

static CvStatus http_read(CvReadFile *f, uint64_t offset, void *dst, size_t n, size_t *got)
{
    HttpFile *hf = (HttpFile *)f;
    *got = 0;
    uint64_t size = f->info.size;
    if (size != UINT64_MAX && offset >= size)
        return CV_STATUS_OK;
    if (hf->stream && cv_http_stream_offset(hf->stream) != offset) {
        cv_http_stream_close(hf->stream); /* a read elsewhere: one new request */
        hf->stream = NULL;
    }
    CvStatus s;
    if (!hf->stream &&
        (s = cv_http_stream_open(f->url, hf->display, NULL, NULL, offset, size, &hf->stream)))
        return s;
    s = cv_http_stream_read(hf->stream, dst, n, got);
    if (s) { /* start afresh on the next read (a cancelled read may be retried) */
        cv_http_stream_close(hf->stream);
        hf->stream = NULL;
    }
    return s;
}

static void http_close(CvReadFile *f)
{
    HttpFile *hf = (HttpFile *)f;
    if (!hf)
        return;
    cv_http_stream_close(hf->stream);
    free(f->url);
    free(hf);
}

static const CvReadFileMethods http_file_methods = {.read = http_read, .close = http_close};

static CvStatus http_open_read(const char *url, CvReadFile **out)
{
    CvStatus s = CV_STATUS_OK;
    *out = NULL;
    HttpFile *hf = calloc(1, sizeof *hf);
    size_t n = strlen(url) + 1;
    char *copy = malloc(n);
    if (!hf || !copy) {
        s = cv_error_nomem();
        goto done;
    }
    memcpy(copy, url, n);
    hf->base.methods = &http_file_methods;
    hf->base.url = copy;
    copy = NULL;
    cv_http_display(url, hf->display, sizeof hf->display);
    s = http_stat(url, &hf->base.info);
done:
    free(copy);
    if (s) {
        http_close(hf ? &hf->base : NULL);
        return s;
    }
    *out = &hf->base;
    return CV_STATUS_OK;
}

static CvStatus read_only(const char *url)
{
    char display[512];
    cv_http_display(url, display, sizeof display);
    return cv_error(CV_UNIMPLEMENTED, "%s: http(s) URLs are read-only", display);
}

static CvStatus http_open_write(const char *url, bool append, CvWriteFile **out)
{
    (void)append;
    *out = NULL;
    return read_only(url);
}

static CvStatus http_list(const char *url, bool recursive, CvFsListFn each, void *ctx)
{
    (void)recursive;
    (void)each;
    (void)ctx;
    char display[512];
    cv_http_display(url, display, sizeof display);
    return cv_error(CV_UNIMPLEMENTED, "%s: http(s) URLs cannot be listed", display);
}

static CvStatus http_make_dir(const char *url)
{
    return read_only(url);
}

const CvFileSystem cv_fs_http = {
    .scheme = "http",
    .open_read = http_open_read,
    .open_write = http_open_write,
    .stat = http_stat,
    .list = http_list,
    .remove = read_only,
    .make_dir = http_make_dir,
    .remove_dir = read_only,
    .rename = NULL, /* cv_fs_rename / cv_fs_copy copy the bytes (from http: works) */
    .copy = NULL,
};

const CvFileSystem cv_fs_https = {
    .scheme = "https",
    .open_read = http_open_read,
    .open_write = http_open_write,
    .stat = http_stat,
    .list = http_list,
    .remove = read_only,
    .make_dir = http_make_dir,
    .remove_dir = read_only,
    .rename = NULL,
    .copy = NULL,
};
