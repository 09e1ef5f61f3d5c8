"""``tf.sort`` and ``tf.argsort`` (op Sort, csrc/ops/sort.c), eagerly and
traced into a map's native program."""
import builtins

from conveyor import dtypes as _dtypes
from conveyor import errors
from conveyor.framework.tracing import Tensor, apply, convert, dtype_of, op_error, static_shape
from conveyor.ops.array_ops import transpose

__all__ = ["sort", "argsort"]


def _sort(values, axis, direction, indices):
    fname = "argsort" if indices else "sort"
    x = convert(values, name="values")
    traced = isinstance(x, Tensor)
    if direction not in ("ASCENDING", "DESCENDING"):
        raise op_error(ValueError, f"Unknown direction: {direction!r}; use 'ASCENDING' or "
                                   f"'DESCENDING'")
    dt = dtype_of(x)
    if dt == _dtypes.string or dt.is_bool:
        raise op_error(TypeError if traced else errors.InvalidArgumentError,
                       f"{fname}: Value for attr 'T' of {dt.name} is not in the list of allowed "
                       f"values (numbers)")
    shape = static_shape(x)
    if shape is None:
        raise x._trace.fail(f"{fname} of a tensor of unknown rank is not supported natively")
    rank = len(shape)
    if isinstance(axis, Tensor):
        raise axis._trace.fail(f"{fname} with a traced `axis` is not supported natively")
    axis = int(axis)
    if not -rank <= axis < rank:
        raise op_error(ValueError, f"{fname}: axis {axis} is out of range for a tensor of rank "
                                   f"{rank}")
    axis %= rank
    perm = list(builtins.range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    moved = axis != rank - 1
    if moved:
        x = transpose(x, perm)
    out_shape = tuple(shape[p] for p in perm)
    out = apply("Sort", [x], [(out_shape, _dtypes.int32 if indices else dt)],
                attrs={"descending": int(direction == "DESCENDING"), "indices": int(indices)})
    return transpose(out, perm) if moved else out


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """`values` sorted along `axis` (``tf.sort``), 'ASCENDING' or
    'DESCENDING'. Numbers (not strings or bool); with NaN the order differs
    from TensorFlow's, whose top_k-based order with NaN is unspecified
    (docs/differences.md)."""
    return _sort(values, axis, direction, False)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The int32 positions that sort `values` along `axis` (``tf.argsort``).
    The order is always stable (equal values keep their order), which is
    what TensorFlow gives with or without `stable`."""
    return _sort(values, axis, direction, True)
