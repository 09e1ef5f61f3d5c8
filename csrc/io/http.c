/* HTTP over libcurl's multi interface (see http.h): the process's "cv-io"
 * thread, one transfer per attempt (CvXfer, http_internal.h), the retry
 * policy and cv_http_perform. Streams are in http_stream.c.
 *
 * Locks: io.mu (the command queue, the multi's handle set) is taken before
 * a transfer's x->mu, never after: the I/O thread resumes a paused transfer
 * under io.mu, and libcurl may call the write callback (which takes x->mu)
 * from inside curl_easy_pause. Callers never hold x->mu while taking io.mu. */
#include "io/http.h"

#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "core/blocking.h"
#include "core/thread.h"
#include "io/http_internal.h"

#define MIN_WINDOW ((size_t)1 << 20)
#define MAX_WINDOW ((size_t)64 << 20)
#define ERROR_BODY_MAX ((size_t)64 << 10) /* what is kept of an error answer's body */

/* ---- counters ----------------------------------------------------------- */

_Atomic uint64_t cv_http_retries;
static _Atomic uint64_t stat_requests, stat_bytes;
static _Atomic int64_t stat_in_flight, stat_bytes_in_flight;
static _Atomic int64_t budget_bytes = (int64_t)256 << 20, budget_requests = 64;
/* Moving averages, under avg_mu (updated once per transfer). */
static pthread_mutex_t avg_mu = PTHREAD_MUTEX_INITIALIZER;
static double avg_first_byte_ms, avg_mb_per_s;

void cv_io_stats(CvIoStats *out)
{
    out->requests = atomic_load(&stat_requests);
    out->retries = atomic_load(&cv_http_retries);
    out->bytes_received = atomic_load(&stat_bytes);
    out->requests_in_flight = atomic_load(&stat_in_flight);
    out->bytes_in_flight = atomic_load(&stat_bytes_in_flight);
    out->budget_bytes = atomic_load(&budget_bytes);
    out->budget_requests = atomic_load(&budget_requests);
    pthread_mutex_lock(&avg_mu);
    out->first_byte_ms = avg_first_byte_ms;
    out->mb_per_s = avg_mb_per_s;
    pthread_mutex_unlock(&avg_mu);
}

void cv_io_set_budget(int64_t bytes, int64_t requests)
{
    if (bytes > 0)
        atomic_store(&budget_bytes, bytes);
    if (requests > 0)
        atomic_store(&budget_requests, requests);
}

/* ---- headers ------------------------------------------------------------ */

CvStatus cv_http_headers_add(CvHttpHeaders *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *line = NULL;
    int n = vasprintf(&line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return cv_error_nomem();
    if (h->count == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 8;
        char **lines = realloc(h->lines, cap * sizeof *lines);
        if (!lines) {
            free(line);
            return cv_error_nomem();
        }
        h->lines = lines;
        h->cap = cap;
    }
    h->lines[h->count++] = line;
    return CV_STATUS_OK;
}

void cv_http_headers_free(CvHttpHeaders *h)
{
    for (size_t i = 0; i < h->count; i++)
        free(h->lines[i]);
    free(h->lines);
    h->lines = NULL;
    h->count = h->cap = 0;
}

bool cv_http_header_in(const char *lines, size_t len, const char *name, char *dst, size_t cap)
{
    size_t nlen = strlen(name);
    const char *p = lines, *end = lines + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = eol ? eol : end;
        if ((size_t)(line_end - p) > nlen && p[nlen] == ':' && strncasecmp(p, name, nlen) == 0) {
            const char *v = p + nlen + 1, *ve = line_end;
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            if (cap) {
                size_t k = (size_t)(ve - v) < cap - 1 ? (size_t)(ve - v) : cap - 1;
                memcpy(dst, v, k);
                dst[k] = '\0';
            }
            return true;
        }
        p = line_end + 1;
    }
    return false;
}

bool cv_http_response_header(const CvHttpResponse *resp, const char *name, char *dst, size_t cap)
{
    return resp->headers && cv_http_header_in(resp->headers, strlen(resp->headers), name, dst, cap);
}

int64_t cv_http_retry_after_ms(const char *lines, size_t len)
{
    char v[32];
    if (!cv_http_header_in(lines, len, "Retry-After", v, sizeof v))
        return -1;
    char *e;
    long s = strtol(v, &e, 10);
    if (e == v || *e || s < 0 || s > 10) /* a date, or too long to wait inside a read */
        return -1;
    return (int64_t)s * 1000;
}

void cv_http_display(const char *url, char *dst, size_t cap)
{
    if (!cap)
        return;
    const char *scheme_end = strstr(url, "://");
    const char *host = scheme_end ? scheme_end + 3 : url;
    size_t k = 0;
    for (const char *p = url; p < host && k + 1 < cap; p++)
        dst[k++] = *p;
    const char *path = host + strcspn(host, "/?#");
    const char *at = memchr(host, '@', (size_t)(path - host));
    if (at) /* user:password@ */
        host = at + 1;
    const char *stop = host + strcspn(host, "?#");
    for (const char *p = host; p < stop && k + 1 < cap; p++)
        dst[k++] = *p;
    if (*stop == '?' && k + 5 < cap) { /* a query may carry a signature or a token */
        memcpy(dst + k, "?...", 4);
        k += 4;
    }
    dst[k] = '\0';
}

/* ---- policy ------------------------------------------------------------- */

static long env_long(const char *name, long dflt, long lo, long hi)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *e;
    long x = strtol(v, &e, 10);
    if (*e || x < lo || x > hi)
        return dflt;
    return x;
}

void cv_http_policy(CvHttpPolicy *p)
{
    p->attempts = (int)env_long("CONVEYOR_HTTP_ATTEMPTS", 6, 1, 1000);
    p->backoff_ms = env_long("CONVEYOR_HTTP_BACKOFF_MS", 100, 0, 3600000);
    p->max_backoff_ms = p->backoff_ms > 5000 ? p->backoff_ms : 5000;
    p->timeout_s = env_long("CONVEYOR_HTTP_TIMEOUT_S", 30, 1, 86400);
}

bool cv_http_transport_retryable(int code)
{
    switch ((CURLcode)code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP3:
        return true;
    default:
        return false;
    }
}

const char *cv_http_transport_outcome(int code)
{
    switch ((CURLcode)code) {
    case CURLE_COULDNT_CONNECT:
        return "could not connect";
    case CURLE_COULDNT_RESOLVE_HOST:
        return "could not resolve the host";
    case CURLE_SEND_ERROR:
        return "send failed";
    case CURLE_RECV_ERROR:
        return "connection reset";
    case CURLE_PARTIAL_FILE:
        return "body cut short";
    case CURLE_OPERATION_TIMEDOUT:
        return "stalled";
    case CURLE_GOT_NOTHING:
        return "empty reply";
    default:
        return curl_easy_strerror((CURLcode)code);
    }
}

bool cv_http_status_retryable(long status)
{
    return status == 408 || status == 429 || (status >= 500 && status <= 599);
}

const char *cv_http_reason(long status)
{
    switch (status) {
    case 200: return "OK";
    case 206: return "Partial Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 412: return "Precondition Failed";
    case 416: return "Range Not Satisfiable";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "";
    }
}

/* A per-thread xorshift for the jitter: no lock, no shared state. */
static uint64_t jitter_rand(void)
{
    static _Thread_local uint64_t s;
    if (!s)
        s = (uint64_t)cv_now_ns() ^ ((uint64_t)(uintptr_t)&s << 16) ^ 0x9E3779B97F4A7C15ull;
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
}

/* Whether the caller gave up; the status names display. Called outside any
 * lock and outside the blocking section. */
static CvStatus gave_up(const char *display)
{
    if (cv_blocking_cancelled())
        return cv_error(CV_CANCELLED, "%s: the request was cancelled", display);
    if (cv_interrupt_pending())
        return cv_error(CV_INTERRUPTED, "interrupted");
    return CV_STATUS_OK;
}

CvStatus cv_http_backoff(const CvHttpPolicy *p, int failures, int64_t retry_after_ms,
                         const char *display)
{
    int64_t cap = p->backoff_ms;
    for (int i = 1; i < failures && cap < p->max_backoff_ms; i++)
        cap *= 2;
    if (cap > p->max_backoff_ms)
        cap = p->max_backoff_ms;
    int64_t ms = cap > 0 ? (int64_t)(jitter_rand() % (uint64_t)(cap + 1)) : 0;
    if (retry_after_ms > ms)
        ms = retry_after_ms;
    int64_t deadline = cv_now_ns() + ms * 1000000;
    for (;;) {
        int64_t left = deadline - cv_now_ns();
        if (left <= 0)
            return CV_STATUS_OK;
        if (left > (int64_t)CV_WAIT_SLICE_MS * 1000000)
            left = (int64_t)CV_WAIT_SLICE_MS * 1000000;
        struct timespec ts = {left / 1000000000, left % 1000000000};
        cv_blocking_begin();
        void *outside = cv_wait_outside_begin();
        nanosleep(&ts, NULL);
        cv_wait_outside_end(outside);
        cv_blocking_end();
        CvStatus s = gave_up(display);
        if (s)
            return s;
    }
}

/* ---- the I/O thread ----------------------------------------------------- */

static struct {
    pthread_mutex_t mu;
    CURLM *multi;
    bool started;
    unsigned long gen; /* changes in a fork child: the parent's thread is not there */
    CvXfer *queue, *queue_tail;
    CvXfer **pending; /* waiting for the request budget, in order */
    size_t npending, cap_pending;
    int64_t active;
    CvThread thread;
} io = {.mu = PTHREAD_MUTEX_INITIALIZER, .gen = 1};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_init_result;

static void after_fork_child(void)
{
    /* The I/O thread did not come along: start another on first use. The
     * parent's multi handle is left alone (its sockets are the parent's). */
    pthread_mutex_init(&io.mu, NULL);
    pthread_mutex_init(&avg_mu, NULL);
    io.multi = NULL;
    io.started = false;
    io.gen++;
    io.queue = io.queue_tail = NULL;
    io.npending = 0;
    io.active = 0;
    atomic_store(&stat_in_flight, 0);
    atomic_store(&stat_bytes_in_flight, 0);
}

static void global_init(void)
{
    global_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
    pthread_atfork(NULL, NULL, after_fork_child);
}

static void record_averages(CvXfer *x, int64_t now)
{
    if (!x->t_first_byte)
        return;
    double fb = (double)(x->t_first_byte - x->t_start) / 1e6;
    double secs = (double)(now - x->t_first_byte) / 1e9;
    pthread_mutex_lock(&avg_mu);
    avg_first_byte_ms = avg_first_byte_ms ? 0.8 * avg_first_byte_ms + 0.2 * fb : fb;
    if (x->received >= (1u << 16) && secs > 1e-3) {
        double rate = (double)x->received / secs / 1e6;
        avg_mb_per_s = avg_mb_per_s ? 0.8 * avg_mb_per_s + 0.2 * rate : rate;
    }
    pthread_mutex_unlock(&avg_mu);
}

/* io.mu held. The transfer leaves the multi (or the pending list). */
static void detach(CvXfer *x)
{
    if (x->in_multi) {
        curl_multi_remove_handle(io.multi, x->easy);
        x->in_multi = false;
        io.active--;
        atomic_fetch_sub(&stat_in_flight, 1);
    }
    if (x->pending) {
        for (size_t i = 0; i < io.npending; i++)
            if (io.pending[i] == x) {
                memmove(io.pending + i, io.pending + i + 1, (io.npending - i - 1) * sizeof *io.pending);
                io.npending--;
                break;
            }
        x->pending = false;
    }
    if (x->easy) {
        curl_easy_cleanup(x->easy);
        x->easy = NULL;
    }
}

static void admit(CvXfer *x)
{
    x->in_multi = true;
    io.active++;
    atomic_fetch_add(&stat_in_flight, 1);
    pthread_mutex_lock(&x->mu);
    x->t_start = cv_now_ns();
    pthread_mutex_unlock(&x->mu);
    if (curl_multi_add_handle(io.multi, x->easy) != CURLM_OK) {
        x->in_multi = false;
        io.active--;
        atomic_fetch_sub(&stat_in_flight, 1);
        pthread_mutex_lock(&x->mu);
        x->done = true;
        x->result = CURLE_OUT_OF_MEMORY;
        pthread_cond_broadcast(&x->cond);
        pthread_mutex_unlock(&x->mu);
        x->io_done = true;
    }
}

/* io.mu held: run the queued commands, then admit pending transfers. */
static void run_commands(void)
{
    CvXfer *x = io.queue;
    io.queue = io.queue_tail = NULL;
    while (x) {
        CvXfer *next = x->next;
        x->next = NULL;
        x->queued = false;
        if (x->cmd_drop) {
            detach(x);
            x->cmd_add = x->cmd_resume = x->cmd_drop = false;
            x->io_done = true;
            pthread_mutex_lock(&x->mu);
            x->dropped = true;
            pthread_cond_broadcast(&x->cond);
            pthread_mutex_unlock(&x->mu); /* x may be freed from here on */
        } else {
            if (x->cmd_add) {
                x->cmd_add = false;
                if (io.npending == io.cap_pending) {
                    size_t cap = io.cap_pending ? 2 * io.cap_pending : 64;
                    CvXfer **p = realloc(io.pending, cap * sizeof *p);
                    if (p) {
                        io.pending = p;
                        io.cap_pending = cap;
                    }
                }
                if (io.npending < io.cap_pending) {
                    io.pending[io.npending++] = x;
                    x->pending = true;
                } else {
                    admit(x); /* no room to queue it: over budget rather than lost */
                }
            }
            if (x->cmd_resume) {
                x->cmd_resume = false;
                if (x->in_multi)
                    curl_easy_pause(x->easy, CURLPAUSE_CONT); /* may call write_cb */
            }
        }
        x = next;
    }
    size_t i = 0;
    while (i < io.npending && io.active < atomic_load(&budget_requests)) {
        CvXfer *p = io.pending[i++];
        p->pending = false;
        admit(p);
    }
    if (i) {
        memmove(io.pending, io.pending + i, (io.npending - i) * sizeof *io.pending);
        io.npending -= i;
    }
}

/* io.mu held: record finished transfers. */
static void collect_done(void)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(io.multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        CvXfer *x = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        CURLcode result = m->data.result;
        long status = 0;
        curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &status);
        detach(x); /* m is invalid from here */
        x->io_done = true;
        if (status > 0)
            atomic_fetch_add(&stat_requests, 1);
        pthread_mutex_lock(&x->mu);
        x->done = true;
        x->result = result;
        if (status > 0)
            x->status = status;
        record_averages(x, cv_now_ns());
        pthread_cond_broadcast(&x->cond);
        pthread_mutex_unlock(&x->mu);
    }
}

static void *io_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&io.mu);
        run_commands();
        pthread_mutex_unlock(&io.mu);
        int running = 0;
        curl_multi_perform(io.multi, &running);
        pthread_mutex_lock(&io.mu);
        collect_done();
        run_commands(); /* room freed by finished transfers */
        pthread_mutex_unlock(&io.mu);
        curl_multi_poll(io.multi, NULL, 0, 1000, NULL);
    }
    return NULL;
}

/* io.mu held: the thread and multi of this process, started on first use. */
static CvStatus ensure_started(void)
{
    if (io.started)
        return CV_STATUS_OK;
    if (global_init_result != CURLE_OK)
        return cv_error(CV_INTERNAL, "libcurl did not initialise: %s",
                        curl_easy_strerror(global_init_result));
    io.multi = curl_multi_init();
    if (!io.multi)
        return cv_error_nomem();
    curl_multi_setopt(io.multi, CURLMOPT_MAXCONNECTS, 256L);
    CvStatus s = cv_thread_start(&io.thread, io_main, NULL, "cv-io");
    if (s) {
        curl_multi_cleanup(io.multi);
        io.multi = NULL;
        return s;
    }
    io.started = true;
    return CV_STATUS_OK;
}

/* Queue a command for x (the flags already set, io.mu held) and wake the
 * thread. */
static void enqueue(CvXfer *x)
{
    if (!x->queued) {
        x->queued = true;
        if (io.queue_tail)
            io.queue_tail->next = x;
        else
            io.queue = x;
        io.queue_tail = x;
    }
    if (io.multi)
        curl_multi_wakeup(io.multi);
}

/* ---- transfers ---------------------------------------------------------- */

static bool xbuf_append(CvXBuf *b, const void *p, size_t n)
{
    if (b->end + n > b->cap) {
        if (b->start) {
            memmove(b->data, b->data + b->start, b->end - b->start);
            b->end -= b->start;
            b->start = 0;
        }
        if (b->end + n > b->cap) {
            size_t cap = b->cap ? b->cap : 16384;
            while (cap < b->end + n)
                cap *= 2;
            char *d = realloc(b->data, cap + 1); /* +1: room for a NUL */
            if (!d)
                return false;
            b->data = d;
            b->cap = cap;
        }
    }
    memcpy(b->data + b->end, p, n);
    b->end += n;
    return true;
}

/* The final answer's header lines, kept in x->headers (1xx answers and
 * their lines are dropped when the next status line comes). */
static size_t header_cb(char *p, size_t size, size_t n, void *arg)
{
    CvXfer *x = arg;
    size_t len = size * n;
    pthread_mutex_lock(&x->mu);
    if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) {
        x->headers.start = x->headers.end = 0;
        const char *sp = memchr(p, ' ', len);
        x->status = sp ? strtol(sp + 1, NULL, 10) : 0;
    } else if ((len == 2 && p[0] == '\r') || (len == 1 && p[0] == '\n')) {
        if (x->status >= 200) {
            x->headers_done = true;
            if (!x->t_first_byte)
                x->t_first_byte = cv_now_ns();
            pthread_cond_broadcast(&x->cond);
        }
        pthread_mutex_unlock(&x->mu);
        return len;
    }
    bool ok = xbuf_append(&x->headers, p, len);
    pthread_mutex_unlock(&x->mu);
    return ok ? len : 0;
}

static size_t write_cb(char *p, size_t size, size_t n, void *arg)
{
    CvXfer *x = arg;
    size_t len = size * n;
    pthread_mutex_lock(&x->mu);
    size_t held = x->body.end - x->body.start;
    bool error_answer = x->status < 200 || x->status >= 300;
    if (error_answer && held + len > ERROR_BODY_MAX) { /* keep the head of an error body */
        pthread_mutex_unlock(&x->mu);
        return len;
    }
    if (x->stream && !error_answer && held > 0 &&
        (held + len > x->window ||
         atomic_load(&stat_bytes_in_flight) + (int64_t)len > atomic_load(&budget_bytes))) {
        x->paused = true; /* libcurl keeps these bytes and offers them again on resume */
        pthread_mutex_unlock(&x->mu);
        return CURL_WRITEFUNC_PAUSE;
    }
    if (!xbuf_append(&x->body, p, len)) {
        pthread_mutex_unlock(&x->mu);
        return 0;
    }
    int64_t now = cv_now_ns();
    if (!x->t_first_byte)
        x->t_first_byte = now;
    x->received += len;
    atomic_fetch_add(&stat_bytes, len);
    if (x->stream) {
        atomic_fetch_add(&stat_bytes_in_flight, (int64_t)len);
        /* Grow the window to twice what arrives during one first-byte
         * latency at the rate measured so far. */
        double secs = (double)(now - x->t_first_byte) / 1e9;
        if (secs > 0.01 && x->window < MAX_WINDOW) {
            double want = (double)x->received / secs * ((double)(x->t_first_byte - x->t_start) / 1e9) * 2;
            if (want > (double)MAX_WINDOW)
                want = (double)MAX_WINDOW;
            if (want > (double)x->window)
                x->window = (size_t)want;
        }
    }
    pthread_cond_broadcast(&x->cond);
    pthread_mutex_unlock(&x->mu);
    return len;
}

static bool has_header(const CvHttpHeaders *h, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; h && i < h->count; i++)
        if (strncasecmp(h->lines[i], name, n) == 0 && h->lines[i][n] == ':')
            return true;
    return false;
}

static bool append_lines(struct curl_slist **list, const CvHttpHeaders *h)
{
    for (size_t i = 0; h && i < h->count; i++) {
        struct curl_slist *l = curl_slist_append(*list, h->lines[i]);
        if (!l)
            return false;
        *list = l;
    }
    return true;
}

static void xfer_free(CvXfer *x)
{
    if (x->stream)
        atomic_fetch_sub(&stat_bytes_in_flight, (int64_t)(x->body.end - x->body.start));
    curl_slist_free_all(x->slist);
    free(x->body.data);
    free(x->headers.data);
    pthread_cond_destroy(&x->cond);
    pthread_mutex_destroy(&x->mu);
    free(x);
}

CvStatus cv_xfer_start(const CvHttpRequest *req, const CvHttpHeaders *extra, bool stream,
                       size_t window, long timeout_s, CvXfer **out)
{
    CvStatus s = CV_STATUS_OK;
    *out = NULL;
    pthread_once(&global_once, global_init);
    CvXfer *x = calloc(1, sizeof *x);
    if (!x)
        return cv_error_nomem();
    pthread_mutex_init(&x->mu, NULL);
    cv_cond_init(&x->cond);
    x->stream = stream;
    x->window = window < MIN_WINDOW ? MIN_WINDOW : window > MAX_WINDOW ? MAX_WINDOW : window;
    CURL *e = x->easy = curl_easy_init();
    struct curl_slist *list = NULL;
    bool ok = e && append_lines(&list, req->headers) && append_lines(&list, extra);
    if (ok && req->body && !has_header(req->headers, "Content-Type") && !has_header(extra, "Content-Type"))
        ok = (list = curl_slist_append(list, "Content-Type:")) != NULL; /* not curl's form type */
    if (ok)
        ok = (list = curl_slist_append(list, "Expect:")) != NULL; /* no 100-continue round trip */
    x->slist = list;
    if (!ok) {
        s = cv_error_nomem();
        goto done;
    }
    curl_easy_setopt(e, CURLOPT_URL, req->url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)x);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 256L << 10);
    /* A transfer that moves no byte for timeout_s is a failed attempt (a
     * paused one is not checked). */
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, timeout_s);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, timeout_s);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    const char *method = req->method ? req->method : "GET";
    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
        if (req->body || strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0) {
            curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_size);
            curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body ? (const char *)req->body : "");
        }
    }
    pthread_mutex_lock(&io.mu);
    s = ensure_started();
    if (!s) {
        x->gen = io.gen;
        x->cmd_add = true;
        enqueue(x);
    }
    pthread_mutex_unlock(&io.mu);
done:
    if (s) {
        if (x->easy)
            curl_easy_cleanup(x->easy);
        x->easy = NULL;
        xfer_free(x);
        return s;
    }
    *out = x;
    return CV_STATUS_OK;
}

void cv_xfer_finish(CvXfer *x)
{
    if (!x)
        return;
    pthread_mutex_lock(&io.mu);
    bool busy = x->gen == io.gen && (x->queued || !x->io_done);
    if (busy) {
        x->cmd_drop = true;
        enqueue(x);
    }
    pthread_mutex_unlock(&io.mu);
    if (busy) { /* the I/O thread answers within one turn of its loop: not cancellable */
        pthread_mutex_lock(&x->mu);
        while (!x->dropped)
            pthread_cond_wait(&x->cond, &x->mu);
        pthread_mutex_unlock(&x->mu);
    }
    xfer_free(x);
}

CvStatus cv_xfer_wait(CvXfer *x, bool (*pred)(CvXfer *x, void *arg), void *arg,
                      const char *display)
{
    if (pred(x, arg))
        return CV_STATUS_OK;
    if (x->gen != io.gen)
        return cv_error(CV_FAILED_PRECONDITION,
                        "%s: the transfer was started before fork() and cannot be used in the child",
                        display);
    for (;;) {
        pthread_mutex_unlock(&x->mu);
        cv_blocking_begin();
        void *outside = cv_wait_outside_begin();
        pthread_mutex_lock(&x->mu);
        bool met = pred(x, arg);
        if (!met) {
            struct timespec t;
            clock_gettime(CLOCK_MONOTONIC, &t);
            t.tv_nsec += (long)CV_WAIT_SLICE_MS * 1000000;
            t.tv_sec += t.tv_nsec / 1000000000;
            t.tv_nsec %= 1000000000;
            while (!(met = pred(x, arg)))
                if (pthread_cond_timedwait(&x->cond, &x->mu, &t) == ETIMEDOUT)
                    break;
            met = met || pred(x, arg);
        }
        pthread_mutex_unlock(&x->mu);
        cv_wait_outside_end(outside);
        cv_blocking_end();
        CvStatus s = met ? CV_STATUS_OK : gave_up(display);
        pthread_mutex_lock(&x->mu);
        if (met || s)
            return s;
    }
}

void cv_xfer_took(CvXfer *x, size_t n)
{
    atomic_fetch_sub(&stat_bytes_in_flight, (int64_t)n);
    size_t held = x->body.end - x->body.start;
    if (x->paused && !x->done && held <= x->window / 2 &&
        (held == 0 || atomic_load(&stat_bytes_in_flight) < atomic_load(&budget_bytes))) {
        x->paused = false;
        pthread_mutex_unlock(&x->mu); /* io.mu comes first */
        pthread_mutex_lock(&io.mu);
        if (!x->io_done) {
            x->cmd_resume = true;
            enqueue(x);
        }
        pthread_mutex_unlock(&io.mu);
        pthread_mutex_lock(&x->mu);
    }
}

/* ---- one request, with retries ------------------------------------------ */

static bool is_done(CvXfer *x, void *arg)
{
    (void)arg;
    return x->done;
}

void cv_http_response_free(CvHttpResponse *resp)
{
    free(resp->body);
    free(resp->headers);
    resp->body = resp->headers = NULL;
    resp->body_size = 0;
}

/* Append "; outcome" to the attempts' list (bounded). */
static void note_outcome(char *list, size_t cap, const char *fmt, ...) CV_PRINTF(3, 4);
static void note_outcome(char *list, size_t cap, const char *fmt, ...)
{
    size_t len = strlen(list);
    if (len + 8 >= cap)
        return;
    if (len)
        len += (size_t)snprintf(list + len, cap - len, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(list + len, cap - len, fmt, ap);
    va_end(ap);
}

/* Move x's answer into resp (x->mu held). */
static CvStatus take_answer(CvXfer *x, CvHttpResponse *resp)
{
    size_t blen = x->body.end - x->body.start, hlen = x->headers.end - x->headers.start;
    resp->body = malloc(blen + 1);
    resp->headers = malloc(hlen + 1);
    if (!resp->body || !resp->headers)
        return cv_error_nomem();
    if (blen)
        memcpy(resp->body, x->body.data + x->body.start, blen);
    resp->body[blen] = '\0';
    resp->body_size = blen;
    if (hlen)
        memcpy(resp->headers, x->headers.data + x->headers.start, hlen);
    resp->headers[hlen] = '\0';
    resp->status = x->status;
    return CV_STATUS_OK;
}

CvStatus cv_http_perform(const CvHttpRequest *req, CvHttpResponse *resp)
{
    CvStatus s = CV_STATUS_OK;
    CvHttpPolicy policy;
    cv_http_policy(&policy);
    memset(resp, 0, sizeof *resp);
    char outcomes[512] = "";
    CvHttpHeaders signed_headers = {0};
    CvXfer *x = NULL;
    int64_t retry_after = -1;
    char display[512];
    cv_http_display(req->url, display, sizeof display);
    for (int attempt = 1;; attempt++) {
        if (attempt > 1) {
            atomic_fetch_add(&cv_http_retries, 1);
            if ((s = cv_http_backoff(&policy, attempt - 1, retry_after, display)))
                goto done;
        }
        cv_http_headers_free(&signed_headers);
        if (req->auth && req->auth->sign && (s = req->auth->sign(req->auth->ctx, req, &signed_headers)))
            goto done;
        if ((s = cv_xfer_start(req, &signed_headers, false, 0, policy.timeout_s, &x)))
            goto done;
        pthread_mutex_lock(&x->mu);
        s = cv_xfer_wait(x, is_done, NULL, display);
        if (s) {
            pthread_mutex_unlock(&x->mu);
            goto done;
        }
        resp->attempts = attempt;
        int result = x->result;
        long status = x->status;
        bool retry;
        if (result == CURLE_OK) {
            retry = cv_http_status_retryable(status);
            if (retry) {
                note_outcome(outcomes, sizeof outcomes, "%ld %s", status, cv_http_reason(status));
                retry_after = (status == 429 || status == 503)
                                  ? cv_http_retry_after_ms(x->headers.data + x->headers.start,
                                                           x->headers.end - x->headers.start)
                                  : -1;
            }
        } else {
            retry = cv_http_transport_retryable(result);
            note_outcome(outcomes, sizeof outcomes, "%s", cv_http_transport_outcome(result));
            retry_after = -1;
        }
        if (!retry && result != CURLE_OK) {
            CvCode code = result == CURLE_URL_MALFORMAT || result == CURLE_UNSUPPORTED_PROTOCOL
                              ? CV_INVALID_ARGUMENT
                          : result == CURLE_OUT_OF_MEMORY || result == CURLE_WRITE_ERROR
                              ? CV_RESOURCE_EXHAUSTED
                              : CV_UNAVAILABLE;
            s = cv_error(code, "%s: %s", display, cv_http_transport_outcome(result));
            pthread_mutex_unlock(&x->mu);
            goto done;
        }
        if (!retry || attempt >= policy.attempts) {
            s = take_answer(x, resp);
            pthread_mutex_unlock(&x->mu);
            if (!s && retry)
                s = cv_error(CV_UNAVAILABLE, "%s: the request failed after %d attempts: %s", display,
                             attempt, outcomes);
            goto done;
        }
        pthread_mutex_unlock(&x->mu);
        cv_xfer_finish(x);
        x = NULL;
    }
done:
    cv_xfer_finish(x);
    cv_http_headers_free(&signed_headers);
    if (!resp->body && !s) /* never NULL for the caller */
        s = cv_error_nomem();
    return s;
}

/* ---- errors ------------------------------------------------------------- */

/* The text between `open` and `close` in body, cleaned to printable ASCII
 * and cut at cap; false when absent. */
static bool between(const char *body, const char *open, const char *close, char *dst, size_t cap)
{
    const char *a = strstr(body, open);
    if (!a)
        return false;
    a += strlen(open);
    const char *b = strstr(a, close);
    if (!b)
        return false;
    size_t k = 0;
    for (; a < b && k + 1 < cap; a++)
        dst[k++] = (*a >= 32 && *a < 127) ? *a : ' ';
    dst[k] = '\0';
    return k > 0;
}

/* A JSON string member's value ("reason": "forbidden"), as between(). */
static bool json_member(const char *body, const char *name, char *dst, size_t cap)
{
    char key[32];
    snprintf(key, sizeof key, "\"%s\"", name);
    const char *a = strstr(body, key);
    if (!a)
        return false;
    a += strlen(key);
    while (*a == ' ' || *a == ':' || *a == '\t' || *a == '\n' || *a == '\r')
        a++;
    if (*a != '"')
        return false;
    return between(a, "\"", "\"", dst, cap);
}

CvStatus cv_http_error(const CvHttpResponse *resp, const char *display, const CvHttpAuth *auth)
{
    long st = resp->status;
    CvCode code = st == 404                ? CV_NOT_FOUND
                  : st == 401 || st == 403 ? CV_PERMISSION_DENIED
                  : st == 409 || st == 412 ? CV_FAILED_PRECONDITION
                  : st == 416              ? CV_OUT_OF_RANGE
                  : st == 400              ? CV_INVALID_ARGUMENT
                  : cv_http_status_retryable(st) ? CV_UNAVAILABLE
                                                 : CV_UNKNOWN;
    char store_code[96] = "", store_msg[200] = "";
    const char *body = resp->body ? resp->body : "";
    if (!between(body, "<Code>", "</Code>", store_code, sizeof store_code))
        json_member(body, "reason", store_code, sizeof store_code);
    if (!between(body, "<Message>", "</Message>", store_msg, sizeof store_msg))
        json_member(body, "message", store_msg, sizeof store_msg);
    char detail[512] = "";
    size_t n = 0;
    if (*store_code)
        n += (size_t)snprintf(detail + n, sizeof detail - n, "%s", store_code);
    if (*store_msg && n < sizeof detail)
        n += (size_t)snprintf(detail + n, sizeof detail - n, "%s%s", n ? ": " : "", store_msg);
    if (code == CV_PERMISSION_DENIED && n < sizeof detail) {
        const char *src = auth && auth->source ? auth->source : "nowhere (anonymous)";
        snprintf(detail + n, sizeof detail - n, "%scredentials from %s", n ? "; " : "", src);
    }
    const char *reason = cv_http_reason(st);
    return cv_error(code, "%s: %ld%s%s%s%s%s", display, st, *reason ? " " : "", reason,
                    *detail ? " (" : "", detail, *detail ? ")" : "");
}
