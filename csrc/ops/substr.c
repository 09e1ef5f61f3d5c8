/* Substr(input, pos, len): a substring of each string of a string tensor
 * (tf.strings.substr). pos and len are int32 or int64 tensors of one shape
 * that broadcasts with the input's; the output has the broadcast shape.
 * pos counts from the end when negative; a pos outside [-size, size] is an
 * InvalidArgumentError; the substring is cut at the string's end (a
 * negative len takes the rest in bytes, nothing in characters, as in
 * TensorFlow). Units are bytes, or UTF-8 characters (a
 * character starts at each byte that is not a continuation byte, as
 * TensorFlow counts them).
 *
 * ints: [0] 1 for unit "UTF8_CHAR". */
#include "ops/broadcast.h"
#include "ops/op.h"
#include "ops/string_out.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { SUBSTR_UTF8, SUBSTR_NUM_INTS };
static const char *const substr_int_attrs[] = {"utf8", NULL};
CV_ATTR_NAMES_MATCH(substr_int_attrs, SUBSTR_NUM_INTS);

static int64_t int_at(const CvTensor *t, int64_t i)
{
    return t->dtype == CV_INT32 ? ((const int32_t *)t->data)[i] : ((const int64_t *)t->data)[i];
}

/* Byte offset of character `k` of s[0..n) (n when past the end). */
static size_t char_offset(const unsigned char *s, size_t n, int64_t k)
{
    size_t p = 0;
    for (; k > 0 && p < n; k--)
        for (p++; p < n && (s[p] & 0xC0) == 0x80; p++)
            ;
    return p;
}

static CvStatus substr_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                           int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *a = &in[0], *b = &in[1];
    if (attrs->num_ints < SUBSTR_NUM_INTS || a->dtype != CV_STRING ||
        (b->dtype != CV_INT32 && b->dtype != CV_INT64) || in[2].dtype != b->dtype ||
        !cv_tensor_same_shape(b, &in[2]))
        return cv_error(CV_INVALID_ARGUMENT, "Substr needs strings and int pos and len of one "
                                             "shape and dtype");
    const bool utf8 = attrs->ints[SUBSTR_UTF8] != 0;
    CvBroadcast bc;
    CvStatus bs = cv_broadcast_init(&bc, a, b);
    if (bs)
        return bs;
    int64_t n = 1;
    for (int i = 0; i < bc.rank; i++)
        n *= bc.shape[i];
    CvStringOut o;
    CvStatus s = cv_string_out_init(&o, n);
    for (int64_t i = 0; !s && i < n; i++) {
        size_t bytes;
        const unsigned char *t = (const unsigned char *)cv_string_at(a, bc.oa, &bytes);
        int64_t size = (int64_t)bytes;
        if (utf8) {
            size = 0;
            for (size_t k = 0; k < bytes; k++)
                size += (t[k] & 0xC0) != 0x80;
        }
        int64_t pos = int_at(b, bc.ob), len = int_at(&in[2], bc.ob);
        if (pos < -size || pos > size) {
            s = cv_error(CV_INVALID_ARGUMENT, "pos %lld out of range for string b'%.*s' at "
                         "index %lld", (long long)pos, (int)(bytes > 64 ? 64 : bytes),
                         (const char *)t, (long long)i);
            break;
        }
        if (pos < 0)
            pos += size;
        if (utf8 && len < 0)
            len = 0;
        if (len < 0 || len > size - pos)
            len = size - pos;
        size_t from = (size_t)pos, to = (size_t)(pos + len);
        if (utf8) {
            from = char_offset(t, bytes, pos);
            to = from + char_offset(t + from, bytes - from, len);
        }
        s = cv_string_out_append(&o, (const char *)t + from, to - from);
        cv_string_out_end(&o);
        cv_broadcast_next(&bc);
    }
    if (!s)
        return cv_string_out_finish(&o, bc.rank, bc.shape, &out[0]);
    cv_string_out_free(&o);
    return s;
}

const CvOp cv_op_substr = {
    .name = "Substr", .min_inputs = 3, .max_inputs = 3, .run = substr_run,
    .int_attrs = substr_int_attrs};
