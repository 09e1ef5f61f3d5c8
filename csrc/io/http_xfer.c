/* The process's "cv-io" thread and its transfers (see http_xfer.h), over
 * libcurl's multi interface.
 *
 * Locks: io.mu (the command queue, the multi's handle set) is taken before
 * a transfer's x->mu, never after: the I/O thread resumes a paused transfer
 * under io.mu, and libcurl may call the write callback (which takes x->mu)
 * from inside curl_easy_pause. Callers never hold x->mu while taking io.mu. */
#include "io/http_xfer.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
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
#include "io/http_retry.h"

#define MIN_WINDOW ((size_t)1 << 20)
#define MAX_WINDOW ((size_t)64 << 20)
#define ERROR_BODY_MAX ((size_t)64 << 10) /* what is kept of an error answer's body */

/* ---- counters ----------------------------------------------------------- */

_Atomic uint64_t cv_io_requests, cv_io_retries, cv_io_bytes;
_Atomic int64_t cv_io_in_flight, cv_io_bytes_in_flight;
_Atomic int64_t cv_io_budget_bytes = (int64_t)256 << 20, cv_io_budget_requests = 64;
/* Moving averages, under avg_mu (updated once per transfer). */
static pthread_mutex_t avg_mu = PTHREAD_MUTEX_INITIALIZER;
static double avg_first_byte_ms, avg_mb_per_s;

void cv_xfer_averages(double *first_byte_ms, double *mb_per_s)
{
    pthread_mutex_lock(&avg_mu);
    *first_byte_ms = avg_first_byte_ms;
    *mb_per_s = avg_mb_per_s;
    pthread_mutex_unlock(&avg_mu);
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
    CvXfer **running; /* in the multi */
    size_t nrunning, cap_running;
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
    io.npending = io.nrunning = 0;
    io.active = 0;
    atomic_store(&cv_io_in_flight, 0);
    atomic_store(&cv_io_bytes_in_flight, 0);
}

/* The I/O trace, off unless CONVEYOR_IO_TRACE names a file when the first
 * transfer starts: one line per finished transfer, "queued started
 * first_byte done bytes pauses" (CLOCK_MONOTONIC ns, 0: never), for
 * drawing an epoch's timeline (benchmarks/remote_timeline.py). A debugging
 * aid, not a statistic: one write(2) per transfer, on the I/O thread. */
static int trace_fd = -1;

static void trace_xfer(const CvXfer *x, int64_t done)
{
    char line[160];
    int n = snprintf(line, sizeof line, "%lld %lld %lld %lld %llu %d\n", (long long)x->t_queued,
                     (long long)x->t_start, (long long)x->t_first_byte, (long long)done,
                     (unsigned long long)x->received, x->pauses);
    if (n > 0 && write(trace_fd, line, (size_t)n) < 0)
        trace_fd = -1; /* the file went away: stop tracing */
}

static void global_init(void)
{
    const char *trace = getenv("CONVEYOR_IO_TRACE");
    if (trace && *trace)
        trace_fd = open(trace, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
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

/* Remove x from a list of transfers (io.mu held). */
static void list_remove(CvXfer **list, size_t *n, CvXfer *x)
{
    for (size_t i = 0; i < *n; i++)
        if (list[i] == x) {
            memmove(list + i, list + i + 1, (*n - i - 1) * sizeof *list);
            (*n)--;
            return;
        }
}

/* Append x to a list (io.mu held); false when there is no memory for it. */
static bool list_add(CvXfer ***list, size_t *n, size_t *cap, CvXfer *x)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        CvXfer **p = realloc(*list, c * sizeof *p);
        if (!p)
            return false;
        *list = p;
        *cap = c;
    }
    (*list)[(*n)++] = x;
    return true;
}

/* io.mu held. The transfer leaves the multi (or the pending list). */
static void detach(CvXfer *x)
{
    if (x->in_multi) {
        curl_multi_remove_handle(io.multi, x->easy);
        list_remove(io.running, &io.nrunning, x);
        x->in_multi = false;
        io.active--;
        atomic_fetch_sub(&cv_io_in_flight, 1);
    }
    if (x->pending) {
        list_remove(io.pending, &io.npending, x);
        x->pending = false;
    }
    if (x->easy) {
        curl_easy_cleanup(x->easy);
        x->easy = NULL;
    }
}

static void admit(CvXfer *x)
{
    if (!list_add(&io.running, &io.nrunning, &io.cap_running, x)) {
        pthread_mutex_lock(&x->mu);
        x->done = true;
        x->result = CURLE_OUT_OF_MEMORY;
        pthread_cond_broadcast(&x->cond);
        pthread_mutex_unlock(&x->mu);
        x->io_done = true;
        return;
    }
    x->in_multi = true;
    io.active++;
    atomic_fetch_add(&cv_io_in_flight, 1);
    pthread_mutex_lock(&x->mu);
    x->t_start = cv_now_ns();
    pthread_mutex_unlock(&x->mu);
    if (curl_multi_add_handle(io.multi, x->easy) != CURLM_OK) {
        list_remove(io.running, &io.nrunning, x);
        x->in_multi = false;
        io.active--;
        atomic_fetch_sub(&cv_io_in_flight, 1);
        pthread_mutex_lock(&x->mu);
        x->done = true;
        x->result = CURLE_OUT_OF_MEMORY;
        pthread_cond_broadcast(&x->cond);
        pthread_mutex_unlock(&x->mu);
        x->io_done = true;
    }
}

/* io.mu held: make room for a waiting transfer by ending a paused stream's
 * (its reader is elsewhere; it resumes from the byte it reached with a new
 * request when it comes back, keeping what it had received). Without this,
 * readers that take turns over more streams than the request budget would
 * wait on each other for ever. False when no transfer is paused. */
static bool evict_paused(void)
{
    for (size_t i = 0; i < io.nrunning; i++) {
        CvXfer *x = io.running[i];
        pthread_mutex_lock(&x->mu);
        bool paused = x->paused;
        pthread_mutex_unlock(&x->mu);
        if (!paused)
            continue;
        detach(x);
        x->io_done = true;
        pthread_mutex_lock(&x->mu);
        x->done = true;
        x->result = CV_XFER_EVICTED;
        pthread_cond_broadcast(&x->cond);
        pthread_mutex_unlock(&x->mu);
        return true;
    }
    return false;
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
                if (list_add(&io.pending, &io.npending, &io.cap_pending, x))
                    x->pending = true;
                else
                    admit(x); /* no room to queue it: over budget rather than lost */
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
    while (i < io.npending && (io.active < atomic_load(&cv_io_budget_requests) || evict_paused())) {
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
            atomic_fetch_add(&cv_io_requests, 1);
        pthread_mutex_lock(&x->mu);
        x->done = true;
        x->result = result;
        if (status > 0)
            x->status = status;
        int64_t now = cv_now_ns();
        record_averages(x, now);
        if (trace_fd >= 0)
            trace_xfer(x, now);
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

/* Body buffers of finished streams, kept for the next ones: a stream's
 * buffer grows to its window (1 MiB and up), and a fresh one costs a page
 * fault per 4 KiB on the I/O thread and an munmap when freed (a third of the
 * CPU of reading 1 MiB objects, issue 27). At most SPARE_BODIES (as many as
 * an interleave keeps in flight: its cycle and its futures) and SPARE_BYTES
 * in all, each at least SPARE_MIN bytes; any thread (spare_mu). */
#define SPARE_BODIES 64
#define SPARE_BYTES ((size_t)64 << 20)
#define SPARE_MIN ((size_t)256 << 10)
static pthread_mutex_t spare_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char *data;
    size_t cap;
} spare[SPARE_BODIES];
static int nspare;
static size_t spare_bytes;

static void spare_take(CvXBuf *b)
{
    pthread_mutex_lock(&spare_mu);
    if (nspare > 0) {
        nspare--;
        b->data = spare[nspare].data;
        b->cap = spare[nspare].cap;
        spare_bytes -= b->cap;
    }
    pthread_mutex_unlock(&spare_mu);
}

static void spare_give(CvXBuf *b)
{
    if (b->cap >= SPARE_MIN) {
        pthread_mutex_lock(&spare_mu);
        if (nspare < SPARE_BODIES && spare_bytes + b->cap <= SPARE_BYTES) {
            spare[nspare].data = b->data;
            spare[nspare].cap = b->cap;
            spare_bytes += b->cap;
            nspare++;
            b->data = NULL;
        }
        pthread_mutex_unlock(&spare_mu);
    }
    free(b->data);
    b->data = NULL;
}

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

/* A stream whose body fits its share of the I/O budget (bytes over
 * requests: 4 MiB by default) is received whole, without pausing: an
 * object opened ahead of its reader (an interleave's future) is complete
 * when the reader comes to it, rather than a window short of its end and
 * waiting a resume. Decided here, when the answer's headers are in, not by
 * the reader, which may come to the stream only after the body has arrived
 * (x->mu held). Larger bodies keep the window grown from the measured rate. */
static void whole_body_window(CvXfer *x)
{
    int64_t requests = atomic_load(&cv_io_budget_requests);
    int64_t share = atomic_load(&cv_io_budget_bytes) / (requests > 0 ? requests : 1);
    if (x->stream && x->status >= 200 && x->status < 300 && x->content_length > x->window &&
        x->content_length <= (uint64_t)share)
        x->window = (size_t)x->content_length;
}

/* The final answer's header lines, kept in x->headers (1xx answers and
 * their lines are dropped when the next status line comes). */
static size_t header_cb(char *p, size_t size, size_t n, void *arg)
{
    CvXfer *x = arg;
    size_t len = size * n;
    char value[32];
    pthread_mutex_lock(&x->mu);
    if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) {
        x->headers.start = x->headers.end = 0;
        x->content_length = 0;
        const char *sp = memchr(p, ' ', len);
        x->status = sp ? strtol(sp + 1, NULL, 10) : 0;
    } else if (cv_http_header_in(p, len, "Content-Length", value, sizeof value)) {
        x->content_length = strtoull(value, NULL, 10); /* as http_stream.c reads it */
    } else if ((len == 2 && p[0] == '\r') || (len == 1 && p[0] == '\n')) {
        if (x->status >= 200) {
            x->headers_done = true;
            whole_body_window(x);
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
         atomic_load(&cv_io_bytes_in_flight) + (int64_t)len > atomic_load(&cv_io_budget_bytes))) {
        x->pauses++;
        x->paused = true; /* libcurl keeps these bytes and offers them again on resume */
        pthread_mutex_unlock(&x->mu);
        return CURL_WRITEFUNC_PAUSE;
    }
    if (x->stream && !x->body.data)
        spare_take(&x->body); /* a body's buffer only: header lines are freed, not kept */
    if (!xbuf_append(&x->body, p, len)) {
        pthread_mutex_unlock(&x->mu);
        return 0;
    }
    int64_t now = cv_now_ns();
    if (!x->t_first_byte)
        x->t_first_byte = now;
    x->received += len;
    atomic_fetch_add(&cv_io_bytes, len);
    if (x->stream) {
        atomic_fetch_add(&cv_io_bytes_in_flight, (int64_t)len);
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

static bool has_header(char *const *lines, size_t n, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < n; i++)
        if (strncasecmp(lines[i], name, len) == 0 && lines[i][len] == ':')
            return true;
    return false;
}

static bool append_lines(struct curl_slist **list, char *const *lines, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct curl_slist *l = curl_slist_append(*list, lines[i]);
        if (!l)
            return false;
        *list = l;
    }
    return true;
}

static void xfer_free(CvXfer *x)
{
    if (x->stream)
        atomic_fetch_sub(&cv_io_bytes_in_flight, (int64_t)(x->body.end - x->body.start));
    curl_slist_free_all(x->slist);
    if (x->stream)
        spare_give(&x->body);
    else
        free(x->body.data);
    free(x->headers.data);
    pthread_cond_destroy(&x->cond);
    pthread_mutex_destroy(&x->mu);
    free(x);
}

CvStatus cv_xfer_start(const CvXferRequest *req, bool stream, size_t window, long timeout_s,
                       CvXfer **out)
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
    x->t_queued = cv_now_ns();
    x->window = window < MIN_WINDOW ? MIN_WINDOW : window > MAX_WINDOW ? MAX_WINDOW : window;
    CURL *e = x->easy = curl_easy_init();
    struct curl_slist *list = NULL;
    bool ok = e && append_lines(&list, req->lines, req->nlines) &&
              append_lines(&list, req->signed_lines, req->nsigned);
    if (ok && req->body && !has_header(req->lines, req->nlines, "Content-Type") &&
        !has_header(req->signed_lines, req->nsigned, "Content-Type"))
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
    /* libcurl allocates a transfer's receive buffer for each transfer: under
     * malloc's mmap threshold (128 KiB) it is recycled from the heap, where
     * 256 KiB was a fresh mapping per GET, faulted in by recv() page by page
     * (issue 27). */
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 64L << 10);
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
        CvStatus s = met ? CV_STATUS_OK : cv_http_gave_up(display);
        pthread_mutex_lock(&x->mu);
        if (met || s)
            return s;
    }
}

void cv_xfer_took(CvXfer *x, size_t n)
{
    atomic_fetch_sub(&cv_io_bytes_in_flight, (int64_t)n);
    size_t held = x->body.end - x->body.start;
    if (x->paused && !x->done && held <= x->window / 2 &&
        (held == 0 || atomic_load(&cv_io_bytes_in_flight) < atomic_load(&cv_io_budget_bytes))) {
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
