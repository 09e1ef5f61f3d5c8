"""Data types, named as in TensorFlow (``conveyor.int64``, ``conveyor.string``, ...).

A :class:`DType` wraps the NumPy dtype that arrays of that type come out as;
``string`` tensors come out as ``bytes`` (scalars) or ``object`` arrays of
``bytes``, as ``Tensor.numpy()`` gives in TensorFlow. ``bfloat16`` tensors
come out as NumPy arrays of ``ml_dtypes.bfloat16`` (what TensorFlow returns);
ml_dtypes is an optional dependency (installed with TensorFlow, or the
``bfloat16`` extra): without it ``conveyor.bfloat16`` exists but making a
bfloat16 tensor raises ImportError naming the package.
"""
import numpy as np

try:
    import ml_dtypes as _ml_dtypes
except ImportError:  # optional: only bfloat16 tensors need it
    _ml_dtypes = None

__all__ = ["DType", "as_dtype", "bool", "int8", "int16", "int32", "int64", "uint8",
           "uint16", "uint32", "uint64", "float16", "half", "float32", "float64",
           "double", "string", "bfloat16"]


class DType:
    """A tensor element type. Compare with ``==``; ``as_numpy_dtype`` gives NumPy's."""

    __slots__ = ("name", "_code", "_np")

    def __init__(self, name, code, np_dtype):
        self.name = name
        self._code = code  # the engine's CvDtype value
        self._np = np_dtype

    @property
    def as_numpy_dtype(self):
        """The NumPy scalar type (``np.int64``, ...; ``object`` for strings;
        ``ml_dtypes.bfloat16`` for bfloat16)."""
        return self._np.type

    @property
    def is_floating(self):
        return self._np.kind == "f" or self._code == _BFLOAT16_CODE

    @property
    def is_integer(self):
        return self._np.kind in "iu"

    @property
    def is_bool(self):
        return self._np.kind == "b"

    @property
    def is_unsigned(self):
        return self._np.kind in "ub"

    @property
    def size(self):
        return self._np.itemsize

    @property
    def min(self):
        """The smallest value of a numeric type (``tf.DType.min``)."""
        if self._np.kind == "b":
            return False
        if self._code == _BFLOAT16_CODE:
            return float(_ml_dtypes.finfo(self._np).min)
        if self._np.kind == "f":
            return float(np.finfo(self._np).min)
        if self._np.kind in "iu":
            return int(np.iinfo(self._np).min)
        raise TypeError(f"Cannot find minimum value of {self.name}.")

    @property
    def max(self):
        """The largest value of a numeric type (``tf.DType.max``)."""
        if self._np.kind == "b":
            return True
        if self._code == _BFLOAT16_CODE:
            return float(_ml_dtypes.finfo(self._np).max)
        if self._np.kind == "f":
            return float(np.finfo(self._np).max)
        if self._np.kind in "iu":
            return int(np.iinfo(self._np).max)
        raise TypeError(f"Cannot find maximum value of {self.name}.")

    # A string EagerTensor's ``dtype`` is ``string`` (TensorFlow's answer,
    # where NumPy's would be ``object``): NumPy code that reads it as a
    # NumPy dtype still works. ``np.dtype(d)`` reads ``d.dtype``, and NumPy's
    # attributes (``kind``, ``itemsize``, ``char``...) come from the NumPy dtype.
    @property
    def dtype(self):
        return self._np

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return getattr(object.__getattribute__(self, "_np"), name)
        except AttributeError:
            raise AttributeError(f"'DType' object has no attribute {name!r}") from None

    def __eq__(self, other):
        if isinstance(other, DType):
            return self._code == other._code
        try:
            return self._code == as_dtype(other)._code
        except TypeError:
            return NotImplemented

    def __hash__(self):
        return hash(self._code)

    def __repr__(self):
        # TensorFlow's spelling: code ported with `import conveyor as tf` reads it back.
        return f"tf.{self.name}"

    def __reduce__(self):
        return as_dtype, (self.name,)


bool = DType("bool", 0, np.dtype(np.bool_))  # noqa: A001 (TensorFlow's name)
int8 = DType("int8", 1, np.dtype(np.int8))
int16 = DType("int16", 2, np.dtype(np.int16))
int32 = DType("int32", 3, np.dtype(np.int32))
int64 = DType("int64", 4, np.dtype(np.int64))
uint8 = DType("uint8", 5, np.dtype(np.uint8))
uint16 = DType("uint16", 6, np.dtype(np.uint16))
uint32 = DType("uint32", 7, np.dtype(np.uint32))
uint64 = DType("uint64", 8, np.dtype(np.uint64))
float16 = half = DType("float16", 9, np.dtype(np.float16))
float32 = DType("float32", 10, np.dtype(np.float32))
float64 = double = DType("float64", 11, np.dtype(np.float64))
class _StringDType(DType):
    """``string``'s class: what NumPy's code asks of ``type(a.dtype)`` when a
    string EagerTensor's dtype is ``string`` (np.testing reads ``_is_numeric``)."""

    __slots__ = ()
    _is_numeric = False


string = _StringDType("string", 12, np.dtype(object))

class _BFloat16DType(DType):
    """``bfloat16``'s class: without ml_dtypes it has no NumPy type, and
    asking for one says which package to install."""

    __slots__ = ()

    @property
    def _np(self):
        if _ml_dtypes is None:
            raise ImportError("conveyor.bfloat16 needs the ml_dtypes package for its NumPy type "
                              "(pip install ml_dtypes; TensorFlow installs it)")
        return np.dtype(_ml_dtypes.bfloat16)

    @_np.setter
    def _np(self, value):
        pass


_BFLOAT16_CODE = 13  # the engine's CV_BFLOAT16
bfloat16 = _BFloat16DType("bfloat16", _BFLOAT16_CODE, None)

_ALL = [bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32,
        float64, string] + ([bfloat16] if _ml_dtypes is not None else [])
_BY_NAME = {d.name: d for d in _ALL}
_BY_NAME.update(half=float16, double=float64, bfloat16=bfloat16)
_BY_NUMPY = {d._np: d for d in _ALL if d is not string}


def as_dtype(value):
    """Convert a DType, a name, a NumPy dtype/type, or a TensorFlow dtype to a :class:`DType`."""
    if isinstance(value, DType):
        return value
    if isinstance(value, np.dtype):  # the hot path: arrays' dtypes
        found = _BY_NUMPY.get(value)
        if found is not None:
            return found
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    name = getattr(value, "name", None)  # tf.DType and friends
    if isinstance(name, str) and name in _BY_NAME and not isinstance(value, np.dtype):
        return _BY_NAME[name]
    if value is str or value is bytes:
        return string
    try:
        npd = np.dtype(value)
    except TypeError:
        raise TypeError(f"Cannot convert {value!r} to a conveyor DType.") from None
    if npd.kind in "SUO":
        return string
    for d in _ALL:
        if d._np == npd:
            return d
    raise TypeError(f"Cannot convert {value!r} to a conveyor DType: dtype {npd} is not supported.")
