/* Image argument checks (see image.h). */
#include "ops/image.h"

CvStatus cv_image_check(const CvTensor *image, int max_rank)
{
    if (image->rank < 3)
        return cv_error(CV_INVALID_ARGUMENT, "'image' must be at least three-dimensional.");
    if (image->rank > max_rank)
        return cv_error(CV_INVALID_ARGUMENT, "'image' must have either 3 or 4 dimensions.");
    for (int d = image->rank - 3; d < image->rank; d++)
        if (image->shape[d] == 0)
            return cv_error(CV_INVALID_ARGUMENT, "inner 3 dims of 'image.shape' must be > 0.");
    return CV_STATUS_OK;
}

CvStatus cv_image_check_rank(const CvTensor *image, const char *name)
{
    char shape[96];
    if (image->rank != 3 && image->rank != 4)
        return cv_error(CV_INVALID_ARGUMENT, "'%s' must have either 3 or 4 dimensions, got shape %s",
                        name, cv_shape_str(image->shape, image->rank, shape, sizeof(shape)));
    return CV_STATUS_OK;
}
