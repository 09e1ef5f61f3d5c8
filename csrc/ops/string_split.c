/* StringSplitV2(input[, sep]): the pieces of a scalar string as a 1-D
 * string tensor (tf.strings.split on a scalar, tf.strings.bytes_split).
 *
 * ints: [0] mode, [1] maxsplit (< 0: no limit; modes 0 and 1 only).
 * Mode 0 splits on runs of ASCII whitespace (" \t\n\v\f\r"), dropping empty
 * pieces; with maxsplit k > 0, after the k-th piece the rest of the string
 * (from the next non-blank byte, possibly empty) is one last piece, and
 * maxsplit 0 gives the whole string, as TensorFlow does. Mode 1 splits on
 * the bytes of the second input (a non-empty scalar string), keeping empty
 * pieces, at most maxsplit times (Python's str.split). Mode 2 gives one
 * piece per byte (bytes_split). The pieces are copied into the output's own
 * buffer (one copy of the input's bytes that all pieces point into).
 * Inputs of other ranks are InvalidArgument (the Python layer refuses them
 * earlier: TensorFlow gives a RaggedTensor). */
#include <string.h>

#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { STRING_SPLIT_MODE, STRING_SPLIT_MAXSPLIT, STRING_SPLIT_NUM_INTS };
static const char *const string_split_int_attrs[] = {"mode", "maxsplit", NULL};
CV_ATTR_NAMES_MATCH(string_split_int_attrs, STRING_SPLIT_NUM_INTS);

enum { SPLIT_WHITESPACE = 0, SPLIT_SEPARATOR = 1, SPLIT_BYTES = 2 };

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* The start of the first occurrence of sep (m >= 1 bytes) in s[from, n), or n. */
static size_t find_sep(const char *s, size_t n, size_t from, const char *sep, size_t m)
{
    while (from + m <= n) {
        const char *hit = memchr(s + from, sep[0], n - from - m + 1);
        if (!hit)
            break;
        size_t at = (size_t)(hit - s);
        if (memcmp(hit, sep, m) == 0)
            return at;
        from = at + 1;
    }
    return n;
}

/* Visit the pieces of s: with refs NULL only count them; else store each as
 * (base + start, length). Returns the number of pieces. */
static int64_t split_pieces(const char *s, size_t n, int mode, const char *sep, size_t m,
                            int64_t maxsplit, CvStringRef *refs, uint64_t base)
{
    int64_t count = 0;
#define PIECE(start, len)                                                                        \
    do {                                                                                         \
        if (refs) {                                                                              \
            refs[count].offset = base + (uint64_t)(start);                                       \
            refs[count].length = (uint64_t)(len);                                                \
        }                                                                                        \
        count++;                                                                                 \
    } while (0)
    if (mode == SPLIT_BYTES) {
        for (size_t i = 0; i < n; i++)
            PIECE(i, 1);
    } else if (mode == SPLIT_SEPARATOR) {
        size_t pos = 0;
        for (;;) {
            size_t at = maxsplit >= 0 && count >= maxsplit ? n : find_sep(s, n, pos, sep, m);
            PIECE(pos, at - pos);
            if (at == n)
                break;
            pos = at + m;
        }
    } else if (maxsplit == 0) {
        PIECE(0, n);
    } else {
        size_t pos = 0;
        while (pos < n && is_blank(s[pos]))
            pos++;
        while (pos < n) {
            size_t end = pos;
            while (end < n && !is_blank(s[end]))
                end++;
            PIECE(pos, end - pos);
            pos = end;
            while (pos < n && is_blank(s[pos]))
                pos++;
            if (maxsplit > 0 && count == maxsplit) {
                PIECE(pos, n - pos);
                break;
            }
        }
    }
#undef PIECE
    return count;
}

static CvStatus split_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                          int num_out, CvOpContext *ctx)
{
    (void)num_out;
    (void)ctx;
    if (attrs->num_ints != STRING_SPLIT_NUM_INTS ||
        attrs->ints[STRING_SPLIT_MODE] < SPLIT_WHITESPACE ||
        attrs->ints[STRING_SPLIT_MODE] > SPLIT_BYTES)
        return cv_error(CV_INVALID_ARGUMENT, "StringSplitV2: malformed attributes");
    int mode = (int)attrs->ints[STRING_SPLIT_MODE];
    int64_t maxsplit = attrs->ints[STRING_SPLIT_MAXSPLIT];
    if (in[0].dtype != CV_STRING || in[0].rank != 0) {
        char shape[64];
        return cv_error(CV_INVALID_ARGUMENT,
                        "StringSplitV2: input must be a scalar string in conveyor (TensorFlow "
                        "gives a RaggedTensor for rank >= 1), got %s of shape %s",
                        cv_dtype_name(in[0].dtype),
                        cv_shape_str(in[0].shape, in[0].rank, shape, sizeof(shape)));
    }
    const CvStringRef *ref = (const CvStringRef *)in[0].data;
    const char *s = cv_string_data(&in[0], ref);
    size_t n = (size_t)ref->length;
    const char *sep = NULL;
    size_t m = 0;
    if (mode == SPLIT_SEPARATOR) {
        if (num_in < 2 || in[1].dtype != CV_STRING || in[1].rank != 0)
            return cv_error(CV_INVALID_ARGUMENT, "StringSplitV2: sep must be a scalar string");
        const CvStringRef *sref = (const CvStringRef *)in[1].data;
        sep = cv_string_data(&in[1], sref);
        m = (size_t)sref->length;
        if (m == 0)
            mode = SPLIT_WHITESPACE; /* TensorFlow: an empty sep splits on whitespace */
    }
    int64_t count = split_pieces(s, n, mode, sep, m, maxsplit, NULL, 0);
    char *blob = NULL;
    CvStatus st = cv_tensor_alloc(&out[0], CV_STRING, 1, &count, n, &blob);
    if (st)
        return st;
    if (n)
        memcpy(blob, s, n);
    split_pieces(s, n, mode, sep, m, maxsplit, (CvStringRef *)out[0].data,
                 (uint64_t)(blob - out[0].buf->data));
    return CV_STATUS_OK;
}

const CvOp cv_op_string_split = {
    .name = "StringSplitV2", .min_inputs = 1, .max_inputs = 2, .run = split_run,
    .int_attrs = string_split_int_attrs};
