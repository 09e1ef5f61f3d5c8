/* Reshape(tensor, shape): the same values in a new shape, sharing memory.
 * ints: the new shape (all dims known; the Python layer resolves -1 against
 * the traced shape, or passes -1 in one position to be resolved here). */
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { RESHAPE_SHAPE, RESHAPE_NUM_INTS };
static const char *const reshape_int_attrs[] = {"shape[]", NULL};
CV_ATTR_NAMES_MATCH(reshape_int_attrs, RESHAPE_NUM_INTS);

static CvStatus reshape_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                            int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    int64_t count = cv_tensor_num_elements(&in[0]), known = 1;
    int rank = attrs->num_ints, unknown = -1;
    char have[64], want[64];
    if (rank > CV_MAX_RANK)
        return cv_error(CV_INVALID_ARGUMENT, "shape has rank %d; at most %d", rank, CV_MAX_RANK);
    for (int i = 0; i < rank; i++) {
        if (attrs->ints[RESHAPE_SHAPE + i] == -1 && unknown < 0) {
            unknown = i;
        } else if (attrs->ints[RESHAPE_SHAPE + i] < 0) {
            return cv_error(CV_INVALID_ARGUMENT, "invalid shape dimension %lld",
                            (long long)attrs->ints[RESHAPE_SHAPE + i]);
        } else if (__builtin_mul_overflow(known, attrs->ints[RESHAPE_SHAPE + i], &known)) {
            return cv_error(CV_INVALID_ARGUMENT, "shape has too many elements");
        }
    }
    int64_t shape[CV_MAX_RANK];
    for (int i = 0; i < rank; i++)
        shape[i] = attrs->ints[RESHAPE_SHAPE + i];
    if (unknown >= 0) {
        if (known == 0 || count % known != 0)
            return cv_error(CV_INVALID_ARGUMENT,
                            "Input to reshape is a tensor with %lld values, but the requested "
                            "shape requires a multiple of %lld",
                            (long long)count, (long long)known);
        shape[unknown] = count / known;
        known = count;
    }
    if (known != count)
        return cv_error(CV_INVALID_ARGUMENT,
                        "Input to reshape is a tensor with %lld values, but the requested shape "
                        "has %lld (from %s to %s)",
                        (long long)count, (long long)known,
                        cv_shape_str(in[0].shape, in[0].rank, have, sizeof(have)),
                        cv_shape_str(shape, rank, want, sizeof(want)));
    cv_tensor_copy_ref(&out[0], &in[0]);
    out[0].rank = rank;
    for (int i = 0; i < rank; i++)
        out[0].shape[i] = shape[i];
    return CV_STATUS_OK;
}

const CvOp cv_op_reshape = {.name = "Reshape", .min_inputs = 1, .max_inputs = 1, .run = reshape_run,
    .int_attrs = reshape_int_attrs};
