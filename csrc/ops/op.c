/* The op contract's helpers (ops/op.h): what every op may call, whether it
 * runs in a traced program (ops/program.c) or eagerly. Knows no op. */
#include <errno.h>
#include <stdio.h>
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

/* -- named attributes --------------------------------------------------- */

/* One declared name (CvOp.int_attrs): "name", "name?" (optional) or
 * "name[]" (a list of ints filling the remaining slots). */
typedef struct AttrDecl {
    int length; /* of the bare name */
    bool optional;
    bool list;
} AttrDecl;

static AttrDecl attr_decl(const char *text)
{
    AttrDecl d = {.length = (int)strlen(text)};
    if (d.length > 0 && text[d.length - 1] == '?') {
        d.optional = true;
        d.length -= 1;
    } else if (d.length > 2 && strcmp(text + d.length - 2, "[]") == 0) {
        d.list = true;
        d.length -= 2;
    }
    return d;
}

/* Where the attribute `name` of op goes; slot -1: op has none of that name. */
typedef struct AttrSlot {
    int slot;
    bool is_float;
    bool list; /* "name[]": a list of ints from slot on */
    int room;  /* the values it may take: 1, or the slots left for a list */
} AttrSlot;

static AttrSlot attr_slot(const CvOp *op, const char *name)
{
    for (int f = 0; f < 2; f++) {
        const char *const *names = f ? op->float_attrs : op->int_attrs;
        for (int i = 0; names && names[i]; i++) {
            AttrDecl d = attr_decl(names[i]);
            if ((int)strlen(name) == d.length && strncmp(names[i], name, (size_t)d.length) == 0)
                return (AttrSlot){i, f == 1, d.list,
                                  d.list ? (f ? CV_OP_MAX_FLOATS : CV_OP_MAX_INTS) - i : 1};
        }
    }
    return (AttrSlot){-1, false, false, 0};
}

/* The checks for one list of names once the values are in their slots:
 * given[i] is how many were put from slot i on (-1: left out). */
static CvStatus attrs_given(const CvOp *op, const char *const *names, const int *given, int *count)
{
    const char *left_out = NULL; /* the first optional name not given */
    *count = 0;
    for (int i = 0; names && names[i]; i++) {
        AttrDecl d = attr_decl(names[i]);
        if (given[i] < 0 && !d.optional && !d.list)
            return cv_error(CV_INVALID_ARGUMENT, "%s: missing attribute '%.*s'", op->name, d.length,
                            names[i]);
        if (given[i] < 0) {
            left_out = left_out ? left_out : names[i];
            continue;
        }
        if (left_out)
            return cv_error(CV_INVALID_ARGUMENT, "%s: attribute '%.*s' needs the optional '%.*s' "
                            "before it", op->name, d.length, names[i],
                            attr_decl(left_out).length, left_out);
        *count = i + given[i];
    }
    return CV_STATUS_OK;
}

/* The values of attribute `name` from *pos up to ';' or the end into its
 * slots; *count: how many; *pos moves past them. */
static CvStatus parse_values(const CvOp *op, const char *name, AttrSlot at, const char **pos,
                             CvOpAttrs *attrs, int *count)
{
    const char *p = *pos;
    int n = 0;
    while (*p && *p != ';') {
        char *end;
        errno = 0;
        if (n == at.room)
            return cv_error(CV_INVALID_ARGUMENT, "%s: too many values for attribute '%s'",
                            op->name, name);
        if (at.is_float)
            attrs->floats[at.slot + n] = strtod(p, &end);
        else
            attrs->ints[at.slot + n] = strtoll(p, &end, 10);
        if (end == p || (!at.is_float && errno == ERANGE) || (*end && *end != ',' && *end != ';'))
            return cv_error(CV_INVALID_ARGUMENT, "%s: attribute '%s' takes %s, not '%.*s'",
                            op->name, name, at.is_float ? "floats" : "ints",
                            (int)strcspn(p, ",;"), p);
        n++;
        p = *end == ',' ? end + 1 : end;
    }
    if (!at.list && n != 1)
        return cv_error(CV_INVALID_ARGUMENT, "%s: attribute '%s' takes one value", op->name, name);
    *pos = *p ? p + 1 : p;
    *count = n;
    return CV_STATUS_OK;
}

CvStatus cv_op_attrs_parse(const CvOp *op, const char *text, CvOpAttrs *attrs)
{
    int given[2][CV_OP_MAX_INTS > CV_OP_MAX_FLOATS ? CV_OP_MAX_INTS : CV_OP_MAX_FLOATS];
    memset(given, 0xff, sizeof(given)); /* -1: left out */
    CvStatus s = CV_STATUS_OK;
    for (const char *p = text; !s && *p;) {
        char name[64];
        size_t len = strcspn(p, "=;");
        if (p[len] != '=' || len >= sizeof(name)) {
            s = cv_error(CV_INVALID_ARGUMENT, "%s: malformed attributes '%s'", op->name, text);
            break;
        }
        snprintf(name, sizeof(name), "%.*s", (int)len, p);
        AttrSlot at = attr_slot(op, name);
        p += len + 1;
        if (at.slot < 0 || given[at.is_float][at.slot] >= 0)
            s = cv_error(CV_INVALID_ARGUMENT, at.slot < 0 ? "%s: unknown attribute '%s'"
                                                          : "%s: attribute '%s' given twice",
                         op->name, name);
        else
            s = parse_values(op, name, at, &p, attrs, &given[at.is_float][at.slot]);
    }
    if (!s)
        s = attrs_given(op, op->int_attrs, given[0], &attrs->num_ints);
    return s ? s : attrs_given(op, op->float_attrs, given[1], &attrs->num_floats);
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

bool cv_epilogue_fits(const CvEpilogue *e, int count, int64_t last_dim)
{
    for (int k = 0; k < count; k++)
        if (e[k].num_values > 1 && e[k].num_values != last_dim)
            return false;
    return true;
}

void cv_epilogue_init(CvEpilogue *e, CvEpilogueKind kind, const float *operand, int n)
{
    e->kind = kind;
    e->num_values = n;
    for (int j = 0; j < CV_EPILOGUE_PATTERN; j++)
        e->values[j] = operand[j % n];
}

/* One step over x[0..n) by blocks of the pattern, each starting at channel
 * 0 (n is whole pixels), so that the loop over a block vectorizes. */
_Static_assert(CV_EPILOGUE_PATTERN % 3 == 0 && CV_EPILOGUE_PATTERN % 4 == 0 &&
                   CV_EPILOGUE_MAX_VALUES <= 4,
               "the pattern must hold whole pixels");
#define EPILOGUE_LOOP(OP)                                                                          \
    do {                                                                                           \
        int64_t i = 0;                                                                             \
        for (; i + CV_EPILOGUE_PATTERN <= n; i += CV_EPILOGUE_PATTERN)                             \
            for (int j = 0; j < CV_EPILOGUE_PATTERN; j++)                                          \
                x[i + j] = x[i + j] OP p[j];                                                       \
        for (int j = 0; i + j < n; j++)                                                            \
            x[i + j] = x[i + j] OP p[j];                                                           \
    } while (0)

/* Elementwise's float kernel's expressions (binary_float), so results are
 * identical to the unfolded op's. */
CV_CLONES_AVX2
void cv_epilogue_apply(const CvEpilogue *steps, int count, float *restrict x, int64_t n)
{
    for (int k = 0; k < count; k++) {
        const float *restrict p = steps[k].values;
        switch (steps[k].kind) {
        case CV_EPILOGUE_ADD: EPILOGUE_LOOP(+); break;
        case CV_EPILOGUE_SUB: EPILOGUE_LOOP(-); break;
        case CV_EPILOGUE_MUL: EPILOGUE_LOOP(*); break;
        case CV_EPILOGUE_DIV: EPILOGUE_LOOP(/); break;
        }
    }
}
#undef EPILOGUE_LOOP
