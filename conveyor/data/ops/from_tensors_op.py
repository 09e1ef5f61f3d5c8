"""Sources from values in memory: ``Dataset.from_tensors`` (TensorDataset)
and ``Dataset.from_tensor_slices`` (TensorSliceDataset). The values are
copied into the engine once, when the dataset is created."""
from conveyor import _engine
from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor import nest
from conveyor.framework.convert import spec_of, to_array
from conveyor.data.ops.dataset_base import SourceDataset
from conveyor.tensor_spec import TensorSpec

__all__ = ["TensorDataset", "TensorSliceDataset"]


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


class TensorSliceDataset(SourceDataset):
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
        super().__init__(_engine.tensor_slices(arrays), spec, arrays)


class TensorDataset(SourceDataset):
    def __init__(self, tensors):
        flat = nest.flatten(tensors)
        if nest.is_nested(tensors) and not flat:
            raise _errors.InvalidArgumentError("Invalid `element`. `element` should not be empty.")
        arrays = [to_array(x) for x in flat]
        spec = nest.pack_sequence_as(tensors, [spec_of(a) for a in arrays])
        super().__init__(_engine.tensors(arrays), spec, arrays)
