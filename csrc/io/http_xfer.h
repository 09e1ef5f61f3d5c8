/* One transfer on the process's I/O thread ("cv-io"), over libcurl's multi
 * interface: what io/http.c (requests) and io/http_stream.c (streams) are
 * built on. Not for other files: schemes use io/http.h.
 *
 * A CvXfer is one attempt: one easy handle, started by cv_xfer_start and run
 * by the "cv-io" thread until it is done or dropped. Its caller owns it and
 * frees it with cv_xfer_finish, which first takes it back from the I/O
 * thread (dropping a transfer in flight) and waits for that, so a borrowed
 * request body and the struct itself are never used after it returns.
 * Fields marked (mu) are read and written under x->mu only. */
#ifndef CV_HTTP_XFER_H
#define CV_HTTP_XFER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

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
    int result;            /* CURLcode once done, or CV_XFER_EVICTED */
    long status;           /* the final answer's status (0: none yet) */
    CvXBuf body, headers;  /* headers: the final answer's lines */
    size_t window;         /* stream: the most unread bytes held */
    uint64_t content_length; /* the final answer's Content-Length (0: none yet) */
    uint64_t received;     /* body bytes received */
    int64_t t_queued, t_start, t_first_byte;
    int pauses;            /* times the stream paused at its window or the budget */
    char errbuf[256];      /* curl's CURLOPT_ERRORBUFFER (CURL_ERROR_SIZE) */
    /* (the I/O thread's lock) the command queue */
    CvXfer *next;
    bool queued, cmd_add, cmd_drop, cmd_resume, in_multi, pending, io_done;
};

/* A paused stream transfer ended to make room for a waiting one (the I/O
 * budget's requests): not a failure; the stream resumes where it was. */
#define CV_XFER_EVICTED (-1)

/* Start one attempt: `method` on `url` with the header lines of both lists
 * (the request's and the signed ones), `body` borrowed until
 * cv_xfer_finish. A stream transfer hands its body out through
 * cv_xfer_took within `window` bytes and the I/O budget. */
typedef struct CvXferRequest {
    const char *method, *url;
    char *const *lines;
    size_t nlines;
    char *const *signed_lines;
    size_t nsigned;
    const void *body;
    size_t body_size;
} CvXferRequest;
CvStatus cv_xfer_start(const CvXferRequest *req, bool stream, size_t window, long timeout_s,
                       CvXfer **out);
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

/* The I/O counters and budget (atomics; io/http.c reports them). */
extern _Atomic uint64_t cv_io_requests, cv_io_retries, cv_io_bytes;
extern _Atomic int64_t cv_io_in_flight, cv_io_bytes_in_flight, cv_io_budget_bytes, cv_io_budget_requests;
/* Moving averages of the first-byte latency (ms) and a transfer's rate (MB/s). */
void cv_xfer_averages(double *first_byte_ms, double *mb_per_s);

#endif
