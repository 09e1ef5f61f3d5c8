"""``tf.ragged`` basics: ``RaggedTensor`` (one ragged dimension) and
``tf.ragged.constant``, as ``Dataset.ragged_batch`` produces them.

A ``RaggedTensor`` is its flat ``values`` (``[N, inner...]``) and int64
``row_splits`` (``[nrows + 1]``): row i is ``values[row_splits[i]:
row_splits[i + 1]]``. It is a named tuple of those two, so a pipeline
carries it as two components and a map function receives it whole.
"""
import collections

import numpy as np

from conveyor import dtypes as _dtypes
from conveyor.framework.convert import to_array
from conveyor.framework.eager import as_eager
from conveyor.tensor_spec import TensorShape, TensorSpec

__all__ = ["RaggedTensor", "RaggedTensorSpec", "constant"]


class RaggedTensor(collections.namedtuple("RaggedTensor", ["values", "row_splits"])):
    """Rows of different lengths (``tf.RaggedTensor`` with ``ragged_rank`` 1)."""

    __slots__ = ()
    ragged_rank = 1

    @classmethod
    def from_row_splits(cls, values, row_splits, validate=True):
        splits = np.asarray(row_splits, np.int64)
        if validate and (splits.ndim != 1 or not len(splits) or splits[0] != 0
                         or (np.diff(splits) < 0).any() or splits[-1] != len(values)):
            raise ValueError("row_splits must start at 0, not decrease and end at len(values)")
        return cls(as_eager(to_array(values)), as_eager(splits))

    @classmethod
    def from_row_lengths(cls, values, row_lengths, validate=True):
        lengths = np.asarray(row_lengths, np.int64)
        return cls.from_row_splits(values, np.concatenate([[0], np.cumsum(lengths)]), validate)

    @property
    def flat_values(self):
        return self.values

    @property
    def dtype(self):
        return _dtypes.as_dtype(np.asarray(self.values).dtype)

    @property
    def shape(self):
        inner = list(np.shape(self.values))[1:]
        return TensorShape([self.nrows_int(), None] + inner)

    def nrows_int(self):
        return len(np.asarray(self.row_splits)) - 1

    def nrows(self):
        return as_eager(np.int64(self.nrows_int()))

    def row_lengths(self):
        return as_eager(np.diff(np.asarray(self.row_splits)))

    def _rows(self):
        values, splits = np.asarray(self.values), np.asarray(self.row_splits)
        return [values[splits[i]:splits[i + 1]] for i in range(len(splits) - 1)]

    def __getitem__(self, index):
        if isinstance(index, (int, np.integer)):
            return as_eager(self._rows()[index])
        return super().__getitem__(index)

    def to_list(self):
        return [row.tolist() for row in self._rows()]

    def numpy(self):
        """Each row's array: a 2-D (or more) array when all rows have the same
        length, else an object array of rows, as TensorFlow's."""
        rows = self._rows()
        if rows and all(len(r) == len(rows[0]) for r in rows):
            return np.stack(rows)
        out = np.empty(len(rows), dtype=object)
        out[:] = rows
        return out

    def to_tensor(self, default_value=None, shape=None):
        """The rows padded to the longest with `default_value` (0, b"")."""
        rows = self._rows()
        values = np.asarray(self.values)
        width = max((len(r) for r in rows), default=0)
        if shape is not None:
            width = int(shape[1]) if shape[1] is not None else width
        fill = default_value if default_value is not None else (
            b"" if values.dtype == object else 0)
        out = np.full((len(rows), width) + values.shape[1:], fill, dtype=values.dtype)
        for i, row in enumerate(rows):
            out[i, :min(len(row), width)] = row[:width]
        return as_eager(out)

    def __repr__(self):
        if isinstance(self.values, TensorSpec):  # an element spec: as TF's RaggedTensorSpec
            inner = self.values.shape.as_list()[1:] if self.values.shape.rank else []
            splits = self.row_splits.shape
            nrows = splits[0] - 1 if splits.rank == 1 and splits[0] is not None else None
            return (f"RaggedTensorSpec({TensorShape([nrows, None] + inner)!r}, "
                    f"{self.values.dtype!r}, 1, {self.row_splits.dtype!r})")
        if not hasattr(self.values, "shape") or not hasattr(self.row_splits, "__len__"):
            return f"RaggedTensor(values={self.values!r}, row_splits={self.row_splits!r})"
        return f"<tf.RaggedTensor {self.to_list()}>"



class _RaggedTensorSpecType(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, RaggedTensor) and isinstance(obj.values, TensorSpec)


class RaggedTensorSpec(metaclass=_RaggedTensorSpecType):
    """The spec of a ``RaggedTensor`` (``tf.RaggedTensorSpec``), for
    ``from_generator``'s `output_signature`: `shape` ``[nrows, None,
    inner...]`` with one ragged dimension. What it makes is a ``RaggedTensor``
    of two ``TensorSpec``, the flat values' and the row splits', which is how
    ``element_spec`` shows a ragged component. conveyor's row splits are
    int64 (TensorFlow's default); `row_splits_dtype` int32 is refused."""

    def __new__(cls, shape=None, dtype=_dtypes.float32, ragged_rank=None,
                row_splits_dtype=_dtypes.int64, flat_values_spec=None):
        shape = TensorShape(shape)
        if shape.rank is None or shape.rank < 2:
            raise ValueError(f"conveyor's RaggedTensorSpec needs a shape of rank 2 or more "
                             f"([nrows, None, ...]), got {shape}")
        if ragged_rank not in (None, 1) and not (ragged_rank == shape.rank - 1 == 1):
            raise ValueError(f"conveyor's RaggedTensor has one ragged dimension; got "
                             f"ragged_rank={ragged_rank}")
        if _dtypes.as_dtype(row_splits_dtype) != _dtypes.int64:
            raise ValueError("conveyor's RaggedTensor row_splits are int64")
        dims = shape.as_list()
        values = (flat_values_spec if flat_values_spec is not None else
                  TensorSpec([None] + dims[2:], _dtypes.as_dtype(dtype)))
        nrows = dims[0]
        return RaggedTensor(values, TensorSpec([None if nrows is None else nrows + 1],
                                               _dtypes.int64))


def constant(pylist, dtype=None, ragged_rank=None, inner_shape=None, name=None,
             row_splits_dtype=None):
    """A RaggedTensor from a list of rows (``tf.ragged.constant``), each row a
    list (or array) of values of the same inner shape. Python ints are int32
    and floats float32, as TensorFlow converts them."""
    if ragged_rank not in (None, 1):
        raise NotImplementedError("conveyor's RaggedTensor has one ragged dimension")
    rows = [to_array(row, dtype) for row in pylist]
    if not rows:
        return RaggedTensor.from_row_splits(np.zeros([0], to_array(0.0 if dtype is None else 0,
                                                                   dtype).dtype), [0])
    kinds = {r.dtype for r in rows if r.size}
    common = np.result_type(*kinds) if kinds and dtype is None else rows[0].dtype
    values = np.concatenate([r.astype(common) if r.ndim else r.reshape(1).astype(common)
                             for r in rows])
    lengths = [max(len(r), 0) if r.ndim else 1 for r in rows]
    return RaggedTensor.from_row_lengths(values, lengths)
