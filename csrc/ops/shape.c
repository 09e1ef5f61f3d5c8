/* Shape: the runtime shape of a tensor as an int32 vector (tf.shape). */
#include "ops/op.h"

static CvStatus shape_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                          int num_out, CvOpContext *ctx)
{
    (void)attrs;
    (void)num_in;
    (void)num_out;
    (void)ctx;
    int64_t rank = in[0].rank;
    CvStatus s = cv_tensor_alloc(&out[0], CV_INT32, 1, &rank, 0, NULL);
    if (s)
        return s;
    for (int i = 0; i < in[0].rank; i++) {
        if (in[0].shape[i] > INT32_MAX) {
            cv_tensor_clear(&out[0]);
            return cv_error(CV_INVALID_ARGUMENT, "dimension %d (%lld) does not fit int32", i,
                            (long long)in[0].shape[i]);
        }
        ((int32_t *)out[0].data)[i] = (int32_t)in[0].shape[i];
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_shape = {.name = "Shape", .min_inputs = 1, .max_inputs = 1, .run = shape_run};
