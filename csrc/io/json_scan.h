/* A small JSON scanner for the remote file systems' answers (GCS object
 * metadata and listings, OAuth token answers, key files): find one field of
 * an object, walk an array, unescape a string. It validates only what it
 * walks over, never reads past `len`, and never recurses deeper than
 * CV_JSON_MAX_DEPTH, so hostile input costs at most a linear scan.
 *
 * A span is a borrowed [p, p + n) slice of the caller's text holding one
 * JSON value (with its quotes, brackets or braces). Thread-safety: pure
 * functions. */
#ifndef CV_JSON_SCAN_H
#define CV_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CV_JSON_MAX_DEPTH 64

typedef struct CvJsonSpan {
    const char *p;
    size_t n;
} CvJsonSpan;

/* The value of `key` in the object `obj` (its own fields only, not nested
 * ones); false when obj is not a well-formed object or has no such key. */
bool cv_json_field(CvJsonSpan obj, const char *key, CvJsonSpan *value);
/* The string value of `key`, unescaped into a malloc'd NUL-terminated copy
 * (*out; NULL with false when absent, not a string, or out of memory). */
bool cv_json_string(CvJsonSpan obj, const char *key, char **out);
/* An integer field: a JSON number, or a string of digits (GCS sends sizes
 * and generations as strings). False when absent or not an integer. */
bool cv_json_int(CvJsonSpan obj, const char *key, int64_t *out);
/* A boolean field. */
bool cv_json_bool(CvJsonSpan obj, const char *key, bool *out);
/* Walk an array: start with *pos = 0; each call gives the next element in
 * *elem and returns true, false at the end or on malformed input. */
bool cv_json_array_next(CvJsonSpan array, size_t *pos, CvJsonSpan *elem);
/* Unescape a string span (with its quotes) into a malloc'd copy; NULL when
 * it is not a well-formed string or out of memory. */
char *cv_json_unescape(CvJsonSpan str);

#endif
