"""``Dataset.random`` (RandomDataset): tf.data's pseudorandom int64 stream."""
from conveyor import _engine
from conveyor import dtypes as _dtypes
from conveyor.data.ops.dataset_base import SourceDataset
from conveyor.tensor_spec import TensorSpec

__all__ = ["RandomDataset"]


class RandomDataset(SourceDataset):
    """Scalar int64 values in [0, 2**32) from the seed pair (seed, seed2)."""

    def __init__(self, seed, seed2, rerandomize_each_iteration):
        handle = _engine.random(seed, seed2=seed2, rerandomize=rerandomize_each_iteration)
        super().__init__(handle, TensorSpec([], _dtypes.int64),
                         (seed, seed2, rerandomize_each_iteration))
