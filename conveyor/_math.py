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
from conveyor._tracing import Tensor, apply, convert, dtype_of, op_error, static_shape

__all__ = ["cast", "reshape", "add", "subtract", "multiply", "divide", "truediv", "floordiv",
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
    return apply("Cast", [x], [(static_shape(x), dtype)], ints=[dtype._code])


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
    return apply("Reshape", [x], [(tuple(out), dtype_of(x))], ints=dims)
