/* Status: the one way every fallible engine call reports failure.
 *
 * A CvStatus is a pointer: NULL means OK, anything else is an owned error
 * object that the receiver must pass on or free with cv_status_free().
 * Messages name the stage, the element/record and the shapes involved; the
 * Python binding turns a status into an exception in exactly one place
 * (csrc/python/errors.c).
 */
#ifndef CV_STATUS_H
#define CV_STATUS_H

#include <stdarg.h>

/* Codes follow tf.errors / absl so messages and exception types line up. */
typedef enum CvCode {
    CV_OK = 0,
    CV_CANCELLED = 1,
    CV_UNKNOWN = 2,
    CV_INVALID_ARGUMENT = 3,
    CV_DEADLINE_EXCEEDED = 4,
    CV_NOT_FOUND = 5,
    CV_ALREADY_EXISTS = 6,
    CV_PERMISSION_DENIED = 7,
    CV_RESOURCE_EXHAUSTED = 8,
    CV_FAILED_PRECONDITION = 9,
    CV_ABORTED = 10,
    CV_OUT_OF_RANGE = 11,
    CV_UNIMPLEMENTED = 12,
    CV_INTERNAL = 13,
    CV_UNAVAILABLE = 14,
    CV_DATA_LOSS = 15,
    CV_UNAUTHENTICATED = 16,
    /* Not a tf.errors code: the consumer's wait was interrupted by a signal
     * handler that raised (Ctrl-C). The binding re-raises the pending
     * Python exception; the iterator stays usable. */
    CV_INTERRUPTED = 100,
} CvCode;

typedef struct CvError {
    CvCode code;
    char *message;               /* owned, NUL-terminated */
    /* An opaque foreign error (a Python exception from a user function),
     * owned; freed with payload_free, which may need the GIL. */
    void *payload;
    void (*payload_free)(void *payload);
    /* Optional: take another reference to the payload (cv_status_copy);
     * returns nonzero when it cannot (the copy then carries none). */
    int (*payload_ref)(void *payload);
} CvError;

typedef CvError *CvStatus;

#define CV_STATUS_OK ((CvStatus)NULL)

#if defined(__GNUC__)
#define CV_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CV_PRINTF(f, a)
#endif

/* New error. Never fails: on out-of-memory it returns a static error. */
CvStatus cv_error(CvCode code, const char *fmt, ...) CV_PRINTF(2, 3);
CvStatus cv_error_nomem(void);
/* Prepend context ("in Batch: ") to an error's message; returns s. */
CvStatus cv_status_prefix(CvStatus s, const char *fmt, ...) CV_PRINTF(2, 3);
void cv_status_free(CvStatus s);
/* A second error with the same code, message and payload, for an error that
 * belongs to several positions (an input error inside overlapping windows). */
CvStatus cv_status_copy(CvStatus s);
const char *cv_code_name(CvCode code);

/* Payload lists, for a front end whose collector must see the foreign
 * errors statuses hold: a Python exception's traceback often refers to the
 * object that holds the iterator, a cycle through the pipeline that only
 * the callback's traverse hook can report (core/wrapper.h says when it
 * may). A callback puts the payload of each error it raised on its list:
 * the status then holds a box, shared by its copies, and the last free
 * takes the box off the list before it frees the payload. One process-wide
 * leaf mutex guards every list and box; it is held for pointer updates
 * only (never while a hook runs or anything waits), so a traverse hook may
 * take it. */
typedef struct CvListedPayload CvListedPayload;
typedef struct CvPayloadList {
    CvListedPayload *head;
} CvPayloadList;

/* Put s's payload on list; returns s. A no-op without a payload or list,
 * or without memory for the box (then the collector never sees it). */
CvStatus cv_status_list_payload(CvStatus s, CvPayloadList *list);
/* visit(payload, arg) once per listed payload; 0 or the first nonzero. */
int cv_payload_list_visit(CvPayloadList *list, int (*visit)(void *payload, void *arg), void *arg);
/* The list's owner goes away: its boxes stay with their statuses, on no list. */
void cv_payload_list_orphan(CvPayloadList *list);
/* Take s's payload out of s, one owned reference (to re-raise it); NULL
 * for none, or a listed one payload_ref could not reference. */
void *cv_status_take_payload(CvStatus s);
/* In a forked child (core/thread.c): the mutex anew, in case a thread of the
 * parent held it. */
void cv_payload_lists_after_fork(void);

/* Warnings: what the engine reports without failing (a record file that ends
 * inside a record). One process-wide handler, installed by the binding,
 * turns them into Python warnings; without one they go to stderr. cv_warn
 * may be called from any thread, with no engine lock held (the handler may
 * take the GIL). */
typedef enum CvWarningKind {
    CV_WARNING_DATA_LOSS = 0, /* conveyor.errors.DataLossWarning, once per message
                                 per process (a torn tail: a fact of the file) */
    CV_WARNING_DATA_LOSS_EACH = 1, /* DataLossWarning at every occurrence (an
                                      unusable index: each open that falls back) */
} CvWarningKind;
typedef void (*CvWarningHandler)(CvWarningKind kind, const char *message);
void cv_set_warning_handler(CvWarningHandler handler);
void cv_warn(CvWarningKind kind, const char *fmt, ...) CV_PRINTF(2, 3);

#endif
