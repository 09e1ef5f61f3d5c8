/* TensorFlow's SampleDistortedBoundingBox algorithm, shared by the stateful
 * and the stateless op (sample_distorted_bounding_box.c,
 * stateless_sample_distorted_bounding_box.c), which differ only in how they
 * key the Philox stream. Given the same stream it returns TensorFlow's
 * values: the same float32 arithmetic, rounding (lrintf) and draws
 * (SimplePhilox's RandFloat and its exact, rejection-sampled Uniform(n)), in
 * the same order. Not an op. Plain C, no state: thread-safe. */
#ifndef CV_DISTORTED_BOX_H
#define CV_DISTORTED_BOX_H

#include <stdbool.h>
#include <stdint.h>

#include "core/philox.h"
#include "core/tensor.h"

typedef struct CvDistortedBoxArgs {
    float aspect_ratio_range[2];
    float area_range[2];
    int64_t max_attempts;
    bool use_image_if_no_bounding_boxes;
} CvDistortedBoxArgs;

/* The attribute checks (TensorFlow's messages): INVALID_ARGUMENT for a
 * range that is not positive, an area above 1, or max_attempts < 1. */
CvStatus cv_distorted_box_check(const CvDistortedBoxArgs *a);

/* image_size: [3] of uint8/int8/int16/int32/int64 ([height, width, depth]);
 * boxes: float32 [batch, N, 4] of [y_min, x_min, y_max, x_max] in [0, 1];
 * min_object_covered: a float32 scalar. Draws from `rng` (TensorFlow's
 * kernel reserves max_attempts Philox blocks per call). out[0..2]: begin and
 * size ([3], image_size's dtype) and bboxes (float32 [1, 1, 4]), owned by the
 * caller on OK, cleared on error. */
CvStatus cv_distorted_box_run(const CvDistortedBoxArgs *a, const CvTensor *image_size,
                              const CvTensor *boxes, const CvTensor *min_object_covered,
                              CvPhilox *rng, CvTensor *out);

/* Advance `rng`'s 128-bit counter by `blocks` (PhiloxRandom::Skip). */
void cv_distorted_box_skip(CvPhilox *rng, uint64_t blocks);

#endif
