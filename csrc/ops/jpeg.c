/* JPEG decoding on libjpeg-turbo, following TensorFlow's jpeg::Uncompress.
 *
 * Error handling: libjpeg reports a fatal error by calling error_exit, which
 * must not return. Ours formats the message and longjmps back into
 * decode_steps(), whose caller then releases everything. All state that
 * outlives a longjmp lives in the caller's Decoder (never in locals of the
 * function that called setjmp), so nothing needs `volatile`.
 *
 * The source manager is TensorFlow's memory source, because its answers
 * decide what a truncated or damaged stream gives: without
 * try_recover_truncated it suspends when asked for more data than it has (the
 * decoder then stops at the last complete row and acceptable_fraction
 * decides); with it, it appends a fake EOI once (libjpeg fills the missing
 * blocks) and fails the second time.
 */
#include "ops/jpeg.h"

#include <limits.h>
#include <setjmp.h>
#include <stdio.h> /* jpeglib.h uses FILE */
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

/* ---------------------------------------------------------- the decoder */

typedef struct ErrorMgr {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX]; /* the fatal error */
    char warning[JMSG_LENGTH_MAX]; /* the first warning ("" when none) */
} ErrorMgr;

typedef struct SourceMgr {
    struct jpeg_source_mgr pub;
    const JOCTET *data;
    size_t size;
    bool recover;
    bool wanted_more;  /* the decoder asked for bytes past the data */
    bool exhausted;    /* ... and none were left: the data is truncated */
    uint64_t replayed; /* bytes handed out again by "bytes left" answers */
} SourceMgr;

typedef struct Decoder {
    struct jpeg_decompress_struct cinfo;
    ErrorMgr err;
    SourceMgr src;
    bool created;      /* cinfo needs jpeg_destroy_decompress */
    JSAMPLE *row;      /* malloc'd: one CMYK or widened cropped row, copied by us */
    CvStatus status;   /* a refusal found by us (not by libjpeg) */
    unsigned eighths;  /* the scale chosen for a resize hint (8: full size) */
    int64_t height;    /* output rows */
    int64_t rows_read; /* rows decoded before the data ended */
    size_t stride;     /* output bytes per row */
} Decoder;

static void on_error_exit(j_common_ptr cinfo)
{
    ErrorMgr *err = (ErrorMgr *)cinfo->err;
    (*err->pub.format_message)(cinfo, err->message);
    longjmp(err->jump, 1);
}

/* Warnings are counted (as libjpeg's default does) and the first one kept
 * for messages; nothing is printed. */
static void on_emit_message(j_common_ptr cinfo, int msg_level)
{
    ErrorMgr *err = (ErrorMgr *)cinfo->err;
    if (msg_level >= 0)
        return; /* trace messages */
    if (err->pub.num_warnings == 0)
        (*err->pub.format_message)(cinfo, err->warning);
    err->pub.num_warnings++;
}

static void on_output_message(j_common_ptr cinfo)
{
    (void)cinfo;
}

static void src_init(j_decompress_ptr cinfo)
{
    SourceMgr *src = (SourceMgr *)cinfo->src;
    src->pub.next_input_byte = src->data;
    src->pub.bytes_in_buffer = src->size;
}

static const JOCTET fake_eoi[2] = {0xff, JPEG_EOI};

#define MAX_REPLAYED_BYTES ((uint64_t)1 << 20)

/* Called when the decoder wants bytes past what it was given. libjpeg-turbo's
 * Huffman decoders call this with a stale pub.bytes_in_buffer (their own copy
 * ran out), which is why "bytes left" means "suspend" here, as in
 * TensorFlow. */
static boolean src_fill(j_decompress_ptr cinfo)
{
    SourceMgr *src = (SourceMgr *)cinfo->src;
    src->wanted_more = true;
    if (src->pub.bytes_in_buffer == 0 && src->pub.next_input_byte == src->data) {
        ERREXIT(cinfo, JERR_INPUT_EMPTY);
        return FALSE;
    }
    if (src->pub.bytes_in_buffer) {
        if (!src->recover)
            return FALSE;
        /* "Go on" makes the caller re-read its last bytes. That normally
         * completes the current MCU within a few KB; on some damaged data
         * (a trailing 0xFF re-read as fill bytes) it would loop forever, as
         * TensorFlow does: past a bound, end the data with the fake EOI. */
        src->replayed += src->pub.bytes_in_buffer;
        if (src->replayed <= MAX_REPLAYED_BYTES)
            return TRUE;
        src->pub.bytes_in_buffer = 0;
    }
    if (src->pub.next_input_byte != fake_eoi && src->recover) {
        WARNMS(cinfo, JWRN_JPEG_EOF);
        src->pub.next_input_byte = fake_eoi;
        src->pub.bytes_in_buffer = 2;
        return TRUE;
    }
    src->exhausted = true; /* libjpeg says "Input file read error": the data ended */
    ERREXIT(cinfo, JERR_FILE_READ);
    return FALSE;
}

static void src_skip(j_decompress_ptr cinfo, long count)
{
    SourceMgr *src = (SourceMgr *)cinfo->src;
    if (count < 0)
        return;
    if ((unsigned long)count > src->pub.bytes_in_buffer) {
        src->pub.bytes_in_buffer = 0;
        (void)src_fill(cinfo); /* a fake EOI or an error */
    } else {
        src->pub.bytes_in_buffer -= (size_t)count;
        src->pub.next_input_byte += count;
    }
}

static void src_term(j_decompress_ptr cinfo)
{
    (void)cinfo;
}

/* Adobe's CMYK JPEGs store inverted values; TensorFlow converts either kind
 * with integer arithmetic, and so do we. */
static void cmyk_to_rgb(const JSAMPLE *in, uint8_t *out, JDIMENSION width, bool adobe)
{
    for (JDIMENSION i = 0; i < width; i++, in += 4, out += 3) {
        int c = in[0], m = in[1], y = in[2], k = in[3];
        if (adobe) {
            out[0] = (uint8_t)(k * c / 255);
            out[1] = (uint8_t)(k * m / 255);
            out[2] = (uint8_t)(k * y / 255);
        } else {
            out[0] = (uint8_t)((255 - k) * (255 - c) / 255);
            out[1] = (uint8_t)((255 - k) * (255 - m) / 255);
            out[2] = (uint8_t)((255 - k) * (255 - y) / 255);
        }
    }
}

#define ROWS_PER_CALL 16

/* The scale, in eighths, of a decode followed by a resize to at least
 * min_h x min_w (CvJpegOptions.min_height/min_width): when the target is
 * under half the image in both dimensions, the smallest of 1/8, 1/4 and 1/2
 * whose output (libjpeg rounds up) still covers it; otherwise 8, full size.
 * These are the scales whose IDCT libjpeg-turbo has in SIMD (TensorFlow's
 * `ratio` values); its 3/8 IDCT is plain C and measured no faster than the
 * 1/2 one (benchmarks/images.py --scaled-decode). */
static unsigned hint_eighths(JDIMENSION h, JDIMENSION w, int64_t min_h, int64_t min_w)
{
    if (min_h <= 0 || min_w <= 0 || min_h > ((int64_t)h - 1) / 2 || min_w > ((int64_t)w - 1) / 2)
        return 8;
    for (unsigned m = 1; m < 4; m *= 2)
        if (((int64_t)h * m + 7) / 8 >= min_h && ((int64_t)w * m + 7) / 8 >= min_w)
            return m;
    return 4; /* covers the target: it is under half the image */
}

/* The error and source managers of a zeroed Decoder; then cinfo is made.
 * Called right after the caller's setjmp (it may longjmp). */
static void decoder_create(Decoder *d, const uint8_t *data, size_t size, bool recover)
{
    struct jpeg_decompress_struct *ci = &d->cinfo;
    d->created = true; /* cinfo is zeroed, so destroying a half-made one is safe */
    jpeg_create_decompress(ci);
    d->src.pub.init_source = src_init;
    d->src.pub.fill_input_buffer = src_fill;
    d->src.pub.skip_input_data = src_skip;
    d->src.pub.resync_to_restart = jpeg_resync_to_restart;
    d->src.pub.term_source = src_term;
    d->src.data = data;
    d->src.size = size;
    d->src.recover = recover;
    ci->src = &d->src.pub;
}

static void decoder_errors(Decoder *d)
{
    d->cinfo.err = jpeg_std_error(&d->err.pub);
    d->err.pub.error_exit = on_error_exit;
    d->err.pub.emit_message = on_emit_message;
    d->err.pub.output_message = on_output_message;
}

/* Whether o's crop window lies inside an output of w x h (TensorFlow's
 * IsCropWindowValid). */
static bool crop_fits(const CvJpegOptions *o, JDIMENSION w, JDIMENSION h)
{
    return o->crop_width > 0 && o->crop_height > 0 && o->crop_x >= 0 && o->crop_y >= 0 &&
           o->crop_x + o->crop_width <= (int64_t)w && o->crop_y + o->crop_height <= (int64_t)h;
}

/* Everything that may longjmp. Returns false on failure: d->status set, or
 * libjpeg's message in d->err.message. `hint`: honour o's resize hint. */
static bool decode_steps(Decoder *d, const uint8_t *data, size_t size, const CvJpegOptions *o,
                         bool hint, CvTensor *out)
{
    struct jpeg_decompress_struct *ci = &d->cinfo;
    decoder_errors(d);
    if (setjmp(d->err.jump))
        return false;
    decoder_create(d, data, size, o->try_recover_truncated);
    if (jpeg_read_header(ci, TRUE) != JPEG_HEADER_OK) {
        d->status = cv_error(CV_INVALID_ARGUMENT,
                             "Invalid JPEG data: the data ends inside the header (%zu bytes)", size);
        return false;
    }

    int components = o->channels ? o->channels : (ci->num_components < 3 ? ci->num_components : 3);
    switch (components) {
    case 1:
        ci->out_color_space = JCS_GRAYSCALE;
        break;
    case 3:
        /* CMYK and YCCK decode to CMYK; we convert that to RGB below. */
        if (ci->jpeg_color_space == JCS_CMYK || ci->jpeg_color_space == JCS_YCCK)
            ci->out_color_space = JCS_CMYK;
        else
            ci->out_color_space = JCS_RGB;
        break;
    default:
        d->status = cv_error(CV_INVALID_ARGUMENT,
                             "Invalid JPEG data: an image with %d color components cannot be "
                             "decoded with channels=0; ask for channels=1 or 3",
                             ci->num_components);
        return false;
    }
    ci->do_fancy_upsampling = o->fancy_upscaling ? TRUE : FALSE;
    ci->scale_num = 1;
    ci->scale_denom = (unsigned)o->ratio;
    d->eighths = 8;
    if (hint && o->ratio == 1 && !o->crop) {
        d->eighths = hint_eighths(ci->image_height, ci->image_width, o->min_height, o->min_width);
        if (d->eighths < 8) {
            ci->scale_num = d->eighths;
            ci->scale_denom = 8;
        }
    }
    ci->dct_method = o->dct == CV_JPEG_DCT_ACCURATE ? JDCT_ISLOW : JDCT_IFAST;

    /* The bomb guard: from the header alone, before libjpeg or we allocate
     * image-sized memory (a progressive image's coefficients are
     * image-sized whatever the ratio). */
    int64_t pixels = (int64_t)ci->image_width * (int64_t)ci->image_height;
    if (o->max_pixels > 0 && pixels > o->max_pixels) {
        d->status = cv_error(CV_INVALID_ARGUMENT,
                             "JPEG image of %ux%u pixels (%lld) exceeds the limit of %lld pixels "
                             "(a decompression bomb?); raise it with "
                             "conveyor.io.set_max_image_pixels()",
                             (unsigned)ci->image_width, (unsigned)ci->image_height,
                             (long long)pixels, (long long)o->max_pixels);
        return false;
    }
    jpeg_calc_output_dimensions(ci);
    if (ci->output_width == 0 || ci->output_height == 0) {
        d->status = cv_error(CV_INVALID_ARGUMENT, "Invalid JPEG data: image size %ux%u",
                             (unsigned)ci->output_width, (unsigned)ci->output_height);
        return false;
    }
    /* A multi-scan (progressive) image is read whole here; running out of
     * data suspends it, which TensorFlow reports as a failure. */
    if (!jpeg_start_decompress(ci)) {
        d->status = cv_error(CV_INVALID_ARGUMENT,
                             "Invalid JPEG data: truncated: %s (the data ends before the last "
                             "scan; try_recover_truncated=True decodes what is there)",
                             d->err.warning[0] ? d->err.warning : "Premature end of JPEG file");
        return false;
    }

    /* The window: the whole image, or o's crop. jpeg_crop_scanline may widen
     * it leftwards to an iMCU boundary (its right edge stays): the `left`
     * extra columns of each decoded row are dropped here, as TensorFlow does. */
    JDIMENSION top = 0, left = 0, width = ci->output_width, height = ci->output_height;
    if (o->crop) {
        if (!crop_fits(o, ci->output_width, ci->output_height)) {
            d->status = cv_error(CV_INVALID_ARGUMENT,
                                 "Invalid JPEG data or crop window: the window [y=%lld, x=%lld, "
                                 "height=%lld, width=%lld] is not inside the %ux%u image",
                                 (long long)o->crop_y, (long long)o->crop_x,
                                 (long long)o->crop_height, (long long)o->crop_width,
                                 (unsigned)ci->output_height, (unsigned)ci->output_width);
            return false;
        }
        JDIMENSION x = (JDIMENSION)o->crop_x, w = (JDIMENSION)o->crop_width;
        jpeg_crop_scanline(ci, &x, &w);
        left = (JDIMENSION)o->crop_x - x;
        top = (JDIMENSION)o->crop_y;
        width = (JDIMENSION)o->crop_width;
        height = (JDIMENSION)o->crop_height;
        /* Entropy-decodes the rows above, no IDCT or color conversion. Data
         * that ends there fails (TensorFlow's skip comes up short), unless
         * the fake EOI of try_recover_truncated completed it. */
        if (top > 0 && (jpeg_skip_scanlines(ci, top) < top ||
                        (d->src.wanted_more && !o->try_recover_truncated))) {
            d->status = cv_error(CV_INVALID_ARGUMENT,
                                 "Invalid JPEG data: truncated: the data ends after %zu bytes, "
                                 "above the crop window (row %u)", size, (unsigned)top);
            return false;
        }
    }
    int64_t shape[3] = {height, width, components};
    CvStatus s = cv_tensor_alloc(out, CV_UINT8, 3, shape, 0, NULL);
    if (s) {
        d->status = s;
        return false;
    }
    uint8_t *base = (uint8_t *)out->data;
    d->stride = (size_t)width * (size_t)components;
    d->height = height;
    d->rows_read = height;
    const bool cmyk = ci->out_color_space == JCS_CMYK;
    const bool via_row = cmyk || ci->output_width != width; /* else straight into `out` */
    const size_t pixel = cmyk ? 4 : (size_t)components;
    /* A window widened leftwards: each row but the first is decoded in place
     * `left` pixels early, over the end of the row before it, whose bytes
     * there are kept aside and put back (a few bytes instead of a row's
     * copy). The first row goes through the row buffer. */
    uint8_t kept[128];
    const size_t keep = (size_t)left * pixel;
    const bool shifted = via_row && !cmyk && ci->output_width == width + left &&
                         keep <= sizeof(kept);
    if (via_row && !(d->row = malloc((size_t)ci->output_width * pixel))) {
        d->status = cv_error_nomem();
        return false;
    }
    const JDIMENSION end = top + height;
    bool suspended = false;
    while (ci->output_scanline < end) {
        JDIMENSION line = ci->output_scanline, n;
        uint8_t *dst = base + (size_t)(line - top) * d->stride;
        if (shifted && line > top) {
            JSAMPROW row = dst - keep;
            memcpy(kept, row, keep);
            n = jpeg_read_scanlines(ci, &row, 1);
            memcpy(row, kept, keep);
        } else if (via_row) {
            JSAMPROW row = d->row;
            n = jpeg_read_scanlines(ci, &row, 1);
            if (n && cmyk)
                cmyk_to_rgb(d->row + (size_t)left * 4, dst, width, ci->saw_Adobe_marker);
            else if (n)
                memcpy(dst, d->row + (size_t)left * pixel, d->stride);
        } else {
            /* Straight into the output tensor, several rows per call. */
            JSAMPROW rows[ROWS_PER_CALL];
            JDIMENSION want = end - line < ROWS_PER_CALL ? end - line : ROWS_PER_CALL;
            for (JDIMENSION i = 0; i < want; i++)
                rows[i] = dst + (size_t)i * d->stride;
            n = jpeg_read_scanlines(ci, rows, want);
        }
        if (n > 0)
            continue;
        /* The source suspended: the data ended. */
        if (!o->try_recover_truncated) {
            d->rows_read = line - top;
            suspended = true;
        } else {
            /* Repeat the last row (black when there is none), as TensorFlow does. */
            for (JDIMENSION r = line - top; r < height; r++) {
                uint8_t *row = base + (size_t)r * d->stride;
                if (r == 0)
                    memset(row, 0, d->stride);
                else
                    memcpy(row, row - d->stride, d->stride);
            }
            ci->output_scanline = end; /* lets jpeg_finish_decompress finish */
        }
        break;
    }
    /* A window above the bottom: stop there (TensorFlow reads on to the end). */
    if (ci->output_scanline < ci->output_height)
        suspended = true;
    if (suspended)
        jpeg_abort((j_common_ptr)ci);
    else
        (void)jpeg_finish_decompress(ci); /* may fail (longjmp) on damage after the image */
    return true;
}

/* One decode. With `hint`, *redo says that it used a reduced scale and
 * failed or ran out of data: out is then cleared, nothing is reported, and
 * the caller decodes again at full size, which decides. */
static CvStatus decode(const uint8_t *data, size_t size, const CvJpegOptions *o, bool hint,
                       CvTensor *out, bool *redo)
{
    *redo = false;
    Decoder *d = calloc(1, sizeof(*d));
    if (!d)
        return cv_error_nomem();
    d->eighths = 8;
    CvStatus status = CV_STATUS_OK;
    bool ok = decode_steps(d, data, size, o, hint, out);
    if (d->created)
        jpeg_destroy_decompress(&d->cinfo);
    free(d->row);
    if (hint && d->eighths < 8 && (!ok || d->src.wanted_more || d->rows_read < d->height)) {
        *redo = true;
        cv_status_free(d->status);
        goto error;
    }
    if (!ok) {
        if (d->status)
            status = d->status;
        else if (d->src.exhausted)
            status = cv_error(CV_INVALID_ARGUMENT, "Invalid JPEG data: truncated: the data ends after "
                              "%zu bytes, before the %s (Premature end of JPEG file)", size,
                              d->height ? "end of the image" : "end of its header");
        else
            status = cv_error(CV_INVALID_ARGUMENT, "Invalid JPEG data: %s", d->err.message);
        goto error;
    }
    if (d->rows_read < d->height) {
        float fraction = (float)d->rows_read / (float)d->height;
        float needed = o->acceptable_fraction < 1.0f ? o->acceptable_fraction : 1.0f;
        if (fraction < needed) {
            status = cv_error(CV_INVALID_ARGUMENT,
                              "Invalid JPEG data: truncated: %s: the data ends after row %lld of %lld "
                              "(acceptable_fraction=%g; try_recover_truncated=True fills the "
                              "missing rows)",
                              d->err.warning[0] ? d->err.warning : "Premature end of JPEG file",
                              (long long)d->rows_read, (long long)d->height,
                              (double)o->acceptable_fraction);
            goto error;
        }
        /* Rows that were never decoded are black. */
        memset(out->data + (size_t)d->rows_read * d->stride, 0,
               (size_t)(d->height - d->rows_read) * d->stride);
    }
    free(d);
    return CV_STATUS_OK;
error:
    free(d);
    cv_tensor_clear(out);
    return status;
}

/* The header alone; may longjmp. */
static bool header_steps(Decoder *d, const uint8_t *data, size_t size)
{
    decoder_errors(d);
    if (setjmp(d->err.jump))
        return false;
    decoder_create(d, data, size, false);
    return jpeg_read_header(&d->cinfo, TRUE) == JPEG_HEADER_OK;
}

CvStatus cv_jpeg_shape(const uint8_t *data, size_t size, int64_t shape[3])
{
    CvStatus status = CV_STATUS_OK;
    Decoder *d = size ? calloc(1, sizeof(*d)) : NULL;
    if (size == 0)
        return cv_error(CV_INVALID_ARGUMENT, "Invalid JPEG data, size 0: the data is empty");
    if (!d)
        return cv_error_nomem();
    if (header_steps(d, data, size)) {
        shape[0] = d->cinfo.image_height;
        shape[1] = d->cinfo.image_width;
        shape[2] = d->cinfo.num_components;
    } else {
        status = cv_error(CV_INVALID_ARGUMENT, "Invalid JPEG data, size %zu: %s", size,
                          d->src.exhausted || !d->err.message[0] ? "the data ends inside the header"
                                                                 : d->err.message);
    }
    if (d->created)
        jpeg_destroy_decompress(&d->cinfo);
    free(d);
    return status;
}

CvStatus cv_jpeg_decode(const uint8_t *data, size_t size, const CvJpegOptions *o, CvTensor *out)
{
    memset(out, 0, sizeof(*out));
    if (size == 0)
        return cv_error(CV_INVALID_ARGUMENT, "Input is empty.");
    if (size > INT_MAX)
        return cv_error(CV_INVALID_ARGUMENT, "Input contents are too large for int: %zu", size);
    if (o->ratio != 1 && o->ratio != 2 && o->ratio != 4 && o->ratio != 8)
        return cv_error(CV_INVALID_ARGUMENT, "ratio must be 1, 2, 4, or 8, got %d", o->ratio);
    if (o->channels != 0 && o->channels != 1 && o->channels != 3)
        return cv_error(CV_INVALID_ARGUMENT, "JPEG does not support %d channels", o->channels);
    bool hint = o->min_height > 0 && o->min_width > 0, redo;
    CvStatus s = decode(data, size, o, hint, out, &redo);
    if (redo)
        s = decode(data, size, o, false, out, &redo);
    return s;
}
