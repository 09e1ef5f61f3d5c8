"""Reductions and the tensor ops input code reaches for: ``tf.reduce_sum``
and friends, ``argmax``/``argmin``, ``range``, ``squeeze``, ``unstack``,
``gather``, ``where``, ``ensure_shape`` and ``cond``.

Each op checks its arguments and computes the static output spec here and
does the work in C (csrc/ops/reduce.c, arg_min_max.c, range.c, ...), eagerly
on NumPy arrays or recorded into the native program of a traced map function.
Errors follow TensorFlow: what a graph would reject when a function is traced
(an axis out of range for a known rank, a dim that cannot be squeezed) is a
ValueError or TypeError when the pipeline is built; eagerly, and for values
only known per element, an ``InvalidArgumentError``.
"""
import builtins

import numpy as np

from conveyor import dtypes as _dtypes
from conveyor import errors
from conveyor import nest
from conveyor._convert import to_array
from conveyor._math import _broadcast_shape, _hinted, cast
from conveyor._tracing import (Tensor, apply, convert, current_trace, dtype_of, op_error,
                               static_shape)
from conveyor.tensor_spec import TensorShape

__all__ = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_any",
           "reduce_all", "argmax", "argmin", "range", "squeeze", "unstack", "gather", "where",
           "ensure_shape", "cond"]


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
        return -(-abs(l - s) // abs(d))
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


# -- squeeze / unstack / gather (csrc/ops/squeeze.c, strided_slice.c, gather.c) ----

def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002
    """`input` without dims of size 1 (``tf.squeeze``): all of them, or those
    in `axis` (each must be 1). Shares memory with the input. Traced with a
    known shape, a named dim that is not 1 is a ValueError when the pipeline
    is built; otherwise an InvalidArgumentError."""
    if axis is None:
        axis = squeeze_dims
    x = convert(input, name="input")
    traced = _traced(x)
    axes = [] if axis is None else _static_ints(axis, "squeeze", "axis")
    shape = static_shape(x)
    out = None
    if shape is not None:
        rank, drop = len(shape), set()
        for k, a in enumerate(axes):
            if not -rank <= a < rank:
                raise _error(traced, ValueError, f"Tried to squeeze dim index {a} for tensor "
                                                 f"with {rank} dimensions.")
            if shape[a] is not None and shape[a] != 1:
                raise _error(traced, ValueError, f"Can not squeeze dim[{a % rank}], expected a "
                                                 f"dimension of 1, got {shape[a]}")
            drop.add(a % rank)
        if axes:
            out = tuple(n for d, n in enumerate(shape) if d not in drop)
        elif None not in shape:
            out = tuple(n for n in shape if n != 1)
    return apply("Squeeze", [x], [(out, dtype_of(x))], attrs={"axes": axes})


def unstack(value, num=None, axis=0, name="unstack"):
    """The slices of `value` along `axis` as a list (``tf.unstack``): the
    dim must be known statically, or given as `num` (then checked for each
    element: an InvalidArgumentError when it differs)."""
    x = convert(value, name="value")
    shape = static_shape(x)
    if shape is None:
        raise op_error(ValueError, "Cannot infer argument `num` from shape <unknown>")
    rank, axis = len(shape), int(axis)
    if not -rank <= axis < rank:
        raise op_error(ValueError, f"axis = {axis} not in [{-rank}, {rank})")
    axis %= rank
    n = shape[axis] if num is None else int(num)
    if n is None:
        raise op_error(ValueError, f"Cannot infer argument `num` from shape "
                                   f"{TensorShape(list(shape))}")
    if shape[axis] is not None and n != shape[axis]:
        raise _error(_traced(x), ValueError, f"Input shape axis {axis} must equal {n}, got shape "
                                             f"{list(shape)}")
    if shape[axis] is None:  # `num` given for a dim known per element: check it then
        x = ensure_shape(x, [n if d == axis else None for d in builtins.range(rank)])
    out = shape[:axis] + shape[axis + 1:]
    if dtype_of(x) == _dtypes.string:
        if isinstance(x, Tensor):
            raise x._trace.fail("unstack of a string tensor is not supported natively")
        return [np.take(x, i, axis=axis) for i in builtins.range(n)]
    keep = [1, 0, 0, 1, 0, 0]
    return [apply("StridedSlice", [x], [(out, dtype_of(x))],
                  attrs={"num_dims": axis + 1, "dims": keep * axis + [0, i, 0, 1, 1, 0]})
            for i in builtins.range(n)]


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """Slices of `params` along `axis` (default 0) at `indices`
    (``tf.gather``): the result's shape is params.shape[:axis] +
    indices.shape + params.shape[axis+1:]. Indices are int32 or int64; one
    outside [0, params.shape[axis]) is an InvalidArgumentError, as TensorFlow
    on CPU. ``batch_dims`` other than 0 is not supported."""
    if batch_dims != 0:
        raise op_error(NotImplementedError, "gather: batch_dims other than 0 is not supported "
                                            "by conveyor")
    p = convert(params, name="params")
    i = convert(indices, name="indices")
    traced = _traced(p, i)
    if dtype_of(i) not in (_dtypes.int32, _dtypes.int64):
        raise op_error(TypeError, f"gather: indices must be int32 or int64, got "
                                  f"{dtype_of(i).name}")
    axis = _static_ints(0 if axis is None else axis, "gather", "axis")
    if len(axis) != 1:
        raise op_error(ValueError, "gather: `axis` must be a single int")
    axis = axis[0]
    ps, is_ = static_shape(p), static_shape(i)
    out = None
    if ps is not None:
        rank = len(ps)
        if not -rank <= axis < rank:
            need = axis + 1 if axis >= 0 else -axis
            raise _error(traced, ValueError, f"Shape must be at least rank {need} but is rank "
                                             f"{rank}")
        axis %= rank
        if is_ is not None:
            out = ps[:axis] + is_ + ps[axis + 1:]
    return apply("GatherV2", [p, i], [(out, dtype_of(p))], attrs={"axis": axis})


# -- where (csrc/ops/select.c, where.c) ---------------------------------------------

def where(condition, x=None, y=None, name=None):
    """``tf.where``: with `x` and `y`, x where `condition` is true and y
    elsewhere, the three broadcast together (y takes x's dtype when it is a
    Python value); with `condition` alone, the coordinates of its true
    (non-zero) values as an int64 matrix of shape (count, rank)."""
    if x is None and y is None:
        c = convert(condition, name="condition")
        if dtype_of(c) == _dtypes.string:
            raise _error(_traced(c), TypeError, "where: string conditions are not supported")
        s = static_shape(c)
        return apply("Where", [c], [((None, None if s is None else len(s)), _dtypes.int64)])
    if x is None or y is None:
        raise op_error(ValueError, "x and y must both be non-None or both be None.")
    c = convert(condition, name="condition")
    try:
        if isinstance(y, Tensor) and not isinstance(x, Tensor):
            y = convert(y, name="y")
            x = _hinted(x, dtype_of(y), "where")
        else:
            x = convert(x, name="x")
            y = _hinted(y, dtype_of(x), "where")
    except TypeError as e:
        raise op_error(TypeError, str(e)) from None
    if dtype_of(c) != _dtypes.bool:
        raise op_error(TypeError, f"where: condition must be bool, got {dtype_of(c).name}")
    if dtype_of(x) != dtype_of(y):
        raise op_error(TypeError, f"where: x and y must have the same dtype, got "
                                  f"{dtype_of(x).name} and {dtype_of(y).name}")
    shape = None  # eagerly the op checks the shapes (an InvalidArgumentError, as TensorFlow)
    if _traced(c, x, y):
        shape = _broadcast_shape(static_shape(x), static_shape(y), "SelectV2")
        shape = _broadcast_shape(static_shape(c), shape, "SelectV2")
    return apply("SelectV2", [c, x, y], [(shape, dtype_of(x))])


# -- ensure_shape and cond (csrc/ops/ensure_shape.c, cond_select.c) -----------------

def ensure_shape(x, shape, name=None):
    """`x`, checked to have `shape` (dims may be None: any size)
    (``tf.ensure_shape``). Traced, a known mismatch is a ValueError when the
    pipeline is built and the element spec gets the dims `shape` adds;
    per element (and eagerly) a mismatch is an InvalidArgumentError."""
    x = convert(x, name="x")
    expected = shape if isinstance(shape, TensorShape) else TensorShape(shape)
    if expected.rank is None:
        return x
    want = expected.as_list()
    have = static_shape(x)
    out = tuple(want)
    if isinstance(x, Tensor) and have is not None:
        if len(have) != len(want):
            raise op_error(ValueError, f"Shape must be rank {len(want)} but is rank {len(have)}")
        for d, (a, b) in enumerate(zip(want, have)):
            if a is not None and b is not None and a != b:
                raise op_error(ValueError, f"Dimension {d} in both shapes must be equal, but are "
                                           f"{a} and {b}. Shapes are {_dims_str(want)} and "
                                           f"{_dims_str(have)}.")
        out = tuple(a if a is not None else b for a, b in zip(want, have))
    dims = [-1 if d is None else int(d) for d in want]
    if 1 + len(dims) > 64:
        raise op_error(ValueError, "ensure_shape: at most 63 dims")
    return apply("EnsureShape", [x], [(out, dtype_of(x))],
                 attrs={"rank": len(want), "dims": dims})


def _dims_str(dims):
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def cond(pred, true_fn=None, false_fn=None, name=None):
    """``tf.cond``: ``true_fn()`` if `pred` else ``false_fn()``.

    A Python or NumPy (eager) predicate calls one branch. Inside a traced map
    function a traced scalar bool predicate runs BOTH branches (their ops
    are recorded into the program and computed for every element) and
    picks one branch's results per element; the branches must return the
    same structure of tensors with the same dtypes (shapes may differ: the
    element spec keeps the dims they agree on). A branch that only Python
    can run makes the whole function run in Python, where `pred` has a
    value and only one branch is called.
    """
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("cond: true_fn and false_fn must be callable")
    if not isinstance(pred, Tensor):
        p = np.asarray(pred)
        if p.dtype != np.bool_ or p.ndim != 0:
            raise TypeError(f"cond: pred must be a scalar bool, got {pred!r:.80}")
        return true_fn() if bool(p) else false_fn()
    if pred.dtype != _dtypes.bool or (pred.shape.rank not in (None, 0)):
        raise op_error(ValueError, f"cond: pred must be a scalar bool, got {pred!r}")
    a, b = true_fn(), false_fn()
    try:
        nest.assert_same_structure(a, b)
    except (TypeError, ValueError) as e:
        raise op_error(ValueError, f"true_fn and false_fn arguments to tf.cond must have the "
                                   f"same number, type, and overall structure of return "
                                   f"values: {e}") from None
    fa = [convert(v) for v in nest.flatten(a)]
    fb = [convert(v) for v in nest.flatten(b)]
    if not fa:
        return a
    specs = []
    for va, vb in zip(fa, fb):
        if dtype_of(va) != dtype_of(vb):
            raise op_error(TypeError, f"cond: the branches return {dtype_of(va).name} and "
                                      f"{dtype_of(vb).name} for the same output")
        sa, sb = static_shape(va), static_shape(vb)
        if sa is None or sb is None or len(sa) != len(sb):
            shape = None
        else:
            shape = tuple(x if x == y else None for x, y in zip(sa, sb))
        specs.append((shape, dtype_of(va)))
    outs = apply("CondSelect", [pred] + fa + fb, specs)
    if len(specs) == 1:
        outs = [outs]
    return nest.pack_sequence_as(a, outs)

