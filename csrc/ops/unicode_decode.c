/* UnicodeDecode(input): the characters of a scalar UTF-8 string
 * (tf.strings.unicode_decode, tf.strings.unicode_split), as a 1-D int32
 * tensor of code points or as a 1-D string tensor of one string per
 * character.
 *
 * ints: [0] errors (0 strict, 1 replace, 2 ignore), [1] replacement_char
 * (0..0x10FFFF), [2] replace_control_characters, [3] output (0 code
 * points, 1 strings).
 *
 * An invalid sequence is its maximal subpart (the longest prefix of a valid
 * UTF-8 sequence there, at least one byte: Unicode's recommended practice,
 * which TensorFlow follows): "replace" gives one replacement_char for it,
 * "ignore" drops it, "strict" fails with InvalidArgument. Surrogates
 * (ED A0..BF) and overlong forms are invalid. With
 * replace_control_characters, U+0000..U+001F become replacement_char
 * (dropped with "ignore"; replaced with "strict" too, as TensorFlow). As
 * strings, a valid character is its own bytes and a replacement is
 * replacement_char in UTF-8 (U+FFFD for a surrogate). The output has its own
 * buffer. Inputs of other ranks are InvalidArgument. */
#include <string.h>

#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { UNICODE_DECODE_ERRORS, UNICODE_DECODE_REPLACEMENT_CHAR,
    UNICODE_DECODE_REPLACE_CONTROL_CHARACTERS, UNICODE_DECODE_OUTPUT_STRINGS,
    UNICODE_DECODE_NUM_INTS };
static const char *const unicode_decode_int_attrs[] = {"errors", "replacement_char",
    "replace_control_characters", "output_strings", NULL};
CV_ATTR_NAMES_MATCH(unicode_decode_int_attrs, UNICODE_DECODE_NUM_INTS);

enum { ERRORS_STRICT = 0, ERRORS_REPLACE = 1, ERRORS_IGNORE = 2 };

/* Decode one character at s[0..n) (n >= 1): its code point, or -1 for an
 * invalid sequence; *len is the bytes it spans (the maximal subpart). */
static int32_t decode_one(const unsigned char *s, size_t n, size_t *len)
{
    unsigned char b = s[0];
    *len = 1;
    if (b < 0x80)
        return b;
    int need;
    int32_t cp;
    unsigned char lo = 0x80, hi = 0xBF; /* the range of the second byte */
    if (b >= 0xC2 && b <= 0xDF) {
        need = 1;
        cp = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 2;
        cp = b & 0x0F;
        if (b == 0xE0)
            lo = 0xA0;
        else if (b == 0xED)
            hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3;
        cp = b & 0x07;
        if (b == 0xF0)
            lo = 0x90;
        else if (b == 0xF4)
            hi = 0x8F;
    } else {
        return -1;
    }
    for (int k = 1; k <= need; k++) {
        if ((size_t)k >= n)
            return -1;
        unsigned char c = s[k];
        if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF))
            return -1;
        cp = (cp << 6) | (c & 0x3F);
        *len = (size_t)k + 1;
    }
    return cp;
}

/* cp in UTF-8 into out (4 bytes); its length. A surrogate or a value out of
 * range is written as U+FFFD. */
static size_t encode_one(int32_t cp, char *out)
{
    if (cp < 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        cp = 0xFFFD;
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

typedef struct {
    int errors;
    int32_t replacement;
    bool controls;
} Decoding;

/* Walk s: with codes/refs NULL only count the characters (or fail on
 * strict); else store each one. Replacements point at `repl_offset`. */
static CvStatus walk(const Decoding *d, const unsigned char *s, size_t n, int64_t *count,
                     int32_t *codes, CvStringRef *refs, uint64_t base, uint64_t repl_offset,
                     uint64_t repl_len)
{
    int64_t k = 0;
    size_t pos = 0;
    while (pos < n) {
        size_t len;
        int32_t cp = decode_one(s + pos, n - pos, &len);
        if (cp < 0 && d->errors == ERRORS_STRICT)
            return cv_error(CV_INVALID_ARGUMENT, "Invalid formatting on input string");
        bool bad = cp < 0 || (d->controls && cp < 0x20);
        if (!bad || d->errors != ERRORS_IGNORE) {
            if (codes)
                codes[k] = bad ? d->replacement : cp;
            if (refs) {
                refs[k].offset = bad ? repl_offset : base + pos;
                refs[k].length = bad ? repl_len : len;
            }
            k++;
        }
        pos += len;
    }
    *count = k;
    return CV_STATUS_OK;
}

static CvStatus decode_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                           CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const int64_t *a = attrs->ints;
    if (attrs->num_ints != UNICODE_DECODE_NUM_INTS || a[UNICODE_DECODE_ERRORS] < ERRORS_STRICT ||
        a[UNICODE_DECODE_ERRORS] > ERRORS_IGNORE || a[UNICODE_DECODE_REPLACEMENT_CHAR] < 0 ||
        a[UNICODE_DECODE_REPLACEMENT_CHAR] > 0x10FFFF)
        return cv_error(CV_INVALID_ARGUMENT, "UnicodeDecode: malformed attributes");
    Decoding d = {(int)a[UNICODE_DECODE_ERRORS], (int32_t)a[UNICODE_DECODE_REPLACEMENT_CHAR],
                  a[UNICODE_DECODE_REPLACE_CONTROL_CHARACTERS] != 0};
    bool strings = a[UNICODE_DECODE_OUTPUT_STRINGS] != 0;
    if (in[0].dtype != CV_STRING || in[0].rank != 0) {
        char shape[64];
        return cv_error(CV_INVALID_ARGUMENT,
                        "UnicodeDecode: input must be a scalar string in conveyor (TensorFlow "
                        "gives a RaggedTensor for rank >= 1), got %s of shape %s",
                        cv_dtype_name(in[0].dtype),
                        cv_shape_str(in[0].shape, in[0].rank, shape, sizeof(shape)));
    }
    const CvStringRef *ref = (const CvStringRef *)in[0].data;
    const unsigned char *s = (const unsigned char *)cv_string_data(&in[0], ref);
    size_t n = (size_t)ref->length;
    int64_t count = 0;
    CvStatus st = walk(&d, s, n, &count, NULL, NULL, 0, 0, 0);
    if (st)
        return st;
    if (!strings) {
        if ((st = cv_tensor_alloc(&out[0], CV_INT32, 1, &count, 0, NULL)))
            return st;
        return walk(&d, s, n, &count, (int32_t *)out[0].data, NULL, 0, 0, 0);
    }
    char repl[4];
    size_t repl_len = encode_one(d.replacement, repl);
    char *blob = NULL;
    if ((st = cv_tensor_alloc(&out[0], CV_STRING, 1, &count, n + repl_len, &blob)))
        return st;
    if (n)
        memcpy(blob, s, n);
    memcpy(blob + n, repl, repl_len);
    uint64_t base = (uint64_t)(blob - out[0].buf->data);
    return walk(&d, s, n, &count, NULL, (CvStringRef *)out[0].data, base, base + n, repl_len);
}

const CvOp cv_op_unicode_decode = {
    .name = "UnicodeDecode", .min_inputs = 1, .max_inputs = 1, .run = decode_run,
    .int_attrs = unicode_decode_int_attrs};
