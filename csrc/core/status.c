#include "core/status.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Returned when even the error cannot be allocated; never freed. */
static CvError nomem_error = {CV_RESOURCE_EXHAUSTED, "out of memory", NULL, NULL};

static char *vformat(const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return NULL;
    char *buf = malloc((size_t)n + 1);
    if (buf)
        vsnprintf(buf, (size_t)n + 1, fmt, ap);
    return buf;
}

CvStatus cv_error_nomem(void)
{
    return &nomem_error;
}

CvStatus cv_error(CvCode code, const char *fmt, ...)
{
    CvError *e = calloc(1, sizeof(*e));
    if (!e)
        return &nomem_error;
    va_list ap;
    va_start(ap, fmt);
    e->message = vformat(fmt, ap);
    va_end(ap);
    if (!e->message) {
        free(e);
        return &nomem_error;
    }
    e->code = code;
    return e;
}

CvStatus cv_status_prefix(CvStatus s, const char *fmt, ...)
{
    if (!s || s == &nomem_error)
        return s;
    va_list ap;
    va_start(ap, fmt);
    char *prefix = vformat(fmt, ap);
    va_end(ap);
    if (!prefix)
        return s;
    size_t a = strlen(prefix), b = strlen(s->message);
    char *joined = malloc(a + b + 1);
    if (joined) {
        memcpy(joined, prefix, a);
        memcpy(joined + a, s->message, b + 1);
        free(s->message);
        s->message = joined;
    }
    free(prefix);
    return s;
}

void cv_status_free(CvStatus s)
{
    if (!s || s == &nomem_error)
        return;
    if (s->payload && s->payload_free)
        s->payload_free(s->payload);
    free(s->message);
    free(s);
}

CvStatus cv_status_copy(CvStatus s)
{
    if (!s || s == &nomem_error)
        return s;
    CvStatus copy = cv_error(s->code, "%s", s->message);
    if (copy != &nomem_error && s->payload && s->payload_ref && s->payload_ref(s->payload) == 0) {
        copy->payload = s->payload;
        copy->payload_free = s->payload_free;
        copy->payload_ref = s->payload_ref;
    }
    return copy;
}

/* Payload lists (status.h). */
struct CvListedPayload {
    void *payload; /* owned, with its hooks */
    void (*payload_free)(void *payload);
    int (*payload_ref)(void *payload);
    long refs;                    /* the statuses holding the box; under list_mu */
    CvPayloadList *list;          /* NULL once off it; under list_mu */
    CvListedPayload *prev, *next; /* on list; under list_mu */
};

static pthread_mutex_t list_mu = PTHREAD_MUTEX_INITIALIZER;

/* list_mu held. */
static void unlink_listed(CvListedPayload *b)
{
    if (!b->list)
        return;
    if (b->prev)
        b->prev->next = b->next;
    else
        b->list->head = b->next;
    if (b->next)
        b->next->prev = b->prev;
    b->list = NULL;
    b->prev = b->next = NULL;
}

static int listed_ref(void *box)
{
    CvListedPayload *b = box;
    pthread_mutex_lock(&list_mu);
    b->refs++;
    pthread_mutex_unlock(&list_mu);
    return 0;
}

static void listed_free(void *box)
{
    CvListedPayload *b = box;
    pthread_mutex_lock(&list_mu);
    bool last = --b->refs == 0;
    if (last)
        unlink_listed(b);
    pthread_mutex_unlock(&list_mu);
    if (!last)
        return;
    if (b->payload_free)
        b->payload_free(b->payload); /* may need the front end's lock: list_mu is not held */
    free(b);
}

CvStatus cv_status_list_payload(CvStatus s, CvPayloadList *list)
{
    if (!s || !s->payload || !list || s->payload_free == listed_free)
        return s;
    CvListedPayload *b = malloc(sizeof(*b));
    if (!b)
        return s;
    *b = (CvListedPayload){s->payload, s->payload_free, s->payload_ref, 1, list, NULL, NULL};
    pthread_mutex_lock(&list_mu);
    b->next = list->head;
    if (b->next)
        b->next->prev = b;
    list->head = b;
    pthread_mutex_unlock(&list_mu);
    s->payload = b;
    s->payload_free = listed_free;
    s->payload_ref = listed_ref;
    return s;
}

int cv_payload_list_visit(CvPayloadList *list, int (*visit)(void *payload, void *arg), void *arg)
{
    int rc = 0;
    pthread_mutex_lock(&list_mu);
    for (CvListedPayload *b = list->head; !rc && b; b = b->next)
        rc = visit(b->payload, arg);
    pthread_mutex_unlock(&list_mu);
    return rc;
}

void cv_payload_list_orphan(CvPayloadList *list)
{
    pthread_mutex_lock(&list_mu);
    while (list->head)
        unlink_listed(list->head);
    pthread_mutex_unlock(&list_mu);
}

void *cv_status_take_payload(CvStatus s)
{
    void *payload = s ? s->payload : NULL;
    if (!payload)
        return NULL;
    s->payload = NULL;
    if (s->payload_free != listed_free)
        return payload; /* s's reference, now the caller's */
    CvListedPayload *b = payload; /* a reference of the caller's, then s's share of the box goes */
    payload = b->payload_ref && b->payload_ref(b->payload) == 0 ? b->payload : NULL;
    listed_free(b);
    return payload;
}

void cv_payload_lists_after_fork(void)
{
    pthread_mutex_init(&list_mu, NULL);
}

const char *cv_code_name(CvCode code)
{
    switch (code) {
    case CV_OK: return "OK";
    case CV_CANCELLED: return "CANCELLED";
    case CV_UNKNOWN: return "UNKNOWN";
    case CV_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case CV_DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case CV_NOT_FOUND: return "NOT_FOUND";
    case CV_ALREADY_EXISTS: return "ALREADY_EXISTS";
    case CV_PERMISSION_DENIED: return "PERMISSION_DENIED";
    case CV_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case CV_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case CV_ABORTED: return "ABORTED";
    case CV_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case CV_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case CV_INTERNAL: return "INTERNAL";
    case CV_UNAVAILABLE: return "UNAVAILABLE";
    case CV_DATA_LOSS: return "DATA_LOSS";
    case CV_UNAUTHENTICATED: return "UNAUTHENTICATED";
    case CV_INTERRUPTED: return "INTERRUPTED";
    }
    return "UNKNOWN";
}

/* -- warnings ------------------------------------------------------------ */

static _Atomic(CvWarningHandler) warning_handler;

void cv_set_warning_handler(CvWarningHandler handler)
{
    atomic_store(&warning_handler, handler);
}

void cv_warn(CvWarningKind kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = vformat(fmt, ap);
    va_end(ap);
    if (!msg)
        return;
    CvWarningHandler h = atomic_load(&warning_handler);
    if (h)
        h(kind, msg);
    else
        fprintf(stderr, "conveyor: warning: %s\n", msg);
    free(msg);
}
