/* SampleDistortedBoundingBoxV2(image_size, bounding_boxes, min_object_covered)
 * -> (begin, size, bboxes): tf.image.sample_distorted_bounding_box, the
 * algorithm in ops/distorted_box.h on TensorFlow's stateful stream.
 *
 * TensorFlow's kernel keys Philox with (seed, seed2) and each call takes the
 * next max_attempts blocks; a new iterator instantiates a new kernel. So
 * the n-th element of a map (CvOpContext id.index n) starts n * max_attempts
 * blocks in, whatever thread runs it: TensorFlow's values for every fresh
 * iterator. One difference: a repeat after the map starts each pass over
 * (TensorFlow's kernel goes on where the last pass stopped); a repeat
 * before it, as the ImageNet recipes do, keeps counting. (seed, seed2) ==
 * (0, 0): unseeded, the key comes from the per-element stream.
 *
 * ints: [0] seed, [1] seed2, [2] max_attempts, [3] use_image_if_no_bounding_boxes;
 * floats: [0, 1] aspect_ratio_range, [2, 3] area_range. No state. */
#include "ops/distorted_box.h"
#include "ops/op.h"

enum { SDBB_SEED, SDBB_SEED2, SDBB_MAX_ATTEMPTS, SDBB_USE_IMAGE, SDBB_NUM_INTS };
static const char *const sdbb_int_attrs[] = {"seed", "seed2", "max_attempts",
    "use_image_if_no_bounding_boxes", NULL};
CV_ATTR_NAMES_MATCH(sdbb_int_attrs, SDBB_NUM_INTS);
enum { SDBB_ASPECT_LO, SDBB_ASPECT_HI, SDBB_AREA_LO, SDBB_AREA_HI, SDBB_NUM_FLOATS };
static const char *const sdbb_float_attrs[] = {"aspect_ratio_min", "aspect_ratio_max",
    "area_min", "area_max", NULL};
CV_ATTR_NAMES_MATCH(sdbb_float_attrs, SDBB_NUM_FLOATS);

static CvStatus sdbb_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                         int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    const int64_t *i = attrs->ints;
    const double *f = attrs->floats;
    CvDistortedBoxArgs a = {
        .aspect_ratio_range = {(float)f[SDBB_ASPECT_LO], (float)f[SDBB_ASPECT_HI]},
        .area_range = {(float)f[SDBB_AREA_LO], (float)f[SDBB_AREA_HI]},
        .max_attempts = i[SDBB_MAX_ATTEMPTS],
        .use_image_if_no_bounding_boxes = i[SDBB_USE_IMAGE] != 0,
    };
    uint64_t seed = (uint64_t)i[SDBB_SEED], seed2 = (uint64_t)i[SDBB_SEED2];
    if (seed == 0 && seed2 == 0) {
        seed = ((uint64_t)cv_op_random_u32(ctx) << 32) | cv_op_random_u32(ctx);
        seed2 = ((uint64_t)cv_op_random_u32(ctx) << 32) | cv_op_random_u32(ctx);
    }
    CvPhilox rng;
    cv_philox_init(&rng, seed, seed2);
    if (a.max_attempts > 0)
        cv_distorted_box_skip(&rng, ctx->id.index * (uint64_t)a.max_attempts);
    return cv_distorted_box_run(&a, &in[0], &in[1], &in[2], &rng, out);
}

const CvOp cv_op_sample_distorted_bounding_box = {
    .name = "SampleDistortedBoundingBoxV2", .min_inputs = 3, .max_inputs = 3, .run = sdbb_run,
    .int_attrs = sdbb_int_attrs, .float_attrs = sdbb_float_attrs};
