"""What every dataset is: the ``Dataset`` base class and its element structure.

A ``Dataset`` is an immutable description of a pipeline. Each transformation
or source is a subclass (an op class, in conveyor/data/ops/<name>_op.py) that
holds its arguments and its input datasets and says how to build its engine
dataset (``_build``) and what its elements are (``_derive_spec``). Iterating a
dataset builds (once per build context, then cached) the engine datasets of
the whole chain and opens an engine iterator, which yields NumPy arrays; the
flat components it gives are packed into the element's structure here
(``structure_kind``, ``pack_element``), windows (``DatasetSpec`` components)
into ``VariantDataset`` objects.

tf.data's methods (``map``, ``batch``, ``from_tensor_slices``...) are added
to this class by conveyor/data/dataset.py, which constructs the op classes:
the op modules import only this module, so no import goes in a circle.
"""
import copy
import functools
import threading

import numpy as np

from conveyor import _engine
from conveyor import config as _config
from conveyor.framework.eager import as_eager
from conveyor import errors as _errors
from conveyor import nest
from conveyor.data import iterator_ops  # noqa: F401  (registers iter(dataset)'s class)
from conveyor.data import monitor as _monitor
from conveyor.data import stats as _stats
from conveyor.data.options import AUTOTUNE, UNSET, BuildContext, Options, check_budget
from conveyor.tensor_spec import TensorShape, TensorSpec

__all__ = ["Dataset", "DatasetSpec", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]

INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2

class Cardinality(int):
    """An int that also answers ``.numpy()``, as the tensor TensorFlow returns does."""

    def numpy(self):
        return np.int64(self)

    # Comparisons give a scalar bool tensor, as TensorFlow's do
    # (``(cardinality(ds) == INFINITE_CARDINALITY).numpy()``); it is truthy as a bool.
    def __eq__(self, other):
        return _bool_tensor(int.__eq__(self, other))

    def __ne__(self, other):
        return _bool_tensor(int.__ne__(self, other))

    def __lt__(self, other):
        return _bool_tensor(int.__lt__(self, other))

    def __le__(self, other):
        return _bool_tensor(int.__le__(self, other))

    def __gt__(self, other):
        return _bool_tensor(int.__gt__(self, other))

    def __ge__(self, other):
        return _bool_tensor(int.__ge__(self, other))

    __hash__ = int.__hash__


def _bool_tensor(result):
    if result is NotImplemented:
        return result
    return as_eager(np.bool_(result))


def _is_sparse(x):
    return type(x).__name__ == "SparseTensor" and hasattr(x, "dense_shape")


def _is_ragged(x):
    return type(x).__name__ == "RaggedTensor" and hasattr(x, "row_splits")


def _has_sparse(spec):
    if _is_sparse(spec) or _is_ragged(spec):
        return True
    if isinstance(spec, dict):
        return any(_has_sparse(v) for v in spec.values())
    if isinstance(spec, (tuple, list)):
        return any(_has_sparse(v) for v in spec)
    return False


def _densify(element):
    if _is_sparse(element):
        return element.to_dense()
    if _is_ragged(element):
        return element.numpy()
    if isinstance(element, dict):
        return type(element)((k, _densify(v)) for k, v in element.items())
    if isinstance(element, tuple) and hasattr(element, "_fields"):
        return type(element)(*(_densify(v) for v in element))
    if isinstance(element, (tuple, list)):
        return type(element)(_densify(v) for v in element)
    return element


def _densified(iterator):
    for element in iterator:
        yield _densify(element)


class Dataset:
    """A pipeline of elements, as ``tf.data.Dataset``.

    Build one with a source (``from_tensor_slices``, ``from_tensors``, ``range``,
    ``from_generator``), chain transformations (``map``, ``batch``, ``prefetch``,
    ``take``, ``skip``, ``repeat``), and iterate it: each element comes out with
    its structure (tuples, dicts, namedtuples) and ``EagerTensor`` leaves:
    NumPy arrays (zero-copy) that also answer ``numpy()``, 0-d for scalars
    and scalar strings, as TensorFlow's eager tensors. ``as_numpy_iterator()``
    yields plain NumPy arrays, NumPy scalars and ``bytes``, as in TensorFlow.
    """

    _on_device = False         # its elements are on a device (prefetch_to_device)
    _may_follow_device = False  # it may be applied after prefetch_to_device (with_options)

    def __init__(self, inputs=()):
        self._inputs = tuple(inputs)
        if not self._may_follow_device and any(i._on_device for i in self._inputs):
            raise _errors.InvalidArgumentError(
                f"prefetch_to_device() and copy_to_device() must be the final transformation "
                f"of the input pipeline, as in tf.data; apply {type(self).__name__} before it "
                f"(only with_options() may follow).")
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

    def _functions(self):
        """The user functions this dataset runs (MapFunction objects), for repr."""
        return ()

    # -- the graph API ------------------------------------------------------
    # How code other than the dataset itself reads and rebuilds a pipeline:
    # the rewrites (conveyor/data/rewrites/), auto-sharding, the statistics
    # and the doctor go through these methods, never through another
    # dataset's ``_inputs``, ``_engine_cache`` or ``_args`` (a lint test,
    # tests/test_package_layout.py, checks it).

    # An op keeps its arguments as the dict ``_args`` by name, or as a
    # positional tuple ``_args`` whose names ``_arg_names`` lists in order, or
    # in attributes, each name mapped to its attribute in ``_arg_fields``. The
    # names are tf.data's argument names.
    _arg_names = ()
    _arg_fields = {}

    def inputs(self):
        """The datasets this one reads, in order (a tuple; empty for a source)."""
        return self._inputs

    def with_inputs(self, inputs):
        """A copy of this dataset that reads `inputs` (one per input, in order)
        in place of its own: every reference to an old input among its
        attributes (zip's structure of datasets, for one) is swapped, and the
        copy has no engine datasets built yet; this dataset itself when
        `inputs` are its own. Datasets are immutable descriptions, so this
        one is not changed."""
        inputs = tuple(inputs)
        if len(inputs) != len(self._inputs):
            raise ValueError(f"{type(self).__name__} reads {len(self._inputs)} dataset(s), "
                             f"got {len(inputs)}.")
        if all(a is b for a, b in zip(inputs, self._inputs)):
            return self
        result = copy.copy(self)
        table = {id(old): new for old, new in zip(self._inputs, inputs)}
        for key, value in list(vars(result).items()):
            result.__dict__[key] = _swap(value, table)
        result._inputs = inputs
        result._engine_cache = {}
        result._lock = threading.Lock()
        result.__dict__.pop("_fingerprint", None)
        return result

    @property
    def named_args(self):
        """The arguments this op was made with, as {tf.data's argument name:
        value} (only those an op names: see ``_arg_names``, ``_arg_fields``)."""
        args = getattr(self, "_args", ())
        named = dict(args) if isinstance(args, dict) else dict(zip(self._arg_names, args))
        named.update((name, getattr(self, field)) for name, field in self._arg_fields.items())
        return named

    def arg(self, name):
        """The argument `name` of this op (``ds.arg("num_parallel_calls")``);
        KeyError when the op has no argument of that name."""
        named = self.named_args
        if name not in named:
            raise KeyError(f"{type(self).__name__} has no argument {name!r} "
                           f"(it has {sorted(named)}).")
        return named[name]

    def _cached_engine(self, ctx):
        """The engine dataset already built for `ctx`, or None (builds nothing;
        takes no lock: a dict lookup is atomic, and a caller may hold one)."""
        return self._engine_cache.get(ctx)

    def _forget_engine(self, ctx):
        """Drop the engine dataset built for `ctx` from the build cache."""
        with self._lock:
            self._engine_cache.pop(ctx, None)

    # -- engine plumbing ----------------------------------------------------

    def _engine(self, ctx):
        with self._lock:
            handle = self._engine_cache.get(ctx)
            if handle is None:
                handle = self._build(ctx, [i._engine(ctx) for i in self._inputs])
                self._engine_cache[ctx] = handle
            return handle

    def _probe_engine(self, ctx):
        """An engine dataset of its own for a probe (running a Python
        function once to learn its output spec): the same pipeline built
        afresh, so that the probe's iterator draws nothing from the seed
        generators and epoch counters of the datasets the user iterates
        (a seeded shuffle upstream keeps tf.data's order)."""
        return self._build(ctx, [i._probe_engine(ctx) for i in self._inputs])

    def _context(self):
        options = self.options()
        deterministic = True if options.deterministic is None else bool(options.deterministic)
        parallel_batch = options.experimental_optimization.parallel_batch
        memory = self._ram_budget()
        return BuildContext(deterministic, options.threading.private_threadpool_size or 0,
                             parallel_batch is not False, None if memory is UNSET else memory,
                             check_budget(options.autotune.cpu_budget, "cpu_budget") or
                             _config.default_cpu_budget(),
                             options.experimental_optimization.shuffle_and_batch_fusion
                             is not False,
                             bool(options.experimental_optimization.jpeg_scaled_decode),
                             options.experimental_optimization.map_and_batch_fusion
                             is not False)

    def _ram_budget(self):
        """The engine RAM budget of the with_options() call that set
        options.autotune.ram_budget last (as options() merges them), None for
        the process default, or UNSET when no call below this dataset sets it."""
        budget = UNSET
        for i in self._inputs:
            found = i._ram_budget()
            if found is not UNSET:
                budget = found
        return budget

    def _packing(self):
        return structure_kind(self.element_spec)

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
        return Cardinality(self._engine(self._context()).cardinality())

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
        """A new iterator over the elements; each call starts from the beginning.
        Leaves come out as ``conveyor.EagerTensor`` (NumPy arrays with ``numpy()``,
        0-d ones for scalars and scalar strings), as TensorFlow's eager tensors."""
        it = self._make_iterator()
        it.eager = True
        iterator_ops.remember_dataset(it, self)
        return it

    def _make_iterator(self, statistics=True):
        """``iter(self)``; ``statistics=False`` makes one without per-stage
        statistics and without the autotuner (AUTOTUNE stages stay at their
        most; ``stats()`` raises), to measure what they cost
        (benchmarks/stats_overhead.py). Not for users: tf.data has no such switch."""
        ctx = self._context()
        it = self._engine(ctx).make_iterator(
            self._packing, cpu_budget=ctx.cpu_budget,
            algorithm=_stats.algorithm_code(self.options()),
            describe=functools.partial(_stats.describe, _stats.dataset_names(self, ctx)),
            statistics=statistics, owner=self)
        if statistics:
            _monitor.from_environment(it)  # CONVEYOR_LOG_STATS_EVERY, CONVEYOR_STALL_AFTER
        return it

    def as_numpy_iterator(self):
        """An iterator of plain NumPy values: arrays (zero-copy views), NumPy
        scalars and ``bytes``, as TensorFlow's gives; after ``prefetch_to_device``,
        device arrays are copied back to the host."""
        for component in nest.flatten(self.element_spec):
            if not isinstance(component, TensorSpec):
                raise TypeError(f"Dataset.as_numpy_iterator() does not support {component!r}.")
        if self._on_device:
            return _numpy_values(self._make_iterator())
        if _has_sparse(self.element_spec):
            # TensorFlow's as_numpy_iterator gives a sparse component (a
            # VarLenFeature's) as its dense array; plain iteration keeps it sparse.
            return _densified(self._make_iterator())
        return self._make_iterator()

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
            modes += [f"{f.name}: {f.mode or 'untraced'}" for f in ds._functions()]
            stack.extend(ds.inputs())
        return modes[::-1]


def _swap(value, table):
    """`value` with the objects whose ids are in `table` replaced, looking into
    plain tuples, lists and dicts (a copy only where something changed)."""
    if id(value) in table:
        return table[id(value)]
    if type(value) in (tuple, list):
        items = [_swap(v, table) for v in value]
        if any(a is not b for a, b in zip(items, value)):
            return type(value)(items)
    elif type(value) is dict:
        items = {k: _swap(v, table) for k, v in value.items()}
        if any(items[k] is not value[k] for k in value):
            return items
    return value


def _numpy_values(iterator):
    """The elements of a device pipeline's iterator with NumPy leaves."""
    for element in iterator:
        yield nest.map_structure(
            lambda x: x.numpy() if isinstance(x, _engine.DeviceArray) else x, element)


class UnaryUnchangedStructureDataset(Dataset):
    """A dataset with one input whose elements have the input's structure
    (take, skip, repeat, prefetch, shuffle, shard, cache...)."""

    def __init__(self, input_dataset):
        super().__init__([input_dataset])

    def _derive_spec(self):
        return self._inputs[0].element_spec

    def _known_spec(self):
        return self._inputs[0]._known_spec()


class SourceDataset(Dataset):
    """A source whose engine dataset does not depend on options."""

    def __init__(self, handle, spec, description=()):
        super().__init__()
        self._handle = handle
        self._spec = spec
        self._description = description  # what the engine dataset was made from (fingerprint)

    def _build(self, ctx, engine_inputs):
        return self._handle

    def _derive_spec(self):
        return self._spec


# -- element structure: flat engine components <-> elements ----------------------


def structure_kind(spec):
    """How the engine iterator repacks flat components: 0 single, 1 plain tuple, 2 call."""
    if has_datasets(spec):
        return 2, lambda flat: pack_element(spec, flat)
    if not nest.is_nested(spec):
        return 0, None
    if type(spec) is tuple and not any(nest.is_nested(s) for s in spec):
        return 1, None
    return 2, lambda flat: nest.pack_sequence_as(spec, flat)


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


def has_datasets(spec):
    return any(isinstance(s, DatasetSpec) for s in nest.flatten(spec))


def ragged_mask(spec):
    """Which components of a window travel ragged (values + shapes, kernels/common/packed_rows.h):
    those whose static shape is not fully known, so their rows may differ."""
    return [not s.shape.is_fully_defined() for s in nest.flatten(spec)]


def pack_element(spec, flat):
    """Flat engine components -> the element: DatasetSpec components (windows)
    are read from their packed tensors into datasets."""
    if not has_datasets(spec):
        return nest.pack_sequence_as(spec, flat)
    leaves, pos = [], 0
    for s in nest.flatten(spec):
        if isinstance(s, DatasetSpec):
            mask = ragged_mask(s.element_spec)
            width = len(mask) + sum(mask)
            leaves.append(VariantDataset(s.element_spec, flat[pos:pos + width], mask))
            pos += width
        else:
            leaves.append(flat[pos])
            pos += 1
    return nest.pack_sequence_as(spec, leaves)


class VariantDataset(SourceDataset):
    """The elements of one window (tf.data's class name for a dataset held in
    an element): views of the tensors the engine packed."""

    def __init__(self, spec, packed, mask):
        super().__init__(_engine.window_source(list(packed), ragged=mask), spec)
