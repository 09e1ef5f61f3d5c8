/* ParseExample: tf.train.Example parsing inside a traced map
 * (ops/example.h does the work).
 *
 * Input: a string tensor, rank 0 (tf.io.parse_single_example) or rank 1
 * (tf.io.parse_example). attrs->object: the CvExampleConfig (built and kept
 * alive by the binding); the node has one output per config output. */
#include "ops/example.h"
#include "ops/op.h"

static CvStatus parse_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                          int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)ctx;
    const CvExampleConfig *cfg = attrs->object;
    if (!cfg || cv_example_config_num_outputs(cfg) != num_out)
        return cv_error(CV_INVALID_ARGUMENT, "ParseExample: malformed attributes");
    if (in[0].dtype != CV_STRING || in[0].rank > 1)
        return cv_error(CV_INVALID_ARGUMENT, "serialized must be a scalar or vector of strings");
    return cv_parse_example_tensor(cfg, &in[0], NULL, out);
}

const CvOp cv_op_parse_example = {
    .name = "ParseExample", .min_inputs = 1, .max_inputs = 1, .run = parse_run};
