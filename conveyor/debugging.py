"""``conveyor.debugging``: the checks of ``tf.debugging`` an input pipeline uses.

``check_numerics`` is an element op (csrc/ops/check_numerics.c): traced into
a map function it runs natively and fails the element with an
``InvalidArgumentError`` ("<message> : Tensor had NaN values"), which
``Dataset.ignore_errors()`` drops (``assert_all_finite`` is the same op).
``assert_rank``, ``assert_rank_at_least``, ``assert_scalar``,
``assert_integer``, ``assert_type`` and ``assert_shapes`` check static
shapes and dtypes; inside a traced function
they check when the function is traced (a ValueError / TypeError then, as
TensorFlow's graph), and a check that needs a dim only known per element
makes the function run in Python. The value checks (``assert_equal``,
``assert_none_equal``, ``assert_less[_equal]``, ``assert_greater[_equal]``,
``assert_negative``, ``assert_non_negative``, ``assert_non_positive``,
``assert_positive``) compare with TensorFlow's dtype rules and check every
value: eagerly at once, and inside a traced map function natively for each
element (csrc/ops/assert.c), failing it with an ``InvalidArgumentError``
whose message is TensorFlow's first line (without the values). They return
None.
"""
import numpy as np

from conveyor import dtypes as _dtypes
from conveyor import errors
from conveyor.ops.math_ops import _binary
from conveyor.framework.tracing import (Tensor, apply, convert, current_trace, dtype_of, op_error,
                                        static_shape)


def _is_traced(*values):
    return any(isinstance(v, Tensor) for v in values) or current_trace() is not None

__all__ = ["check_numerics", "assert_all_finite", "assert_equal", "assert_none_equal",
           "assert_less", "assert_less_equal", "assert_greater", "assert_greater_equal",
           "assert_negative", "assert_non_negative", "assert_non_positive", "assert_positive",
           "assert_rank", "assert_rank_at_least", "assert_scalar", "assert_integer",
           "assert_type", "assert_shapes"]


def check_numerics(tensor, message, name=None):
    """`tensor` unchanged, or an ``InvalidArgumentError`` ("`message` : Tensor
    had NaN values", "Inf values" or "Inf and NaN values") when it holds NaN
    or infinity (``tf.debugging.check_numerics``). Float tensors only."""
    x = convert(tensor, name="tensor")
    if not dtype_of(x).is_floating:
        exc = TypeError if isinstance(x, Tensor) else errors.InvalidArgumentError
        raise op_error(exc, f"CheckNumerics: {dtype_of(x).name} is not a float dtype (float16, "
                            f"float32, float64)")
    return apply("CheckNumerics", [x], [(static_shape(x), dtype_of(x))], string=str(message))


def assert_all_finite(t, msg, name=None, x=None, message=None):
    """`t` unchanged, or an InvalidArgumentError when it holds NaN or
    infinity (``tf.debugging.assert_all_finite``: ``check_numerics``)."""
    return check_numerics(x if t is None else t, message if msg is None else msg)


def _values(*tensors):
    return [convert(t) for t in tensors]


def _traced_check(fname, x, y, message, text):
    """Inside a traced function: record `x fname y` and an Assert of it, a
    native check of every element's values."""
    ok = _binary(fname, x, y)
    prefix = f"{message}\n" if message else ""
    apply("Assert", [ok], [(static_shape(ok), _dtypes.bool)], string=prefix + text)


def _fail(message, text):
    prefix = f"{message}\n" if message else ""
    raise errors.InvalidArgumentError(prefix + text)


_OPS = {"==": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal", ">": "greater",
        ">=": "greater_equal"}


def _compare(fname, symbol, op, x, y, message):
    if _is_traced(x, y):
        return _traced_check(_OPS[symbol], x, y, message, f"Condition x {symbol} y did not hold.")
    x, y = _values(x, y)
    if dtype_of(x) != dtype_of(y):
        raise errors.InvalidArgumentError(f"{fname}: x and y must have the same dtype, got "
                                          f"{dtype_of(x).name} and {dtype_of(y).name}")
    try:
        ok = np.broadcast_to(op(x, y), np.broadcast_shapes(x.shape, y.shape))
    except ValueError:
        raise errors.InvalidArgumentError(f"Incompatible shapes: {list(x.shape)} vs. "
                                          f"{list(y.shape)}") from None
    if ok.all():
        return None
    bad = np.argwhere(~ok)
    bx, by = np.broadcast_to(x, ok.shape), np.broadcast_to(y, ok.shape)
    _fail(message, f"Condition x {symbol} y did not hold.\nIndices of first {len(bad)} "
                   f"different values:\n{bad}\nCorresponding x values:\n"
                   f"{bx[tuple(bad.T)]}\nCorresponding y values:\n{by[tuple(bad.T)]}\n"
                   f"First {x.size} elements of x:\n{x.reshape(-1)}\nFirst {y.size} elements "
                   f"of y:\n{y.reshape(-1)}")


def assert_equal(x, y, message=None, summarize=None, name=None):
    """InvalidArgumentError unless x == y everywhere (broadcasting). Checked
    per element when traced."""
    return _compare("assert_equal", "==", np.equal, x, y, message)


def assert_none_equal(x, y, message=None, summarize=None, name=None):
    """InvalidArgumentError unless x != y everywhere. Checked per element when traced."""
    return _compare("assert_none_equal", "!=", np.not_equal, x, y, message)


def assert_less_equal(x, y, message=None, summarize=None, name=None):
    """InvalidArgumentError unless x <= y everywhere. Checked per element when traced."""
    return _compare("assert_less_equal", "<=", np.less_equal, x, y, message)


def assert_greater_equal(x, y, message=None, summarize=None, name=None):
    """InvalidArgumentError unless x >= y everywhere. Checked per element when traced."""
    return _compare("assert_greater_equal", ">=", np.greater_equal, x, y, message)


def assert_less(x, y, message=None, summarize=None, name=None):
    """InvalidArgumentError unless x < y everywhere. Checked per element when traced."""
    return _compare("assert_less", "<", np.less, x, y, message)


def assert_greater(x, y, message=None, summarize=None, name=None):
    """InvalidArgumentError unless x > y everywhere. Checked per element when traced."""
    return _compare("assert_greater", ">", np.greater, x, y, message)


def _sign(fname, symbol, op, x, message):
    if _is_traced(x):
        return _traced_check(_OPS[symbol], x, 0, message,
                             f"Condition x {symbol} 0 did not hold element-wise.")
    (x,) = _values(x)
    if op(x).all():
        return None
    _fail(message, f"Condition x {symbol} 0 did not hold element-wise:\nx (shape={x.shape} "
                   f"dtype={dtype_of(x).name}) = \n{[str(v) for v in x.reshape(-1)]}")


def assert_non_negative(x, message=None, summarize=None, name=None):
    """InvalidArgumentError unless x >= 0 everywhere. Checked per element when traced."""
    return _sign("assert_non_negative", ">=", lambda v: v >= 0, x, message)


def assert_positive(x, message=None, summarize=None, name=None):
    """InvalidArgumentError unless x > 0 everywhere. Checked per element when traced."""
    return _sign("assert_positive", ">", lambda v: v > 0, x, message)


def assert_negative(x, message=None, summarize=None, name=None):
    """InvalidArgumentError unless x < 0 everywhere. Checked per element when traced."""
    return _sign("assert_negative", "<", lambda v: v < 0, x, message)


def assert_non_positive(x, message=None, summarize=None, name=None):
    """InvalidArgumentError unless x <= 0 everywhere. Checked per element when traced."""
    return _sign("assert_non_positive", "<=", lambda v: v <= 0, x, message)


def _label(x):
    return x._name if isinstance(x, Tensor) else ""


def assert_rank(x, rank, message=None, name=None):
    """ValueError unless `x` has rank `rank` (checked statically)."""
    t = convert(x, name="x")
    shape = static_shape(t)
    if shape is None:
        raise t._trace.fail("tf.debugging.assert_rank of a tensor of unknown rank")
    if isinstance(rank, Tensor):
        raise rank._trace.fail("tf.debugging.assert_rank with a traced rank")
    if len(shape) != int(rank):
        prefix = f"{message}.  " if message else ""
        raise op_error(ValueError, f"{prefix}Tensor {_label(t)} must have rank {int(rank)}.  "
                                   f"Received rank {len(shape)}, shape {tuple(shape)}")
    return None


def assert_rank_at_least(x, rank, message=None, name=None):
    """ValueError unless `x` has rank `rank` or more (checked statically)."""
    t = convert(x, name="x")
    shape = static_shape(t)
    if shape is None:
        raise t._trace.fail("tf.debugging.assert_rank_at_least of a tensor of unknown rank")
    if len(shape) < int(rank):
        prefix = f"{message}.  " if message else ""
        raise op_error(ValueError, f"{prefix}Tensor {_label(t)} must have rank at least "
                                   f"{int(rank)}.  Received rank {len(shape)}, shape "
                                   f"{tuple(shape)}")
    return None


def assert_scalar(tensor, message=None, name=None):
    """`tensor`, or a ValueError unless it is a scalar (checked statically)."""
    t = convert(tensor, name="tensor")
    shape = static_shape(t)
    if shape is None:
        raise t._trace.fail("tf.debugging.assert_scalar of a tensor of unknown rank")
    if len(shape) != 0:
        prefix = f"{message} " if message else ""
        raise op_error(ValueError, f"{prefix}Expected scalar shape, saw shape: {tuple(shape)}.")
    return tensor


def assert_integer(x, message=None, name=None):
    """TypeError unless `x` has an integer dtype (checked statically)."""
    t = convert(x, name="x")
    if not dtype_of(t).is_integer:
        prefix = f"{message} " if message else ""
        raise op_error(TypeError, f"{prefix}Expected integer type for tensor {_label(t)}, got "
                                  f"{dtype_of(t).name}")
    return None


def assert_type(tensor, tf_type, message=None, name=None):
    """TypeError unless `tensor` has dtype `tf_type` (checked statically)."""
    t = convert(tensor, name="tensor")
    want = _dtypes.as_dtype(tf_type)
    if dtype_of(t) != want:
        prefix = f"{message} " if message else ""
        label = _label(t) or "tensor"
        raise op_error(TypeError, f"{prefix}{label} must be of type tf.{want.name}; got "
                                  f"tf.{dtype_of(t).name}")
    return None


def assert_shapes(shapes, data=None, summarize=None, message=None, name=None):
    """ValueError unless each (tensor, shape) pair matches (checked
    statically): a shape entry is an int, a name that must stand for the
    same size everywhere, ``'.'`` for any size, and a first ``'*'`` or
    ``...`` for any number of leading dims. A check that needs a dim only
    known per element makes a traced map function run in Python."""
    pairs = list(shapes.items()) if isinstance(shapes, dict) else list(shapes)
    sizes = {}
    for tensor, spec in pairs:
        t = convert(tensor)
        shape = static_shape(t)
        spec = list(spec) if isinstance(spec, (list, tuple)) else [spec]
        variable = bool(spec) and (spec[0] is Ellipsis or spec[0] == "*")
        if variable:
            spec = spec[1:]
        if any(s is Ellipsis or s == "*" for s in spec):
            raise ValueError(f"Tensor {_label(t)} specified shape index {len(spec)}.  Symbol "
                             f"`...` or `*` for a variable number of unspecified dimensions is "
                             f"only allowed as the first entry")
        if shape is None:
            raise t._trace.fail("tf.debugging.assert_shapes of a tensor of unknown rank")
        if len(shape) != len(spec) and not (variable and len(shape) >= len(spec)):
            raise op_error(ValueError, f"Tensor {_label(t)} must have rank "
                                       f"{len(spec) if not variable else f'>= {len(spec)}'}.  "
                                       f"Received rank {len(shape)}, shape {tuple(shape)}")
        dims = shape[len(shape) - len(spec):]
        for i, (want, have) in enumerate(zip(spec, dims)):
            if want == ".":
                continue
            if isinstance(want, str):
                want = sizes.setdefault(want, have)
            if want is None or have is None:
                if isinstance(t, Tensor) or want is None:
                    trace = t._trace if isinstance(t, Tensor) else None
                    if trace is not None:
                        raise trace.fail("tf.debugging.assert_shapes of a dim only known per "
                                         "element")
                    continue
            if int(want) != have:
                raise op_error(ValueError, f"Tensor {_label(t)} dimension "
                                           f"{len(shape) - len(spec) + i} must have size "
                                           f"{want}.  Received size {have}, shape {tuple(shape)}")
    return None
