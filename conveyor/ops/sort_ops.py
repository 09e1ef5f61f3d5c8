"""``tf.sort``, ``tf.argsort`` and ``tf.math.top_k`` (op Sort,
csrc/ops/sort.c), eagerly and traced into a map's native program."""
import builtins
import collections

from conveyor import dtypes as _dtypes
from conveyor import errors
from conveyor.framework.tracing import Tensor, apply, convert, dtype_of, op_error, static_shape
from conveyor.ops.array_ops import transpose

__all__ = ["sort", "argsort", "top_k"]


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


TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


def top_k(input, k=1, sorted=True, index_type=_dtypes.int32, name=None):  # noqa: A002
    """The `k` largest entries of the last axis and their positions
    (``tf.math.top_k``): a (values, indices) named tuple, largest first, of
    equal values the lower position first (a stable descending sort, cut at
    `k`; `sorted=False` gives the same order). `k` is a static int."""
    x = convert(input, name="input")
    traced = isinstance(x, Tensor)
    if isinstance(k, Tensor):
        raise k._trace.fail("top_k with a traced `k` is not supported natively")
    k = int(k)
    index_type = _dtypes.as_dtype(index_type)
    if index_type not in (_dtypes.int16, _dtypes.int32, _dtypes.int64):
        raise op_error(TypeError, f"top_k: index_type must be int16, int32 or int64, got "
                                  f"{index_type.name}")
    shape = static_shape(x)
    error = ValueError if traced else errors.InvalidArgumentError
    if k < 0:
        raise op_error(error, f"Need k >= 0, got {k}")
    if shape is not None and not shape:
        raise op_error(error, "input must be >= 1-D, got shape []")
    if shape is not None and shape[-1] is not None and shape[-1] < k:
        raise op_error(error, f"input must have at least k columns. Had {shape[-1]}, needed {k}"
                       if not traced else f"input must have last dimension >= k = {k} but is "
                                          f"{shape[-1]}")
    values = _sort(x, -1, "DESCENDING", False)[..., :k]
    indices = _sort(x, -1, "DESCENDING", True)[..., :k]
    if index_type != _dtypes.int32:
        from conveyor.ops.math_ops import cast
        indices = cast(indices, index_type)
    return TopKV2(values, indices)
