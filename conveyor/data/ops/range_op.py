"""``Dataset.range`` (RangeDataset): numbers counted by the engine."""
import operator

from conveyor import _engine
from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor.data.ops.dataset_base import SourceDataset
from conveyor.tensor_spec import TensorSpec

__all__ = ["RangeDataset"]


class RangeDataset(SourceDataset):
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
        super().__init__(_engine.range(start=start, stop=stop, step=step, dtype=dtype._code), TensorSpec([], dtype),
                         (start, stop, step, dtype.name))
