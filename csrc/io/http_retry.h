/* The HTTP client's retry policy and helpers, below io/http.c,
 * io/http_xfer.c and io/http_stream.c (and above core only): which outcomes
 * are worth another attempt, how long to back off, header lookups and the
 * URL as errors show it. Thread-safe; no state shared between threads. */
#ifndef CV_HTTP_RETRY_H
#define CV_HTTP_RETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* The request policy, from the environment (read on each call). */
typedef struct CvHttpPolicy {
    int attempts;           /* CONVEYOR_HTTP_ATTEMPTS, default 6 */
    int64_t backoff_ms;     /* CONVEYOR_HTTP_BACKOFF_MS, default 100 */
    int64_t max_backoff_ms; /* 5000 */
    long timeout_s;         /* CONVEYOR_HTTP_TIMEOUT_S, default 30 */
} CvHttpPolicy;
void cv_http_policy(CvHttpPolicy *p);

/* Whether a CURLcode is worth another attempt, and its short description
 * ("connection reset"). */
bool cv_http_transport_retryable(int curl_code);
const char *cv_http_transport_outcome(int curl_code);
/* Whether an HTTP status is worth another attempt (408, 429, 5xx). */
bool cv_http_status_retryable(long status);
const char *cv_http_reason(long status);
/* CANCELLED (naming display) when the caller's pipeline gave up, INTERRUPTED
 * when its consumer was interrupted, else OK. No lock may be held. */
CvStatus cv_http_gave_up(const char *display);
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

#endif
