"""``tf.random.uniform``, ``normal``, ``truncated_normal``, ``categorical``
and ``shuffle``, from the per-element streams (docs/differences.md); the
stateless ops are in ``stateless_random_ops`` and the seed rules in ``conveyor.framework.random_seed`` (``conveyor.random``
re-exports them all)."""
import numpy as np

from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor.framework.tracing import Tensor, apply, convert, dtype_of, op_error, static_shape
from conveyor.ops.stateless_random_ops import (stateless_categorical, stateless_normal,
                                               stateless_truncated_normal)

__all__ = ["uniform", "normal", "truncated_normal", "categorical", "shuffle", "gamma"]


def uniform(shape, minval=0, maxval=None, dtype=None, seed=None, name=None):
    """Uniform random values in [minval, maxval) (``tf.random.uniform``).

    Inside a map function each element gets its own values, drawn from a
    stream keyed by the seed and the element's position, so the result does
    not depend on thread count or scheduling (unlike TensorFlow's stateful
    op). Integer dtypes (int32, int64) need `maxval`.
    """
    dtype = _dtypes.float32 if dtype is None else _dtypes.as_dtype(dtype)
    dims = [int(d) for d in np.asarray(shape, dtype=np.int64).reshape(-1)]
    if any(d < 0 for d in dims) or len(dims) > 16:
        raise op_error(ValueError, f"uniform: invalid shape {dims}")
    if dtype in (_dtypes.int32, _dtypes.int64):
        if maxval is None:
            raise op_error(ValueError, "Must specify maxval for integer dtype " + dtype.name)
        bounds = {"int_minval": int(minval), "int_maxval": int(maxval), "minval": 0.0,
                  "maxval": 0.0}
        if int(minval) >= int(maxval):
            raise op_error(ValueError, f"Need minval < maxval: {minval} >= {maxval}")
    elif dtype in (_dtypes.float32, _dtypes.float64):
        bounds = {"int_minval": 0, "int_maxval": 0, "minval": float(minval),
                  "maxval": 1.0 if maxval is None else float(maxval)}
    else:
        raise op_error(TypeError, f"uniform: unsupported dtype {dtype.name}")
    attrs = {"dtype": dtype._code, **bounds, "rank": len(dims), "shape": dims}
    return apply("RandomUniform", [], [(tuple(dims), dtype)], attrs=attrs,
                 random=True, op_seed=seed)


def _element_seed(seed):
    """A [2] int64 seed drawn from the per-element stream (``uniform``'s):
    the stateful normal ops are the stateless ones keyed by it."""
    return uniform([2], minval=0, maxval=2**63 - 1, dtype=_dtypes.int64, seed=seed)


def normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    """Normal random values (``tf.random.normal``): ``stateless_normal``
    keyed by a seed drawn from the per-element stream, so inside a map each
    element gets its own values whatever the thread count, as ``uniform``
    (the values are not TensorFlow's stateful stream; docs/differences.md)."""
    return stateless_normal(shape, _element_seed(seed), mean, stddev, dtype)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    """Normal random values within two standard deviations of `mean`
    (``tf.random.truncated_normal``): ``stateless_truncated_normal`` keyed
    by a seed drawn from the per-element stream, as ``normal``."""
    return stateless_truncated_normal(shape, _element_seed(seed), mean, stddev, dtype)


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """`num_samples` class indices per row of `logits` [batch, classes]
    (``tf.random.categorical``): ``stateless_categorical`` keyed by a seed
    from the per-element stream, as ``normal``."""
    return stateless_categorical(logits, num_samples, _element_seed(seed),
                                 _dtypes.int64 if dtype is None else dtype)


def shuffle(value, seed=None, name=None):
    """`value` with its rows (first dimension) in a random order
    (``tf.random.shuffle``): the order is drawn from the per-element stream
    (op RandomPermutation), as ``uniform``'s values, then the rows are
    gathered. A scalar is an InvalidArgumentError (a ValueError when
    traced)."""
    from conveyor.ops.array_ops import gather
    x = convert(value, name="value")
    shape = static_shape(x)
    if shape is not None and len(shape) == 0:
        raise op_error(ValueError if isinstance(x, Tensor) else _errors.InvalidArgumentError,
                       "RandomShuffle: value must be at least 1-D, got a scalar")
    order = apply("RandomPermutation", [x], [(None if shape is None else (shape[0],),
                                              _dtypes.int64)], random=True, op_seed=seed)
    return gather(x, order)


def gamma(shape, alpha, beta=None, dtype=_dtypes.float32, seed=None, name=None):
    """Gamma(alpha, beta) samples (``tf.random.gamma``; mixup draws its
    weights from it): shape `shape` + the broadcast shape of `alpha` and
    `beta` (`beta` the inverse scale, 1 by default), each at least the
    dtype's smallest normal number, as TensorFlow. Drawn from the
    per-element stream (op RandomGamma), as ``uniform``; float16, float32 or
    float64."""
    from conveyor.ops.math_ops import add, divide, maximum, multiply
    dtype = _dtypes.as_dtype(dtype)
    if dtype not in (_dtypes.float16, _dtypes.float32, _dtypes.float64):
        raise op_error(TypeError, f"gamma: dtype must be float16, float32 or float64, got "
                                  f"{dtype.name}")
    dims = [int(d) for d in np.asarray(shape, dtype=np.int64).reshape(-1)]
    if any(d < 0 for d in dims) or len(dims) > 16:
        raise op_error(ValueError, f"gamma: invalid shape {dims}")
    t = dtype.as_numpy_dtype
    a = alpha if isinstance(alpha, Tensor) else convert(np.asarray(alpha).astype(t))
    b = None if beta is None else beta if isinstance(beta, Tensor) else \
        convert(np.asarray(beta).astype(t))
    for v, what in ((a, "alpha"), (b, "beta")):
        if v is not None and dtype_of(v) != dtype:
            raise op_error(TypeError, f"gamma: {what} must be {dtype.name}, got "
                                      f"{dtype_of(v).name}")
    if b is not None:
        a = add(a, multiply(b, t(0)))  # broadcast alpha against beta, as TensorFlow
    a_shape = static_shape(a)
    out = None if a_shape is None else tuple(dims) + tuple(a_shape)
    g = apply("RandomGamma", [a], [(out, dtype)], attrs={"rank": len(dims), "shape": dims},
              random=True, op_seed=seed)
    if b is not None:
        g = divide(g, b)
    return maximum(g, t(np.finfo(t).tiny))
