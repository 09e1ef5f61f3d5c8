/* StatelessSampleDistortedBoundingBox(image_size, bounding_boxes,
 * min_object_covered, seed) -> (begin, size, bboxes):
 * tf.image.stateless_sample_distorted_bounding_box, the algorithm in
 * ops/distorted_box.h on the stateless stream of `seed` (a [2] int32/int64
 * tensor keyed as ops/stateless.h does): TensorFlow's values for the same
 * seed, whatever the element or thread.
 *
 * ints: [0] max_attempts, [1] use_image_if_no_bounding_boxes; floats: [0, 1]
 * aspect_ratio_range, [2, 3] area_range. No state. */
#include "ops/distorted_box.h"
#include "ops/op.h"
#include "ops/stateless.h"

enum { SSDBB_MAX_ATTEMPTS, SSDBB_USE_IMAGE, SSDBB_NUM_INTS };
static const char *const ssdbb_int_attrs[] = {"max_attempts", "use_image_if_no_bounding_boxes",
    NULL};
CV_ATTR_NAMES_MATCH(ssdbb_int_attrs, SSDBB_NUM_INTS);
enum { SSDBB_ASPECT_LO, SSDBB_ASPECT_HI, SSDBB_AREA_LO, SSDBB_AREA_HI, SSDBB_NUM_FLOATS };
static const char *const ssdbb_float_attrs[] = {"aspect_ratio_min", "aspect_ratio_max",
    "area_min", "area_max", NULL};
CV_ATTR_NAMES_MATCH(ssdbb_float_attrs, SSDBB_NUM_FLOATS);

static CvStatus ssdbb_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                          int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const double *f = attrs->floats;
    CvDistortedBoxArgs a = {
        .aspect_ratio_range = {(float)f[SSDBB_ASPECT_LO], (float)f[SSDBB_ASPECT_HI]},
        .area_range = {(float)f[SSDBB_AREA_LO], (float)f[SSDBB_AREA_HI]},
        .max_attempts = attrs->ints[SSDBB_MAX_ATTEMPTS],
        .use_image_if_no_bounding_boxes = attrs->ints[SSDBB_USE_IMAGE] != 0,
    };
    CvPhilox rng;
    CvStatus s = cv_stateless_init(&in[3], &rng);
    if (s)
        return s;
    return cv_distorted_box_run(&a, &in[0], &in[1], &in[2], &rng, out);
}

const CvOp cv_op_stateless_sample_distorted_bounding_box = {
    .name = "StatelessSampleDistortedBoundingBox", .min_inputs = 4, .max_inputs = 4,
    .run = ssdbb_run, .int_attrs = ssdbb_int_attrs, .float_attrs = ssdbb_float_attrs};
