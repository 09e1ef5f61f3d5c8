"""tf.train.Example: parsing (``parse_single_example``, ``parse_example``) and building.

Parsing follows ``tf.io.parse_single_example`` / ``tf.io.parse_example``:
the ``features`` dict maps feature keys to :class:`FixedLenFeature`,
:class:`VarLenFeature` or :class:`FixedLenSequenceFeature`, and the result
is a dict of NumPy arrays (a :class:`SparseTensor` for ``VarLenFeature``).
The wire format is decoded in C (no TensorFlow, no protobuf); malformed
records raise :class:`conveyor.errors.InvalidArgumentError` with
TensorFlow's messages.

Building: :func:`serialize_example` turns a dict of Python / NumPy values
into the bytes of a ``tf.train.Example`` (what
``tf.train.Example(...).SerializeToString()`` gives), so records can be
written without protobuf::

    record = conveyor.io.serialize_example({
        "label": 3,                                  # int64_list
        "weights": [0.5, 1.5],                       # float_list
        "name": b"cat",                              # bytes_list
        "ids": conveyor.io.Feature(int64_list=[]),   # an explicit (here empty) kind
    })
"""
import collections

import numpy as np

from conveyor import _engine
from conveyor.framework import tracing as _tracing
from conveyor.proto import wire as _wire
from conveyor.proto.example_pb import Feature as _FeatureMessage
from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor.tensor_spec import TensorShape

__all__ = ["FixedLenFeature", "VarLenFeature", "FixedLenSequenceFeature", "SparseTensor",
           "Feature", "parse_single_example", "parse_example", "serialize_example"]

# Engine codes (csrc/ops/example.h CvFeatureKind).
_FIXED_LEN, _VAR_LEN, _FIXED_LEN_SEQUENCE = 0, 1, 2


class FixedLenFeature(collections.namedtuple("FixedLenFeature",
                                             ["shape", "dtype", "default_value"])):
    """Configuration for parsing a fixed-length input feature, as ``tf.io.FixedLenFeature``.

    Fields:
      shape: Shape of the input feature (a list, tuple or ``TensorShape``;
        every dimension known).
      dtype: Data type of the input feature: ``float32``, ``int64`` or ``string``.
      default_value: Value used when an example lacks the feature. It must be
        compatible with ``dtype`` and have ``prod(shape)`` values. ``None``
        makes the feature required.
    """

    __slots__ = ()

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """Configuration for parsing a variable-length input feature into a :class:`SparseTensor`.

    Fields:
      dtype: Data type of the input feature: ``float32``, ``int64`` or ``string``.
    """

    __slots__ = ()


class FixedLenSequenceFeature(collections.namedtuple(
        "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"])):
    """Configuration for parsing a variable-length input feature into a dense tensor.

    The feature holds any number of rows of ``shape``; the result has shape
    ``[rows] + shape`` (``parse_single_example``) or ``[batch, max_rows] +
    shape`` padded with ``default_value`` (``parse_example``).

    Fields:
      shape: Shape of one row (every dimension known and positive).
      dtype: Data type: ``float32``, ``int64`` or ``string``.
      allow_missing: Must be ``True`` (as in TensorFlow, for ``tf.train.Example``).
      default_value: A scalar used to pad; ``None`` pads with 0 or ``b""``.
    """

    __slots__ = ()

    def __new__(cls, shape, dtype, allow_missing=False, default_value=None):
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


class SparseTensor(collections.namedtuple("SparseTensor", ["indices", "values", "dense_shape"])):
    """A sparse tensor as three NumPy arrays, like ``tf.sparse.SparseTensor``.

    ``indices`` is an int64 ``[N, rank]`` array of the coordinates of the
    ``values`` (``[N]``), and ``dense_shape`` the int64 ``[rank]`` shape of the
    dense tensor it stands for.
    """

    __slots__ = ()

    def __new__(cls, indices, values, dense_shape):
        return super().__new__(cls, indices, values, dense_shape)

    @property
    def shape(self):
        if isinstance(self.dense_shape, _tracing.Tensor):  # traced: its rank, sizes unknown
            rank = self.dense_shape.shape.as_list()[0] if self.dense_shape.shape.rank else None
            return TensorShape(None if rank is None else [None] * rank)
        return TensorShape([int(d) for d in np.asarray(self.dense_shape)])

    @property
    def dtype(self):
        if isinstance(self.values, _tracing.Tensor):  # traced
            return self.values.dtype
        return _dtypes.as_dtype(np.asarray(self.values).dtype)

    def to_dense(self, default_value=None):
        """The dense NumPy array (as ``tf.sparse.to_dense``)."""
        values = np.asarray(self.values)
        fill = default_value if default_value is not None else (
            b"" if values.dtype == object else 0)
        out = np.full(tuple(int(d) for d in np.asarray(self.dense_shape)), fill,
                      dtype=values.dtype)
        idx = np.asarray(self.indices)
        if len(values):
            out[tuple(idx.T)] = values
        return out


_ALLOWED = {"float32": 10, "int64": 4, "string": 12}  # CvDtype codes


def _feature_dtype(dtype, attr):
    try:
        d = _dtypes.as_dtype(dtype)
    except TypeError:
        d = None
    if d is None or d.name not in _ALLOWED:
        name = getattr(d, "name", dtype)
        raise _errors.InvalidArgumentError(
            None, None, f"Invalid config dtype: {name}. Value for attr '{attr}' of {name} is not "
            f"in the list of allowed values: float, int64, string", _errors.INVALID_ARGUMENT)
    return d


def _feature_shape(key, shape, kind):
    try:
        dims = TensorShape(shape).as_list()
    except (TypeError, ValueError) as e:
        raise ValueError(f"Invalid shape {shape!r} for feature {key}: {e}") from None
    if dims is None or any(d is None for d in dims):
        raise ValueError(f"All dimensions of shape for feature {key} need to be known but "
                         f"received {shape}.")
    if kind == _FIXED_LEN_SEQUENCE and 0 in dims:
        raise ValueError(f"Feature {key}: a FixedLenSequenceFeature shape cannot have a "
                         f"zero-sized dimension, got {dims}")
    return tuple(int(d) for d in dims)


def _default_array(key, value, dtype, count):
    np_dtype = object if dtype.name == "string" else dtype.as_numpy_dtype
    try:
        if dtype.name == "string":
            arr = np.asarray(value, dtype=object)
            flat = [v.encode() if isinstance(v, str) else v for v in arr.ravel().tolist()]
            if not all(isinstance(v, bytes) for v in flat):
                raise TypeError("expected bytes or str values")
            arr = np.empty(len(flat), dtype=object)
            arr[:] = flat
        else:
            arr = np.asarray(value)
            if arr.dtype.kind in "OSU":
                raise TypeError(f"a {arr.dtype} value")
            arr = arr.astype(np_dtype).ravel()
    except (TypeError, ValueError) as e:
        raise TypeError(f"default_value of feature {key} is not compatible with "
                        f"{dtype.name}: {e}") from None
    if arr.size != count:
        raise _errors.InvalidArgumentError(
            None, None, f"Input to reshape is a tensor with {arr.size} values, but the requested "
            f"shape has {count}", _errors.INVALID_ARGUMENT)
    return np.ascontiguousarray(arr)


def _spec_of(key, feature):
    if not isinstance(key, str):
        if isinstance(key, bytes):
            key = key.decode()
        else:
            raise TypeError(f"feature keys must be str, got {type(key).__name__}")
    if isinstance(feature, VarLenFeature):
        dtype = _feature_dtype(feature.dtype, "sparse_types")
        return (key, _VAR_LEN, _ALLOWED[dtype.name], (), None)
    if isinstance(feature, FixedLenSequenceFeature):
        if not feature.allow_missing:
            raise ValueError("Unsupported: FixedLenSequenceFeature requires allow_missing to "
                             "be True.")
        dtype = _feature_dtype(feature.dtype, "Tdense")
        shape = _feature_shape(key, feature.shape, _FIXED_LEN_SEQUENCE)
        default = None
        if feature.default_value is not None:
            default = _default_array(key, feature.default_value, dtype, 1)
        return (key, _FIXED_LEN_SEQUENCE, _ALLOWED[dtype.name], shape, default)
    if isinstance(feature, FixedLenFeature):
        dtype = _feature_dtype(feature.dtype, "Tdense")
        shape = _feature_shape(key, feature.shape, _FIXED_LEN)
        default = None
        if feature.default_value is not None:
            default = _default_array(key, feature.default_value, dtype,
                                     int(np.prod(shape, dtype=np.int64)))
        return (key, _FIXED_LEN, _ALLOWED[dtype.name], shape, default)
    raise ValueError(f"Unsupported feature type for {key}: {type(feature).__name__} (expected "
                     f"FixedLenFeature, VarLenFeature or FixedLenSequenceFeature)")


_config_cache = {}


def _freeze(value):
    """A hashable stand-in for a feature spec field (shapes are often lists)."""
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tobytes() if value.dtype != object else
                _freeze(value.tolist()))
    return value


_identity_cache = {}  # id(features) -> (features, ((key, id(spec)), ...), compiled)


def _compile(features):
    """(keys, kinds, engine config) for a features dict; cached when hashable.

    The usual caller passes the same dict of (immutable) feature specs for every
    record, so a dict seen before with the same spec objects is found by
    identity first, without hashing the specs."""
    entry = _identity_cache.get(id(features))
    if entry is not None and entry[0] is features and len(features) == len(entry[1]) and all(
            k == ek and f is ef for (k, f), (ek, ef) in zip(features.items(), entry[1])):
        return entry[2]
    compiled = _compile_uncached(features)
    if len(_identity_cache) >= 64:
        _identity_cache.clear()
    _identity_cache[id(features)] = (features, tuple(features.items()), compiled)
    return compiled


def _compile_uncached(features):
    if not isinstance(features, dict) and not hasattr(features, "items"):
        raise TypeError(f"features must be a dict, got {type(features).__name__}")
    if not features:
        raise ValueError("Invalid argument: features cannot be empty.")
    try:
        cache_key = tuple((k, type(f).__name__, _freeze(tuple(f))) for k, f in features.items())
        hit = _config_cache.get(cache_key)
    except TypeError:  # unhashable default values
        cache_key = hit = None
    if hit is not None:
        return hit
    specs = [_spec_of(k, f) for k, f in features.items()]
    # Packed for the engine (csrc/python/example.c): per feature (kind, dtype
    # code, rank, index of its default or -1), then every shape's dims.
    ints, defaults = [], []
    for _, kind, code, shape, default in specs:
        ints += [kind, code, len(shape), -1 if default is None else len(defaults)]
        defaults += [] if default is None else [default]
    config = _engine.example_config(tuple(s[0] for s in specs), np.array(ints, np.intc),
                                    np.array([d for s in specs for d in s[3]], np.int64), defaults)
    compiled = ([s[0] for s in specs], [s[1] for s in specs], config,
                list(features.keys()), specs)
    if cache_key is not None:
        if len(_config_cache) >= 256:
            _config_cache.clear()
        _config_cache[cache_key] = compiled
    return compiled


def _as_bytes(value, what):
    if isinstance(value, bytes):
        return bytes(value) if type(value) is not bytes else value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return _as_bytes(value.item(), what)
    raise TypeError(f"{what} must be a string (bytes), got {type(value).__name__}")


def _bytes_list(values, what):
    if isinstance(values, (bytes, str)):
        raise ValueError(f"{what} must be a vector of strings, got a scalar")
    arr = np.asarray(values, dtype=object)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be a vector of strings, got shape {list(arr.shape)}")
    return [_as_bytes(v, what) for v in arr.tolist()]


def _object_array(items):
    """A list of bytes as a 1-D object array (a string vector for the engine)."""
    arr = np.empty(len(items), dtype=object)
    arr[:] = items
    return arr


def _pack(compiled, outs):
    keys, kinds, _, user_keys, _ = compiled
    result = {}
    it = iter(outs)
    for key, kind, user_key in zip(keys, kinds, user_keys):
        if kind == _VAR_LEN:
            result[user_key] = SparseTensor(next(it), next(it), next(it))
        else:
            result[user_key] = next(it)
    # TensorFlow's key order: the sparse features sorted, then the dense ones sorted.
    sparse = sorted(k for k, kind in zip(user_keys, kinds) if kind == _VAR_LEN)
    dense = sorted(k for k, kind in zip(user_keys, kinds) if kind != _VAR_LEN)
    return {k: result[k] for k in sparse + dense}


def parse_single_example(serialized, features, example_names=None, name=None):
    """Parses a single ``Example`` proto, as ``tf.io.parse_single_example``.

    Args:
      serialized: A scalar string: ``bytes``, a NumPy bytes scalar or a 0-d
        array (what a ``Dataset.map`` function receives for a string component).
      features: A dict mapping feature keys to ``FixedLenFeature``,
        ``VarLenFeature`` or ``FixedLenSequenceFeature`` values.
      example_names: (Optional) ignored, as in TensorFlow 2.
      name: Unused (no graph ops).

    Returns:
      A dict mapping feature keys to NumPy arrays (NumPy scalars / ``bytes``
      for shape ``[]``) and :class:`SparseTensor` values.

    Raises:
      InvalidArgumentError: the record is not an Example, a required feature
        is missing, or a feature has the wrong type or number of values.
    """
    del example_names, name
    compiled = _compile(features)
    if isinstance(serialized, _tracing.Tensor):
        return _traced_parse(compiled, serialized, batched=False)
    data = _as_bytes(serialized, "serialized")
    return _pack(compiled, _engine.parse_example(compiled[2], data, None))


def parse_example(serialized, features, example_names=None, name=None):
    """Parses ``Example`` protos into a dict of batched tensors, as ``tf.io.parse_example``.

    Args:
      serialized: A vector (list or 1-D array) of serialized ``Example``
        strings; a scalar parses as ``parse_single_example``.
      features: A dict mapping feature keys to ``FixedLenFeature``,
        ``VarLenFeature`` or ``FixedLenSequenceFeature`` values.
      example_names: A vector of names of the examples (for error messages).
      name: Unused.

    Returns:
      A dict. ``FixedLenFeature`` -> ``[batch] + shape``; ``VarLenFeature`` ->
      :class:`SparseTensor` with ``indices [N, 2]`` (example, position) and
      ``dense_shape [batch, max_len]``; ``FixedLenSequenceFeature`` ->
      ``[batch, max_rows] + shape`` padded with its ``default_value``.

    Raises:
      InvalidArgumentError: as ``parse_single_example``; messages name the
        example ("Name: <name or <unknown>>, Key: k, Index: i").
    """
    del name
    if isinstance(serialized, (bytes, str)) or (isinstance(serialized, np.ndarray)
                                                 and serialized.ndim == 0):
        return parse_single_example(serialized, features)
    compiled = _compile(features)
    if isinstance(serialized, _tracing.Tensor):
        if serialized.shape.rank == 0:
            return _traced_parse(compiled, serialized, batched=False)
        return _traced_parse(compiled, serialized, batched=True)
    data = _bytes_list(serialized, "serialized")
    names = None
    if example_names is not None:
        names = _bytes_list(example_names, "example_names")
        if len(names) == 0:
            names = None
        elif len(names) != len(data):
            raise ValueError(f"example_names has {len(names)} names for {len(data)} examples")
    return _pack(compiled, _engine.parse_example(compiled[2], _object_array(data),
                                                 None if names is None else _object_array(names)))


def _traced_parse(compiled, serialized, batched):
    """Record a ParseExample node (inside a traced map function)."""
    if serialized.dtype != _dtypes.string or serialized.shape.rank not in (0, 1):
        raise _tracing.op_error(ValueError if serialized.dtype == _dtypes.string else TypeError,
                                f"serialized must be a scalar or vector of strings, got "
                                f"{serialized!r}")
    batch = (serialized.shape.as_list()[0],) if batched else ()
    dtypes_by_code = {10: _dtypes.float32, 4: _dtypes.int64, 12: _dtypes.string}
    outputs = []
    for _, kind, code, shape, _ in compiled[4]:
        dtype = dtypes_by_code[code]
        if kind == _VAR_LEN:
            outputs += [((None, 2 if batched else 1), _dtypes.int64), ((None,), dtype),
                        ((2,) if batched else (1,), _dtypes.int64)]
        elif kind == _FIXED_LEN_SEQUENCE:
            outputs.append((batch + (None,) + tuple(shape), dtype))
        else:
            outputs.append((batch + tuple(shape), dtype))
    outs = _tracing.apply("ParseExample", [serialized], outputs, obj=compiled[2])
    return _pack(compiled, outs if isinstance(outs, list) else [outs])


# ---- building ----------------------------------------------------------------

class Feature:
    """One feature with an explicit kind, for :func:`serialize_example`.

    Exactly one of ``bytes_list``, ``float_list``, ``int64_list`` may be given
    (a list, tuple or array; may be empty). ``Feature()`` with none is an
    empty ``Feature {}``, which parsing treats as missing.
    """

    __slots__ = ("kind", "values")

    def __init__(self, bytes_list=None, float_list=None, int64_list=None):
        given = [(k, v) for k, v in (("bytes_list", bytes_list), ("float_list", float_list),
                                     ("int64_list", int64_list)) if v is not None]
        if len(given) > 1:
            raise ValueError("a Feature holds one of bytes_list, float_list, int64_list")
        self.kind, self.values = given[0] if given else (None, None)

    def __repr__(self):
        return f"Feature({self.kind}={self.values!r})" if self.kind else "Feature()"


def _encode_feature(key, value):
    """The serialized ``Feature`` of one value of :func:`serialize_example`."""
    if isinstance(value, _FeatureMessage):
        return value.SerializeToString()
    if isinstance(value, Feature):
        kind, values = value.kind, value.values
        if kind is None:
            return b""
        if isinstance(values, (bytes, str)) or np.ndim(values) == 0:
            values = [values]
        arr = np.asarray(values, dtype=object if kind == "bytes_list" else None)
        if arr.size == 0:
            arr = np.zeros(0, dtype=object if kind == "bytes_list" else
                           (np.float32 if kind == "float_list" else np.int64))
    else:
        arr = np.asarray(value, dtype=object if isinstance(value, (bytes, str)) else None)
        if arr.size == 0:
            raise ValueError(f"feature {key}: cannot infer the kind of an empty value; use "
                             f"Feature(float_list=[]) (or bytes_list / int64_list)")
        k = arr.dtype.kind
        if k in "biu":
            kind = "int64_list"
        elif k == "f":
            kind = "float_list"
        elif k in "SUO":
            kind = "bytes_list"
        else:
            raise TypeError(f"feature {key}: cannot serialize values of dtype {arr.dtype}")
    arr = arr.ravel()
    if kind == "bytes_list":
        items = []
        for v in arr.tolist():
            if isinstance(v, str):
                v = v.encode()
            if not isinstance(v, bytes):
                raise TypeError(f"feature {key}: bytes_list values must be bytes or str, got "
                                f"{type(v).__name__}")
            items.append(v)
        return _wire.encode_feature(kind, _wire.encode_bytes_list(items))
    if kind == "float_list":
        try:
            with np.errstate(over="ignore"):
                data = _wire.to_float_array(np.asarray(arr, dtype=np.float32))
        except (TypeError, ValueError) as e:
            raise TypeError(f"feature {key}: float_list values must be numbers: {e}") from None
        return _wire.encode_feature(kind, _wire.encode_float_list(data))
    if kind == "int64_list":
        out = []
        for v in arr.tolist():
            if isinstance(v, float) and not float(v).is_integer() or isinstance(v, (bytes, str)):
                raise TypeError(f"feature {key}: int64_list values must be integers, got {v!r}")
            v = int(v)
            if not -(1 << 63) <= v < (1 << 63):
                raise ValueError(f"feature {key}: value {v} is out of the int64 range")
            out.append(v)
        return _wire.encode_feature(kind, _wire.encode_int64_list(out))
    raise ValueError(f"feature {key}: unknown kind {kind!r}")


def serialize_example(features):
    """The serialized ``tf.train.Example`` for a dict of feature values.

    Each value becomes one ``Feature``: ``bool``/``int`` (and integer arrays)
    -> ``int64_list``; ``float`` (and float arrays) -> ``float_list`` (stored
    as float32); ``bytes``/``str`` (and arrays or lists of them) ->
    ``bytes_list`` (``str`` is UTF-8 encoded). Lists and arrays are
    flattened. Wrap a value in :class:`Feature` to choose the kind (needed for
    empty lists); a ``conveyor.train.Feature`` message is written as it is.
    Keys are written in the dict's order. The bytes come from the same
    encoder as ``conveyor.train.Example(...).SerializeToString()``.

    Returns:
      ``bytes`` equal in meaning to ``tf.train.Example(...).SerializeToString()``.
    """
    if not hasattr(features, "items"):
        raise TypeError(f"serialize_example takes a dict of features, got "
                        f"{type(features).__name__}")
    entries = []
    for key, value in features.items():
        if isinstance(key, str):
            kb = key.encode()
        elif isinstance(key, bytes):
            kb = key
        else:
            raise TypeError(f"feature keys must be str, got {type(key).__name__}")
        entries.append(_wire.encode_map_entry(kb, _encode_feature(key, value)))
    return _wire._ld(b"\x0a", b"".join(entries)) if entries else b""

