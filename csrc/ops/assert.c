/* Assert(ok): fail the element with InvalidArgument unless every value of a
 * bool tensor is true (the value checks of tf.debugging inside a traced map
 * function; a program runs every node, so the check runs even though
 * nothing uses its output). Passes `ok` through (shared memory).
 *
 * string: the error message (the Python layer writes TensorFlow's
 * "Condition x < y did not hold." text, after the user's message). */
#include "ops/op.h"

static CvStatus assert_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                           int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    if (in[0].dtype != CV_BOOL)
        return cv_error(CV_INVALID_ARGUMENT, "Assert: the condition must be bool, got %s",
                        cv_dtype_name(in[0].dtype));
    int64_t n = cv_tensor_num_elements(&in[0]);
    const uint8_t *v = (const uint8_t *)in[0].data;
    for (int64_t i = 0; i < n; i++) {
        if (!v[i])
            return cv_error(CV_INVALID_ARGUMENT, "%s",
                            attrs->string ? attrs->string : "assertion failed");
    }
    cv_tensor_copy_ref(&out[0], &in[0]);
    return CV_STATUS_OK;
}

const CvOp cv_op_assert = {.name = "Assert", .min_inputs = 1, .max_inputs = 1, .run = assert_run};
