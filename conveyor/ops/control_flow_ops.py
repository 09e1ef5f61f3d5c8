"""``tf.cond``: one branch eagerly; both branches and a select
(csrc/ops/cond_select.c) inside a traced map function."""
import numpy as np

from conveyor import dtypes as _dtypes
from conveyor import nest
from conveyor.framework.tracing import Tensor, apply, convert, dtype_of, op_error, static_shape

__all__ = ["cond", "no_op", "group"]


def cond(pred, true_fn=None, false_fn=None, name=None):
    """``tf.cond``: ``true_fn()`` if `pred` else ``false_fn()``.

    A Python or NumPy (eager) predicate calls one branch. Inside a traced map
    function a traced scalar bool predicate runs BOTH branches (their ops
    are recorded into the program and computed for every element) and
    picks one branch's results per element; the branches must return the
    same structure of tensors with the same dtypes (shapes may differ: the
    element spec keeps the dims they agree on). A branch that only Python
    can run makes the whole function run in Python, where `pred` has a
    value and only one branch is called.
    """
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("cond: true_fn and false_fn must be callable")
    if not isinstance(pred, Tensor):
        p = np.asarray(pred)
        if p.dtype != np.bool_ or p.ndim != 0:
            raise TypeError(f"cond: pred must be a scalar bool, got {pred!r:.80}")
        return true_fn() if bool(p) else false_fn()
    if pred.dtype != _dtypes.bool or (pred.shape.rank not in (None, 0)):
        raise op_error(ValueError, f"cond: pred must be a scalar bool, got {pred!r}")
    a, b = true_fn(), false_fn()
    try:
        nest.assert_same_structure(a, b)
    except (TypeError, ValueError) as e:
        raise op_error(ValueError, f"true_fn and false_fn arguments to tf.cond must have the "
                                   f"same number, type, and overall structure of return "
                                   f"values: {e}") from None
    fa = [convert(v) for v in nest.flatten(a)]
    fb = [convert(v) for v in nest.flatten(b)]
    if not fa:
        return a
    specs = []
    for va, vb in zip(fa, fb):
        if dtype_of(va) != dtype_of(vb):
            raise op_error(TypeError, f"cond: the branches return {dtype_of(va).name} and "
                                      f"{dtype_of(vb).name} for the same output")
        sa, sb = static_shape(va), static_shape(vb)
        if sa is None or sb is None or len(sa) != len(sb):
            shape = None
        else:
            shape = tuple(x if x == y else None for x, y in zip(sa, sb))
        specs.append((shape, dtype_of(va)))
    outs = apply("CondSelect", [pred] + fa + fb, specs)
    if len(specs) == 1:
        outs = [outs]
    return nest.pack_sequence_as(a, outs)


def no_op(name=None):
    """``tf.no_op``: does nothing; returns None (a traced program runs its
    ops in call order, so there is no operation to depend on)."""
    return None


def group(*inputs, name=None):
    """``tf.group``: None, as TensorFlow returns eagerly. Inside a traced
    map function the grouped ops run anyway (a program runs every op it
    recorded, checks included), so ``tf.control_dependencies([tf.group(...)])``
    keeps its meaning."""
    return None
