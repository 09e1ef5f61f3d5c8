/* Building a string tensor whose strings are computed one after another
 * (not an op): the tf.strings ops append each output string's bytes, end
 * it, and finally get a tensor of the given shape. Lengths are checked for
 * overflow; memory grows geometrically. */
#ifndef CV_STRING_OUT_H
#define CV_STRING_OUT_H

#include "ops/op.h"

typedef struct CvStringOut {
    char *bytes;
    size_t size, cap;
    uint64_t *ends; /* end offset of each finished string */
    int64_t count, max;
} CvStringOut;

/* Room for n strings. */
CvStatus cv_string_out_init(CvStringOut *o, int64_t n);
/* Append bytes to the string being built. */
CvStatus cv_string_out_append(CvStringOut *o, const char *p, size_t n);
/* Finish the string being built. */
void cv_string_out_end(CvStringOut *o);
/* The n finished strings as a tensor of `shape` (whose size is n); frees o. */
CvStatus cv_string_out_finish(CvStringOut *o, int rank, const int64_t *shape, CvTensor *out);
void cv_string_out_free(CvStringOut *o);

/* The bytes of string i of a string tensor (flat index) and its length. */
static inline const char *cv_string_at(const CvTensor *t, int64_t i, size_t *len)
{
    const CvStringRef *r = (const CvStringRef *)t->data + i;
    *len = (size_t)r->length;
    return cv_string_data(t, r);
}

#endif
