/* CondSelect(pred, a..., b...): the tensors of one branch of tf.cond, chosen
 * by a scalar bool predicate after both branches ran. Shares memory.
 *
 * Inputs: the predicate, then the n outputs of the true branch, then the n
 * of the false branch (num_in = 2n + 1, num_out = n). Tensors of the two
 * branches may differ in shape (the traced spec keeps the dims they agree
 * on); dtypes are checked by the Python layer. A predicate that is not a
 * scalar bool is InvalidArgument. */
#include "ops/op.h"

static CvStatus cond_select_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)attrs;
    (void)ctx;
    if (num_in != 2 * num_out + 1)
        return cv_error(CV_INVALID_ARGUMENT, "CondSelect: expected %d inputs, got %d",
                        2 * num_out + 1, num_in);
    if (in[0].dtype != CV_BOOL || in[0].rank != 0)
        return cv_error(CV_INVALID_ARGUMENT,
                        "The predicate of cond must be a scalar bool, got a %s tensor of rank %d",
                        cv_dtype_name(in[0].dtype), in[0].rank);
    int first = *(const uint8_t *)in[0].data ? 1 : 1 + num_out;
    for (int i = 0; i < num_out; i++)
        cv_tensor_copy_ref(&out[i], &in[first + i]);
    return CV_STATUS_OK;
}

const CvOp cv_op_cond_select = {
    .name = "CondSelect", .min_inputs = 3, .max_inputs = 129, .run = cond_select_run};
