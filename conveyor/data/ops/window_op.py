"""Datasets of datasets: ``Dataset.window`` (WindowDataset) and
``group_by_window`` (GroupByWindowDataset; ``bucket_by_sequence_length`` is
built on it in conveyor/data/dataset.py).

The engine gathers each window's elements and packs them into tensors
(ragged components as values + shapes, kernels/common/packed_rows.h); ``pack_element`` in
dataset_base.py turns them into ``VariantDataset`` objects, for every dataset
downstream of a window."""
import numpy as np

from conveyor import _engine
from conveyor import dtypes as _dtypes
from conveyor import nest
from conveyor.data.ops.dataset_base import (INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Cardinality,
                                            Dataset, DatasetSpec, VariantDataset, ragged_mask)
from conveyor.data.ops.interleave_op import InterleaveDataset
from conveyor.data.ops.structured_function import calling_convention
from conveyor.tensor_spec import TensorSpec

__all__ = ["WindowDataset", "GroupByWindowDataset"]


def _check_windowable(spec, what):
    for s in nest.flatten(spec):
        if not isinstance(s, TensorSpec):
            raise TypeError(f"{what} of a dataset whose elements contain {s!r} is not supported: "
                            "its components must be tensors.")


def _empty_window(spec):
    """A window dataset with no elements (to learn what a reduce function builds)."""
    packed = []
    for s in nest.flatten(spec):
        dtype = s.dtype.as_numpy_dtype if s.dtype != _dtypes.string else object
        if s.shape.is_fully_defined():
            packed.append(np.zeros([0] + s.shape.as_list(), dtype=dtype))
        else:
            packed += [np.zeros([0], dtype=dtype), np.zeros([0, 1 + (s.shape.rank or 0)], np.int64)]
    return VariantDataset(spec, packed, ragged_mask(spec))


class WindowDataset(Dataset):
    def __init__(self, input_dataset, size, shift, stride, drop_remainder):
        super().__init__([input_dataset])
        self._args = {"size": size, "shift": shift, "stride": stride,
                      "drop_remainder": drop_remainder}

    def _build(self, ctx, engine_inputs):
        spec = self._inputs[0].element_spec
        _check_windowable(spec, "window()")
        return _engine.window(engine_inputs[0], **self._args, ragged=ragged_mask(spec))

    def _windows(self, spec):
        _check_windowable(spec, "window()")
        return nest.map_structure(DatasetSpec, spec)

    def _derive_spec(self):
        return self._windows(self._inputs[0].element_spec)

    def _known_spec(self):
        spec = self._inputs[0]._known_spec()
        return None if spec is None else self._windows(spec)


def _int64_scalar(value, what):
    """A key or window size returned by a user function, as tf.data converts it
    (``convert_to_tensor(value, dtype=int64)``): Python and NumPy integers."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer, np.ndarray)):
        raise TypeError(f"Expected int64, but got {value!r} of type '{type(value).__name__}' "
                        f"from `{what}`.")
    arr = np.asarray(value)
    if arr.ndim != 0 or arr.dtype.kind not in "iu":
        raise ValueError(f"Invalid `{what}`. `{what}` must return a single `tf.int64` scalar "
                         f"tensor but returned {value!r}.")
    return [np.asarray(int(arr), dtype=np.int64)]


class _GroupWindowsDataset(Dataset):
    """group_by_window up to the reduce function: elements (key, window)."""

    def __init__(self, input_dataset, key_func, window_size, window_size_func):
        super().__init__([input_dataset])
        self._key_func = key_func
        self._window_size = window_size
        self._window_size_func = window_size_func

    def _build(self, ctx, engine_inputs):
        spec = self._inputs[0].element_spec
        _check_windowable(spec, "group_by_window()")
        size_func = None
        if self._window_size_func is not None:
            size_func = self._window_size_func
        return _engine.group_by_window(
            engine_inputs[0], key_fn=calling_convention(self._key_func, self._inputs[0]),
            key_convert=lambda v: _int64_scalar(v, "key_func"), size_fn=size_func,
            size_convert=lambda v: _int64_scalar(v, "window_size_func"),
            window_size=0 if self._window_size is None else self._window_size,
            ragged=ragged_mask(spec), name="Dataset.group_by_window")

    def _derive_spec(self):
        return (TensorSpec([], _dtypes.int64), DatasetSpec(self._inputs[0].element_spec))

    def _known_spec(self):
        spec = self._inputs[0]._known_spec()
        return None if spec is None else (TensorSpec([], _dtypes.int64), DatasetSpec(spec))


class GroupByWindowDataset(InterleaveDataset):
    """flat_map of reduce_func over the (key, window) pairs."""

    def __init__(self, input_dataset, key_func, reduce_func, window_size, window_size_func):
        grouped = _GroupWindowsDataset(input_dataset, key_func, window_size, window_size_func)

        def reduce(key, window):
            result = reduce_func(key, window)
            if not isinstance(result, Dataset):
                raise TypeError("Invalid `reduce_func`. `reduce_func` must return a single "
                                "`tf.data.Dataset` object but its return type is "
                                f"{type(result).__name__}.")
            return result

        super().__init__(grouped, reduce, 1, 1, 0, None)
        self._reduce = reduce
        self._probe_spec = None

    def cardinality(self):
        n = self._inputs[0]._engine(self._context()).cardinality()
        return Cardinality(INFINITE_CARDINALITY if n == INFINITE_CARDINALITY
                            else UNKNOWN_CARDINALITY)

    # The datasets reduce_func returns may depend on the key (a batch size or a
    # padded length per bucket), so only structure, dtypes and ranks are taken
    # from one of them; dimensions are unknown, as for a Python map.

    def _known_spec(self):
        spec = super()._known_spec() or self._probe_spec
        return None if spec is None else _unknown_dims(spec)

    def _derive_spec(self):
        ran = self._first_inner is not None or self._first_run is not None
        if not ran and self._probe_spec is None:
            # What reduce_func builds from an empty window (as tf.data traces it
            # once); if that fails, fall back to running the first window.
            try:
                inner = self._inputs[0].element_spec[1].element_spec
                self._probe_spec = self._reduce(np.int64(0), _empty_window(inner)).element_spec
            except Exception:  # noqa: BLE001 - any failure: learn it from real data
                self._probe_spec = None
        if self._probe_spec is not None and not ran:
            return _unknown_dims(self._probe_spec)
        return _unknown_dims(super()._derive_spec())


def _unknown_dims(spec):
    return nest.map_structure(
        lambda s: TensorSpec(None if s.shape.rank is None else [None] * s.shape.rank, s.dtype)
        if isinstance(s, TensorSpec) else s, spec)
