"""``Dataset``: tf.data's chainable pipeline API over conveyor's C engine.

A ``Dataset`` is an immutable description. Iterating it builds (once per set
of options, then cached) the engine's datasets and opens an engine iterator,
which yields NumPy arrays. The Python layer only checks arguments and keeps
the element structure; all per-element work happens in C.
"""
import operator
import os
import sys
import threading
import warnings

import numpy as np

from conveyor import _engine
from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor import _tracing
from conveyor import nest
from conveyor import _seed
from conveyor._convert import spec_of, to_array
from conveyor.data.options import Options
from conveyor.tensor_spec import TensorShape, TensorSpec

__all__ = ["Dataset", "DatasetSpec", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY",
           "CacheWarning"]

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2
SHARD_HINT = -1  # tf.data.experimental.SHARD_HINT: accepted by shard(), never iterable here
_INT64_MAX = 2 ** 63 - 1


class _Cardinality(int):
    """An int that also answers ``.numpy()``, as the tensor TensorFlow returns does."""

    def numpy(self):
        return np.int64(self)


def _leaf_paths(structure, prefix=""):
    if isinstance(structure, dict):
        out = []
        for k in sorted(structure):
            out += _leaf_paths(structure[k], f"{prefix}[{k!r}]")
        return out
    if isinstance(structure, tuple):
        fields = getattr(type(structure), "_fields", None)
        out = []
        for i, child in enumerate(structure):
            out += _leaf_paths(child, f"{prefix}.{fields[i]}" if fields else f"{prefix}[{i}]")
        return out
    return [prefix or "the element"]


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


_UNSET = object()


def _check_budget(value, what):
    """An options.autotune budget: None or 0 (the default) or a positive int."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"options.autotune.{what} must be an int, got {value!r} "
                        f"({type(value).__name__}).")
    if value < 0:
        raise ValueError(f"options.autotune.{what} must be >= 0 (0: the default), got {value}.")
    return int(value)


def _spec_from_value(value):
    """Element spec of a Python value (convert_to_tensor rules)."""
    return nest.map_structure(lambda a: spec_of(a), value)


def _structure_kind(spec):
    """How the engine iterator repacks flat components: 0 single, 1 plain tuple, 2 call."""
    if _has_datasets(spec):
        return 2, lambda flat: _pack_element(spec, flat)
    if not nest.is_nested(spec):
        return 0, None
    if type(spec) is tuple and not any(nest.is_nested(s) for s in spec):
        return 1, None
    return 2, lambda flat: nest.pack_sequence_as(spec, flat)


class _BuildContext(tuple):
    """What engine datasets depend on beyond their arguments (from Options)."""

    def __new__(cls, deterministic, max_threads, parallel_batch, memory=None, cpu_budget=0):
        return super().__new__(cls, (deterministic, max_threads, parallel_batch, memory,
                                     cpu_budget))

    deterministic = property(operator.itemgetter(0))
    max_threads = property(operator.itemgetter(1))
    parallel_batch = property(operator.itemgetter(2))
    # The engine RAM budget (a capsule) that buffering stages charge; None: the
    # process-wide default. Hashed by identity: one per with_options() call.
    memory = property(operator.itemgetter(3))
    # options.autotune.cpu_budget; 0: the CPUs this process may use.
    cpu_budget = property(operator.itemgetter(4))

    def cpus(self):
        """CPUs that AUTOTUNE decisions may assume."""
        return self.cpu_budget or _engine.cpu_count()

    def parallelism(self, value):
        """num_parallel_calls -> worker count for the engine (0 = sequential).

        AUTOTUNE is one worker per CPU plus one: a worker pulls its own input
        element, so with one per CPU all can be busy processing while nobody
        reads ahead (a slow source then stalls the stage). With
        options.autotune.cpu_budget it is exactly that budget."""
        if value == AUTOTUNE:
            value = self.cpu_budget or _engine.cpu_count() + 1
        if self.max_threads and value > self.max_threads:
            value = self.max_threads
        return value


class Dataset:
    """A pipeline of elements, as ``tf.data.Dataset``.

    Build one with a source (``from_tensor_slices``, ``from_tensors``, ``range``,
    ``from_generator``), chain transformations (``map``, ``batch``, ``prefetch``,
    ``take``, ``skip``, ``repeat``), and iterate it: each element comes out with
    its structure (tuples, dicts, namedtuples) and NumPy arrays as leaves;
    scalars come out as NumPy scalars and strings as ``bytes``, as
    ``as_numpy_iterator()`` gives in TensorFlow.
    """

    def __init__(self, inputs=()):
        self._inputs = tuple(inputs)
        self._engine_cache = {}
        self._lock = threading.Lock()

    # -- subclass hooks -----------------------------------------------------

    def _build(self, ctx, engine_inputs):  # pragma: no cover - abstract
        raise NotImplementedError

    def _derive_spec(self):
        """The element spec, possibly by computing it (a probe for Python maps)."""
        raise NotImplementedError  # pragma: no cover

    def _known_spec(self):
        """The element spec if it is known without running anything, else None."""
        return self._derive_spec()

    # -- engine plumbing ----------------------------------------------------

    def _engine(self, ctx):
        with self._lock:
            handle = self._engine_cache.get(ctx)
            if handle is None:
                handle = self._build(ctx, [i._engine(ctx) for i in self._inputs])
                self._engine_cache[ctx] = handle
            return handle

    def _context(self):
        options = self.options()
        deterministic = True if options.deterministic is None else bool(options.deterministic)
        parallel_batch = options.experimental_optimization.parallel_batch
        memory = self._ram_budget()
        return _BuildContext(deterministic, options.threading.private_threadpool_size or 0,
                             parallel_batch is not False, None if memory is _UNSET else memory,
                             _check_budget(options.autotune.cpu_budget, "cpu_budget"))

    def _ram_budget(self):
        """The engine RAM budget of the with_options() call that set
        options.autotune.ram_budget last (as options() merges them), None for
        the process default, or _UNSET when no call below this dataset sets it."""
        budget = _UNSET
        for i in self._inputs:
            found = i._ram_budget()
            if found is not _UNSET:
                budget = found
        return budget

    def _packing(self):
        return _structure_kind(self.element_spec)

    # -- properties -----------------------------------------------------------

    @property
    def element_spec(self):
        """The structure of ``TensorSpec`` objects describing each element."""
        return self._derive_spec()

    def options(self):
        """The ``Options`` of this dataset (merged from its inputs)."""
        merged = Options()
        for i in self._inputs:
            merged = merged.merge(i.options())
        return merged

    def cardinality(self):
        """The number of elements, or ``INFINITE_CARDINALITY`` (-1) / ``UNKNOWN_CARDINALITY`` (-2)."""
        return _Cardinality(self._engine(self._context()).cardinality())

    def __len__(self):
        n = self.cardinality()
        if n == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN_CARDINALITY:
            raise TypeError("The dataset length is unknown.")
        return int(n)

    def __bool__(self):
        return True  # never fall back to __len__

    def __iter__(self):
        """A new iterator over the elements; each call starts from the beginning."""
        return self._engine(self._context()).make_iterator(self._packing)

    def as_numpy_iterator(self):
        """An iterator of NumPy values (conveyor's iterators already yield NumPy)."""
        for component in nest.flatten(self.element_spec):
            if not isinstance(component, TensorSpec):
                raise TypeError(f"Dataset.as_numpy_iterator() does not support {component!r}.")
        return iter(self)

    def __repr__(self):
        modes = self._map_modes()
        shown = f" maps={modes}" if modes else ""
        return f"<{type(self).__name__} element_spec={self._known_spec()!r}{shown}>"

    def _map_modes(self):
        """How each map/filter function upstream runs, source first: "native"
        (a compiled program, no GIL) or "python" (per element, under the GIL)."""
        modes, seen, stack = [], set(), [self]
        while stack:
            ds = stack.pop()
            if id(ds) in seen:
                continue
            seen.add(id(ds))
            function = getattr(ds, "_function", None)
            if isinstance(function, _MapFunction):
                modes.append(f"{function.name}: {function.mode or 'untraced'}")
            stack.extend(getattr(ds, "_inputs", ()))
        return modes[::-1]

    # -- sources ------------------------------------------------------------

    @staticmethod
    def from_tensor_slices(tensors, name=None):
        """Elements are the slices of `tensors` along their first dimension.

        `tensors` is a tensor-like value or a structure (tuple, dict,
        namedtuple) of them; Python lists are tensors, not structure. The
        values are copied into the engine once, when the dataset is created.
        """
        return _TensorSliceDataset(tensors)

    @staticmethod
    def from_tensors(tensors, name=None):
        """A dataset with exactly one element, `tensors`."""
        return _TensorDataset(tensors)

    @staticmethod
    def range(*args, output_type=_dtypes.int64, name=None):
        """Like Python's ``range``: ``range(stop)``, ``range(start, stop[, step])``; int64 by default."""
        return _RangeDataset(args, output_type)

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None, name=None):
        """The files matching `file_pattern` (a glob, or a list of them), as scalar strings.

        Names come sorted, then shuffled unless `shuffle` is False (the
        default is to shuffle, and to reshuffle on each iteration, as in
        tf.data). No match raises ``InvalidArgumentError``.
        """
        import glob as _glob
        patterns = [file_pattern] if isinstance(file_pattern, (str, bytes)) else list(
            to_array(file_pattern, _dtypes.string).reshape(-1))
        names = []
        for pattern in patterns:
            pattern = pattern.decode() if isinstance(pattern, bytes) else str(pattern)
            names.extend(sorted(_glob.glob(pattern)))
        if not names:
            raise _errors.InvalidArgumentError(
                f"Expected 'tf.Tensor(False, shape=(), dtype=bool)' to be true. Summarized "
                f"data: b'No files matched pattern: {', '.join(map(str, patterns))}'")
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
        return _GeneratorDataset(generator, output_types, output_shapes, args, output_signature)

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
            warnings.warn("The `deterministic` argument has no effect unless the "
                          "`num_parallel_calls` argument is specified.", stacklevel=2)
        return _MapDataset(self, map_func, parallelism, deterministic)

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
            warnings.warn("The `deterministic` argument has no effect unless the "
                          "`num_parallel_calls` argument is specified.", stacklevel=2)
        return _InterleaveDataset(self, map_func, cycle_length, block_length, parallelism,
                                  deterministic)

    def flat_map(self, map_func, name=None):
        """Map each element to a dataset and concatenate them (``interleave`` with cycle_length 1)."""
        return self.interleave(map_func, cycle_length=1, block_length=1)

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
            warnings.warn("The `deterministic` argument has no effect unless the "
                          "`num_parallel_calls` argument is specified.", stacklevel=2)
        return _BatchDataset(self, batch_size, bool(drop_remainder), parallelism, deterministic)

    def prefetch(self, buffer_size, name=None):
        """Produce up to `buffer_size` elements ahead on a background thread (``AUTOTUNE``: adaptive)."""
        buffer_size = _check_count(buffer_size, "buffer_size")
        if buffer_size < AUTOTUNE:
            raise _errors.InvalidArgumentError(
                f"buffer_size must be >= 0 or AUTOTUNE (-1), got {buffer_size}.")
        return _UnaryDataset(self, "prefetch", buffer_size)

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
        return _ShuffleDataset(self, buffer_size, seed or 0, seed2 or 0, reshuffle)

    def take(self, count, name=None):
        """The first `count` elements (all of them when `count` is -1 or larger than the dataset)."""
        return _UnaryDataset(self, "take", _check_count(count, "count"))

    def skip(self, count, name=None):
        """All but the first `count` elements (none when `count` is -1)."""
        return _UnaryDataset(self, "skip", _check_count(count, "count"))

    def repeat(self, count=None, name=None):
        """Repeat the dataset `count` times (None or -1: forever); each pass re-runs the input."""
        return _UnaryDataset(self, "repeat", _check_count(count, "count", allow_none=True))

    def ignore_errors(self, log_warning=False, name=None):
        """Drop the elements whose production raised an error, and go on.

        As in tf.data, this drops a failed map call's element, a corrupt
        record (and, for record files, the rest of that file), ... With
        `log_warning`, each dropped error is printed to stderr.
        """
        return _IgnoreErrorsDataset(self, bool(log_warning))

    def cache(self, filename="", name=None):
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
        structure or dtype raises ``InvalidArgumentError``, a truncated or
        damaged one ``DataLossError``: delete it to compute the cache again.

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
        return _CacheDataset(self, filename)

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
        return _OptionsDataset(self, options)

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
        return _FilterDataset(self, predicate)

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
        return _ZipDataset(datasets)

    def concatenate(self, dataset, name=None):
        """All elements of this dataset, then all elements of `dataset`.

        Both must have the same structure and dtypes; the element spec is the
        most specific one both fit (shapes ``[3]`` and ``[4]`` give
        ``[None]``). Otherwise ``TypeError``, as in tf.data.
        """
        if not isinstance(dataset, Dataset):
            raise TypeError(f"`dataset` must be a Dataset, got {type(dataset).__name__}.")
        return _ConcatenateDataset(self, dataset)

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
        return _ShardDataset(self, num_shards, index)

    def unbatch(self, name=None):
        """Split each element along its first dimension into that many elements.

        Every component needs rank >= 1 (``ValueError`` otherwise) and, in
        each element, the same first dimension (``InvalidArgumentError`` at
        that element otherwise). The rows share the batch's memory.
        """
        return _UnbatchDataset(self)

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
        return _RebatchDataset(self, sizes, bool(drop_remainder))

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
        return _PaddedBatchDataset(self, batch_size, padded_shapes, padding_values,
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
        handle = _engine.random(seed or 0, seed2 or 0, bool(rerandomize_each_iteration))
        return _SourceDataset(handle, TensorSpec([], _dtypes.int64))

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
        return _WindowDataset(self, size, shift, stride, bool(drop_remainder))

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
        grouped = _GroupWindowsDataset(self, key_func, window_size, window_size_func)
        return _GroupByWindowDataset(grouped, reduce_func)

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


# -- sources ------------------------------------------------------------------


class _SourceDataset(Dataset):
    """A source whose engine dataset does not depend on options."""

    def __init__(self, handle, spec):
        super().__init__()
        self._handle = handle
        self._spec = spec

    def _build(self, ctx, engine_inputs):
        return self._handle

    def _derive_spec(self):
        return self._spec


class _TensorSliceDataset(_SourceDataset):
    def __init__(self, tensors):
        flat = nest.flatten(tensors)
        if nest.is_nested(tensors) and not flat:
            raise _errors.InvalidArgumentError("Invalid `element`. `element` should not be empty.")
        arrays = [to_array(x) for x in flat]
        paths = _leaf_paths(tensors)
        for path, a in zip(paths, arrays):
            if a.ndim == 0:
                raise ValueError(f"Unbatching a tensor is only supported for rank >= 1, but "
                                 f"{path} is a scalar.")
        sizes = {a.shape[0] for a in arrays}
        if len(sizes) > 1:
            detail = ", ".join(f"{p} has {a.shape[0]}" for p, a in zip(paths, arrays))
            raise ValueError("from_tensor_slices: all components must have the same size in "
                             f"dimension 0, but {detail}.")
        spec = nest.pack_sequence_as(
            tensors, [TensorSpec(a.shape[1:], _dtypes.as_dtype(a.dtype)) for a in arrays])
        super().__init__(_engine.tensor_slices(arrays), spec)


class _TensorDataset(_SourceDataset):
    def __init__(self, tensors):
        flat = nest.flatten(tensors)
        if nest.is_nested(tensors) and not flat:
            raise _errors.InvalidArgumentError("Invalid `element`. `element` should not be empty.")
        arrays = [to_array(x) for x in flat]
        spec = nest.pack_sequence_as(tensors, [spec_of(a) for a in arrays])
        super().__init__(_engine.tensors(arrays), spec)


class _RangeDataset(_SourceDataset):
    def __init__(self, args, output_type):
        if not 1 <= len(args) <= 3:
            raise ValueError(f"Invalid `args`. The length of `args` should be between 1 and 3 "
                             f"but was {len(args)}.")
        try:
            args = [operator.index(a) for a in args]
        except TypeError:
            raise TypeError(f"range() arguments must be integers, got {args!r}.") from None
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (
            (args[0], args[1], 1) if len(args) == 2 else tuple(args))
        dtype = _dtypes.as_dtype(output_type)
        if dtype == _dtypes.string or dtype == _dtypes.bool or dtype == _dtypes.float16:
            raise TypeError(f"range: output_type must be an integer or float32/float64 type, "
                            f"got {dtype!r}.")
        if step == 0:
            raise _errors.InvalidArgumentError("step must be a non-zero integer.")
        super().__init__(_engine.range(start, stop, step, dtype._code), TensorSpec([], dtype))


def _signature_from_types(output_types, output_shapes):
    if output_shapes is None:
        output_shapes = nest.map_structure(lambda _: None, output_types)
    if not nest.is_nested(output_types):
        return TensorSpec(output_shapes, output_types)
    flat_types = nest.flatten(output_types)
    flat_shapes = nest.flatten_up_to(output_types, output_shapes) if nest.is_nested(
        output_shapes) else [output_shapes] * len(flat_types)
    return nest.pack_sequence_as(
        output_types, [TensorSpec(s, t) for t, s in zip(flat_types, flat_shapes)])


class _GeneratorDataset(_SourceDataset):
    def __init__(self, generator, output_types, output_shapes, args, output_signature):
        if not callable(generator):
            raise TypeError("`generator` must be a Python callable.")
        if output_signature is not None:
            if output_types is not None:
                raise TypeError("The `output_types` argument can not be used together with the "
                                "`output_signature` argument.")
            if output_shapes is not None:
                raise TypeError("The `output_shapes` argument can not be used together with the "
                                "`output_signature` argument.")
            for spec in nest.flatten(output_signature):
                if not isinstance(spec, TensorSpec):
                    raise TypeError(f"`output_signature` must contain TensorSpec objects, got {spec!r}.")
            signature = output_signature
        else:
            if output_types is None:
                if output_shapes is not None:
                    raise TypeError("The `output_shapes` argument must not be specified without "
                                    "the `output_types` argument.")
                raise TypeError("Either `output_signature` or `output_types` must be specified.")
            signature = _signature_from_types(output_types, output_shapes)
        args = tuple(to_array(a) for a in (args or ()))
        call_args = [a.item() if a.dtype == object and a.ndim == 0 else a for a in args]

        def factory():
            return _CheckedGenerator(generator(*call_args), signature)

        super().__init__(_engine.generator(factory, "Dataset.from_generator"), signature)


class _CheckedGenerator:
    """Checks each value the user's generator yields against the signature and
    converts it to flat arrays. A bad value raises at its element; the
    generator itself goes on, as tf.data's does."""

    def __init__(self, iterator, signature):
        self._iterator = iter(iterator)
        self._signature = signature
        self._flat_specs = nest.flatten(signature)

    def __iter__(self):
        return self

    def __next__(self):
        return _check_generated(next(self._iterator), self._signature, self._flat_specs)


def _check_generated(value, signature, flat_specs):
    if type(value) is list and nest.is_nested(signature):
        value = tuple(value)
    try:
        flat = nest.flatten_up_to(signature, value)
    except (ValueError, TypeError):
        raise _errors.InvalidArgumentError(
            "`generator` yielded an element that did not match the expected structure. The "
            f"expected structure was {signature}, but the yielded element was {value}.") from None
    out = []
    for spec, leaf in zip(flat_specs, flat):
        try:
            arr = to_array(leaf, spec.dtype)
        except (ValueError, TypeError, OverflowError):
            raise _errors.InvalidArgumentError(
                "`generator` yielded an element that could not be converted to the expected type. "
                f"The expected type was {spec.dtype.name}, but the yielded element was {leaf}."
            ) from None
        if not spec.shape.is_compatible_with(arr.shape):
            raise _errors.InvalidArgumentError(
                f"`generator` yielded an element of shape {TensorShape(arr.shape)} where an "
                f"element of shape {spec.shape} was expected.")
        out.append(arr)
    return out


# -- transformations ------------------------------------------------------------


class _UnaryDataset(Dataset):
    """prefetch / take / skip / repeat: one input, one count, same element spec."""

    def __init__(self, input_dataset, op, count):
        super().__init__([input_dataset])
        self._op = op  # the name of the engine constructor: take, skip, repeat, prefetch
        self._count = count

    def _build(self, ctx, engine_inputs):
        if self._op == "prefetch":  # buffers: charges the pipeline's RAM budget
            return _engine.prefetch(engine_inputs[0], self._count, ctx.memory)
        return getattr(_engine, self._op)(engine_inputs[0], self._count)

    def _derive_spec(self):
        return self._inputs[0].element_spec

    def _known_spec(self):
        return self._inputs[0]._known_spec()


class _IgnoreErrorsDataset(_UnaryDataset):
    def __init__(self, input_dataset, log_warning):
        Dataset.__init__(self, [input_dataset])
        self._log_warning = log_warning

    def _build(self, ctx, engine_inputs):
        return _engine.ignore_errors(engine_inputs[0], self._log_warning)


class _ShuffleDataset(_UnaryDataset):
    def __init__(self, input_dataset, buffer_size, seed, seed2, reshuffle):
        Dataset.__init__(self, [input_dataset])
        self._args = (buffer_size, seed, seed2, reshuffle)

    def _build(self, ctx, engine_inputs):
        # Built once per build context and cached: iterators share the seed generator.
        return _engine.shuffle(engine_inputs[0], *self._args, ctx.memory)


class _OptionsDataset(_UnaryDataset):
    def __init__(self, input_dataset, options):
        Dataset.__init__(self, [input_dataset])
        self._options = options
        # One engine RAM budget per with_options() call that sets one: every
        # stage under it (and every iterator open over it) charges it.
        ram_budget = options.autotune.ram_budget
        if ram_budget is None:
            self._memory = _UNSET
        else:
            ram_budget = _check_budget(ram_budget, "ram_budget")
            self._memory = _engine.memory_budget(ram_budget) if ram_budget else None
        _check_budget(options.autotune.cpu_budget, "cpu_budget")

    def _ram_budget(self):
        return super()._ram_budget() if self._memory is _UNSET else self._memory

    def _build(self, ctx, engine_inputs):
        return engine_inputs[0]

    def options(self):
        return super().options().merge(self._options)


class _BatchDataset(Dataset):
    def __init__(self, input_dataset, batch_size, drop_remainder, parallelism, deterministic):
        super().__init__([input_dataset])
        self._batch_size = batch_size
        self._drop_remainder = drop_remainder
        self._parallelism = parallelism
        self._deterministic = deterministic

    def _build(self, ctx, engine_inputs):
        deterministic = ctx.deterministic if self._deterministic is None else self._deterministic
        parallelism = self._parallelism
        if not parallelism and ctx.parallel_batch:
            # tf.data's default parallel_batch optimization: the copying into
            # batches runs on worker threads, in order (results never change).
            parallelism, deterministic = ctx.cpus(), True
        return _engine.batch(engine_inputs[0], self._batch_size, self._drop_remainder,
                             ctx.parallelism(parallelism), deterministic, ctx.memory)

    def _batched(self, spec):
        dim = self._batch_size if self._drop_remainder else None
        return nest.map_structure(
            lambda s: TensorSpec(TensorShape([dim]).concatenate(s.shape), s.dtype), spec)

    def _derive_spec(self):
        return self._batched(self._inputs[0].element_spec)

    def _known_spec(self):
        spec = self._inputs[0]._known_spec()
        return None if spec is None else self._batched(spec)


class _MapFunction:
    """The engine's view of a user map function.

    It is traced once on symbolic placeholders (conveyor/_tracing.py): when
    every output comes from conveyor ops, the engine gets a compiled native
    program (mode "native": no GIL, exact output spec). Otherwise (mode
    "python") the engine calls it per element as fn(epoch, index, *components)
    under the GIL; `convert` turns each result into a flat list of arrays,
    recording the output structure from the first call and checking later
    ones against it. filter's predicate is one too (stage "Dataset.filter").
    """

    def __init__(self, map_func, input_dataset, stage="Dataset.map", what="map function"):
        self.map_func = map_func
        self.input_dataset = input_dataset
        self.stage = stage
        self.what = what  # how messages name it: "map function", "predicate"
        self.spec = None  # nested TensorSpec: from the trace, or from the first Python result
        self.flat_specs = None
        self.mode = None      # "native" or "python", once resolved
        self.reason = None    # why a function runs in Python
        self.program = None
        self.base_seed = None
        self._lock = threading.Lock()
        if input_dataset._known_spec() is not None:
            self.resolve()  # trace now, so type errors show where the pipeline is built

    @property
    def name(self):
        return f"{self.stage}({getattr(self.map_func, '__name__', type(self.map_func).__name__)})"

    def _pack(self, spec):
        if _structure_kind(spec)[0] in (0, 1):
            return lambda flat: flat  # components are the positional arguments already
        return lambda flat: ((lambda e: e if type(e) is tuple else (e,))(
            _pack_element(spec, flat)))

    def resolve(self):
        """Trace the function (once): decide native or Python mode."""
        if self.mode is not None:
            return
        spec = self.input_dataset.element_spec
        if _tracing.debug_mode():
            self.mode, self.reason = "python", "debug mode is on"
            self.base_seed = _tracing.new_base_seed()
            return
        if _has_datasets(spec):  # windows: the function gets datasets, which do not trace
            self.mode, self.reason = "python", "its input elements hold datasets"
            self.base_seed = _tracing.new_base_seed()
            return
        try:
            program, result, specs, seed = _tracing.trace(
                self.map_func, nest.flatten(spec), self._pack(spec), self.name)
        except _tracing.UntraceableError as e:
            self.mode, self.reason = "python", str(e)
            self.base_seed = _tracing.new_base_seed()
            if not e.quiet:
                _tracing.warn_untraceable(self.map_func, self.name, self.reason)
            return
        self.program, self.base_seed = program, seed
        self.flat_specs = specs
        self.spec = nest.pack_sequence_as(result, specs)
        self.mode = "native"

    def function_for_engine(self):
        """(fn, with_id): the compiled program, or a Python callable taking
        (epoch, index, *components) whose random ops draw what the traced
        program would."""
        self.resolve()
        if self.mode == "native":
            return self.program, False
        map_func, pack = self.map_func, self._pack(self.input_dataset.element_spec)
        base_seed = self.base_seed

        def call(epoch, index, *flat):
            with _tracing.element_scope(base_seed, epoch, index):
                return map_func(*pack(flat))
        return call, True

    def convert(self, result):
        if type(result) is list:
            result = tuple(result)
        flat = nest.flatten(result)
        arrays = [to_array(x) for x in flat]
        if self.spec is None:
            with self._lock:
                if self.spec is None:
                    # A Python function's output shapes are not static: only the rank and
                    # dtype of its first result are taken (dims unknown), so the spec
                    # never claims more than later elements keep.
                    self.flat_specs = [TensorSpec([None] * a.ndim, _dtypes.as_dtype(a.dtype))
                                       for a in arrays]
                    self._np_dtypes = [a.dtype if a.dtype != object else None for a in arrays]
                    self._structure_key = nest.structure_key(result)
                    self.spec = nest.pack_sequence_as(result, self.flat_specs)
                    return arrays
        if nest.structure_key(result) != self._structure_key:
            raise _errors.InvalidArgumentError(
                f"the {self.what} returned an element whose structure differs from its first "
                f"result: expected {self.spec}, got {result!r}")
        for i, (expected, arr) in enumerate(zip(self._np_dtypes, arrays)):
            if arr.dtype != expected and (expected is not None or arr.dtype != object):
                raise _errors.InvalidArgumentError(
                    f"the {self.what} returned {_dtypes.as_dtype(arr.dtype).name} for component "
                    f"{i}, but its first result had {self.flat_specs[i].dtype.name}; return a "
                    f"consistent dtype (e.g. with np.asarray(x, dtype=...)).")
        return arrays


class _MapDataset(Dataset):
    def __init__(self, input_dataset, map_func, parallelism, deterministic):
        super().__init__([input_dataset])
        self._function = _MapFunction(map_func, input_dataset)
        self._parallelism = parallelism
        self._deterministic = deterministic

    def _build(self, ctx, engine_inputs):
        deterministic = ctx.deterministic if self._deterministic is None else self._deterministic
        fn, with_id = self._function.function_for_engine()
        parallelism = 0 if _tracing.debug_mode() else ctx.parallelism(self._parallelism)
        return _engine.map(engine_inputs[0], fn, self._function.convert, parallelism,
                           deterministic, self._function.name, with_id, ctx.memory)

    def _known_spec(self):
        return self._function.spec

    def _derive_spec(self):
        self._function.resolve()
        if self._function.spec is None:
            # The function is Python: its output structure is known once it has run.
            # Run it on the first input element (as tracing would run it once).
            probe = self._engine(self._context())
            it = _engine.take(probe, 1).make_iterator(lambda: (1, None))
            for _ in it:
                pass
            if self._function.spec is None:
                raise ValueError("Cannot infer the element_spec of this Dataset.map: its input "
                                 "produced no element, and the output structure of a Python "
                                 "function is known only once it has run.")
        return self._function.spec

    def __repr__(self):
        # mode: how the function runs: "native" (a compiled program, no GIL) or
        # "python" (per element, under the GIL), with the reason.
        f = self._function
        mode = f.mode or "untraced"
        if f.mode == "python":
            mode += f" ({f.reason})"
        return (f"<MapDataset mode={mode} num_parallel_calls={self._parallelism or None} "
                f"element_spec={self._known_spec()!r}>")


def _calling_convention(map_func, input_dataset):
    """A callable taking the flat components of an element and calling `map_func`
    as tf.data does: a tuple element is unpacked into positional arguments; a
    dict, namedtuple or single tensor is passed as one argument."""
    spec = input_dataset._known_spec()
    if spec is not None and _structure_kind(spec)[0] in (0, 1):
        return map_func  # components are the positional arguments already

    def call(*flat):
        element = _pack_element(input_dataset.element_spec, flat)
        return map_func(*element) if type(element) is tuple else map_func(element)
    return call


class _InterleaveDataset(Dataset):
    def __init__(self, input_dataset, map_func, cycle_length, block_length, parallelism,
                 deterministic):
        super().__init__([input_dataset])
        self._map_func = map_func
        self._cycle_length = cycle_length
        self._block_length = block_length
        self._parallelism = parallelism
        self._deterministic = deterministic
        self._first_inner = None  # the first inner Dataset map_func returned: the element spec

    def _inner_dataset(self, result):
        if not isinstance(result, Dataset):
            raise TypeError("`map_func` must return a `Dataset` object, got "
                            f"{type(result).__name__}.")
        if self._first_inner is None:
            self._first_inner = result
        else:
            first, spec = self._first_inner._known_spec(), result._known_spec()
            if first is not None and spec is not None:
                try:
                    nest.assert_same_structure(first, spec)
                    same = all(a.dtype == b.dtype for a, b in
                               zip(nest.flatten(first), nest.flatten(spec)))
                except (ValueError, TypeError):
                    same = False
                if not same:
                    raise _errors.InvalidArgumentError(
                        f"`map_func` returned datasets of different element types: {first} "
                        f"and then {spec}.")
        return result

    def _resolved(self, ctx):
        """(cycle_length, workers) for this machine, with tf.data's AUTOTUNE rules."""
        cpus = ctx.cpus()
        cycle, parallelism = self._cycle_length, self._parallelism
        if not parallelism:
            return (cpus if cycle == AUTOTUNE else cycle), 0
        if cycle == AUTOTUNE:
            cycle = -(-cpus // 3) if parallelism == AUTOTUNE else min(parallelism, cpus)
        if parallelism == AUTOTUNE:
            workers = cycle + min(2 * cycle, 8)  # the current and the future inner datasets
        else:
            workers = parallelism
        if ctx.max_threads:
            workers = min(workers, ctx.max_threads)
        return cycle, min(workers, 64)

    def _build(self, ctx, engine_inputs):
        call = _calling_convention(self._map_func, self._inputs[0])

        def make_inner(*components):
            return self._inner_dataset(call(*components))._engine(ctx)

        cycle, workers = self._resolved(ctx)
        deterministic = ctx.deterministic if self._deterministic is None else self._deterministic
        return _engine.interleave(engine_inputs[0], make_inner, cycle, self._block_length, workers,
                                  deterministic, "Dataset.interleave", ctx.memory)

    def cardinality(self):
        return _Cardinality(UNKNOWN_CARDINALITY)

    def _known_spec(self):
        return None if self._first_inner is None else self._first_inner._known_spec()

    def _derive_spec(self):
        if self._first_inner is None:
            # map_func is Python: its datasets are known once it has run. Run it on the
            # first input element (as tracing would run it once).
            probe = _engine.take(self._inputs[0]._engine(self._context()), 1)
            for components in probe.make_iterator(lambda: (1, None)):
                self._inner_dataset(_calling_convention(self._map_func, self._inputs[0])(*components))
            if self._first_inner is None:
                raise ValueError("Cannot infer the element_spec of this Dataset.interleave: its "
                                 "input produced no element, and the datasets of a Python "
                                 "`map_func` are known only once it has run.")
        return self._first_inner.element_spec


# -- filter, zip, concatenate, shard, unbatch, rebatch, padded_batch ------------


def _check_predicate_spec(spec):
    """A predicate's output spec must be one scalar bool (checked at build time
    when the spec is known statically)."""
    if not (isinstance(spec, TensorSpec) and spec.dtype == _dtypes.bool and spec.shape.rank == 0):
        raise ValueError("Invalid `predicate`. `predicate` must return a `tf.bool` scalar tensor, "
                         f"but its return type is {spec}.")


class _FilterDataset(_UnaryDataset):
    """The predicate goes to the engine through ``_MapFunction``, as a map
    function does: traced to a native program when it can be, else called per
    element in Python, with the same calling convention and result conversion."""

    def __init__(self, input_dataset, predicate):
        Dataset.__init__(self, [input_dataset])
        self._function = _MapFunction(predicate, input_dataset, stage="Dataset.filter",
                                      what="predicate")
        self._check_traced_spec()

    def _check_traced_spec(self):
        # A traced predicate's return type is static: checked where the pipeline
        # is built (ValueError, as in tf.data). A Python predicate's results are
        # checked per element by the engine.
        if self._function.mode == "native":
            _check_predicate_spec(self._function.spec)

    def _build(self, ctx, engine_inputs):
        fn, with_id = self._function.function_for_engine()
        self._check_traced_spec()
        return _engine.filter(engine_inputs[0], fn, self._function.convert, self._function.name,
                              with_id)

    def cardinality(self):
        return _Cardinality(UNKNOWN_CARDINALITY)

    def __repr__(self):
        f = self._function
        mode = f.mode or "untraced"
        if f.mode == "python":
            mode += f" ({f.reason})"
        return f"<FilterDataset mode={mode} element_spec={self._known_spec()!r}>"


class _ZipDataset(Dataset):
    def __init__(self, datasets):
        flat = nest.flatten(datasets)
        for ds in flat:
            if not isinstance(ds, Dataset):
                if isinstance(ds, list):
                    raise TypeError("Invalid input to `zip`. Inputs are expected to be (nested) "
                                    "structures of `tf.data.Dataset` objects. Python `list` is not "
                                    "supported and you should use `tuple` instead.")
                raise TypeError("Invalid input to `zip`. Inputs are expected to be (nested) "
                                "structures of `tf.data.Dataset` objects but encountered object "
                                f"of type {type(ds)}.")
        if not flat:
            raise _errors.InvalidArgumentError("Invalid input to `zip`: the structure of datasets "
                                               "is empty; pass at least one dataset.")
        super().__init__(flat)
        self._datasets = datasets

    def _build(self, ctx, engine_inputs):
        return _engine.zip(engine_inputs)

    def _derive_spec(self):
        return nest.pack_sequence_as(self._datasets, [d.element_spec for d in self._inputs])

    def _known_spec(self):
        specs = [d._known_spec() for d in self._inputs]
        if any(s is None for s in specs):
            return None
        return nest.pack_sequence_as(self._datasets, specs)


def _common_spec(a, b):
    """The most specific element spec both `a` and `b` fit, or TypeError."""
    try:
        if nest.structure_key(a) != nest.structure_key(b):
            raise TypeError("different structures")
        return nest.map_structure(lambda x, y: x.most_specific_compatible_type(y), a, b)
    except (TypeError, ValueError) as e:
        raise TypeError(f"Incompatible dataset elements:\n  {a} vs.   {b}") from e


class _ConcatenateDataset(Dataset):
    def __init__(self, input_dataset, dataset):
        super().__init__([input_dataset, dataset])
        self._spec = None
        self._known_spec()  # incompatible specs raise now when both are known

    def _build(self, ctx, engine_inputs):
        self._known_spec()  # incompatible known specs raise before anything runs
        return _engine.concatenate(engine_inputs)

    def _packing(self):
        spec = self._known_spec()
        for i in self._inputs:
            spec = i._known_spec() if spec is None else spec
        # Both inputs share one structure. With Python maps on both sides, the one
        # that produced the first element knows its spec; the other is not probed
        # here (its first element may fail, and must fail in its turn).
        return _structure_kind(self.element_spec if spec is None else spec)

    def _derive_spec(self):
        if self._spec is None:
            self._spec = _common_spec(self._inputs[0].element_spec, self._inputs[1].element_spec)
        return self._spec

    def _known_spec(self):
        if self._spec is None:
            a, b = self._inputs[0]._known_spec(), self._inputs[1]._known_spec()
            if a is not None and b is not None:
                self._spec = _common_spec(a, b)
        return self._spec


class _ShardDataset(_UnaryDataset):
    def __init__(self, input_dataset, num_shards, index):
        Dataset.__init__(self, [input_dataset])
        self._args = (num_shards, index)

    def _build(self, ctx, engine_inputs):
        return _engine.shard(engine_inputs[0], *self._args)


class _SpecDerivedDataset(Dataset):
    """A one-input dataset whose element spec (and engine arguments) follow from
    its input's spec: resolved at construction when the input spec is known, else
    (a Python map upstream) when first iterated or asked for its element_spec,
    so that building the pipeline runs no user code."""

    def __init__(self, input_dataset):
        super().__init__([input_dataset])
        self._spec = None
        spec = input_dataset._known_spec()
        if spec is not None:
            self._spec = self._resolve(spec)

    def _resolve(self, input_spec):  # pragma: no cover - abstract
        raise NotImplementedError

    def _derive_spec(self):
        if self._spec is None:
            self._spec = self._resolve(self._inputs[0].element_spec)
        return self._spec

    def _known_spec(self):
        return self._spec


class _UnbatchDataset(_SpecDerivedDataset):
    def _resolve(self, spec):
        flat = nest.flatten(spec)
        if any(s.shape.rank == 0 for s in flat):
            raise ValueError("Cannot unbatch an input with scalar components.")
        known = None
        self._static_batch = -1  # tf.data: the first known leading dimension, for cardinality
        for s in flat:
            dim = s.shape[0]
            if dim is not None and self._static_batch < 0 and s.shape.rank is not None:
                self._static_batch = dim
            if known is not None and dim is not None and dim != known:
                raise ValueError("`unbatch()` is only supported for datasets of elements whose "
                                 "components have a matching leading dimension. Encountered both "
                                 f"{known} and {dim}.")
            known = dim if dim is not None else known
        return nest.map_structure(lambda s: TensorSpec(s.shape[1:], s.dtype), spec)

    def _build(self, ctx, engine_inputs):
        # Without a known spec (a Python map upstream that has not run) the engine
        # checks each element, and the count is unknown.
        static_batch = -1 if self._spec is None else self._static_batch
        return _engine.unbatch(engine_inputs[0], static_batch)


def _zero_rows(spec):
    """An array with no rows in the shape of a batch of `spec` (unknown dims: 0)."""
    dims = [0] + [d or 0 for d in (spec.shape.dims or [])[1:]]
    if spec.dtype == _dtypes.string:
        return to_array(np.empty(dims, dtype=object), _dtypes.string)
    return np.zeros(dims, dtype=spec.dtype.as_numpy_dtype)


class _RebatchDataset(_SpecDerivedDataset):
    def __init__(self, input_dataset, sizes, drop_remainder):
        self._sizes = sizes
        self._drop_remainder = drop_remainder
        super().__init__(input_dataset)

    def _static_batch_dim(self, spec):
        """tf.data's static batch dimension: the common size, unless a partial
        batch may form."""
        dim = self._sizes[0] if all(s == self._sizes[0] for s in self._sizes) else None
        if dim is None or self._drop_remainder:
            return dim
        known = []
        for s in nest.flatten(spec):
            if s.shape.rank is None:
                continue
            if s.shape.rank < 1:
                raise ValueError("Invalid `batch_sizes`. Expected dataset with rank of >= 1 but "
                                 "found a dataset with scalar elements. Fix the issue by adding "
                                 "the `batch` transformation to the dataset.")
            if s.shape[0] is not None:
                known.append(s.shape[0])
        if not known:
            return None
        if any(k != known[0] for k in known):
            raise ValueError(f"Invalid `input_dataset.` The batch dimension of component 0 is "
                             f"{known[0]}, while the batch dimension of component i is {known}.")
        return dim if dim == 0 or known[0] % dim == 0 else None

    def _resolve(self, spec):
        dim = self._static_batch_dim(spec)

        def rebatched(s):
            if s.shape.rank == 0:
                raise ValueError("Unbatching a tensor is only supported for rank >= 1")
            return TensorSpec(TensorShape([dim]).concatenate(s.shape[1:]), s.dtype)
        return nest.map_structure(rebatched, spec)

    def _build(self, ctx, engine_inputs):
        # The spec is needed only for the empty batches of size 0; the engine
        # checks each input element itself.
        empty = [_zero_rows(s) for s in nest.flatten(self._derive_spec())] if 0 in self._sizes else []
        return _engine.rebatch(engine_inputs[0], self._sizes, self._drop_remainder, empty)

    def cardinality(self):
        return _Cardinality(UNKNOWN_CARDINALITY)


def _padded_shape(value, input_shape):
    """`value` (an int, a list of ints/None/-1, a TensorShape or an int vector) as a
    TensorShape of known rank that `input_shape` can be padded to."""
    if isinstance(value, TensorShape):
        dims = value.dims
        if dims is None:
            raise ValueError("A padded shape must have a known rank.")
    else:
        def is_dim(d):
            return d is None or (isinstance(d, (int, np.integer)) and not isinstance(d, bool))
        if is_dim(value) and value is not None:
            value = [value]
        if isinstance(value, (list, tuple)) and all(is_dim(d) for d in value):
            dims = [-1 if d is None else int(d) for d in value]
        else:
            arr = np.asarray(value)
            if arr.ndim != 1:
                raise ValueError(f"Padded shape {value} must be a `tf.int64` vector tensor, but "
                                 f"its shape was {TensorShape(arr.shape)}.")
            if arr.dtype.kind not in "iu":
                raise TypeError(f"Padded shape {value} must be a `tf.int64` vector tensor, but its "
                                f"element type was {arr.dtype}.")
            dims = [int(d) for d in arr]
        for d in dims:
            if d is not None and d < -1:
                raise ValueError(f"Dimension {d} must be >= 0")
    shape = TensorShape(dims)
    if input_shape.rank is not None and (shape.rank != input_shape.rank or any(
            p is not None and i is not None and p < i for p, i in zip(shape, input_shape))):
        raise ValueError(f"The padded shape {shape} is not compatible with the shape "
                         f"{input_shape} of the corresponding input component.")
    return shape


def _padding_value(value, spec):
    arr = to_array(value)
    if arr.ndim != 0:
        raise ValueError("Invalid `padding_values`. `padding_values` values should be scalars, "
                         f"but got {TensorShape(arr.shape)}.")
    dtype = _dtypes.as_dtype(arr.dtype)
    if dtype != spec.dtype:
        raise TypeError(f"Invalid `padding_values`. `padding_values` values type {dtype.name} does "
                        f"not match type {spec.dtype.name} of the corresponding input component.")
    return arr


class _PaddedBatchDataset(_SpecDerivedDataset):
    def __init__(self, input_dataset, batch_size, padded_shapes, padding_values, drop_remainder):
        self._batch_size = batch_size
        self._padded_shapes = padded_shapes
        self._padding_values = padding_values
        self._drop_remainder = drop_remainder
        super().__init__(input_dataset)

    def _resolve(self, spec):
        flat = nest.flatten(spec)
        for s in flat:
            if not isinstance(s, TensorSpec):
                raise TypeError("`padded_batch` is only supported for datasets that produce tensor "
                                f"elements, got `{s}`.")
        if self._padded_shapes is None:
            for i, s in enumerate(flat):
                if s.shape.rank is None:
                    raise ValueError("You must provide `padded_shapes` argument because component "
                                     f"{i} has unknown rank.")
            wanted = [s.shape for s in flat]
        else:
            wanted = nest.flatten_up_to(spec, self._padded_shapes)
        shapes = [_padded_shape(w, s.shape) for w, s in zip(wanted, flat)]
        values = self._padding_values
        if values is None:
            values = [None] * len(flat)
        elif nest.is_nested(spec) and not nest.is_nested(values):
            values = [values] * len(flat)
        else:
            values = nest.flatten_up_to(spec, values)
        defaults = [b"" if s.dtype == _dtypes.string else np.zeros((), s.dtype.as_numpy_dtype)
                    for s in flat]
        self._flat_shapes = [np.array([-1 if d is None else d for d in shape], dtype=np.int64)
                             for shape in shapes]
        self._flat_values = [_padding_value(d if v is None else v, s)
                             for v, d, s in zip(values, defaults, flat)]
        dim = self._batch_size if self._drop_remainder else None
        return nest.pack_sequence_as(spec, [TensorSpec(TensorShape([dim]).concatenate(shape),
                                                       s.dtype) for shape, s in zip(shapes, flat)])

    def _build(self, ctx, engine_inputs):
        self._derive_spec()
        return _engine.padded_batch(engine_inputs[0], self._batch_size, self._flat_shapes,
                                    self._flat_values, self._drop_remainder)
# -- datasets of datasets: choose, sample, window, group_by_window --------------------


class DatasetSpec:
    """The type of a dataset-valued component (a window), as ``tf.data.DatasetSpec``."""

    __slots__ = ("_element_spec", "_dataset_shape")

    def __init__(self, element_spec, dataset_shape=()):
        self._element_spec = element_spec
        self._dataset_shape = TensorShape(dataset_shape)

    @property
    def element_spec(self):
        """The element spec of the datasets this describes."""
        return self._element_spec

    @property
    def value_type(self):
        return Dataset

    @staticmethod
    def from_value(value):
        """The spec of a Dataset."""
        return DatasetSpec(value.element_spec)

    def __eq__(self, other):
        return (isinstance(other, DatasetSpec) and self._dataset_shape == other._dataset_shape
                and nest.structure_key(self._element_spec) == nest.structure_key(other._element_spec)
                and nest.flatten(self._element_spec) == nest.flatten(other._element_spec))

    def __hash__(self):
        return hash((nest.structure_key(self._element_spec),
                     tuple(nest.flatten(self._element_spec)), self._dataset_shape))

    def __repr__(self):
        return f"DatasetSpec({self._element_spec!r}, {self._dataset_shape!r})"


def _has_datasets(spec):
    return any(isinstance(s, DatasetSpec) for s in nest.flatten(spec))


def _ragged_mask(spec):
    """Which components of a window travel ragged (values + shapes, core/rows.h):
    those whose static shape is not fully known, so their rows may differ."""
    return [not s.shape.is_fully_defined() for s in nest.flatten(spec)]


def _check_windowable(spec, what):
    for s in nest.flatten(spec):
        if not isinstance(s, TensorSpec):
            raise TypeError(f"{what} of a dataset whose elements contain {s!r} is not supported: "
                            "its components must be tensors.")


def _pack_element(spec, flat):
    """Flat engine components -> the element: DatasetSpec components (windows)
    are read from their packed tensors into datasets."""
    if not _has_datasets(spec):
        return nest.pack_sequence_as(spec, flat)
    leaves, pos = [], 0
    for s in nest.flatten(spec):
        if isinstance(s, DatasetSpec):
            mask = _ragged_mask(s.element_spec)
            width = len(mask) + sum(mask)
            leaves.append(_WindowElementsDataset(s.element_spec, flat[pos:pos + width], mask))
            pos += width
        else:
            leaves.append(flat[pos])
            pos += 1
    return nest.pack_sequence_as(spec, leaves)


class _WindowElementsDataset(_SourceDataset):
    """The elements of one window: views of the tensors the engine packed."""

    def __init__(self, spec, packed, mask):
        super().__init__(_engine.window_source(list(packed), mask), spec)


def _empty_window(spec):
    """A window dataset with no elements (to learn what a reduce function builds)."""
    packed = []
    for s in nest.flatten(spec):
        dtype = s.dtype.as_numpy_dtype if s.dtype != _dtypes.string else object
        if s.shape.is_fully_defined():
            packed.append(np.zeros([0] + s.shape.as_list(), dtype=dtype))
        else:
            packed += [np.zeros([0], dtype=dtype), np.zeros([0, 1 + (s.shape.rank or 0)], np.int64)]
    return _WindowElementsDataset(spec, packed, _ragged_mask(spec))


def _choose_spec(datasets):
    """The most specific element spec every dataset's elements fit (TypeError if none)."""
    spec = datasets[0].element_spec

    def common(a, b):
        if isinstance(a, TensorSpec) and isinstance(b, TensorSpec):
            if a.dtype != b.dtype:
                raise TypeError(f"No common supertype of {a} and {b}.")
            return a.most_specific_compatible_type(b)
        if a == b:
            return a
        raise TypeError(f"No common supertype of {a} and {b}.")

    for i, d in enumerate(datasets[1:]):
        try:
            spec = nest.map_structure(common, spec, d.element_spec)
        except (TypeError, ValueError) as e:
            raise TypeError(f"Invalid `datasets`. `datasets` must have compatible element specs.\n"
                            f" Dataset 0 element_spec={datasets[0].element_spec}.\n"
                            f"Dataset {i + 1} element_spec={d.element_spec}.") from e
    return spec


class _DirectedInterleaveDataset(Dataset):
    def __init__(self, selector, datasets, stop_on_empty_dataset):
        super().__init__([selector] + list(datasets))
        self._stop = bool(stop_on_empty_dataset)
        self._spec = _choose_spec(list(datasets))

    def _build(self, ctx, engine_inputs):
        return _engine.choose(engine_inputs[0], list(engine_inputs[1:]), self._stop)

    def _derive_spec(self):
        return self._spec


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
    return _DirectedInterleaveDataset(choice_dataset, datasets, stop_on_empty_dataset)


class _SampleChoiceDataset(Dataset):
    """sample_from_datasets' picks: scalar int64 indices (kernels/sample_choice.c)."""

    def __init__(self, random, weights):
        self._weights = None if isinstance(weights, Dataset) else weights
        super().__init__([random] + ([weights] if isinstance(weights, Dataset) else []))

    def _build(self, ctx, engine_inputs):
        weights_dataset = engine_inputs[1] if len(engine_inputs) > 1 else None
        return _engine.sample_choice(engine_inputs[0], weights_dataset, self._weights)

    def _derive_spec(self):
        return TensorSpec([], _dtypes.int64)


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
    selector = _SampleChoiceDataset(
        Dataset.random(seed=seed, rerandomize_each_iteration=rerandomize), weights)
    return _DirectedInterleaveDataset(selector, datasets, stop_on_empty_dataset)


class _WindowDataset(Dataset):
    def __init__(self, input_dataset, size, shift, stride, drop_remainder):
        super().__init__([input_dataset])
        self._args = (size, shift, stride, drop_remainder)

    def _build(self, ctx, engine_inputs):
        spec = self._inputs[0].element_spec
        _check_windowable(spec, "window()")
        return _engine.window(engine_inputs[0], *self._args, _ragged_mask(spec))

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
            engine_inputs[0], _calling_convention(self._key_func, self._inputs[0]),
            lambda v: _int64_scalar(v, "key_func"), size_func,
            lambda v: _int64_scalar(v, "window_size_func"),
            0 if self._window_size is None else self._window_size, _ragged_mask(spec),
            "Dataset.group_by_window")

    def _derive_spec(self):
        return (TensorSpec([], _dtypes.int64), DatasetSpec(self._inputs[0].element_spec))

    def _known_spec(self):
        spec = self._inputs[0]._known_spec()
        return None if spec is None else (TensorSpec([], _dtypes.int64), DatasetSpec(spec))


class _GroupByWindowDataset(_InterleaveDataset):
    """flat_map of reduce_func over the (key, window) pairs."""

    def __init__(self, grouped, reduce_func):
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
        return _Cardinality(INFINITE_CARDINALITY if n == INFINITE_CARDINALITY
                            else UNKNOWN_CARDINALITY)

    # The datasets reduce_func returns may depend on the key (a batch size or a
    # padded length per bucket), so only structure, dtypes and ranks are taken
    # from one of them; dimensions are unknown, as for a Python map.

    def _known_spec(self):
        spec = super()._known_spec() or self._probe_spec
        return None if spec is None else _unknown_dims(spec)

    def _derive_spec(self):
        if self._first_inner is None and self._probe_spec is None:
            # What reduce_func builds from an empty window (as tf.data traces it
            # once); if that fails, fall back to running the first window.
            try:
                inner = self._inputs[0].element_spec[1].element_spec
                self._probe_spec = self._reduce(np.int64(0), _empty_window(inner)).element_spec
            except Exception:  # noqa: BLE001 - any failure: learn it from real data
                self._probe_spec = None
        if self._probe_spec is not None and self._first_inner is None:
            return _unknown_dims(self._probe_spec)
        return _unknown_dims(super()._derive_spec())


def _unknown_dims(spec):
    return nest.map_structure(
        lambda s: TensorSpec(None if s.shape.rank is None else [None] * s.shape.rank, s.dtype)
        if isinstance(s, TensorSpec) else s, spec)


_INT32_MIN, _INT32_MAX = -2 ** 31, 2 ** 31 - 1


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


# -- cache ----------------------------------------------------------------------


class CacheWarning(UserWarning):
    """``Dataset.cache`` discarded a partial pass, or could not write its file."""


_cache_progress = None  # None: auto (tqdm installed and stderr a terminal); see experimental
_CACHE_PROGRESS_DELAY = 1.0  # seconds of filling before a bar appears


def _set_cache_progress(enabled):
    global _cache_progress
    _cache_progress = enabled


def _tqdm():
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def _cache_progress_active():
    if _cache_progress is False:
        return False
    if _cache_progress is None:
        try:
            if not sys.stderr.isatty():
                return False
        except (AttributeError, ValueError):
            return False
    return _tqdm() is not None


def _cache_warn(message):
    warnings.warn(message, CacheWarning, stacklevel=2)


def _cache_progress_hook(label):
    """A hook showing one tqdm bar per filling pass (keyed by the engine's token)."""
    bars = {}

    def progress(token, elements, nbytes, total, state):
        bar = bars.get(token)
        if bar is None:
            if state != 0 or not _cache_progress_active():
                return
            bar = bars[token] = _tqdm()(total=total if total >= 0 else None, desc=label,
                                        unit=" elements", unit_scale=True, dynamic_ncols=True)
        bar.set_postfix_str(f"{nbytes / 2**20:.1f} MiB", refresh=False)
        bar.update(elements - bar.n)
        if state != 0:
            if state == 2:
                bar.set_description_str(label + " (discarded)", refresh=False)
            bar.close()
            del bars[token]
    return progress


def _flat_component_specs(spec):
    """[(dtype code, dims tuple or None)] of a spec's TensorSpec leaves, or None."""
    out = []
    for leaf in nest.flatten(spec):
        if not isinstance(leaf, TensorSpec):
            return None
        dims = leaf.shape.dims
        out.append((leaf.dtype._code, None if dims is None else tuple(dims)))
    return out


class _Unencodable(Exception):
    pass


def _encode_structure(spec):
    """The element spec as JSON bytes, stored in cache files (None if it cannot be)."""
    def enc(s):
        if isinstance(s, TensorSpec):
            return {"t": "spec", "dtype": s.dtype.name, "shape": s.shape.dims}
        if type(s) is dict:
            keys = list(s)
            if not all(type(k) in (str, int) for k in keys):
                raise _Unencodable
            return {"t": "dict", "keys": keys, "values": [enc(s[k]) for k in keys]}
        if isinstance(s, tuple) and hasattr(type(s), "_fields"):
            return {"t": "namedtuple", "module": type(s).__module__,
                    "name": type(s).__qualname__, "fields": list(type(s)._fields),
                    "values": [enc(v) for v in s]}
        if type(s) is tuple:
            return {"t": "tuple", "values": [enc(v) for v in s]}
        raise _Unencodable

    import json
    try:
        return json.dumps({"conveyor_element_spec": 1, "spec": enc(spec)}).encode()
    except (_Unencodable, TypeError, ValueError):
        return None


def _namedtuple_type(module, name, fields):
    import collections
    import importlib
    try:
        obj = importlib.import_module(module)
        for part in name.split("."):
            obj = getattr(obj, part)
        if isinstance(obj, type) and issubclass(obj, tuple) and list(obj._fields) == fields:
            return obj
    except Exception:  # noqa: BLE001 - any failure: rebuild the type
        pass
    return collections.namedtuple(name.rsplit(".", 1)[-1], fields)


def _decode_structure(blob):
    import json

    def dec(d):
        t = d["t"]
        if t == "spec":
            return TensorSpec(d["shape"], _dtypes.as_dtype(d["dtype"]))
        values = [dec(v) for v in d["values"]]
        if t == "dict":
            return dict(zip(d["keys"], values))
        if t == "namedtuple":
            return _namedtuple_type(d["module"], d["name"], d["fields"])(*values)
        if t == "tuple":
            return tuple(values)
        raise ValueError(t)

    try:
        doc = json.loads(blob.decode())
        return dec(doc["spec"]) if doc.get("conveyor_element_spec") == 1 else None
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        return None


class _CacheDataset(_UnaryDataset):
    def __init__(self, input_dataset, filename):
        Dataset.__init__(self, [input_dataset])
        self._filename = filename
        self._file_spec = None
        # The hooks may outlive this object (an iterator keeps only the engine's
        # datasets), and must not refer to it (the store it holds would form a cycle
        # that the garbage collector cannot see through the capsule).
        def describe():
            spec = input_dataset._known_spec()
            return None if spec is None else _encode_structure(spec)

        label = f"cache {filename}" if filename else "cache (memory)"
        self._store = _engine.cache_store(filename or None, _cache_warn,
                                          _cache_progress_hook(label), describe,
                                          _CACHE_PROGRESS_DELAY)

    def _build(self, ctx, engine_inputs):
        spec = self._inputs[0]._known_spec()
        expected = None if spec is None else _flat_component_specs(spec)
        return _engine.cache(engine_inputs[0], self._store, expected, ctx.memory)

    def _spec_from_file(self):
        """The element spec stored in the committed cache file, if there is one."""
        if self._file_spec is None and self._filename:
            try:
                info = _engine.cache_file_info(self._store)
            except (_errors.OpError, OSError):
                info = None  # iterating reports the damaged file
            if info is not None and info[0]:
                self._file_spec = _decode_structure(info[0])
        return self._file_spec

    def _known_spec(self):
        spec = self._inputs[0]._known_spec()
        return spec if spec is not None else self._spec_from_file()

    def _derive_spec(self):
        spec = self._known_spec()
        return spec if spec is not None else self._inputs[0].element_spec
