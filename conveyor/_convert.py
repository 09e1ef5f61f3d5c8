"""Python values -> NumPy arrays with TensorFlow's dtype rules (convert_to_tensor).

Python ``int`` -> int32 (int64 when a value does not fit), ``float`` -> float32,
``bool`` -> bool, ``str``/``bytes`` -> string; NumPy arrays and scalars keep
their dtype; Python lists (even nested) become one tensor, and must be
rectangular. Strings are returned as object arrays of bytes.
"""
import numpy as np

from conveyor import dtypes as _dtypes

_INT32_MIN, _INT32_MAX = -(2 ** 31), 2 ** 31 - 1


def _python_leaves_kind(value):
    """'int'/'float'/'bool'/'str'/'other' for the leaves of a (nested) Python list."""
    kinds = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, bool):
            kinds.add("bool")
        elif isinstance(v, int) and not isinstance(v, np.integer):
            kinds.add("int")
        elif isinstance(v, float) and not isinstance(v, np.floating):
            kinds.add("float")
        elif isinstance(v, (str, bytes)):
            kinds.add("str")
        else:
            kinds.add("other")
    if kinds == {"int", "float"}:
        return "float"
    return kinds.pop() if len(kinds) == 1 else ("other" if kinds else "empty")


def _strings(arr):
    out = np.empty(arr.shape, dtype=object)
    flat_in, flat_out = arr.reshape(-1), out.reshape(-1)
    for i, v in enumerate(flat_in):
        if isinstance(v, bytes):
            flat_out[i] = v
        elif isinstance(v, str):
            flat_out[i] = v.encode("utf-8")
        elif isinstance(v, np.bytes_):
            flat_out[i] = bytes(v)
        else:
            raise TypeError(f"Cannot convert {v!r} (a {type(v).__name__}) in a string tensor")
    return out


def to_array(value, dtype=None):
    """Convert one leaf to a NumPy array (or NumPy scalar-like 0-d array)."""
    if dtype is not None:
        dtype = _dtypes.as_dtype(dtype)
        if dtype == _dtypes.string:
            arr = np.asarray(value, dtype=object)
            return _strings(arr)
        return np.asarray(value, dtype=dtype.as_numpy_dtype)
    if isinstance(value, np.ndarray):
        arr = value
    elif isinstance(value, np.generic):
        arr = np.asarray(value)
    elif isinstance(value, bool):
        return np.asarray(value, dtype=np.bool_)
    elif isinstance(value, int):
        return np.asarray(value, dtype=np.int32 if _INT32_MIN <= value <= _INT32_MAX else np.int64)
    elif isinstance(value, float):
        return np.asarray(value, dtype=np.float32)
    elif isinstance(value, (str, bytes)):
        return _strings(np.asarray(value, dtype=object))
    elif isinstance(value, list):
        kind = _python_leaves_kind(value)
        try:
            arr = np.array(value, dtype=object if kind == "str" else None)
        except ValueError:
            raise ValueError("Can't convert non-rectangular Python sequence to Tensor.") from None
        if arr.dtype == object and kind != "str":
            raise ValueError("Can't convert non-rectangular Python sequence to Tensor.")
        if kind == "int":
            ok = arr.size == 0 or (arr.min() >= _INT32_MIN and arr.max() <= _INT32_MAX)
            arr = arr.astype(np.int32 if ok else np.int64)
        elif kind == "float":
            arr = arr.astype(np.float32)
        elif kind == "empty":
            arr = arr.astype(np.float32)
    elif hasattr(value, "__array__") or hasattr(value, "numpy"):
        arr = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
    else:
        raise TypeError(f"Cannot convert {value!r} (a {type(value).__name__}) to a tensor.")
    if arr.dtype.kind in "SUO":
        return _strings(arr)
    _dtypes.as_dtype(arr.dtype)  # raises TypeError for unsupported dtypes (complex, datetime...)
    return arr


def spec_of(arr):
    """The TensorSpec of a converted array."""
    from conveyor.tensor_spec import TensorSpec
    return TensorSpec(arr.shape, _dtypes.as_dtype(arr.dtype))
