"""EagerTensor: what plain iteration yields, a NumPy array that also answers
``numpy()`` as TensorFlow's eager tensors do.

The engine creates instances directly (PyArray_NewFromDescr with this
subtype, csrc/python/convert.c), so arrays stay zero-copy views of engine
buffers; scalars and scalar strings come out as 0-d instances. ``numpy()``
gives the plain NumPy value: an ndarray view (no copy) for arrays, a NumPy
scalar for a 0-d number, ``bytes`` for a 0-d string, which is what
``as_numpy_iterator()`` yields. docs/differences.md gives the measured cost.
"""
import numpy as np

from conveyor import _engine

__all__ = ["EagerTensor", "EagerBytes"]


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
        # Strings compare as bytes: NumPy would turn `other` into a fixed-width
        # bytes array and drop its trailing NULs (b"a\0" == b"a").
        if isinstance(other, (bytes, str)) and self.dtype == object:
            if self.ndim == 0:
                return self[()] == other
            return np.array([v == other for v in self.flat], dtype=bool).reshape(
                _ndarray_shape.__get__(self)).view(EagerTensor)
        return np.ndarray.__eq__(self, other)

    def __ne__(self, other):
        if isinstance(other, (bytes, str)) and self.dtype == object:
            eq = self.__eq__(other)
            return not eq if self.ndim == 0 else ~eq
        return np.ndarray.__ne__(self, other)

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


class EagerBytes(bytes):
    """A scalar string result of a conveyor op called eagerly
    (``tf.io.read_file(path)``, ``tf.io.encode_jpeg(image)``): the ``bytes``
    themselves (``len``, slicing, ``open(...).write`` work), answering what
    TensorFlow's scalar string tensor does too: ``numpy()`` (plain
    ``bytes``), ``shape`` (``()``), ``ndim``, ``dtype`` (``tf.string``)."""

    __slots__ = ()

    def numpy(self):
        return bytes(self)

    @property
    def shape(self):
        return _Shape(())

    def get_shape(self):
        return self.shape

    ndim = 0

    @property
    def dtype(self):
        from conveyor import dtypes
        return dtypes.string

    def __reduce__(self):
        return bytes, (bytes(self),)


def eager_result(value):
    """An eager op's output (an EagerTensor made by the engine) as conveyor
    returns it: a scalar string becomes EagerBytes, the rest stay."""
    if value.ndim == 0 and value.dtype == object:
        return EagerBytes(value[()])
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
