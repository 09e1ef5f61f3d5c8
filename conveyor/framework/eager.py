"""EagerTensor: what plain iteration yields, a NumPy array that also answers
``numpy()`` as TensorFlow's eager tensors do.

The engine creates instances directly (PyArray_NewFromDescr with this
subtype, csrc/python/convert.c), so arrays stay zero-copy views of engine
buffers; scalars and scalar strings come out as 0-d instances. ``numpy()``
gives the plain NumPy value: an ndarray view (no copy) for arrays, a NumPy
scalar for a 0-d number, ``bytes`` for a 0-d string, which is what
``as_numpy_iterator()`` yields. docs/differences.md gives the measured cost.
"""
import operator

import numpy as np

from conveyor import _engine
from conveyor import dtypes as _dtypes

__all__ = ["EagerTensor"]


def attr_text(attrs):
    """An op's named attributes (a dict, or (name, value) pairs) as the engine
    reads them (csrc/ops/op.h: cv_op_attrs_parse): "name=v;name=v1,v2", ints
    in decimal, floats as ``repr`` writes them (read back exactly)."""
    items = attrs.items() if isinstance(attrs, dict) else attrs
    return ";".join([f"{name}={value if type(value) is int else _attr_value(value)}"
                     for name, value in items])


def _attr_value(value):
    if type(value) is int:  # the common case, first
        return str(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        return ",".join(_attr_value(v) for v in value)
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return str(operator.index(value))


class _Shape(tuple):
    """``x.shape``: a tuple that also answers TensorShape's ``as_list()``, ``rank``."""

    __slots__ = ()

    def as_list(self):
        return list(self)

    @property
    def rank(self):
        return len(self)

    ndims = rank

    @property
    def dims(self):
        return list(self)

    def is_fully_defined(self):
        return True


_ndarray_shape = np.ndarray.shape
_ndarray_dtype = np.ndarray.dtype


def _is_text(value):
    """A string value an eager string tensor compares with: str, bytes, or an
    array or list of them."""
    if isinstance(value, (bytes, str)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "SU" or (value.dtype == object and value.size > 0 and
                                            isinstance(value.flat[0], (bytes, str)))
    return isinstance(value, list) and bool(value) and all(isinstance(v, (bytes, str))
                                                           for v in value)


def _as_bytes_array(value):
    arr = np.array(value, dtype=object)
    out = np.empty(arr.shape, dtype=object)
    for i, v in enumerate(arr.reshape(-1)):
        out.reshape(-1)[i] = v.encode() if isinstance(v, str) else bytes(v)
    return out


def _string_equal(a, b):
    """Elementwise a == b of string arrays with broadcasting: the native
    StringEqual op (csrc/ops/string_equal.c), as ``tf.equal`` runs it."""
    inputs = [_as_bytes_array(a.view(np.ndarray)), _as_bytes_array(b)]
    (result,) = _engine.run_op("StringEqual", inputs, attr_text({"negate": 0}), [], None, None, 1,
                               (0, 0, 0, 0, 0, 0))
    return result


class EagerTensor(np.ndarray):
    """A NumPy array (``isinstance(x, np.ndarray)``) with ``numpy()``, as
    ``tf.Tensor`` in eager mode. NumPy operations on it work as on an ndarray
    (results of ufuncs on arrays are EagerTensor too; on 0-d ones, NumPy scalars)."""

    __slots__ = ()

    def numpy(self):
        """The NumPy value: an ndarray view for arrays, a NumPy scalar (numbers)
        or ``bytes`` (strings) for 0-d ones."""
        if self.ndim == 0:
            return self[()]
        return self.view(np.ndarray)

    @property
    def shape(self):
        return _Shape(_ndarray_shape.__get__(self))

    @shape.setter
    def shape(self, value):
        _ndarray_shape.__set__(self, value)

    @property
    def dtype(self):
        """NumPy's dtype, but ``tf.string`` (a DType that NumPy reads as
        ``object``) for strings, as TensorFlow names it."""
        d = _ndarray_dtype.__get__(self)
        return _dtypes.string if d.kind == "O" else d

    @dtype.setter
    def dtype(self, value):
        _ndarray_dtype.__set__(self, value)

    def get_shape(self):
        return self.shape

    def set_shape(self, shape):
        """Check that `shape` (dims or None) fits, as ``Tensor.set_shape`` does
        for an eager tensor; the shape itself never changes."""
        from conveyor.tensor_spec import TensorShape
        if not TensorShape(shape).is_compatible_with(TensorShape(_ndarray_shape.__get__(self))):
            raise ValueError(f"Tensor's shape {_ndarray_shape.__get__(self)} is not compatible "
                             f"with supplied shape {TensorShape(shape)}.")

    def __hash__(self):
        # 0-d ones hash as their value (sets and dict keys of scalar elements
        # keep working, as with the NumPy scalars and bytes of before); arrays
        # stay unhashable, as ndarrays are.
        if self.ndim == 0:
            return hash(self[()])
        raise TypeError("unhashable type: 'EagerTensor' (use x.numpy().tobytes() or a tuple)")

    def __eq__(self, other):
        # Strings compare as bytes, str as its UTF-8 (as TensorFlow converts
        # it), with broadcasting: NumPy would compare bytes with str as
        # unequal and drop trailing NULs of fixed-width bytes (b"a\0" == b"a").
        if self.dtype == object and _is_text(other):
            if self.ndim == 0 and isinstance(other, (bytes, str)):
                return self[()] == (other.encode() if isinstance(other, str) else other)
            return _string_equal(self, other)
        return np.ndarray.__eq__(self, other)

    def __ne__(self, other):
        if self.dtype == object and _is_text(other):
            eq = self.__eq__(other)
            return not eq if isinstance(eq, bool) else ~eq
        return np.ndarray.__ne__(self, other)

    def __getitem__(self, index):
        # One string of a string tensor is a scalar string tensor (as in
        # TensorFlow), not the bare bytes an object array gives.
        item = np.ndarray.__getitem__(self, index)
        if isinstance(item, bytes) and self.ndim and self.dtype == object:
            return as_eager(item)
        return item

    # A string tensor prints as NumPy prints its values ([b'goat' b'dog']): NumPy's printing
    # indexes each item, which __getitem__ above would wrap in an EagerTensor of its own.
    def __str__(self):
        if self.dtype == object:
            return str(self.view(np.ndarray))
        return np.ndarray.__str__(self)

    def __repr__(self):
        if self.dtype == object:
            prefix = "EagerTensor("
            body = np.array2string(self.view(np.ndarray), separator=", ", prefix=prefix)
            return f"{prefix}{body}, dtype=object)"
        return np.ndarray.__repr__(self)

    def __bytes__(self):
        # bytes(x) of a scalar string is the string (NumPy's buffer protocol
        # would give the bytes of the object pointer); of others, NumPy's.
        if self.ndim == 0 and self.dtype == object:
            return bytes(self[()])
        return self.tobytes()

    def decode(self, encoding="utf-8", errors="strict"):
        """A scalar string's ``bytes.decode`` (conveyor yielded ``bytes`` before
        EagerTensor; TensorFlow's tensors have no decode: ``x.numpy().decode()``)."""
        if self.ndim != 0 or self.dtype != object:
            raise AttributeError("decode() is for scalar strings (0-d, dtype object)")
        return self[()].decode(encoding, errors)

    def __reduce__(self):
        # Pickle as the plain NumPy value: unpickling needs no conveyor.
        value = self.numpy()
        if isinstance(value, bytes):
            return bytes, (value,)
        return value.__reduce__()


def eager_result(value):
    """An eager op's output (an EagerTensor made by the engine) as conveyor
    returns it: a scalar string becomes plain ``bytes`` (a bytes subclass
    would be read by NumPy as a number; ``np.asarray(b"12")`` of one is 12),
    the rest stay EagerTensors."""
    if value.ndim == 0 and value.dtype == object:
        return value[()]
    return value


def as_eager(value):
    """A NumPy value (array, scalar, bytes) -> EagerTensor, sharing memory."""
    if isinstance(value, EagerTensor):
        return value
    if isinstance(value, np.ndarray):
        return value.view(EagerTensor)
    if isinstance(value, (bytes, str)):
        arr = np.empty((), dtype=object)
        arr[()] = value
        return arr.view(EagerTensor)
    return np.asarray(value).view(EagerTensor)


_engine.set_eager_type(EagerTensor)
