/* AsString(input): each number or bool of a tensor as text
 * (tf.strings.as_string), printf-style: integers in decimal, floats
 * (float16 and float32 widened to double) with "%f", "%e" (scientific) or
 * "%g" (shortest) at `precision` digits (-1: printf's default), bools as
 * "true" / "false"; numbers padded to `width` (-1: none) with `fill` (a
 * printf flag: '0', ' ', '-', '+' or '#'; 0 for none). Strings pass through.
 *
 * ints: [0] precision, [1] scientific, [2] shortest, [3] width, [4] fill. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "ops/string_out.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { AS_STRING_PRECISION, AS_STRING_SCIENTIFIC, AS_STRING_SHORTEST, AS_STRING_WIDTH,
    AS_STRING_FILL, AS_STRING_NUM_INTS };
static const char *const as_string_int_attrs[] = {"precision", "scientific", "shortest", "width",
    "fill", NULL};
CV_ATTR_NAMES_MATCH(as_string_int_attrs, AS_STRING_NUM_INTS);

static double float_at(const CvTensor *t, int64_t i)
{
    if (t->dtype == CV_FLOAT64)
        return ((const double *)t->data)[i];
    if (t->dtype == CV_FLOAT32)
        return ((const float *)t->data)[i];
    uint16_t h = ((const uint16_t *)t->data)[i]; /* float16 */
    int e = (h >> 10) & 0x1F, m = h & 0x3FF;
    double v = e == 0 ? m / 16777216.0 : e == 31 ? (m ? (double)NAN : (double)INFINITY)
                                                  : (1024 + m) * (double)(1 << e) / 33554432.0;
    return (h & 0x8000) ? -v : v;
}

static CvStatus as_string_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                              CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *x = &in[0];
    if (attrs->num_ints < AS_STRING_NUM_INTS)
        return cv_error(CV_INVALID_ARGUMENT, "AsString needs five ints");
    if (x->dtype == CV_STRING) {
        cv_tensor_copy_ref(&out[0], x);
        return CV_STATUS_OK;
    }
    const int64_t precision = attrs->ints[AS_STRING_PRECISION];
    const int64_t width = attrs->ints[AS_STRING_WIDTH], fill = attrs->ints[AS_STRING_FILL];
    if (precision > 1000 || width > (1 << 20) || (fill && !strchr("0 -+#", (int)fill)))
        return cv_error(CV_INVALID_ARGUMENT, "AsString: precision, width or fill out of range");
    const bool is_float = x->dtype == CV_FLOAT16 || x->dtype == CV_FLOAT32 ||
                          x->dtype == CV_FLOAT64;
    const bool is_signed = x->dtype == CV_INT8 || x->dtype == CV_INT16 ||
                           x->dtype == CV_INT32 || x->dtype == CV_INT64;
    char format[64] = "%", *f = format + 1;
    if (fill && x->dtype != CV_BOOL)
        *f++ = (char)fill;
    if (width >= 0 && x->dtype != CV_BOOL)
        f += snprintf(f, 16, "%lld", (long long)width);
    if (is_float) {
        if (precision >= 0)
            f += snprintf(f, 16, ".%lld", (long long)precision);
        *f++ = attrs->ints[AS_STRING_SCIENTIFIC] ? 'e'
               : attrs->ints[AS_STRING_SHORTEST] ? 'g'
                                                 : 'f';
    } else if (x->dtype == CV_BOOL) {
        *f++ = 's';
    } else {
        memcpy(f, is_signed ? "lld" : "llu", 3);
        f += 3;
    }
    *f = '\0';
    const int64_t n = cv_tensor_num_elements(x);
    CvStringOut o;
    CvStatus s = cv_string_out_init(&o, n);
    char small[512];
    for (int64_t i = 0; !s && i < n; i++) {
        int len;
        char *buf = small;
        for (int attempt = 0; attempt < 2; attempt++) {
            size_t size = attempt ? (size_t)len + 1 : sizeof(small);
            if (attempt && !(buf = malloc(size))) {
                s = cv_error_nomem();
                break;
            }
            if (is_float) {
                len = snprintf(buf, size, format, float_at(x, i));
            } else if (x->dtype == CV_BOOL) {
                len = snprintf(buf, size, format, ((const bool *)x->data)[i] ? "true" : "false");
            } else if (is_signed) {
                long long v = x->dtype == CV_INT8    ? ((const int8_t *)x->data)[i]
                              : x->dtype == CV_INT16 ? ((const int16_t *)x->data)[i]
                              : x->dtype == CV_INT32 ? ((const int32_t *)x->data)[i]
                                                     : ((const int64_t *)x->data)[i];
                len = snprintf(buf, size, format, v);
            } else {
                unsigned long long v = x->dtype == CV_UINT8    ? ((const uint8_t *)x->data)[i]
                                       : x->dtype == CV_UINT16 ? ((const uint16_t *)x->data)[i]
                                       : x->dtype == CV_UINT32 ? ((const uint32_t *)x->data)[i]
                                                               : ((const uint64_t *)x->data)[i];
                len = snprintf(buf, size, format, v);
            }
            if (len < 0) {
                s = cv_error(CV_INVALID_ARGUMENT, "AsString: formatting failed");
                break;
            }
            if ((size_t)len < size)
                break;
        }
        if (!s)
            s = cv_string_out_append(&o, buf, (size_t)len);
        if (buf != small)
            free(buf);
        cv_string_out_end(&o);
    }
    if (!s)
        return cv_string_out_finish(&o, x->rank, x->shape, &out[0]);
    cv_string_out_free(&o);
    return s;
}

const CvOp cv_op_as_string = {
    .name = "AsString", .min_inputs = 1, .max_inputs = 1, .run = as_string_run,
    .int_attrs = as_string_int_attrs};
