"""Math ops: ``conveyor.cast``, the elementwise arithmetic, comparisons and
logic behind ``+ - * / < ==`` (``conveyor.math``), ``clip_by_value``, the
reductions (``reduce_sum`` and friends), ``argmax``/``argmin``, ``range``
and ``cumsum``; and the symbolic ``Tensor``'s operators (``x[i]`` too).

Each op works on NumPy arrays (eagerly, in C) and on traced tensors inside a
map function (recorded into the native program). Dtype rules are
TensorFlow's: both operands of a binary op have one dtype; a Python number
is converted to the other operand's dtype (and must fit it); ``/`` on
integers computes in floating point (int8/16 and uint8/16 in float32, wider
integers in float64); results broadcast as in NumPy.

Errors follow TensorFlow: what a graph would reject when a function is traced
(an axis out of range for a known rank) is a ValueError or TypeError when the
pipeline is built; eagerly, and for values only known per element, an
``InvalidArgumentError``.
"""
import builtins

import numpy as np

from conveyor import dtypes as _dtypes
from conveyor import errors
from conveyor.framework.convert import to_array
from conveyor.framework.tracing import (Tensor, apply, convert, current_trace, dtype_of, op_error,
                                        static_shape)
from conveyor.tensor_spec import TensorShape

__all__ = ["cast", "clip_by_value", "add", "subtract", "multiply", "divide", "truediv", "floordiv",
           "floormod", "pow", "maximum", "minimum", "less", "less_equal", "greater",
           "greater_equal", "equal", "not_equal", "logical_and", "logical_or", "logical_xor",
           "logical_not", "negative", "abs", "sqrt", "exp", "log", "floor", "ceil", "round",
           "square", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
           "reduce_any", "reduce_all", "argmax", "argmin", "range", "cumsum",
           "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
           "sigmoid", "sign", "log1p", "expm1", "rsqrt", "reciprocal", "is_nan", "is_inf",
           "is_finite", "erf", "squared_difference", "divide_no_nan", "softplus", "cumprod",
           "reduce_variance", "reduce_std", "reduce_logsumexp", "count_nonzero", "l2_normalize",
           "histogram_fixed_width", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
           "right_shift", "invert"]


def cast(x, dtype, name=None):
    """Cast `x` to `dtype` (``tf.cast``): floats to integers truncate toward
    zero; numbers to bool test for non-zero."""
    dtype = _dtypes.as_dtype(dtype)
    x = convert(x, name="x")
    if dtype == _dtypes.string or dtype_of(x) == _dtypes.string:
        raise op_error(TypeError, f"Cast: cannot cast {dtype_of(x).name} to {dtype.name}")
    return apply("Cast", [x], [(static_shape(x), dtype)], attrs={"dtype": dtype._code})


# -- elementwise ops (csrc/ops/elementwise.c) ---------------------------------

_KINDS = {name: i for i, name in enumerate([
    "add", "subtract", "multiply", "realdiv", "floordiv", "floormod", "pow", "maximum",
    "minimum", "less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
    "logical_and", "logical_or", "logical_xor", "atan2", "squared_difference", "divide_no_nan",
    "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
    "negative", "abs", "logical_not", "sqrt", "exp", "log", "floor", "ceil", "round", "square",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "sign",
    "log1p", "expm1", "rsqrt", "reciprocal", "is_nan", "is_inf", "is_finite", "erf",
    "softplus", "invert"])}
_COMPARISONS = {"less", "less_equal", "greater", "greater_equal", "equal", "not_equal"}
_PREDICATES = {"is_nan", "is_inf", "is_finite"}  # unary, bool result
# Defined for floats only; TensorFlow refuses other dtypes with
# InvalidArgumentError eagerly and TypeError in a graph (a traced map).
_FLOAT_ONLY_TF = {"sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
                  "sigmoid", "log1p", "expm1", "rsqrt", "reciprocal", "erf", "softplus",
                  "atan2"} | _PREDICATES
_SIGNED_INTS = {"int8", "int16", "int32", "int64"}
_SQDIFF_INTS = {"int32", "int64"}
_LOGICAL = {"logical_and", "logical_or", "logical_xor", "logical_not"}
_FLOAT_ONLY = {"realdiv", "sqrt", "exp", "log", "floor", "ceil"}
# tf.bitwise: integers only (TypeError otherwise, eagerly too).
_INT_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "invert"}
_PYTHON_VALUES = (bool, int, float, list, tuple)


def _hinted(value, dtype, fname):
    """A Python number (or list) as `dtype` when it fits, as TensorFlow's
    convert_to_tensor(value, dtype_hint=dtype) does; otherwise its own dtype."""
    if dtype.is_bool or not isinstance(value, _PYTHON_VALUES):
        return convert(value, name=fname)
    arr = np.asarray(value)
    if arr.dtype.kind == "b" or (arr.dtype.kind == "f" and not dtype.is_floating):
        return convert(value, name=fname)
    if arr.dtype.kind in "iu" and dtype.is_integer and arr.size:
        if arr.min() < dtype.min or arr.max() > dtype.max:
            raise op_error(TypeError, f"{fname}: cannot convert {value!r} to {dtype.name}: out "
                                      f"of range")
    return convert(value, dtype, name=fname)


def _broadcast_shape(a, b, fname):
    if a is None or b is None:
        return None
    out = []
    for i in builtins.range(builtins.max(len(a), len(b))):
        x = a[len(a) - 1 - i] if i < len(a) else 1
        y = b[len(b) - 1 - i] if i < len(b) else 1
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y)
        elif x != y:
            raise op_error(ValueError, f"{fname}: Dimensions must be equal, but are {x} and {y} "
                                       f"for shapes {list(a)} and {list(b)}")
        else:
            out.append(x)
    return tuple(reversed(out))


def _float_for(dtype):
    """truediv's computation type for an integer dtype (TensorFlow's table)."""
    return _dtypes.float32 if dtype.size <= 2 else _dtypes.float64


# float16 and bfloat16 are computed in float32 and rounded back to their
# dtype after each step of TensorFlow's functor: one step for most functions;
# these take two, rounding in between (the difference, the quotient).
_HALF = (_dtypes.float16, _dtypes.bfloat16)
_HALF_STEPS = {
    "squared_difference": lambda x, y: (lambda d: _binary("multiply", d, d))(
        _binary("subtract", x, y)),
    "floordiv": lambda x, y: _unary("floor", _binary("truediv", x, y)),
}


def _binary(fname, x, y, operator=False):
    """x `fname` y. Called for a Python operator (``operator``) on a traced
    tensor, operands TensorFlow would refuse (mixed dtypes, strings) make
    the function run in Python with NumPy's rules instead of failing: such
    code was written for NumPy."""
    def refuse(exc_type, message):
        traced = next((v for v in (x, y) if isinstance(v, Tensor)), None)
        if operator and traced is not None:
            return traced._trace.fail(f"{message} (NumPy's rules apply in Python)", numpy_use=True)
        return op_error(exc_type, message)
    try:
        if isinstance(y, Tensor) and not isinstance(x, Tensor) and isinstance(x, _PYTHON_VALUES):
            y = convert(y, name="y")
            x = _hinted(x, dtype_of(y), fname)
        else:
            x = convert(x, name="x")
            y = _hinted(y, dtype_of(x), fname)
    except TypeError as e:
        raise refuse(TypeError, str(e)) from None
    dx, dy = dtype_of(x), dtype_of(y)
    if dx != dy:
        raise refuse(TypeError, f"{fname}: x and y must have the same dtype, got {dx.name} "
                                f"and {dy.name}")
    if dx == _dtypes.string:
        if fname not in ("equal", "not_equal"):
            raise refuse(TypeError, f"{fname} is not defined for string tensors")
        shape = _broadcast_shape(static_shape(x), static_shape(y), fname)
        return apply("StringEqual", [x, y], [(shape, _dtypes.bool)],
                     attrs={"negate": fname == "not_equal"})
    if (fname in _LOGICAL) != dx.is_bool and fname not in ("equal", "not_equal"):
        raise refuse(TypeError, f"{fname} is not defined for {dx.name} tensors")
    shape = _broadcast_shape(static_shape(x), static_shape(y), fname)
    if fname in _INT_ONLY and not dx.is_integer:
        raise refuse(TypeError, f"{fname}: Value for attr 'T' of {dx.name} is not in the list "
                                f"of allowed values (integers)")
    if fname in _FLOAT_ONLY_TF and not dx.is_floating:
        raise _error(_traced(x, y), TypeError, f"{fname}: Value for attr 'T' of {dx.name} is "
                                               f"not in the list of allowed values (floats)")
    if fname == "squared_difference" and not dx.is_floating and dx.name not in _SQDIFF_INTS:
        raise _error(_traced(x, y), TypeError, f"squared_difference: Value for attr 'T' of "
                                               f"{dx.name} is not in the list of allowed values")
    if fname == "divide_no_nan" and dx.is_integer:
        x, y, dx = cast(x, _float_for(dx)), cast(y, _float_for(dx)), _float_for(dx)
    if fname == "truediv":
        if dx.is_integer:
            x, y, dx = cast(x, _float_for(dx)), cast(y, _float_for(dx)), _float_for(dx)
        fname = "realdiv"
    if fname in _FLOAT_ONLY and not dx.is_floating:
        raise op_error(TypeError, f"{fname} is not defined for {dx.name} tensors")
    half = dx in _HALF
    if half and fname in _HALF_STEPS:  # Eigen's functor rounds between its steps
        return _HALF_STEPS[fname](x, y)
    if half:  # computed in float32 and rounded back, as TensorFlow (Eigen) does
        x, y = cast(x, _dtypes.float32), cast(y, _dtypes.float32)
    out_dtype = _dtypes.bool if fname in _COMPARISONS else (_dtypes.float32 if half else dx)
    x, y = _unbroadcast(x, y, shape), _unbroadcast(y, x, shape)
    attrs = {"kind": _KINDS[fname]}
    sx, sy = static_shape(x), static_shape(y)
    if sx and sy is not None and len(sy) == 1 and sy[0] is not None and sx[-1] == sy[0]:
        attrs["per_channel"] = 1  # y runs along x's last dim: the result is x's shape
    result = apply("Elementwise", [x, y], [(shape, out_dtype)], attrs=attrs)
    if half and fname not in _COMPARISONS:
        result = cast(result, dx)
    return result


def _unbroadcast(v, other, shape):
    """v, or the input of the tf.broadcast_to that made v when the op's
    result (of static `shape`) has that shape with it too: the same values,
    one copy fewer."""
    if not isinstance(v, Tensor) or None in (shape or (None,)):
        return v
    source = v._trace.broadcast_inputs.get(v._key)
    if source is None or static_shape(other) is None or None in static_shape(other):
        return v
    try:
        same = _broadcast_shape(static_shape(other), static_shape(source), "") == shape
    except (ValueError, errors.InvalidArgumentError):
        return v
    return source if same else v


def _unary(fname, x):
    x = convert(x, name="x")
    dx = dtype_of(x)
    if dx == _dtypes.string or (fname in _LOGICAL) != dx.is_bool:
        raise op_error(TypeError, f"{fname} is not defined for {dx.name} tensors")
    if fname in _FLOAT_ONLY and not dx.is_floating:
        raise op_error(TypeError, f"{fname} is not defined for {dx.name} tensors")
    if fname in _INT_ONLY and not dx.is_integer:
        raise op_error(TypeError, f"{fname}: Value for attr 'T' of {dx.name} is not in the list "
                                  f"of allowed values (integers)")
    if (fname in _FLOAT_ONLY_TF and not dx.is_floating) or \
            (fname in ("sign", "abs") and not dx.is_floating and dx.name not in _SIGNED_INTS):
        raise _error(_traced(x), TypeError, f"{fname}: Value for attr 'T' of {dx.name} is not "
                                            f"in the list of allowed values")
    half = dx in _HALF
    if half and fname == "sigmoid":  # exp(x) / (1 + exp(x)), each step rounded (Eigen's),
        e = _unary("exp", x)           # and 1 where exp(x) is infinite
        q = _binary("truediv", e, _binary("add", e, 1))
        return apply("SelectV2", [_unary("is_inf", e), np.ones((), dx.as_numpy_dtype), q],
                     [(static_shape(x), dx)])
    if dx == _dtypes.bfloat16 and fname == "softplus":
        return _half_softplus(x, dx)
    if half:
        x = cast(x, _dtypes.float32)
    predicate = fname in _PREDICATES
    result = apply("Elementwise", [x], [(static_shape(x),
                                         _dtypes.bool if predicate else dtype_of(x))],
                   attrs={"kind": _KINDS[fname]})
    return cast(result, dx) if half and not predicate else result


def _half_softplus(x, dx):
    """Eigen's softplus in bfloat16, each step rounded: x where x is large,
    exp(x) where it is very negative, else log1p(exp(x)); the threshold is
    log(epsilon) + 2 in that dtype."""
    npdt = dx.as_numpy_dtype
    th = npdt(np.float32(npdt(np.log(np.float32(np.finfo(npdt).eps)))) + np.float32(2))
    e = _unary("exp", x)
    shape = static_shape(x)
    small = apply("SelectV2", [_binary("less", x, th), e,
                               _unary("log1p", e)], [(shape, dx)])
    return apply("SelectV2", [_binary("greater", x, -th), x, small], [(shape, dx)])


def _named(op, fname, doc):
    op.__name__ = op.__qualname__ = fname
    op.__doc__ = doc
    return op


def _make_binary(fname, doc):
    return _named(lambda x, y, name=None: _binary(fname, x, y), fname, doc)


def _make_unary(fname, doc):
    return _named(lambda x, name=None: _unary(fname, x), fname, doc)


add = _make_binary("add", "x + y elementwise, broadcasting (``tf.math.add``).")
subtract = _make_binary("subtract", "x - y elementwise (``tf.math.subtract``).")
multiply = _make_binary("multiply", "x * y elementwise (``tf.math.multiply``).")
truediv = _make_binary("truediv", "x / y in floating point (``tf.math.truediv``): integers are "
                                  "divided as float32 (8/16-bit) or float64.")
divide = truediv
floordiv = _make_binary("floordiv", "x // y rounded toward negative infinity "
                                    "(``tf.math.floordiv``); integer division by zero is an "
                                    "InvalidArgumentError.")
floormod = _make_binary("floormod", "x % y with the sign of y (``tf.math.floormod``).")
pow = _make_binary("pow", "x ** y (``tf.math.pow``); negative integer powers of integers are "  # noqa: A001
                          "an InvalidArgumentError.")
maximum = _make_binary("maximum", "The larger of x and y (``tf.math.maximum``); NaN if either is.")
minimum = _make_binary("minimum", "The smaller of x and y (``tf.math.minimum``); NaN if either is.")
less = _make_binary("less", "x < y elementwise, as bool (``tf.math.less``).")
less_equal = _make_binary("less_equal", "x <= y elementwise, as bool.")
greater = _make_binary("greater", "x > y elementwise, as bool.")
greater_equal = _make_binary("greater_equal", "x >= y elementwise, as bool.")
equal = _make_binary("equal", "x == y elementwise, as bool (``tf.math.equal``).")
not_equal = _make_binary("not_equal", "x != y elementwise, as bool.")
logical_and = _make_binary("logical_and", "x AND y for bool tensors.")
logical_or = _make_binary("logical_or", "x OR y for bool tensors.")
logical_xor = _make_binary("logical_xor", "x XOR y for bool tensors.")
negative = _make_unary("negative", "-x elementwise (integers wrap).")
abs = _make_unary("abs", "``|x|`` elementwise (``tf.math.abs``).")  # noqa: A001
logical_not = _make_unary("logical_not", "NOT x for bool tensors.")
sqrt = _make_unary("sqrt", "Square root of a float tensor.")
exp = _make_unary("exp", "e ** x for a float tensor.")
log = _make_unary("log", "Natural logarithm of a float tensor.")
floor = _make_unary("floor", "Largest integer not greater than x (float tensors).")
ceil = _make_unary("ceil", "Smallest integer not less than x (float tensors).")
round = _make_unary("round", "x rounded half to even (``tf.math.round``).")  # noqa: A001
square = _make_unary("square", "x * x elementwise.")

# Float-only functions (tf.math): float16 is computed in float32 and rounded
# back; float32 uses the C library's float functions, which may differ from
# TensorFlow's (Eigen's) approximations in the last bit (docs/differences.md).
sin = _make_unary("sin", "Sine of a float tensor, in radians (``tf.math.sin``).")
cos = _make_unary("cos", "Cosine of a float tensor, in radians (``tf.math.cos``).")
tan = _make_unary("tan", "Tangent of a float tensor (``tf.math.tan``).")
asin = _make_unary("asin", "Inverse sine of a float tensor (``tf.math.asin``); NaN outside "
                           "[-1, 1].")
acos = _make_unary("acos", "Inverse cosine of a float tensor (``tf.math.acos``); NaN outside "
                           "[-1, 1].")
atan = _make_unary("atan", "Inverse tangent of a float tensor (``tf.math.atan``).")
sinh = _make_unary("sinh", "Hyperbolic sine of a float tensor (``tf.math.sinh``).")
cosh = _make_unary("cosh", "Hyperbolic cosine of a float tensor (``tf.math.cosh``).")
tanh = _make_unary("tanh", "Hyperbolic tangent of a float tensor (``tf.math.tanh``).")
sigmoid = _make_unary("sigmoid", "1 / (1 + exp(-x)) for a float tensor (``tf.math.sigmoid``).")
sign = _make_unary("sign", "-1, 0 or 1 by the sign of x (``tf.math.sign``); NaN stays NaN. "
                           "Floats and signed integers.")
log1p = _make_unary("log1p", "log(1 + x), accurate for small x (``tf.math.log1p``).")
expm1 = _make_unary("expm1", "exp(x) - 1, accurate for small x (``tf.math.expm1``).")
rsqrt = _make_unary("rsqrt", "1 / sqrt(x) for a float tensor (``tf.math.rsqrt``).")
reciprocal = _make_unary("reciprocal", "1 / x for a float tensor (``tf.math.reciprocal``).")
is_nan = _make_unary("is_nan", "Whether each value is NaN, as bool (``tf.math.is_nan``).")
is_inf = _make_unary("is_inf", "Whether each value is +-inf, as bool (``tf.math.is_inf``).")
is_finite = _make_unary("is_finite", "Whether each value is neither NaN nor infinite, as bool "
                                     "(``tf.math.is_finite``).")
erf = _make_unary("erf", "The Gauss error function of a float tensor (``tf.math.erf``).")
softplus = _make_unary("softplus", "log(exp(x) + 1) for a float tensor (``tf.math.softplus``), "
                                   "computed as TensorFlow does: x itself for large x, exp(x) "
                                   "for very negative x.")
atan2 = _named(lambda y, x, name=None: _binary("atan2", y, x), "atan2",
               "The angle of the point (x, y) in radians, elementwise (``tf.math.atan2``; "
               "note the argument order y, x).")
squared_difference = _make_binary("squared_difference", "(x - y) * (x - y) elementwise "
                                                        "(``tf.math.squared_difference``); "
                                                        "floats, int32 and int64.")
divide_no_nan = _make_binary("divide_no_nan", "x / y, or 0 where y is 0 "
                                              "(``tf.math.divide_no_nan``); integers are "
                                              "divided in floating point as by truediv.")

# tf.bitwise (integers): shifts by a count clamped to [0, bits - 1], as TensorFlow.
bitwise_and = _make_binary("bitwise_and", "x & y bitwise (``tf.bitwise.bitwise_and``).")
bitwise_or = _make_binary("bitwise_or", "x | y bitwise (``tf.bitwise.bitwise_or``).")
bitwise_xor = _make_binary("bitwise_xor", "x ^ y bitwise (``tf.bitwise.bitwise_xor``).")
left_shift = _make_binary("left_shift", "x << y (``tf.bitwise.left_shift``); y clamped to "
                                        "[0, bits - 1].")
right_shift = _make_binary("right_shift", "x >> y, arithmetic for signed x "
                                          "(``tf.bitwise.right_shift``); y clamped to "
                                          "[0, bits - 1].")
invert = _make_unary("invert", "~x bitwise (``tf.bitwise.invert``).")


def _getitem(x, key):
    """x[key] on a traced tensor: integers, slices (with steps), ``...`` and
    ``None`` (newaxis), as NumPy's basic indexing."""
    trace = x._trace
    if not isinstance(key, tuple):
        key = (key,)
    shape = static_shape(x)
    if shape is not None and any(_dynamic_slice(k) for k in key):
        return _getitem_dynamic(x, key, shape)
    if shape is None or any(
            isinstance(k, (Tensor, list, np.ndarray)) or
            (isinstance(k, slice) and any(isinstance(v, Tensor)
                                          for v in (k.start, k.stop, k.step))) for k in key):
        raise trace.fail("indexing with tensors, lists or on an unknown rank is not supported "
                         "natively")
    if builtins.sum(k is Ellipsis for k in key) > 1:
        raise op_error(IndexError, "an index can only have a single ellipsis ('...')")
    used = builtins.sum(1 for k in key if k is not None and k is not Ellipsis)
    if used > len(shape):
        raise op_error(IndexError, f"too many indices: {len(shape)}-dimensional tensor, {used} "
                                   f"indexed")
    items, out, d = [], [], 0
    for k in key:
        if k is Ellipsis:
            for _ in builtins.range(len(shape) - used):
                items.append((1, 0, 0, 1, 0, 0))
                out.append(shape[d])
                d += 1
        elif k is None:
            items.append((2, 0, 0, 1, 0, 0))
            out.append(1)
        elif isinstance(k, slice):
            step = 1 if k.step is None else int(k.step)
            if step == 0:
                raise op_error(ValueError, "slice step cannot be zero")
            items.append((1, int(k.start or 0), int(k.stop or 0), step, k.start is not None,
                          k.stop is not None))
            out.append(None if shape[d] is None else len(builtins.range(shape[d])[k]))
            d += 1
        else:
            i = int(k)
            if shape[d] is not None and not -shape[d] <= i < shape[d]:
                raise op_error(IndexError, f"index {i} is out of bounds for dimension {d} with "
                                           f"size {shape[d]}")
            items.append((0, i, 0, 1, 1, 0))
            d += 1
    out.extend(shape[d:])
    dims = [int(v) for item in items for v in item]
    if 1 + len(dims) > 64:
        raise trace.fail("an index with more than 10 parts")
    return apply("StridedSlice", [x], [(tuple(out), dtype_of(x))],
                 attrs={"num_dims": len(items), "dims": dims})


def _dynamic_slice(k):
    """A slice whose start or stop is a traced scalar, with step 1 (x[:n])."""
    return (isinstance(k, slice) and k.step in (None, 1) and
            any(isinstance(v, Tensor) for v in (k.start, k.stop)))


def _getitem_dynamic(x, key, shape):
    """x[key] where some slices have bounds known per element: the static
    part first (those slices as ``:``), then each of them as a gather of
    range(start, stop) along its axis, the bounds wrapped and clamped to
    [0, dim] as Python's (and TensorFlow's) slicing does."""
    plain, dynamic, loose, axis = [], [], [], 0
    used = builtins.sum(1 for k in key if k is not None and k is not Ellipsis)
    for k in key:
        if k is Ellipsis:
            axis += len(shape) - used
            plain.append(k)
        elif _dynamic_slice(k):
            dynamic.append((axis, k))
            plain.append(slice(None))
            axis += 1
        else:
            if isinstance(k, Tensor) or isinstance(k, slice) and any(
                    isinstance(v, Tensor) for v in (k.start, k.stop, k.step)):
                raise x._trace.fail("indexing with tensors, or a slice with a step and "
                                    "tensor bounds, is not supported natively")
            plain.append(k)
            if isinstance(k, slice):
                loose.append(axis)
            axis += 0 if isinstance(k, (int, np.integer)) else 1
    y = _getitem(x, tuple(plain))
    for axis, k in dynamic:
        y_shape = static_shape(y)
        dim = y_shape[axis]
        if dim is None:
            dim = _getitem(apply("Shape", [y], [((len(y_shape),), _dtypes.int32)]), axis)
        dim = cast(dim, _dtypes.int64) if isinstance(dim, Tensor) else np.int64(dim)
        zero = np.int64(0)

        def bound(v, default):
            if v is None:
                return default
            v = cast(v, _dtypes.int64) if isinstance(v, Tensor) else np.int64(int(v))
            wrapped = apply("SelectV2", [less(v, zero), add(v, dim), v], [((), _dtypes.int64)]) \
                if isinstance(v, Tensor) or isinstance(dim, Tensor) else (v + dim if v < 0 else v)
            return minimum(maximum(wrapped, zero), dim)
        start, stop = bound(k.start, zero), bound(k.stop, dim)
        indices = range(start, maximum(start, stop), dtype=_dtypes.int64)
        out = list(y_shape)
        out[axis] = None
        y = apply("GatherV2", [y, indices], [(tuple(out), dtype_of(y))], attrs={"axis": axis})
    if loose:  # TensorFlow's begin/end are then not constant: no sliced dim is static
        y.shape = TensorShape([None if d in loose else n for d, n in enumerate(y.shape.as_list())])
    return y


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """`t` with values below/above the bounds replaced by them (``tf.clip_by_value``)."""
    return minimum(maximum(t, clip_value_min), clip_value_max)


# -- Tensor's operators ---------------------------------------------------------
# A traced Tensor's operators run the ops above (TensorFlow's semantics); they
# are installed here, where those ops are defined, as TensorFlow's math_ops
# overrides tf.Tensor's operators. conveyor/__init__.py imports this module, so
# every Tensor has them.

def _operator(fname, reflected=False):
    def method(self, other):
        if other is None and fname in ("equal", "not_equal"):
            return fname == "not_equal"
        x, y = (other, self) if reflected else (self, other)
        return _binary(fname, x, y, operator=True)
    method.__name__ = fname
    return method


def _install_operators(cls):
    for dunder, fname in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                          ("truediv", "truediv"), ("floordiv", "floordiv"), ("mod", "floormod"),
                          ("pow", "pow"), ("and", "logical_and"), ("or", "logical_or"),
                          ("xor", "logical_xor")):
        setattr(cls, f"__{dunder}__", _operator(fname))
        setattr(cls, f"__r{dunder}__", _operator(fname, reflected=True))
    for dunder, fname in (("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
                          ("ge", "greater_equal"), ("eq", "equal"), ("ne", "not_equal")):
        setattr(cls, f"__{dunder}__", _operator(fname))
    cls.__neg__ = lambda self: negative(self)
    cls.__abs__ = lambda self: abs(self)
    cls.__invert__ = lambda self: logical_not(self)
    cls.__getitem__ = _getitem


_install_operators(Tensor)


# -- cumsum (csrc/ops/cumsum.c) ------------------------------------------------


def _scan(product, x, axis, exclusive, reverse):
    fname = "cumprod" if product else "cumsum"
    v = convert(x, name="x")
    traced = _traced(v)
    dt = dtype_of(v)
    if dt in (_dtypes.string, _dtypes.bool):
        raise _error(traced, TypeError, f"Value for attr 'T' of {dt.name} is not in the list "
                                        f"of allowed values ({fname} takes numbers)")
    axes = _static_ints(axis, fname, "axis")
    if len(axes) != 1:
        raise _error(traced, ValueError, "Shape must be rank 0 but is rank 1")
    a = axes[0]
    shape = static_shape(v)
    if shape is None:
        raise v._trace.fail(f"{fname} of a tensor of unknown rank is not supported natively")
    # An axis out of range is the op's InvalidArgumentError (per element when
    # traced, as in TensorFlow's graph).
    return apply("Cumsum", [v], [(shape, dt)], attrs={"axis": a, "exclusive": int(bool(exclusive)),
                                                      "reverse": int(bool(reverse)),
                                                      "product": int(bool(product))})


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):  # noqa: A002
    """Running sums along `axis` (``tf.math.cumsum``): `exclusive` leaves
    each value out of its own sum (the first is 0), `reverse` sums from the
    end. Sums accumulate in the dtype (integers wrap), as TensorFlow."""
    return _scan(False, x, axis, exclusive, reverse)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):  # noqa: A002
    """Running products along `axis` (``tf.math.cumprod``): `exclusive`
    leaves each value out of its own product (the first is 1), `reverse`
    multiplies from the end. Products accumulate in the dtype (integers
    wrap), as TensorFlow."""
    return _scan(True, x, axis, exclusive, reverse)


# -- statistics composed of the ops above (traced as those ops) -----------------


def _float_input(fname, input_tensor):
    x = convert(input_tensor, name="input_tensor")
    if not dtype_of(x).is_floating:
        raise op_error(TypeError, f"{fname}: input must be a float tensor, got "
                                  f"{dtype_of(x).name}")
    return x


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """The variance along `axis` (``tf.math.reduce_variance``): the mean of
    the squared differences from the mean, as TensorFlow computes it. Float
    tensors; `axis` and `keepdims` as in ``reduce_mean``."""
    x = _float_input("reduce_variance", input_tensor)
    mean = reduce_mean(x, axis, keepdims=True)
    return reduce_mean(squared_difference(x, mean), axis, keepdims=keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """The standard deviation along `axis` (``tf.math.reduce_std``): the
    square root of ``reduce_variance``."""
    return sqrt(reduce_variance(input_tensor, axis, keepdims))


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """log(sum(exp(x))) along `axis` (``tf.math.reduce_logsumexp``), computed
    stably as TensorFlow does: the (finite) maximum is subtracted before exp
    and added back after log."""
    x = _float_input("reduce_logsumexp", input_tensor)
    kept = _finite_or_zero(reduce_max(x, axis, keepdims=True))
    out = log(reduce_sum(exp(subtract(x, kept)), axis, keepdims=keepdims))
    top = kept if keepdims else _finite_or_zero(reduce_max(x, axis, keepdims=False))
    return add(out, top)


def count_nonzero(input, axis=None, keepdims=None, dtype=_dtypes.int64, name=None):  # noqa: A002
    """The number of non-zero values along `axis` (``tf.math.count_nonzero``),
    as `dtype` (int64 by default); strings count when not empty, bools when
    True."""
    x = convert(input, name="input")
    dt = dtype_of(x)
    zero = b"" if dt == _dtypes.string else False if dt.is_bool else 0
    nonzero = not_equal(x, zero)
    return cast(reduce_sum(cast(nonzero, _dtypes.int64), axis, keepdims=bool(keepdims)),
                _dtypes.as_dtype(dtype))


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """`x` divided by its L2 norm along `axis` (``tf.math.l2_normalize``):
    x * rsqrt(max(sum(x ** 2), epsilon)), as TensorFlow computes it."""
    if dim is not None:
        axis = dim
    x = _float_input("l2_normalize", x)
    square_sum = reduce_sum(square(x), axis, keepdims=True)
    return multiply(x, rsqrt(maximum(square_sum, epsilon)))


def _finite_or_zero(t):
    """t where it is finite, 0 elsewhere (tf.where's op; array_ops imports this module)."""
    zero = convert(np.zeros((), dtype_of(t).as_numpy_dtype))
    return apply("SelectV2", [is_finite(t), t, zero], [(static_shape(t), dtype_of(t))])


# -- histogram_fixed_width (csrc/ops/histogram_fixed_width.c) ------------------


def histogram_fixed_width(values, value_range, nbins=100, dtype=_dtypes.int32, name=None):
    """The counts of `values` in `nbins` equal bins over `value_range`
    [lo, hi] (``tf.histogram_fixed_width``; AutoAugment's equalize): values
    below lo count in the first bin, values from hi up in the last. `values`
    and `value_range` share a dtype (int32, int64, float32, float64); `nbins`
    is a Python int here (a traced one makes the function run in Python);
    the counts are int32 or int64 (`dtype`). lo >= hi or nbins <= 0 is an
    InvalidArgumentError."""
    v = convert(values, name="values")
    r = _hinted(value_range, dtype_of(v), "histogram_fixed_width") \
        if isinstance(value_range, (list, tuple)) else convert(value_range, name="value_range")
    dtype = _dtypes.as_dtype(dtype)
    traced = _traced(v, r)
    if dtype not in (_dtypes.int32, _dtypes.int64):
        raise op_error(TypeError, f"histogram_fixed_width: dtype must be int32 or int64, got "
                                  f"{dtype.name}")
    if dtype_of(v) != dtype_of(r):
        raise op_error(TypeError, f"histogram_fixed_width: values and value_range must have the "
                                  f"same dtype, got {dtype_of(v).name} and {dtype_of(r).name}")
    if dtype_of(v) not in (_dtypes.int32, _dtypes.int64, _dtypes.float32, _dtypes.float64):
        raise _error(traced, TypeError, f"histogram_fixed_width: Value for attr 'T' of "
                                        f"{dtype_of(v).name} is not in the list of allowed "
                                        f"values (int32, int64, float32, float64)")
    n = _static_ints(nbins, "histogram_fixed_width", "nbins")
    if len(n) != 1:
        raise _error(traced, ValueError, "nbins must be a scalar")
    if n[0] <= 0 and traced:
        raise op_error(ValueError, f"nbins should be a positive number, but got '{n[0]}'")
    return apply("HistogramFixedWidth", [v, r], [((n[0],), dtype)],
                 attrs={"nbins": n[0], "dtype": dtype._code})


# -- helpers of the reductions and of conveyor.ops.array_ops -----------------------


def _traced(*values):
    return builtins.any(isinstance(v, Tensor) for v in values) or current_trace() is not None


def _error(traced, exc_type, message):
    """TensorFlow's error for a bad argument: a graph raises `exc_type`
    (ValueError / TypeError) when built; eagerly it is InvalidArgumentError."""
    return op_error(exc_type if traced else errors.InvalidArgumentError, message)


def _static_ints(value, fname, what):
    """A static int or list of ints (an axis argument); a traced one makes
    the function run in Python."""
    if isinstance(value, Tensor):
        raise value._trace.fail(f"{fname} with a traced `{what}` is not supported natively")
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu" and arr.size:
        raise op_error(TypeError, f"{fname}: `{what}` must be an int or a list of ints, got "
                                  f"{value!r}")
    return [int(a) for a in arr.reshape(-1)]


# -- reductions (csrc/ops/reduce.c) ---------------------------------------------

_REDUCE_KINDS = {"sum": 0, "mean": 1, "max": 2, "min": 3, "prod": 4, "any": 5, "all": 6}


_TF_OP = {"sum": "Sum", "mean": "Mean", "max": "Max", "min": "Min", "prod": "Prod",
          "any": "Any", "all": "All"}


def _reduce(kind, input_tensor, axis, keepdims):
    logical = kind in ("any", "all")
    if logical and type(input_tensor) is np.ndarray and input_tensor.dtype.kind in "iuf":
        input_tensor = input_tensor.astype(bool)  # TensorFlow converts arrays to bool here
    x = convert(input_tensor, name="input_tensor")
    traced = _traced(x)
    dt = dtype_of(x)
    if dt == _dtypes.string or dt.is_bool != logical:
        raise _error(traced, TypeError, f"{_TF_OP[kind]}: input must be "
                                        f"{'bool' if logical else 'a number'}, got {dt.name}")
    axes = None if axis is None else _static_ints(axis, f"reduce_{kind}", "axis")
    shape = static_shape(x)
    if axes is None:
        out = () if not keepdims else None if shape is None else (1,) * len(shape)
    elif shape is None:
        out = None
    else:
        rank, seen = len(shape), set()
        for a in axes:
            if not -rank <= a < rank:
                raise _error(traced, ValueError, f"Invalid reduction dimension {a} for input "
                                                 f"with {rank} dimensions.")
            if a % rank in seen and traced:
                raise op_error(ValueError, f"Invalid reduction arguments: Axes contains "
                                           f"duplicate dimension: {a % rank}")
            seen.add(a % rank)
        out = tuple(1 if d in seen else n for d, n in enumerate(shape) if keepdims or d not in seen)
    attrs = {"kind": _REDUCE_KINDS[kind], "keepdims": int(bool(keepdims)),
             "num_axes": -1 if axes is None else len(axes), "axes": list(axes or [])}
    if 3 + len(attrs["axes"]) > 64:
        raise op_error(ValueError, f"reduce_{kind}: at most 61 axes")
    if dt == _dtypes.bfloat16 and kind != "prod":
        # TensorFlow reduces bfloat16 in float32 and rounds the result once;
        # its product rounds after every factor, which stays refused.
        result = apply("Reduce", [cast(x, _dtypes.float32)], [(out, _dtypes.float32)],
                       attrs=attrs)
        return cast(result, dt)
    return apply("Reduce", [x], [(out, dt)], attrs=attrs)


def _make_reduce(kind, doc):
    def op(input_tensor, axis=None, keepdims=False, name=None):
        return _reduce(kind, input_tensor, axis, keepdims)
    op.__name__ = op.__qualname__ = f"reduce_{kind}"
    op.__doc__ = doc + """

    `axis`: None (every dim), an int or a list of ints (negative counts from
    the end); reduced dims are dropped, or kept as 1 with `keepdims`. The
    reduction of no values is the operation's identity."""
    return op


reduce_sum = _make_reduce("sum", "The sum of a tensor's values along `axis` (``tf.reduce_sum``). "
                                 "Integer sums wrap; float32 sums are accumulated in double.")


reduce_mean = _make_reduce("mean", "The mean along `axis` (``tf.reduce_mean``), in the input's "
                                   "dtype: an integer mean truncates toward zero, as "
                                   "TensorFlow's; the mean of nothing is NaN (0 for integers).")


reduce_max = _make_reduce("max", "The largest value along `axis` (``tf.reduce_max``); NaN if any "
                                 "value is NaN; the dtype's lowest (-inf) for no values.")


reduce_min = _make_reduce("min", "The smallest value along `axis` (``tf.reduce_min``); NaN if any "
                                 "value is NaN; the dtype's highest (inf) for no values.")


reduce_prod = _make_reduce("prod", "The product along `axis` (``tf.reduce_prod``); integer "
                                   "products wrap.")


reduce_any = _make_reduce("any", "Logical OR of a bool tensor along `axis` (``tf.reduce_any``).")


reduce_all = _make_reduce("all", "Logical AND of a bool tensor along `axis` (``tf.reduce_all``).")


# -- argmax / argmin (csrc/ops/arg_min_max.c) ------------------------------------

_INDEX_TYPES = (_dtypes.int16, _dtypes.uint16, _dtypes.int32, _dtypes.int64)


def _arg(is_min, input, axis, output_type):  # noqa: A002
    fname = "argmin" if is_min else "argmax"
    x = convert(input, name="input")
    traced = _traced(x)
    output_type = _dtypes.as_dtype(output_type)
    if output_type not in _INDEX_TYPES:
        raise op_error(TypeError, f"{fname}: output_type must be int16, uint16, int32 or int64, "
                                  f"got {output_type.name}")
    if dtype_of(x) == _dtypes.string:
        raise _error(traced, TypeError, f"{fname} is not defined for string tensors")
    axes = _static_ints(0 if axis is None else axis, fname, "axis")
    if len(axes) != 1:
        raise op_error(ValueError, f"{fname}: `axis` must be a single int, got {axis!r}")
    axis = axes[0]
    shape = static_shape(x)
    out = None
    if shape is not None:
        rank = len(shape)
        if not -rank <= axis < rank:
            raise _error(traced, ValueError, f"Expected dimension in the range [{-rank}, {rank}), "
                                             f"but got {axis}")
        out = shape[:axis % rank] + shape[axis % rank + 1:]
    if dtype_of(x) == _dtypes.bfloat16:  # widened exactly: the same order
        x = cast(x, _dtypes.float32)
    return apply("ArgMinMax", [x], [(out, output_type)],
                 attrs={"is_min": int(is_min), "axis": axis, "dtype": output_type._code})


def argmax(input, axis=None, output_type=_dtypes.int64, name=None):  # noqa: A002
    """The index of the largest value along `axis` (default 0) (``tf.argmax``):
    the first one on ties; NaN values are passed over (as TensorFlow on CPU)."""
    return _arg(False, input, axis, output_type)


def argmin(input, axis=None, output_type=_dtypes.int64, name=None):  # noqa: A002
    """The index of the smallest value along `axis` (default 0) (``tf.argmin``):
    the first one on ties; NaN values are passed over (as TensorFlow on CPU)."""
    return _arg(True, input, axis, output_type)


# -- range (csrc/ops/range.c) -----------------------------------------------------

_RANGE_ORDER = [_dtypes.int32, _dtypes.int64, _dtypes.float16, _dtypes.float32, _dtypes.float64]


_RANGE_DTYPES = (_dtypes.int32, _dtypes.int64, _dtypes.float16, _dtypes.float32, _dtypes.float64)


def _range_size(start, limit, delta, dtype):
    """The static length of a range of constants, or the error TensorFlow's
    graph gives for them (a ValueError when the function is traced)."""
    if dtype.is_integer:
        s, l, d = int(start), int(limit), int(delta)
    else:
        s, l, d = float(start), float(limit), float(delta)
    if d == 0:
        raise op_error(ValueError, "Requires delta != 0")
    if d > 0 and not s <= l:
        raise op_error(ValueError, f"Requires start <= limit when delta > 0: {start}/{limit}")
    if d < 0 and not s >= l:
        raise op_error(ValueError, f"Requires start >= limit when delta < 0: {start}/{limit}")
    if dtype.is_integer:
        return -(-builtins.abs(l - s) // builtins.abs(d))
    t = dtype.as_numpy_dtype
    n = float(np.ceil(np.abs((t(limit) - t(start)) / t(delta))))
    if not n < 2.0 ** 63:
        raise op_error(ValueError, "Requires ((limit - start) / delta) <= 9223372036854775807")
    return int(n)


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001
    """The numbers start, start + delta, ... before limit (``tf.range``).

    With one argument it is the limit (``range(5)`` is 0..4). Without
    `dtype` the arguments' dtypes decide, as TensorFlow: Python ints give
    int32 (int64 when they do not fit), floats float32, and the widest of
    int32 < int64 < float16 < float32 < float64 wins. Arguments may be traced scalars
    (``ds.map(lambda n: tf.range(n))``); the length is then unknown (None)
    in the element spec. delta 0, or a limit on the wrong side of start, is
    an InvalidArgumentError (a ValueError when all arguments are constants
    of a traced function, as TensorFlow's graph checks them).
    """
    if limit is None:
        start, limit = 0, start
    args = [start, limit, delta]
    if dtype is not None:
        dtype = _dtypes.as_dtype(dtype)
        conv = []
        for v in args:
            if isinstance(v, Tensor) or isinstance(v, np.ndarray):
                conv.append(convert(v))
                continue
            if dtype.is_integer and isinstance(v, (float, np.floating)) and \
                    not float(v).is_integer():
                raise op_error(TypeError, f"Cannot convert {v!r} to EagerTensor of dtype "
                                          f"{dtype.name}")
            conv.append(to_array(v))
        args = conv
    else:
        args = [convert(v, name="range argument") for v in args]
        kinds = [dtype_of(v) for v in args]
        if builtins.any(k not in _RANGE_ORDER for k in kinds):
            names = [k.name for k in kinds]
            raise op_error(TypeError, f"range: arguments of dtypes {names}; range infers int32, "
                                      f"int64, float16, float32 or float64 only")
        dtype = builtins.max(kinds, key=_RANGE_ORDER.index)
    if dtype not in _RANGE_DTYPES:
        exc = errors.InvalidArgumentError if dtype in (_dtypes.uint8, _dtypes.bool,
                                                       _dtypes.string) else errors.NotFoundError
        raise op_error(exc, f"Range: no CPU kernel for dtype {dtype.name}")
    for v in args:
        s = static_shape(v)
        if s is not None and len(s) != 0:
            raise _error(_traced(v), ValueError, f"Range: start, limit and delta must be "
                                                 f"scalars, got shape {list(s)}")
    args = [cast(v, dtype) if isinstance(v, Tensor) and v.dtype != dtype
            else v if isinstance(v, Tensor) else np.asarray(v).astype(dtype.as_numpy_dtype)
            for v in args]
    length = None
    if current_trace() is not None and not builtins.any(isinstance(v, Tensor) for v in args):
        length = _range_size(*(v[()] for v in args), dtype)
    return apply("Range", args, [((length,), dtype)])
