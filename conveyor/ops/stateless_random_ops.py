"""TensorFlow's stateless random ops (``tf.random.stateless_uniform``,
``tf.random.experimental.stateless_split``): the same values as TensorFlow
for the same seed, eagerly and traced in ``Dataset.map`` (op
``StatelessRandom``, csrc/ops/stateless_random.c).

A seed is a shape [2] int32 or int64 tensor (a Python pair becomes int32,
or int64 when a value needs it). The values depend only on the seed, never
on the element or the thread that computes it.
"""
import operator

import numpy as np

from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor.framework.tracing import Tensor, apply, convert, dtype_of, op_error, static_shape

__all__ = ["stateless_uniform", "stateless_normal", "stateless_truncated_normal",
           "stateless_categorical",
           "stateless_split", "split", "fold_in"]

# StatelessRandom kinds (csrc/ops/stateless_random.c).
_FLOAT, _RANGE, _FULL, _NORMAL = range(4)


def _seed(seed):
    """`seed` converted: a [2] int32 or int64 tensor."""
    if isinstance(seed, (tuple, list)):
        if any(isinstance(v, Tensor) for v in seed):  # a pair of scalars: stacked
            from conveyor.ops.array_ops import stack
            return _seed(stack(list(seed)))
        try:
            values = [operator.index(v) for v in seed]
        except TypeError:
            raise op_error(TypeError, f"seed must be a pair of ints, got {seed!r}") from None
        fits = all(-2**31 <= v < 2**31 for v in values)
        seed = np.array(values, dtype=np.int32 if fits else np.int64)
    s = convert(seed, name="seed")
    dtype = dtype_of(s)
    if dtype not in (_dtypes.int32, _dtypes.int64):
        if isinstance(s, Tensor) or dtype.is_integer is False:
            raise op_error(TypeError, f"seed must be an int32 or int64 tensor, got {dtype.name}")
        s = np.asarray(s).astype(np.int64)
    shape = static_shape(s)
    if shape is not None and (len(shape) != 1 or shape[0] not in (None, 2)):
        if isinstance(s, Tensor):  # TensorFlow's shape inference when traced
            raise op_error(ValueError, f"Dimension must be 2 but is {shape[0] if shape else 0} "
                                       f"for the seed, with input shapes: {list(shape)}")
        raise op_error(_errors.InvalidArgumentError,
                       f"seed must have shape [2], not [{','.join(map(str, shape))}]")
    return s


def _dims(shape):
    if isinstance(shape, Tensor):
        raise op_error(TypeError, "conveyor's stateless random ops need a static `shape` "
                                  "(a list of ints), not a traced tensor")
    dims = [int(d) for d in np.asarray(shape, dtype=np.int64).reshape(-1)]
    if any(d < 0 for d in dims) or len(dims) > 16:
        raise op_error(ValueError, f"invalid shape {dims}")
    return dims


def _random(seed, dims, dtype, kind, ilo=0, ihi=0, flo=0.0, fhi=1.0):
    return apply("StatelessRandom", [_seed(seed)], [(tuple(dims), dtype)],
                 attrs={"dtype": dtype._code, "kind": kind, "int_minval": ilo, "int_maxval": ihi,
                        "rank": len(dims), "shape": dims, "minval": flo, "maxval": fhi})


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=_dtypes.float32, name=None,
                      alg="auto_select"):
    """Uniform random values in [minval, maxval) that depend only on `seed`
    (``tf.random.stateless_uniform``): TensorFlow's values for the same seed.

    Floats (float16, float32, float64) default to [0, 1); integers (int32, int64)
    need both bounds, or neither for values over the whole range. `minval`
    and `maxval` are Python numbers here.
    """
    dtype = _dtypes.as_dtype(dtype)
    dims = _dims(shape)
    if alg not in ("auto_select", "philox", 1, 3, None):
        raise op_error(ValueError, f"conveyor's stateless random ops use Philox only, got "
                                   f"alg={alg!r}")
    for v, n in ((minval, "minval"), (maxval, "maxval")):
        if isinstance(v, Tensor):
            raise op_error(TypeError, f"conveyor's stateless_uniform needs a Python number for "
                                      f"`{n}`, not a traced tensor")
    if dtype in (_dtypes.int32, _dtypes.int64):
        if minval is None and maxval is None:
            return _random(seed, dims, dtype, _FULL)
        if minval is None or maxval is None:
            raise op_error(ValueError, "For integer dtype {}, minval and maxval must be both "
                                       "`None` or both non-`None`; got minval={} and maxval={}."
                                       .format(dtype, minval, maxval))
        lo, hi = int(minval), int(maxval)
        info = np.iinfo(dtype.as_numpy_dtype)
        if not (info.min <= lo <= info.max and info.min <= hi <= info.max):
            raise op_error(ValueError, f"minval and maxval must fit in {dtype.name}: {lo}, {hi}")
        if lo >= hi:
            raise op_error(_errors.InvalidArgumentError, f"Need minval < maxval: {lo} >= {hi}")
        return _random(seed, dims, dtype, _RANGE, lo, hi)
    if dtype not in (_dtypes.float16, _dtypes.float32, _dtypes.float64):
        raise op_error(TypeError, f"stateless_uniform: unsupported dtype {dtype.name} in "
                                  f"conveyor (float16, float32, float64, int32, int64)")
    lo = float(np.asarray(0 if minval is None else minval).astype(dtype.as_numpy_dtype))
    hi = float(np.asarray(1 if maxval is None else maxval).astype(dtype.as_numpy_dtype))
    return _random(seed, dims, dtype, _FLOAT, flo=lo, fhi=hi)


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_dtypes.float32, name=None,
                     alg="auto_select"):
    """Normal random values that depend only on `seed`
    (``tf.random.stateless_normal``): TensorFlow's values for the same seed
    (float16, float32 or float64; `mean` and `stddev` are Python numbers
    here)."""
    dtype = _dtypes.as_dtype(dtype)
    dims = _dims(shape)
    if dtype not in (_dtypes.float16, _dtypes.float32, _dtypes.float64):
        raise op_error(TypeError, f"stateless_normal: unsupported dtype {dtype.name} in "
                                  f"conveyor (float16, float32, float64)")
    for v, n in ((mean, "mean"), (stddev, "stddev")):
        if isinstance(v, Tensor):
            raise op_error(TypeError, f"conveyor's stateless_normal needs a Python number for "
                                      f"`{n}`, not a traced tensor")
    t = dtype.as_numpy_dtype
    return _random(seed, dims, dtype, _NORMAL, flo=float(t(mean)), fhi=float(t(stddev)))


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_dtypes.float32,
                               name=None, alg="auto_select"):
    """Normal random values within two standard deviations of the mean that
    depend only on `seed` (``tf.random.stateless_truncated_normal``):
    TensorFlow's values for the same seed (op StatelessTruncatedNormal,
    csrc/ops/stateless_truncated_normal.c), then times `stddev` plus `mean`
    in `dtype` (float16, float32 or float64), as TensorFlow."""
    from conveyor.ops.math_ops import add, multiply
    dtype = _dtypes.as_dtype(dtype)
    dims = _dims(shape)
    if dtype not in (_dtypes.float16, _dtypes.float32, _dtypes.float64):
        raise op_error(TypeError, f"stateless_truncated_normal: unsupported dtype {dtype.name} "
                                  f"in conveyor (float16, float32, float64)")
    if alg not in ("auto_select", "philox", 1, 3, None):
        raise op_error(ValueError, f"conveyor's stateless random ops use Philox only, got "
                                   f"alg={alg!r}")
    rnd = apply("StatelessTruncatedNormal", [_seed(seed)], [(tuple(dims), dtype)],
                attrs={"dtype": dtype._code, "rank": len(dims), "shape": dims})
    t = dtype.as_numpy_dtype
    stddev = stddev if isinstance(stddev, Tensor) else np.asarray(stddev).astype(t)
    mean = mean if isinstance(mean, Tensor) else np.asarray(mean).astype(t)
    return add(multiply(rnd, stddev), mean)


def stateless_categorical(logits, num_samples, seed, dtype=_dtypes.int64, name=None):
    """`num_samples` class indices per row of `logits` [batch, classes],
    drawn with probabilities softmax(row), that depend only on `seed`
    (``tf.random.stateless_categorical``): TensorFlow's values for the same
    seed (op Multinomial, csrc/ops/multinomial.c). Non-finite logits are
    never drawn. `num_samples` is a Python int here; `dtype` int32 or
    int64."""
    x = convert(logits, name="logits")
    dtype = _dtypes.as_dtype(dtype)
    if dtype not in (_dtypes.int32, _dtypes.int64):
        raise op_error(TypeError, f"categorical: dtype must be int32 or int64, got {dtype.name}")
    if dtype_of(x) not in (_dtypes.float16, _dtypes.float32, _dtypes.float64):
        raise op_error(TypeError, f"categorical: logits must be float16, float32 or float64, "
                                  f"got {dtype_of(x).name}")
    if isinstance(num_samples, Tensor):
        raise num_samples._trace.fail("categorical with a traced `num_samples` is not "
                                      "supported natively")
    n = operator.index(np.asarray(num_samples).item())
    shape = static_shape(x)
    if shape is not None and len(shape) != 2:
        raise op_error(ValueError if isinstance(x, Tensor) else _errors.InvalidArgumentError,
                       f"logits should be a matrix, got shape {list(shape)}")
    out = None if shape is None else (shape[0], n)
    return apply("Multinomial", [x, _seed(seed)], [(out, dtype)],
                 attrs={"num_samples": n, "dtype": dtype._code})


def stateless_split(seed, num=2, alg="auto_select"):
    """`num` new seeds derived from `seed`, a [num, 2] tensor of its dtype
    (``tf.random.experimental.stateless_split``): TensorFlow's values."""
    s = _seed(seed)
    return _random(s, [int(num), 2], dtype_of(s), _FULL)


split = stateless_split


def fold_in(seed, data, alg="auto_select"):
    """A new seed from `seed` and an integer `data`
    (``tf.random.experimental.stateless_fold_in``): [a full-range value of
    data's dtype drawn from `seed`, data] (int32 for a Python int)."""
    from conveyor.ops.array_ops import stack
    d = convert(data, name="data")
    dtype = dtype_of(d)
    if dtype not in (_dtypes.int32, _dtypes.int64):
        raise op_error(TypeError, f"fold_in: `data` must be int32 or int64, got {dtype.name}")
    return stack([_random(seed, [], dtype, _FULL), d])
