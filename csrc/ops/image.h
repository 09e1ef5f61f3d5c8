/* Checks shared by the image ops (crop, flip, rotate, standardize, resize):
 * an image is [height, width, channels], a batch of images [batch, height,
 * width, channels]. The messages are TensorFlow's, so a conveyor op fails
 * like its tf.image counterpart. A helper, not an op.
 */
#ifndef CV_OPS_IMAGE_H
#define CV_OPS_IMAGE_H

#include "core/tensor.h"

/* TensorFlow's run-time checks of an image of unknown static shape: rank at
 * least 3 ("'image' must be at least three-dimensional."), at most max_rank
 * (4: "'image' must have either 3 or 4 dimensions."; CV_MAX_RANK: no upper
 * bound), and the inner 3 dims > 0. INVALID_ARGUMENT otherwise. */
CvStatus cv_image_check(const CvTensor *image, int max_rank);

/* Rank 3 or 4 only (an image or a batch; dims may be 0): INVALID_ARGUMENT
 * "'<name>' must have either 3 or 4 dimensions, got shape [...]" otherwise. */
CvStatus cv_image_check_rank(const CvTensor *image, const char *name);

#endif
