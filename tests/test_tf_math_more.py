"""tf.math's elementwise functions, statistics and cumprod (issue 28), against
TensorFlow: eagerly and traced into a map's native program (no TracingWarning)."""
import warnings

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from conveyor.framework.tracing import TracingWarning  # noqa: E402

F = np.array([[-3.5, -1.0, -0.25, 0.0, 0.3], [0.5, 0.99, 2.0, 20.0, -20.0]], np.float32)
UNIT = np.array([[-1.0, -0.5, 0.0], [0.25, 0.9, 1.0]], np.float32)
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0], np.float32)
I = np.array([[-3, 0, 7], [2, -8, 1]], np.int32)

# Eigen (TensorFlow) and the C library may round transcendental functions
# differently in the last bits: float32 is compared to a few ulps.
RTOL = {np.float32: 2e-6, np.float64: 1e-13, np.float16: 1e-3}

UNARY = ["sin", "cos", "tan", "atan", "sinh", "cosh", "tanh", "sigmoid", "sign", "log1p",
         "expm1", "rsqrt", "reciprocal", "erf", "softplus", "is_nan", "is_inf", "is_finite"]


def _np(v):
    return v.numpy() if hasattr(v, "numpy") and not isinstance(v, np.ndarray) else np.asarray(v)


def _close(a, b):
    a, b = _np(a), _np(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    if a.dtype.kind == "f":
        np.testing.assert_allclose(a, b, rtol=RTOL[a.dtype.type], atol=1e-30, equal_nan=True)
    else:
        np.testing.assert_array_equal(a, b)


def _in_map(t, fn, value):
    ds = t.data.Dataset.from_tensors(value).map(fn)
    if t is cv:
        with warnings.catch_warnings():
            warnings.simplefilter("error", TracingWarning)
            assert "mode=native" in repr(ds)
            return next(iter(ds))
    return next(iter(ds))


def _both(fn, value):
    _close(fn(cv, value), fn(tf, tf.constant(value)))
    _close(_in_map(cv, lambda x: fn(cv, x), value), _in_map(tf, lambda x: fn(tf, x), value))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("name", UNARY)
def test_unary(name, dtype):
    value = F.astype(dtype)
    if name in ("rsqrt", "log1p"):
        value = np.abs(value)
    _both(lambda t, x: getattr(t.math, name)(x), value)


@pytest.mark.parametrize("name", ["asin", "acos"])
def test_inverse_trig(name):
    _both(lambda t, x: getattr(t.math, name)(x), UNIT)
    _both(lambda t, x: getattr(t.math, name)(x), UNIT.astype(np.float64))


@pytest.mark.parametrize("name", ["sign", "is_nan", "is_inf", "is_finite", "sigmoid", "tanh",
                                  "softplus", "reciprocal", "erf", "atan"])
def test_special_values(name):
    _both(lambda t, x: getattr(t.math, name)(x), SPECIAL)


def test_sign_and_squared_difference_of_integers():
    _both(lambda t, x: t.math.sign(x), I)
    _both(lambda t, x: t.math.sign(x), I.astype(np.int64))
    _both(lambda t, x: t.math.squared_difference(x, 3), I)
    _both(lambda t, x: t.math.squared_difference(x, x[::-1]), I.astype(np.int64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binary(dtype):
    x = F.astype(dtype)
    _both(lambda t, v: t.math.atan2(v, v[::-1]), x)
    _both(lambda t, v: t.math.squared_difference(v, v[:, :1]), x)
    _both(lambda t, v: t.math.divide_no_nan(v, t.math.maximum(v, 0.0)), x)
    _both(lambda t, v: t.atan2(v[0], 1.5), x)


def test_divide_no_nan_of_integers_is_float():
    _both(lambda t, x: t.math.divide_no_nan(x, x[::-1] * 0 + x[:, :1]), I)


def test_top_level_names_are_tensorflows():
    for name in ["sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
                 "sigmoid", "sign", "reduce_logsumexp"]:
        assert getattr(cv, name) is getattr(cv.math, name)
        assert hasattr(tf, name)


@pytest.mark.parametrize("name", ["sin", "sigmoid", "is_nan", "erf", "softplus"])
def test_float_only_refuses_integers(name):
    with pytest.raises(tf.errors.InvalidArgumentError):
        getattr(tf.math, name)(tf.constant(I))
    with pytest.raises(cv.errors.InvalidArgumentError):
        getattr(cv.math, name)(I)
    with pytest.raises(TypeError):
        tf.data.Dataset.from_tensors(I).map(getattr(tf.math, name))
    with pytest.raises(TypeError):
        cv.data.Dataset.from_tensors(I).map(getattr(cv.math, name))


STATS = {
    "variance_all": lambda t, x: t.math.reduce_variance(x),
    "variance_axis": lambda t, x: t.math.reduce_variance(x, axis=1),
    "std_keep": lambda t, x: t.math.reduce_std(x, axis=0, keepdims=True),
    "std_neg_axis": lambda t, x: t.math.reduce_std(x, axis=-1),
    "logsumexp_all": lambda t, x: t.reduce_logsumexp(x),
    "logsumexp_axis": lambda t, x: t.math.reduce_logsumexp(x, axis=1),
    "logsumexp_keep": lambda t, x: t.math.reduce_logsumexp(x, axis=[0, 1], keepdims=True),
    "logsumexp_inf": lambda t, x: t.math.reduce_logsumexp(x * 0 - np.inf, axis=1),
    "l2_all": lambda t, x: t.math.l2_normalize(x),
    "l2_axis": lambda t, x: t.math.l2_normalize(x, axis=1),
    "l2_zero": lambda t, x: t.math.l2_normalize(x * 0, axis=0),
    "count_nonzero": lambda t, x: t.math.count_nonzero(x),
    "count_nonzero_axis": lambda t, x: t.math.count_nonzero(x, axis=1, keepdims=True,
                                                            dtype=t.int32),
    "count_nonzero_bool": lambda t, x: t.math.count_nonzero(x > 0, axis=0),
    "cumprod": lambda t, x: t.math.cumprod(x, axis=1),
    "cumprod_exclusive_reverse": lambda t, x: t.math.cumprod(x, axis=0, exclusive=True,
                                                             reverse=True),
    "cumprod_int": lambda t, x: t.math.cumprod(t.cast(x, t.int32), axis=-1, exclusive=True),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(STATS))
def test_statistics(name, dtype):
    _both(STATS[name], F.astype(dtype))


def test_count_nonzero_of_strings():
    words = np.array([b"a", b"", b"bc", b""], object)
    _close(cv.math.count_nonzero(words), tf.math.count_nonzero(tf.constant(words)))
    _close(_in_map(cv, cv.math.count_nonzero, words),
           _in_map(tf, tf.math.count_nonzero, tf.constant(words)))


def test_cumprod_float16_and_wrapping():
    _both(lambda t, x: t.math.cumprod(x), np.array([1.5, 2.0, 3.3, 0.7], np.float16))
    _both(lambda t, x: t.math.cumprod(x), np.array([100, 100, 100, 7], np.int32))
