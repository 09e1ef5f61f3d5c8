"""``tf.strided_slice`` and ``tf.gather_nd``, built on the element ops
conveyor has (StridedSlice, gather, Assert), and ``tf.searchsorted``,
``tf.scatter_nd`` and ``tf.tensor_scatter_nd_update`` with its add, sub,
max and min forms (ops SearchSorted and ScatterNd), eagerly and traced into
a map's native program. Their begin/end/strides, scatter_nd's shape and the
leading dims that `gather_nd` indexes must be static; a traced call that
needs a value only known per element stops the trace (the map then runs in
Python)."""
import builtins
import collections

import numpy as np

from conveyor import dtypes as _dtypes
from conveyor import errors
from conveyor.framework.eager import as_eager
from conveyor.framework.tracing import Tensor, apply, convert, dtype_of, op_error, static_shape
from conveyor.ops.array_ops import gather, reshape, shape, zeros
from conveyor.ops.functional_ops import Assert
from conveyor.ops.manip_ops import _ints as _static
from conveyor.ops.math_ops import (_getitem, add, cast, equal, greater_equal, less, logical_and,
                                   multiply, range as _range, reduce_all, reduce_prod,
                                   reduce_sum)

__all__ = ["strided_slice", "gather_nd", "searchsorted", "scatter_nd", "tensor_scatter_nd_update",
           "tensor_scatter_nd_add", "tensor_scatter_nd_sub", "tensor_scatter_nd_max",
           "tensor_scatter_nd_min", "unique"]


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None, name=None):
    """``tf.strided_slice``: the slice ``input_[begin:end:strides]`` one
    entry per dim, with TensorFlow's masks (bit i of `begin_mask` /
    `end_mask` ignores begin[i] / end[i], of `ellipsis_mask` makes entry i
    ``...``, of `new_axis_mask` ``tf.newaxis``, of `shrink_axis_mask` the
    single index begin[i]): what ``x[...]`` does. begin, end and strides
    are static here."""
    x = convert(input_, name="input_")
    b, e = _static(begin, "strided_slice", "begin"), _static(end, "strided_slice", "end")
    st = [1] * len(b) if strides is None else _static(strides, "strided_slice", "strides")
    if not len(b) == len(e) == len(st):
        raise op_error(ValueError, f"strided_slice: begin, end and strides must have one length, "
                                   f"got {len(b)}, {len(e)} and {len(st)}")
    key = []
    for i in builtins.range(len(b)):
        bit = 1 << i
        if ellipsis_mask & bit:
            key.append(Ellipsis)
        elif new_axis_mask & bit:
            key.append(None)
        elif shrink_axis_mask & bit:
            key.append(b[i])
        else:
            if st[i] == 0:
                raise op_error(ValueError if isinstance(x, Tensor) else
                               errors.InvalidArgumentError, "strides[%d] must be non-zero" % i)
            key.append(builtins.slice(None if begin_mask & bit else b[i],
                                      None if end_mask & bit else e[i], st[i]))
    if isinstance(x, Tensor):
        return _getitem(x, tuple(key))
    arr = np.asarray(x)
    try:
        return as_eager(np.array(arr[tuple(key)]))
    except IndexError as exc:
        raise errors.InvalidArgumentError(f"strided_slice: {exc}") from None


def gather_nd(params, indices, batch_dims=0, name=None):
    """``tf.gather_nd``: the slices of `params` at `indices`, whose last dim
    K indexes params' dims after the first `batch_dims`; the result's shape
    is indices.shape[:-1] + params.shape[batch_dims + K:]. With `batch_dims`
    b, the first b dims of params and indices are batch dims that must
    match: entry [i1..ib, ...] of indices indexes params[i1..ib]. An index
    outside params' shape is an InvalidArgumentError. params' batch dims and
    the K dims it indexes must be static."""
    p = convert(params, name="params")
    idx = convert(indices, name="indices")
    traced = isinstance(p, Tensor) or isinstance(idx, Tensor)
    b = _static(batch_dims, "gather_nd", "batch_dims")
    if len(b) != 1:
        raise op_error(ValueError, "gather_nd: `batch_dims` must be a single int")
    b = int(b[0])
    if b < 0:
        raise op_error(ValueError, "tf.gather_nd does not allow negative batch_dims.")
    if dtype_of(idx) not in (_dtypes.int16, _dtypes.int32, _dtypes.int64):
        raise op_error(TypeError, f"gather_nd: indices must be int16, int32 or int64, got "
                                  f"{dtype_of(idx).name}")
    ps, ishape = static_shape(p), static_shape(idx)
    if ps is None or ishape is None or not ishape or ishape[-1] is None:
        raise next(v for v in (p, idx) if isinstance(v, Tensor))._trace.fail(
            "gather_nd with an unknown rank or index depth is not supported natively")
    if b and b >= len(ishape):
        raise op_error(ValueError, f"Argument `batch_dims` = {b} must be less than "
                                   f"rank(`indices`) = {len(ishape)}")
    if b and b >= len(ps):
        raise op_error(ValueError, f"Argument `batch_dims` = {b} must be less than "
                                   f"rank(`params`) = {len(ps)}")
    k = ishape[-1]
    if k > len(ps) - b:
        raise op_error(ValueError if traced else errors.InvalidArgumentError,
                       f"gather_nd: index innermost dimension length must be <= params rank; "
                       f"saw: {k} vs. {len(ps) - b}")
    batch, dims = ps[:b], ps[b:b + k]
    rest = list(ps[b + k:])
    # One batch dim may be known only per element (a batch not dropping its
    # remainder) when the rest are static: its size is then read per element.
    # The first indexed dim may be unknown too (rows picked by tf.where) when
    # nothing else is: strides do not depend on it, the bounds are read per element.
    lead_unknown = bool(dims) and dims[0] is None
    if any(d is None for d in dims[1:]) or builtins.sum(d is None for d in batch) > 1 or (
            None in batch and None in rest) or (lead_unknown and (b or None in rest)):
        raise (p if isinstance(p, Tensor) else idx)._trace.fail(
            "gather_nd into dims of unknown size is not supported natively")
    for j, (db, di) in enumerate(zip(batch, ishape[:b])):
        if di is not None and di != db:
            raise op_error(ValueError if traced else errors.InvalidArgumentError,
                           f"gather_nd: batch dimension {j} of params ({db}) and indices ({di}) "
                           f"must match")
    idx = cast(idx, _dtypes.int64)
    if any(d is None for d in ishape[:b] + batch):  # checked per element
        want = (np.array(batch, np.int64) if None not in batch else
                _getitem(shape(p, out_type=_dtypes.int64), builtins.slice(0, b)))
        Assert(reduce_all(equal(_getitem(shape(idx, out_type=_dtypes.int64), builtins.slice(0, b)),
                                want)),
               ["gather_nd: the batch dims of params and indices must match"])
    bounds = np.array(dims if not lead_unknown else [0] + list(dims[1:]), np.int64)
    if lead_unknown:  # dims[0] as it is per element
        bounds = add(bounds, multiply(_getitem(shape(p, out_type=_dtypes.int64),
                                               builtins.slice(0, k)),
                                      np.array([1] + [0] * (k - 1), np.int64)))
    inside = logical_and(greater_equal(idx, np.int64(0)), less(idx, bounds))
    Assert(reduce_all(inside), [f"gather_nd: indices do not index into param shape "
                                f"{list(ps)}"])
    strides = np.array([int(np.prod(dims[j + 1:], dtype=np.int64)) for j in builtins.range(k)],
                       np.int64)
    flat = reduce_sum(multiply(idx, strides), axis=-1)
    block = -1 if lead_unknown else int(np.prod(dims, dtype=np.int64))
    lay = [-1 if d is None else d for d in batch] + [1] * (len(ishape) - 1 - b)
    if b and None in batch:  # range(number of batch entries) * block, laid out as the batch
        count = reduce_prod(_getitem(shape(p, out_type=_dtypes.int64), builtins.slice(0, b)))
        flat = add(flat, reshape(multiply(_range(count, dtype=_dtypes.int64), np.int64(block)),
                                 lay))
    elif b:  # batch entry i1..ib starts at block * (its row-major number) in the flat table
        offsets = np.arange(int(np.prod(batch, dtype=np.int64)), dtype=np.int64) * block
        flat = add(flat, offsets.reshape(lay))
    lead = -1 if None in batch or lead_unknown else int(np.prod(batch, dtype=np.int64)) * block
    table = reshape(p, [lead] + [-1 if d is None else d for d in rest])
    return gather(table, flat)


def searchsorted(sorted_sequence, values, side="left", out_type=_dtypes.int32, name=None):
    """For each of `values`, the index where it would go in its row of
    `sorted_sequence` (the last axis; leading dims agree) to keep the row
    sorted (``tf.searchsorted``): before equal entries (``side="left"``) or
    after them ("right"). int32 or int64 indices (`out_type`)."""
    if side not in ("left", "right"):
        raise op_error(ValueError, f"side must be either 'right' or 'left'.  Saw: {side}.")
    s = convert(sorted_sequence, name="sorted_sequence")
    v = convert(values, name="values")
    out_type = _dtypes.as_dtype(out_type)
    if out_type not in (_dtypes.int32, _dtypes.int64):
        raise op_error(TypeError, f"searchsorted: out_type must be int32 or int64, got "
                                  f"{out_type.name}")
    if dtype_of(s) != dtype_of(v) or dtype_of(s) in (_dtypes.string, _dtypes.bool):
        raise op_error(TypeError, f"searchsorted: sorted_sequence and values must share a "
                                  f"numeric dtype, got {dtype_of(s).name} and {dtype_of(v).name}")
    ss, vs = static_shape(s), static_shape(v)
    if ss is not None and vs is not None and (len(ss) != len(vs) or not ss):
        raise op_error(ValueError if isinstance(s, Tensor) or isinstance(v, Tensor)
                       else errors.InvalidArgumentError,
                       f"searchsorted: sorted_sequence and values must have the same rank "
                       f"(at least 1), got shapes {list(ss)} and {list(vs)}")
    return apply("SearchSorted", [s, v], [(vs, out_type)],
                 attrs={"right": int(side == "right"), "dtype": out_type._code})


# ScatterNd's mode attribute (csrc/ops/scatter_nd.c).
_MODES = {"update": 0, "add": 1, "sub": 2, "max": 3, "min": 4}


def _scatter(tensor, indices, updates, mode, fname):
    t = convert(tensor, name="tensor")
    idx = convert(indices, name="indices")
    u = convert(updates, name="updates")
    if dtype_of(idx) not in (_dtypes.int32, _dtypes.int64):
        raise op_error(TypeError, f"{fname}: indices must be int32 or int64, got "
                                  f"{dtype_of(idx).name}")
    if (dtype_of(t) != dtype_of(u) or dtype_of(t) == _dtypes.string
            or (mode != "update" and dtype_of(t) == _dtypes.bool)):
        raise op_error(TypeError, f"{fname}: updates must be numbers of the tensor's dtype, got "
                                  f"{dtype_of(u).name} for {dtype_of(t).name}")
    return apply("ScatterNd", [t, idx, u], [(static_shape(t), dtype_of(t))],
                 attrs={"mode": _MODES[mode]})


def scatter_nd(indices, updates, shape, name=None):
    """A tensor of `shape` (static here), zeros but for `updates` at
    `indices` (``tf.scatter_nd``); updates to one index are added. An index
    outside `shape` is an InvalidArgumentError."""
    u = convert(updates, name="updates")
    if isinstance(shape, Tensor):
        raise shape._trace.fail("scatter_nd with a traced `shape` is not supported natively")
    dims = [int(d) for d in np.asarray(shape).reshape(-1)]
    if dtype_of(u) == _dtypes.string:
        raise op_error(TypeError, "scatter_nd: string updates are not supported natively")
    return _scatter(zeros(dims, dtype_of(u)), indices, u, "add", "scatter_nd")


def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    """A copy of `tensor` with the slices at `indices` replaced by `updates`
    (``tf.tensor_scatter_nd_update``); of updates to one index the last
    wins. An index outside tensor's shape is an InvalidArgumentError."""
    return _scatter(tensor, indices, updates, "update", "tensor_scatter_nd_update")


def tensor_scatter_nd_add(tensor, indices, updates, name=None):
    """A copy of `tensor` with `updates` added to the slices at `indices`
    (``tf.tensor_scatter_nd_add``); updates to one index are all added."""
    return _scatter(tensor, indices, updates, "add", "tensor_scatter_nd_add")


def tensor_scatter_nd_sub(tensor, indices, updates, name=None):
    """A copy of `tensor` with `updates` subtracted from the slices at
    `indices` (``tf.tensor_scatter_nd_sub``)."""
    return _scatter(tensor, indices, updates, "sub", "tensor_scatter_nd_sub")


def tensor_scatter_nd_max(tensor, indices, updates, name=None):
    """A copy of `tensor` where each slice at `indices` is the elementwise
    maximum of itself and `updates` (``tf.tensor_scatter_nd_max``)."""
    return _scatter(tensor, indices, updates, "max", "tensor_scatter_nd_max")


def tensor_scatter_nd_min(tensor, indices, updates, name=None):
    """A copy of `tensor` where each slice at `indices` is the elementwise
    minimum of itself and `updates` (``tf.tensor_scatter_nd_min``)."""
    return _scatter(tensor, indices, updates, "min", "tensor_scatter_nd_min")


Unique = collections.namedtuple("Unique", ["y", "idx"])


def unique(x, out_idx=_dtypes.int32, name=None):
    """The distinct values of the 1-D tensor `x` in order of first
    appearance, and for each value of `x` its position among them
    (``tf.unique``: a (y, idx) named tuple; idx int32 or int64). Numbers and
    bool run natively (op Unique; y's length is unknown when traced);
    strings are computed eagerly, and inside a map they make the function
    run in Python (a TracingWarning names the op)."""
    v = convert(x, name="x")
    out_idx = _dtypes.as_dtype(out_idx)
    if out_idx not in (_dtypes.int32, _dtypes.int64):
        raise op_error(TypeError, f"unique: out_idx must be int32 or int64, got {out_idx.name}")
    shape = static_shape(v)
    if shape is not None and len(shape) != 1:
        raise op_error(ValueError if isinstance(v, Tensor) else errors.InvalidArgumentError,
                       f"unique expects a 1D vector, got shape {list(shape)}")
    if dtype_of(v) == _dtypes.string:
        if isinstance(v, Tensor):
            raise v._trace.fail("tf.unique of strings is computed eagerly in conveyor, not "
                                "natively")
        seen = {}
        idx = [seen.setdefault(s, len(seen)) for s in np.asarray(v, dtype=object).tolist()]
        y = np.empty(len(seen), dtype=object)
        y[:] = list(seen)
        return Unique(as_eager(y), as_eager(np.array(idx, out_idx.as_numpy_dtype)))
    y, idx = apply("Unique", [v], [((None,), dtype_of(v)), (shape, out_idx)],
                   attrs={"dtype": out_idx._code})
    return Unique(y, idx)
