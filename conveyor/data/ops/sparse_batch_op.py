"""``Dataset.sparse_batch`` (and ``tf.data.experimental.dense_to_sparse_batch``):
batches of elements of varying shape as ``SparseTensor``s.

Each element (one tensor of rank R, every dim at most ``row_shape``'s) goes
in flat with its shape (a native map), a ``padded_batch`` gathers them, and
a Python step per batch turns the rows into indices and values: dense_shape
``[rows in the batch] + row_shape``, as tf.data's.
"""
import numpy as np

from conveyor import errors
from conveyor.ops import array_ops, math_ops
from conveyor.io.example import SparseTensor
from conveyor.tensor_spec import TensorSpec

__all__ = ["sparse_batch"]


class _ToSparse:
    """(flat values [B, max], shapes [B, R]) -> SparseTensor; runs in Python."""

    __name__ = "Dataset.sparse_batch"

    def __init__(self, row_shape):
        self._row_shape = np.asarray(row_shape, np.int64)

    def __call__(self, values, shapes):
        from conveyor.framework.tracing import Tensor, _PlainPython
        if isinstance(values, Tensor):
            raise _PlainPython("sparse_batch builds its indices in Python")
        values, shapes = np.asarray(values), np.asarray(shapes, np.int64)
        indices, picked = [], []
        for b in range(len(shapes)):
            shape = shapes[b]
            if (shape > self._row_shape).any():
                raise errors.DataLossError(
                    None, None, f"Input element had shape ({[int(d) for d in shape]}) that is larger "
                    f"than the row shape ({[int(d) for d in self._row_shape]}).")
            n = int(np.prod(shape))
            grid = np.indices(tuple(shape)).reshape(len(shape), -1).T
            indices.append(np.concatenate([np.full((n, 1), b, np.int64), grid], axis=1))
            picked.append(values[b, :n])
        rank = len(self._row_shape)
        return SparseTensor(
            np.concatenate(indices).astype(np.int64) if indices else np.zeros((0, rank + 1),
                                                                           np.int64),
            np.concatenate(picked) if picked else values.reshape(-1)[:0],
            np.concatenate([[len(shapes)], self._row_shape]).astype(np.int64))


def sparse_batch(dataset, batch_size, row_shape):
    """``dataset.sparse_batch(batch_size, row_shape)``; see the module's doc."""
    row_shape = [int(d) for d in np.asarray(row_shape, np.int64).reshape(-1)]
    if any(d < 0 for d in row_shape):
        raise ValueError(f"Dimension {min(row_shape)} must be >= 0")
    spec = dataset.element_spec
    if not isinstance(spec, TensorSpec):
        raise TypeError(f"sparse_batch: elements must be one tensor, got {spec}")
    if spec.shape.rank is not None and spec.shape.rank != len(row_shape):
        raise ValueError(f"sparse_batch: `row_shape` {row_shape} must have the rank of the "
                         f"elements, {spec.shape.rank}.")
    rank = len(row_shape)
    flat = dataset.map(lambda x: (array_ops.reshape(x, [-1]),
                                  math_ops.cast(array_ops.shape(x), "int64")))
    batched = flat.padded_batch(batch_size, padded_shapes=([None], [rank]))
    from conveyor.ops.array_ops import ensure_shape

    def static_shapes(sp):  # native: the spec TensorFlow gives
        return SparseTensor(ensure_shape(sp.indices, [None, rank + 1]),
                            ensure_shape(sp.values, [None]), ensure_shape(sp.dense_shape, [rank + 1]))
    return batched.map(_ToSparse(row_shape)).map(static_shapes)
