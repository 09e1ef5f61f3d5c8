/* Base64(input): tf.io.encode_base64 / decode_base64 of each string of a
 * string tensor, in the web-safe alphabet (A-Z a-z 0-9 - _) TensorFlow uses.
 * ints: [decode, pad]: encoding pads to a multiple of 4 with '=' only with
 * `pad`; decoding accepts full padding or none; any other character, a
 * misplaced or partial '=' padding, or a length of 4k + 1 is InvalidArgument (the
 * element's index is named). The output tensor has the input's shape. */
#include "ops/op.h"
#include "ops/string_out.h"

/* Attribute slots, named in this order (CvOp.int_attrs). */
enum { BASE64_DECODE, BASE64_PAD, BASE64_NUM_INTS };
static const char *const base64_int_attrs[] = {"decode", "pad", NULL};
CV_ATTR_NAMES_MATCH(base64_int_attrs, BASE64_NUM_INTS);

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static int sextet(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '-' ? 62 : c == '_' ? 63 : -1;
}

static CvStatus encode(CvStringOut *o, const unsigned char *p, size_t n, bool pad)
{
    CvStatus s = CV_STATUS_OK;
    for (size_t i = 0; i < n && !s; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        size_t left = n - i;
        if (left > 1)
            v |= (uint32_t)p[i + 1] << 8;
        if (left > 2)
            v |= p[i + 2];
        char q[4] = {alphabet[v >> 18], alphabet[(v >> 12) & 63], alphabet[(v >> 6) & 63],
                     alphabet[v & 63]};
        size_t keep = left >= 3 ? 4 : left + 1;
        if (pad)
            for (size_t k = keep; k < 4; k++)
                q[k] = '=';
        s = cv_string_out_append(o, q, pad ? 4 : keep);
    }
    return s;
}

static CvStatus decode(CvStringOut *o, const unsigned char *p, size_t n, int64_t index)
{
    size_t pads = 0;
    while (n > 0 && p[n - 1] == '=') { /* padding: 1 or 2 '=' ending a multiple of 4 */
        n--;
        pads++;
    }
    if (n % 4 == 1 || pads > 2 || (pads && (n + pads) % 4 != 0))
        return cv_error(CV_INVALID_ARGUMENT, "Invalid base64 length at element %lld",
                        (long long)index);
    CvStatus s = CV_STATUS_OK;
    for (size_t i = 0; i < n && !s; i += 4) {
        size_t take = n - i < 4 ? n - i : 4;
        uint32_t v = 0;
        for (size_t k = 0; k < 4; k++) {
            int x = k < take ? sextet(p[i + k]) : 0;
            if (x < 0)
                return cv_error(CV_INVALID_ARGUMENT, "Invalid character found in base64 at "
                                "element %lld", (long long)index);
            v = v << 6 | (uint32_t)x;
        }
        char b[3] = {(char)(v >> 16), (char)(v >> 8), (char)v};
        s = cv_string_out_append(o, b, take - 1);
    }
    return s;
}

static CvStatus base64_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                           int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    if (attrs->num_ints != BASE64_NUM_INTS || in[0].dtype != CV_STRING)
        return cv_error(CV_INVALID_ARGUMENT, "Base64 needs a string tensor");
    int64_t n = cv_tensor_num_elements(&in[0]);
    CvStringOut o;
    CvStatus s = cv_string_out_init(&o, n);
    if (s)
        return s;
    for (int64_t i = 0; i < n && !s; i++) {
        size_t len;
        const unsigned char *p = (const unsigned char *)cv_string_at(&in[0], i, &len);
        s = attrs->ints[BASE64_DECODE] ? decode(&o, p, len, i)
                                       : encode(&o, p, len, attrs->ints[BASE64_PAD] != 0);
        if (!s)
            cv_string_out_end(&o);
    }
    if (s) {
        cv_string_out_free(&o);
        return s;
    }
    return cv_string_out_finish(&o, in[0].rank, in[0].shape, &out[0]);
}

const CvOp cv_op_base64 = {.name = "Base64", .min_inputs = 1, .max_inputs = 1, .run = base64_run,
                           .int_attrs = base64_int_attrs};
