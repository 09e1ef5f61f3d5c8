"""``Dataset.zip`` and ``concatenate`` (ZipDataset, ConcatenateDataset);
``enumerate`` is a zip with a range (conveyor/data/dataset.py)."""
from conveyor import _engine
from conveyor import errors as _errors
from conveyor import nest
from conveyor.data.ops.dataset_base import Dataset, structure_kind

__all__ = ["ZipDataset", "ConcatenateDataset"]


class ZipDataset(Dataset):
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


class ConcatenateDataset(Dataset):
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
        return structure_kind(self.element_spec if spec is None else spec)

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
