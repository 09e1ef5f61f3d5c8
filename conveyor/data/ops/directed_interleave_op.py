"""``Dataset.choose_from_datasets`` and ``sample_from_datasets``
(DirectedInterleaveDataset): a selector dataset of indices picks the dataset
each element comes from; sample_from_datasets' selector draws the indices
(kernels/sample_choice.c). Arguments are checked in conveyor/data/dataset.py."""
from conveyor import _engine
from conveyor import dtypes as _dtypes
from conveyor import nest
from conveyor.data.ops.dataset_base import Dataset
from conveyor.tensor_spec import TensorSpec

__all__ = ["DirectedInterleaveDataset"]


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


class DirectedInterleaveDataset(Dataset):
    def __init__(self, selector, datasets, stop_on_empty_dataset):
        super().__init__([selector] + list(datasets))
        self._stop = bool(stop_on_empty_dataset)
        self._spec = _choose_spec(list(datasets))

    def _build(self, ctx, engine_inputs):
        return _engine.choose(engine_inputs[0], datasets=list(engine_inputs[1:]),
                              stop_on_empty_dataset=self._stop)

    def _derive_spec(self):
        return self._spec


class SampleChoiceDataset(Dataset):
    """sample_from_datasets' picks: scalar int64 indices (kernels/sample_choice.c)."""

    def __init__(self, random, weights):
        self._weights = None if isinstance(weights, Dataset) else weights
        super().__init__([random] + ([weights] if isinstance(weights, Dataset) else []))

    def _build(self, ctx, engine_inputs):
        weights_dataset = engine_inputs[1] if len(engine_inputs) > 1 else None
        return _engine.sample_choice(engine_inputs[0], weights_dataset=weights_dataset,
                                     weights=self._weights)

    def _derive_spec(self):
        return TensorSpec([], _dtypes.int64)
