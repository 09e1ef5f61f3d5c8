/* Element ops: the native steps of a traced map function.
 *
 * Each op lives in its own file under csrc/ops/ and exports one const CvOp
 * (`cv_op_<file>`), listed in ops/registry.c. An op is a pure function of its
 * input tensors and attributes, and, for random ops, of the per-element
 * random stream in its CvOpContext. run() may be called from any thread,
 * concurrently with itself, without the GIL.
 *
 * Ownership: `in` tensors are borrowed (an output may share an input's
 * memory by taking its own reference with cv_tensor_copy_ref). On OK every
 * `out` tensor is filled and owned by the caller; on error the op leaves
 * `out` cleared. Error messages say what is wrong with the input (the
 * program adds the op, the map function and the element).
 *
 * The Python layer checks argument types and computes output specs when a
 * function is traced, so run() validates only what depends on values
 * (image bytes, sizes read from data); it must still never crash or
 * overflow on any input.
 */
#ifndef CV_OP_H
#define CV_OP_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dataset.h"
#include "core/philox.h"
#include "core/tensor.h"

/* Compile a hot loop twice, for AVX2 and for the baseline, and pick one
 * when the module loads (GCC's and Clang's target_clones). Loops of IEEE
 * operations give the same floats either way: -ffp-contract=off keeps
 * multiplies and adds apart. CV_NO_TARGET_CLONES compiles the baseline
 * alone: a ThreadSanitizer executable (tests/test_engine_c.py) runs the
 * clones' resolvers while it relocates itself, before TSan's runtime is up. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(CV_NO_TARGET_CLONES)
#define CV_CLONES_AVX2 __attribute__((target_clones("avx2", "default")))
#else
#define CV_CLONES_AVX2
#endif

#define CV_OP_MAX_INTS 64
#define CV_OP_MAX_FLOATS 8

/* Attributes fixed when the program is built; each op documents what its
 * ints/floats/string mean, and declares their names (CvOp.int_attrs). */
typedef struct CvOpAttrs {
    int num_ints;
    int num_floats;
    int64_t ints[CV_OP_MAX_INTS];
    double floats[CV_OP_MAX_FLOATS];
    char *string; /* owned, NUL-terminated; NULL when absent */
    /* Op-specific structure built by the binding (an Example parser's
     * feature config), immutable and shared by all threads; `owner` keeps it
     * alive and is released with release_owner when the program goes. */
    const void *object;
    void *owner;
    void (*release_owner)(void *owner);
} CvOpAttrs;

void cv_op_attrs_clear(CvOpAttrs *attrs);

/* An arithmetic step with a float32 constant that the op before it applies
 * to its float32 output as it writes it: x / 255.0, or x - mean with one
 * value per channel (the output's last dim). The same arithmetic as the op
 * it stands for (CvOp.as_epilogue), one pass over the memory instead of
 * two; up to CV_MAX_EPILOGUES steps in a row, applied in order. */
typedef enum CvEpilogueKind {
    CV_EPILOGUE_ADD,
    CV_EPILOGUE_SUB,
    CV_EPILOGUE_MUL,
    CV_EPILOGUE_DIV,
} CvEpilogueKind;

#define CV_EPILOGUE_MAX_VALUES 4
#define CV_MAX_EPILOGUES 4
/* A whole number of pixels of 1 to 4 channels, and of 8-float vectors. */
#define CV_EPILOGUE_PATTERN 24

typedef struct CvEpilogue {
    CvEpilogueKind kind;
    int num_values; /* 1: one value for every element; n > 1: one per channel */
    /* The operand repeated (values[j] = operand[j % num_values]), made once
     * by cv_epilogue_init so that applying it is one vector loop. */
    float values[CV_EPILOGUE_PATTERN];
} CvEpilogue;

/* *e = the step `kind` with operand[0..n), 1 <= n <= CV_EPILOGUE_MAX_VALUES. */
void cv_epilogue_init(CvEpilogue *e, CvEpilogueKind kind, const float *operand, int n);

/* Whether steps e[0..count) fit an output whose last dim is last_dim (each
 * per-channel step has that many values). */
bool cv_epilogue_fits(const CvEpilogue *e, int count, int64_t last_dim);

/* Apply steps e[0..count) to x[0..n) in place, in float32: x[i] = x[i]
 * <kind> value. x starts at a channel 0 and n is a whole number of pixels
 * (a multiple of every step's num_values). */
void cv_epilogue_apply(const CvEpilogue *e, int count, float *x, int64_t n);

/* The random stream of one op call: keyed by (seed, op seed, element id),
 * so it is the same whatever thread runs the element, and the same in a
 * traced program as in the op called eagerly for that element. The Python
 * layer makes op_seed unique per random op of a function. */
typedef struct CvOpContext {
    uint64_t seed[2];  /* the function's seed pair */
    int64_t op_seed;   /* the op's own seed argument (0 when none) */
    int node;          /* the op's position in the function */
    CvElementId id;
    bool rng_ready;
    CvPhilox rng;
    /* Borrowed, may be NULL: where the op's first output may go (a row of a
     * fused map+batch's batch) when its dtype and shape match. Ops that can
     * take it get their output from cv_op_output; the others allocate as
     * usual, and the caller copies. */
    const CvTensor *dest;
    /* Borrowed, may be NULL: only for ops with takes_epilogue; num_epilogues
     * steps. */
    const CvEpilogue *epilogue;
    int num_epilogues;
} CvOpContext;

/* out: a view of ctx->dest when it has this dtype and shape, else a new
 * tensor (cv_tensor_alloc). For an op's first output, written in full. */
CvStatus cv_op_output(const CvOpContext *ctx, CvTensor *out, CvDtype dtype, int rank,
                      const int64_t *shape);

/* The bytes of `contents`, a scalar string (as TensorFlow's decoders take
 * them); else InvalidArgument naming the shape. *bytes is borrowed from it. */
CvStatus cv_op_scalar_contents(const CvTensor *contents, const uint8_t **bytes, size_t *length);

uint32_t cv_op_random_u32(CvOpContext *ctx);
/* Uniform in [0, 1), 24 bits (float32 resolution). */
float cv_op_random_uniform(CvOpContext *ctx);
/* Uniform integer in [0, n) for n >= 1 (unbiased). */
uint64_t cv_op_random_below(CvOpContext *ctx, uint64_t n);

/* The most inputs or outputs a node may have: variadic ops (ConcatV2 for
 * tf.stack/tf.concat of many tensors, StringFormat) accept up to this many. */
#define CV_OP_MAX_ARITY 4096

typedef struct CvOp {
    const char *name; /* TensorFlow's op name where there is one: "DecodeJpeg" */
    int min_inputs;
    int max_inputs;
    CvStatus (*run)(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                    int num_out, CvOpContext *ctx);
    /* run() applies ctx->epilogue to its one float32 output when set, or
     * fails when it does not fit (cv_epilogue_fits). */
    bool takes_epilogue;
    /* Optional capability (NULL: never): whether a node of this op with
     * `attrs` and the constant second input `operand` amounts to an epilogue
     * the op before it can apply as it writes; if so, fills *out. The program
     * asks this when it finishes (cv_program_finish), never which op it is. */
    bool (*as_epilogue)(const CvOpAttrs *attrs, const CvTensor *operand, CvEpilogue *out);
    /* Capability: input 0 names a file the op opens (io/fs.h) and reads
     * whole. A program says which of its arguments feed such an input
     * (CvFunction.opens_args), so a map can open those files ahead. */
    bool opens_input0;
    /* Named attributes: the names of ints[0..] and floats[0..] in slot
     * order, each list NULL-terminated (NULL: none). Python passes
     * attributes by name; the binding puts each into its slot and refuses
     * unknown, missing and repeated names. "name?" is optional: it may be
     * left out with every later one, and num_ints then ends before it. The
     * last int name may be "name[]": a list of ints filling the remaining
     * slots (a shape); left out, it is empty. The op file names the slots
     * with an enum in the same order; CV_ATTR_NAMES_MATCH checks the counts
     * agree. */
    const char *const *int_attrs;
    const char *const *float_attrs;
} CvOp;

/* The names array `names` (NULL-terminated) has one name per slot 0..count-1. */
#define CV_ATTR_NAMES_MATCH(names, count)                                                     \
    _Static_assert(sizeof(names) / sizeof((names)[0]) == (size_t)(count) + 1,                \
                   #names " names every slot of its enum")


/* The op named `name`, or NULL. */
const CvOp *cv_op_find(const char *name);

/* Named attributes, as a front end passes them (the Python layer's
 * tracing.attr_text writes this text): "name=v;name=v1,v2", each name one
 * the op declares (CvOp.int_attrs, .float_attrs), ints in decimal, floats
 * as strtod reads them, a list ("name[]") comma-separated, possibly empty.
 * Puts the values into their slots of attrs (its ints and floats zeroed
 * before) and sets num_ints and num_floats. INVALID_ARGUMENT naming op and
 * attribute for a name it does not declare or given twice, a value that is
 * not a number of the slot's kind, too many values, a required attribute
 * left out, or an optional one given after one left out. */
CvStatus cv_op_attrs_parse(const CvOp *op, const char *text, CvOpAttrs *attrs);

#endif
