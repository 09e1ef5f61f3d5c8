/* What every tests/c program shares: CHECK() counts a condition as passed
 * or failed (from any thread: the counters are atomic) and prints the ones
 * that fail with their place; ok() checks that a status is OK and reports
 * and frees it otherwise. Each program prints "N passed, M failed" from
 * these counters at its end. One translation unit per program, so the
 * counters are static here. */
#ifndef CV_TEST_CHECK_H
#define CV_TEST_CHECK_H

#include <stdbool.h>
#include <stdio.h>

#include "core/status.h"

static _Atomic int passed, failed;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (cond) {                                                                  \
            passed++;                                                                \
        } else {                                                                     \
            failed++;                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

/* A status that should be OK: report and free it otherwise. */
static inline bool ok(CvStatus s, const char *what)
{
    if (!s)
        return true;
    fprintf(stderr, "%s: %s: %s\n", what, cv_code_name(s->code), s->message);
    cv_status_free(s);
    failed++;
    return false;
}

#endif
