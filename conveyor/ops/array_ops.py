"""Array ops: shapes and indexing, as input pipelines use them.
``tf.constant``, ``fill``, ``zeros``, ``ones``, ``zeros_like``,
``ones_like``; ``reshape``, ``shape``, ``size``, ``rank``, ``expand_dims``,
``squeeze``, ``ensure_shape``; ``concat``, ``stack``, ``unstack``,
``split``; ``gather``, ``where``, ``boolean_mask``, ``one_hot``,
``sequence_mask``; ``transpose``, ``tile``, ``pad``, ``reverse``,
``broadcast_to``; ``identity``, ``identity_n`` and ``stop_gradient``
(``image.resize_with_pad`` is in conveyor/image/_pad.py; ``x[i]`` on a traced
tensor is ``math_ops._getitem``, installed with the other operators).

Arguments are checked and the static output spec computed here; the work is
done in C (csrc/ops/transpose.c, tile.c, pad.c, flip.c, broadcast_to.c,
split.c, squeeze.c, gather.c, select.c, where.c, ...), eagerly on NumPy
arrays or recorded into the native program of a traced map function.
Shapes, multiples, paddings and split sizes must be static (Python values or
NumPy arrays). Errors follow TensorFlow: what a graph rejects when the
function is traced is a ValueError when the pipeline is built; eagerly, and
for values only known per element, an ``InvalidArgumentError``.
"""
import builtins

import numpy as np

from conveyor import dtypes as _dtypes
from conveyor import errors
from conveyor.framework.convert import to_array
from conveyor.framework.eager import as_eager
from conveyor.framework.tracing import (Tensor, apply, convert, current_trace, dtype_of,
                                        known_value, op_error, static_shape)
from conveyor.ops.math_ops import (_broadcast_shape, _error, _getitem, _hinted, _static_ints,
                                   _traced, add, cast, equal, greater_equal, less, logical_and,
                                   logical_not, logical_or, multiply, not_equal, range as _range,
                                   reduce_max, reduce_prod)
from conveyor.tensor_spec import TensorShape

__all__ = ["constant", "fill", "zeros", "ones", "zeros_like", "ones_like", "reshape", "shape",
           "size", "rank", "expand_dims", "squeeze", "ensure_shape", "concat", "stack",
           "unstack", "split", "gather", "where", "boolean_mask", "one_hot", "sequence_mask",
           "transpose", "tile", "pad", "reverse", "broadcast_to", "identity", "identity_n", "stop_gradient"]


def _static_array(value, fname, what):
    if isinstance(value, Tensor):
        known = value._trace.known.get(value._key)
        if known is None:
            raise value._trace.fail(f"{fname} with a traced `{what}` is not supported natively")
        value = known
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu" and arr.size:
        raise op_error(TypeError, f"{fname}: `{what}` must be int32 or int64, got {value!r}")
    return arr.astype(np.int64)


def transpose(a, perm=None, conjugate=False, name="transpose"):
    """`a` with its dims permuted (``tf.transpose``): result dim i is input
    dim perm[i]; without `perm` the dims are reversed. Any dtype, strings
    included."""
    x = convert(a, name="a")
    traced = _traced(x)
    shape = static_shape(x)
    if perm is None:
        if shape is None:
            raise x._trace.fail("transpose of a tensor of unknown rank is not supported natively")
        perm = list(builtins.range(len(shape)))[::-1]
    perm = _static_ints(perm, "transpose", "perm")
    out = None
    if shape is not None:
        rank = len(shape)
        if len(perm) != rank:
            raise _error(traced, ValueError, f"transpose expects a vector of size {rank}. But "
                                             f"input(1) is a vector of size {len(perm)}")
        bad = next((p for p in perm if not 0 <= p < rank), None)
        if bad is not None:
            raise _error(traced, ValueError, f"{bad} is out of range [0 .. {rank})")
        # A repeated entry is the op's InvalidArgumentError (per element when
        # traced, as TensorFlow's graph does not check it when built).
        out = tuple(shape[p] for p in perm)
    return apply("Transpose", [x], [(out, dtype_of(x))], attrs={"perm": perm})


def tile(input, multiples, name=None):  # noqa: A002
    """`input` repeated multiples[d] times along each dim d (``tf.tile``).
    Any dtype, strings included."""
    x = convert(input, name="input")
    traced = _traced(x)
    m = _static_array(multiples, "tile", "multiples")
    shape = static_shape(x)
    if m.ndim != 1:
        raise _error(traced, ValueError, f"Shape must be rank 1 but is rank {m.ndim}")
    m = [int(k) for k in m]
    out = None
    if shape is not None:
        if len(m) != len(shape):
            raise _error(traced, ValueError, f"Expected multiples argument to be a vector of "
                                             f"length {len(shape)} but got length {len(m)}")
        # A negative multiple is an InvalidArgumentError of the op (per element
        # when traced, as TensorFlow's graph does not check it when built).
        out = tuple(None if n is None or k < 0 else n * k for n, k in zip(shape, m))
    return apply("Tile", [x], [(out, dtype_of(x))], attrs={"multiples": m})


_PAD_MODES = {"CONSTANT": 0, "REFLECT": 1, "SYMMETRIC": 2}


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """`tensor` with values added before and after each dim (``tf.pad``):
    paddings[d] = [before, after]. CONSTANT adds `constant_values`,
    REFLECT mirrors without the edge value (pads < the dim), SYMMETRIC
    mirrors with it (pads <= the dim). Any dtype, strings included (their
    constant is a bytes/str value)."""
    x = convert(tensor, name="tensor")
    traced = _traced(x)
    key = str(mode).upper()
    if key not in _PAD_MODES:
        raise ValueError(f"Value of argument `mode` expected to be one of \"CONSTANT\", "
                         f"\"REFLECT\", or \"SYMMETRIC\". Received `mode` = {mode}")
    kind = _PAD_MODES[key]
    if kind == 0 and traced and _is_dynamic(paddings if isinstance(paddings, Tensor) else [
            v for row in paddings for v in ([row] if isinstance(row, Tensor) else row)]):
        return _pad_traced(x, paddings, constant_values)
    p = _static_array(paddings, "pad", "paddings")
    shape = static_shape(x)
    dt = dtype_of(x)
    if p.ndim != 2 or p.shape[1] != 2 or (shape is not None and p.shape[0] != len(shape)):
        rank = "?" if shape is None else len(shape)
        raise _error(traced, ValueError, f"The first dimension of paddings must be the rank of "
                                         f"inputs[{rank},2], got {list(p.shape)}")
    if (p < 0).any():
        raise _error(traced, ValueError, f"Paddings must be non-negative: {p.tolist()}")
    out = None
    if shape is not None:
        # Mirror pads larger than the dim are an InvalidArgumentError of the op,
        # per element (a graph does not check them when built either).
        out = tuple(None if n is None else n + int(p[d].sum()) for d, n in enumerate(shape))
    inputs = [x]
    if kind == 0:
        c = constant_values
        if isinstance(c, Tensor):
            if c.dtype != dt:
                raise op_error(TypeError, f"pad: constant_values must be {dt.name}, got "
                                          f"{c.dtype.name}")
        else:
            if np.ndim(c) == 0 and not isinstance(c, (str, bytes)) and c == 0:
                c = np.zeros((), dt.as_numpy_dtype) if dt != _dtypes.string else b""
            try:
                c = convert(c, dtype=dt, name="constant_values")
            except TypeError as e:
                raise op_error(TypeError, str(e)) from None
        # A non-scalar value is the op's InvalidArgumentError (per element when
        # traced, as in TensorFlow's graph).
        inputs.append(c)
    return apply("Pad", inputs, [(out, dt)], attrs={"mode": kind,
                                                    "paddings": [int(v) for v in p.reshape(-1)]})


def reverse(tensor, axis, name=None):
    """`tensor` with the order of the values along each dim in `axis`
    reversed (``tf.reverse``). Any dtype, strings included."""
    x = convert(tensor, name="tensor")
    traced = _traced(x)
    if not isinstance(axis, Tensor) and np.ndim(axis) != 1:
        raise _error(traced, ValueError, f"'dims' must be 1-dimension, not {np.ndim(axis)}")
    axes = _static_ints(axis, "reverse", "axis")
    shape = static_shape(x)
    if shape is not None:
        rank = len(shape)
        seen = set()
        for a in axes:
            if not -rank <= a < rank:
                raise _error(traced, ValueError, f"'axis'[{axes.index(a)}] = {a} is out of valid "
                                                 f"range [0, {rank - 1}]")
            if a % rank in seen:
                raise _error(traced, ValueError, f"axis {a % rank} specified more than once.")
            seen.add(a % rank)
    return apply("ReverseV2", [x], [(shape, dtype_of(x))],
                 attrs={"mode": 0, "image": 0, "axes": axes})


def broadcast_to(input, shape, name=None):  # noqa: A002
    """`input` repeated to `shape` (``tf.broadcast_to``): its dims line up
    with the last ones of `shape`, each 1 or equal. Any dtype, strings
    included."""
    x = convert(input, name="input")
    traced = _traced(x)
    target = _static_array(shape, "broadcast_to", "shape")
    if target.ndim != 1:
        raise _error(traced, ValueError, f"Shape must be rank 1 but is rank {target.ndim}")
    target = [int(n) for n in target]
    if builtins.any(n < 0 for n in target):
        raise op_error(errors.InvalidArgumentError, f"Dimension {min(target)} must be >= 0")
    have = static_shape(x)
    if have is not None:
        lead = len(target) - len(have)
        ok = lead >= 0 and builtins.all(h is None or h == 1 or h == t
                                        for h, t in zip(have, target[lead:]))
        if not ok:
            dims = ",".join("?" if h is None else str(h) for h in have)
            want = ",".join(map(str, target))
            raise _error(traced, ValueError, f"Unable to broadcast tensor of shape [{dims}] to "
                                             f"tensor of shape [{want}]")
    if len(target) > 16:
        raise op_error(ValueError, "broadcast_to: at most 16 dims")
    result = apply("BroadcastTo", [x], [(tuple(target), dtype_of(x))], attrs={"shape": target})
    if isinstance(result, Tensor) and have is not None and None not in have:
        result._trace.broadcast_inputs[result._key] = x
    return result


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """`value` cut along `axis` into consecutive pieces (``tf.split``): an
    int n gives n equal pieces (the dim must divide evenly); a list gives
    pieces of those sizes (one may be -1: the rest). Returns a list. Any
    dtype, strings included."""
    x = convert(value, name="value")
    traced = _traced(x)
    axis = _static_ints(axis, "split", "axis")
    if len(axis) != 1:
        raise op_error(ValueError, "split: `axis` must be a single int")
    axis = axis[0]
    shape = static_shape(x)
    if shape is None:
        raise x._trace.fail("split of a tensor of unknown rank is not supported natively")
    rank = len(shape)
    if not -rank <= axis < rank:
        raise _error(traced, ValueError, f"Shape must be at least rank {axis + 1 if axis >= 0 else -axis} "
                                         f"but is rank {rank}")
    axis %= rank
    dim = shape[axis]
    sizes = np.asarray(num_or_size_splits) if not isinstance(num_or_size_splits, Tensor) else None
    if sizes is None:
        raise num_or_size_splits._trace.fail("split with traced sizes is not supported natively")
    if sizes.ndim == 0:
        n = int(sizes)
        if n <= 0:
            raise _error(traced, ValueError, f"Value for attr 'num_split' of {n} must be at least "
                                             f"minimum 1")
        if dim is None:  # equal pieces of a size known per element
            if n > 63:
                raise op_error(ValueError, "split: at most 63 pieces in conveyor")
            specs = [(shape, dtype_of(x))] * n
            outs = apply("SplitV", [x], specs, attrs={"axis": axis, "sizes": [-1] * n})
            return [outs] if n == 1 else list(outs)
        if dim % n:
            raise _error(traced, ValueError, f"Dimension size must be evenly divisible by {n} but "
                                             f"is {dim}")
        sizes = [dim // n] * n
    else:
        if sizes.dtype.kind not in "iu" and sizes.size:
            raise op_error(TypeError, "split: sizes must be ints")
        if sizes.ndim != 1:
            raise _error(traced, ValueError, f"Shape must be rank 1 but is rank {sizes.ndim}")
        sizes = [int(s) for s in sizes]
        if not sizes and num is None:
            raise _error(traced, ValueError, "Cannot infer argument `num` from shape [0]")
        free = [i for i, s in enumerate(sizes) if s == -1]
        rest = builtins.sum(s for s in sizes if s != -1)
        bad = len(free) > 1 or builtins.any(s < -1 for s in sizes)
        if not bad and dim is not None:
            bad = rest > dim if free else rest != dim
        if bad:
            raise _error(traced, ValueError, "Determined shape must either match input shape along "
                                             "split_dim exactly if fully specified, or be less than "
                                             "the size of the input along split_dim if not fully "
                                             "specified.")
        if free and dim is not None:  # else the op computes it per element
            sizes[free[0]] = dim - rest
    if len(sizes) > 63:
        raise op_error(ValueError, "split: at most 63 pieces in conveyor")
    specs = [(shape[:axis] + (None if s < 0 else s,) + shape[axis + 1:], dtype_of(x))
             for s in sizes]
    outs = apply("SplitV", [x], specs, attrs={"axis": axis, "sizes": sizes})
    return [outs] if len(sizes) == 1 else list(outs)


def boolean_mask(tensor, mask, axis=None, name="boolean_mask"):
    """The values of `tensor` where `mask` is true (``tf.boolean_mask``):
    mask's k dims match tensor's dims axis..axis+k-1, which the result
    replaces by one dim of the number of true values (unknown, None, in the
    element spec of a traced function). `mask` must be bool with a known
    rank. Any dtype, strings included."""
    x = convert(tensor, name="tensor")
    m = convert(mask, name="mask")
    if dtype_of(m) == _dtypes.string:
        raise _error(_traced(x, m), TypeError, "boolean_mask: mask must be bool or numeric")
    ms, xs = static_shape(m), static_shape(x)
    if ms is None:
        raise op_error(ValueError, "Number of mask dimensions must be specified, even if some "
                                   "dimensions are None.  E.g. shape=[None] is ok, but shape=None "
                                   "is not.")
    k = len(ms)
    if k == 0:
        raise op_error(ValueError, "mask cannot be scalar.")
    axis = 0 if axis is None else int(axis)
    if xs is None:
        raise x._trace.fail("boolean_mask of a tensor of unknown rank is not supported natively")
    # The dims the mask covers are tensor.shape[axis:axis + k], sliced as
    # Python slices them (a negative axis included), as TensorFlow does.
    inner = xs[axis:axis + k]
    if len(inner) != k or builtins.any(a is not None and b is not None and a != b
                                       for a, b in zip(inner, ms)):
        raise op_error(ValueError, f"Shapes {_dims_tuple_str(inner)} and {_dims_tuple_str(ms)} are incompatible")
    if k > 1:
        merged = None if None in inner else int(np.prod(inner))
        outer = list(xs[:axis]) + [merged] + list(xs[axis + k:])
        if outer.count(None) > 1:
            raise x._trace.fail("boolean_mask over several dims with unknown sizes is not "
                                "supported natively")
        x = reshape(x, [-1 if d is None else d for d in outer])
        m = reshape(m, [-1])
    idx = squeeze(where(m), axis=[1])
    return gather(x, idx, axis=axis)


def _dims_tuple_str(dims):
    inner = ", ".join("None" if d is None else str(d) for d in dims)
    return f"({inner},)" if len(dims) == 1 else f"({inner})"


def sequence_mask(lengths, maxlen=None, dtype=_dtypes.bool, name=None):
    """A mask of the first lengths[i] positions of each row
    (``tf.sequence_mask``): result[i..., j] = j < lengths[i...], of shape
    lengths.shape + [maxlen] (maxlen defaults to the largest length),
    cast to `dtype`."""
    n = convert(lengths, name="lengths")
    if maxlen is None:
        maxlen = reduce_max(n)
    else:
        m = convert(maxlen, name="maxlen")
        ms = static_shape(m)
        if ms is not None and len(ms) != 0:
            raise _error(_traced(m), ValueError, "Argument `maxlen` must be scalar for "
                                                 "sequence_mask, received `maxlen` = "
                                                 f"{maxlen!r}.")
        maxlen = m
    mdt = dtype_of(maxlen)
    row = _range(maxlen if isinstance(maxlen, Tensor) else maxlen[()] if
                 isinstance(maxlen, np.ndarray) else maxlen, dtype=mdt)
    col = expand_dims(cast(n, mdt) if dtype_of(n) != mdt else n, -1)
    result = less(row, col)
    dtype = _dtypes.as_dtype(dtype)
    return result if dtype == _dtypes.bool else cast(result, dtype)


def stop_gradient(input, name=None):  # noqa: A002
    """`input` unchanged (``tf.stop_gradient``): input pipelines compute no
    gradients."""
    return identity(input)


# -- reshape, one_hot, shape, expand_dims, concat, stack ------------------------


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


def shape(input, out_type=None, name=None):  # noqa: A002 - TensorFlow's argument name
    """The shape of `input` as an int32 vector (``tf.shape``)."""
    x = convert(input, name="input")
    s = static_shape(x)
    result = apply("Shape", [x], [((None if s is None else len(s),), _dtypes.int32)])
    if out_type is not None and _dtypes.as_dtype(out_type) != _dtypes.int32:
        result = cast(result, out_type)
    if isinstance(result, Tensor) and s is not None and None not in s:
        result._trace.known[result._key] = np.array(s, dtype_of(result).as_numpy_dtype)
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
    """Stack tensors of one shape along a new `axis` (``tf.stack``). Python
    numbers and lists among tensors take the first tensor's dtype, as
    TensorFlow's packing converts them."""
    values = list(values)
    hint = next((dtype_of(v) for v in values if isinstance(v, Tensor) or hasattr(v, "dtype")),
                None)
    xs = [convert(v, name="values") if hint is None or not isinstance(v, (bool, int, float, list))
          else _hinted(v, hint, "stack") for v in values]
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
    return as_eager(arr)


# -- shapes known per element (traced): fill, zeros, ones, pad -----------------
# A dim known only per element (a traced scalar) becomes range(d) * 0 laid
# along its axis; the dims' vectors add up, by broadcasting, to zeros of the
# whole shape; the value is added last. All element ops: the map stays native.


def _unknown(v):
    """A traced value with no value known when traced."""
    return isinstance(v, Tensor) and known_value(v) is None


def _known_to_values(dims):
    """`dims` with every traced value known when traced replaced by that value
    (tf.fill(tf.shape(x), v) of a fully known shape builds a constant)."""
    if isinstance(dims, Tensor):
        known = known_value(dims)
        return dims if known is None else known
    if isinstance(dims, (list, tuple)):
        return [_known_to_values(d) for d in dims]
    return dims


def _is_dynamic(dims):
    if isinstance(dims, (list, tuple)):
        return any(_unknown(d) for d in dims)
    return _unknown(dims)


def _dims_list(dims, fname):
    """Each dim of a traced shape: an int or a traced scalar."""
    if isinstance(dims, Tensor):
        ds = static_shape(dims)
        if ds is None or len(ds) != 1 or ds[0] is None:
            raise dims._trace.fail(f"{fname} with a shape of unknown length is not supported "
                                   f"natively")
        return [_getitem(dims, i) for i in range(ds[0])]
    out = []
    for d in dims:
        if isinstance(d, Tensor) and not _unknown(d):
            d = int(known_value(d))
        if isinstance(d, Tensor):
            if static_shape(d) not in (None, ()) or not dtype_of(d).is_integer:
                raise op_error(TypeError, f"{fname}: each dim must be an integer scalar, got {d!r}")
            out.append(d)
        else:
            n = int(d)
            if n < 0:
                raise op_error(ValueError, f"{fname}: dimensions must be >= 0, got {n}")
            out.append(n)
    return out


def _fill_traced(dims, value, dtype, fname):
    """`value` repeated to `dims`, some of which are traced scalars."""
    if dtype == _dtypes.string:
        raise next(d for d in (dims if isinstance(dims, (list, tuple)) else [dims])
                   if isinstance(d, Tensor))._trace.fail(
            f"{fname} of strings with a shape known per element is not supported natively")
    dims = _dims_list(dims, fname)
    rank = len(dims)
    join = logical_or if dtype == _dtypes.bool else add
    total = None
    for i, d in enumerate(dims):
        lay = [1] * i + [-1] + [1] * (rank - 1 - i)
        if isinstance(d, Tensor):
            ok = greater_equal(d, np.zeros((), dtype_of(d).as_numpy_dtype))
            apply("Assert", [ok], [((), _dtypes.bool)],  # tf.Assert's op (functional_ops)
                  string=f"{fname}: dimensions must be >= 0")
            z = cast(multiply(_range(d), 0), dtype)
            part = reshape(z, lay)
        else:
            part = np.zeros([1] * i + [d] + [1] * (rank - 1 - i), dtype.as_numpy_dtype)
        total = part if total is None else join(total, part)
    if total is None:  # rank 0
        total = np.zeros((), dtype.as_numpy_dtype)
    v = value if isinstance(value, Tensor) else np.asarray(value).astype(dtype.as_numpy_dtype)
    return join(total, v)


def _pad_traced(x, paddings, constant_values):
    """tf.pad (CONSTANT) with paddings known per element: the constant blocks
    before and after each dim made by _fill_traced, joined with concat."""
    if isinstance(paddings, Tensor):
        ps = static_shape(paddings)
        if ps is None or len(ps) != 2 or ps[0] is None or ps[1] != 2:
            raise paddings._trace.fail("pad with paddings of unknown shape is not supported "
                                       "natively")
        pads = [[_getitem(paddings, (i, j)) for j in range(2)] for i in range(ps[0])]
    else:
        pads = [list(p) if not isinstance(p, Tensor) else
                [int(v) for v in known_value(p)] if not _unknown(p) else
                [_getitem(p, j) for j in range(2)] for p in paddings]
        pads = [[int(known_value(v)) if isinstance(v, Tensor) and not _unknown(v) else v
                 for v in p] for p in pads]
    have = static_shape(x)
    if have is None or len(pads) != len(have) or any(len(p) != 2 for p in pads):
        raise op_error(ValueError, f"The first dimension of paddings must be the rank of "
                                   f"inputs[{'?' if have is None else len(have)},2]")
    dt = dtype_of(x)
    c = constant_values if isinstance(constant_values, Tensor) else np.asarray(
        constant_values).astype(dt.as_numpy_dtype)
    for i, (before, after) in enumerate(pads):
        parts = []
        for amount in (before, after):
            if not isinstance(amount, Tensor) and int(amount) == 0:
                parts.append(None)
                continue
            if not isinstance(amount, Tensor) and int(amount) < 0:
                raise op_error(ValueError, f"Paddings must be non-negative: {amount}")
            cur = static_shape(x)
            dims = [amount if j == i else (cur[j] if cur[j] is not None else
                                           _getitem(shape(x), j))
                    for j in range(len(cur))]
            parts.append(_fill_traced(dims, c, dt, "pad"))
        if parts[0] is None and parts[1] is None:
            continue
        x = concat([p for p in (parts[0], x, parts[1]) if p is not None], i)
    return x


def _static_dims(shape, fname):
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
        dims = _static_dims(shape, "constant")
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
    """A tensor of shape `dims` filled with `value` (``tf.fill``), of value's dtype.
    Traced, `dims` may hold sizes known per element (``tf.shape(x)[0] - n``)."""
    if _is_dynamic(dims) or isinstance(value, Tensor):
        v = convert(value, name="value")
        if static_shape(v) not in (None, ()):
            raise op_error(ValueError, f"Fill: value must be a scalar, got shape "
                                       f"{list(static_shape(v))}")
        return _fill_traced(dims, v, dtype_of(v), "fill")
    dims = _known_to_values(dims)
    _needs_python("fill", dims, value)
    arr = to_array(value)
    if arr.ndim != 0:
        raise op_error(ValueError, f"Fill: value must be a scalar, got shape {list(arr.shape)}")
    return _eager(np.full(_static_dims(dims, "fill"), arr, dtype=arr.dtype))


def zeros(shape, dtype=_dtypes.float32, name=None):
    """A tensor of zeros (``tf.zeros``); strings are empty."""
    if _is_dynamic(shape):
        return _fill_traced(shape, 0, _dtypes.as_dtype(dtype), "zeros")
    shape = _known_to_values(shape)
    _needs_python("zeros", shape)
    dtype = _dtypes.as_dtype(dtype)
    if dtype == _dtypes.string:
        return _eager(np.full(_static_dims(shape, "zeros"), b"", dtype=object))
    return _eager(np.zeros(_static_dims(shape, "zeros"), dtype=dtype.as_numpy_dtype))


def ones(shape, dtype=_dtypes.float32, name=None):
    """A tensor of ones (``tf.ones``)."""
    if _is_dynamic(shape):
        return _fill_traced(shape, 1, _dtypes.as_dtype(dtype), "ones")
    shape = _known_to_values(shape)
    _needs_python("ones", shape)
    dtype = _dtypes.as_dtype(dtype)
    if dtype == _dtypes.string:
        raise op_error(TypeError, "ones: a string tensor of ones is not defined")
    return _eager(np.ones(_static_dims(shape, "ones"), dtype=dtype.as_numpy_dtype))


def _like(fname, input, dtype, make):  # noqa: A002
    if isinstance(input, Tensor):
        shape = static_shape(input)
        if shape is None or any(d is None for d in shape):
            return _like_traced(fname, input, _dtypes.as_dtype(dtype or dtype_of(input)))
        return make(list(shape), dtype or dtype_of(input))
    arr = to_array(input)
    return make(list(arr.shape), dtype or _dtypes.as_dtype(arr.dtype))


def _like_traced(fname, x, dtype):
    """zeros_like / ones_like of a traced tensor whose shape is known only per
    element: (x == x) AND (x != x) is False everywhere (NaN too), cast to
    `dtype`; ones_like negates it."""
    if dtype == _dtypes.string or dtype_of(x) == _dtypes.string:
        raise x._trace.fail(f"{fname} of a string tensor whose shape is not static")
    false = logical_and(equal(x, x), not_equal(x, x))
    value = logical_not(false) if fname == "ones_like" else false
    return value if dtype == _dtypes.bool else cast(value, dtype)


def zeros_like(input, dtype=None, name=None):  # noqa: A002
    """Zeros of `input`'s shape (and dtype unless given) (``tf.zeros_like``)."""
    return _like("zeros_like", input, dtype, zeros)


def ones_like(input, dtype=None, name=None):  # noqa: A002
    """Ones of `input`'s shape (and dtype unless given) (``tf.ones_like``)."""
    return _like("ones_like", input, dtype, ones)


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


# -- ensure_shape (csrc/ops/ensure_shape.c) -----------------------------------------


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


# -- identity, size, rank -----------------------------------------------------------


def identity(input, name=None):  # noqa: A002 - TensorFlow's argument name
    """`input` as a tensor (``tf.identity``)."""
    x = convert(input, name="input")
    if isinstance(x, Tensor):  # a node of its own, as TensorFlow's Identity
        return ensure_shape(x, static_shape(x))
    return as_eager(np.asarray(x))


def identity_n(input, name=None):  # noqa: A002 - TensorFlow's argument name
    """A list of ``identity`` of each tensor in `input` (``tf.identity_n``)."""
    return [identity(v) for v in input]


def size(input, out_type=None, name=None):  # noqa: A002
    """The number of elements (``tf.size``; int32 unless `out_type`)."""
    out_type = _dtypes.int32 if out_type is None else _dtypes.as_dtype(out_type)
    x = convert(input, name="input")
    s = static_shape(x)
    if s is not None and None not in s:
        return _constant(int(np.prod(s, dtype=np.int64)), out_type)
    return cast(reduce_prod(shape(x, out_type=_dtypes.int64)), out_type)


def rank(input, name=None):  # noqa: A002
    """The number of dimensions, an int32 scalar (``tf.rank``)."""
    x = convert(input, name="input")
    s = static_shape(x)
    if s is None:
        return size(shape(x))
    return _constant(len(s), _dtypes.int32)


def _constant(value, dtype):
    return constant(value, dtype=dtype)
