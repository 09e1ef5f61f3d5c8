/* http:// and https:// (see fs.h): read-only objects behind a URL. open_read
 * starts the GET and takes size, ETag and Last-Modified from its answer; stat
 * asks HEAD (or, where HEAD is refused, GET bytes=0-0) for the size,
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
    CvHttpStream *stream; /* the first one starts at open */
    char display[512];
    bool info_known;
    CvStatus info_error; /* sticky: the open's error, found by the first answer */
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

/* Wait for the first answer and take size, ETag and time from it. A refused
 * GET is reported as the stat (HEAD) open_read once asked says. */
static CvStatus http_wait_info(CvReadFile *f)
{
    HttpFile *hf = (HttpFile *)f;
    long status = 0;
    char v[128];
    if (hf->info_known)
        return hf->info_error ? cv_status_copy(hf->info_error) : CV_STATUS_OK;
    CvStatus s = CV_STATUS_OK;
    if (!hf->stream) /* dropped after a cancelled read */
        s = cv_http_stream_open(f->url, hf->display, NULL, NULL, 0, UINT64_MAX, &hf->stream);
    if (!s)
        s = cv_http_stream_answer(hf->stream, &status);
    if (s && (s->code == CV_CANCELLED || s->code == CV_INTERRUPTED))
        return s; /* may be asked again */
    if (s && status >= 300) {
        CvFileInfo info;
        CvStatus e = http_stat(f->url, &info);
        if (e) {
            cv_status_free(s);
            s = e;
        }
    }
    hf->info_known = true;
    if (s) {
        hf->info_error = cv_status_copy(s);
        return s;
    }
    memset(&f->info, 0, sizeof f->info);
    f->info.size = cv_http_stream_total(hf->stream);
    if (cv_http_stream_header(hf->stream, "Last-Modified", v, sizeof v)) {
        time_t t = curl_getdate(v, NULL);
        if (t > 0)
            f->info.mtime_ns = (int64_t)t * 1000000000;
    }
    if (!cv_http_stream_header(hf->stream, "x-goog-generation", f->info.version,
                               sizeof f->info.version))
        cv_http_stream_header(hf->stream, "ETag", f->info.version, sizeof f->info.version);
    return CV_STATUS_OK;
}

static CvStatus http_read(CvReadFile *f, uint64_t offset, void *dst, size_t n, size_t *got)
{
    HttpFile *hf = (HttpFile *)f;
    *got = 0;
    CvStatus s = CV_STATUS_OK;
    if (!hf->info_known && hf->stream && cv_http_stream_offset(hf->stream) != offset) {
        /* The first read is elsewhere (a seek): its GET tells the info
         * instead, one round trip, not two. */
        cv_http_stream_close(hf->stream);
        hf->stream = NULL;
        s = cv_http_stream_open(f->url, hf->display, NULL, NULL, offset, UINT64_MAX, &hf->stream);
    }
    if (!s)
        s = http_wait_info(f);
    if (s)
        return s;
    uint64_t size = f->info.size;
    if (size != UINT64_MAX && offset >= size)
        return CV_STATUS_OK;
    if (hf->stream && cv_http_stream_offset(hf->stream) != offset) {
        cv_http_stream_close(hf->stream); /* a read elsewhere: one new request */
        hf->stream = NULL;
    }
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
    cv_status_free(hf->info_error);
    free(f->url);
    free(hf);
}

static const CvReadFileMethods http_file_methods = {
    .read = http_read, .close = http_close, .wait_info = http_wait_info};

/* Starts the GET and returns: no HEAD first (http_wait_info). */
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
    hf->base.buffered = true; /* reads come from the stream's buffer */
    hf->base.url = copy;
    hf->base.info.size = UINT64_MAX;
    copy = NULL;
    cv_http_display(url, hf->display, sizeof hf->display);
    s = cv_http_stream_open(url, hf->display, NULL, NULL, 0, UINT64_MAX, &hf->stream);
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
