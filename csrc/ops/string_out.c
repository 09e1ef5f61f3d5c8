/* CvStringOut (ops/string_out.h). */
#include <stdlib.h>
#include <string.h>

#include "ops/string_out.h"

CvStatus cv_string_out_init(CvStringOut *o, int64_t n)
{
    memset(o, 0, sizeof(*o));
    if (n < 0 || (uint64_t)n > SIZE_MAX / sizeof(uint64_t) - 1)
        return cv_error(CV_INVALID_ARGUMENT, "too many strings (%lld)", (long long)n);
    o->ends = malloc(((size_t)n + 1) * sizeof(uint64_t));
    if (!o->ends)
        return cv_error_nomem();
    o->max = n;
    return CV_STATUS_OK;
}

CvStatus cv_string_out_append(CvStringOut *o, const char *p, size_t n)
{
    if (n > CV_STRING_OFFSET_MASK - o->size)
        return cv_error(CV_INVALID_ARGUMENT, "string output larger than %llu bytes",
                        (unsigned long long)CV_STRING_OFFSET_MASK);
    if (o->size + n > o->cap) {
        size_t cap = o->cap ? o->cap : 256;
        while (cap < o->size + n)
            cap = cap > SIZE_MAX / 2 ? o->size + n : cap * 2;
        char *bytes = realloc(o->bytes, cap);
        if (!bytes)
            return cv_error_nomem();
        o->bytes = bytes;
        o->cap = cap;
    }
    if (n)
        memcpy(o->bytes + o->size, p, n);
    o->size += n;
    return CV_STATUS_OK;
}

void cv_string_out_end(CvStringOut *o)
{
    if (o->count < o->max)
        o->ends[o->count++] = o->size;
}

CvStatus cv_string_out_finish(CvStringOut *o, int rank, const int64_t *shape, CvTensor *out)
{
    char *blob = NULL;
    CvStatus s = cv_tensor_alloc(out, CV_STRING, rank, shape, o->size, &blob);
    if (!s) {
        CvStringRef *refs = (CvStringRef *)out->data;
        uint64_t base = (uint64_t)(blob - out->buf->data), start = 0;
        if (o->size)
            memcpy(blob, o->bytes, o->size);
        for (int64_t i = 0; i < o->count; i++) {
            refs[i].offset = base + start;
            refs[i].length = o->ends[i] - start;
            start = o->ends[i];
        }
    }
    cv_string_out_free(o);
    return s;
}

void cv_string_out_free(CvStringOut *o)
{
    free(o->bytes);
    free(o->ends);
    memset(o, 0, sizeof(*o));
}
