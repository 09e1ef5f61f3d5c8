/* GatherV2(params, indices): slices of params along an axis picked by
 * indices (tf.gather with batch_dims=0).
 *
 * ints: [axis] (may be negative; resolved here). indices: int32 or int64 of
 * any shape. Output: params.shape[:axis] + indices.shape +
 * params.shape[axis+1:], params' dtype (strings copied). An index outside
 * [0, params.shape[axis]) is InvalidArgument ("indices[1,0] = 5 is not in
 * [0, 3)", as TensorFlow on CPU). */
#include <stdio.h>
#include <string.h>

#include "ops/op.h"
#include "ops/values.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { GATHER_AXIS, GATHER_NUM_INTS };
static const char *const gather_int_attrs[] = {"axis", NULL};
CV_ATTR_NAMES_MATCH(gather_int_attrs, GATHER_NUM_INTS);

static CvStatus bad_index(const CvTensor *idx, int64_t flat, int64_t v, int64_t limit)
{
    char pos[256];
    size_t used = 0;
    int64_t coord[CV_MAX_RANK];
    for (int d = idx->rank - 1; d >= 0; d--) {
        coord[d] = idx->shape[d] ? flat % idx->shape[d] : 0;
        flat = idx->shape[d] ? flat / idx->shape[d] : 0;
    }
    pos[0] = '\0';
    for (int d = 0; d < idx->rank && used < sizeof(pos); d++)
        used += (size_t)snprintf(pos + used, sizeof(pos) - used, "%s%lld", d ? "," : "",
                                 (long long)coord[d]);
    return cv_error(CV_INVALID_ARGUMENT, "indices[%s] = %lld is not in [0, %lld)", pos,
                    (long long)v, (long long)limit);
}

static CvStatus gather_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                           int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *p = &in[0], *idx = &in[1];
    if (attrs->num_ints != GATHER_NUM_INTS || (idx->dtype != CV_INT32 && idx->dtype != CV_INT64))
        return cv_error(CV_INVALID_ARGUMENT, "GatherV2: malformed attributes or index dtype");
    int64_t axis = attrs->ints[GATHER_AXIS];
    if (axis < -p->rank || axis >= p->rank)
        return cv_error(CV_INVALID_ARGUMENT, "Expected axis in the range [%d, %d), but got %lld",
                        -p->rank, p->rank, (long long)axis);
    if (axis < 0)
        axis += p->rank;
    if (p->rank - 1 + idx->rank > CV_MAX_RANK)
        return cv_error(CV_INVALID_ARGUMENT, "GatherV2: the result's rank is over %d",
                        CV_MAX_RANK);
    int64_t shape[CV_MAX_RANK], outer = 1, inner = 1, limit = p->shape[axis];
    int r = 0;
    for (int d = 0; d < axis; d++) {
        outer *= p->shape[d];
        shape[r++] = p->shape[d];
    }
    for (int d = 0; d < idx->rank; d++)
        shape[r++] = idx->shape[d];
    for (int d = (int)axis + 1; d < p->rank; d++) {
        inner *= p->shape[d];
        shape[r++] = p->shape[d];
    }
    int64_t n = cv_tensor_num_elements(idx);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = (int64_t)cv_value_u(idx->data, idx->dtype, i);
        if (v < 0 || v >= limit)
            return bad_index(idx, i, v, limit);
    }
    size_t item = cv_dtype_size(p->dtype), blob_bytes = 0;
    if (p->dtype == CV_STRING) {
        const CvStringRef *refs = (const CvStringRef *)p->data;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < n; i++)
                for (int64_t k = 0; k < inner; k++) {
                    int64_t v = (int64_t)cv_value_u(idx->data, idx->dtype, i);
                    size_t len = refs[(o * limit + v) * inner + k].length;
                    if (len > SIZE_MAX - blob_bytes)
                        return cv_error(CV_RESOURCE_EXHAUSTED, "GatherV2: result too large");
                    blob_bytes += len;
                }
    }
    char *blob = NULL;
    CvStatus s = cv_tensor_alloc(&out[0], p->dtype, r, shape, blob_bytes, &blob);
    if (s)
        return s;
    char *dst = out[0].data;
    size_t row = (size_t)inner * item;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < n; i++) {
            int64_t v = (int64_t)cv_value_u(idx->data, idx->dtype, i);
            const char *src = p->data + ((size_t)(o * limit + v) * row);
            if (p->dtype != CV_STRING) {
                if (row)
                    memcpy(dst, src, row);
            } else {
                const CvStringRef *sr = (const CvStringRef *)src;
                CvStringRef *dr = (CvStringRef *)dst;
                for (int64_t k = 0; k < inner; k++) {
                    dr[k].offset = (uint64_t)(blob - out[0].buf->data);
                    dr[k].length = sr[k].length;
                    if (sr[k].length)
                        memcpy(blob, cv_string_data(p, &sr[k]), sr[k].length);
                    blob += sr[k].length;
                }
            }
            dst += row;
        }
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_gather = {.name = "GatherV2", .min_inputs = 2, .max_inputs = 2, .run = gather_run,
    .int_attrs = gather_int_attrs};
