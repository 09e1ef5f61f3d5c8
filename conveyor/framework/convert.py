"""Python values -> NumPy arrays with TensorFlow's dtype rules (convert_to_tensor).

Python ``int`` -> int32 (int64 when a value does not fit), ``float`` -> float32,
``bool`` -> bool, ``str``/``bytes`` -> string; NumPy arrays and scalars keep
their dtype; Python lists (even nested) become one tensor, and must be
rectangular. Strings are returned as object arrays of bytes.
"""
import numpy as np

from conveyor import dtypes as _dtypes
from conveyor.tensor_spec import TensorSpec

_INT32_MIN, _INT32_MAX = -(2 ** 31), 2 ** 31 - 1
_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1


def _leaf_kind(v):
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (int, np.integer)):
        return "int"
    if isinstance(v, (float, np.floating)):
        return "float64" if isinstance(v, np.float64) else "float"
    if isinstance(v, (str, bytes)):
        return "str"
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return _leaf_kind(v[()])
    return "other"


def _python_leaves_kind(value):
    """The dtype family TensorFlow infers for a (nested) Python list.

    Like TensorFlow: NumPy integer scalars count as Python ints (int32), a
    bool can join ints but a list that starts with a bool holds only bools,
    any float makes the list float32 (float64 if one is a NumPy float64).
    """
    kinds = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(reversed(v))
        else:
            kinds.append(_leaf_kind(v))
    if not kinds:
        return "empty"
    found = set(kinds)
    if "other" in found or ("str" in found and len(found) > 1):
        return "other"
    if kinds[0] == "bool" and found != {"bool"}:
        raise ValueError("Can't convert Python sequence with mixed types to Tensor: it starts "
                         "with a bool and also holds numbers.")
    for kind in ("str", "float64", "float", "int"):
        if kind in found:
            return kind
    return "bool"


def _strings(arr):
    out = np.empty(arr.shape, dtype=object)
    flat_in, flat_out = arr.reshape(-1), out.reshape(-1)
    for i, v in enumerate(flat_in):
        if isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype == object:
            v = v[()]  # a scalar string from plain iteration (a 0-d EagerTensor)
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
    if isinstance(value, range):  # TensorFlow converts a range as the list of its values
        value = list(value)
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
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise ValueError(f"Can't convert Python int {value} to a tensor: it does not fit in int64.")
        return np.asarray(value, dtype=np.int32 if _INT32_MIN <= value <= _INT32_MAX else np.int64)
    elif isinstance(value, float):
        return np.asarray(value, dtype=np.float32)
    elif isinstance(value, (str, bytes)):
        return _strings(np.asarray(value, dtype=object))
    elif isinstance(value, (list, tuple)):  # a tuple as a leaf is a sequence (tf.constant((1, 2)))
        kind = _python_leaves_kind(value)
        try:
            arr = np.array(value, dtype=object if kind in ("str", "int") else None)
        except ValueError:
            raise ValueError("Can't convert non-rectangular Python sequence to Tensor.") from None
        if kind == "int":  # via object, so values beyond int64 are caught, not wrapped
            if any(isinstance(v, (list, tuple)) for v in arr.reshape(-1)):
                raise ValueError("Can't convert non-rectangular Python sequence to Tensor.")
            flat = [int(v) for v in arr.reshape(-1)]
            lo, hi = (min(flat), max(flat)) if flat else (0, 0)
            if lo < _INT64_MIN or hi > _INT64_MAX:
                raise ValueError("Can't convert Python sequence to a tensor: a value does not "
                                 "fit in int64.")
            arr = arr.astype(np.int32 if _INT32_MIN <= lo and hi <= _INT32_MAX else np.int64)
        elif arr.dtype == object and kind != "str":
            raise ValueError("Can't convert non-rectangular Python sequence to Tensor.")
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
    return TensorSpec(arr.shape, _dtypes.as_dtype(arr.dtype))
