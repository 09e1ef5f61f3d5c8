"""``conveyor.data.experimental``: the parts of ``tf.data.experimental`` that apply."""
import numpy as np

from conveyor import _engine
from conveyor.framework import progress as _progress
from conveyor.framework import tracing as _tracing
from conveyor.data.dataset import AUTOTUNE, INFINITE_CARDINALITY, SHARD_HINT, UNKNOWN_CARDINALITY
from conveyor.data.dataset import Dataset as _Dataset
from conveyor.data.doctor import Diagnosis, diagnose
from conveyor.data.monitor import Monitor, monitor
from conveyor.data.ops import cache_op
from conveyor.data.iterator_ops import element_spec_of as _iterator_element_spec
from conveyor.data.ops.cache_op import CacheWarning
from conveyor.errors import DataLossWarning
from conveyor.data.options import AutoShardPolicy, OptimizationOptions, ThreadingOptions
from conveyor.data.stats import AutotuneChoice, IoStats, PipelineStats, StageStats

__all__ = ["prefetch_to_device", "copy_to_device", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "cardinality",
           "AutoShardPolicy", "OptimizationOptions", "ThreadingOptions", "enable_debug_mode",
           "disable_debug_mode", "SHARD_HINT", "CacheWarning", "DataLossWarning", "cache_progress", "progress",
           "diagnose", "Diagnosis", "monitor", "Monitor", "PipelineStats", "StageStats", "IoStats",
           "set_io_budget",
           "AutotuneChoice", "Counter", "get_single_element",
           "assert_cardinality", "enumerate_dataset", "ignore_errors", "parallel_interleave",
           "map_and_batch", "shuffle_and_repeat", "from_list", "RandomDataset", "scan", "take_while", "unique",
           "unbatch", "get_structure"]


def set_io_budget(bytes=None, requests=None):
    """Bound the process's remote I/O (gs://, s3://, http(s)://): ``bytes``
    that every stream together may hold read ahead of its reader (default
    256 MiB), and ``requests`` in flight at once (default 64). None keeps a
    value. The budget is the process's, shared by every pipeline; its use
    shows in ``iterator.stats().io``. See docs/remote.md."""
    for name, v in (("bytes", bytes), ("requests", requests)):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v <= 0):
            raise ValueError(f"set_io_budget: {name} must be a positive int or None, got {v!r}")
    _engine.set_io_budget(bytes or 0, requests or 0)


def prefetch_to_device(device, buffer_size=None):
    """A transformation that prefetches elements to `device` (for ``Dataset.apply``).

    ``dataset.apply(prefetch_to_device("/gpu:0"))`` (or ``"cuda:0"``) yields
    each element with its numeric leaves as :class:`conveyor.device.DeviceArray`
    objects in that GPU's memory, copied asynchronously from a page-locked
    staging ring on a stream of their own, up to `buffer_size` elements
    ahead of the training step (None or AUTOTUNE: chosen automatically).
    Take them without a copy with ``torch.from_dlpack(x)``,
    ``jax.dlpack.from_dlpack(x)`` or ``cupy.asarray(x)``; the consumer's
    stream waits for the copy, not the whole device. Strings stay on the
    host (``bytes`` / object arrays, as without it).

    As in tf.data, it must be the final transformation of the pipeline:
    applying another one after it raises ``InvalidArgumentError``
    (``with_options`` may follow). ``"/cpu:0"`` leaves the elements on the
    host (a prefetch). Where CUDA is not available, applying it raises
    ``UnavailableError`` naming what is missing (conveyor.device). See
    docs/device.md.
    """
    from conveyor.data.ops.prefetch_op import PrefetchToDeviceDataset
    size = AUTOTUNE if buffer_size is None else buffer_size
    if isinstance(size, bool) or not isinstance(size, int) or (size < 0 and size != AUTOTUNE):
        raise ValueError(f"buffer_size must be None, AUTOTUNE or >= 0, got {buffer_size!r}.")

    def _apply_fn(dataset):
        return PrefetchToDeviceDataset(dataset, device, size)
    return _apply_fn


def copy_to_device(target_device, source_device="/cpu:0"):
    """A transformation that copies elements to `target_device` (for ``Dataset.apply``).

    As ``prefetch_to_device(target_device, 0)``: each element is copied when
    ``next()`` asks for it, with no prefetching (follow it with nothing; use
    prefetch_to_device to overlap copies with the step). `source_device` must
    be the host, where conveyor's elements are made.
    """
    from conveyor import device as _device
    from conveyor.data.ops.prefetch_op import CopyToDeviceDataset
    if _device.parse_device(source_device)[0] != _device.CPU:
        raise ValueError(f"copy_to_device: source_device must be the host ('/cpu:0'), got "
                         f"{source_device!r}.")

    def _apply_fn(dataset):
        return CopyToDeviceDataset(dataset, target_device)
    return _apply_fn


def cardinality(dataset):
    """``dataset.cardinality()``, as the older ``tf.data.experimental.cardinality``."""
    return dataset.cardinality()


def enable_debug_mode():
    """Run map functions as plain Python (``tf.data.experimental.enable_debug_mode``).

    Datasets built afterwards call their map functions per element with NumPy
    arrays, one at a time on the consumer's thread, instead of compiling them:
    breakpoints and ``print`` work inside them, and conveyor ops called there
    compute at once. Outputs (random ops included) are the same as in the
    compiled program. Use it to debug, not to train: it is slow.
    """
    _tracing.set_debug_mode(True)


def disable_debug_mode():
    """Undo :func:`enable_debug_mode` for datasets built afterwards."""
    _tracing.set_debug_mode(False)


# -- choosing among datasets, grouping ---------------------------------------------

__all__ += ["choose_from_datasets", "sample_from_datasets", "group_by_window",
            "bucket_by_sequence_length"]


def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=True):
    """``Dataset.choose_from_datasets``, as ``tf.data.experimental.choose_from_datasets``."""
    return _Dataset.choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset)


def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False):
    """``Dataset.sample_from_datasets``, as ``tf.data.experimental.sample_from_datasets``."""
    return _Dataset.sample_from_datasets(datasets, weights, seed, stop_on_empty_dataset)


def group_by_window(key_func, reduce_func, window_size=None, window_size_func=None):
    """A transformation for ``Dataset.apply``: ``dataset.group_by_window(...)``."""
    def _apply_fn(dataset):
        return dataset.group_by_window(key_func, reduce_func, window_size, window_size_func)
    return _apply_fn


def bucket_by_sequence_length(element_length_func, bucket_boundaries, bucket_batch_sizes,
                              padded_shapes=None, padding_values=None,
                              pad_to_bucket_boundary=False, no_padding=False,
                              drop_remainder=False):
    """A transformation for ``Dataset.apply``: ``dataset.bucket_by_sequence_length(...)``."""
    def _apply_fn(dataset):
        return dataset.bucket_by_sequence_length(
            element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes,
            padding_values, pad_to_bucket_boundary, no_padding, drop_remainder)
    return _apply_fn


def progress(enabled=True):
    """Show progress bars (tqdm, on stderr) for the work a user waits on:
    ``Dataset.cache`` filling its cache (first passes over a second), the
    pipeline doctor's runs (``diagnose``) and indexing TFRecord files
    (``python -m conveyor.tools.index``).

    `enabled`: True shows them (tqdm must be installed: ``ImportError``
    otherwise); False never; None (the default) shows them when tqdm is
    installed and stderr is a terminal. One switch for the process, also for
    caches already built; ``diagnose(progress=...)`` and the index tool's
    ``--progress`` override it for one call. Results never depend on it.
    """
    if enabled and _progress.tqdm_class() is None:
        raise ImportError("progress(True) needs tqdm: pip install tqdm")
    _progress.set_enabled(enabled)


def cache_progress(enabled=True):
    """Show a progress bar (tqdm) while ``Dataset.cache`` fills its cache.

    The same switch as :func:`progress` (which also covers the doctor and
    index building): True shows bars (tqdm must be installed: ``ImportError``
    otherwise); False never; None (the default) shows them when tqdm is
    installed and stderr is a terminal.
    """
    if enabled and cache_op.tqdm_class() is None:
        raise ImportError("cache_progress(True) needs tqdm: pip install tqdm")
    cache_op.set_cache_progress(None if enabled is None else bool(enabled))


def Counter(start=0, step=1, dtype=None):  # noqa: N802 - tf.data's name
    """``Dataset.counter(start, step, dtype)``: an infinite dataset counting
    from `start` by `step` (int64 by default)."""
    from conveyor import dtypes as _dtypes
    return _Dataset.counter(start, step, _dtypes.int64 if dtype is None else dtype)


def get_single_element(dataset):
    """``dataset.get_single_element()``: the only element of `dataset`
    (``InvalidArgumentError`` if it has none or more than one)."""
    if not isinstance(dataset, _Dataset):
        raise TypeError(f"Invalid `dataset`. Expected a `tf.data.Dataset` object but got "
                        f"{type(dataset)}.")
    return dataset.get_single_element()


def assert_cardinality(expected_cardinality):
    """A transformation (for ``Dataset.apply``) asserting that the dataset has
    `expected_cardinality` elements (or ``INFINITE_CARDINALITY``).

    ``cardinality()`` of the result reports `expected_cardinality`, and
    transformations after it count from it (useful after ``filter`` or a file
    reader, whose cardinality is unknown). Iterating raises
    ``FailedPreconditionError`` when the input has fewer elements (at its end)
    or more (at the first extra element), as in tf.data. The check runs in
    Python per element (docs/differences.md).
    """
    from conveyor.data.ops.assert_cardinality_op import AssertCardinalityDataset
    if isinstance(expected_cardinality, np.ndarray) and expected_cardinality.ndim == 0 \
            and expected_cardinality.dtype.kind in "iu":
        expected_cardinality = expected_cardinality.item()
    if isinstance(expected_cardinality, bool) or not isinstance(
            expected_cardinality, (int, np.integer)):
        raise TypeError(f"Cannot convert {expected_cardinality!r} to EagerTensor of dtype int64")
    expected = int(expected_cardinality)
    if expected < 0 and expected != INFINITE_CARDINALITY:
        raise ValueError(f"`expected_cardinality` must be >= 0 or INFINITE_CARDINALITY (-1), "
                         f"got {expected}.")

    def _apply_fn(dataset):
        return AssertCardinalityDataset(dataset, expected)
    return _apply_fn


# -- tf.data.experimental's older spellings of Dataset methods ---------------------


def enumerate_dataset(start=0):
    """A transformation for ``Dataset.apply``: ``dataset.enumerate(start)``."""
    def _apply_fn(dataset):
        return dataset.enumerate(start)
    return _apply_fn


def ignore_errors(log_warning=False):
    """A transformation for ``Dataset.apply``: ``dataset.ignore_errors(log_warning)``."""
    def _apply_fn(dataset):
        return dataset.ignore_errors(log_warning)
    return _apply_fn


def parallel_interleave(map_func, cycle_length, block_length=1, sloppy=False,
                        buffer_output_elements=None, prefetch_input_elements=None):
    """A transformation for ``Dataset.apply``: ``dataset.interleave(map_func,
    cycle_length, block_length, num_parallel_calls=cycle_length,
    deterministic=not sloppy)``, as tf.data defines it. The buffering hints are
    accepted; the interleave's own read-ahead takes their place."""
    def _apply_fn(dataset):
        return dataset.interleave(map_func, cycle_length=cycle_length,
                                  block_length=block_length, num_parallel_calls=cycle_length,
                                  deterministic=None if sloppy is None else not sloppy)
    return _apply_fn


def map_and_batch(map_func, batch_size, num_parallel_batches=None, drop_remainder=False,
                  num_parallel_calls=None):
    """A transformation for ``Dataset.apply``: ``dataset.map(map_func,
    num_parallel_calls).batch(batch_size, drop_remainder)``, which runs as one
    fused kernel (``map_and_batch_fusion``). `num_parallel_batches` n means
    ``num_parallel_calls = n * batch_size``; giving both is a ValueError."""
    if num_parallel_batches is not None and num_parallel_calls is not None:
        raise ValueError("`map_and_batch` allows only one of `num_parallel_batches` and "
                         "`num_parallel_calls` to be set, but `num_parallel_batches` was set "
                         f"to {num_parallel_batches} and `num_parallel_calls` as set to "
                         f"{num_parallel_calls}.")
    if num_parallel_calls is None:
        num_parallel_calls = batch_size * (num_parallel_batches or 1)

    def _apply_fn(dataset):
        return dataset.map(map_func, num_parallel_calls=num_parallel_calls).batch(
            batch_size, drop_remainder=drop_remainder)
    return _apply_fn


def shuffle_and_repeat(buffer_size, count=None, seed=None):
    """A transformation for ``Dataset.apply``: ``dataset.shuffle(buffer_size,
    seed).repeat(count)``, each repetition in a new order."""
    def _apply_fn(dataset):
        return dataset.shuffle(buffer_size, seed=seed, reshuffle_each_iteration=True).repeat(count)
    return _apply_fn


def from_list(elements, name=None):
    """A dataset of the elements of the list `elements`, in order.

    Every element must have the same structure, and each component the same
    dtype and shape in every element (they are stacked, as
    ``from_tensor_slices`` of the stacked components). Strings may differ in
    length. ``ValueError`` for an empty list, as in tf.data.
    """
    from conveyor import nest
    from conveyor.framework.convert import to_array
    if not isinstance(elements, list):
        elements = list(elements)
    if not elements:
        raise ValueError("Invalid `elements`. `elements` should not be empty.")
    first = elements[0]
    flat = [nest.flatten(e) for e in elements]
    for e in elements[1:]:
        nest.assert_same_structure(first, e)
    columns = []
    for i in range(len(flat[0])):
        arrays = [to_array(f[i]) for f in flat]
        shape, dtype = arrays[0].shape, arrays[0].dtype
        for a in arrays[1:]:
            if a.shape != shape or (a.dtype != dtype and not (a.dtype == object == dtype)):
                raise TypeError(f"Invalid `elements`. All elements must have the same type "
                                f"spec: component {i} is {dtype}{list(shape)} in the first "
                                f"element and {a.dtype}{list(a.shape)} in another.")
        columns.append(np.stack(arrays))
    return _Dataset.from_tensor_slices(nest.pack_sequence_as(first, columns), name=name)


def RandomDataset(seed=None, name=None):  # noqa: N802 - tf.data's name
    """``Dataset.random(seed)``: an infinite dataset of pseudorandom int64 values."""
    return _Dataset.random(seed=seed, name=name)


def scan(initial_state, scan_func):
    """A transformation for ``Dataset.apply``: ``dataset.scan(initial_state, scan_func)``."""
    def _apply_fn(dataset):
        return dataset.scan(initial_state, scan_func)
    return _apply_fn


def take_while(predicate):
    """A transformation for ``Dataset.apply``: ``dataset.take_while(predicate)``."""
    def _apply_fn(dataset):
        return dataset.take_while(predicate)
    return _apply_fn


def unique():
    """A transformation for ``Dataset.apply``: ``dataset.unique()``."""
    def _apply_fn(dataset):
        return dataset.unique()
    return _apply_fn


def unbatch():
    """A transformation for ``Dataset.apply``: ``dataset.unbatch()``."""
    def _apply_fn(dataset):
        return dataset.unbatch()
    return _apply_fn


def get_structure(dataset_or_iterator):
    """The element spec of a dataset or iterator (``tf.data.experimental.get_structure``):
    a dataset's ``element_spec``; for ``iter(dataset)``, that dataset's; an
    object with an ``element_spec`` (a TF1-style ``compat.v1`` iterator)
    gives its own. Anything else is a TypeError."""
    spec = _iterator_element_spec(dataset_or_iterator)
    if spec is not None:
        return spec
    try:
        return dataset_or_iterator.element_spec
    except AttributeError:
        raise TypeError(f"Invalid `dataset_or_iterator`. `dataset_or_iterator` must be a "
                        f"`tf.data.Dataset` or tf.data.Iterator object, but got "
                        f"{type(dataset_or_iterator)}.") from None


# Lookup tables from datasets (conveyor/ops/lookup_ops.py)
from conveyor.ops.lookup_ops import DatasetInitializer  # noqa: E402

__all__ += ["DatasetInitializer", "table_from_dataset", "index_table_from_dataset"]


def table_from_dataset(dataset=None, num_oov_buckets=0, vocab_size=None, default_value=None,
                       hasher_spec="fasthash", key_dtype=None, name=None):
    """A lookup table from a dataset of ``(key, value)`` scalar pairs
    (``tf.data.experimental.table_from_dataset``). A key not in the table
    gives `default_value` (-1 when values are numbers), or with
    `num_oov_buckets` > 0 a bucket in ``[vocabulary size, vocabulary size +
    num_oov_buckets)`` from the key's hash. `vocab_size`: the number of pairs
    to take; fewer raise ``FailedPreconditionError``. `hasher_spec`:
    ``"fasthash"`` (TensorFlow's ``FastHashSpec``), ``"legacy"`` or
    ``("stronghash", key)``."""
    from conveyor import dtypes
    from conveyor.ops.lookup_ops import StaticHashTable, StaticVocabularyTable
    key_dtype = dtypes.string if key_dtype is None else dtypes.as_dtype(key_dtype)
    spec = dataset.element_spec
    if default_value is None:
        default_value = -1
        if isinstance(spec, tuple) and len(spec) == 2 and hasattr(spec[1], "dtype") and not (
                spec[1].dtype.is_integer or spec[1].dtype.is_floating):
            raise ValueError(f"`default_value` must be specified when creating a table from a "
                             f"dataset that produces values of type {spec[1].dtype!r}.")
    if num_oov_buckets < 0:
        raise ValueError(f"`num_oov_buckets` must be greater than or equal to 0, got "
                         f"{num_oov_buckets}.")
    if vocab_size is not None and vocab_size < 1:
        raise ValueError(f"`vocab_size` must be greater than 0, got {vocab_size}.")
    if not key_dtype.is_integer and key_dtype != dtypes.string:
        raise TypeError(f"`key_dtype` must be either an integer or string type, but got "
                        f"{key_dtype!r}")
    hasher = getattr(hasher_spec, "hasher", hasher_spec)
    if hasher == "stronghash":
        hasher = ("stronghash", hasher_spec.key)
    if not (hasher in ("fasthash", "legacy") or
            (isinstance(hasher, tuple) and hasher[0] == "stronghash")):
        raise ValueError(f"Found unknown hasher {hasher_spec!r} in `hasher_spec`")
    if vocab_size is not None:
        dataset = dataset.take(vocab_size).apply(assert_cardinality(vocab_size))
    initializer = DatasetInitializer(dataset)
    if num_oov_buckets:
        return StaticVocabularyTable(initializer, num_oov_buckets, lookup_key_dtype=key_dtype,
                                     name=name, hasher=hasher)
    return StaticHashTable(initializer, default_value, name=name)


def index_table_from_dataset(dataset=None, num_oov_buckets=0, vocab_size=None,
                             default_value=-1, hasher_spec="fasthash", key_dtype=None,
                             name=None):
    """A table from each key of `dataset` (a dataset of scalars) to its
    position, int64 (``tf.data.experimental.index_table_from_dataset``); the
    rest as :func:`table_from_dataset`."""
    return table_from_dataset(dataset.enumerate().map(lambda i, k: (k, i)), num_oov_buckets,
                              vocab_size, default_value, hasher_spec, key_dtype, name)


# CSV files (conveyor/data/csv_readers.py)
from conveyor.data.csv_readers import CsvDataset, make_csv_dataset  # noqa: E402

__all__ += ["CsvDataset", "make_csv_dataset"]


# Saving, writing and reading files (conveyor/data/save_load.py)
from conveyor.data.save_load import (Reducer, TFRecordWriter, group_by_reducer,  # noqa: E402
                                  make_batched_features_dataset)


def save(dataset, path, compression=None, shard_func=None, checkpoint_args=None):
    """``dataset.save(path, ...)``."""
    return dataset.save(path, compression, shard_func, checkpoint_args)


def load(path, element_spec=None, compression=None, reader_func=None):
    """``Dataset.load(path, ...)``."""
    return _Dataset.load(path, element_spec, compression, reader_func)


__all__ += ["Reducer", "TFRecordWriter", "group_by_reducer", "make_batched_features_dataset",
            "save", "load"]


def rejection_resample(class_func, target_dist, initial_dist=None, seed=None):
    """A transformation for ``Dataset.apply``: ``dataset.rejection_resample(...)``."""
    def _apply_fn(dataset):
        return dataset.rejection_resample(class_func, target_dist, initial_dist, seed)
    return _apply_fn


__all__ += ["rejection_resample"]


def dense_to_sparse_batch(batch_size, row_shape):
    """A transformation for ``Dataset.apply``: ``dataset.sparse_batch(batch_size, row_shape)``."""
    def _apply_fn(dataset):
        return dataset.sparse_batch(batch_size, row_shape)
    return _apply_fn


__all__ += ["dense_to_sparse_batch"]


def snapshot(path, compression="AUTO", reader_func=None, shard_func=None):
    """A transformation for ``Dataset.apply``: ``dataset.snapshot(path, ...)``."""
    def _apply_fn(dataset):
        return dataset.snapshot(path, compression, reader_func, shard_func)
    return _apply_fn


__all__ += ["snapshot"]


def dense_to_ragged_batch(batch_size, drop_remainder=False, row_splits_dtype=None):
    """A transformation for ``Dataset.apply``: ``dataset.ragged_batch(batch_size, ...)``."""
    def _apply_fn(dataset):
        return dataset.ragged_batch(batch_size, drop_remainder, row_splits_dtype)
    return _apply_fn


__all__ += ["dense_to_ragged_batch"]
