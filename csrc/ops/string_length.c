/* StringLength(input): the length of each string of a string tensor, as an
 * int32 tensor of the same shape (tf.strings.length): in bytes, or in
 * UTF-8 characters, counting the bytes that are not continuation bytes
 * (10xxxxxx), as TensorFlow does (an invalid byte counts as a character).
 *
 * ints: [0] 1 for unit "UTF8_CHAR". */
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { STRING_LENGTH_UTF8, STRING_LENGTH_NUM_INTS };
static const char *const string_length_int_attrs[] = {"utf8", NULL};
CV_ATTR_NAMES_MATCH(string_length_int_attrs, STRING_LENGTH_NUM_INTS);

static CvStatus string_length_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                  CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    if (attrs->num_ints < STRING_LENGTH_NUM_INTS || in[0].dtype != CV_STRING)
        return cv_error(CV_INVALID_ARGUMENT, "StringLength needs strings and a unit");
    CvStatus s = cv_tensor_alloc(&out[0], CV_INT32, in[0].rank, in[0].shape, 0, NULL);
    if (s)
        return s;
    const int64_t n = cv_tensor_num_elements(&in[0]);
    const CvStringRef *refs = (const CvStringRef *)in[0].data;
    int32_t *dst = (int32_t *)out[0].data;
    for (int64_t i = 0; i < n; i++) {
        uint64_t len = refs[i].length;
        if (attrs->ints[STRING_LENGTH_UTF8]) {
            const unsigned char *t = (const unsigned char *)cv_string_data(&in[0], &refs[i]);
            uint64_t chars = 0;
            for (uint64_t k = 0; k < refs[i].length; k++)
                chars += (t[k] & 0xC0) != 0x80;
            len = chars;
        }
        dst[i] = (int32_t)len; /* wraps past 2 GiB, as an int32 does in TensorFlow */
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_string_length = {
    .name = "StringLength", .min_inputs = 1, .max_inputs = 1, .run = string_length_run,
    .int_attrs = string_length_int_attrs};
