/* DecodeRaw(bytes): reinterpret each string of a string tensor as a vector
 * of numbers (tf.io.decode_raw). The output has the input's shape plus one
 * dimension: the string length over the type's size. Without fixed_length
 * every string must have the same length, a multiple of the type's size;
 * with it (TensorFlow's DecodePaddedRaw) each string is cut or zero-padded
 * to fixed_length bytes. bool values are normalized to 0/1.
 *
 * ints: [0] output CvDtype (numeric or bool), [1] little_endian,
 * [2] fixed_length (0: none; else > 0 and a multiple of the type's size). */
#include <string.h>

#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { DECODE_RAW_DTYPE, DECODE_RAW_LITTLE_ENDIAN, DECODE_RAW_FIXED_LENGTH, DECODE_RAW_NUM_INTS };
static const char *const decode_raw_int_attrs[] = {"dtype", "little_endian", "fixed_length", NULL};
CV_ATTR_NAMES_MATCH(decode_raw_int_attrs, DECODE_RAW_NUM_INTS);

/* Reverse the bytes of each `size`-byte value (big-endian data on a
 * little-endian machine). */
static void swap_bytes(uint8_t *p, size_t count, size_t size)
{
    for (size_t i = 0; i < count; i++, p += size)
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            uint8_t t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

static CvStatus decode_raw_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                               CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    if (attrs->num_ints < DECODE_RAW_NUM_INTS || attrs->ints[DECODE_RAW_DTYPE] < 0 ||
        attrs->ints[DECODE_RAW_DTYPE] >= CV_NUM_DTYPES || attrs->ints[DECODE_RAW_DTYPE] == CV_STRING)
        return cv_error(CV_INVALID_ARGUMENT, "DecodeRaw needs a numeric or bool output dtype");
    const CvDtype dtype = (CvDtype)attrs->ints[DECODE_RAW_DTYPE];
    const size_t size = cv_dtype_size(dtype);
    const bool little = attrs->ints[DECODE_RAW_LITTLE_ENDIAN] != 0;
    const int64_t fixed = attrs->ints[DECODE_RAW_FIXED_LENGTH];
    if (in[0].dtype != CV_STRING)
        return cv_error(CV_INVALID_ARGUMENT, "DecodeRaw needs strings, got %s",
                        cv_dtype_name(in[0].dtype));
    if (in[0].rank >= CV_MAX_RANK)
        return cv_error(CV_INVALID_ARGUMENT, "DecodeRaw input has rank %d; at most %d",
                        in[0].rank, CV_MAX_RANK - 1);
    if (fixed < 0 || (uint64_t)fixed % size)
        return cv_error(CV_INVALID_ARGUMENT,
                        "fixed_length (%lld) must be a multiple of the size of out_type (%zu)",
                        (long long)fixed, size);
    const int64_t n = cv_tensor_num_elements(&in[0]);
    const CvStringRef *refs = (const CvStringRef *)in[0].data;
    uint64_t bytes = (uint64_t)fixed; /* per string */
    if (!fixed && n > 0) {
        bytes = refs[0].length;
        for (int64_t i = 1; i < n; i++)
            if (refs[i].length != bytes)
                return cv_error(CV_INVALID_ARGUMENT,
                                "DecodeRaw requires input strings to all be the same size, but "
                                "element %lld has size %llu != %llu",
                                (long long)i, (unsigned long long)bytes,
                                (unsigned long long)refs[i].length);
        if (bytes % size)
            return cv_error(CV_INVALID_ARGUMENT,
                            "Input to DecodeRaw has length %llu that is not a multiple of %zu, "
                            "the size of %s",
                            (unsigned long long)bytes, size, cv_dtype_name(dtype));
    }
    int64_t shape[CV_MAX_RANK];
    memcpy(shape, in[0].shape, (size_t)in[0].rank * sizeof(int64_t));
    shape[in[0].rank] = (int64_t)(bytes / size);
    CvStatus s = cv_tensor_alloc(&out[0], dtype, in[0].rank + 1, shape, 0, NULL);
    if (s)
        return s;
    uint8_t *dst = (uint8_t *)out[0].data;
    for (int64_t i = 0; i < n; i++, dst += bytes) {
        uint64_t len = refs[i].length < bytes ? refs[i].length : bytes;
        memcpy(dst, cv_string_data(&in[0], &refs[i]), (size_t)len);
        memset(dst + len, 0, (size_t)(bytes - len));
    }
    dst = (uint8_t *)out[0].data;
    const size_t total = (size_t)n * (size_t)(bytes / size);
    if (!little && size > 1)
        swap_bytes(dst, total, size);
    if (dtype == CV_BOOL)
        for (size_t i = 0; i < total; i++)
            dst[i] = dst[i] != 0;
    return CV_STATUS_OK;
}

const CvOp cv_op_decode_raw = {
    .name = "DecodeRaw", .min_inputs = 1, .max_inputs = 1, .run = decode_raw_run,
    .int_attrs = decode_raw_int_attrs};
