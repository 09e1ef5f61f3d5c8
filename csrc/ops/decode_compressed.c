/* DecodeCompressed(bytes): each string inflated (tf.io.decode_compressed).
 *
 * ints: [kind] with kind 1 = ZLIB, 2 = GZIP (the Python layer returns the
 * input itself for "" and refuses other names). Output: the input's shape.
 * As TensorFlow: a stream cut short gives the bytes decoded so far, no
 * error; bytes that are not a stream of that kind are DataLoss ("inflate()
 * failed with error -3: incorrect header check"). Outputs are bounded by
 * CV_DECOMPRESSED_MAX so a zip bomb fails cleanly.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { DECOMPRESS_KIND, DECOMPRESS_NUM_INTS };
static const char *const decompress_int_attrs[] = {"kind", NULL};
CV_ATTR_NAMES_MATCH(decompress_int_attrs, DECOMPRESS_NUM_INTS);

#define CV_DECOMPRESSED_MAX (UINT64_C(1) << 34) /* 16 GiB per string */

/* Inflate src (n bytes) into a malloc'd *out of *out_len bytes. */
static CvStatus inflate_one(const unsigned char *src, size_t n, int window_bits, char **out,
                            size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, window_bits) != Z_OK)
        return cv_error_nomem();
    size_t cap = n * 4 + 64, len = 0;
    char *buf = malloc(cap);
    CvStatus s = CV_STATUS_OK;
    if (!buf) {
        s = cv_error_nomem();
        goto done;
    }
    size_t fed = 0;
    for (;;) {
        if (z.avail_in == 0 && fed < n) {
            size_t chunk = n - fed < UINT_MAX ? n - fed : UINT_MAX;
            z.next_in = (unsigned char *)src + fed;
            z.avail_in = (uInt)chunk;
            fed += chunk;
        }
        if (len == cap) {
            if (cap >= CV_DECOMPRESSED_MAX) {
                s = cv_error(CV_RESOURCE_EXHAUSTED, "decode_compressed: a string inflates to "
                             "more than %llu bytes", (unsigned long long)CV_DECOMPRESSED_MAX);
                goto done;
            }
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                s = cv_error_nomem();
                goto done;
            }
            buf = grown;
            cap *= 2;
        }
        size_t room = cap - len < UINT_MAX ? cap - len : UINT_MAX;
        z.next_out = (unsigned char *)buf + len;
        z.avail_out = (uInt)room;
        int rc = inflate(&z, Z_NO_FLUSH);
        len += room - z.avail_out;
        if (rc == Z_STREAM_END)
            break;
        if (rc == Z_BUF_ERROR && z.avail_in == 0 && fed == n)
            break; /* cut short: what was decoded, as TensorFlow */
        if (rc == Z_OK || rc == Z_BUF_ERROR)
            continue;
        if (rc == Z_MEM_ERROR) {
            s = cv_error_nomem();
            goto done;
        }
        s = cv_error(CV_DATA_LOSS, "inflate() failed with error %d: %s", rc,
                     z.msg ? z.msg : "corrupt data");
        goto done;
    }
    *out = buf;
    *out_len = len;
    buf = NULL;
done:
    free(buf);
    inflateEnd(&z);
    return s;
}

static CvStatus decode_compressed_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                      CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *x = &in[0];
    if (x->dtype != CV_STRING || attrs->num_ints != DECOMPRESS_NUM_INTS ||
        attrs->ints[DECOMPRESS_KIND] < 1 || attrs->ints[DECOMPRESS_KIND] > 2)
        return cv_error(CV_INVALID_ARGUMENT, "DecodeCompressed: a string tensor and a kind");
    int window_bits = attrs->ints[DECOMPRESS_KIND] == 2 ? 16 + MAX_WBITS : MAX_WBITS;
    int64_t count = cv_tensor_num_elements(x);
    const CvStringRef *refs = (const CvStringRef *)x->data;
    char **parts = calloc(count > 0 ? (size_t)count : 1, sizeof(char *));
    size_t *lens = calloc(count > 0 ? (size_t)count : 1, sizeof(size_t));
    CvStatus s = parts && lens ? CV_STATUS_OK : cv_error_nomem();
    size_t total = 0;
    for (int64_t i = 0; i < count && !s; i++) {
        s = inflate_one((const unsigned char *)cv_string_data(x, &refs[i]), (size_t)refs[i].length,
                        window_bits, &parts[i], &lens[i]);
        total += lens[i];
    }
    char *blob = NULL;
    if (!s)
        s = cv_tensor_alloc(&out[0], CV_STRING, x->rank, x->shape, total, &blob);
    if (!s) {
        CvStringRef *dst = (CvStringRef *)out[0].data;
        uint64_t at = (uint64_t)(blob - out[0].buf->data);
        for (int64_t i = 0; i < count; i++) {
            if (lens[i])
                memcpy(out[0].buf->data + at, parts[i], lens[i]);
            dst[i] = (CvStringRef){.offset = at, .length = lens[i]};
            at += lens[i];
        }
    }
    for (int64_t i = 0; parts && i < count; i++)
        free(parts[i]);
    free(parts);
    free(lens);
    return s;
}

const CvOp cv_op_decode_compressed = {.name = "DecodeCompressed", .min_inputs = 1,
                                      .max_inputs = 1, .run = decode_compressed_run,
    .int_attrs = decompress_int_attrs};
