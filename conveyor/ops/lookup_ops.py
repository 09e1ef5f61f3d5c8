"""``tf.lookup.StaticHashTable`` and ``KeyValueTensorInitializer``.

Eagerly a lookup is a Python dict per key. Inside a traced map function it
is recorded with conveyor's element ops: every key is compared with every
table key (``equal`` with broadcasting, strings included), the first match's
index (``argmax``) picks the value from the values with the default
appended (``gather``). That is O(keys x table) per element: fine for the
small vocabularies input pipelines map labels with.

``StaticVocabularyTable`` gives keys missing from its table a bucket past the
vocabulary: FarmHash Fingerprint64 of the key (as text for integer keys) modulo
`num_oov_buckets`, plus the vocabulary size, as TensorFlow does.
``DatasetInitializer`` reads the (key, value) pairs of a dataset when the
table is made (TensorFlow 2 also initializes tables at creation)."""
import numpy as np

from conveyor import dtypes as _dtypes
from conveyor.framework.eager import as_eager
from conveyor.framework.tracing import Tensor, convert, dtype_of, op_error, static_shape

__all__ = ["KeyValueTensorInitializer", "DatasetInitializer", "TextFileIndex",
           "TextFileInitializer", "StaticHashTable", "StaticVocabularyTable"]


class KeyValueTensorInitializer:
    """The keys and values of a table (``tf.lookup.KeyValueTensorInitializer``),
    converted with TensorFlow's rules (Python ints are int32)."""

    def __init__(self, keys, values, key_dtype=None, value_dtype=None, name=None):
        self._keys = convert(keys, key_dtype, name="keys")
        self._values = convert(values, value_dtype, name="values")
        for v, what in ((self._keys, "keys"), (self._values, "values")):
            if isinstance(v, Tensor):
                raise op_error(TypeError, f"KeyValueTensorInitializer: `{what}` must be "
                                          f"values, not a traced tensor")
        if self._keys.shape != self._values.shape or self._keys.ndim != 1:
            raise ValueError(f"keys and values must be vectors of the same size, got "
                             f"{list(self._keys.shape)} and {list(self._values.shape)}")
        self.key_dtype = _dtypes.as_dtype(self._keys.dtype)
        self.value_dtype = _dtypes.as_dtype(self._values.dtype)


class DatasetInitializer(KeyValueTensorInitializer):
    """The keys and values of a table from a dataset of ``(key, value)`` pairs
    of scalars (``tf.data.experimental.DatasetInitializer``). The dataset is
    read once, here: a later change to its files does not change the table."""

    def __init__(self, dataset):
        from conveyor.tensor_spec import TensorSpec
        spec = dataset.element_spec
        base = ("Datasets used to initialize lookup tables must produce elements in the form "
                "(key, value), where the keys and values are scalar tensors. ")
        if not isinstance(spec, (tuple, list, dict)):  # TensorFlow: a TypeError from len()
            raise TypeError(base + f"However, the given dataset produces one component "
                                   f"instead of two (key, value) components: {spec}.")
        if not isinstance(spec, tuple) or len(spec) != 2:
            count = len(spec)
            raise ValueError(base + f"However, the given dataset produces {count} components "
                                    f"instead of two (key, value) components. Full dataset "
                                    f"element spec: {spec}.")
        for s, what in zip(spec, ("key", "value")):
            if not isinstance(s, TensorSpec):
                raise ValueError(base + f"However, the given dataset produces non-Tensor "
                                        f"{what}s of type {type(s)}.")
            if s.shape.rank not in (None, 0):
                raise ValueError(base + f"However, the given dataset produces non-scalar "
                                        f"{what} Tensors of rank {s.shape.rank}.")
        self.dataset = dataset
        keys, values = [], []
        for k, v in dataset.as_numpy_iterator():
            keys.append(k)
            values.append(v)
        self._keys = np.array(keys, dtype=spec[0].dtype.as_numpy_dtype)
        self._values = np.array(values, dtype=spec[1].dtype.as_numpy_dtype)
        self.key_dtype, self.value_dtype = spec[0].dtype, spec[1].dtype


class TextFileIndex:
    """Which part of a line is a key or value (``tf.lookup.TextFileIndex``):
    the whole line, its number, or a column index (0, 1, ...)."""
    WHOLE_LINE = -2
    LINE_NUMBER = -1


class TextFileInitializer(KeyValueTensorInitializer):
    """The keys and values of a table from a text file, one entry per line
    (``tf.lookup.TextFileInitializer``): each of key and value is the whole
    line, its number, or a column of the line split on `delimiter`,
    converted to its dtype. Read once, here, as TensorFlow 2 initializes a
    table when it is made; lines end at a newline (a carriage return
    before it is dropped); an empty line, a missing column or fewer than `vocab_size`
    lines is an ``InvalidArgumentError``."""

    def __init__(self, filename, key_dtype, key_index, value_dtype, value_index,
                 vocab_size=None, delimiter="\t", name=None, value_index_offset=0):
        from conveyor import errors
        from conveyor.io import gfile
        self.key_dtype, self.value_dtype = _dtypes.as_dtype(key_dtype), _dtypes.as_dtype(value_dtype)
        for index, dtype, what in ((key_index, self.key_dtype, "key"),
                                   (value_index, self.value_dtype, "value")):
            if index < TextFileIndex.WHOLE_LINE:
                raise ValueError(f"Invalid {what} index {index}.")
            if index == TextFileIndex.LINE_NUMBER and dtype != _dtypes.int64:
                raise ValueError(f"LINE_NUMBER {what} requires int64 dtype, got {dtype.name}")
            if index == TextFileIndex.WHOLE_LINE and dtype not in (_dtypes.string, _dtypes.int64):
                raise ValueError(f"WHOLE_LINE {what} requires string or int64 dtype, got "
                                 f"{dtype.name}")
        if vocab_size is not None and vocab_size <= 0:
            raise ValueError(f"Invalid vocab_size {vocab_size}.")
        path = filename.decode() if isinstance(filename, bytes) else str(filename)
        with gfile.GFile(path, "rb") as f:
            lines = f.read().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        if vocab_size is not None:
            if len(lines) < vocab_size:
                raise errors.InvalidArgumentError(f"Invalid vocab_size in {path}: expected "
                                                  f"{vocab_size} but got {len(lines)}")
            lines = lines[:vocab_size]
        sep = delimiter.encode() if isinstance(delimiter, str) else delimiter
        keys, values = [], []
        for n, line in enumerate(lines):
            line = line[:-1] if line.endswith(b"\r") else line
            if not line:
                raise errors.InvalidArgumentError(f"Invalid content in {path}: empty line found "
                                                  f"at position {n}.")
            cols = line.split(sep)
            for index, dtype, out in ((key_index, self.key_dtype, keys),
                                      (value_index, self.value_dtype, values)):
                if index >= len(cols):
                    raise errors.InvalidArgumentError(
                        f"Invalid number of columns in {path} line {n} ({line.decode(errors='replace')}) : "
                        f"expected at least {index + 1} got {len(cols)}")
                out.append(_text_field(line, cols, n + value_index_offset * (out is values),
                                       index, dtype, path))
        self._keys = np.array(keys, dtype=object if self.key_dtype == _dtypes.string
                              else self.key_dtype.as_numpy_dtype).reshape(-1)
        self._values = np.array(values, dtype=object if self.value_dtype == _dtypes.string
                                else self.value_dtype.as_numpy_dtype).reshape(-1)


def _text_field(line, cols, number, index, dtype, path):
    """One key or value of a TextFileInitializer line."""
    from conveyor import errors
    if index == TextFileIndex.LINE_NUMBER:
        return number
    text = line if index == TextFileIndex.WHOLE_LINE else cols[index]
    if dtype == _dtypes.string:
        return text
    try:
        return int(text) if dtype.is_integer else float(text)
    except ValueError:
        raise errors.InvalidArgumentError(f"Field {text.decode(errors='replace')} in {path} is "
                                          f"not a valid {dtype.name}") from None


class StaticHashTable:
    """An immutable key -> value table (``tf.lookup.StaticHashTable``):
    ``lookup(keys)`` gives each key's value, or `default_value`."""

    def __init__(self, initializer, default_value, name=None, experimental_is_anonymous=False):
        self._init = initializer
        self.key_dtype, self.value_dtype = initializer.key_dtype, initializer.value_dtype
        default = convert(default_value, self.value_dtype, name="default_value")
        if np.ndim(default) != 0:
            raise ValueError("conveyor's StaticHashTable needs a scalar default_value")
        self.default_value = as_eager(default)
        self._dict = {}
        for k, v in zip(initializer._keys.tolist(), initializer._values.tolist()):
            self._dict.setdefault(k, v)  # the first value of a repeated key
        order = {}
        for i, k in enumerate(initializer._keys.tolist()):
            order.setdefault(k, i)
        # traced lookups: unique keys, and their values with the default last
        idx = sorted(order.values())
        self._keys = initializer._keys[idx]
        self._values = np.concatenate([initializer._values[idx],
                                       np.asarray(default).reshape(1).astype(
                                           initializer._values.dtype)])
        self.name = name

    def size(self, name=None):
        return as_eager(np.int64(len(self._dict)))

    def export(self, name=None):
        return as_eager(self._keys), as_eager(self._values[:-1])

    def __getitem__(self, keys):
        return self.lookup(keys)

    def lookup(self, keys, name=None):
        x = convert(keys, name="keys")
        if dtype_of(x) != self.key_dtype:
            raise TypeError(f"Signature mismatch. Keys must be dtype {self.key_dtype!r}, got "
                            f"{dtype_of(x)!r}.")
        if isinstance(x, Tensor):
            return self._traced(x)
        flat = x.reshape(-1).tolist()
        default = self.default_value.numpy()
        out = np.array([self._dict.get(k, default) for k in flat],
                       dtype=self.value_dtype.as_numpy_dtype).reshape(x.shape)
        return as_eager(out)

    def _traced(self, x):
        from conveyor.ops.array_ops import expand_dims, gather
        from conveyor.ops.math_ops import argmax, cast, equal, logical_not, reduce_any
        if static_shape(x) is None:
            raise x._trace.fail("a lookup of keys of unknown rank is not supported natively")
        if self.key_dtype == _dtypes.string and len(self._keys) == 0:
            return gather(self._values, cast(expand_dims(x, -1)[..., 0:0], _dtypes.int64))
        hit = equal(expand_dims(x, -1), self._keys)
        first = argmax(cast(hit, _dtypes.int32), axis=-1)
        missing = cast(logical_not(reduce_any(hit, axis=-1)), _dtypes.int64)
        return gather(self._values, first + missing * len(self._keys))


class StaticVocabularyTable:
    """A key -> id table whose missing keys go to `num_oov_buckets` buckets
    after the vocabulary (``tf.lookup.StaticVocabularyTable``): a key in the
    table gives its value (int64), another key ``size_of_table +
    Fingerprint64(key) % num_oov_buckets`` (integer keys hashed as their
    decimal text). `initializer` None: buckets only.

    `hasher`: ``"fasthash"`` (this table's, and TensorFlow's default),
    ``"legacy"`` or ``("stronghash", key)`` for the tables that
    ``tf.data.experimental.table_from_dataset`` makes with a `hasher_spec`."""

    def __init__(self, initializer, num_oov_buckets, lookup_key_dtype=None, name=None,
                 experimental_is_anonymous=False, hasher="fasthash"):
        if num_oov_buckets <= 0:
            raise ValueError("`num_oov_buckets` must be > 0; use StaticHashTable.")
        if initializer is not None:
            if lookup_key_dtype is None:
                lookup_key_dtype = initializer.key_dtype
            lookup_key_dtype = _dtypes.as_dtype(lookup_key_dtype)
            if initializer.key_dtype not in (_dtypes.int64, _dtypes.string):
                raise TypeError(f"Invalid `key_dtype`, expected one of "
                                f"({_dtypes.int64!r}, {_dtypes.string!r}), but got "
                                f"{initializer.key_dtype!r}.")
            if initializer.key_dtype.is_integer != lookup_key_dtype.is_integer:
                raise TypeError(f"Invalid `key_dtype`, expected "
                                f"{'integer' if lookup_key_dtype.is_integer else 'non-integer'}"
                                f" but got {initializer.key_dtype!r}.")
            if initializer.value_dtype != _dtypes.int64:
                raise TypeError(f"Invalid `value_dtype`, expected {_dtypes.int64!r} but got "
                                f"{initializer.value_dtype!r}.")
            self._table = StaticHashTable(initializer, default_value=-1)
        else:
            lookup_key_dtype = _dtypes.string
            self._table = None
        lookup_key_dtype = _dtypes.as_dtype(lookup_key_dtype)
        if not lookup_key_dtype.is_integer and lookup_key_dtype != _dtypes.string:
            raise TypeError(f"Invalid `key_dtype`, expected integer or string, got "
                            f"{lookup_key_dtype!r}")
        self.key_dtype, self.value_dtype = lookup_key_dtype, _dtypes.int64
        self._num_oov_buckets = int(num_oov_buckets)
        self._hasher = hasher
        self.name = name

    def _vocabulary_size(self):
        return 0 if self._table is None else len(self._table._dict)

    def size(self, name=None):
        return as_eager(np.int64(self._vocabulary_size() + self._num_oov_buckets))

    def __getitem__(self, keys):
        return self.lookup(keys)

    def lookup(self, keys, name=None):
        from conveyor import strings
        from conveyor.ops.array_ops import where
        from conveyor.ops.math_ops import cast, not_equal
        x = convert(keys, name="keys")
        if dtype_of(x) != self.key_dtype:
            raise TypeError(f"Dtype of argument `keys` must be {self.key_dtype!r}, received: "
                            f"{dtype_of(x)!r}")
        if self._table is not None and self._table.key_dtype == _dtypes.int64:
            x = cast(x, _dtypes.int64)
        text = x if self.key_dtype == _dtypes.string else strings.as_string(x)
        if self._hasher == "fasthash":
            buckets = strings.to_hash_bucket_fast(text, self._num_oov_buckets)
        elif self._hasher == "legacy":
            buckets = strings.to_hash_bucket(text, self._num_oov_buckets)
        else:
            buckets = strings.to_hash_bucket_strong(text, self._num_oov_buckets, self._hasher[1])
        if self._table is None:
            return buckets
        ids = self._table.lookup(x)
        return where(not_equal(ids, -1), ids, buckets + self._vocabulary_size())
