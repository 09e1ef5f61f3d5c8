"""Turning snippet results into comparable values, and comparing them."""
import numpy as np


class MissingTestData(Exception):
    """A snippet needs files of the shared test data that this checkout lacks (the test skips)."""


def to_numpy(x):
    """A nested structure of tensors / arrays / scalars as NumPy and Python values.

    Tensors (TensorFlow's, or anything with ``.numpy()``) become NumPy arrays;
    dicts, tuples and lists keep their structure (named tuples become tuples);
    bytes and str stay as they are; a string scalar becomes ``bytes`` and a
    string array an object array of ``bytes``; Python numbers become 0-d arrays.
    """
    if isinstance(x, dict):
        return {k: to_numpy(v) for k, v in x.items()}
    if hasattr(x, "to_list") and type(x).__name__.startswith("Ragged"):  # before tuples:
        return ("ragged", x.to_list())  # conveyor's RaggedTensor is a named tuple
    if isinstance(x, tuple):
        return tuple(to_numpy(v) for v in x)
    if isinstance(x, list):
        return [to_numpy(v) for v in x]
    if x is None or isinstance(x, (str, bytes)):
        return x
    if all(hasattr(x, a) for a in ("indices", "values", "dense_shape")):  # sparse, any library
        return tuple(to_numpy(v) for v in (x.indices, x.values, x.dense_shape))
    if hasattr(x, "to_list") and type(x).__name__.startswith("Ragged"):
        return ("ragged", x.to_list())
    if hasattr(x, "numpy"):
        x = x.numpy()
    if isinstance(x, np.bytes_):
        return bytes(x)
    if isinstance(x, np.str_):
        return str(x)
    arr = np.asarray(x)
    if arr.dtype.kind in "SUO":
        if arr.ndim == 0:
            v = arr.item()
            return v.encode() if isinstance(v, str) else v
        out = np.empty(arr.shape, dtype=object)
        for i, v in np.ndenumerate(arr):
            out[i] = v.encode() if isinstance(v, str) else (bytes(v) if isinstance(v, np.bytes_) else v)
        return out
    return arr


def _kind(x):
    if isinstance(x, dict):
        return "dict"
    if isinstance(x, tuple):
        return "tuple"
    if isinstance(x, list):
        return "list"
    if isinstance(x, np.ndarray):
        return "string array" if x.dtype == object else "array"
    return type(x).__name__


def compare(expected, actual, path="value", rtol=1e-6, atol=1e-6):
    """None when ``actual`` (conveyor) matches ``expected`` (TensorFlow), else a message."""
    ke, ka = _kind(expected), _kind(actual)
    if ke != ka:
        return f"{path}: {ke} expected, got {ka} ({_short(actual)})"
    if ke == "dict":
        if sorted(map(str, expected)) != sorted(map(str, actual)):
            return f"{path}: keys {sorted(expected)} expected, got {sorted(actual)}"
        for k in expected:
            msg = compare(expected[k], actual[k], f"{path}[{k!r}]", rtol, atol)
            if msg:
                return msg
        return None
    if ke in ("tuple", "list"):
        if len(expected) != len(actual):
            return f"{path}: length {len(expected)} expected, got {len(actual)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            msg = compare(e, a, f"{path}[{i}]", rtol, atol)
            if msg:
                return msg
        return None
    if ke in ("array", "string array"):
        if expected.shape != actual.shape:
            return f"{path}: shape {expected.shape} expected, got {actual.shape}"
        if expected.dtype != actual.dtype:
            return f"{path}: dtype {expected.dtype} expected, got {actual.dtype}"
        if expected.dtype.kind in "fc":
            ok = np.allclose(expected, actual, rtol=rtol, atol=atol, equal_nan=True)
        elif expected.dtype == object:
            ok = all(e == a for e, a in zip(expected.ravel(), actual.ravel()))
        else:
            ok = np.array_equal(expected, actual)
        if not ok:
            return f"{path}: values differ: expected {_short(expected)}, got {_short(actual)}"
        return None
    if expected != actual:
        return f"{path}: {_short(expected)} expected, got {_short(actual)}"
    return None


def _short(x, n=160):
    s = repr(x).replace("\n", " ")
    return s if len(s) <= n else s[:n] + "..."
