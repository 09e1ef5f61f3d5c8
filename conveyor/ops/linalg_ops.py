"""``tf.linalg.matmul`` (``tf.matmul``) and ``tf.linspace``, built on the
element ops conveyor has (a broadcast multiply and a sum; Range), eagerly and
traced into a map's native program. matmul is meant for the small matrices
of input pipelines (color transforms, affine coordinates), not for large
products."""
import builtins

import numpy as np

from conveyor import dtypes as _dtypes
from conveyor import errors
from conveyor.framework.tracing import Tensor, convert, dtype_of, op_error, static_shape
from conveyor.ops.array_ops import concat, expand_dims, transpose
from conveyor.ops.math_ops import add, cast, divide, multiply, reduce_sum, subtract

__all__ = ["matmul", "linspace"]

_MATMUL_DTYPES = (_dtypes.float16, _dtypes.float32, _dtypes.float64, _dtypes.int32,
                  _dtypes.int64)


def _error(traced, message):
    return op_error(ValueError if traced else errors.InvalidArgumentError, message)


def _swap_last(x, rank):
    return transpose(x, list(builtins.range(rank - 2)) + [rank - 1, rank - 2])


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, output_type=None, grad_a=False, grad_b=False,
           name=None):
    """The matrix product of `a` and `b` (``tf.matmul``): the last two dims
    are the matrices ([..., M, K] @ [..., K, N]), leading dims broadcast;
    `transpose_a` / `transpose_b` (`adjoint_*` alike, for real numbers)
    transpose them first. float16, float32, float64, int32 or int64, one
    dtype for both; float32 sums of products may differ from TensorFlow's in
    the last bit (the order of additions). Ranks must be known and >= 2."""
    x, y = convert(a, name="a"), convert(b, name="b")
    traced = isinstance(x, Tensor) or isinstance(y, Tensor)
    if dtype_of(x) != dtype_of(y):
        raise op_error(TypeError, f"matmul: a and b must have the same dtype, got "
                                  f"{dtype_of(x).name} and {dtype_of(y).name}")
    if dtype_of(x) not in _MATMUL_DTYPES:
        raise op_error(TypeError if traced else errors.InvalidArgumentError,
                       f"matmul: Value for attr 'T' of {dtype_of(x).name} is not in the list of "
                       f"allowed values (float16, float32, float64, int32, int64)")
    sx, sy = static_shape(x), static_shape(y)
    if sx is None or sy is None:
        raise next(v for v in (x, y) if isinstance(v, Tensor))._trace.fail(
            "matmul of a tensor of unknown rank is not supported natively")
    if len(sx) < 2 or len(sy) < 2:
        raise _error(traced, f"matmul: inputs must be at least 2-D, got shapes {list(sx)} and "
                             f"{list(sy)}")
    if transpose_a or adjoint_a:
        x, sx = _swap_last(x, len(sx)), sx[:-2] + (sx[-1], sx[-2])
    if transpose_b or adjoint_b:
        y, sy = _swap_last(y, len(sy)), sy[:-2] + (sy[-1], sy[-2])
    if sx[-1] is not None and sy[-2] is not None and sx[-1] != sy[-2]:
        raise _error(traced, f"Matrix size-incompatible: In[0]: {list(sx)}, In[1]: {list(sy)}")
    product = multiply(expand_dims(x, -1), expand_dims(y, -3))  # [..., M, K, N]
    out = reduce_sum(product, axis=-2)
    if output_type is not None and _dtypes.as_dtype(output_type) != dtype_of(out):
        out = cast(out, output_type)
    return out


def linspace(start, stop, num, name=None, axis=0):
    """`num` evenly spaced values from `start` to `stop`, both included
    (``tf.linspace``), computed as TensorFlow does: start + i * delta for
    the inner values, delta = (stop - start) / (num - 1), and `stop` itself
    last. `start` and `stop` are floats (scalars, or tensors of one shape:
    the values then run along `axis`; integers are computed in float64, as
    TensorFlow); `num` is a Python int here."""
    s, e = convert(start, name="start"), convert(stop, name="stop")
    if isinstance(num, Tensor):
        raise num._trace.fail("linspace with a traced `num` is not supported natively")
    n = int(np.asarray(num))
    if n < 0:
        raise op_error(ValueError if isinstance(s, Tensor) else errors.InvalidArgumentError,
                       f"linspace: num must be >= 0, got {n}")
    if dtype_of(s).is_integer and dtype_of(e).is_integer:  # TensorFlow computes in float64
        s, e = cast(s, _dtypes.float64), cast(e, _dtypes.float64)
    if dtype_of(s) != dtype_of(e) and isinstance(stop, (int, float)):
        e = convert(np.asarray(stop, dtype_of(s).as_numpy_dtype))
    if dtype_of(s) != dtype_of(e) and isinstance(start, (int, float)):
        s = convert(np.asarray(start, dtype_of(e).as_numpy_dtype))
    if not dtype_of(s).is_floating or dtype_of(s) != dtype_of(e):
        raise op_error(TypeError, f"linspace: start and stop must be floats of one dtype, "
                                  f"got {dtype_of(s).name} and {dtype_of(e).name}")
    dtype = dtype_of(s)
    shape = static_shape(s)
    if shape is None:
        raise s._trace.fail("linspace of a tensor of unknown rank is not supported natively")
    rank = len(shape)
    axis = axis + rank + 1 if axis < 0 else axis
    if not 0 <= axis <= rank:
        raise op_error(ValueError, f"linspace: axis {axis} out of range for rank {rank}")
    t = dtype.as_numpy_dtype
    steps = builtins.max(n - 1, 1)
    delta = divide(subtract(e, s), t(steps))
    inner = np.arange(1, builtins.max(n - 1, 1), dtype=np.int64).astype(t)
    inner = inner.reshape((-1,) + (1,) * (rank - axis))
    parts = [expand_dims(s, axis), add(expand_dims(s, axis),
                                       multiply(expand_dims(delta, axis), inner)),
             expand_dims(e, axis)]
    out = concat(parts, axis)
    if n >= 2:
        return out
    from conveyor.ops.manip_ops import slice as _slice
    return _slice(out, [0] * (rank + 1), [n if i == axis else -1 for i in builtins.range(rank + 1)])
