/* StringJoin(inputs...): the strings of N string tensors joined element by
 * element with a separator (tf.strings.join). The inputs are scalars or
 * tensors of one shape (scalars repeat), else InvalidArgumentError; the
 * output has that shape.
 *
 * string: the separator (no NUL bytes; NULL for ""). */
#include <string.h>

#include "ops/op.h"
#include "ops/string_out.h"

static CvStatus string_join_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_out;
    (void)ctx;
    const char *sep = attrs->string ? attrs->string : "";
    const size_t sep_len = strlen(sep);
    const CvTensor *shaped = NULL;
    for (int k = 0; k < num_in; k++) {
        if (in[k].dtype != CV_STRING)
            return cv_error(CV_INVALID_ARGUMENT, "StringJoin needs strings, got %s",
                            cv_dtype_name(in[k].dtype));
        if (in[k].rank == 0)
            continue;
        if (shaped && !cv_tensor_same_shape(shaped, &in[k])) {
            char ta[64], tb[64];
            return cv_error(CV_INVALID_ARGUMENT, "Input shapes do not match: %s vs. %s",
                            cv_shape_str(shaped->shape, shaped->rank, ta, sizeof(ta)),
                            cv_shape_str(in[k].shape, in[k].rank, tb, sizeof(tb)));
        }
        shaped = shaped ? shaped : &in[k];
    }
    const int64_t n = shaped ? cv_tensor_num_elements(shaped) : 1;
    CvStringOut o;
    CvStatus s = cv_string_out_init(&o, n);
    for (int64_t i = 0; !s && i < n; i++) {
        for (int k = 0; !s && k < num_in; k++) {
            size_t len;
            const char *t = cv_string_at(&in[k], in[k].rank ? i : 0, &len);
            if (k > 0)
                s = cv_string_out_append(&o, sep, sep_len);
            if (!s)
                s = cv_string_out_append(&o, t, len);
        }
        cv_string_out_end(&o);
    }
    if (!s)
        return cv_string_out_finish(&o, shaped ? shaped->rank : 0, shaped ? shaped->shape : NULL,
                                    &out[0]);
    cv_string_out_free(&o);
    return s;
}

const CvOp cv_op_string_join = {"StringJoin", 1, 4096, string_join_run};
