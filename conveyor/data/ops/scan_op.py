"""``Dataset.scan`` (ScanDataset), ``Dataset.take_while`` (TakeWhileDataset)
and ``Dataset.unique`` (UniqueDataset): the engine's scan, take_while and
unique kernels (csrc/kernels/).

scan's function takes (state, element) and returns (new state, output); it
is traced as a map function is, on the spec (state, element). The engine
passes it the state's flat components, then the element's, and splits its
result at the state's component count.
"""
import numpy as np

from conveyor import _engine
from conveyor import dtypes as _dtypes
from conveyor import nest
from conveyor.framework.convert import to_array
from conveyor.framework.eager import as_eager
from conveyor.data.ops.dataset_base import (INFINITE_CARDINALITY, UNKNOWN_CARDINALITY,
                                            Cardinality, Dataset,
                                            UnaryUnchangedStructureDataset)
from conveyor.data.ops.filter_op import FilterDataset
from conveyor.data.ops.map_op import probe_function_spec
from conveyor.data.ops.structured_function import MapFunction
from conveyor.tensor_spec import TensorShape, TensorSpec

__all__ = ["ScanDataset", "TakeWhileDataset", "UniqueDataset"]


class _ScanArguments:
    """What MapFunction needs of its input: the spec of scan_func's
    arguments, (state, element)."""

    def __init__(self, state_spec, input_dataset):
        self._state_spec = state_spec
        self._input = input_dataset

    @property
    def element_spec(self):
        return (self._state_spec, self._input.element_spec)

    def _known_spec(self):
        spec = self._input._known_spec()
        return None if spec is None else (self._state_spec, spec)


def _leaf_spec(leaf):
    if isinstance(leaf, TensorSpec):
        return leaf
    return TensorSpec(getattr(leaf, "shape", np.shape(leaf)), _dtypes.as_dtype(leaf.dtype))


def _most_specific_compatible(a, b):
    """The shape both `a` and `b` fit (dims that differ become None)."""
    if a.rank is None or b.rank is None or a.rank != b.rank:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list())])


def _type_error(message):
    # Marked as an op's error, so that a trace reports it where the pipeline
    # is built (as tf.data does) instead of falling back to Python.
    e = TypeError(message)
    e._conveyor_op_error = True
    return e


class _StepChecks:
    """Wraps scan_func: checks that it returns (new state, output) with the
    state's structure and dtypes, with tf.data's TypeErrors."""

    def __init__(self, scan_func, state, state_dtypes):
        self.scan_func = scan_func
        self.state = state
        self.state_dtypes = state_dtypes
        self.__name__ = getattr(scan_func, "__name__", type(scan_func).__name__)

    def __call__(self, state, element):
        result = self.scan_func(state, element)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise _type_error("The scan function must return a pair comprising the new "
                              "state and the output value.")
        new_state, output = result
        if isinstance(new_state, list):
            new_state = tuple(new_state)
        try:
            nest.assert_same_structure(self.state, new_state)
        except (TypeError, ValueError):
            raise _type_error(f"The element classes for the new state must match the "
                              f"initial state. Expected {self.state!r}; got {new_state!r}.") \
                from None
        dtypes = [_dtypes.as_dtype(getattr(x, "dtype", None) or to_array(x).dtype)
                  for x in nest.flatten(new_state)]
        if dtypes != self.state_dtypes:
            raise _type_error(f"The element types for the new state must match the initial "
                              f"state. Expected {[d.name for d in self.state_dtypes]}; got "
                              f"{[d.name for d in dtypes]}.")
        return new_state, output


class ScanDataset(Dataset):
    def __init__(self, input_dataset, initial_state, scan_func):
        super().__init__([input_dataset])
        if not callable(scan_func):
            raise TypeError(f"`scan_func` must be callable, got {scan_func!r}.")
        if isinstance(initial_state, list):
            initial_state = tuple(initial_state)
        self._state = nest.map_structure(lambda leaf: as_eager(to_array(leaf)), initial_state)
        flat_state = nest.flatten(self._state)
        self._num_state = len(flat_state)
        dtypes = [_dtypes.as_dtype(leaf.dtype) for leaf in flat_state]
        self._step = _StepChecks(scan_func, self._state, dtypes)
        state_spec = nest.map_structure(_leaf_spec, self._state)
        # As tf.data, retrace with the shapes relaxed while the new state's
        # shapes differ from the state's (a growing state: dims become None).
        for _ in range(8):
            self._function = MapFunction(self._step, _ScanArguments(state_spec, input_dataset),
                                         stage="Dataset.scan", what="scan function")
            if self._function.mode != "native":
                break
            new_flat = nest.flatten(self._function.spec[0])
            old_flat = nest.flatten(state_spec)
            relaxed = [TensorSpec(_most_specific_compatible(o.shape, n.shape), o.dtype)
                       for o, n in zip(old_flat, new_flat)]
            if all(r.shape == o.shape for r, o in zip(relaxed, old_flat)):
                break
            state_spec = nest.pack_sequence_as(state_spec, relaxed)

    def _build(self, ctx, engine_inputs):
        fn, with_id = self._function.function_for_engine()
        state = [leaf.view(np.ndarray) if leaf.ndim else leaf.numpy()
                 for leaf in nest.flatten(self._state)]
        return _engine.scan(engine_inputs[0], initial_state=state, fn=fn,
                            out_convert=self._function.convert, name=self._function.name,
                            with_id=with_id)

    def _functions(self):
        return (self._function,)

    def _known_spec(self):
        spec = self._function.spec
        return None if spec is None else spec[1]

    def _derive_spec(self):
        return probe_function_spec(self, "Dataset.scan")[1]

    def cardinality(self):
        return Cardinality(self._inputs[0].cardinality())


class TakeWhileDataset(FilterDataset):
    """A filter whose first False ends the dataset."""

    _stage = "Dataset.take_while"

    def _build(self, ctx, engine_inputs):
        fn, with_id = self._function.function_for_engine()
        self._check_traced_spec()
        return _engine.take_while(engine_inputs[0], predicate=fn,
                                  out_convert=self._function.convert, name=self._function.name,
                                  with_id=with_id)


_UNIQUE_DTYPES = (_dtypes.int32, _dtypes.int64, _dtypes.string)


class UniqueDataset(UnaryUnchangedStructureDataset):
    def __init__(self, input_dataset):
        super().__init__(input_dataset)
        spec = input_dataset.element_spec
        if not isinstance(spec, TensorSpec):
            raise TypeError("`tf.data.Dataset.unique()` currently only supports datasets "
                            "with a single component of type `tf.int32`, `tf.int64`, or "
                            f"`tf.string`; this dataset's elements are {spec}.")
        if spec.dtype not in _UNIQUE_DTYPES:
            raise TypeError("`tf.data.Dataset.unique()` currently only supports datasets "
                            "with a single component of type `tf.int32`, `tf.int64`, or "
                            f"`tf.string`, got {spec.dtype!r}.")

    def _build(self, ctx, engine_inputs):
        return _engine.unique(engine_inputs[0])

    def cardinality(self):
        n = self._inputs[0].cardinality()
        return Cardinality(INFINITE_CARDINALITY if n == INFINITE_CARDINALITY
                           else UNKNOWN_CARDINALITY)
