"""``Dataset.ragged_batch`` (and ``tf.data.experimental.dense_to_ragged_batch``):
batches of elements whose first dimension varies, as ``RaggedTensor``s.

Each element goes in with its length (a native map), ``padded_batch``
gathers them, and a Python step per batch drops the padding into flat
values and row splits. Elements of a fully known shape batch densely, as
tf.data's do.
"""
import numpy as np

from conveyor.ops import array_ops, math_ops
from conveyor.data.ops.dataset_base import Dataset  # noqa: F401 - methods live there
from conveyor.ragged import RaggedTensor
from conveyor.tensor_spec import TensorSpec

__all__ = ["ragged_batch"]


class _ToRagged:
    """(padded rows [B, max, inner...], lengths [B]) -> RaggedTensor; Python."""

    __name__ = "Dataset.ragged_batch"

    def __call__(self, rows, lengths):
        from conveyor.framework.tracing import Tensor, _PlainPython
        if isinstance(rows, Tensor):
            raise _PlainPython("ragged_batch packs its rows in Python")
        rows, lengths = np.asarray(rows), np.asarray(lengths, np.int64)
        values = np.concatenate([rows[b, :lengths[b]] for b in range(len(lengths))]) \
            if len(lengths) else rows.reshape((0,) + rows.shape[2:])
        return RaggedTensor(values, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))


def ragged_batch(dataset, batch_size, drop_remainder=False):
    """``dataset.ragged_batch(batch_size, drop_remainder)``; see the module's doc."""
    spec = dataset.element_spec
    if not isinstance(spec, TensorSpec):
        raise NotImplementedError("ragged_batch: conveyor batches elements of one tensor into "
                                  f"RaggedTensors; this dataset's elements are {spec}")
    if spec.shape.is_fully_defined():
        return dataset.batch(batch_size, drop_remainder=drop_remainder)
    dims = spec.shape.as_list() if spec.shape.rank is not None else None
    if dims is None or not dims or None in dims[1:]:
        raise NotImplementedError(
            f"ragged_batch: conveyor's RaggedTensor has one ragged dimension, the first of each "
            f"element; elements of shape {spec.shape} would need more")
    inner = dims[1:]
    with_lengths = dataset.map(
        lambda x: (x, math_ops.cast(array_ops.shape(x)[0], "int64")))
    batched = with_lengths.padded_batch(batch_size, padded_shapes=([None] + inner, []),
                                        drop_remainder=drop_remainder)
    from conveyor.ops.array_ops import ensure_shape

    def static_shapes(r):  # native: the spec of the values and splits
        return RaggedTensor(ensure_shape(r.values, [None] + inner),
                            ensure_shape(r.row_splits, [batch_size + 1 if drop_remainder
                                                        else None]))
    return batched.map(_ToRagged()).map(static_shapes)
