/* gs://: Google Cloud Storage over its JSON API (https://storage.googleapis.com
 * or the emulator at STORAGE_EMULATOR_HOST), through io/http.h.
 *
 * - Reads pin the object's generation (from its metadata, fetched at open), so
 *   an object rewritten while it is read fails instead of mixing versions;
 *   bytes come through a read-ahead stream, reopened at a new offset for a
 *   read elsewhere.
 * - Writes are buffered: a small object is one media upload at commit; past
 *   GCS_CHUNK bytes a resumable session takes 8 MiB chunks and is finalized
 *   at commit, so an object appears only complete. Abort cancels the session.
 * - Directories are prefixes. make_dir writes a "dir/" placeholder object as
 *   TensorFlow's GCS file system does; remove_dir deletes it.
 * - Object names are percent-encoded whole ('/' as %2F) in JSON API paths.
 *
 * Thread-safety: the table's functions from any thread; a file's from one
 * thread at a time. The context (endpoint, credentials) is process-wide. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "io/fs.h"
#include "io/gcs_credentials.h"
#include "io/http.h"
#include "io/json_scan.h"

/* Resumable upload chunks: GCS wants multiples of 256 KiB; 8 MiB as
 * TensorFlow and gcsfs use. */
#define GCS_CHUNK ((size_t)8 << 20)
#define REWRITE_MAX_CALLS 10000

typedef struct GcsPath {
    char *bucket, *object;   /* decoded; object may be "" (the bucket's root) */
    char *ebucket, *eobject; /* percent-encoded */
} GcsPath;

static char *str_printf(const char *fmt, ...) CV_PRINTF(1, 2);
static char *str_printf(const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s != NULL)
        vsnprintf(s, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return s;
}

static void path_free(GcsPath *p) {
    free(p->bucket);
    free(p->object);
    free(p->ebucket);
    free(p->eobject);
    memset(p, 0, sizeof *p);
}

static CvStatus path_parse(const char *url, GcsPath *p) {
    memset(p, 0, sizeof *p);
    if (strncmp(url, "gs://", 5) != 0)
        return cv_error(CV_INVALID_ARGUMENT, "%s: not a gs:// URL", url);
    const char *b = url + 5, *slash = strchr(b, '/');
    size_t bn = slash ? (size_t)(slash - b) : strlen(b);
    if (bn == 0)
        return cv_error(CV_INVALID_ARGUMENT, "%s: the URL names no bucket (gs://BUCKET/OBJECT)", url);
    p->bucket = strndup(b, bn);
    p->object = strdup(slash ? slash + 1 : "");
    if (p->bucket && p->object) {
        p->ebucket = cv_gcs_percent_encode(p->bucket);
        p->eobject = cv_gcs_percent_encode(p->object);
    }
    if (!p->ebucket || !p->eobject) {
        path_free(p);
        return cv_error_nomem();
    }
    return CV_STATUS_OK;
}

/* One request to the JSON API; errors name `display` (the gs:// URL). */
static CvStatus call(const CvGcsContext *ctx, const char *method, const char *url,
                     const char *display, const CvHttpHeaders *headers, const void *body,
                     size_t body_size, CvHttpResponse *resp) {
    CvHttpRequest req = {.method = method, .url = url, .headers = headers, .body = body,
                         .body_size = body_size, .auth = &ctx->auth};
    CvStatus st = cv_http_perform(&req, resp);
    if (st != CV_STATUS_OK && st->code != CV_CANCELLED && st->code != CV_INTERRUPTED &&
        strncmp(st->message, display, strlen(display)) != 0)
        st = cv_status_prefix(st, "%s: ", display);
    return st;
}

/* "2024-01-02T03:04:05.678Z" -> nanoseconds since the epoch (0 if unparsable). */
static int64_t parse_rfc3339(const char *s) {
    struct tm tm = {0};
    int consumed = 0;
    if (s == NULL || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                            &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6)
        return 0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    int64_t ns = 0, scale = 100000000;
    const char *f = s + consumed;
    if (*f == '.')
        for (f++; *f >= '0' && *f <= '9'; f++, scale /= 10)
            ns += (*f - '0') * scale;
    time_t t = timegm(&tm);
    int64_t offset = 0; /* "+hh:mm" / "-hh:mm" zones; 'Z' is UTC */
    int oh, om;
    if ((*f == '+' || *f == '-') && sscanf(f + 1, "%2d:%2d", &oh, &om) == 2)
        offset = (*f == '+' ? 1 : -1) * (int64_t)(oh * 3600 + om * 60);
    return ((int64_t)t - offset) * 1000000000LL + ns;
}

/* An object resource -> CvFileInfo. */
static void object_info(CvJsonSpan obj, CvFileInfo *info) {
    int64_t size = 0, gen = 0;
    char *updated = NULL;
    memset(info, 0, sizeof *info);
    info->size = cv_json_int(obj, "size", &size) && size >= 0 ? (uint64_t)size : 0;
    if (cv_json_string(obj, "updated", &updated))
        info->mtime_ns = parse_rfc3339(updated);
    free(updated);
    if (cv_json_int(obj, "generation", &gen))
        snprintf(info->version, sizeof info->version, "%lld", (long long)gen);
}

/* GET the object's metadata: OK with *found false on 404. */
static CvStatus get_object(const CvGcsContext *ctx, const GcsPath *p, const char *display,
                           bool *found, CvFileInfo *info) {
    CvHttpResponse resp = {0};
    char *url = str_printf("%s/storage/v1/b/%s/o/%s", ctx->endpoint, p->ebucket, p->eobject);
    CvStatus st = url ? call(ctx, "GET", url, display, NULL, NULL, 0, &resp) : cv_error_nomem();
    *found = false;
    if (st == CV_STATUS_OK) {
        if (resp.status == 200) {
            *found = true;
            object_info((CvJsonSpan){resp.body, resp.body_size}, info);
        } else if (resp.status != 404) {
            st = cv_http_error(&resp, display, &ctx->auth);
        }
    }
    cv_http_response_free(&resp);
    free(url);
    return st;
}

/* Whether anything lies under prefix (a non-empty "directory"). With
 * `other_than`, an object of exactly that name does not count (*placeholder
 * says whether it exists). */
static CvStatus prefix_has(const CvGcsContext *ctx, const GcsPath *p, const char *prefix,
                           const char *display, bool *any, bool *placeholder) {
    CvHttpResponse resp = {0};
    char *eprefix = cv_gcs_percent_encode(prefix);
    char *url = eprefix ? str_printf("%s/storage/v1/b/%s/o?prefix=%s&maxResults=2", ctx->endpoint,
                                     p->ebucket, eprefix)
                        : NULL;
    CvStatus st = url ? call(ctx, "GET", url, display, NULL, NULL, 0, &resp) : cv_error_nomem();
    *any = false;
    if (placeholder)
        *placeholder = false;
    if (st == CV_STATUS_OK && resp.status != 200)
        st = cv_http_error(&resp, display, &ctx->auth);
    if (st == CV_STATUS_OK) {
        CvJsonSpan items, item;
        size_t pos = 0;
        if (cv_json_field((CvJsonSpan){resp.body, resp.body_size}, "items", &items)) {
            while (cv_json_array_next(items, &pos, &item)) {
                char *name = NULL;
                if (cv_json_string(item, "name", &name) && placeholder && strcmp(name, prefix) == 0)
                    *placeholder = true;
                else
                    *any = true;
                free(name);
            }
        }
    }
    cv_http_response_free(&resp);
    free(url);
    free(eprefix);
    return st;
}

/* ---- reading ----------------------------------------------------------- */

typedef struct GcsReadFile {
    CvReadFile base;
    const CvGcsContext *ctx;
    char *media_url; /* ...?alt=media, then &generation=G once the first answer says G */
    CvHttpStream *stream; /* the first one starts at open */
    bool info_known;
    CvStatus info_error; /* sticky: the open's error, found by the first answer */
} GcsReadFile;

/* What open_read said before it went without a metadata request (NOT_FOUND,
 * "is a directory", the metadata GET's own error), for a first answer
 * (`status`) that refused the media GET; `orig` when the metadata now says
 * otherwise. */
static CvStatus open_error(const CvGcsContext *ctx, const char *url, long status, CvStatus orig) {
    GcsPath p;
    CvFileInfo info;
    bool found = false, any = false;
    CvStatus st = path_parse(url, &p);
    if (st != CV_STATUS_OK)
        return orig;
    /* A 404 already says there is no object: only the directory is asked. */
    if (status == 404 || ((st = get_object(ctx, &p, url, &found, &info)) == CV_STATUS_OK && !found)) {
        char *prefix = str_printf("%s/", p.object);
        st = prefix ? prefix_has(ctx, &p, prefix, url, &any, NULL) : cv_error_nomem();
        free(prefix);
        if (st == CV_STATUS_OK)
            st = any ? cv_error(CV_FAILED_PRECONDITION, "%s: is a directory, not an object", url)
                     : cv_error(CV_NOT_FOUND, "%s: no such object", url);
    }
    path_free(&p);
    if (st == CV_STATUS_OK)
        return orig;
    cv_status_free(orig);
    return st;
}

/* Wait for the first answer and take size, generation and time from it;
 * later requests ask for that generation. */
static CvStatus gcs_wait_info(CvReadFile *base) {
    GcsReadFile *f = (GcsReadFile *)base;
    long status = 0;
    char v[128];
    if (f->info_known)
        return f->info_error ? cv_status_copy(f->info_error) : CV_STATUS_OK;
    CvStatus st = CV_STATUS_OK;
    if (f->stream == NULL) /* the first stream's open failed (out of memory) */
        st = cv_http_stream_open(f->media_url, base->url, NULL, &f->ctx->auth, 0, UINT64_MAX,
                                 &f->stream);
    if (st == CV_STATUS_OK)
        st = cv_http_stream_answer(f->stream, &status);
    if (st != CV_STATUS_OK && (st->code == CV_CANCELLED || st->code == CV_INTERRUPTED))
        return st; /* may be asked again */
    if (st != CV_STATUS_OK && status >= 300)
        st = open_error(f->ctx, base->url, status, st);
    f->info_known = true;
    if (st != CV_STATUS_OK) {
        f->info_error = cv_status_copy(st);
        return st;
    }
    memset(&base->info, 0, sizeof base->info);
    base->info.size = cv_http_stream_total(f->stream);
    if (cv_http_stream_header(f->stream, "Last-Modified", v, sizeof v)) {
        time_t t = curl_getdate(v, NULL);
        if (t > 0)
            base->info.mtime_ns = (int64_t)t * 1000000000;
    }
    if (cv_http_stream_header(f->stream, "x-goog-generation", base->info.version,
                              sizeof base->info.version)) {
        char *pinned = str_printf("%s&generation=%s", f->media_url, base->info.version);
        if (pinned == NULL)
            return cv_error_nomem();
        free(f->media_url);
        f->media_url = pinned;
    }
    return CV_STATUS_OK;
}

static CvStatus gcs_read(CvReadFile *base, uint64_t offset, void *dst, size_t n, size_t *got) {
    GcsReadFile *f = (GcsReadFile *)base;
    *got = 0;
    CvStatus st = CV_STATUS_OK;
    if (!f->info_known && f->stream != NULL && cv_http_stream_offset(f->stream) != offset) {
        /* The first read is elsewhere (a restore seeks): its GET tells the
         * info instead, one round trip, not two. */
        cv_http_stream_close(f->stream);
        f->stream = NULL;
        st = cv_http_stream_open(f->media_url, base->url, NULL, &f->ctx->auth, offset, UINT64_MAX,
                                 &f->stream);
    }
    if (st == CV_STATUS_OK)
        st = gcs_wait_info(base);
    if (st != CV_STATUS_OK)
        return st;
    uint64_t size = base->info.size;
    if (offset >= size || n == 0)
        return CV_STATUS_OK;
    if (n > size - offset)
        n = (size_t)(size - offset);
    if (f->stream != NULL && cv_http_stream_offset(f->stream) != offset) {
        cv_http_stream_close(f->stream);
        f->stream = NULL;
    }
    if (f->stream == NULL) {
        st = cv_http_stream_open(f->media_url, base->url, NULL, &f->ctx->auth, offset, size,
                                 &f->stream);
        if (st != CV_STATUS_OK)
            return st;
    }
    return cv_http_stream_read(f->stream, dst, n, got);
}

static void gcs_read_close(CvReadFile *base) {
    GcsReadFile *f = (GcsReadFile *)base;
    cv_http_stream_close(f->stream);
    cv_status_free(f->info_error);
    free(f->media_url);
    free(base->url);
    free(f);
}

static const CvReadFileMethods gcs_read_methods = {gcs_read, gcs_read_close, gcs_wait_info};

/* Starts the media GET and returns: no metadata request (gcs_wait_info). */
static CvStatus gcs_open_read(const char *url, CvReadFile **out) {
    const CvGcsContext *ctx;
    GcsPath p;
    GcsReadFile *f = NULL;
    *out = NULL;
    CvStatus st = cv_gcs_context(&ctx);
    if (st != CV_STATUS_OK)
        return st;
    if ((st = path_parse(url, &p)) != CV_STATUS_OK)
        return st;
    if (p.object[0] == '\0' || p.object[strlen(p.object) - 1] == '/') {
        st = cv_error(CV_FAILED_PRECONDITION, "%s: is a directory, not an object", url);
        goto done;
    }
    f = calloc(1, sizeof *f);
    if (f == NULL) {
        st = cv_error_nomem();
        goto done;
    }
    f->base.methods = &gcs_read_methods;
    f->base.buffered = true; /* reads come from the stream's buffer */
    f->base.info.size = UINT64_MAX;
    f->ctx = ctx;
    f->base.url = strdup(url);
    f->media_url = str_printf("%s/storage/v1/b/%s/o/%s?alt=media", ctx->endpoint, p.ebucket,
                              p.eobject);
    if (f->base.url == NULL || f->media_url == NULL)
        st = cv_error_nomem();
    else
        st = cv_http_stream_open(f->media_url, url, NULL, &ctx->auth, 0, UINT64_MAX, &f->stream);
done:
    path_free(&p);
    if (st != CV_STATUS_OK && f != NULL) {
        gcs_read_close(&f->base);
        f = NULL;
    }
    *out = f ? &f->base : NULL;
    return st;
}

/* One media upload: the whole object in one request. */
static CvStatus upload_media(const CvGcsContext *ctx, const char *ebucket, const char *eobject,
                             const char *display, const void *body, size_t n) {
    CvHttpHeaders h = {0};
    CvHttpResponse resp = {0};
    char *url = str_printf("%s/upload/storage/v1/b/%s/o?uploadType=media&name=%s", ctx->endpoint,
                           ebucket, eobject);
    CvStatus st = url ? cv_http_headers_add(&h, "Content-Type: application/octet-stream")
                      : cv_error_nomem();
    if (st == CV_STATUS_OK)
        st = call(ctx, "POST", url, display, &h, body, n, &resp);
    if (st == CV_STATUS_OK && resp.status != 200 && resp.status != 201)
        st = cv_http_error(&resp, display, &ctx->auth);
    cv_http_response_free(&resp);
    cv_http_headers_free(&h);
    free(url);
    return st;
}

/* ---- writing ----------------------------------------------------------- */

typedef struct GcsWriteFile {
    CvWriteFile base;
    const CvGcsContext *ctx;
    GcsPath path;
    char *buf; /* bytes not yet sent */
    size_t len, cap;
    uint64_t sent;  /* bytes the session holds */
    char *session;  /* the resumable session's URI, once started */
} GcsWriteFile;

static CvStatus start_session(GcsWriteFile *f) {
    CvHttpHeaders h = {0};
    CvHttpResponse resp = {0};
    char location[4096];
    char *url = str_printf("%s/upload/storage/v1/b/%s/o?uploadType=resumable&name=%s",
                           f->ctx->endpoint, f->path.ebucket, f->path.eobject);
    CvStatus st = url ? cv_http_headers_add(&h, "Content-Type: application/json; charset=UTF-8")
                      : cv_error_nomem();
    if (st == CV_STATUS_OK)
        st = call(f->ctx, "POST", url, f->base.url, &h, "{}", 2, &resp);
    if (st == CV_STATUS_OK && resp.status != 200 && resp.status != 201)
        st = cv_http_error(&resp, f->base.url, &f->ctx->auth);
    if (st == CV_STATUS_OK) {
        if (!cv_http_response_header(&resp, "Location", location, sizeof location))
            st = cv_error(CV_UNAVAILABLE, "%s: the resumable upload answer has no Location",
                          f->base.url);
        else if ((f->session = strdup(location)) == NULL)
            st = cv_error_nomem();
    }
    cv_http_response_free(&resp);
    cv_http_headers_free(&h);
    free(url);
    return st;
}

/* PUT n buffered bytes to the session; `final` gives the total size. */
static CvStatus put_chunk(GcsWriteFile *f, size_t n, bool final) {
    CvHttpHeaders h = {0};
    CvHttpResponse resp = {0};
    uint64_t total = f->sent + n;
    CvStatus st;
    if (n == 0)
        st = cv_http_headers_add(&h, "Content-Range: bytes */%llu", (unsigned long long)total);
    else if (final)
        st = cv_http_headers_add(&h, "Content-Range: bytes %llu-%llu/%llu",
                                 (unsigned long long)f->sent, (unsigned long long)(total - 1),
                                 (unsigned long long)total);
    else
        st = cv_http_headers_add(&h, "Content-Range: bytes %llu-%llu/*",
                                 (unsigned long long)f->sent, (unsigned long long)(total - 1));
    if (st == CV_STATUS_OK)
        st = call(f->ctx, "PUT", f->session, f->base.url, &h, f->buf, n, &resp);
    if (st == CV_STATUS_OK) {
        long want = final ? 200 : 308;
        if (resp.status != want && !(final && resp.status == 201))
            st = resp.status >= 400 ? cv_http_error(&resp, f->base.url, &f->ctx->auth)
                                    : cv_error(CV_UNAVAILABLE, "%s: the upload session answered "
                                               "%ld to bytes %llu-%llu", f->base.url, resp.status,
                                               (unsigned long long)f->sent,
                                               (unsigned long long)total);
    }
    if (st == CV_STATUS_OK) {
        f->sent = total;
        memmove(f->buf, f->buf + n, f->len - n);
        f->len -= n;
    }
    cv_http_response_free(&resp);
    cv_http_headers_free(&h);
    return st;
}

static CvStatus gcs_append(CvWriteFile *base, const void *src, size_t n) {
    GcsWriteFile *f = (GcsWriteFile *)base;
    CvStatus st = CV_STATUS_OK;
    const char *s = src;
    while (n > 0) {
        /* Keep at most one chunk plus what is still to come in memory. */
        size_t room = GCS_CHUNK + 1 - f->len, take = n < room ? n : room;
        if (f->cap < f->len + take) {
            size_t cap = f->cap ? f->cap : 64 << 10;
            while (cap < f->len + take)
                cap *= 2;
            cap = cap > GCS_CHUNK + 1 ? GCS_CHUNK + 1 : cap;
            char *buf = realloc(f->buf, cap);
            if (buf == NULL)
                return cv_error_nomem();
            f->buf = buf;
            f->cap = cap;
        }
        memcpy(f->buf + f->len, s, take);
        f->len += take;
        s += take;
        n -= take;
        /* Send a chunk only while more bytes follow it: the last bytes go
         * with the total at commit. */
        if (f->len > GCS_CHUNK) {
            if (f->session == NULL && (st = start_session(f)) != CV_STATUS_OK)
                return st;
            if ((st = put_chunk(f, GCS_CHUNK, false)) != CV_STATUS_OK)
                return st;
        }
    }
    return st;
}

static void write_free(GcsWriteFile *f) {
    path_free(&f->path);
    free(f->buf);
    free(f->session);
    free(f->base.url);
    free(f);
}

static void cancel_session(GcsWriteFile *f) {
    if (f->session == NULL)
        return;
    CvHttpResponse resp = {0};
    /* GCS answers 499 to a cancelled session; nothing more to do either way. */
    CvStatus st = call(f->ctx, "DELETE", f->session, f->base.url, NULL, NULL, 0, &resp);
    cv_status_free(st);
    cv_http_response_free(&resp);
}

static CvStatus gcs_commit(CvWriteFile *base) {
    GcsWriteFile *f = (GcsWriteFile *)base;
    CvStatus st = CV_STATUS_OK;
    if (f->session != NULL) {
        st = put_chunk(f, f->len, true);
        if (st != CV_STATUS_OK)
            cancel_session(f);
    } else {
        st = upload_media(f->ctx, f->path.ebucket, f->path.eobject, base->url, f->buf, f->len);
    }
    write_free(f);
    return st;
}

static void gcs_abort(CvWriteFile *base) {
    GcsWriteFile *f = (GcsWriteFile *)base;
    cancel_session(f);
    write_free(f);
}

static const CvWriteFileMethods gcs_write_methods = {gcs_append, gcs_commit, gcs_abort};

static CvStatus gcs_open_write(const char *url, bool append, CvWriteFile **out) {
    const CvGcsContext *ctx;
    *out = NULL;
    if (append)
        return cv_error(CV_UNIMPLEMENTED, "%s: GCS objects cannot be appended to", url);
    CvStatus st = cv_gcs_context(&ctx);
    if (st != CV_STATUS_OK)
        return st;
    GcsWriteFile *f = calloc(1, sizeof *f);
    if (f == NULL)
        return cv_error_nomem();
    f->base.methods = &gcs_write_methods;
    f->ctx = ctx;
    if ((st = path_parse(url, &f->path)) != CV_STATUS_OK) {
        free(f);
        return st;
    }
    if (f->path.object[0] == '\0' || f->path.object[strlen(f->path.object) - 1] == '/')
        st = cv_error(CV_FAILED_PRECONDITION, "%s: is a directory, not an object", url);
    else if ((f->base.url = strdup(url)) == NULL)
        st = cv_error_nomem();
    if (st != CV_STATUS_OK) {
        write_free(f);
        return st;
    }
    *out = &f->base;
    return CV_STATUS_OK;
}

/* ---- the name space ---------------------------------------------------- */

static CvStatus bucket_exists(const CvGcsContext *ctx, const GcsPath *p, const char *display,
                              bool *exists) {
    CvHttpResponse resp = {0};
    char *url = str_printf("%s/storage/v1/b/%s", ctx->endpoint, p->ebucket);
    CvStatus st = url ? call(ctx, "GET", url, display, NULL, NULL, 0, &resp) : cv_error_nomem();
    *exists = st == CV_STATUS_OK && resp.status == 200;
    if (st == CV_STATUS_OK && resp.status != 200 && resp.status != 404)
        st = cv_http_error(&resp, display, &ctx->auth);
    cv_http_response_free(&resp);
    free(url);
    return st;
}

/* The object name as a directory prefix: "a/b" -> "a/b/", "" -> "". */
static char *dir_prefix(const char *object) {
    size_t n = strlen(object);
    return n == 0 || object[n - 1] == '/' ? strdup(object) : str_printf("%s/", object);
}

static CvStatus gcs_stat(const char *url, CvFileInfo *out) {
    const CvGcsContext *ctx;
    GcsPath p;
    bool found = false, any = false, placeholder = false;
    char *prefix = NULL;
    memset(out, 0, sizeof *out);
    CvStatus st = cv_gcs_context(&ctx);
    if (st != CV_STATUS_OK || (st = path_parse(url, &p)) != CV_STATUS_OK)
        return st;
    if (p.object[0] == '\0') {
        st = bucket_exists(ctx, &p, url, &found);
        if (st == CV_STATUS_OK && !found)
            st = cv_error(CV_NOT_FOUND, "%s: no such bucket", url);
        out->is_dir = true;
        goto done;
    }
    if (p.object[strlen(p.object) - 1] != '/') {
        st = get_object(ctx, &p, url, &found, out);
        if (st != CV_STATUS_OK || found)
            goto done;
    }
    prefix = dir_prefix(p.object);
    st = prefix ? prefix_has(ctx, &p, prefix, url, &any, &placeholder) : cv_error_nomem();
    if (st == CV_STATUS_OK && !any && !placeholder)
        st = cv_error(CV_NOT_FOUND, "%s: no such object or directory", url);
    memset(out, 0, sizeof *out);
    out->is_dir = true;
done:
    free(prefix);
    path_free(&p);
    return st;
}

typedef struct Entry {
    char *name;
    CvFileInfo info;
} Entry;

typedef struct Entries {
    Entry *items;
    size_t count, cap;
} Entries;

static bool entries_add(Entries *e, const char *name, size_t n, const CvFileInfo *info) {
    if (e->count == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 64;
        Entry *items = realloc(e->items, cap * sizeof *items);
        if (items == NULL)
            return false;
        e->items = items;
        e->cap = cap;
    }
    char *copy = strndup(name, n);
    if (copy == NULL)
        return false;
    e->items[e->count].name = copy;
    e->items[e->count].info = *info;
    e->count++;
    return true;
}

static int entry_cmp(const void *a, const void *b) {
    const Entry *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c != 0 ? c : (int)x->info.is_dir - (int)y->info.is_dir;
}

static int page_size(void) {
    /* Test hook: small pages exercise nextPageToken with few objects. */
    const char *s = getenv("CONVEYOR_GCS_LIST_PAGE_SIZE");
    int n = s ? atoi(s) : 0;
    return n > 0 ? n : 1000;
}

/* One page of objects.list into e; *token becomes the next page's token
 * (malloc'd) or NULL. *found: the page had any item or prefix. */
static CvStatus list_page(const CvGcsContext *ctx, const GcsPath *p, const char *eprefix,
                          size_t prefix_len, bool recursive, const char *display, char **token,
                          Entries *e, bool *found) {
    CvHttpResponse resp = {0};
    char *etoken = *token ? cv_gcs_percent_encode(*token) : NULL;
    char *url = str_printf("%s/storage/v1/b/%s/o?prefix=%s%s&maxResults=%d%s%s", ctx->endpoint,
                           p->ebucket, eprefix, recursive ? "" : "&delimiter=%2F", page_size(),
                           etoken ? "&pageToken=" : "", etoken ? etoken : "");
    free(*token);
    *token = NULL;
    CvStatus st = url ? call(ctx, "GET", url, display, NULL, NULL, 0, &resp) : cv_error_nomem();
    if (st == CV_STATUS_OK && resp.status != 200)
        st = cv_http_error(&resp, display, &ctx->auth);
    if (st != CV_STATUS_OK)
        goto done;
    CvJsonSpan json = {resp.body, resp.body_size}, arr, el;
    size_t pos = 0;
    if (cv_json_field(json, "items", &arr)) {
        while (cv_json_array_next(arr, &pos, &el)) {
            char *name = NULL;
            CvFileInfo info;
            if (!cv_json_string(el, "name", &name) || strlen(name) < prefix_len) {
                free(name);
                continue;
            }
            *found = true;
            const char *rel = name + prefix_len;
            size_t n = strlen(rel);
            /* The placeholder itself, and (recursive) those below it, are
             * not files. */
            if (n > 0 && rel[n - 1] != '/') {
                object_info(el, &info);
                if (!entries_add(e, rel, n, &info))
                    st = cv_error_nomem();
            }
            free(name);
            if (st != CV_STATUS_OK)
                goto done;
        }
    }
    pos = 0;
    if (cv_json_field(json, "prefixes", &arr)) {
        while (cv_json_array_next(arr, &pos, &el)) {
            char *name = cv_json_unescape(el);
            size_t n = name ? strlen(name) : 0;
            if (name != NULL && n > prefix_len + 1) {
                CvFileInfo info = {.is_dir = true};
                *found = true;
                if (!entries_add(e, name + prefix_len, n - prefix_len - 1, &info))
                    st = cv_error_nomem();
            }
            free(name);
            if (st != CV_STATUS_OK)
                goto done;
        }
    }
    if (cv_json_string(json, "nextPageToken", token) && (*token)[0] == '\0') {
        free(*token);
        *token = NULL;
    }
done:
    cv_http_response_free(&resp);
    free(url);
    free(etoken);
    return st;
}

static CvStatus gcs_list(const char *url, bool recursive, CvFsListFn each, void *fn_ctx) {
    const CvGcsContext *ctx;
    GcsPath p;
    Entries e = {0};
    char *prefix = NULL, *eprefix = NULL, *token = NULL;
    bool found = false;
    CvStatus st = cv_gcs_context(&ctx);
    if (st != CV_STATUS_OK || (st = path_parse(url, &p)) != CV_STATUS_OK)
        return st;
    prefix = dir_prefix(p.object);
    eprefix = prefix ? cv_gcs_percent_encode(prefix) : NULL;
    if (eprefix == NULL) {
        st = cv_error_nomem();
        goto done;
    }
    do {
        st = list_page(ctx, &p, eprefix, strlen(prefix), recursive, url, &token, &e, &found);
    } while (st == CV_STATUS_OK && token != NULL);
    if (st != CV_STATUS_OK)
        goto done;
    if (!found && prefix[0] != '\0') {
        st = cv_error(CV_NOT_FOUND, "%s: no such directory", url);
        goto done;
    }
    if (e.count > 1) /* qsort(NULL, 0, ...) is undefined */
        qsort(e.items, e.count, sizeof *e.items, entry_cmp);
    for (size_t i = 0; i < e.count; i++) {
        if (i > 0 && strcmp(e.items[i].name, e.items[i - 1].name) == 0 &&
            e.items[i].info.is_dir == e.items[i - 1].info.is_dir)
            continue;
        if (each(fn_ctx, e.items[i].name, &e.items[i].info) != 0)
            break;
    }
done:
    for (size_t i = 0; i < e.count; i++)
        free(e.items[i].name);
    free(e.items);
    free(token);
    free(eprefix);
    free(prefix);
    path_free(&p);
    return st;
}

static CvStatus delete_object(const CvGcsContext *ctx, const GcsPath *p, const char *object,
                              const char *display) {
    CvHttpResponse resp = {0};
    char *eobject = cv_gcs_percent_encode(object);
    char *url = eobject ? str_printf("%s/storage/v1/b/%s/o/%s", ctx->endpoint, p->ebucket, eobject)
                        : NULL;
    CvStatus st = url ? call(ctx, "DELETE", url, display, NULL, NULL, 0, &resp) : cv_error_nomem();
    if (st == CV_STATUS_OK && resp.status != 204 && resp.status != 200)
        st = resp.status == 404 ? cv_error(CV_NOT_FOUND, "%s: no such object", display)
                                : cv_http_error(&resp, display, &ctx->auth);
    cv_http_response_free(&resp);
    free(url);
    free(eobject);
    return st;
}

static CvStatus gcs_remove(const char *url) {
    const CvGcsContext *ctx;
    GcsPath p;
    CvStatus st = cv_gcs_context(&ctx);
    if (st != CV_STATUS_OK || (st = path_parse(url, &p)) != CV_STATUS_OK)
        return st;
    if (p.object[0] == '\0')
        st = cv_error(CV_FAILED_PRECONDITION, "%s: is a bucket, not an object", url);
    else
        st = delete_object(ctx, &p, p.object, url);
    path_free(&p);
    return st;
}

static CvStatus gcs_make_dir(const char *url) {
    const CvGcsContext *ctx;
    GcsPath p;
    bool exists = false;
    char *dir = NULL;
    CvStatus st = cv_gcs_context(&ctx);
    if (st != CV_STATUS_OK || (st = path_parse(url, &p)) != CV_STATUS_OK)
        return st;
    if (p.object[0] == '\0') {
        st = bucket_exists(ctx, &p, url, &exists);
        if (st == CV_STATUS_OK && !exists)
            st = cv_error(CV_NOT_FOUND, "%s: no such bucket", url);
        goto done;
    }
    /* An empty "dir/" object, as TensorFlow's GCS file system writes, so
     * the directory exists (stat, listdir) before anything is in it. */
    dir = dir_prefix(p.object);
    char *edir = dir ? cv_gcs_percent_encode(dir) : NULL;
    st = edir ? upload_media(ctx, p.ebucket, edir, url, "", 0) : cv_error_nomem();
    free(edir);
done:
    free(dir);
    path_free(&p);
    return st;
}

static CvStatus gcs_remove_dir(const char *url) {
    const CvGcsContext *ctx;
    GcsPath p;
    bool any = false, placeholder = false;
    char *dir = NULL;
    CvStatus st = cv_gcs_context(&ctx);
    if (st != CV_STATUS_OK || (st = path_parse(url, &p)) != CV_STATUS_OK)
        return st;
    if (p.object[0] == '\0') {
        st = cv_error(CV_FAILED_PRECONDITION, "%s: conveyor does not remove buckets", url);
        goto done;
    }
    dir = dir_prefix(p.object);
    st = dir ? prefix_has(ctx, &p, dir, url, &any, &placeholder) : cv_error_nomem();
    if (st != CV_STATUS_OK)
        goto done;
    if (any)
        st = cv_error(CV_FAILED_PRECONDITION, "%s: the directory is not empty", url);
    else if (!placeholder)
        st = cv_error(CV_NOT_FOUND, "%s: no such directory", url);
    else
        st = delete_object(ctx, &p, dir, url);
done:
    free(dir);
    path_free(&p);
    return st;
}

/* objects.rewrite, call after call until done (large objects across
 * locations or storage classes take several). */
static CvStatus rewrite(const CvGcsContext *ctx, const GcsPath *from, const GcsPath *to,
                        const char *display) {
    CvStatus st = CV_STATUS_OK;
    CvHttpHeaders h = {0};
    char *token = NULL;
    if ((st = cv_http_headers_add(&h, "Content-Type: application/json")) != CV_STATUS_OK)
        return st;
    for (int calls = 0; st == CV_STATUS_OK; calls++) {
        CvHttpResponse resp = {0};
        bool done = false;
        char *etoken = token ? cv_gcs_percent_encode(token) : NULL;
        char *url = str_printf("%s/storage/v1/b/%s/o/%s/rewriteTo/b/%s/o/%s%s%s", ctx->endpoint,
                               from->ebucket, from->eobject, to->ebucket, to->eobject,
                               etoken ? "?rewriteToken=" : "", etoken ? etoken : "");
        free(token);
        token = NULL;
        st = url ? call(ctx, "POST", url, display, &h, "{}", 2, &resp) : cv_error_nomem();
        if (st == CV_STATUS_OK && resp.status != 200)
            st = cv_http_error(&resp, display, &ctx->auth);
        if (st == CV_STATUS_OK) {
            CvJsonSpan json = {resp.body, resp.body_size};
            if (!cv_json_bool(json, "done", &done))
                done = !cv_json_string(json, "rewriteToken", &token);
            else if (!done && !cv_json_string(json, "rewriteToken", &token))
                st = cv_error(CV_UNAVAILABLE, "%s: the rewrite is not done and gave no token",
                              display);
            if (st == CV_STATUS_OK && !done && calls >= REWRITE_MAX_CALLS)
                st = cv_error(CV_UNAVAILABLE, "%s: the rewrite did not finish in %d calls",
                              display, REWRITE_MAX_CALLS);
        }
        cv_http_response_free(&resp);
        free(url);
        free(etoken);
        if (done)
            break;
    }
    free(token);
    cv_http_headers_free(&h);
    return st;
}

static CvStatus copy_object(const char *from, const char *to, bool overwrite, bool remove_source) {
    const CvGcsContext *ctx;
    GcsPath a, b;
    bool found = false;
    CvFileInfo info;
    CvStatus st = cv_gcs_context(&ctx);
    if (st != CV_STATUS_OK || (st = path_parse(from, &a)) != CV_STATUS_OK)
        return st;
    if ((st = path_parse(to, &b)) != CV_STATUS_OK) {
        path_free(&a);
        return st;
    }
    if (a.object[0] == '\0' || b.object[0] == '\0') {
        st = cv_error(CV_FAILED_PRECONDITION, "%s -> %s: copies objects, not buckets", from, to);
        goto done;
    }
    if (!overwrite) {
        st = get_object(ctx, &b, to, &found, &info);
        if (st == CV_STATUS_OK && found)
            st = cv_error(CV_ALREADY_EXISTS, "%s: already exists", to);
        if (st != CV_STATUS_OK)
            goto done;
    }
    st = rewrite(ctx, &a, &b, from);
    if (st == CV_STATUS_OK && remove_source)
        st = delete_object(ctx, &a, a.object, from);
done:
    path_free(&a);
    path_free(&b);
    return st;
}

static CvStatus gcs_copy(const char *from, const char *to, bool overwrite) {
    return copy_object(from, to, overwrite, false);
}

/* A server-side copy and a delete: not atomic, as on GCS itself. */
static CvStatus gcs_rename(const char *from, const char *to, bool overwrite) {
    return copy_object(from, to, overwrite, true);
}

const CvFileSystem cv_fs_gcs = {
    .scheme = "gs",
    .open_read = gcs_open_read,
    .open_write = gcs_open_write,
    .stat = gcs_stat,
    .list = gcs_list,
    .remove = gcs_remove,
    .make_dir = gcs_make_dir,
    .remove_dir = gcs_remove_dir,
    .rename = gcs_rename,
    .copy = gcs_copy,
};
