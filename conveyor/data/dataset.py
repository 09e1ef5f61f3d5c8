"""``Dataset``: tf.data's chainable pipeline API over conveyor's C engine.

A ``Dataset`` is an immutable description. Iterating it builds (once per set
of options, then cached) the engine's datasets and opens an engine iterator,
which yields NumPy arrays. The Python layer only checks arguments and keeps
the element structure; all per-element work happens in C.

Where things are:

* conveyor/data/ops/dataset_base.py: the ``Dataset`` class itself (engine
  build, options, iteration, cardinality, repr) and the element structure
  (``DatasetSpec``, packing of windows);
* this module: tf.data's sources and transformations. Each method checks
  its arguments as tf.data does and constructs the op class that implements
  it, from conveyor/data/ops/<name>_op.py (``map`` -> map_op.MapDataset,
  ``batch`` -> batch_op.BatchDataset, ...), named as TensorFlow names it.
  The methods are written in ``_DatasetMethods`` below and added to
  ``Dataset`` when this module is imported (conveyor.data imports it): the op
  classes subclass ``Dataset`` and import only dataset_base.py, and this
  module imports them, so no import goes in a circle.
"""
import os
import warnings

import numpy as np

from conveyor.framework import random_seed as _seed
from conveyor.io import gfile as _gfile
from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor.ops import math_ops as _math
from conveyor import nest
from conveyor.framework.eager import as_eager
from conveyor.framework.convert import to_array
from conveyor.data.ops.batch_op import (BatchDataset, PaddedBatchDataset, ParallelBatchDataset,
                                        RebatchDataset, UnbatchDataset)
from conveyor.data.ops.cache_op import CacheDataset, CacheWarning
from conveyor.data.ops.dataset_base import (AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY,
                                            Dataset, DatasetSpec)
from conveyor.data.ops.directed_interleave_op import DirectedInterleaveDataset, SampleChoiceDataset
from conveyor.data.ops.filter_op import FilterDataset
from conveyor.data.ops.from_generator_op import GeneratorDataset
from conveyor.data.ops.from_tensors_op import TensorDataset, TensorSliceDataset
from conveyor.data.ops.ignore_errors_op import IgnoreErrorsDataset
from conveyor.data.ops.interleave_op import (FlatMapDataset, InterleaveDataset,
                                             ParallelInterleaveDataset)
from conveyor.data.ops.map_op import MapDataset, ParallelMapDataset
from conveyor.data.ops.options_op import OptionsDataset
from conveyor.data.ops.prefetch_op import PrefetchDataset
from conveyor.data.ops.random_op import RandomDataset
from conveyor.data.ops.range_op import RangeDataset
from conveyor.data.ops.scan_op import ScanDataset, TakeWhileDataset, UniqueDataset
from conveyor.data.ops.shard_op import ShardDataset
from conveyor.data.ops.shuffle_op import ShuffleDataset
from conveyor.data.ops.take_skip_repeat_op import RepeatDataset, SkipDataset, TakeDataset
from conveyor.data.ops.window_op import GroupByWindowDataset, WindowDataset
from conveyor.data.ops.zip_concatenate_op import ConcatenateDataset, ZipDataset
from conveyor.data.options import Options
from conveyor.tensor_spec import TensorShape, TensorSpec

__all__ = ["Dataset", "DatasetSpec", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY",
           "CacheWarning"]

# NumPy before 2.0 promotes 0-d arrays with Python scalars by value (no NEP 50).
_LEGACY_PROMOTION = int(np.__version__.split(".")[0]) < 2

SHARD_HINT = -1  # tf.data.experimental.SHARD_HINT: accepted by shard(), never iterable here
_INT64_MAX = 2 ** 63 - 1
_INT32_MIN, _INT32_MAX = -2 ** 31, 2 ** 31 - 1


# -- argument checks ------------------------------------------------------------


def _check_count(value, what, allow_none=False):
    if value is None and allow_none:
        return -1
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"`{what}` must be an int, got {value!r} ({type(value).__name__}).")
    return int(value)


def _int64_arg(value, what):
    """An int64 argument, converted as ``convert_to_tensor(value, tf.int64)`` does
    (ints, NumPy integers, bools and 0-d integer arrays; floats and strings raise
    ``TypeError``)."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iub":
        value = value.item()
    if not isinstance(value, (int, np.integer, np.bool_)):
        raise TypeError(f"Cannot convert {value!r} to an int64 for `{what}`.")
    value = int(value)
    if not -2 ** 63 <= value < 2 ** 63:
        raise ValueError(f"`{what}` = {value} does not fit in int64.")
    return value


def _check_parallelism(value):
    if value is None:
        return 0
    value = _check_count(value, "num_parallel_calls")
    if value != AUTOTUNE and value <= 0:
        raise _errors.InvalidArgumentError(
            f"num_parallel_calls must be greater than zero or AUTOTUNE (-1), got {value}.")
    return value


def _warn_deterministic_unused():
    warnings.warn("The `deterministic` argument has no effect unless the "
                  "`num_parallel_calls` argument is specified.", stacklevel=3)


# -- the methods ------------------------------------------------------------------


class _DatasetMethods:
    """tf.data's sources and transformations, added to ``Dataset`` below."""

    # -- sources ------------------------------------------------------------

    @staticmethod
    def from_tensor_slices(tensors, name=None):
        """Elements are the slices of `tensors` along their first dimension.

        `tensors` is a tensor-like value or a structure (tuple, dict,
        namedtuple) of them; Python lists are tensors, not structure. The
        values are copied into the engine once, when the dataset is created.
        """
        return TensorSliceDataset(tensors)

    @staticmethod
    def from_tensors(tensors, name=None):
        """A dataset with exactly one element, `tensors`."""
        return TensorDataset(tensors)

    @staticmethod
    def range(*args, output_type=_dtypes.int64, name=None):
        """Like Python's ``range``: ``range(stop)``, ``range(start, stop[, step])``; int64 by default."""
        return RangeDataset(args, output_type)

    @staticmethod
    def counter(start=0, step=1, dtype=_dtypes.int64, name=None):
        """An infinite dataset of `start`, `start + step`, `start + 2 * step`, ...

        `start` and `step` are int64 scalars (Python or NumPy integers);
        `step` may be negative (counting down) or zero (`start` forever).
        Each value is cast to `dtype` (``tf.int64`` by default). The
        cardinality is ``INFINITE_CARDINALITY``.

        conveyor counts with ``Dataset.range`` up to the int64 maximum (the
        range the engine reports as infinite; a negative step counts up the
        negated values and negates them), so the count stops after about
        ``2**63 / abs(step)`` elements, where tf.data's int64 state would wrap.
        """
        start = _int64_arg(start, "start")
        step = _int64_arg(step, "step")
        dtype = _dtypes.as_dtype(dtype)
        if step == 0:
            return TensorDataset(np.asarray(start, np.int64)).repeat().map(
                lambda x: _math.cast(x, dtype))
        if step > 0:
            return RangeDataset((start, _INT64_MAX, step), _dtypes.int64).map(
                lambda x: _math.cast(x, dtype))
        return RangeDataset((-max(start, -_INT64_MAX), _INT64_MAX, -step), _dtypes.int64).map(
            lambda x: _math.cast(-x, dtype))

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None, name=None):
        """The files matching `file_pattern` (a glob, or a list of them), as scalar strings.

        Names come sorted, then shuffled unless `shuffle` is False (the
        default is to shuffle, and to reshuffle on each iteration, as in
        tf.data). No match raises ``InvalidArgumentError`` ("No files matched
        pattern: <pattern>").
        """
        patterns = [file_pattern] if isinstance(file_pattern, (str, bytes)) else list(
            to_array(file_pattern, _dtypes.string).reshape(-1))
        names = []
        for pattern in patterns:
            pattern = pattern.decode() if isinstance(pattern, bytes) else str(pattern)
            names.extend(_gfile.glob(pattern))  # sorted, through the file-system layer
        if not names:
            # TensorFlow's class (InvalidArgumentError), without the wording of its internal
            # assertion ("Expected 'tf.Tensor(False, ...)' to be true. Summarized data: ...").
            shown = ", ".join(p.decode() if isinstance(p, bytes) else str(p) for p in patterns)
            raise _errors.InvalidArgumentError(f"No files matched pattern: {shown}")
        dataset = Dataset.from_tensor_slices(np.array([n.encode() for n in names], dtype=object))
        if shuffle is None or shuffle:
            dataset = dataset.shuffle(max(len(names), 1), seed=seed)
        return dataset

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None,
                       output_signature=None, name=None):
        """Elements yielded by ``generator(*args)``, called anew for every iterator.

        Describe the elements with `output_signature` (a structure of
        ``TensorSpec``), or with the older `output_types`/`output_shapes`.
        Each yielded value is checked against it and converted to its dtype;
        a mismatch raises ``InvalidArgumentError`` at that element. The
        generator runs under the GIL on one thread at a time.
        """
        return GeneratorDataset(generator, output_types, output_shapes, args, output_signature)

    # -- transformations ----------------------------------------------------

    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None):
        """Apply `map_func` to each element.

        A tuple element is unpacked into positional arguments; a dict,
        namedtuple or single tensor is passed as one argument. The function
        gets NumPy arrays and may return arrays, NumPy/Python scalars, bytes,
        or a structure of them (a returned list becomes a tuple).

        `num_parallel_calls` (an int or ``AUTOTUNE``) runs calls on worker
        threads, which take the GIL only for the call itself. Output order is
        the input order unless `deterministic` is False (None: follow
        ``Options.deterministic``). An exception raised by `map_func` is
        re-raised from ``next()`` at that element with its original type and
        traceback; iteration can continue after it.
        """
        if not callable(map_func):
            raise TypeError(f"`map_func` must be callable, got {map_func!r}.")
        parallelism = _check_parallelism(num_parallel_calls)
        if deterministic is not None and not parallelism:
            _warn_deterministic_unused()
        op = MapDataset if num_parallel_calls is None else ParallelMapDataset
        return op(self, map_func, parallelism, deterministic)

    def interleave(self, map_func, cycle_length=None, block_length=None, num_parallel_calls=None,
                   deterministic=None, name=None):
        """Map each element to a dataset with `map_func` and interleave their elements.

        `block_length` consecutive elements (default 1) are taken from each of
        `cycle_length` open datasets in turn; a dataset that ends is replaced by
        the next input element's when the cycle comes back to its place. The
        order is tf.data's exactly. `cycle_length` defaults to ``AUTOTUNE``,
        which (as in tf.data) depends on the number of CPUs: pass it explicitly
        for an order that is the same on every machine.

        `map_func` (Python, called under the GIL) only builds each inner
        dataset. With `num_parallel_calls` (an int or ``AUTOTUNE``) the inner
        datasets are read ahead on engine worker threads, and up to
        ``min(2 * cycle_length, 8)`` future inner datasets are opened ahead of
        need; open inner iterators stay bounded by ``cycle_length`` plus that.
        `deterministic=False` returns whichever inner element is ready first
        (each inner dataset still keeps its own order).
        """
        if not callable(map_func):
            raise TypeError(f"`map_func` must be callable, got {map_func!r}.")
        cycle_length = AUTOTUNE if cycle_length is None else _check_count(cycle_length, "cycle_length")
        block_length = 1 if block_length is None else _check_count(block_length, "block_length")
        if cycle_length != AUTOTUNE and cycle_length <= 0:
            raise _errors.InvalidArgumentError("cycle_length must be greater than zero.")
        if block_length <= 0:
            raise _errors.InvalidArgumentError("block_length must be greater than zero.")
        parallelism = _check_parallelism(num_parallel_calls)
        if cycle_length != AUTOTUNE and parallelism not in (0, AUTOTUNE) and parallelism > cycle_length:
            raise _errors.InvalidArgumentError(
                "If `cycle_length` is set to a fixed value, `num_parallel_calls` must be either "
                "`AUTOTUNE` or a value less than or equal to `cycle_length`. However, "
                f"`num_parallel_calls` is {parallelism} and `cycle_length` is {cycle_length}.")
        if deterministic is not None and not parallelism:
            _warn_deterministic_unused()
        op = InterleaveDataset if num_parallel_calls is None else ParallelInterleaveDataset
        return op(self, map_func, cycle_length, block_length, parallelism, deterministic)

    def flat_map(self, map_func, name=None):
        """Map each element to a dataset and concatenate them (``interleave`` with cycle_length 1)."""
        if not callable(map_func):
            raise TypeError(f"`map_func` must be callable, got {map_func!r}.")
        return FlatMapDataset(self, map_func)

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None, deterministic=None,
              name=None):
        """Stack `batch_size` consecutive elements into one, along a new first dimension.

        The last batch may be smaller unless `drop_remainder` is True (then
        the batch dimension is static). Components whose shapes differ within
        a batch raise ``InvalidArgumentError``.
        """
        batch_size = _check_count(batch_size, "batch_size")
        if batch_size <= 0:
            raise _errors.InvalidArgumentError(f"Batch size must be greater than zero, got {batch_size}.")
        parallelism = _check_parallelism(num_parallel_calls)
        if deterministic is not None and not parallelism:
            _warn_deterministic_unused()
        op = BatchDataset if num_parallel_calls is None else ParallelBatchDataset
        return op(self, batch_size, bool(drop_remainder), parallelism, deterministic)

    def prefetch(self, buffer_size, name=None):
        """Produce up to `buffer_size` elements ahead on a background thread (``AUTOTUNE``: adaptive)."""
        buffer_size = _check_count(buffer_size, "buffer_size")
        if buffer_size < AUTOTUNE:
            raise _errors.InvalidArgumentError(
                f"buffer_size must be >= 0 or AUTOTUNE (-1), got {buffer_size}.")
        return PrefetchDataset(self, buffer_size)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None, name=None):
        """Randomly shuffle elements with a buffer of `buffer_size` elements.

        tf.data's algorithm and random numbers: the same `seed` (combined
        with ``conveyor.random.set_seed`` as in TensorFlow) gives exactly
        tf.data's order, on every run and at every thread count. A perfect
        shuffle needs ``buffer_size >= len(dataset)``. Each new iteration
        (each ``iter()``, each epoch of a following ``repeat``) reshuffles
        unless `reshuffle_each_iteration` is False.
        """
        buffer_size = _check_count(buffer_size, "buffer_size")
        if buffer_size <= 0:
            raise _errors.InvalidArgumentError("buffer_size must be greater than zero.")
        if seed is not None:
            seed = _check_count(seed, "seed")
        seed, seed2 = _seed.get_seed(seed)
        reshuffle = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)
        return ShuffleDataset(self, buffer_size, seed or 0, seed2 or 0, reshuffle)

    def take(self, count, name=None):
        """The first `count` elements (all of them when `count` is -1 or larger than the dataset)."""
        return TakeDataset(self, _check_count(count, "count"))

    def skip(self, count, name=None):
        """All but the first `count` elements (none when `count` is -1)."""
        return SkipDataset(self, _check_count(count, "count"))

    def repeat(self, count=None, name=None):
        """Repeat the dataset `count` times (None or -1: forever); each pass re-runs the input."""
        return RepeatDataset(self, _check_count(count, "count", allow_none=True))

    def ignore_errors(self, log_warning=False, name=None):
        """Drop the elements whose production raised an error, and go on.

        As in tf.data, this drops a failed map call's element, a corrupt
        record (and, for record files, the rest of that file), ... With
        `log_warning`, each dropped error is printed to stderr.
        """
        return IgnoreErrorsDataset(self, bool(log_warning))

    def cache(self, filename="", name=None, on_truncation="warn"):
        """Cache the elements of this dataset: the first complete pass over it
        is kept, and later passes (each new iterator, each epoch of a
        ``repeat``) replay it instead of running the pipeline above.

        With `filename` empty (the default) the cache is in memory: elements
        are kept by reference (no copies; the arrays you get from a cached
        pass are read-only) and their bytes count against the RAM budget
        (``options.autotune.ram_budget``); a cache that does not fit is
        dropped with a warning. With a `filename`, elements are streamed in
        chunks to the file ``filename + ".cvcache"`` (directories are
        created), which is committed atomically when the pass completes; any
        later iterator, also in another process, reads it and never runs the
        pipeline above. The file keeps being used even if that pipeline
        changes (as in tf.data); a file written for elements of another
        structure or dtype raises ``InvalidArgumentError``, a damaged one
        ``DataLossError``: delete it to compute the cache again. A file cut
        short after it was written (a torn tail: an interrupted copy, a full
        disk) follows `on_truncation` (conveyor only): ``"warn"`` (default)
        issues a ``conveyor.errors.DataLossWarning`` naming the file and the
        byte offset of the tear, then computes the elements again and
        replaces the file; ``"ignore"`` does the same quietly; ``"error"``
        raises ``DataLossError`` naming the file and the offset.

        Only a complete pass is kept: a pass that stops early is discarded,
        and a warning (``CacheWarning``, once per dataset) says so, except
        when a ``take`` after the cache ended the pass on purpose
        (``ds.cache().take(5)`` is a preview and stays quiet;
        ``ds.cache().take(k).repeat()``, whose cache never fills, warns).
        Cache first and shuffle after (``ds.cache().shuffle(n)``), or every
        epoch replays the first epoch's order.

        Iterators started while no pass has completed read the pipeline
        themselves, as in tf.data; with a file, the first one writes it and
        the others (also in other processes) just read the pipeline. Long
        first passes can show a progress bar: see
        ``conveyor.data.experimental.cache_progress``.
        """
        if isinstance(filename, os.PathLike):
            filename = os.fspath(filename)
        if isinstance(filename, bytes):
            filename = os.fsdecode(filename)
        if not isinstance(filename, str):
            raise TypeError(f"`filename` must be a string, got {filename!r} "
                            f"({type(filename).__name__}).")
        if "\0" in filename:
            raise _errors.InvalidArgumentError("`filename` must not contain NUL characters.")
        if on_truncation not in ("warn", "error", "ignore"):
            raise ValueError(f"`on_truncation` must be 'warn', 'error' or 'ignore', got "
                             f"{on_truncation!r}.")
        return CacheDataset(self, filename, on_truncation)

    def apply(self, transformation_func):
        """``transformation_func(self)``, which must return a Dataset."""
        result = transformation_func(self)
        if not isinstance(result, Dataset):
            raise TypeError("`transformation_func` must return a Dataset, got "
                            f"{type(result).__name__}.")
        return result

    def with_options(self, options, name=None):
        """A dataset with `options` merged over the current ones."""
        if not isinstance(options, Options):
            raise TypeError(f"`options` must be a conveyor.data.Options, got {type(options).__name__}.")
        return OptionsDataset(self, options)

    # -- consuming the dataset: reduce, get_single_element ---------------------

    def reduce(self, initial_state, reduce_func, name=None):
        """Reduce all elements to one value: the final state.

        The state starts as `initial_state` (a tensor-like value or a
        structure of them, converted as ``tf.constant`` converts: a Python
        int is int32, a float float32); for each element in turn it becomes
        ``reduce_func(state, element)``. The state's leaves reach
        `reduce_func` as ``EagerTensor``s, the element as iteration yields
        it. The new state must have the structure and dtypes of the initial
        one (``TypeError``/``ValueError`` otherwise, as in tf.data); its shapes
        may change. Returns the final state with ``EagerTensor`` leaves (the
        initial state for an empty dataset). An infinite dataset never returns.

        tf.data runs `reduce_func` as a traced graph; conveyor runs it in
        Python on the consumer's thread, once per element (docs/differences.md).
        """
        if not callable(reduce_func):
            raise ValueError(f"Argument `func` must be a callable. Received func={reduce_func!r} "
                             f"(of type {type(reduce_func)})")
        state = _eager_state(initial_state)
        dtypes = [leaf.dtype for leaf in nest.flatten(state)]
        for element in self:
            new_state = reduce_func(state, element)
            if isinstance(new_state, list):  # tf.data makes a returned list a tuple
                new_state = tuple(new_state)
            new_state = _eager_state(new_state)
            flat = nest.flatten(new_state)
            if len(flat) != len(dtypes):
                raise _errors.InvalidArgumentError(
                    "The number of components of the initial state and the reduce function "
                    f"output does not match. (initial_state={len(dtypes)}, output={len(flat)}).")
            nest.assert_same_structure(state, new_state)
            if _LEGACY_PROMOTION and [leaf.dtype for leaf in flat] != dtypes:
                # NumPy 1.x promotes `state + 1` to int64 (a Python int is not
                # weak there, NEP 50): within a kind, keep the state's dtype.
                flat = [leaf.astype(dt) if np.can_cast(leaf.dtype, dt, "same_kind") else leaf
                        for leaf, dt in zip(flat, dtypes)]
                new_state = nest.pack_sequence_as(new_state, flat)
            if [leaf.dtype for leaf in flat] != dtypes:
                raise TypeError(
                    "The element types for the new state must match the initial state. "
                    f"Expected {_dtype_names(state)} but got {_dtype_names(new_state)}.")
            state = new_state
        return state

    def get_single_element(self, name=None):
        """The only element of this dataset, with ``EagerTensor`` leaves.

        Raises ``InvalidArgumentError`` if the dataset is empty or has more
        than one element (it reads at most two).
        """
        it = iter(self)
        try:
            element = next(it)
        except StopIteration:
            raise _errors.InvalidArgumentError("Dataset was empty.") from None
        try:
            next(it)
        except StopIteration:
            return element
        raise _errors.InvalidArgumentError("Dataset had more than one element.")

    # -- filter, zip, concatenate, enumerate, shard, unbatch, rebatch, padded_batch

    def filter(self, predicate, name=None):
        """The elements for which `predicate` returns True.

        `predicate` is called as ``map``'s function is (a tuple element is
        unpacked into positional arguments) and must return a scalar bool
        (``True``/``False``, a NumPy bool); anything else raises
        ``InvalidArgumentError`` at that element. An exception raised by the
        predicate is re-raised from ``next()`` at that element and iteration
        can continue. The cardinality is unknown, as in tf.data.
        """
        if not callable(predicate):
            raise ValueError(f"Argument `predicate` must be a callable. Received {predicate!r}.")
        return FilterDataset(self, predicate)

    def take_while(self, predicate, name=None):
        """The elements up to the first for which `predicate` returns False.

        `predicate` is called as ``filter``'s is and must return a scalar
        bool; the element that fails it and everything after are never read.
        The cardinality is unknown, as in tf.data.
        """
        if not callable(predicate):
            raise ValueError(f"Argument `predicate` must be a callable. Received {predicate!r}.")
        return TakeWhileDataset(self, predicate)

    def scan(self, initial_state, scan_func, name=None):
        """A stateful map: ``scan_func(state, element)`` returns ``(new_state,
        output)``; the dataset yields each output and carries the state on.

        `initial_state` is a tensor-like value or a structure of them
        (converted as ``tf.constant`` does: a Python int is int32). The new
        state must keep its structure and dtypes (``TypeError`` otherwise, as
        in tf.data); its shapes may change (the function is traced again with
        the changing dims unknown). The function is traced as ``map``'s is
        and runs natively when it can, else in Python per element. Each
        iteration starts from `initial_state`; a saved iterator keeps its state.
        """
        return ScanDataset(self, initial_state, scan_func)

    def rejection_resample(self, class_func, target_dist, initial_dist=None, seed=None,
                           name=None):
        """Resample towards the class distribution `target_dist`, as tf.data:
        ``(class, element)`` pairs, where ``class_func(element)`` is a scalar
        int class below ``len(target_dist)``. With `initial_dist` (the input's
        class distribution) part of the output comes from the input as it is
        and the rest from elements kept at random; without it the input's
        distribution is estimated as elements go by. Accept draws are seeded
        by `seed` (reproducible; not tf.data's values). See
        conveyor/data/ops/resample_op.py."""
        from conveyor.data.ops.resample_op import rejection_resample
        return rejection_resample(self, class_func, target_dist, initial_dist, seed)

    def sparse_batch(self, batch_size, row_shape, name=None):
        """Batches of `batch_size` elements as ``SparseTensor``s of dense shape
        ``[rows] + row_shape``: each element (of rank ``len(row_shape)``, no
        dim larger than row_shape's: ``DataLossError`` otherwise) fills the
        top-left corner of its row, as tf.data's."""
        from conveyor.data.ops.sparse_batch_op import sparse_batch
        return sparse_batch(self, batch_size, row_shape)

    def ragged_batch(self, batch_size, drop_remainder=False, row_splits_dtype=None, name=None):
        """Batches of `batch_size` elements whose first dimension varies, as
        ``conveyor.RaggedTensor`` objects (flat values and int64 row splits);
        elements of a fully known shape batch densely, as tf.data's. Other
        dims must be known (one ragged dimension)."""
        from conveyor.data.ops.ragged_batch_op import ragged_batch
        return ragged_batch(self, batch_size, drop_remainder)

    def snapshot(self, path, compression="AUTO", reader_func=None, shard_func=None, name=None):
        """Persist this dataset's output under directory `path`: the first
        complete pass writes it, later passes (also in other processes) read
        it instead of running the pipeline above, as ``tf.data``'s snapshot.

        The snapshot is kept per pipeline: a file named after the pipeline's
        fingerprint (ops, arguments, file lists, functions, seeds), so a
        changed pipeline writes a new one beside the old. It is a file
        ``cache`` (see ``cache``: only a complete pass is committed, a torn
        file is recomputed). `compression`, `reader_func` and `shard_func`
        are accepted; the file is uncompressed and read in order.
        """
        if reader_func is not None or shard_func is not None:
            import warnings
            warnings.warn("Dataset.snapshot: reader_func and shard_func are ignored; the "
                          "snapshot is one file read in order", stacklevel=2)
        from conveyor.data.checkpoint import fingerprint
        return self.cache(_gfile.join(os.fspath(path), "snapshot-" + fingerprint(self).hex()))

    def unique(self, name=None):
        """The elements not seen before, in order of first appearance.

        Elements must be one tensor of dtype int32, int64 or string
        (``TypeError`` otherwise, as in tf.data). Every distinct element is
        remembered until the iterator ends, so memory grows with their number.
        """
        return UniqueDataset(self)

    @staticmethod
    def zip(*args, datasets=None, name=None):
        """Zip datasets together: element i holds element i of each of them.

        ``Dataset.zip(a, b)`` gives ``(a_i, b_i)``; one argument may also be
        any nested structure (tuple, dict, namedtuple) of datasets, which
        becomes the element structure: ``Dataset.zip({"x": a, "y": b})``.
        `datasets` is the older keyword form. The result ends with the
        shortest input. As in tf.data this is a static method, so
        ``a.zip(b)`` zips ``b`` alone.
        """
        if not args and datasets is None:
            raise TypeError("Must pass at least one dataset to `zip`.")
        if args and datasets is not None:
            raise TypeError("Both `*args` and `datasets` cannot be set.")
        if len(args) == 1:
            datasets = args[0]
        elif len(args) > 1:
            datasets = args
        return ZipDataset(datasets)

    def concatenate(self, dataset, name=None):
        """All elements of this dataset, then all elements of `dataset`.

        Both must have the same structure and dtypes; the element spec is the
        most specific one both fit (shapes ``[3]`` and ``[4]`` give
        ``[None]``). Otherwise ``TypeError``, as in tf.data.
        """
        if not isinstance(dataset, Dataset):
            raise TypeError(f"`dataset` must be a Dataset, got {type(dataset).__name__}.")
        return ConcatenateDataset(self, dataset)

    def enumerate(self, start=0, name=None):
        """Pairs ``(index, element)``, the int64 index counting from `start`."""
        start = _int64_arg(start, "start")
        return Dataset.zip((Dataset.range(start, _INT64_MAX), self))

    def shard(self, num_shards, index, name=None):
        """Every `num_shards`-th element, starting with element `index`.

        For a worker's share of the data: shard early (on file names, before
        reading) so each worker reads only its files. ``num_shards`` must be
        > 0 and ``0 <= index < num_shards`` (``InvalidArgumentError``).
        """
        num_shards = _int64_arg(num_shards, "num_shards")
        index = _int64_arg(index, "index")
        if num_shards <= 0 and num_shards != SHARD_HINT:
            raise _errors.InvalidArgumentError(
                f"Number of shards must be greater than zero (currently num_shards = {num_shards}).")
        if not 0 <= index < num_shards and num_shards != SHARD_HINT:
            raise _errors.InvalidArgumentError(
                f"Index must be between 0 and {num_shards - 1} (currently index = {index}).")
        return ShardDataset(self, num_shards, index)

    def unbatch(self, name=None):
        """Split each element along its first dimension into that many elements.

        Every component needs rank >= 1 (``ValueError`` otherwise) and, in
        each element, the same first dimension (``InvalidArgumentError`` at
        that element otherwise). The rows share the batch's memory.
        """
        return UnbatchDataset(self)

    def rebatch(self, batch_size, drop_remainder=False, name=None):
        """Regroup the rows of batched elements into batches of `batch_size`.

        The same as ``unbatch().batch(batch_size)`` with one copy (none when a
        new batch comes from a single input batch). `batch_size` may be a
        list of sizes, used in turn. The last batch may be smaller unless
        `drop_remainder` is True.
        """
        sizes = to_array(batch_size) if not isinstance(batch_size, np.ndarray) else batch_size
        if sizes.ndim > 1:
            raise ValueError("Invalid `batch_sizes`. Expected `batch_sizes` to be a scalar or a "
                             f"vector. Received `batch_sizes` of rank {sizes.ndim}.")
        if sizes.size == 0:
            raise ValueError("Invalid `batch_sizes`: the list of batch sizes is empty.")
        if sizes.dtype.kind not in "iub":
            raise TypeError(f"`batch_size` must be an int or a list of ints, got {batch_size!r}.")
        sizes = [int(s) for s in sizes.reshape(-1)]
        if any(s < 0 for s in sizes):
            raise _errors.InvalidArgumentError(f"Batch sizes must be >= 0, got {sizes}.")
        return RebatchDataset(self, sizes, bool(drop_remainder))

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False, name=None):
        """Batch elements whose shapes differ by padding them to a common shape.

        Each component is padded at the end of each dimension to
        `padded_shapes` (a structure like the element's of shapes: a list of
        ints, ``None`` or -1 meaning "the largest in this batch"); by default
        every dimension pads to the largest in the batch. `padding_values`
        (default 0, ``b""`` for strings; a single scalar applies to every
        component) must have each component's dtype (``TypeError``). An
        element larger than a fixed padded dimension raises ``DataLossError``,
        as in tf.data. The last batch may be smaller unless `drop_remainder`.
        """
        batch_size = _int64_arg(batch_size, "batch_size")
        if batch_size <= 0:
            raise _errors.InvalidArgumentError("Batch size must be greater than zero.")
        return PaddedBatchDataset(self, batch_size, padded_shapes, padding_values,
                                   bool(drop_remainder))

    # -- choosing among datasets, windows and groups ---------------------------

    @staticmethod
    def random(seed=None, rerandomize_each_iteration=None, name=None):
        """An infinite dataset of pseudorandom scalar ``int64`` values in ``[0, 2**32)``.

        tf.data's generator and seeds: the same `seed` (combined with
        ``conveyor.random.set_seed`` as in TensorFlow) gives exactly
        tf.data's values. Every iteration repeats the same values unless
        `rerandomize_each_iteration` is True.
        """
        if seed is not None:
            seed = _check_count(seed, "seed")
        seed, seed2 = _seed.get_seed(seed)
        return RandomDataset(seed or 0, seed2 or 0, bool(rerandomize_each_iteration))

    @staticmethod
    def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=True):
        """Each element of `choice_dataset` picks the dataset the next element comes from.

        `choice_dataset` yields scalar ``int64`` indices into `datasets`; an
        index out of range raises ``InvalidArgumentError`` at that element
        (iteration can go on). When a picked dataset is exhausted, the
        result ends if `stop_on_empty_dataset` (the default); otherwise that
        dataset is skipped from then on, and the result ends when
        `choice_dataset` ends or every dataset is exhausted. Any number of
        datasets, with compatible element structures.
        """
        return _choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset)

    @staticmethod
    def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False,
                             rerandomize_each_iteration=None):
        """Interleave `datasets` by picking each next element's dataset at random.

        `weights` (one per dataset, float32 or float64; default uniform) are
        relative probabilities, or a dataset of weight vectors (one vector per
        pick). The picks are tf.data's exactly: a ``Dataset.random(seed)``
        gives two seeds per pick, and a categorical sample is drawn with
        TensorFlow's stateless multinomial sampler. With
        `stop_on_empty_dataset` the result ends as soon as a picked dataset is
        exhausted; otherwise (the default) exhausted datasets are skipped until
        all are. Datasets with a weight of zero are dropped first (as in
        tf.data), and a single dataset is returned as it is.
        """
        return _sample_from_datasets(datasets, weights, seed, stop_on_empty_dataset,
                                     rerandomize_each_iteration)

    def window(self, size, shift=None, stride=1, drop_remainder=False, name=None):
        """Group elements into windows, each a dataset (a structure of datasets for structured elements).

        A window holds `size` elements taken every `stride` input elements;
        consecutive windows start `shift` (default `size`) elements apart. The
        last windows may be smaller unless `drop_remainder`. As in tf.data, a
        tuple (or dict) element gives a tuple (dict) of datasets, one per
        component: consume them with ``flat_map``, ``interleave``,
        ``Dataset.zip``, ``batch`` or iteration, e.g.
        ``ds.window(3, 1).flat_map(lambda w: w.batch(3))``.

        Each window's elements are gathered by the engine; its datasets read
        them without copying.
        """
        size = _check_count(size, "size")
        shift = size if shift is None else _check_count(shift, "shift")
        stride = _check_count(stride, "stride")
        for value, what in ((size, "size"), (shift, "shift"), (stride, "stride")):
            if value <= 0:
                raise _errors.InvalidArgumentError(f"Window {what} must be greater than zero.")
        if size - 1 > (2 ** 63 - 2) // stride:
            raise _errors.InvalidArgumentError(
                f"Window target buffer size overflow: (window_size={size} - 1) * "
                f"window_stride={stride} + 1 is not representable.")
        return WindowDataset(self, size, shift, stride, bool(drop_remainder))

    def group_by_window(self, key_func, reduce_func, window_size=None, window_size_func=None,
                        name=None):
        """Group elements by key and reduce each group window by window.

        ``key_func(element)`` returns a scalar int64 key. Elements are gathered
        per key; when a key has `window_size` elements (or
        ``window_size_func(key)``, asked once per key), ``reduce_func(key,
        window)`` is called with the key and a dataset of those elements, and
        the elements of the dataset it returns are produced. At the end of the
        input the remaining partial windows are reduced, smallest key first.
        Exactly one of `window_size` and `window_size_func` must be given.
        """
        if (window_size is not None and window_size_func) or not (
                window_size is not None or window_size_func):
            raise ValueError("Either the `window_size` argument or the `window_size_func` "
                             "argument must be specified.")
        for fn, what in ((key_func, "key_func"), (reduce_func, "reduce_func"),
                         (window_size_func, "window_size_func")):
            if fn is not None and not callable(fn):
                raise TypeError(f"`{what}` must be callable, got {fn!r}.")
        if window_size is not None:
            window_size = _check_count(window_size, "window_size")
        return GroupByWindowDataset(self, key_func, reduce_func, window_size, window_size_func)

    def bucket_by_sequence_length(self, element_length_func, bucket_boundaries, bucket_batch_sizes,
                                  padded_shapes=None, padding_values=None,
                                  pad_to_bucket_boundary=False, no_padding=False,
                                  drop_remainder=False, name=None):
        """Batch elements of similar length together, padding each batch (``padded_batch``).

        ``element_length_func(element)`` gives each element's length; the
        element goes to bucket ``i`` when ``bucket_boundaries[i-1] <= length <
        bucket_boundaries[i]`` (the first and last buckets are open-ended), and
        each bucket is batched by ``bucket_batch_sizes[i]``. Batches are padded
        to their longest element (or to `padded_shapes`; with
        `pad_to_bucket_boundary`, unknown dimensions pad to the bucket's
        boundary minus one), or not padded at all with `no_padding`. This is
        ``group_by_window`` with the bucket as key, as in tf.data.
        """
        return _bucket_by_sequence_length(self, element_length_func, bucket_boundaries,
                                          bucket_batch_sizes, padded_shapes, padding_values,
                                          pad_to_bucket_boundary, no_padding, drop_remainder)


def _add_methods(methods, cls):
    """Put the members of `methods` on `cls` (the base class every op class
    subclasses), once, when this module is imported."""
    for name, member in vars(methods).items():
        if name.startswith("__"):
            continue
        function = member.__func__ if isinstance(member, staticmethod) else member
        function.__qualname__ = f"{cls.__name__}.{name}"
        setattr(cls, name, member)


_add_methods(_DatasetMethods, Dataset)
del _DatasetMethods


# -- helpers of the methods above ---------------------------------------------------


def _eager_state(state):
    """`state` (a structure of tensor-like values) with EagerTensor leaves, as
    ``tf.constant`` converts them (a Python int is int32, a float float32;
    a list is one tensor)."""
    return nest.map_structure(lambda leaf: as_eager(to_array(leaf)), state)


class _DtypeName:
    """Shown as TensorFlow shows a dtype, in reduce()'s message."""

    def __init__(self, dtype):
        self.name = _dtypes.as_dtype(dtype).name

    def __repr__(self):
        return f"<dtype: {self.name!r}>"


def _dtype_names(state):
    return nest.map_structure(lambda leaf: _DtypeName(leaf.dtype), state)


def _check_datasets(datasets):
    if isinstance(datasets, Dataset) or not hasattr(datasets, "__len__"):
        raise TypeError(f"Invalid `datasets`. `datasets` should be a list of `Dataset`s, got "
                        f"{type(datasets).__name__}.")
    datasets = list(datasets)
    if not datasets:
        raise ValueError("Invalid `datasets`. `datasets` should not be empty.")
    for d in datasets:
        if not isinstance(d, Dataset):
            raise TypeError(f"Invalid `datasets`. Each of `datasets` should be a `Dataset`, got "
                            f"{type(d).__name__}.")
    return datasets


def _choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset):
    datasets = _check_datasets(datasets)
    if not isinstance(choice_dataset, Dataset):
        raise TypeError("Invalid `choice_dataset`. `choice_dataset` should be a `tf.data.Dataset` "
                        f"but is {type(choice_dataset)}.")
    spec = choice_dataset.element_spec
    if not (isinstance(spec, TensorSpec) and spec.dtype == _dtypes.int64
            and spec.shape.is_compatible_with([])):
        raise TypeError("Invalid `choice_dataset`. Elements of `choice_dataset` must be scalar "
                        f"`tf.int64` tensors but are {spec}.")
    return DirectedInterleaveDataset(choice_dataset, datasets, stop_on_empty_dataset)


def _sample_from_datasets(datasets, weights, seed, stop_on_empty_dataset, rerandomize):
    datasets = _check_datasets(datasets)
    if not isinstance(weights, Dataset):
        if weights is None:
            weights = np.ones(len(datasets), np.float32)  # equal logits: uniform
        else:
            if isinstance(weights, (str, bytes)) or not hasattr(weights, "__len__"):
                raise TypeError(f"Invalid `weights`. `weights` should be a list of numbers or a "
                                f"`Dataset`, got {type(weights).__name__}.")
            if len(datasets) != len(weights):
                raise ValueError("Invalid `weights`. `weights` should have the same length as "
                                 f"`datasets` but got `len(weights)={len(weights)}` vs. "
                                 f"`len(datasets)={len(datasets)}`.")
            # As tf.data: datasets with a zero (or negative, or NaN) weight are dropped.
            kept = [(d, w) for d, w in zip(datasets, list(weights)) if w > 0]
            datasets, weights = ([d for d, _ in kept], [w for _, w in kept]) if kept else (
                [datasets[0].take(0)], [1.0])
            weights = to_array(list(weights))
            if weights.dtype not in (np.float32, np.float64):
                raise TypeError("Invalid `weights`. `weights` type must be either `tf.float32` or "
                                f"`tf.float64` but is {_dtypes.as_dtype(weights.dtype)!r}.")
        if len(datasets) == 1:
            return datasets[0]
    else:
        spec = weights.element_spec
        if not isinstance(spec, TensorSpec) or spec.dtype not in (_dtypes.float32, _dtypes.float64):
            raise TypeError("Invalid `weights`. Elements of a `weights` dataset must be float32 or "
                            f"float64 vectors, but are {spec}.")
    selector = SampleChoiceDataset(
        Dataset.random(seed=seed, rerandomize_each_iteration=rerandomize), weights)
    return DirectedInterleaveDataset(selector, datasets, stop_on_empty_dataset)


def _bucket_by_sequence_length(dataset, element_length_func, bucket_boundaries,
                               bucket_batch_sizes, padded_shapes, padding_values,
                               pad_to_bucket_boundary, no_padding, drop_remainder):
    if len(bucket_batch_sizes) != len(bucket_boundaries) + 1:
        raise ValueError(
            f"`len(bucket_batch_sizes)` must equal `len(bucket_boundaries) + 1` but "
            f"`len(bucket_batch_sizes)={len(bucket_batch_sizes)}` and "
            f"`len(bucket_boundaries)={len(bucket_boundaries)}`.")
    if not callable(element_length_func):
        raise TypeError(f"`element_length_func` must be callable, got {element_length_func!r}.")
    boundaries = [int(b) for b in bucket_boundaries]
    batch_sizes = [_check_count(b, "bucket_batch_sizes") for b in bucket_batch_sizes]
    buckets_min = [_INT32_MIN] + boundaries
    buckets_max = boundaries + [_INT32_MAX]

    def element_to_bucket_id(*args):
        length = np.asarray(element_length_func(*args))
        for i, (lo, hi) in enumerate(zip(buckets_min, buckets_max)):
            if lo <= length < hi:
                return np.int64(i)
        return np.int64(np.iinfo(np.int64).max)  # reduce_min of nothing, as in tf.data

    def window_size_fn(bucket_id):
        if not 0 <= bucket_id < len(batch_sizes):
            raise _errors.InvalidArgumentError(
                f"indices = {bucket_id} is not in [0, {len(batch_sizes)})")
        return np.int64(batch_sizes[bucket_id])

    def make_padded_shapes(shapes, none_filler=None):
        padded = []
        for shape in nest.flatten(shapes):
            shape = TensorShape(shape)
            padded.append([none_filler if d is None else d for d in shape])
        return nest.pack_sequence_as(shapes, padded)

    def batching_fn(bucket_id, grouped_dataset):
        batch_size = int(window_size_fn(bucket_id))
        if no_padding:
            return grouped_dataset.batch(batch_size, drop_remainder=drop_remainder)
        none_filler = None
        if pad_to_bucket_boundary:
            if not bucket_id < len(batch_sizes) - 1:
                raise _errors.InvalidArgumentError(
                    "When pad_to_bucket_boundary=True, elements must have length < "
                    "max(bucket_boundaries).")
            none_filler = boundaries[bucket_id] - 1
        input_shapes = nest.map_structure(lambda s: s.shape, grouped_dataset.element_spec)
        shapes = make_padded_shapes(padded_shapes or input_shapes, none_filler=none_filler)
        return grouped_dataset.padded_batch(batch_size, shapes, padding_values,
                                            drop_remainder=drop_remainder)

    return dataset.group_by_window(key_func=element_to_bucket_id, reduce_func=batching_fn,
                                   window_size_func=window_size_fn)
