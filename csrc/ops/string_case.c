/* StringCase(input): each string of a string tensor in lower or upper case
 * (tf.strings.lower / upper). Without an encoding only ASCII letters change
 * and other bytes are kept. With encoding "utf-8" characters are mapped as
 * Unicode's full case mapping does for ASCII, Latin-1, Latin Extended-A,
 * basic Greek and Cyrillic (ß -> SS, İ -> i̇), other characters are kept,
 * each invalid sequence becomes U+FFFD, and the string ends at its first
 * NUL byte, as TensorFlow's ICU conversion does. Same shape.
 *
 * ints: [0] 1 for upper case, [1] 1 for utf-8. */
#include <string.h>

#include "ops/op.h"
#include "ops/utf8.h"
#include "ops/string_out.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { STRING_CASE_UPPER, STRING_CASE_UTF8, STRING_CASE_NUM_INTS };
static const char *const string_case_int_attrs[] = {"upper", "utf8", NULL};
CV_ATTR_NAMES_MATCH(string_case_int_attrs, STRING_CASE_NUM_INTS);

/* The case mapping of cp (upper or lower) into out (at most 2 code points);
 * returns how many. */
static int map_case(int32_t cp, bool upper, int32_t *out)
{
    out[0] = cp;
    if (upper) {
        if ((cp >= 'a' && cp <= 'z') || (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) ||
            (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) || (cp >= 0x430 && cp <= 0x44F))
            out[0] = cp - 32;
        else if (cp == 0xDF)
            return out[0] = 'S', out[1] = 'S', 2;
        else if (cp == 0xFF)
            out[0] = 0x178;
        else if (cp == 0xB5)
            out[0] = 0x39C;
        else if (cp == 0x131)
            out[0] = 'I';
        else if (cp == 0x17F)
            out[0] = 'S';
        else if (cp == 0x3C2)
            out[0] = 0x3A3;
        else if (cp >= 0x450 && cp <= 0x45F)
            out[0] = cp - 80;
        else if ((cp >= 0x100 && cp <= 0x137 && cp != 0x131) || (cp >= 0x14A && cp <= 0x177))
            out[0] = cp & ~1;
        else if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E))
            out[0] = cp % 2 == 0 ? cp - 1 : cp;
        return 1;
    }
    if ((cp >= 'A' && cp <= 'Z') || (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) ||
        (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) || (cp >= 0x410 && cp <= 0x42F))
        out[0] = cp + 32;
    else if (cp == 0x178)
        out[0] = 0xFF;
    else if (cp == 0x130)
        return out[0] = 'i', out[1] = 0x307, 2;
    else if (cp >= 0x400 && cp <= 0x40F)
        out[0] = cp + 80;
    else if ((cp >= 0x100 && cp <= 0x137 && cp != 0x130) || (cp >= 0x14A && cp <= 0x177))
        out[0] = cp | 1;
    else if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E))
        out[0] = cp % 2 == 1 ? cp + 1 : cp;
    return 1;
}

/* How many bytes of an invalid sequence at s[0..n) one U+FFFD replaces:
 * its maximal valid prefix (Unicode's recommended practice, ICU's), or 1. */
static size_t invalid_length(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    unsigned lo = 0x80, hi = 0xBF;
    size_t need = c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : 0;
    if (c == 0xE0)
        lo = 0xA0;
    else if (c == 0xED)
        hi = 0x9F;
    else if (c == 0xF0)
        lo = 0x90;
    else if (c == 0xF4)
        hi = 0x8F;
    size_t k = 1;
    if (need && k < n && s[k] >= lo && s[k] <= hi)
        for (k = 2; k <= need && k < n && (s[k] & 0xC0) == 0x80; k++)
            ;
    return k;
}

static int encode(int32_t cp, char *b)
{
    if (cp < 0x80)
        return b[0] = (char)cp, 1;
    if (cp < 0x800)
        return b[0] = (char)(0xC0 | (cp >> 6)), b[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000)
        return b[0] = (char)(0xE0 | (cp >> 12)), b[1] = (char)(0x80 | ((cp >> 6) & 0x3F)),
               b[2] = (char)(0x80 | (cp & 0x3F)), 3;
    return b[0] = (char)(0xF0 | (cp >> 18)), b[1] = (char)(0x80 | ((cp >> 12) & 0x3F)),
           b[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), b[3] = (char)(0x80 | (cp & 0x3F)), 4;
}

static CvStatus string_case_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    if (attrs->num_ints < STRING_CASE_NUM_INTS || in[0].dtype != CV_STRING)
        return cv_error(CV_INVALID_ARGUMENT, "StringCase needs strings and two ints");
    const bool upper = attrs->ints[STRING_CASE_UPPER] != 0;
    const bool utf8 = attrs->ints[STRING_CASE_UTF8] != 0;
    const int64_t n = cv_tensor_num_elements(&in[0]);
    CvStringOut o;
    CvStatus s = cv_string_out_init(&o, n);
    char buf[256];
    for (int64_t i = 0; !s && i < n; i++) {
        size_t len, k = 0;
        const unsigned char *t = (const unsigned char *)cv_string_at(&in[0], i, &len);
        if (utf8) { /* TensorFlow converts up to the first NUL byte */
            const unsigned char *nul = memchr(t, 0, len);
            len = nul ? (size_t)(nul - t) : len;
        }
        for (size_t p = 0; !s && p < len;) {
            if (!utf8) {
                unsigned char c = t[p++];
                buf[k++] = (char)(upper ? (c >= 'a' && c <= 'z' ? c - 32 : c)
                                        : (c >= 'A' && c <= 'Z' ? c + 32 : c));
            } else {
                int clen;
                int32_t cp = cv_utf8_decode(t + p, len - p, &clen), mapped[2];
                p += cp < 0 ? invalid_length(t + p, len - p) : (size_t)clen;
                int m = cp < 0 ? (mapped[0] = 0xFFFD, 1) : map_case(cp, upper, mapped);
                for (int j = 0; j < m; j++)
                    k += (size_t)encode(mapped[j], buf + k);
            }
            if (k > sizeof(buf) - 16 || p == len) {
                s = cv_string_out_append(&o, buf, k);
                k = 0;
            }
        }
        cv_string_out_end(&o);
    }
    if (!s)
        return cv_string_out_finish(&o, in[0].rank, in[0].shape, &out[0]);
    cv_string_out_free(&o);
    return s;
}

const CvOp cv_op_string_case = {
    .name = "StringCase", .min_inputs = 1, .max_inputs = 1, .run = string_case_run,
    .int_attrs = string_case_int_attrs};
