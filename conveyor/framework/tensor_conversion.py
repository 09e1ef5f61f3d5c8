"""``tf.convert_to_tensor`` and ``tf.is_tensor``."""
import numpy as np

from conveyor import dtypes as _dtypes
from conveyor.framework.convert import to_array
from conveyor.framework.eager import EagerTensor, as_eager
from conveyor.framework.tracing import Tensor, current_trace, known_value

__all__ = ["convert_to_tensor", "is_tensor", "executing_eagerly", "get_static_value"]


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    """`value` as a tensor of `dtype` (``tf.convert_to_tensor``): a symbolic
    Tensor inside a traced function, an ``EagerTensor`` otherwise.
    `dtype_hint` is used when `value` (a Python number or list) fits it."""
    if isinstance(value, Tensor):
        if dtype is not None and _dtypes.as_dtype(dtype) != value.dtype:
            raise TypeError(f"Tensor conversion requested dtype {_dtypes.as_dtype(dtype).name} "
                            f"for Tensor with dtype {value.dtype.name}: {value!r}")
        return value
    if dtype is None and dtype_hint is not None and isinstance(value, (int, float, list, tuple)):
        try:
            arr = to_array(value, dtype_hint)
            if np.array_equal(arr, np.asarray(value)):
                dtype = dtype_hint
        except (TypeError, ValueError, OverflowError):
            pass
    if current_trace() is not None:  # a constant of the traced program
        from conveyor.ops.array_ops import constant
        return constant(value, dtype=dtype)
    arr = to_array(value, dtype)
    if dtype is not None and isinstance(value, np.ndarray) and value.dtype != arr.dtype \
            and _dtypes.as_dtype(value.dtype) != _dtypes.as_dtype(dtype):
        raise TypeError(f"Tensor conversion requested dtype {_dtypes.as_dtype(dtype).name} for "
                        f"array with dtype {_dtypes.as_dtype(value.dtype).name}")
    return as_eager(arr)


def is_tensor(x):
    """True for conveyor's tensors: traced ``Tensor``s and ``EagerTensor``s
    (an eager op's scalar string result is plain ``bytes``: False)."""
    return isinstance(x, (Tensor, EagerTensor))


def executing_eagerly():
    """``tf.executing_eagerly``: False while a function is traced into a
    map's program (as inside TensorFlow's graph), True otherwise. A map
    function that runs in Python per element sees True (it runs on eager
    values), where TensorFlow's graph says False."""
    return current_trace() is None


def get_static_value(tensor, partial=False):
    """``tf.get_static_value``: the NumPy value of `tensor` when it is known
    without running the pipeline (an eager tensor, a Python or NumPy value,
    a constant of a traced function, ``tf.shape`` of a fully known shape),
    else None; a value that is not a tensor comes back unchanged."""
    if isinstance(tensor, Tensor):
        known = known_value(tensor)
        return None if known is None else known.copy()
    if isinstance(tensor, EagerTensor):
        return tensor.numpy()
    return tensor
