/* Streams (see http.h): a ranged GET kept ahead of its reader, resumed from
 * the byte reached when its body is cut off.
 *
 * Each attempt is a CvXfer in stream mode: the I/O thread appends body bytes
 * to its buffer and pauses the transfer when the buffer holds the window (or
 * the process's I/O budget is spent); the reader takes bytes from it and
 * resumes it. Everything else (checking the answer, signing, backoff, a new
 * attempt) happens on the reader's thread, in cv_http_stream_read.
 *
 * Ownership: the stream owns copies of the URL, display and headers; `auth`
 * is borrowed (it outlives the stream). One thread at a time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/http.h"
#include "io/http_retry.h"
#include "io/http_xfer.h"

struct CvHttpStream {
    char *url, *display;
    CvHttpHeaders headers;
    const CvHttpAuth *auth;
    uint64_t offset, end; /* the next byte for the reader; the range's end */
    uint64_t expect_end;  /* where this attempt's answer says its body ends (0: unknown) */
    uint64_t skip;        /* bytes before `offset` in this answer (a 200 to a ranged GET) */
    CvXfer *x;            /* this attempt, NULL between attempts */
    bool checked;         /* this attempt's answer was checked */
    bool eof;
    bool have_version;
    char etag[128], generation[32]; /* of the first answer */
    bool answered;        /* the first (non-retried) answer's headers are in */
    long first_status;    /* its status */
    char *first_headers;  /* owned: its header lines */
    size_t first_len;
    int failures;         /* attempts in a row that made no progress */
    int64_t retry_after;  /* ms, from the last failed answer; -1: none */
    char outcomes[512];   /* the failed attempts in a row, "; "-separated */
    size_t window;        /* carried over from attempt to attempt */
    CvHttpPolicy policy;
    CvStatus error;       /* sticky: every later read returns a copy */
};

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static CvStatus start_attempt(CvHttpStream *s);

CvStatus cv_http_stream_open(const char *url, const char *display, const CvHttpHeaders *headers,
                             const CvHttpAuth *auth, uint64_t offset, uint64_t end,
                             CvHttpStream **out)
{
    CvStatus s = CV_STATUS_OK;
    *out = NULL;
    CvHttpStream *st = calloc(1, sizeof *st);
    if (!st)
        return cv_error_nomem();
    st->url = dup_str(url);
    st->display = dup_str(display ? display : url);
    if (!st->url || !st->display) {
        s = cv_error_nomem();
        goto done;
    }
    for (size_t i = 0; headers && i < headers->count; i++)
        if ((s = cv_http_headers_add(&st->headers, "%s", headers->lines[i])))
            goto done;
    st->auth = auth;
    st->offset = offset;
    st->end = end;
    st->retry_after = -1;
    st->window = (size_t)1 << 20;
    cv_http_policy(&st->policy);
    if (offset >= end) {
        st->eof = true;
        goto done;
    }
    s = start_attempt(st); /* the first attempt starts now, ahead of the first read */
done:
    if (s) {
        cv_http_stream_close(st);
        return s;
    }
    *out = st;
    return CV_STATUS_OK;
}

uint64_t cv_http_stream_offset(const CvHttpStream *s)
{
    return s->offset;
}

void cv_http_stream_close(CvHttpStream *s)
{
    if (!s)
        return;
    cv_xfer_finish(s->x);
    cv_http_headers_free(&s->headers);
    cv_status_free(s->error);
    free(s->first_headers);
    free(s->url);
    free(s->display);
    free(s);
}

/* Drop this attempt (its bytes not yet taken go with it). */
static void end_attempt(CvHttpStream *s)
{
    if (!s->x)
        return;
    pthread_mutex_lock(&s->x->mu);
    if (s->x->window > s->window)
        s->window = s->x->window;
    pthread_mutex_unlock(&s->x->mu);
    cv_xfer_finish(s->x);
    s->x = NULL;
}

static void note_failure(CvHttpStream *s, const char *what)
{
    s->failures++;
    size_t len = strlen(s->outcomes);
    if (len + 8 < sizeof s->outcomes)
        snprintf(s->outcomes + len, sizeof s->outcomes - len, "%s%s", len ? "; " : "", what);
}

/* A new attempt from s->offset, after the backoff its failures call for. */
static CvStatus start_attempt(CvHttpStream *s)
{
    CvStatus st = CV_STATUS_OK;
    if (s->failures >= s->policy.attempts)
        return cv_error(CV_UNAVAILABLE, "%s: the request failed after %d attempts: %s", s->display,
                        s->failures, s->outcomes);
    if (s->failures) {
        atomic_fetch_add(&cv_io_retries, 1);
        if ((st = cv_http_backoff(&s->policy, s->failures, s->retry_after, s->display)))
            return st;
    }
    CvHttpHeaders signed_headers = {0};
    CvHttpHeaders *h = &s->headers;
    if (s->end == UINT64_MAX)
        st = cv_http_headers_add(h, "Range: bytes=%llu-", (unsigned long long)s->offset);
    else
        st = cv_http_headers_add(h, "Range: bytes=%llu-%llu", (unsigned long long)s->offset,
                                 (unsigned long long)s->end - 1);
    if (st)
        return st;
    CvHttpRequest req = {.method = "GET", .url = s->url, .headers = h, .auth = s->auth};
    if (s->auth && s->auth->sign)
        st = s->auth->sign(s->auth->ctx, &req, &signed_headers);
    if (!st)
        st = cv_xfer_start(&(CvXferRequest){"GET", s->url, h->lines, h->count, signed_headers.lines,
                                            signed_headers.count, NULL, 0},
                           true, s->window, s->policy.timeout_s, &s->x);
    cv_http_headers_free(&signed_headers);
    free(h->lines[--h->count]);
    s->checked = false;
    s->skip = 0;
    s->expect_end = 0;
    return st;
}

static bool has_news(CvXfer *x, void *arg)
{
    const CvHttpStream *s = arg;
    return x->body.end > x->body.start || x->done || (x->headers_done && !s->checked);
}

static bool is_done(CvXfer *x, void *arg)
{
    (void)arg;
    return x->done;
}

/* The error for a refused answer (x->mu held, the transfer done). */
static CvStatus refused(CvHttpStream *s, CvXfer *x)
{
    CvHttpResponse resp = {.status = x->status};
    size_t blen = x->body.end - x->body.start, hlen = x->headers.end - x->headers.start;
    resp.body = malloc(blen + 1);
    resp.headers = malloc(hlen + 1);
    CvStatus st;
    if (!resp.body || !resp.headers) {
        st = cv_error_nomem();
    } else {
        if (blen)
            memcpy(resp.body, x->body.data + x->body.start, blen);
        if (hlen)
            memcpy(resp.headers, x->headers.data + x->headers.start, hlen);
        resp.body[blen] = resp.headers[hlen] = '\0';
        resp.body_size = blen;
        st = cv_http_error(&resp, s->display, s->auth);
    }
    cv_http_response_free(&resp);
    return st;
}

typedef enum { ANSWER_OK, ANSWER_RETRY, ANSWER_EOF, ANSWER_FAIL } Answer;

/* Check this attempt's answer once its headers are in (x->mu held; may wait
 * for the body of an error answer). */
static Answer check_answer(CvHttpStream *s, CvXfer *x, CvStatus *err)
{
    s->checked = true;
    const char *lines = x->headers.data ? x->headers.data + x->headers.start : "";
    size_t len = x->headers.end - x->headers.start;
    long status = x->status;
    if (!s->answered && !cv_http_status_retryable(status)) {
        /* Kept for cv_http_stream_answer: a file opened without waiting
         * takes its size and version from here. */
        if (!(s->first_headers = malloc(len + 1))) {
            *err = cv_error_nomem();
            return ANSWER_FAIL;
        }
        if (len)
            memcpy(s->first_headers, lines, len);
        s->first_headers[len] = '\0';
        s->first_len = len;
        s->first_status = status;
        s->answered = true;
        if (status == 416 && s->end == UINT64_MAX)
            return ANSWER_EOF; /* at or past the end ("bytes=0-" of an empty object) */
    }
    if (status != 200 && status != 206) {
        if (cv_http_status_retryable(status)) {
            char what[64];
            snprintf(what, sizeof what, "%ld %s", status, cv_http_reason(status));
            s->retry_after = (status == 429 || status == 503) ? cv_http_retry_after_ms(lines, len) : -1;
            note_failure(s, what);
            return ANSWER_RETRY;
        }
        if (status == 416 && s->have_version && s->end == UINT64_MAX)
            return ANSWER_EOF; /* resumed exactly at the end */
        if ((status == 404 || status == 412) && s->have_version) {
            /* A resumed read of a pinned version (GCS ?generation=, S3
             * If-Match) finds it gone: the object was replaced or deleted. */
            *err = cv_error(CV_DATA_LOSS, "%s: the object changed while being read (%ld %s "
                            "when the read resumed at byte %llu)", s->display, status,
                            cv_http_reason(status), (unsigned long long)s->offset);
            return ANSWER_FAIL;
        }
        if ((*err = cv_xfer_wait(x, is_done, NULL, s->display)))
            return ANSWER_FAIL;
        *err = refused(s, x);
        return ANSWER_FAIL;
    }
    char etag[128] = "", generation[32] = "";
    cv_http_header_in(lines, len, "ETag", etag, sizeof etag);
    cv_http_header_in(lines, len, "x-goog-generation", generation, sizeof generation);
    if (!s->have_version) {
        s->have_version = true;
        memcpy(s->etag, etag, sizeof etag);
        memcpy(s->generation, generation, sizeof generation);
    } else if (strcmp(etag, s->etag) != 0 || strcmp(generation, s->generation) != 0) {
        *err = cv_error(CV_DATA_LOSS, "%s: the object changed while being read (its %s differs "
                        "when the read resumed at byte %llu)", s->display,
                        strcmp(generation, s->generation) ? "generation" : "ETag",
                        (unsigned long long)s->offset);
        return ANSWER_FAIL;
    }
    char v[128];
    if (status == 206) {
        unsigned long long a, b, total;
        bool have_range = cv_http_header_in(lines, len, "Content-Range", v, sizeof v);
        if (have_range && s->end == UINT64_MAX &&
            sscanf(v, "bytes %llu-%llu/%llu", &a, &b, &total) == 3 && a == s->offset && b < a &&
            total <= s->offset)
            return ANSWER_EOF; /* past the end, said as an empty 206 (gcp-storage-emulator) */
        if (!have_range ||
            sscanf(v, "bytes %llu-%llu", &a, &b) != 2 || a > s->offset || b < a) {
            *err = cv_error(CV_DATA_LOSS, "%s: a partial answer without a usable Content-Range "
                            "(asked for bytes from %llu)", s->display, (unsigned long long)s->offset);
            return ANSWER_FAIL;
        }
        s->skip = s->offset - a;
        s->expect_end = b + 1;
    } else {
        s->skip = s->offset; /* the server ignored the range: the whole object */
        if (cv_http_header_in(lines, len, "Content-Length", v, sizeof v))
            s->expect_end = strtoull(v, NULL, 10);
    }
    return ANSWER_OK;
}

/* Reads, and with `until_answer` also waits for the first answer. */
static CvStatus pump(CvHttpStream *s, void *dst, size_t n, size_t *got, bool until_answer)
{
    CvStatus st = CV_STATUS_OK;
    size_t done = 0;
    *got = 0;
    if (s->error)
        return cv_status_copy(s->error);
    while ((done < n || (until_answer && !s->answered)) && !s->eof) {
        if (s->end != UINT64_MAX && s->offset >= s->end) {
            s->eof = true;
            break;
        }
        if (!s->x && (st = start_attempt(s)))
            goto fail;
        CvXfer *x = s->x;
        pthread_mutex_lock(&x->mu);
        if ((st = cv_xfer_wait(x, has_news, s, s->display))) {
            pthread_mutex_unlock(&x->mu);
            goto fail;
        }
        Answer a = ANSWER_OK;
        if (x->headers_done && !s->checked)
            a = check_answer(s, x, &st);
        if (a == ANSWER_OK) {
            size_t held = x->body.end - x->body.start;
            size_t drop = s->skip < held ? (size_t)s->skip : held;
            x->body.start += drop;
            s->skip -= drop;
            size_t k = held - drop < n - done ? held - drop : n - done;
            if (s->end != UINT64_MAX && k > s->end - s->offset)
                k = (size_t)(s->end - s->offset);
            if (k)
                memcpy((char *)dst + done, x->body.data + x->body.start, k);
            x->body.start += k;
            done += k;
            s->offset += k;
            if (k) {
                s->failures = 0;
                s->outcomes[0] = '\0';
            }
            if (drop + k)
                cv_xfer_took(x, drop + k);
            if (!k && !drop && x->done && x->body.end == x->body.start) {
                if (x->result == 0 && (!s->expect_end || s->offset >= s->expect_end)) {
                    a = ANSWER_EOF;
                } else if (x->result == CV_XFER_EVICTED) {
                    a = ANSWER_RETRY; /* not a failure: no backoff */
                } else if (x->result == 0 || cv_http_transport_retryable(x->result)) {
                    note_failure(s, x->result ? cv_http_transport_outcome(x->result) : "body cut short");
                    s->retry_after = -1;
                    a = ANSWER_RETRY;
                } else {
                    st = cv_error(CV_UNAVAILABLE, "%s: %s", s->display,
                                  cv_http_transport_outcome(x->result));
                    a = ANSWER_FAIL;
                }
            }
        }
        pthread_mutex_unlock(&x->mu);
        if (a == ANSWER_RETRY || a == ANSWER_EOF || a == ANSWER_FAIL)
            end_attempt(s);
        if (a == ANSWER_EOF)
            s->eof = true;
        if (a == ANSWER_FAIL)
            goto fail;
    }
    *got = done;
    return CV_STATUS_OK;
fail:
    *got = done;
    /* The stream is spent, but for a read given up before it took a byte:
     * that one may be tried again. */
    if (done || (st->code != CV_CANCELLED && st->code != CV_INTERRUPTED))
        s->error = cv_status_copy(st);
    return st;
}

CvStatus cv_http_stream_read(CvHttpStream *s, void *dst, size_t n, size_t *got)
{
    return pump(s, dst, n, got, false);
}

CvStatus cv_http_stream_answer(CvHttpStream *s, long *status)
{
    size_t got;
    CvStatus st = pump(s, NULL, 0, &got, true);
    *status = s->answered ? s->first_status : 0;
    return st;
}

bool cv_http_stream_header(const CvHttpStream *s, const char *name, char *dst, size_t cap)
{
    return s->answered && cv_http_header_in(s->first_headers, s->first_len, name, dst, cap);
}

uint64_t cv_http_stream_total(const CvHttpStream *s)
{
    char v[128];
    if (!s->answered)
        return UINT64_MAX;
    if (s->first_status == 206 || s->first_status == 416) {
        const char *slash;
        if (cv_http_stream_header(s, "Content-Range", v, sizeof v) && (slash = strchr(v, '/')) &&
            slash[1] >= '0' && slash[1] <= '9')
            return strtoull(slash + 1, NULL, 10);
        return s->first_status == 416 ? 0 : UINT64_MAX;
    }
    if (cv_http_stream_header(s, "Content-Length", v, sizeof v))
        return strtoull(v, NULL, 10); /* a 200: the whole object */
    return UINT64_MAX;
}
