"""``Dataset.filter`` (FilterDataset)."""
from conveyor import _engine
from conveyor import dtypes as _dtypes
from conveyor.data.ops.dataset_base import (UNKNOWN_CARDINALITY, Cardinality,
                                            UnaryUnchangedStructureDataset)
from conveyor.data.ops.structured_function import MapFunction
from conveyor.tensor_spec import TensorSpec

__all__ = ["FilterDataset"]


def _check_predicate_spec(spec):
    """A predicate's output spec must be one scalar bool (checked at build time
    when the spec is known statically)."""
    if not (isinstance(spec, TensorSpec) and spec.dtype == _dtypes.bool
            and spec.shape.rank in (0, None)):  # an unknown rank is checked per element
        raise ValueError("Invalid `predicate`. `predicate` must return a `tf.bool` scalar tensor, "
                         f"but its return type is {spec}.")


class FilterDataset(UnaryUnchangedStructureDataset):
    """The predicate goes to the engine through ``MapFunction``, as a map
    function does: traced to a native program when it can be, else called per
    element in Python, with the same calling convention and result conversion."""

    _stage = "Dataset.filter"

    def __init__(self, input_dataset, predicate):
        super().__init__(input_dataset)
        self._function = MapFunction(predicate, input_dataset, stage=self._stage,
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
        return _engine.filter(engine_inputs[0], predicate=fn, out_convert=self._function.convert,
                              name=self._function.name, with_id=with_id)

    def _functions(self):
        return (self._function,)

    def cardinality(self):
        return Cardinality(UNKNOWN_CARDINALITY)

    def __repr__(self):
        f = self._function
        mode = f.mode or "untraced"
        if f.mode == "python":
            mode += f" ({f.reason})"
        return f"<{type(self).__name__} mode={mode} element_spec={self._known_spec()!r}>"
