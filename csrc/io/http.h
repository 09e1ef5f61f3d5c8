/* HTTP for the remote file systems (io/fs_gcs.c, io/fs_s3.c, io/fs_http.c),
 * over libcurl's multi interface: no hand-written HTTP stack.
 *
 * One I/O thread per process ("cv-io", started on first use, outside every
 * pool's CPU budget) drives every transfer with curl_multi_poll. Callers
 * never touch a curl handle: a request waits for its own answer in a
 * blocking section (core/blocking.h) and gives up within a wait slice when
 * its pipeline is cancelled (CV_CANCELLED) or the consumer is interrupted
 * (CV_INTERRUPTED: Ctrl-C), while the transfer is dropped on the I/O thread.
 * A stream keeps a ranged GET running ahead of its reader, so a reader that
 * comes back finds the bytes already there: what is in flight is bounded by
 * the I/O budget (bytes and requests), not by threads.
 *
 * Faults: transport errors (refused, reset, timed out, a body cut short),
 * 408, 429 and 5xx answers are retried with exponential backoff and full
 * jitter; a stream resumes a cut body from the byte it reached. Every other
 * answer is the caller's. After the last attempt: UNAVAILABLE naming the URL
 * and listing each attempt's outcome.
 *
 * Credentials: a request carries a CvHttpAuth whose sign() adds the headers
 * for each attempt. URLs, headers and bodies given here are never put in an
 * error message except the URL itself, which must not carry a secret.
 *
 * Thread-safety: every function may be called from any thread; a stream from
 * one thread at a time. */
#ifndef CV_HTTP_H
#define CV_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* A growable list of "Name: value" header lines, owned strings. */
typedef struct CvHttpHeaders {
    char **lines;
    size_t count, cap;
} CvHttpHeaders;

CvStatus cv_http_headers_add(CvHttpHeaders *h, const char *fmt, ...) CV_PRINTF(2, 3);
void cv_http_headers_free(CvHttpHeaders *h); /* empties it; the struct may be reused */

typedef struct CvHttpRequest CvHttpRequest;

/* How a request is authorised: sign() appends this attempt's headers
 * (Authorization, x-amz-date, ...) to `out`; it runs on the caller's thread
 * before every attempt (a SigV4 signature carries the time; a token may have
 * been refreshed) and may wait (a token request). `source` says where the
 * credentials came from, for PERMISSION_DENIED messages ("the environment
 * (AWS_ACCESS_KEY_ID)", "anonymous"); never the credentials themselves.
 * NULL sign: no headers. The struct and ctx outlive every request using it. */
typedef struct CvHttpAuth {
    CvStatus (*sign)(void *ctx, const CvHttpRequest *req, CvHttpHeaders *out);
    void *ctx;
    const char *source;
} CvHttpAuth;

struct CvHttpRequest {
    const char *method; /* "GET", "HEAD", "PUT", "POST", "DELETE" */
    const char *url;
    const CvHttpHeaders *headers; /* may be NULL */
    const void *body;             /* borrowed until the call returns; may be NULL */
    size_t body_size;
    const CvHttpAuth *auth;       /* may be NULL */
    /* The body's SHA-256 in lower-case hex when sign() needs it (SigV4's
     * x-amz-content-sha256); "" lets sign() compute or skip it. */
    char body_sha256[65];
};

typedef struct CvHttpResponse {
    long status;      /* the last attempt's HTTP status (0: no answer) */
    char *body;       /* owned, NUL-terminated (a HEAD's is "") */
    size_t body_size;
    char *headers;    /* owned: the last attempt's header lines, "\r\n"-separated */
    int attempts;
} CvHttpResponse;

/* Send `req` and wait for its answer, retrying as above. OK with any HTTP
 * status the caller must judge (2xx, 3xx, 4xx but 408/429); UNAVAILABLE
 * after the retries; CV_CANCELLED / CV_INTERRUPTED. Free `resp` with
 * cv_http_response_free whatever the result. */
CvStatus cv_http_perform(const CvHttpRequest *req, CvHttpResponse *resp);
void cv_http_response_free(CvHttpResponse *resp);
/* A response header's value (case-insensitive name), copied into dst
 * (NUL-terminated, cut at cap); false when absent. */
bool cv_http_response_header(const CvHttpResponse *resp, const char *name, char *dst, size_t cap);

/* The status for an answer the caller does not accept: 404 NOT_FOUND, 401
 * and 403 PERMISSION_DENIED (naming auth->source), 409 and 412
 * FAILED_PRECONDITION, 416 OUT_OF_RANGE, 400 INVALID_ARGUMENT, others
 * UNKNOWN; the message names the URL and the store's own error code when
 * the body has one, e.g. "s3://b/k: 403 Forbidden (AccessDenied; credentials
 * from the environment (AWS_ACCESS_KEY_ID))". `display` is the URL the user
 * gave (gs://..., s3://...), not the endpoint's. */
CvStatus cv_http_error(const CvHttpResponse *resp, const char *display, const CvHttpAuth *auth);

/* ---- streams: a ranged GET read ahead of its reader -------------------- */

typedef struct CvHttpStream CvHttpStream;

/* Start a GET of bytes [offset, end) of `url` (end UINT64_MAX: to the end
 * of the object), shown as `display` in errors. It runs at once, ahead of
 * the first read, and keeps going while the reader is elsewhere, pausing
 * when it holds its window of unread bytes (sized from the measured rate and
 * first-byte latency, within the process's I/O budget). The headers and auth
 * are used again for each resumed attempt. An answer other than 200/206 is
 * reported by the first read as cv_http_error() says. */
CvStatus cv_http_stream_open(const char *url, const char *display, const CvHttpHeaders *headers,
                             const CvHttpAuth *auth, uint64_t offset, uint64_t end,
                             CvHttpStream **out);
/* Up to n bytes into dst; *got < n only at the end of the range. Waits (in
 * a blocking section, cancellable) only when the read-ahead has not yet
 * caught up. */
CvStatus cv_http_stream_read(CvHttpStream *s, void *dst, size_t n, size_t *got);
/* Wait for the first answer (its headers; retried answers do not count) and
 * check it as the first read would: an error answer (404, 403, ...) comes
 * back here as cv_http_stream_read would return it, and sticks. *status is
 * that answer's status (0: none came). A 416 to a stream opened to the end
 * (an empty object, or an offset past its end) is OK: reads find the end
 * at once, and cv_http_stream_total says the size. The bytes stay
 * for the reads. */
CvStatus cv_http_stream_answer(CvHttpStream *s, long *status);
/* A header of the first answer (after cv_http_stream_answer), copied as
 * cv_http_response_header does; false when absent or not yet in. */
bool cv_http_stream_header(const CvHttpStream *s, const char *name, char *dst, size_t cap);
/* The object's size from the first answer: a 206's or 416's Content-Range
 * total, a 200's Content-Length; UINT64_MAX when it does not say. */
uint64_t cv_http_stream_total(const CvHttpStream *s);
/* The offset of the next byte cv_http_stream_read returns. */
uint64_t cv_http_stream_offset(const CvHttpStream *s);
void cv_http_stream_close(CvHttpStream *s); /* NULL-safe; drops what is in flight */

/* ---- the I/O budget and what it measured ------------------------------- */

typedef struct CvIoStats {
    uint64_t requests;          /* requests answered since the process started */
    uint64_t retries;           /* attempts that were retried */
    uint64_t bytes_received;
    int64_t requests_in_flight; /* now */
    int64_t bytes_in_flight;    /* read ahead and not yet read, now */
    int64_t budget_bytes;       /* the I/O budget: bytes all streams may hold ahead */
    int64_t budget_requests;    /* and requests in flight at once */
    double first_byte_ms;       /* moving average of the first-byte latency */
    double mb_per_s;            /* moving average of a stream's transfer rate */
} CvIoStats;

void cv_io_stats(CvIoStats *out);
/* The same as a report (core/report.h), the fields by their names. */
struct CvReport;
CvStatus cv_io_report(struct CvReport *r);
/* Set the I/O budget (0 keeps a value): the bytes every stream together may
 * hold ahead of its reader, and the requests in flight at once. */
void cv_io_set_budget(int64_t bytes, int64_t requests);

#endif
