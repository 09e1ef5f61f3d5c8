"""``tf.slice``, ``tf.roll``, ``tf.repeat`` and ``tf.meshgrid``, built on
the element ops conveyor already has (StridedSlice, gather, reshape,
broadcast_to), eagerly and traced. Their sizes, shifts and repeats must be
static (Python or NumPy values); a traced call that needs a dim only known
per element stops the trace (the map then runs in Python)."""
import builtins

import numpy as np

from conveyor import errors
from conveyor.framework.tracing import Tensor, apply, convert, dtype_of, op_error, static_shape
from conveyor.ops.array_ops import broadcast_to, gather, reshape

__all__ = ["slice", "roll", "repeat", "meshgrid"]


def _ints(value, fname, what):
    if isinstance(value, Tensor):
        raise value._trace.fail(f"{fname} with a traced `{what}` is not supported natively")
    arr = np.asarray(value)
    if arr.size and arr.dtype.kind not in "iu":
        raise op_error(TypeError, f"{fname}: `{what}` must be integers, got {value!r}")
    return [int(v) for v in arr.reshape(-1)]


def _need_dim(x, d, fname):
    shape = static_shape(x)
    if shape is None or shape[d] is None:
        if isinstance(x, Tensor):
            raise x._trace.fail(f"{fname} along a dim of unknown size is not supported natively")
    return None if shape is None else shape[d]


def slice(input_, begin, size, name=None):  # noqa: A001 - TensorFlow's name
    """``tf.slice``: the block of `input_` starting at `begin` of `size`
    (-1: to the end of that dim)."""
    x = convert(input_, name="input_")
    shape = static_shape(x)
    b, s = _ints(begin, "slice", "begin"), _ints(size, "slice", "size")
    if shape is None:
        raise x._trace.fail("slice of a tensor of unknown rank is not supported natively")
    if len(b) != len(shape) or len(s) != len(shape):
        raise op_error(ValueError, f"Expected begin and size arguments to be 1-D tensors of "
                                   f"size {len(shape)}, but got shapes [{len(b)}] and "
                                   f"[{len(s)}] instead.")
    items, out = [], []
    for d, (n, start, count) in enumerate(zip(shape, b, s)):
        if start < 0 or count < -1 or (n is not None and (start > n or (
                count != -1 and start + count > n))):
            exc = ValueError if isinstance(x, Tensor) else errors.InvalidArgumentError
            raise op_error(exc, f"Expected size[{d}] in [0, {max(0, (n or 0) - start)}], but "
                                f"got {count}" if start >= 0 else
                                f"Expected begin[{d}] in [0, {n}], but got {start}")
        if count == -1:
            items.append((1, start, 0, 1, 1, 0))
            out.append(None if n is None else n - start)
        else:
            if n is None and isinstance(x, Tensor):
                # StridedSlice clamps where TensorFlow's slice fails: only exact
                # when the dim is known
                raise x._trace.fail("slice of a dim of unknown size is not supported natively")
            items.append((1, start, start + count, 1, 1, 1))
            out.append(count)
    dims = [int(v) for item in items for v in item]
    return apply("StridedSlice", [x], [(tuple(out), dtype_of(x))],
                 attrs={"num_dims": len(items), "dims": dims})


def roll(input, shift, axis, name=None):  # noqa: A002
    """``tf.roll``: values moved `shift` places along `axis` (each shift and
    axis a scalar or matching lists; shifts on one axis add up)."""
    x = convert(input, name="input")
    shifts, axes = _ints(shift, "roll", "shift"), _ints(axis, "roll", "axis")
    if len(shifts) != len(axes):
        raise op_error(errors.InvalidArgumentError if not isinstance(x, Tensor) else ValueError,
                       "shift and axis must have the same size")
    shape = static_shape(x)
    if shape is None:
        raise x._trace.fail("roll of a tensor of unknown rank is not supported natively")
    total = {}
    for s, a in zip(shifts, axes):
        if not -len(shape) <= a < len(shape):
            raise op_error(errors.InvalidArgumentError if not isinstance(x, Tensor)
                           else ValueError, f"axis {a} is out of range")
        total[a % len(shape)] = total.get(a % len(shape), 0) + s
    for a, s in total.items():
        n = _need_dim(x, a, "roll")
        if n:
            x = gather(x, (np.arange(n, dtype=np.int64) - s) % n, axis=a)
    return x


def repeat(input, repeats, axis=None, name=None):  # noqa: A002
    """``tf.repeat``: each value of `input` repeated `repeats` times along
    `axis` (None: of the flattened input); `repeats` is an int or one per
    value along the axis."""
    x = convert(input, name="input")
    reps = _ints(repeats, "repeat", "repeats")
    if axis is None:
        x = reshape(x, [-1])
        axis = 0
    shape = static_shape(x)
    if shape is None:
        raise x._trace.fail("repeat of a tensor of unknown rank is not supported natively")
    axis = int(axis)
    if not -len(shape) <= axis < len(shape):
        raise op_error(ValueError, f"axis {axis} is out of range for a tensor of rank "
                                   f"{len(shape)}")
    axis %= len(shape)
    n = _need_dim(x, axis, "repeat")
    if len(reps) != 1 and len(reps) != n:
        raise op_error(errors.InvalidArgumentError if not isinstance(x, Tensor) else ValueError,
                       f"repeats must have 1 or {n} values, got {len(reps)}")
    if builtins.any(r < 0 for r in reps):
        raise op_error(errors.InvalidArgumentError, "repeats must be non-negative")
    index = np.repeat(np.arange(n, dtype=np.int64), reps if len(reps) > 1 else reps[0])
    return gather(x, index, axis=axis)


def meshgrid(*args, **kwargs):
    """``tf.meshgrid``: N-D coordinate grids from 1-D (any rank: flattened)
    inputs; ``indexing="xy"`` (default: the first two output dims swapped)
    or ``"ij"``."""
    indexing = kwargs.pop("indexing", "xy")
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"Invalid keywords: {list(kwargs)}")
    if indexing not in ("xy", "ij"):
        raise ValueError("Argument `indexing` parameter must be either 'xy' or 'ij', got "
                         f"'{indexing}'")
    xs = [reshape(convert(a, name="args"), [-1]) for a in args]
    sizes = []
    for v in xs:
        n = static_shape(v)[0]
        if n is None:
            raise v._trace.fail("meshgrid of inputs of unknown size is not supported natively")
        sizes.append(n)
    k = len(xs)
    if indexing == "xy" and k > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, v in enumerate(xs):
        place = i
        if indexing == "xy" and k > 1 and i < 2:
            place = 1 - i
        dims = [1] * k
        dims[place] = sizes[place]
        out.append(broadcast_to(reshape(v, dims), sizes))
    return out
