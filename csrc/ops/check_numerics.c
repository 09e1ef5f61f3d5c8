/* CheckNumerics: pass a float tensor through, or fail with InvalidArgument
 * when it holds NaN or infinite values (tf.debugging.check_numerics).
 * Shares the input's memory.
 *
 * string: the message, which the error starts with ("<message> : Tensor
 * had NaN values", "Inf values" or "Inf and NaN values", as TensorFlow).
 * float16, float32 and float64 inputs. */
#include <math.h>

#include "ops/op.h"
#include "ops/values.h"

static CvStatus check_numerics_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                   CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *x = &in[0];
    if (!cv_dtype_is_float(x->dtype))
        return cv_error(CV_INVALID_ARGUMENT, "CheckNumerics: %s is not a float dtype",
                        cv_dtype_name(x->dtype));
    bool nan = false, inf = false;
    int64_t n = cv_tensor_num_elements(x);
    for (int64_t i = 0; i < n && !(nan && inf); i++) {
        double v = cv_value_f(x->data, x->dtype, i);
        nan |= isnan(v) != 0;
        inf |= isinf(v) != 0;
    }
    if (nan || inf)
        return cv_error(CV_INVALID_ARGUMENT, "%s : Tensor had %s values",
                        attrs->string ? attrs->string : "",
                        nan && inf ? "Inf and NaN" : nan ? "NaN" : "Inf");
    cv_tensor_copy_ref(&out[0], x);
    return CV_STATUS_OK;
}

const CvOp cv_op_check_numerics = {
    .name = "CheckNumerics", .min_inputs = 1, .max_inputs = 1, .run = check_numerics_run};
