/* ExtractJpegShape(contents): [height, width, channels] of a JPEG image from
 * its header alone (tf.image.extract_jpeg_shape), see ops/jpeg.h. Like
 * TensorFlow's op it does not sniff the format: anything that is not a JPEG
 * header is INVALID_ARGUMENT ("Invalid JPEG data, size N").
 *
 * ints: [0] the output dtype (CV_INT32 or CV_INT64). No state. */
#include "ops/jpeg.h"
#include "ops/op.h"

enum { EXTRACT_JPEG_SHAPE_OUTPUT_TYPE, EXTRACT_JPEG_SHAPE_NUM_INTS };
static const char *const extract_jpeg_shape_int_attrs[] = {"output_type", NULL};
CV_ATTR_NAMES_MATCH(extract_jpeg_shape_int_attrs, EXTRACT_JPEG_SHAPE_NUM_INTS);

static CvStatus extract_jpeg_shape_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                       CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    CvDtype dtype = (CvDtype)attrs->ints[EXTRACT_JPEG_SHAPE_OUTPUT_TYPE];
    if (dtype != CV_INT32 && dtype != CV_INT64)
        return cv_error(CV_INVALID_ARGUMENT, "ExtractJpegShape: output_type must be int32 or int64");
    const uint8_t *bytes;
    size_t length;
    int64_t dims[3];
    CvStatus s = cv_op_scalar_contents(&in[0], &bytes, &length);
    if (!s)
        s = cv_jpeg_shape(bytes, length, dims);
    if (s)
        return s;
    int64_t three = 3;
    s = cv_tensor_alloc(&out[0], dtype, 1, &three, 0, NULL);
    if (s)
        return s;
    for (int i = 0; i < 3; i++) {
        if (dtype == CV_INT32)
            ((int32_t *)out[0].data)[i] = (int32_t)dims[i]; /* JPEG sizes are 16-bit */
        else
            ((int64_t *)out[0].data)[i] = dims[i];
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_extract_jpeg_shape = {
    .name = "ExtractJpegShape", .min_inputs = 1, .max_inputs = 1, .run = extract_jpeg_shape_run,
    .int_attrs = extract_jpeg_shape_int_attrs};
