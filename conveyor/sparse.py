"""``tf.sparse``: the sparse tensors that ``VarLenFeature`` parsing gives.

A ``SparseTensor`` is three tensors: int64 ``indices`` ``[N, rank]``,
``values`` ``[N]`` and int64 ``dense_shape`` ``[rank]``. ``to_dense`` runs as
a native op inside a map function (csrc/ops/sparse_to_dense.c) and eagerly;
``from_dense`` is composed from where, gather_nd and shape (native too).
"""
import numpy as np

from conveyor import dtypes as _dtypes
from conveyor.framework.tracing import Tensor, apply, convert, dtype_of, op_error, static_shape
from conveyor.io.example import SparseTensor

__all__ = ["SparseTensor", "to_dense", "from_dense"]


def _static_dims(dense_shape, rank):
    """dense_shape's values when known now (a NumPy value), else Nones."""
    if isinstance(dense_shape, Tensor):
        return (None,) * rank
    try:
        values = np.asarray(dense_shape)
        if values.dtype.kind in "iu" and values.ndim == 1:
            return tuple(int(v) for v in values)
    except Exception:  # noqa: BLE001 - a traced value has no NumPy form
        pass
    return (None,) * rank


def to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """The dense tensor `sp_input` stands for, other positions `default_value`
    (0, or ``b""`` for strings), as ``tf.sparse.to_dense``. Indices out of
    bounds, repeated or out of order raise ``InvalidArgumentError``."""
    if not (hasattr(sp_input, "indices") and hasattr(sp_input, "values")
            and hasattr(sp_input, "dense_shape")):
        raise op_error(TypeError, f"to_dense: expected a SparseTensor, got "
                                  f"{type(sp_input).__name__}")
    indices = convert(sp_input.indices, _dtypes.int64, name="indices")
    values = convert(sp_input.values, name="values")
    dense_shape = convert(sp_input.dense_shape, _dtypes.int64, name="dense_shape")
    dtype = dtype_of(values)
    if default_value is None:
        default_value = b"" if dtype == _dtypes.string else 0
    default = convert(default_value, dtype, name="default_value")
    shape = static_shape(dense_shape)
    if shape is None or len(shape) != 1 or shape[0] is None:
        raise op_error(ValueError, "to_dense: dense_shape needs a known length")
    dims = _static_dims(sp_input.dense_shape, shape[0])
    return apply("SparseToDense", [indices, values, dense_shape, default], [(dims, dtype)])


def from_dense(tensor, name=None):
    """The SparseTensor of `tensor`'s non-zero entries (non-empty strings),
    in row-major order (``tf.sparse.from_dense``)."""
    from conveyor.ops.array_ops import shape, where
    from conveyor.ops.indexing_ops import gather_nd
    from conveyor.ops.math_ops import not_equal
    x = convert(tensor, name="tensor")
    dt = dtype_of(x)
    zero = b"" if dt == _dtypes.string else (False if dt.is_bool else
                                             np.zeros((), dt.as_numpy_dtype))
    indices = where(not_equal(x, zero))
    return SparseTensor(indices, gather_nd(x, indices), shape(x, out_type=_dtypes.int64))
