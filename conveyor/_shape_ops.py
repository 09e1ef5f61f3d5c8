"""Tensor ops that rearrange values, as input pipelines use them:
``tf.transpose``, ``tile``, ``pad``, ``reverse``, ``broadcast_to``,
``split``, ``boolean_mask``, ``sequence_mask``, ``math.cumsum``,
and ``stop_gradient`` (``image.resize_with_pad`` is in conveyor/image/_pad.py).

Arguments are checked and the static output spec computed here; the work is
done in C (csrc/ops/transpose.c, tile.c, pad.c, flip.c, broadcast_to.c,
split.c, cumsum.c), eagerly on NumPy arrays or recorded into the native
program of a traced map function. Shapes, multiples, paddings and split
sizes must be static (Python values or NumPy arrays). Errors follow
TensorFlow: what a graph rejects when the function is traced is a
ValueError when the pipeline is built; eagerly, and for values only known
per element, an ``InvalidArgumentError``.
"""
import builtins

import numpy as np

from conveyor import dtypes as _dtypes
from conveyor import errors
from conveyor._basics import identity
from conveyor._math import cast, expand_dims, less, reshape
from conveyor._reduce import _error, _static_ints, _traced, gather, range as _range, \
    reduce_max, squeeze, where
from conveyor._tracing import Tensor, apply, convert, dtype_of, op_error, static_shape

__all__ = ["transpose", "tile", "pad", "reverse", "broadcast_to", "split", "boolean_mask",
           "sequence_mask", "cumsum", "stop_gradient"]


def _static_array(value, fname, what):
    if isinstance(value, Tensor):
        raise value._trace.fail(f"{fname} with a traced `{what}` is not supported natively")
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
    return apply("BroadcastTo", [x], [(tuple(target), dtype_of(x))], attrs={"shape": target})


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
        raise op_error(ValueError, f"Shapes {_dims(inner)} and {_dims(ms)} are incompatible")
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


def _dims(dims):
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


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):  # noqa: A002
    """Running sums along `axis` (``tf.math.cumsum``): `exclusive` leaves
    each value out of its own sum (the first is 0), `reverse` sums from the
    end. Sums accumulate in the dtype (integers wrap), as TensorFlow."""
    v = convert(x, name="x")
    traced = _traced(v)
    dt = dtype_of(v)
    if dt in (_dtypes.string, _dtypes.bool):
        raise _error(traced, TypeError, f"Value for attr 'T' of {dt.name} is not in the list "
                                        f"of allowed values (cumsum takes numbers)")
    axes = _static_ints(axis, "cumsum", "axis")
    if len(axes) != 1:
        raise _error(traced, ValueError, "Shape must be rank 0 but is rank 1")
    a = axes[0]
    shape = static_shape(v)
    if shape is None:
        raise v._trace.fail("cumsum of a tensor of unknown rank is not supported natively")
    # An axis out of range is the op's InvalidArgumentError (per element when
    # traced, as in TensorFlow's graph).
    return apply("Cumsum", [v], [(shape, dt)], attrs={"axis": a, "exclusive": int(bool(exclusive)),
                                                      "reverse": int(bool(reverse))})


def stop_gradient(input, name=None):  # noqa: A002
    """`input` unchanged (``tf.stop_gradient``): input pipelines compute no
    gradients."""
    return identity(input)
