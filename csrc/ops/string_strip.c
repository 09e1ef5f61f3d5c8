/* StringStrip(input): each string of a string tensor without its leading
 * and trailing ASCII whitespace (space, \t \n \v \f \r), as
 * tf.strings.strip. Same shape; the bytes are copied. */
#include <string.h>

#include "ops/op.h"

static bool is_space(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

static CvStatus string_strip_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                 CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)attrs;
    (void)num_in;
    (void)num_out;
    (void)ctx;
    if (in[0].dtype != CV_STRING)
        return cv_error(CV_INVALID_ARGUMENT, "StringStrip needs strings, got %s",
                        cv_dtype_name(in[0].dtype));
    const int64_t n = cv_tensor_num_elements(&in[0]);
    const CvStringRef *refs = (const CvStringRef *)in[0].data;
    size_t total = 0;
    for (int64_t i = 0; i < n; i++)
        total += (size_t)refs[i].length;
    char *blob = NULL;
    CvStatus s = cv_tensor_alloc(&out[0], CV_STRING, in[0].rank, in[0].shape, total, &blob);
    if (s)
        return s;
    CvStringRef *dst = (CvStringRef *)out[0].data;
    const uint64_t base = (uint64_t)(blob - out[0].buf->data);
    uint64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        const char *t = cv_string_data(&in[0], &refs[i]);
        uint64_t a = 0, b = refs[i].length;
        while (a < b && is_space(t[a]))
            a++;
        while (b > a && is_space(t[b - 1]))
            b--;
        memcpy(blob + at, t + a, (size_t)(b - a));
        dst[i].offset = base + at;
        dst[i].length = b - a;
        at += b - a;
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_string_strip = {"StringStrip", 1, 1, string_strip_run};
