/* StringToNumber(strings): each string of a string tensor parsed as a number
 * (tf.strings.to_number); the output has the input's shape.
 *
 * ints: [0] output CvDtype: CV_FLOAT32, CV_FLOAT64, CV_INT32, CV_INT64,
 * CV_UINT32 or CV_UINT64.
 *
 * TensorFlow's rules: leading and trailing ASCII whitespace is allowed.
 * Integers are an optional sign (no minus for unsigned types) and decimal
 * digits, in range. Floats are
 * what C's strtof_l/strtod_l read in the "C" locale, whatever the process's
 * locale (decimal and hexadecimal
 * forms, inf, infinity, nan, nan(...), any case); float32 is rounded once
 * from the text; values beyond the type's range become +-inf and tiny ones
 * 0 or subnormals. Anything else (an empty string, a NUL byte, a second
 * number) is InvalidArgument naming the string. */
#include <errno.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#ifdef __APPLE__
#include <xlocale.h>
#endif

#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { TO_NUMBER_DTYPE, TO_NUMBER_NUM_INTS };
static const char *const to_number_int_attrs[] = {"dtype", NULL};
CV_ATTR_NAMES_MATCH(to_number_int_attrs, TO_NUMBER_NUM_INTS);

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* An integer from s[0..n) (no NUL inside): an optional sign, decimal digits
 * and blanks around; its magnitude at most `hi` (positive) or `neg_limit`
 * (negative; 0 refuses a minus sign, as TensorFlow's unsigned types do).
 * The value as its 64-bit two's complement bits, or false. */
static bool parse_int(const char *s, size_t n, uint64_t hi, uint64_t neg_limit, uint64_t *bits)
{
    size_t i = 0;
    while (i < n && is_blank(s[i]))
        i++;
    bool negative = false;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        negative = s[i++] == '-';
    if (negative && !neg_limit)
        return false;
    uint64_t limit = negative ? neg_limit : hi;
    uint64_t magnitude = 0;
    size_t digits = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
        uint64_t d = (uint64_t)(s[i] - '0');
        if (magnitude > (limit - d) / 10)
            return false;
        magnitude = magnitude * 10 + d;
    }
    while (i < n && is_blank(s[i]))
        i++;
    if (!digits || i != n)
        return false;
    *bits = negative ? ~magnitude + 1 : magnitude;
    return true;
}

/* A float or double from the NUL-terminated text (length n), or false;
 * `c_locale` is the "C" locale. */
static bool parse_float(const char *text, size_t n, bool single, locale_t c_locale,
                        double *value)
{
    char *end = NULL;
    errno = 0;
    if (single)
        *value = (double)strtof_l(text, &end, c_locale);
    else
        *value = strtod_l(text, &end, c_locale);
    if (end == text)
        return false;
    while (*end && is_blank(*end))
        end++;
    return end == text + n;
}

static CvStatus to_number_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                              CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    if (attrs->num_ints != TO_NUMBER_NUM_INTS)
        return cv_error(CV_INVALID_ARGUMENT, "StringToNumber: malformed attributes");
    CvDtype dtype = (CvDtype)attrs->ints[TO_NUMBER_DTYPE];
    if (dtype != CV_FLOAT32 && dtype != CV_FLOAT64 && dtype != CV_INT32 && dtype != CV_INT64 &&
        dtype != CV_UINT32 && dtype != CV_UINT64)
        return cv_error(CV_INVALID_ARGUMENT, "StringToNumber: unsupported out_type");
    if (in[0].dtype != CV_STRING)
        return cv_error(CV_INVALID_ARGUMENT, "StringToNumber needs strings, got %s",
                        cv_dtype_name(in[0].dtype));
    CvStatus st = cv_tensor_alloc(&out[0], dtype, in[0].rank, in[0].shape, 0, NULL);
    if (st)
        return st;
    const int64_t count = cv_tensor_num_elements(&in[0]);
    const CvStringRef *refs = (const CvStringRef *)in[0].data;
    char small[128], *text = small;
    size_t cap = sizeof(small);
    locale_t c_locale = (locale_t)0;
    if (dtype == CV_FLOAT32 || dtype == CV_FLOAT64) {
        c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
        if (!c_locale) {
            st = cv_error_nomem();
            goto cleanup;
        }
    }
    for (int64_t i = 0; i < count; i++) {
        const char *s = cv_string_data(&in[0], &refs[i]);
        size_t n = (size_t)refs[i].length;
        bool ok = !memchr(s, '\0', n);
        if (ok && dtype != CV_FLOAT32 && dtype != CV_FLOAT64) {
            uint64_t v = 0;
            if (dtype == CV_INT32)
                ok = parse_int(s, n, INT32_MAX, UINT64_C(1) << 31, &v);
            else if (dtype == CV_INT64)
                ok = parse_int(s, n, INT64_MAX, UINT64_C(1) << 63, &v);
            else
                ok = parse_int(s, n, dtype == CV_UINT32 ? UINT32_MAX : UINT64_MAX, 0, &v);
            if (ok && (dtype == CV_INT32 || dtype == CV_UINT32))
                ((uint32_t *)out[0].data)[i] = (uint32_t)v;
            else if (ok)
                ((uint64_t *)out[0].data)[i] = v;
        } else if (ok) {
            if (n >= cap) {
                char *bigger = text == small ? malloc(n + 1) : realloc(text, n + 1);
                if (!bigger) {
                    st = cv_error_nomem();
                    goto cleanup;
                }
                text = bigger;
                cap = n + 1;
            }
            memcpy(text, s, n);
            text[n] = '\0';
            double v = 0;
            ok = parse_float(text, n, dtype == CV_FLOAT32, c_locale, &v);
            if (ok && dtype == CV_FLOAT32)
                ((float *)out[0].data)[i] = (float)v;
            else if (ok)
                ((double *)out[0].data)[i] = v;
        }
        if (!ok) {
            const char *nul = memchr(s, '\0', n); /* the text up to a NUL, as TensorFlow's */
            size_t shown = nul ? (size_t)(nul - s) : n;
            if (shown > 1024)
                shown = 1024;
            st = cv_error(CV_INVALID_ARGUMENT,
                          "StringToNumberOp could not correctly convert string: %.*s", (int)shown, s);
            goto cleanup;
        }
    }
cleanup:
    if (c_locale)
        freelocale(c_locale);
    if (text != small)
        free(text);
    if (st)
        cv_tensor_clear(&out[0]);
    return st;
}

const CvOp cv_op_string_to_number = {
    .name = "StringToNumber", .min_inputs = 1, .max_inputs = 1, .run = to_number_run,
    .int_attrs = to_number_int_attrs};
