"""``tf.lookup.StaticHashTable`` and ``KeyValueTensorInitializer``.

Eagerly a lookup is a Python dict per key. Inside a traced map function it
is recorded with conveyor's element ops: every key is compared with every
table key (``equal`` with broadcasting, strings included), the first match's
index (``argmax``) picks the value from the values with the default
appended (``gather``). That is O(keys x table) per element: fine for the
small vocabularies input pipelines map labels with."""
import numpy as np

from conveyor import dtypes as _dtypes
from conveyor.framework.eager import as_eager
from conveyor.framework.tracing import Tensor, convert, dtype_of, op_error, static_shape

__all__ = ["KeyValueTensorInitializer", "StaticHashTable"]


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
