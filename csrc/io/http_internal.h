/* What io/http.c shares with io/http_stream.c: one transfer on the I/O
 * thread (CvXfer), the retry policy and the cancellable waits. Not for other
 * files: schemes use io/http.h.
 *
 * A CvXfer is one attempt: one easy handle, started by cv_xfer_start and run
 * by the "cv-io" thread until it is done or dropped. Its caller owns it and
 * frees it with cv_xfer_finish, which first takes it back from the I/O
 * thread (dropping a transfer in flight) and waits for that, so a borrowed
 * request body and the struct itself are never used after it returns.
 * Fields marked (mu) are read and written under x->mu only. */
#ifndef CV_HTTP_INTERNAL_H
#define CV_HTTP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "io/http.h"

/* Bytes received and not yet taken: [start, end) of data. */
typedef struct CvXBuf {
    char *data;
    size_t start, end, cap;
} CvXBuf;

typedef struct CvXfer CvXfer;
struct CvXfer {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    void *easy;            /* CURL *, the I/O thread's once started */
    void *slist;           /* struct curl_slist *, freed with the transfer */
    unsigned long gen;     /* the I/O thread generation (a fork child has another) */
    bool stream;           /* body bytes are read as they come, within window */
    /* (mu) */
    bool done, dropped, headers_done, paused;
    int result;            /* CURLcode once done */
    long status;           /* the final answer's status (0: none yet) */
    CvXBuf body, headers;  /* headers: the final answer's lines */
    size_t window;         /* stream: the most unread bytes held */
    uint64_t received;     /* body bytes received */
    int64_t t_start, t_first_byte;
    char errbuf[256];      /* curl's CURLOPT_ERRORBUFFER (CURL_ERROR_SIZE) */
    /* (the I/O thread's lock) the command queue */
    CvXfer *next;
    bool queued, cmd_add, cmd_drop, cmd_resume, in_multi, pending, io_done;
};

/* The request policy, from the environment (read on each call). */
typedef struct CvHttpPolicy {
    int attempts;           /* CONVEYOR_HTTP_ATTEMPTS, default 6 */
    int64_t backoff_ms;     /* CONVEYOR_HTTP_BACKOFF_MS, default 100 */
    int64_t max_backoff_ms; /* 5000 */
    long timeout_s;         /* CONVEYOR_HTTP_TIMEOUT_S, default 30 */
} CvHttpPolicy;
void cv_http_policy(CvHttpPolicy *p);

/* Start one attempt of `req` with `extra` (signed) header lines added. A
 * stream transfer hands its body out through cv_xfer_take within `window`
 * bytes and the I/O budget. */
CvStatus cv_xfer_start(const CvHttpRequest *req, const CvHttpHeaders *extra, bool stream,
                       size_t window, long timeout_s, CvXfer **out);
/* Take the transfer back from the I/O thread and free it. NULL-safe. */
void cv_xfer_finish(CvXfer *x);
/* Wait (x->mu held on entry and on return) until pred(x, arg) holds, in
 * blocking-section slices; CANCELLED / INTERRUPTED (naming display) when
 * the caller's pipeline gave up meanwhile. */
CvStatus cv_xfer_wait(CvXfer *x, bool (*pred)(CvXfer *x, void *arg), void *arg,
                      const char *display);
/* A stream's reader took n bytes (x->mu held): release them from the I/O
 * budget and resume a paused transfer once there is room. */
void cv_xfer_took(CvXfer *x, size_t n);

/* Whether a CURLcode is worth another attempt, and its short description
 * ("connection reset"). */
bool cv_http_transport_retryable(int curl_code);
const char *cv_http_transport_outcome(int curl_code);
/* Whether an HTTP status is worth another attempt (408, 429, 5xx). */
bool cv_http_status_retryable(long status);
const char *cv_http_reason(long status);
/* Sleep before attempt number failures + 1: exponential backoff with full
 * jitter (at least retry_after_ms when that is given and small), in slices;
 * CANCELLED / INTERRUPTED when the caller gave up meanwhile. */
CvStatus cv_http_backoff(const CvHttpPolicy *p, int failures, int64_t retry_after_ms,
                         const char *display);
/* A header's value in "\r\n"-separated lines (case-insensitive name). */
bool cv_http_header_in(const char *lines, size_t len, const char *name, char *dst, size_t cap);
/* Retry-After in milliseconds when it is a small number of seconds, else -1. */
int64_t cv_http_retry_after_ms(const char *lines, size_t len);

/* The URL as errors show it: no user:password@, and a query string (which
 * may carry a signature or a token) shown as "?...". */
void cv_http_display(const char *url, char *dst, size_t cap);

/* Counters (relaxed atomics) shared with the stream code. */
extern _Atomic uint64_t cv_http_retries;

#endif
