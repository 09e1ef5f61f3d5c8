"""Tensor math ops: ``conveyor.cast``, ``reshape``, ``one_hot`` and the
elementwise arithmetic behind ``+ - * /`` (``conveyor.math``).

Each op works on NumPy arrays (eagerly, in C) and on traced tensors inside a
map function (recorded into the native program). Dtype rules are
TensorFlow's: both operands of a binary op have one dtype; a Python number
is converted to the other operand's dtype (and must fit it); ``/`` on
integers computes in floating point (int8/16 and uint8/16 in float32, wider
integers in float64); results broadcast as in NumPy.
"""
import builtins

import numpy as np

from conveyor import dtypes as _dtypes
from conveyor._convert import to_array
from conveyor._tracing import (Tensor, apply, convert, current_trace, dtype_of, op_error,
                               static_shape)
from conveyor.tensor_spec import TensorShape

__all__ = ["cast", "reshape", "one_hot", "shape", "expand_dims", "concat", "stack",
           "clip_by_value", "add", "subtract", "multiply", "divide", "truediv", "floordiv",
           "floormod", "pow", "maximum", "minimum", "less", "less_equal", "greater",
           "greater_equal", "equal", "not_equal", "logical_and", "logical_or", "logical_xor",
           "logical_not", "negative", "abs", "sqrt", "exp", "log", "floor", "ceil", "round",
           "square"]


def cast(x, dtype, name=None):
    """Cast `x` to `dtype` (``tf.cast``): floats to integers truncate toward
    zero; numbers to bool test for non-zero."""
    dtype = _dtypes.as_dtype(dtype)
    x = convert(x, name="x")
    if dtype == _dtypes.string or dtype_of(x) == _dtypes.string:
        raise op_error(TypeError, f"Cast: cannot cast {dtype_of(x).name} to {dtype.name}")
    return apply("Cast", [x], [(static_shape(x), dtype)], attrs={"dtype": dtype._code})


def reshape(tensor, shape, name=None):
    """The values of `tensor` in `shape` (``tf.reshape``): one dim may be -1,
    inferred from the number of values. Shares memory with the input."""
    x = convert(tensor, name="tensor")
    if isinstance(shape, Tensor):
        raise op_error(TypeError, "reshape: `shape` must be static (a list of ints) in conveyor")
    dims = [int(d) for d in np.asarray(shape, dtype=np.int64).reshape(-1)]
    if builtins.sum(d == -1 for d in dims) > 1 or any(d < -1 for d in dims):
        raise op_error(ValueError, f"reshape: invalid shape {dims}: at most one -1, no other "
                                   f"negative dims")
    in_shape = static_shape(x)
    out = list(dims)
    if -1 in dims and in_shape is not None and None not in in_shape:
        known = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
        total = int(np.prod(in_shape, dtype=np.int64))
        if known == 0 or total % known:
            raise op_error(ValueError, f"Cannot reshape a tensor with {total} elements to "
                                       f"shape {dims}")
        out[dims.index(-1)] = total // known
    elif -1 in dims:
        out[dims.index(-1)] = None
    elif in_shape is not None and None not in in_shape:
        total = int(np.prod(in_shape, dtype=np.int64))
        if total != int(np.prod(dims, dtype=np.int64)):
            raise op_error(ValueError, f"Cannot reshape a tensor with {total} elements to shape "
                                       f"{dims} ({int(np.prod(dims, dtype=np.int64))} elements)")
    return apply("Reshape", [x], [(tuple(out), dtype_of(x))], attrs={"shape": dims})


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """A one-hot tensor (``tf.one_hot``): `depth` is inserted at `axis` (default
    last); positions equal to the index get `on_value` (default 1), the rest
    `off_value` (default 0); indices outside [0, depth) give all-off rows."""
    x = convert(indices, name="indices")
    if dtype_of(x) not in (_dtypes.uint8, _dtypes.int32, _dtypes.int64):
        raise op_error(TypeError, f"one_hot: indices must be uint8, int32 or int64, got "
                                  f"{dtype_of(x).name}")
    if dtype is None:
        given = next((v for v in (on_value, off_value) if v is not None), None)
        dtype = _dtypes.float32 if given is None else dtype_of(convert(given))
    dtype = _dtypes.as_dtype(dtype)
    if dtype == _dtypes.string:
        raise op_error(TypeError, "one_hot: string outputs are not supported")
    on = 1 if on_value is None else on_value
    off = 0 if off_value is None else off_value
    for v in (on, off):
        if isinstance(v, Tensor) or np.ndim(v) != 0:
            raise op_error(TypeError, "one_hot: on_value and off_value must be static scalars")
    shape = static_shape(x)
    rank = None if shape is None else len(shape)
    axis = -1 if axis is None else int(axis)
    if rank is None:
        raise op_error(ValueError, "one_hot: indices need a known rank")
    if axis < -1 or axis > rank:
        raise op_error(ValueError, f"Expected axis to be -1 or between [0, {rank}).  But "
                                   f"received: {axis}")
    axis = rank if axis == -1 else axis
    depth = int(depth)
    out = list(shape)
    out.insert(axis, depth)
    iv = [int(np.asarray(on).astype(np.float64)) if dtype.is_floating else int(on),
          int(np.asarray(off).astype(np.float64)) if dtype.is_floating else int(off)]
    return apply("OneHot", [x], [(tuple(out), dtype)],
                 attrs={"dtype": dtype._code, "depth": depth, "axis": axis, "on_int": iv[0],
                        "off_int": iv[1], "on_value": float(on), "off_value": float(off)})


# -- elementwise ops (csrc/ops/elementwise.c) ---------------------------------

_KINDS = {name: i for i, name in enumerate([
    "add", "subtract", "multiply", "realdiv", "floordiv", "floormod", "pow", "maximum",
    "minimum", "less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
    "logical_and", "logical_or", "logical_xor",
    "negative", "abs", "logical_not", "sqrt", "exp", "log", "floor", "ceil", "round", "square"])}
_COMPARISONS = {"less", "less_equal", "greater", "greater_equal", "equal", "not_equal"}
_LOGICAL = {"logical_and", "logical_or", "logical_xor", "logical_not"}
_FLOAT_ONLY = {"realdiv", "sqrt", "exp", "log", "floor", "ceil"}
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
    for i in range(builtins.max(len(a), len(b))):
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


def _binary(fname, x, y, operator=False):
    """x `fname` y. Called for a Python operator (``operator``) on a traced
    tensor, operands TensorFlow would refuse (mixed dtypes, strings) make
    the function run in Python with NumPy's rules instead of failing: such
    code was written for NumPy."""
    def refuse(exc_type, message):
        traced = next((v for v in (x, y) if isinstance(v, Tensor)), None)
        if operator and traced is not None:
            return traced._trace.fail(f"{message} (NumPy's rules apply in Python)")
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
    if fname == "truediv":
        if dx.is_integer:
            x, y, dx = cast(x, _float_for(dx)), cast(y, _float_for(dx)), _float_for(dx)
        fname = "realdiv"
    if fname in _FLOAT_ONLY and not dx.is_floating:
        raise op_error(TypeError, f"{fname} is not defined for {dx.name} tensors")
    half = dx == _dtypes.float16
    if half:  # computed in float32 and rounded back, as TensorFlow (Eigen) does
        x, y = cast(x, _dtypes.float32), cast(y, _dtypes.float32)
    out_dtype = _dtypes.bool if fname in _COMPARISONS else (_dtypes.float32 if half else dx)
    result = apply("Elementwise", [x, y], [(shape, out_dtype)], attrs={"kind": _KINDS[fname]})
    if half and fname not in _COMPARISONS:
        result = cast(result, _dtypes.float16)
    return result


def _unary(fname, x):
    x = convert(x, name="x")
    dx = dtype_of(x)
    if dx == _dtypes.string or (fname in _LOGICAL) != dx.is_bool:
        raise op_error(TypeError, f"{fname} is not defined for {dx.name} tensors")
    if fname in _FLOAT_ONLY and not dx.is_floating:
        raise op_error(TypeError, f"{fname} is not defined for {dx.name} tensors")
    half = dx == _dtypes.float16
    if half:
        x = cast(x, _dtypes.float32)
    result = apply("Elementwise", [x], [(static_shape(x), dtype_of(x))],
                   attrs={"kind": _KINDS[fname]})
    return cast(result, _dtypes.float16) if half else result


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


def _getitem(x, key):
    """x[key] on a traced tensor: integers, slices (with steps), ``...`` and
    ``None`` (newaxis), as NumPy's basic indexing."""
    trace = x._trace
    if not isinstance(key, tuple):
        key = (key,)
    shape = static_shape(x)
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
            for _ in range(len(shape) - used):
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
            out.append(None if shape[d] is None else len(range(shape[d])[k]))
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


def shape(input, out_type=None, name=None):  # noqa: A002 - TensorFlow's argument name
    """The shape of `input` as an int32 vector (``tf.shape``)."""
    x = convert(input, name="input")
    s = static_shape(x)
    result = apply("Shape", [x], [((None if s is None else len(s),), _dtypes.int32)])
    if out_type is not None and _dtypes.as_dtype(out_type) != _dtypes.int32:
        result = cast(result, out_type)
    return result


def expand_dims(input, axis, name=None):  # noqa: A002
    """`input` with a new dimension of size 1 at `axis` (``tf.expand_dims``)."""
    x = convert(input, name="input")
    s = static_shape(x)
    if s is None:
        raise op_error(ValueError, "expand_dims needs a known rank")
    axis = int(axis)
    if not -len(s) - 1 <= axis <= len(s):
        raise op_error(ValueError, f"axis {axis} is out of range for a rank-{len(s)} tensor")
    axis = axis + len(s) + 1 if axis < 0 else axis
    if isinstance(x, Tensor):
        return _getitem(x, (slice(None),) * axis + (None,))
    return np.expand_dims(x, axis)


def concat(values, axis, name=None):
    """Join tensors along `axis` (``tf.concat``): one dtype and rank, other dims equal."""
    xs = [convert(v, name="values") for v in values]
    if not xs:
        raise op_error(ValueError, "concat needs at least one tensor")
    shapes, dts = [static_shape(x) for x in xs], {dtype_of(x) for x in xs}
    if len(dts) != 1 or _dtypes.string in dts:
        raise op_error(TypeError, f"concat: tensors must share one numeric dtype, got "
                                  f"{sorted(d.name for d in dts)}")
    if any(s is None for s in shapes) or len({len(s) for s in shapes}) != 1:
        raise op_error(ValueError, "concat: tensors need known and equal ranks")
    rank = len(shapes[0])
    axis = int(axis)
    if not -rank <= axis < rank:
        raise op_error(ValueError, f"axis {axis} is out of range for rank {rank}")
    axis %= rank
    out = []
    for d in range(rank):
        dims = [s[d] for s in shapes]
        if d == axis:
            out.append(None if None in dims else builtins.sum(dims))
        else:
            known = {v for v in dims if v is not None}
            if len(known) > 1:
                raise op_error(ValueError, f"concat: dimension {d} differs: {dims}")
            out.append(known.pop() if known else None)
    return apply("ConcatV2", xs, [(tuple(out), dts.pop())], attrs={"axis": axis})


def stack(values, axis=0, name=None):
    """Stack tensors of one shape along a new `axis` (``tf.stack``)."""
    xs = [convert(v, name="values") for v in values]
    if not xs:
        raise op_error(ValueError, "stack needs at least one tensor")
    s = static_shape(xs[0])
    rank = None if s is None else len(s)
    if rank is None:
        raise op_error(ValueError, "stack needs a known rank")
    axis = int(axis)
    if not -rank - 1 <= axis <= rank:
        raise op_error(ValueError, f"axis {axis} is out of range for stacking rank-{rank} tensors")
    axis = axis + rank + 1 if axis < 0 else axis
    return concat([expand_dims(x, axis) for x in xs], axis)


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


# -- constants: tf.constant, fill, zeros, ones ---------------------------------


def _needs_python(fname, *values):
    """Inside a traced function, a shape or value that is itself traced makes
    the function Python (these build constants)."""
    for v in values:
        for leaf in (v if isinstance(v, (list, tuple)) else [v]):
            if isinstance(leaf, Tensor):
                raise leaf._trace.fail(f"{fname} with a traced shape or value is not supported "
                                       f"natively")


def _eager(arr):
    """A new constant: an EagerTensor, or inside a traced function a
    constant of the program."""
    trace = current_trace()
    if trace is not None:
        return trace.constant(arr, TensorShape(list(arr.shape)), _dtypes.as_dtype(arr.dtype))
    from conveyor._eager import as_eager
    return as_eager(arr)


def _dims(shape, fname):
    if isinstance(shape, (int, np.integer)):
        shape = [shape]
    try:
        dims = [int(d) for d in np.asarray(shape, dtype=object).reshape(-1)]
    except (TypeError, ValueError):
        raise TypeError(f"{fname}: shape must be a list of ints, got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise op_error(ValueError, f"{fname}: dimensions must be >= 0, got {dims}")
    return dims


def constant(value, dtype=None, shape=None, name=None):
    """A constant tensor (``tf.constant``): `value` (a Python value, nested
    lists, NumPy array, bytes or str) converted as TensorFlow converts it
    (Python ints to int32, floats to float32, strings to bytes), cast to
    `dtype` when given; with `shape`, a single value is repeated to fill it
    and otherwise the values are reshaped to it. Returns an ``EagerTensor``
    (a NumPy array with ``numpy()``); inside a traced map function, a
    constant of the program."""
    _needs_python("constant", value)
    arr = np.array(to_array(value, dtype))  # a copy: later changes to `value` do not leak in
    if shape is not None:
        dims = _dims(shape, "constant")
        count = int(np.prod(dims)) if dims else 1
        if arr.size == 1:
            arr = np.full(dims, arr.reshape(()), dtype=arr.dtype)
        elif arr.size == count:
            arr = arr.reshape(dims)
        else:
            raise TypeError(f"Eager execution of tf.constant with unsupported shape. Tensor "
                            f"{value!r} (converted from {value!r}) has {arr.size} elements, but "
                            f"got `shape` {tuple(dims)} with {count} elements).")
    return _eager(arr)


def fill(dims, value, name=None):  # noqa: A002 - TensorFlow's argument names
    """A tensor of shape `dims` filled with `value` (``tf.fill``), of value's dtype."""
    _needs_python("fill", dims, value)
    arr = to_array(value)
    if arr.ndim != 0:
        raise op_error(ValueError, f"Fill: value must be a scalar, got shape {list(arr.shape)}")
    return _eager(np.full(_dims(dims, "fill"), arr, dtype=arr.dtype))


def zeros(shape, dtype=_dtypes.float32, name=None):
    """A tensor of zeros (``tf.zeros``); strings are empty."""
    _needs_python("zeros", shape)
    dtype = _dtypes.as_dtype(dtype)
    if dtype == _dtypes.string:
        return _eager(np.full(_dims(shape, "zeros"), b"", dtype=object))
    return _eager(np.zeros(_dims(shape, "zeros"), dtype=dtype.as_numpy_dtype))


def ones(shape, dtype=_dtypes.float32, name=None):
    """A tensor of ones (``tf.ones``)."""
    _needs_python("ones", shape)
    dtype = _dtypes.as_dtype(dtype)
    if dtype == _dtypes.string:
        raise op_error(TypeError, "ones: a string tensor of ones is not defined")
    return _eager(np.ones(_dims(shape, "ones"), dtype=dtype.as_numpy_dtype))


def _like(fname, input, dtype, make):  # noqa: A002
    if isinstance(input, Tensor):  # traced: the shape must be static
        shape = static_shape(input)
        if shape is None or any(d is None for d in shape):
            raise input._trace.fail(f"{fname} of a tensor whose shape is not static")
        return make(list(shape), dtype or dtype_of(input))
    arr = to_array(input)
    return make(list(arr.shape), dtype or _dtypes.as_dtype(arr.dtype))


def zeros_like(input, dtype=None, name=None):  # noqa: A002
    """Zeros of `input`'s shape (and dtype unless given) (``tf.zeros_like``)."""
    return _like("zeros_like", input, dtype, zeros)


def ones_like(input, dtype=None, name=None):  # noqa: A002
    """Ones of `input`'s shape (and dtype unless given) (``tf.ones_like``)."""
    return _like("ones_like", input, dtype, ones)
