/* EncodeJpeg(image[, quality]): a uint8 image [h, w, c] (c = 1 or 3) to
 * JPEG bytes with libjpeg-turbo (tf.io.encode_jpeg).
 *
 * ints: [quality (0..100), progressive, optimize_size, chroma_downsampling].
 * The optional second input, a scalar int32 in 0..100, is the quality per
 * call instead (tf.image's EncodeJpegVariableQuality: a random quality).
 * libjpeg reports errors by calling error_exit, which must not return: ours
 * longjmps back to encode(), which frees everything. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { ENCODE_JPEG_QUALITY, ENCODE_JPEG_PROGRESSIVE, ENCODE_JPEG_OPTIMIZE_SIZE,
    ENCODE_JPEG_CHROMA_DOWNSAMPLING, ENCODE_JPEG_NUM_INTS };
static const char *const encode_jpeg_int_attrs[] = {"quality", "progressive", "optimize_size",
    "chroma_downsampling", NULL};
CV_ATTR_NAMES_MATCH(encode_jpeg_int_attrs, ENCODE_JPEG_NUM_INTS);

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf escape;
    char message[JMSG_LENGTH_MAX];
    /* The output buffer libjpeg mallocs and grows; kept here (its address
     * escapes to libjpeg) so the error path can free it after a longjmp. */
    unsigned char *dest;
} ErrorManager;

static void on_error(j_common_ptr cinfo)
{
    ErrorManager *err = (ErrorManager *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, err->message);
    longjmp(err->escape, 1);
}

static void on_message(j_common_ptr cinfo)
{
    (void)cinfo; /* warnings are not errors here; stay quiet */
}

static CvStatus encode_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                           int num_out, CvOpContext *ctx)
{
    (void)num_out;
    (void)ctx;
    const CvTensor *img = &in[0];
    if (attrs->num_ints != ENCODE_JPEG_NUM_INTS)
        return cv_error(CV_INVALID_ARGUMENT, "EncodeJpeg: malformed attributes");
    int64_t quality = attrs->ints[ENCODE_JPEG_QUALITY];
    if (num_in > 1) {
        if (in[1].dtype != CV_INT32 || in[1].rank != 0)
            return cv_error(CV_INVALID_ARGUMENT, "quality must be a scalar int32");
        quality = *(const int32_t *)in[1].data;
        if (quality < 0 || quality > 100)
            return cv_error(CV_INVALID_ARGUMENT, "quality must be in [0,100]");
    }
    if (img->dtype != CV_UINT8 || img->rank != 3 || (img->shape[2] != 1 && img->shape[2] != 3))
        return cv_error(CV_INVALID_ARGUMENT, "image must be 3-dimensional uint8 with 1 or 3 "
                                             "channels");
    if (img->shape[0] <= 0 || img->shape[1] <= 0 || img->shape[0] > 65500 || img->shape[1] > 65500)
        return cv_error(CV_INVALID_ARGUMENT, "image dimensions must be in 1..65500, got %lldx%lld",
                        (long long)img->shape[0], (long long)img->shape[1]);
    struct jpeg_compress_struct cinfo;
    ErrorManager err;
    unsigned long size = 0;
    err.dest = NULL;
    cinfo.err = jpeg_std_error(&err.base);
    err.base.error_exit = on_error;
    err.base.output_message = on_message;
    if (setjmp(err.escape)) {
        jpeg_destroy_compress(&cinfo);
        free(err.dest);
        return cv_error(CV_INTERNAL, "JPEG encoding failed: %s", err.message);
    }
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, &err.dest, &size);
    cinfo.image_width = (JDIMENSION)img->shape[1];
    cinfo.image_height = (JDIMENSION)img->shape[0];
    cinfo.input_components = (int)img->shape[2];
    cinfo.in_color_space = img->shape[2] == 3 ? JCS_RGB : JCS_GRAYSCALE;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, (int)quality, TRUE);
    cinfo.optimize_coding = attrs->ints[ENCODE_JPEG_OPTIMIZE_SIZE] ? TRUE : FALSE;
    if (img->shape[2] == 3 && !attrs->ints[ENCODE_JPEG_CHROMA_DOWNSAMPLING]) { /* 4:4:4 */
        cinfo.comp_info[0].h_samp_factor = cinfo.comp_info[0].v_samp_factor = 1;
    }
    if (attrs->ints[ENCODE_JPEG_PROGRESSIVE])
        jpeg_simple_progression(&cinfo);
    jpeg_start_compress(&cinfo, TRUE);
    size_t row = (size_t)(img->shape[1] * img->shape[2]);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW line = (JSAMPROW)(img->data + (size_t)cinfo.next_scanline * row);
        jpeg_write_scanlines(&cinfo, &line, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    char *blob = NULL;
    CvStatus s = cv_tensor_alloc_scalar_string(&out[0], size, &blob);
    if (!s)
        memcpy(blob, err.dest, size);
    free(err.dest);
    return s;
}

const CvOp cv_op_encode_jpeg = {
    .name = "EncodeJpeg", .min_inputs = 1, .max_inputs = 2, .run = encode_run,
    .int_attrs = encode_jpeg_int_attrs};
