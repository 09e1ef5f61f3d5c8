"""``tf.map_fn``, ``tf.case``, ``tf.Assert``, ``tf.name_scope`` and
``tf.control_dependencies``, eagerly and inside traced map functions.

``map_fn`` over a first dim of static size unrolls into the traced program
(one call of `fn` per slice); an unknown size stops the trace. ``case`` is
nested ``cond``s (both branches run and a select picks, when traced).
``Assert`` checks eagerly at once and, traced, per element with the
engine's Assert op (csrc/ops/assert.c). Names and control dependencies mean
nothing to conveyor (its ops run in program order): the context managers
only keep the nesting of names."""
import threading

import numpy as np

from conveyor import dtypes as _dtypes
from conveyor import errors, nest
from conveyor.framework.eager import as_eager
from conveyor.framework.tracing import Tensor, apply, convert, dtype_of, op_error, static_shape
from conveyor.ops.array_ops import stack, unstack
from conveyor.ops.control_flow_ops import cond

__all__ = ["map_fn", "case", "switch_case", "Assert", "name_scope", "control_dependencies"]


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False,
           infer_shape=True, name=None, fn_output_signature=None):
    """``tf.map_fn``: ``fn`` applied to each slice of `elems` (a tensor or a
    structure of tensors of the same first dim) along dim 0, the results
    stacked. `dtype` / `fn_output_signature` give the result's dtypes (needed
    only when `elems` is empty)."""
    structure = elems
    flat = [convert(e, name="elems") for e in nest.flatten(elems)]
    if not flat:
        raise ValueError("elems must be a Tensor or (possibly nested) sequence of Tensors. Got "
                         f"{elems}")
    sizes = set()
    for e in flat:
        shape = static_shape(e)
        if shape is None or not shape:
            raise op_error(ValueError, "Elements in elems must be 1+ dimensional Tensors, not "
                                       "scalars")
        sizes.add(shape[0])
    if None in sizes:
        traced = next(e for e in flat if isinstance(e, Tensor))
        raise traced._trace.fail("map_fn over a first dim of unknown size is not supported "
                                 "natively")
    if len(sizes) != 1:
        raise op_error(ValueError, f"Elements in elems must have the same first dimension: "
                                   f"{sorted(sizes)}")
    n = sizes.pop()
    signature = fn_output_signature if fn_output_signature is not None else dtype
    if n == 0:
        if signature is None:
            raise NotImplementedError("map_fn over an empty input needs `fn_output_signature`")
        return nest.map_structure(lambda d: as_eager(np.zeros((0,), _dtypes.as_dtype(
            getattr(d, "dtype", d)).as_numpy_dtype)), signature)
    traced = any(isinstance(e, Tensor) for e in flat)
    if traced:
        slices = [unstack(e, num=n) for e in flat]
    else:
        slices = [[as_eager(e[i]) if isinstance(e, np.ndarray) else e[i] for i in range(n)]
                  for e in flat]
    results = []
    for i in range(n):
        args = nest.pack_sequence_as(structure, [s[i] for s in slices])
        results.append(fn(args))
    first = results[0]
    leaves = [nest.flatten(r) for r in results]
    outs = [stack([leaf[j] for leaf in leaves]) for j in range(len(leaves[0]))]
    if signature is not None:
        from conveyor.ops.math_ops import cast
        dtypes = [_dtypes.as_dtype(getattr(d, "dtype", d)) for d in nest.flatten(signature)]
        if len(dtypes) == len(outs):
            outs = [o if dtype_of(o) == d else cast(o, d) for o, d in zip(outs, dtypes)]
    return nest.pack_sequence_as(first, outs)


def _assert_text(condition, data, summarize):
    """TensorFlow's eager message: "Expected '<condition>' to be true.
    Summarized data: " then one line per data item (strings as bytes reprs,
    arrays as their first `summarize` (3) values)."""
    lines = []
    for d in data:
        if isinstance(d, Tensor):
            lines.append("<traced value>")
            continue
        value = d.numpy() if hasattr(d, "numpy") and not isinstance(d, np.ndarray) else d
        if isinstance(value, str):
            value = value.encode()
        arr = np.asarray(value, dtype=object if isinstance(value, bytes) else None)
        if arr.ndim == 0:
            lines.append(repr(arr[()]) if isinstance(arr[()], bytes) else str(arr[()]))
            continue
        flat = arr.reshape(-1)
        shown = flat[:3 if summarize is None else summarize]
        text = ", ".join(repr(v) if isinstance(v, bytes) else str(v) for v in shown.tolist())
        lines.append(text + (", ..." if flat.size > len(shown) else ""))
    return f"Expected '{condition}' to be true. Summarized data: " + "\n".join(lines)


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 - TensorFlow's name
    """``tf.Assert``: fail with ``InvalidArgumentError`` ("assertion failed:
    data") when the scalar bool `condition` is False. Traced, the
    check runs per element (traced `data` values print as ``[...]``)."""
    if isinstance(condition, Tensor):
        if condition.dtype != _dtypes.bool:
            raise op_error(TypeError, f"Assert: condition must be bool, got "
                                      f"{condition.dtype.name}")
        apply("Assert", [condition], [(static_shape(condition), _dtypes.bool)],
              string=_assert_text(condition._name, data, summarize))
        return None
    c = np.asarray(condition)
    if c.dtype != np.bool_ or c.ndim != 0:
        raise errors.InvalidArgumentError(f"In[0] must be a scalar bool, got {condition!r:.80}")
    if not bool(c):
        raise errors.InvalidArgumentError(_assert_text(condition, data, summarize))
    return None


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """``tf.case``: the results of the first callable whose predicate is
    True, else `default` (None: the last pair's callable, which must then
    be the one that holds). With `exclusive`, more than one True predicate
    is an error."""
    if isinstance(pred_fn_pairs, dict):
        pred_fn_pairs = list(pred_fn_pairs.items())
    pairs = list(pred_fn_pairs)
    if not pairs and default is None:
        raise ValueError("pred_fn_pairs must be a non-empty list")
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"Each entry in pred_fn_pairs must be a 2-tuple. Received {pair}.")
        if not callable(pair[1]):
            raise TypeError(f"fn for pred {pair[0]} must be callable.")
    preds = [p if isinstance(p, Tensor) else np.asarray(p) for p, _ in pairs]
    fns = [f for _, f in pairs]
    if exclusive:
        count = None
        for p in preds:
            one = p if isinstance(p, Tensor) else np.asarray(p)
            from conveyor.ops.math_ops import cast
            term = cast(one, _dtypes.int32)
            count = term if count is None else count + term
        from conveyor.ops.math_ops import less_equal
        Assert(less_equal(count, 1), ["Input error: exclusive=True: more than 1 conditions "
                                      "evaluated as True"])
    if default is None:
        last_pred, default = preds.pop(), fns.pop()
        Assert(last_pred, ["Input error: None of conditions evaluated as True:"] +
               [p for p in preds + [last_pred] if not isinstance(p, Tensor)])
    fn = default
    for p, action in reversed(list(zip(preds, fns))):
        fn = (lambda p, action, rest: lambda: cond(p, action, rest))(p, action, fn)
    return fn()


def switch_case(branch_index, branch_fns, default=None, name="switch_case"):
    """``tf.switch_case``: the results of ``branch_fns[branch_index]()``;
    an index out of range runs `default` (None: the last branch).
    `branch_fns` is a list of callables, a list of (int, callable) pairs or a
    dict of them. A traced int32 index (AutoAugment's op choice) runs every
    branch and picks one per element, as ``tf.case`` does; a Python or
    eager index calls one branch."""
    if isinstance(branch_fns, dict):
        items = sorted(branch_fns.items())
    elif isinstance(branch_fns, (list, tuple)) and branch_fns and \
            all(isinstance(b, tuple) for b in branch_fns):
        items = sorted(branch_fns)
    elif isinstance(branch_fns, (list, tuple)):
        items = list(enumerate(branch_fns))
    else:
        raise TypeError("branch_fns must be a list, tuple, or dict")
    if not items:
        raise ValueError("Must provide at least one item in branch_fns")
    keys = [k for k, _ in items]
    if any(not isinstance(k, int) or isinstance(k, bool) for k in keys) or \
            keys != list(range(len(keys))):
        raise ValueError(f"branch indices (keys) must be the integers 0 ... {len(keys) - 1}, "
                         f"got {keys}")
    for k, fn in items:
        if not callable(fn):
            raise TypeError(f"br_fn for index {k} must be callable; got {fn!r}")
    if default is not None and not callable(default):
        raise TypeError("default must be callable")
    fns = [fn for _, fn in items]
    if default is None:
        default = fns.pop()
    if not isinstance(branch_index, Tensor):
        index = np.asarray(branch_index.numpy() if hasattr(branch_index, "numpy")
                           else branch_index)
        if index.dtype != np.int32 and not isinstance(branch_index, int) or index.ndim != 0:
            raise TypeError(f"branch_index must be an int32 scalar, got {branch_index!r:.80}")
        i = int(index)
        return fns[i]() if 0 <= i < len(fns) else default()
    if branch_index.dtype != _dtypes.int32 or branch_index.shape.rank not in (None, 0):
        raise TypeError(f"branch_index must be an int32 scalar, got {branch_index!r}")
    from conveyor.ops.math_ops import equal
    return case([(equal(branch_index, k), fn) for k, fn in enumerate(fns)], default=default)


_scopes = threading.local()


class name_scope:  # noqa: N801 - TensorFlow's name
    """``tf.name_scope``: a context manager whose value is the nested scope
    name ("outer/inner/"); conveyor's ops ignore names."""

    def __init__(self, name, default_name=None, values=None):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name for name_scope must be a string, got {name!r}")
        self._name = name if name is not None else default_name

    def __enter__(self):
        stack_ = getattr(_scopes, "stack", None)
        if stack_ is None:
            stack_ = _scopes.stack = []
        outer = stack_[-1] if stack_ else ""
        scope = outer + self._name + "/" if self._name else outer
        stack_.append(scope)
        return scope

    def __exit__(self, *exc):
        _scopes.stack.pop()
        return False


class control_dependencies:  # noqa: N801 - TensorFlow's name
    """``tf.control_dependencies``: nothing to do (a traced program runs its
    ops in the order they were called, checks included)."""

    def __init__(self, control_inputs):
        self.control_inputs = control_inputs

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
