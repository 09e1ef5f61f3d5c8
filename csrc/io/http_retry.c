/* The HTTP client's retry policy and small helpers (see http_retry.h).
 * No state but a per-thread jitter generator: any thread may call these. */
#include "io/http_retry.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/blocking.h"
#include "core/thread.h"

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
CvStatus cv_http_gave_up(const char *display)
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
        CvStatus s = cv_http_gave_up(display);
        if (s)
            return s;
    }
}

