/* StringFormat(inputs...): a scalar string made of a template whose
 * placeholders are replaced by the inputs, in order (tf.strings.format).
 * A scalar prints as its value, a vector as "[a b c]", with only the first
 * and last `summarize` values around "..." when it has more than twice that
 * many (summarize < 0: all). Integers in decimal, bools as 1/0, floats as
 * the shortest of %.6g / %.9g (float16, float32) or %.15g / %.17g (float64)
 * that reads back the same value, strings in double quotes, C-escaped
 * (control bytes in octal, bytes from 0x80 as they are).
 * Inputs of rank 2 or more are refused (the Python layer says so first).
 *
 * string: the template's pieces between placeholders, each followed by a
 * NUL byte (one more piece than inputs); ints: [0] summarize, [1] the
 * string's length in bytes, its last NUL included. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "ops/string_out.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { STRING_FORMAT_SUMMARIZE, STRING_FORMAT_TEMPLATE_LENGTH, STRING_FORMAT_NUM_INTS };
static const char *const string_format_int_attrs[] = {"summarize", "template_length", NULL};
CV_ATTR_NAMES_MATCH(string_format_int_attrs, STRING_FORMAT_NUM_INTS);

static double float16_value(uint16_t h)
{
    int e = (h >> 10) & 0x1F, m = h & 0x3FF;
    double v = e == 0 ? m / 16777216.0 : e == 31 ? (m ? (double)NAN : (double)INFINITY)
                                                  : (1024 + m) * (double)(1 << e) / 33554432.0;
    return (h & 0x8000) ? -v : v;
}

static CvStatus append_value(CvStringOut *o, const CvTensor *t, int64_t i)
{
    char buf[64];
    int n = 0;
    switch (t->dtype) {
    case CV_BOOL:
        n = snprintf(buf, sizeof(buf), "%d", ((const bool *)t->data)[i] ? 1 : 0);
        break;
    case CV_INT8: n = snprintf(buf, sizeof(buf), "%d", ((const int8_t *)t->data)[i]); break;
    case CV_INT16: n = snprintf(buf, sizeof(buf), "%d", ((const int16_t *)t->data)[i]); break;
    case CV_INT32: n = snprintf(buf, sizeof(buf), "%d", ((const int32_t *)t->data)[i]); break;
    case CV_INT64:
        n = snprintf(buf, sizeof(buf), "%lld", (long long)((const int64_t *)t->data)[i]);
        break;
    case CV_UINT8: n = snprintf(buf, sizeof(buf), "%u", ((const uint8_t *)t->data)[i]); break;
    case CV_UINT16: n = snprintf(buf, sizeof(buf), "%u", ((const uint16_t *)t->data)[i]); break;
    case CV_UINT32: n = snprintf(buf, sizeof(buf), "%u", ((const uint32_t *)t->data)[i]); break;
    case CV_UINT64:
        n = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)((const uint64_t *)t->data)[i]);
        break;
    case CV_FLOAT16:
    case CV_FLOAT32: {
        float v = t->dtype == CV_FLOAT32 ? ((const float *)t->data)[i]
                                         : (float)float16_value(((const uint16_t *)t->data)[i]);
        n = snprintf(buf, sizeof(buf), "%.6g", (double)v);
        if (isfinite(v) && strtof(buf, NULL) != v)
            n = snprintf(buf, sizeof(buf), "%.9g", (double)v);
        break;
    }
    case CV_FLOAT64: {
        double v = ((const double *)t->data)[i];
        n = snprintf(buf, sizeof(buf), "%.15g", v);
        if (isfinite(v) && strtod(buf, NULL) != v)
            n = snprintf(buf, sizeof(buf), "%.17g", v);
        break;
    }
    default: { /* a string: quoted, C-escaped (octal for control bytes) */
        size_t len;
        const unsigned char *s = (const unsigned char *)cv_string_at(t, i, &len);
        CvStatus st = cv_string_out_append(o, "\"", 1);
        for (size_t k = 0; !st && k < len; k++) {
            unsigned c = s[k];
            const char *esc = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t"
                              : c == '"' ? "\\\"" : c == '\'' ? "\\'" : c == '\\' ? "\\\\" : NULL;
            if (esc) {
                st = cv_string_out_append(o, esc, 2);
            } else if (c < 0x20 || c == 0x7F) { /* bytes >= 0x80 stay, as in TensorFlow */
                n = snprintf(buf, sizeof(buf), "\\%03o", c);
                st = cv_string_out_append(o, buf, (size_t)n);
            } else {
                st = cv_string_out_append(o, (const char *)s + k, 1);
            }
        }
        return st ? st : cv_string_out_append(o, "\"", 1);
    }
    }
    return cv_string_out_append(o, buf, n > 0 ? (size_t)n : 0);
}

static CvStatus append_tensor(CvStringOut *o, const CvTensor *t, int64_t summarize)
{
    if (t->rank == 0)
        return append_value(o, t, 0);
    const int64_t n = t->shape[0];
    const bool cut = summarize >= 0 && n > 2 * summarize;
    CvStatus s = cv_string_out_append(o, "[", 1);
    for (int64_t i = 0; !s && i < n; i++) {
        if (cut && i == summarize) {
            s = cv_string_out_append(o, " ...", 4);
            i = n - summarize - 1;
            continue;
        }
        if (i > 0)
            s = cv_string_out_append(o, " ", 1);
        if (!s)
            s = append_value(o, t, i);
    }
    return s ? s : cv_string_out_append(o, "]", 1);
}

static CvStatus string_format_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                  CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_out;
    (void)ctx;
    if (!attrs->string || attrs->num_ints < STRING_FORMAT_NUM_INTS ||
        attrs->ints[STRING_FORMAT_TEMPLATE_LENGTH] < 1)
        return cv_error(CV_INVALID_ARGUMENT, "StringFormat needs a template");
    for (int k = 0; k < num_in; k++)
        if (in[k].rank > 1)
            return cv_error(CV_UNIMPLEMENTED, "StringFormat: inputs of rank %d are not supported",
                            in[k].rank);
    CvStringOut o;
    CvStatus s = cv_string_out_init(&o, 1);
    const char *piece = attrs->string;
    const char *end = attrs->string + attrs->ints[STRING_FORMAT_TEMPLATE_LENGTH] - 1;
    for (int k = 0; !s && k <= num_in; k++) {
        if (piece > end) { /* fewer pieces than inputs + 1 */
            s = cv_error(CV_INVALID_ARGUMENT, "StringFormat: %d inputs for the template's %d "
                         "placeholders", num_in, k - 1);
            break;
        }
        size_t len = strlen(piece);
        s = cv_string_out_append(&o, piece, len);
        piece += len + 1;
        if (!s && k < num_in)
            s = append_tensor(&o, &in[k], attrs->ints[STRING_FORMAT_SUMMARIZE]);
    }
    cv_string_out_end(&o);
    if (!s)
        return cv_string_out_finish(&o, 0, NULL, &out[0]);
    cv_string_out_free(&o);
    return s;
}

const CvOp cv_op_string_format = {
    .name = "StringFormat", .min_inputs = 0, .max_inputs = CV_OP_MAX_ARITY, .run = string_format_run,
    .int_attrs = string_format_int_attrs};
