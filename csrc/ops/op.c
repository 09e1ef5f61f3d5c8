/* The op contract's helpers (ops/op.h): what every op may call, whether it
 * runs in a traced program (ops/program.c) or eagerly. Knows no op. */
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"

void cv_op_attrs_clear(CvOpAttrs *attrs)
{
    free(attrs->string);
    if (attrs->owner && attrs->release_owner)
        attrs->release_owner(attrs->owner);
    memset(attrs, 0, sizeof(*attrs));
}

/* -- random stream ------------------------------------------------------ */

static uint64_t mix64(uint64_t x) /* splitmix64's finalizer */
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint32_t cv_op_random_u32(CvOpContext *ctx)
{
    if (!ctx->rng_ready) {
        /* The node's position is not part of the key: the Python layer folds
         * the op's ordinal among random ops into op_seed, which its
         * per-element Python twin can reproduce. */
        uint64_t key = mix64(ctx->seed[0] ^ mix64((uint64_t)ctx->op_seed));
        uint64_t stream = mix64(ctx->seed[1] ^ mix64(ctx->id.epoch ^ mix64(ctx->id.index)));
        cv_philox_init(&ctx->rng, key, stream);
        ctx->rng_ready = true;
    }
    return cv_philox_next(&ctx->rng);
}

float cv_op_random_uniform(CvOpContext *ctx)
{
    return (float)(cv_op_random_u32(ctx) >> 8) * (1.0f / 16777216.0f);
}

uint64_t cv_op_random_below(CvOpContext *ctx, uint64_t n)
{
    /* Rejection sampling: draws in the top partial range are redrawn. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    for (;;) {
        uint64_t r = ((uint64_t)cv_op_random_u32(ctx) << 32) | cv_op_random_u32(ctx);
        if (r < limit)
            return r % n;
    }
}

/* -- outputs --------------------------------------------------------------- */

CvStatus cv_op_scalar_contents(const CvTensor *contents, const uint8_t **bytes, size_t *length)
{
    if (contents->dtype != CV_STRING || contents->rank != 0) {
        char shape[64];
        return cv_error(CV_INVALID_ARGUMENT, "contents must be scalar, got shape %s",
                        cv_shape_str(contents->shape, contents->rank, shape, sizeof(shape)));
    }
    const CvStringRef *ref = (const CvStringRef *)contents->data;
    *bytes = (const uint8_t *)cv_string_data(contents, ref);
    *length = (size_t)ref->length;
    return CV_STATUS_OK;
}

CvStatus cv_op_output(const CvOpContext *ctx, CvTensor *out, CvDtype dtype, int rank,
                      const int64_t *shape)
{
    const CvTensor *d = ctx->dest;
    if (d && d->dtype == dtype && d->rank == rank &&
        memcmp(d->shape, shape, (size_t)rank * sizeof(int64_t)) == 0) {
        cv_tensor_copy_ref(out, d);
        return CV_STATUS_OK;
    }
    return cv_tensor_alloc(out, dtype, rank, shape, 0, NULL);
}

/* -- epilogues ------------------------------------------------------------- */

/* Elementwise's float kernel's expressions (binary_float), so results are
 * identical to the unfolded op's. */
CV_CLONES_AVX2
void cv_epilogue_apply(const CvEpilogue *e, float *x, int64_t n)
{
    float y = e->value;
    switch (e->kind) {
    case CV_EPILOGUE_ADD: for (int64_t i = 0; i < n; i++) x[i] = x[i] + y; break;
    case CV_EPILOGUE_SUB: for (int64_t i = 0; i < n; i++) x[i] = x[i] - y; break;
    case CV_EPILOGUE_MUL: for (int64_t i = 0; i < n; i++) x[i] = x[i] * y; break;
    case CV_EPILOGUE_DIV: for (int64_t i = 0; i < n; i++) x[i] = x[i] / y; break;
    }
}
