/* Elementwise arithmetic, comparison and logic: the ops behind + - * / and
 * tf.math's binary and unary functions.
 *
 * The attribute "kind" (ELEMENTWISE_KIND): the function (CvElementwise
 * below; conveyor/ops/math_ops.py's _KINDS lists them in the same order). Binary functions take two inputs of one dtype and broadcast them as NumPy does; unary ones take one.
 * The Python layer settles dtypes (TensorFlow's rules: no implicit
 * promotion; float16 is computed in float32 and rounded back, as Eigen
 * does) and refuses combinations TensorFlow does not define, so the C side
 * checks only what depends on values: integer division by zero and
 * negative integer powers are InvalidArgument errors. Integer overflow wraps
 * (computed in unsigned arithmetic, never UB). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { ELEMENTWISE_KIND, ELEMENTWISE_PER_CHANNEL, ELEMENTWISE_NUM_INTS };
/* per_channel (optional, 1): the Python layer checked that input 1 is a
 * vector along input 0's last dim, so that the result has input 0's shape:
 * then the op may be an epilogue with one value per channel. */
static const char *const elementwise_int_attrs[] = {"kind", "per_channel?", NULL};
CV_ATTR_NAMES_MATCH(elementwise_int_attrs, ELEMENTWISE_NUM_INTS);

typedef enum {
    EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_FLOORDIV, EW_FLOORMOD, EW_POW, EW_MAX, EW_MIN,
    EW_LESS, EW_LESS_EQUAL, EW_GREATER, EW_GREATER_EQUAL, EW_EQUAL, EW_NOT_EQUAL,
    EW_AND, EW_OR, EW_XOR, EW_ATAN2, EW_SQUARED_DIFFERENCE, EW_DIVIDE_NO_NAN,
    EW_BITAND, EW_BITOR, EW_BITXOR, EW_LSHIFT, EW_RSHIFT,
    EW_NEGATIVE, EW_ABS, EW_NOT, EW_SQRT, EW_EXP, EW_LOG, EW_FLOOR, EW_CEIL, EW_ROUND, EW_SQUARE,
    EW_SIN, EW_COS, EW_TAN, EW_ASIN, EW_ACOS, EW_ATAN, EW_SINH, EW_COSH, EW_TANH, EW_SIGMOID,
    EW_SIGN, EW_LOG1P, EW_EXPM1, EW_RSQRT, EW_RECIPROCAL, EW_IS_NAN, EW_IS_INF, EW_IS_FINITE,
    EW_ERF, EW_SOFTPLUS, EW_INVERT,
    EW_COUNT
} CvElementwise;

#define EW_FIRST_UNARY EW_NEGATIVE

/* Broadcast plan: dims coalesced so the innermost run is as long as
 * possible; strides in elements (0 where an input is broadcast). */
typedef struct {
    int rank;
    int64_t dims[CV_MAX_RANK];
    int64_t sa[CV_MAX_RANK], sb[CV_MAX_RANK];
} Plan;

static CvStatus make_plan(const CvTensor *a, const CvTensor *b, int64_t *out_shape, int *out_rank,
                          Plan *plan)
{
    int rank = a->rank > b->rank ? a->rank : b->rank;
    int64_t da[CV_MAX_RANK], db[CV_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        da[i] = ia >= 0 ? a->shape[ia] : 1;
        db[i] = ib >= 0 ? b->shape[ib] : 1;
        if (da[i] != db[i] && da[i] != 1 && db[i] != 1) {
            char sa[64], sb[64];
            return cv_error(CV_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s",
                            cv_shape_str(a->shape, a->rank, sa, sizeof(sa)),
                            cv_shape_str(b->shape, b->rank, sb, sizeof(sb)));
        }
        out_shape[i] = da[i] == 1 ? db[i] : da[i];
    }
    *out_rank = rank;
    /* Row-major strides, then merge neighbours that broadcast alike. */
    int64_t stride_a = 1, stride_b = 1;
    int n = 0;
    int64_t dims[CV_MAX_RANK], sa[CV_MAX_RANK], sb[CV_MAX_RANK];
    for (int i = rank - 1; i >= 0; i--) {
        if (out_shape[i] == 1) {
            continue;
        }
        int64_t xa = da[i] == 1 ? 0 : stride_a, xb = db[i] == 1 ? 0 : stride_b;
        if (n > 0 && (sa[n - 1] == 0) == (xa == 0) && (sb[n - 1] == 0) == (xb == 0) &&
            (xa == 0 || xa == sa[n - 1] * dims[n - 1]) && (xb == 0 || xb == sb[n - 1] * dims[n - 1])) {
            dims[n - 1] *= out_shape[i];
        } else {
            dims[n] = out_shape[i];
            sa[n] = xa;
            sb[n] = xb;
            n++;
        }
        stride_a *= da[i];
        stride_b *= db[i];
    }
    if (n == 0) {
        dims[0] = 1;
        sa[0] = sb[0] = 0;
        n = 1;
    }
    plan->rank = n;
    for (int i = 0; i < n; i++) { /* innermost last */
        plan->dims[i] = dims[n - 1 - i];
        plan->sa[i] = sa[n - 1 - i];
        plan->sb[i] = sb[n - 1 - i];
    }
    return CV_STATUS_OK;
}

/* Walk the plan: BODY runs once per inner run with oo_, oa_, ob_ (offsets of
 * out, a, b), n_ (length) and isa_, isb_ (inner strides of a and b). */
#define FOR_EACH_RUN(plan, BODY)                                                                    \
    do {                                                                                           \
        int64_t idx_[CV_MAX_RANK] = {0};                                                           \
        int last_ = (plan)->rank - 1;                                                              \
        int64_t n_ = (plan)->dims[last_], isa_ = (plan)->sa[last_], isb_ = (plan)->sb[last_];      \
        int64_t oo_ = 0, oa_ = 0, ob_ = 0;                                                         \
        for (;;) {                                                                                 \
            BODY;                                                                                  \
            oo_ += n_;                                                                             \
            int d_ = last_ - 1;                                                                    \
            for (; d_ >= 0; d_--) {                                                                \
                oa_ += (plan)->sa[d_];                                                             \
                ob_ += (plan)->sb[d_];                                                             \
                if (++idx_[d_] < (plan)->dims[d_])                                                 \
                    break;                                                                         \
                oa_ -= (plan)->sa[d_] * (plan)->dims[d_];                                          \
                ob_ -= (plan)->sb[d_] * (plan)->dims[d_];                                          \
                idx_[d_] = 0;                                                                      \
            }                                                                                      \
            if (d_ < 0)                                                                            \
                break;                                                                             \
        }                                                                                          \
    } while (0)

/* One inner loop per stride pattern so gcc vectorizes the common ones. */
#define INNER(TO, TI, EXPR, o, a, b, n, isa, isb)                                                 \
    do {                                                                                           \
        TO *po_ = (TO *)out_data + (o);                                                            \
        const TI *pa_ = (const TI *)a_data + (a), *pb_ = (const TI *)b_data + (b);                 \
        if ((isa) == 1 && (isb) == 1) {                                                            \
            for (int64_t i = 0; i < (n); i++) {                                                    \
                TI x = pa_[i], y = pb_[i];                                                         \
                po_[i] = (TO)(EXPR);                                                               \
            }                                                                                      \
        } else if ((isa) == 1) {                                                                   \
            TI y = pb_[0];                                                                         \
            for (int64_t i = 0; i < (n); i++) {                                                    \
                TI x = pa_[i];                                                                     \
                po_[i] = (TO)(EXPR);                                                               \
            }                                                                                      \
        } else if ((isb) == 1) {                                                                   \
            TI x = pa_[0];                                                                         \
            for (int64_t i = 0; i < (n); i++) {                                                    \
                TI y = pb_[i];                                                                     \
                po_[i] = (TO)(EXPR);                                                               \
            }                                                                                      \
        } else {                                                                                   \
            TI x = pa_[0], y = pb_[0];                                                             \
            for (int64_t i = 0; i < (n); i++)                                                      \
                po_[i] = (TO)(EXPR);                                                               \
        }                                                                                          \
    } while (0)

/* Value functions. U is the unsigned twin of an integer type. */
#define WRAP(T, U, op, x, y) ((T)((U)(x)op(U)(y)))
#define FMAX(x, y) (isnan(x) || isnan(y) ? (x) + (y) : ((x) > (y) ? (x) : (y)))
#define FMIN(x, y) (isnan(x) || isnan(y) ? (x) + (y) : ((x) < (y) ? (x) : (y)))

static inline int64_t int_floordiv(int64_t x, int64_t y, int64_t min)
{
    if (y == -1) /* -min overflows: wrap */
        return x == min ? min : -x;
    int64_t q = x / y;
    return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
}

static inline int64_t int_floormod(int64_t x, int64_t y)
{
    if (y == -1)
        return 0;
    int64_t r = x % y;
    return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}

static inline uint64_t uint_pow(uint64_t base, uint64_t exp)
{
    uint64_t r = 1;
    while (exp) {
        if (exp & 1)
            r *= base;
        base *= base;
        exp >>= 1;
    }
    return r;
}

static inline double float_floormod(double x, double y)
{
    double r = fmod(x, y);
    return (r != 0 && ((y < 0) != (r < 0))) ? r + y : r;
}

/* Checks for integer division and power before any output is written. */
static CvStatus check_integer_operands(int kind, const CvTensor *a, const CvTensor *b)
{
    int64_t n = cv_tensor_num_elements(b);
    bool is_signed = b->dtype == CV_INT8 || b->dtype == CV_INT16 || b->dtype == CV_INT32 ||
                     b->dtype == CV_INT64;
    (void)a;
    for (int64_t i = 0; i < n; i++) {
        int64_t v;
        switch (b->dtype) {
        case CV_INT8: v = ((const int8_t *)b->data)[i]; break;
        case CV_INT16: v = ((const int16_t *)b->data)[i]; break;
        case CV_INT32: v = ((const int32_t *)b->data)[i]; break;
        case CV_INT64: v = ((const int64_t *)b->data)[i]; break;
        case CV_UINT8: v = ((const uint8_t *)b->data)[i]; break;
        case CV_UINT16: v = ((const uint16_t *)b->data)[i]; break;
        case CV_UINT32: v = ((const uint32_t *)b->data)[i]; break;
        default: v = ((const uint64_t *)b->data)[i] != 0; break;
        }
        if ((kind == EW_FLOORDIV || kind == EW_FLOORMOD) && v == 0)
            return cv_error(CV_INVALID_ARGUMENT, "Integer division by zero");
        if (kind == EW_POW && is_signed && v < 0)
            return cv_error(CV_INVALID_ARGUMENT,
                            "Integers to negative integer powers are not allowed");
    }
    return CV_STATUS_OK;
}

/* tf.bitwise's shift count: y clamped to [0, bits - 1], as TensorFlow's
 * kernels do (so no shift is undefined behaviour). */
#define SHIFT_COUNT(T, y) ((y) < 0 ? 0 : (uint64_t)(y) > sizeof(T) * 8 - 1 ? sizeof(T) * 8 - 1 \
                                                                             : (unsigned)(y))

/* Integer kernels: T signed or unsigned, U its unsigned twin, MIN its
 * minimum (0 for unsigned). Comparison results go to the bool output.
 * Shifts: left in unsigned arithmetic; right arithmetic for signed T. */
#define INT_BINARY(T, U, MIN)                                                                      \
    static bool binary_##T(int kind, const Plan *plan, const void *a_data, const void *b_data,    \
                           void *out_data)                                                         \
    {                                                                                              \
        switch (kind) {                                                                            \
        case EW_ADD: RUNS(T, T, WRAP(T, U, +, x, y)); return true;                                 \
        case EW_SUB: RUNS(T, T, WRAP(T, U, -, x, y)); return true;                                 \
        case EW_MUL: RUNS(T, T, WRAP(T, U, *, x, y)); return true;                                 \
        case EW_FLOORDIV:                                                                          \
            RUNS(T, T, (MIN) < 0 ? int_floordiv((int64_t)x, (int64_t)y, (int64_t)(MIN))            \
                                 : (int64_t)((U)x / (U)y));                                        \
            return true;                                                                           \
        case EW_FLOORMOD:                                                                          \
            RUNS(T, T, (MIN) < 0 ? int_floormod((int64_t)x, (int64_t)y) : (int64_t)((U)x % (U)y)); \
            return true;                                                                           \
        case EW_POW: RUNS(T, T, uint_pow((uint64_t)(U)x, (uint64_t)y)); return true;               \
        case EW_MAX: RUNS(T, T, x > y ? x : y); return true;                                       \
        case EW_MIN: RUNS(T, T, x < y ? x : y); return true;                                       \
        case EW_LESS: RUNS(bool, T, x < y); return true;                                           \
        case EW_LESS_EQUAL: RUNS(bool, T, x <= y); return true;                                    \
        case EW_GREATER: RUNS(bool, T, x > y); return true;                                        \
        case EW_GREATER_EQUAL: RUNS(bool, T, x >= y); return true;                                 \
        case EW_EQUAL: RUNS(bool, T, x == y); return true;                                         \
        case EW_NOT_EQUAL: RUNS(bool, T, x != y); return true;                                     \
        case EW_SQUARED_DIFFERENCE:                                                                \
            RUNS(T, T, WRAP(T, U, *, WRAP(T, U, -, x, y), WRAP(T, U, -, x, y)));                   \
            return true;                                                                           \
        case EW_BITAND: RUNS(T, T, x & y); return true;                                            \
        case EW_BITOR: RUNS(T, T, x | y); return true;                                             \
        case EW_BITXOR: RUNS(T, T, x ^ y); return true;                                            \
        case EW_LSHIFT: RUNS(T, T, (T)((U)x << SHIFT_COUNT(T, y))); return true;                   \
        case EW_RSHIFT: RUNS(T, T, (T)(x >> SHIFT_COUNT(T, y))); return true;                      \
        default: return false;                                                                     \
        }                                                                                          \
    }

#define FLOAT_BINARY(T)                                                                            \
    static bool binary_##T(int kind, const Plan *plan, const void *a_data, const void *b_data,    \
                           void *out_data)                                                         \
    {                                                                                              \
        switch (kind) {                                                                            \
        case EW_ADD: RUNS(T, T, x + y); return true;                                               \
        case EW_SUB: RUNS(T, T, x - y); return true;                                               \
        case EW_MUL: RUNS(T, T, x * y); return true;                                               \
        case EW_DIV: RUNS(T, T, x / y); return true;                                               \
        case EW_FLOORDIV: RUNS(T, T, floor((double)x / (double)y)); return true;                   \
        case EW_FLOORMOD: RUNS(T, T, float_floormod(x, y)); return true;                           \
        case EW_POW: RUNS(T, T, pow(x, y)); return true;                                           \
        case EW_MAX: RUNS(T, T, FMAX(x, y)); return true;                                          \
        case EW_MIN: RUNS(T, T, FMIN(x, y)); return true;                                          \
        case EW_LESS: RUNS(bool, T, x < y); return true;                                           \
        case EW_LESS_EQUAL: RUNS(bool, T, x <= y); return true;                                    \
        case EW_GREATER: RUNS(bool, T, x > y); return true;                                        \
        case EW_GREATER_EQUAL: RUNS(bool, T, x >= y); return true;                                 \
        case EW_EQUAL: RUNS(bool, T, x == y); return true;                                         \
        case EW_NOT_EQUAL: RUNS(bool, T, x != y); return true;                                     \
        case EW_ATAN2: RUNS(T, T, atan2(x, y)); return true;                                       \
        case EW_SQUARED_DIFFERENCE: RUNS(T, T, (x - y) * (x - y)); return true;                    \
        case EW_DIVIDE_NO_NAN: RUNS(T, T, y == 0 ? (T)0 : x / y); return true;                     \
        default: return false;                                                                     \
        }                                                                                          \
    }

/* RUNS(TO, TI, EXPR): apply EXPR over the plan, x from a, y from b. */
#define RUNS(TO, TI, EXPR)                                                                         \
    do {                                                                                           \
        _Pragma("GCC diagnostic push");                                                            \
        _Pragma("GCC diagnostic ignored \"-Wunused-variable\"");                                   \
        _Pragma("GCC diagnostic ignored \"-Wtype-limits\"");                                       \
        _Pragma("GCC diagnostic ignored \"-Wbool-compare\"");                                      \
        _Pragma("GCC diagnostic ignored \"-Wsign-compare\"");                                      \
        FOR_EACH_RUN(plan, INNER(TO, TI, EXPR, oo_, oa_, ob_, n_, isa_, isb_));                    \
        _Pragma("GCC diagnostic pop");                                                             \
    } while (0)

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t i8;
typedef int16_t i16;
typedef int32_t i32;
typedef int64_t i64;

INT_BINARY(i8, u8, INT8_MIN)
INT_BINARY(i16, u16, INT16_MIN)
INT_BINARY(i32, u32, INT32_MIN)
INT_BINARY(i64, u64, INT64_MIN)
INT_BINARY(u8, u8, 0)
INT_BINARY(u16, u16, 0)
INT_BINARY(u32, u32, 0)
INT_BINARY(u64, u64, 0)
FLOAT_BINARY(float)
FLOAT_BINARY(double)

static bool binary_bool(int kind, const Plan *plan, const void *a_data, const void *b_data,
                        void *out_data)
{
    switch (kind) {
    case EW_AND: RUNS(bool, bool, x && y); return true;
    case EW_OR: RUNS(bool, bool, x || y); return true;
    case EW_XOR:
    case EW_NOT_EQUAL: RUNS(bool, bool, x != y); return true;
    case EW_EQUAL: RUNS(bool, bool, x == y); return true;
    default: return false;
    }
}

typedef bool (*BinaryKernel)(int, const Plan *, const void *, const void *, void *);

static BinaryKernel binary_kernel(CvDtype dtype)
{
    switch (dtype) {
    case CV_BOOL: return binary_bool;
    case CV_INT8: return binary_i8;
    case CV_INT16: return binary_i16;
    case CV_INT32: return binary_i32;
    case CV_INT64: return binary_i64;
    case CV_UINT8: return binary_u8;
    case CV_UINT16: return binary_u16;
    case CV_UINT32: return binary_u32;
    case CV_UINT64: return binary_u64;
    case CV_FLOAT32: return binary_float;
    case CV_FLOAT64: return binary_double;
    default: return NULL;
    }
}

/* Unary functions reuse the binary machinery with b == a (its value unused). */
#define INT_UNARY(T, U)                                                                            \
    static bool unary_##T(int kind, const Plan *plan, const void *a_data, const void *b_data,     \
                          void *out_data)                                                          \
    {                                                                                              \
        switch (kind) {                                                                            \
        case EW_NEGATIVE: RUNS(T, T, (T)(0 - (U)x)); return true;                                  \
        case EW_ABS: RUNS(T, T, x < 0 ? (T)(0 - (U)x) : x); return true;                           \
        case EW_SQUARE: RUNS(T, T, WRAP(T, U, *, x, x)); return true;                              \
        case EW_ROUND: RUNS(T, T, x); return true;                                                 \
        case EW_SIGN: RUNS(T, T, (T)((x > 0) - (x < 0))); return true;                             \
        case EW_INVERT: RUNS(T, T, (T)~(U)x); return true;                                         \
        default: return false;                                                                     \
        }                                                                                          \
    }

#define FLOAT_UNARY(T, SUFFIX)                                                                     \
    static bool unary_##T(int kind, const Plan *plan, const void *a_data, const void *b_data,     \
                          void *out_data)                                                          \
    {                                                                                              \
        switch (kind) {                                                                            \
        case EW_NEGATIVE: RUNS(T, T, -x); return true;                                             \
        case EW_ABS: RUNS(T, T, fabs##SUFFIX(x)); return true;                                     \
        case EW_SQUARE: RUNS(T, T, x * x); return true;                                            \
        case EW_SQRT: RUNS(T, T, sqrt##SUFFIX(x)); return true;                                    \
        case EW_EXP: RUNS(T, T, exp##SUFFIX(x)); return true;                                      \
        case EW_LOG: RUNS(T, T, log##SUFFIX(x)); return true;                                      \
        case EW_FLOOR: RUNS(T, T, floor##SUFFIX(x)); return true;                                  \
        case EW_CEIL: RUNS(T, T, ceil##SUFFIX(x)); return true;                                    \
        case EW_ROUND: RUNS(T, T, nearbyint##SUFFIX(x)); return true; /* half to even */           \
        case EW_SIN: RUNS(T, T, sin##SUFFIX(x)); return true;                                      \
        case EW_COS: RUNS(T, T, cos##SUFFIX(x)); return true;                                      \
        case EW_TAN: RUNS(T, T, tan##SUFFIX(x)); return true;                                      \
        case EW_ASIN: RUNS(T, T, asin##SUFFIX(x)); return true;                                    \
        case EW_ACOS: RUNS(T, T, acos##SUFFIX(x)); return true;                                    \
        case EW_ATAN: RUNS(T, T, atan##SUFFIX(x)); return true;                                    \
        case EW_SINH: RUNS(T, T, sinh##SUFFIX(x)); return true;                                    \
        case EW_COSH: RUNS(T, T, cosh##SUFFIX(x)); return true;                                    \
        case EW_TANH: RUNS(T, T, tanh##SUFFIX(x)); return true;                                    \
        case EW_SIGMOID: RUNS(T, T, (T)1 / ((T)1 + exp##SUFFIX(-x))); return true;                 \
        case EW_SIGN: RUNS(T, T, isnan(x) ? x : (T)((x > 0) - (x < 0))); return true;              \
        case EW_LOG1P: RUNS(T, T, log1p##SUFFIX(x)); return true;                                  \
        case EW_EXPM1: RUNS(T, T, expm1##SUFFIX(x)); return true;                                  \
        case EW_RSQRT: RUNS(T, T, (T)1 / sqrt##SUFFIX(x)); return true;                            \
        case EW_RECIPROCAL: RUNS(T, T, (T)1 / x); return true;                                     \
        case EW_ERF: RUNS(T, T, erf##SUFFIX(x)); return true;                                      \
        case EW_SOFTPLUS: RUNS(T, T, softplus##SUFFIX(x)); return true;                            \
        case EW_IS_NAN: RUNS(bool, T, isnan(x)); return true;                                      \
        case EW_IS_INF: RUNS(bool, T, isinf(x)); return true;                                      \
        case EW_IS_FINITE: RUNS(bool, T, isfinite(x)); return true;                                \
        default: return false;                                                                     \
        }                                                                                          \
    }

/* softplus as TensorFlow computes it: x itself above -(log(eps) + 2), exp(x)
 * below log(eps) + 2 (eps of the dtype), log1p(exp(x)) between. */
static inline float softplusf(float x)
{
    const float t = logf(FLT_EPSILON) + 2.0f;
    return x > -t ? x : x < t ? expf(x) : log1pf(expf(x));
}

static inline double softplus(double x)
{
    const double t = log(DBL_EPSILON) + 2.0;
    return x > -t ? x : x < t ? exp(x) : log1p(exp(x));
}

INT_UNARY(i8, u8)
INT_UNARY(i16, u16)
INT_UNARY(i32, u32)
INT_UNARY(i64, u64)
INT_UNARY(u8, u8)
INT_UNARY(u16, u16)
INT_UNARY(u32, u32)
INT_UNARY(u64, u64)
FLOAT_UNARY(float, f)
FLOAT_UNARY(double, )

static bool unary_bool(int kind, const Plan *plan, const void *a_data, const void *b_data,
                       void *out_data)
{
    if (kind != EW_NOT)
        return false;
    RUNS(bool, bool, !x);
    return true;
}

static BinaryKernel unary_kernel(CvDtype dtype)
{
    switch (dtype) {
    case CV_BOOL: return unary_bool;
    case CV_INT8: return unary_i8;
    case CV_INT16: return unary_i16;
    case CV_INT32: return unary_i32;
    case CV_INT64: return unary_i64;
    case CV_UINT8: return unary_u8;
    case CV_UINT16: return unary_u16;
    case CV_UINT32: return unary_u32;
    case CV_UINT64: return unary_u64;
    case CV_FLOAT32: return unary_float;
    case CV_FLOAT64: return unary_double;
    default: return NULL;
    }
}

/* The functions whose result is bool whatever the operands' dtype. */
static bool is_comparison(int kind)
{
    return (kind >= EW_LESS && kind <= EW_NOT_EQUAL) || kind == EW_IS_NAN || kind == EW_IS_INF ||
           kind == EW_IS_FINITE;
}

static CvStatus elementwise_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_out;
    int kind = attrs->num_ints > ELEMENTWISE_KIND ? (int)attrs->ints[ELEMENTWISE_KIND] : -1;
    bool unary = kind >= EW_FIRST_UNARY;
    if (kind < 0 || kind >= EW_COUNT || num_in != (unary ? 1 : 2))
        return cv_error(CV_INVALID_ARGUMENT, "elementwise function %d with %d inputs", kind, num_in);
    const CvTensor *a = &in[0], *b = unary ? &in[0] : &in[1];
    if (a->dtype != b->dtype)
        return cv_error(CV_INVALID_ARGUMENT, "operands have different dtypes: %s and %s",
                        cv_dtype_name(a->dtype), cv_dtype_name(b->dtype));
    bool is_int = a->dtype != CV_BOOL && a->dtype != CV_FLOAT32 && a->dtype != CV_FLOAT64;
    CvStatus s;
    if (is_int && (kind == EW_FLOORDIV || kind == EW_FLOORMOD || kind == EW_POW) &&
        (s = check_integer_operands(kind, a, b)))
        return s;
    Plan plan;
    int64_t shape[CV_MAX_RANK];
    int rank = 0;
    if ((s = make_plan(a, b, shape, &rank, &plan)))
        return s;
    CvDtype out_dtype = is_comparison(kind) ? CV_BOOL : a->dtype;
    if ((s = cv_op_output(ctx, &out[0], out_dtype, rank, shape)))
        return s;
    BinaryKernel k = unary ? unary_kernel(a->dtype) : binary_kernel(a->dtype);
    bool done = cv_tensor_num_elements(&out[0]) == 0 ||
                (k && k(kind, &plan, a->data, b->data, out[0].data));
    if (!done) {
        cv_tensor_clear(&out[0]);
        return cv_error(CV_UNIMPLEMENTED, "elementwise function %d is not defined for %s", kind,
                        cv_dtype_name(a->dtype));
    }
    return CV_STATUS_OK;
}

/* CvOp.as_epilogue: + - * / of a float32 scalar constant, or of a vector
 * of one per channel where per_channel says so. cv_epilogue_apply
 * (ops/op.c) computes them as binary_float does, so results are identical. */
static bool elementwise_as_epilogue(const CvOpAttrs *attrs, const CvTensor *operand,
                                    CvEpilogue *out)
{
    int function = attrs->num_ints > ELEMENTWISE_KIND ? (int)attrs->ints[ELEMENTWISE_KIND] : -1;
    CvEpilogueKind kind;
    switch (function) {
    case EW_ADD: kind = CV_EPILOGUE_ADD; break;
    case EW_SUB: kind = CV_EPILOGUE_SUB; break;
    case EW_MUL: kind = CV_EPILOGUE_MUL; break;
    case EW_DIV: kind = CV_EPILOGUE_DIV; break;
    default: return false;
    }
    bool per_channel = attrs->num_ints > ELEMENTWISE_PER_CHANNEL &&
                       attrs->ints[ELEMENTWISE_PER_CHANNEL] == 1;
    int64_t n = operand->rank == 0 ? 1 : operand->rank == 1 ? operand->shape[0] : 0;
    if (operand->dtype != CV_FLOAT32 || n < 1 || n > CV_EPILOGUE_MAX_VALUES ||
        (operand->rank == 1 && !per_channel))
        return false;
    cv_epilogue_init(out, kind, (const float *)operand->data, (int)n);
    return true;
}

const CvOp cv_op_elementwise = {.name = "Elementwise",
                                 .min_inputs = 1,
                                 .max_inputs = 2,
                                 .run = elementwise_run,
                                 .as_epilogue = elementwise_as_epilogue,
                                 .int_attrs = elementwise_int_attrs};
