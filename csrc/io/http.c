/* Requests (cv_http_perform, with retries), header lists and the status
 * for a refused answer (see http.h). Transfers run on the I/O thread of
 * http_xfer.c; streams are in http_stream.c. */
#include "io/http.h"

#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/report.h"

#include "io/http_retry.h"
#include "io/http_xfer.h"

void cv_io_stats(CvIoStats *out)
{
    out->requests = atomic_load(&cv_io_requests);
    out->retries = atomic_load(&cv_io_retries);
    out->bytes_received = atomic_load(&cv_io_bytes);
    out->requests_in_flight = atomic_load(&cv_io_in_flight);
    out->bytes_in_flight = atomic_load(&cv_io_bytes_in_flight);
    out->budget_bytes = atomic_load(&cv_io_budget_bytes);
    out->budget_requests = atomic_load(&cv_io_budget_requests);
    cv_xfer_averages(&out->first_byte_ms, &out->mb_per_s);
}

#define IO_FIELD(name, kind) {#name, kind, offsetof(CvIoStats, name)}
static const CvField io_fields[] = {
    IO_FIELD(requests, CV_FIELD_U64),          IO_FIELD(retries, CV_FIELD_U64),
    IO_FIELD(bytes_received, CV_FIELD_U64),    IO_FIELD(requests_in_flight, CV_FIELD_I64),
    IO_FIELD(bytes_in_flight, CV_FIELD_I64),   IO_FIELD(budget_bytes, CV_FIELD_I64),
    IO_FIELD(budget_requests, CV_FIELD_I64),   IO_FIELD(first_byte_ms, CV_FIELD_DOUBLE),
    IO_FIELD(mb_per_s, CV_FIELD_DOUBLE),       {NULL, CV_FIELD_INT, 0},
};

CvStatus cv_io_report(CvReport *r)
{
    CvIoStats stats;
    cv_io_stats(&stats);
    cv_report_fields(r, &stats, io_fields);
    return r->failed ? cv_error_nomem() : CV_STATUS_OK;
}

void cv_io_set_budget(int64_t bytes, int64_t requests)
{
    if (bytes > 0)
        atomic_store(&cv_io_budget_bytes, bytes);
    if (requests > 0)
        atomic_store(&cv_io_budget_requests, requests);
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

bool cv_http_response_header(const CvHttpResponse *resp, const char *name, char *dst, size_t cap)
{
    return resp->headers && cv_http_header_in(resp->headers, strlen(resp->headers), name, dst, cap);
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
            atomic_fetch_add(&cv_io_retries, 1);
            if ((s = cv_http_backoff(&policy, attempt - 1, retry_after, display)))
                goto done;
        }
        cv_http_headers_free(&signed_headers);
        if (req->auth && req->auth->sign && (s = req->auth->sign(req->auth->ctx, req, &signed_headers)))
            goto done;
        CvXferRequest xr = {req->method, req->url, req->headers ? req->headers->lines : NULL,
                            req->headers ? req->headers->count : 0, signed_headers.lines,
                            signed_headers.count, req->body, req->body_size};
        if ((s = cv_xfer_start(&xr, false, 0, policy.timeout_s, &x)))
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
