/* StringEqual(x, y): whether the strings of two string tensors are equal,
 * byte for byte, broadcasting as NumPy does (tf.equal / tf.not_equal and
 * == / != on string tensors); a bool tensor of the broadcast shape.
 *
 * ints: [0] 1 for not_equal. */
#include <string.h>

#include "ops/broadcast.h"
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { STRING_EQUAL_NEGATE, STRING_EQUAL_NUM_INTS };
static const char *const string_equal_int_attrs[] = {"negate", NULL};
CV_ATTR_NAMES_MATCH(string_equal_int_attrs, STRING_EQUAL_NUM_INTS);

static CvStatus string_equal_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                 CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    if (attrs->num_ints < STRING_EQUAL_NUM_INTS || in[0].dtype != CV_STRING ||
        in[1].dtype != CV_STRING)
        return cv_error(CV_INVALID_ARGUMENT, "StringEqual needs two string tensors");
    const CvTensor *a = &in[0], *b = &in[1];
    CvBroadcast bc;
    CvStatus bs = cv_broadcast_init(&bc, a, b);
    if (bs)
        return bs;
    CvStatus s = cv_tensor_alloc(&out[0], CV_BOOL, bc.rank, bc.shape, 0, NULL);
    if (s)
        return s;
    const int64_t n = cv_tensor_num_elements(&out[0]);
    const CvStringRef *ra = (const CvStringRef *)a->data, *rb = (const CvStringRef *)b->data;
    const bool negate = attrs->ints[STRING_EQUAL_NEGATE] != 0;
    bool *dst = (bool *)out[0].data;
    for (int64_t i = 0; i < n; i++) {
        const CvStringRef *x = &ra[bc.oa], *y = &rb[bc.ob];
        bool eq = x->length == y->length &&
                  memcmp(cv_string_data(a, x), cv_string_data(b, y), (size_t)x->length) == 0;
        dst[i] = eq != negate;
        cv_broadcast_next(&bc);
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_string_equal = {
    .name = "StringEqual", .min_inputs = 2, .max_inputs = 2, .run = string_equal_run,
    .int_attrs = string_equal_int_attrs};
