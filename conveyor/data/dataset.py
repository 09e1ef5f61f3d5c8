"""``Dataset``: tf.data's chainable pipeline API over conveyor's C engine.

A ``Dataset`` is an immutable description. Iterating it builds (once per set
of options, then cached) the engine's datasets and opens an engine iterator,
which yields NumPy arrays. The Python layer only checks arguments and keeps
the element structure; all per-element work happens in C.
"""
import operator
import threading
import warnings

import numpy as np

from conveyor import _engine
from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor import _tracing
from conveyor import nest
from conveyor import random as _random
from conveyor._convert import spec_of, to_array
from conveyor.data.options import Options
from conveyor.tensor_spec import TensorShape, TensorSpec

__all__ = ["Dataset", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2


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
        return f"<{type(self).__name__} element_spec={self._known_spec()!r}>"

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
        seed, seed2 = _random.get_seed(seed)
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
    ones against it.
    """

    def __init__(self, map_func, input_dataset, stage="Dataset.map"):
        self.map_func = map_func
        self.input_dataset = input_dataset
        self.stage = stage
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
            nest.pack_sequence_as(spec, flat)))

    def resolve(self):
        """Trace the function (once): decide native or Python mode."""
        if self.mode is not None:
            return
        spec = self.input_dataset.element_spec
        if _tracing.debug_mode():
            self.mode, self.reason = "python", "debug mode is on"
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
                f"the map function returned an element whose structure differs from its first "
                f"result: expected {self.spec}, got {result!r}")
        for i, (expected, arr) in enumerate(zip(self._np_dtypes, arrays)):
            if arr.dtype != expected and (expected is not None or arr.dtype != object):
                raise _errors.InvalidArgumentError(
                    f"the map function returned {_dtypes.as_dtype(arr.dtype).name} for component "
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
        element = nest.pack_sequence_as(input_dataset.element_spec, flat)
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
