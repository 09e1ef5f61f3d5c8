"""tf.random.stateless_truncated_normal (TensorFlow's values for a seed),
tf.random.normal / truncated_normal (conveyor's per-element streams) and
tf.histogram_fixed_width (issue 28), against TensorFlow: eagerly and traced
into a map's native program (no TracingWarning)."""
import warnings

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from conveyor.framework.tracing import TracingWarning  # noqa: E402


def _np(v):
    return v.numpy() if hasattr(v, "numpy") and not isinstance(v, np.ndarray) else np.asarray(v)


def _same(a, b):
    a, b = _np(a), _np(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    np.testing.assert_array_equal(a, b)


def _native(ds):
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracingWarning)
        assert "mode=native" in repr(ds)
        return [tuple(map(_np, v)) if isinstance(v, tuple) else _np(v) for v in ds]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("shape", [[1], [2], [5], [3, 7], [0], [64, 9]])
@pytest.mark.parametrize("seed", [(1, 2), (0, 0), (-7, 2**31 - 1)])
def test_stateless_truncated_normal_is_tensorflows_stream(dtype, shape, seed):
    kw = dict(dtype=dtype, mean=0.25, stddev=3.0)
    _same(cv.random.stateless_truncated_normal(shape, seed=seed, **kw),
          tf.random.stateless_truncated_normal(shape, seed=seed, **kw))


def test_stateless_truncated_normal_traced_with_per_element_seeds():
    def fn(t, i):
        seed = t.stack([i, i * 3 + 1])
        return t.random.stateless_truncated_normal([4, 3], seed=seed, stddev=0.5)
    got = _native(cv.data.Dataset.range(6).map(lambda i: fn(cv, i)))
    want = [_np(v) for v in tf.data.Dataset.range(6).map(lambda i: fn(tf, i))]
    for g, w in zip(got, want):
        _same(g, w)
    assert np.abs(np.stack(got)).max() < 1.0  # within two standard deviations


def test_stateless_truncated_normal_int64_seed_and_errors():
    seed = np.array([2**40, 5], np.int64)
    _same(cv.random.stateless_truncated_normal([9], seed=seed),
          tf.random.stateless_truncated_normal([9], seed=seed))
    with pytest.raises(TypeError):
        cv.random.stateless_truncated_normal([2], seed=[1, 2], dtype="int32")
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.random.stateless_truncated_normal([2], seed=[1, 2, 3])
    with pytest.raises(cv.errors.InvalidArgumentError):
        cv.random.stateless_truncated_normal([2], seed=[1, 2, 3])


@pytest.mark.parametrize("name", ["normal", "truncated_normal"])
def test_stateful_normals_follow_conveyors_per_element_streams(name):
    op = getattr(cv.random, name)
    for dtype in ("float16", "float32", "float64"):
        v, w = op([3, 2], dtype=dtype), getattr(tf.random, name)([3, 2], dtype=dtype)
        assert _np(v).dtype == _np(w).dtype and _np(v).shape == (3, 2)

    def pipeline(parallel):
        ds = cv.data.Dataset.range(200).map(lambda i: op([50], mean=1.0, stddev=2.0, seed=5),
                                            num_parallel_calls=parallel)
        return np.stack(_native(ds))
    a, b = pipeline(None), pipeline(2)
    np.testing.assert_array_equal(a, b)  # the same whatever the parallelism
    assert len({row.tobytes() for row in a}) == len(a)  # each element its own values
    assert abs(a.mean() - 1.0) < 0.1
    if name == "truncated_normal":
        assert np.abs(a - 1.0).max() < 4.0 and 1.5 < a.std() < 1.9
    else:
        assert 1.9 < a.std() < 2.1


HISTOGRAMS = {
    "float_clipped": (np.array([-1.0, 0.0, 1.5, 2.0, 5.0, 4.99, 15.0, 3.3], np.float32),
                      [0.0, 5.0], 5),
    "double": (np.linspace(-3, 3, 41), [-2.5, 2.5], 7),
    "equalize": (np.random.RandomState(0).randint(0, 256, (16, 16)).astype(np.int32),
                 [0, 255], 256),
    "int64": (np.arange(-5, 30, dtype=np.int64).reshape(5, 7), [0, 20], 3),
}


@pytest.mark.parametrize("name", sorted(HISTOGRAMS))
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_histogram_fixed_width(name, dtype):
    values, value_range, nbins = HISTOGRAMS[name]
    value_range = np.asarray(value_range, values.dtype)

    def fn(t, v):
        return t.histogram_fixed_width(v, value_range, nbins=nbins, dtype=getattr(t, dtype))
    _same(fn(cv, values), fn(tf, tf.constant(values)))
    got = _native(cv.data.Dataset.from_tensors(values).map(lambda v: fn(cv, v)))
    want = [_np(v) for v in tf.data.Dataset.from_tensors(values).map(lambda v: fn(tf, v))]
    _same(got[0], want[0])


@pytest.mark.parametrize("values, value_range, nbins", [
    (np.float32([1.0]), [5.0, 0.0], 5),
    (np.float32([np.nan, 1.0]), [0.0, 5.0], 5),
    (np.float32([1.0]), [0.0, 5.0], 0),
])
def test_histogram_fixed_width_errors(values, value_range, nbins):
    r = np.float32(value_range)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.histogram_fixed_width(values, r, nbins=nbins)
    with pytest.raises(cv.errors.InvalidArgumentError):
        cv.histogram_fixed_width(values, r, nbins=nbins)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("shape, num_samples", [((1, 10), 5), ((4, 3), 17), ((2, 50), 100),
                                                ((3, 2), 0), ((1, 1), 4)])
@pytest.mark.parametrize("seed", [(1, 2), (5, -9)])
def test_stateless_categorical_is_tensorflows_stream(dtype, shape, num_samples, seed):
    logits = np.random.RandomState(sum(shape)).randn(*shape).astype(dtype)
    for out in ("int32", "int64"):
        _same(cv.random.stateless_categorical(logits, num_samples, seed=seed, dtype=out),
              tf.random.stateless_categorical(logits, num_samples, seed=seed, dtype=out))


def test_stateless_categorical_non_finite_and_traced():
    with np.errstate(divide="ignore"):  # -inf: never drawn
        logits = np.log(np.float32([[0.5, 0.0, 0.5], [1.0, 1.0, 0.0]]))
    _same(cv.random.stateless_categorical(logits, 8, seed=[3, 4]),
          tf.random.stateless_categorical(logits, 8, seed=[3, 4]))

    def fn(t, i):  # RandAugment's op choice: one index from uniform logits, seeded per element
        return t.random.stateless_categorical(t.math.log([[0.2, 0.3, 0.5]]), 4,
                                              seed=t.stack([i, i + 7]))
    got = _native(cv.data.Dataset.range(5).map(lambda i: fn(cv, i)))
    want = [_np(v) for v in tf.data.Dataset.range(5).map(lambda i: fn(tf, i))]
    for g, w in zip(got, want):
        _same(g, w)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.random.stateless_categorical(np.float32([1.0, 2.0]), 2, seed=[1, 2])
    with pytest.raises(cv.errors.InvalidArgumentError):
        cv.random.stateless_categorical(np.float32([1.0, 2.0]), 2, seed=[1, 2])


def test_categorical_and_shuffle_follow_per_element_streams():
    logits = np.log(np.float32([[0.1, 0.6, 0.3]]))
    v, w = cv.random.categorical(logits, 5), tf.random.categorical(logits, 5)
    assert _np(v).dtype == _np(w).dtype and _np(v).shape == _np(w).shape == (1, 5)
    assert _np(cv.random.categorical(logits, 5, dtype=cv.int32)).dtype == np.int32
    rows = np.arange(12, dtype=np.float32).reshape(6, 2)
    s = _np(cv.random.shuffle(rows))
    assert s.dtype == rows.dtype and sorted(map(tuple, s)) == sorted(map(tuple, rows))
    words = np.array([b"a", b"bb", b"ccc"], object)
    assert sorted(_np(cv.random.shuffle(words)).tolist()) == sorted(words.tolist())
    with pytest.raises(cv.errors.InvalidArgumentError):
        cv.random.shuffle(np.float32(1.0))

    def pipeline(parallel):
        ds = cv.data.Dataset.range(300).map(
            lambda i: (cv.random.categorical(logits, 20, seed=2),
                       cv.random.shuffle(cv.range(8), seed=2)), num_parallel_calls=parallel)
        return _native(ds)
    a, b = pipeline(None), pipeline(2)
    for (c1, s1), (c2, s2) in zip(a, b):
        _same(c1, c2)
        _same(s1, s2)
    counts = np.bincount(np.concatenate([c[0][0] for c in a]), minlength=3) / (300 * 20)
    np.testing.assert_allclose(counts, [0.1, 0.6, 0.3], atol=0.03)
    orders = {tuple(s) for _, s in a}
    assert len(orders) > 250 and all(sorted(o) == list(range(8)) for o in orders)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_gamma_shapes_dtypes_and_moments(dtype):
    for shape, alpha, beta in (([4], 0.5, None), ([2, 3], [0.2, 1.0, 5.0], None),
                               ([5], [[0.5], [2.0]], [1.0, 4.0])):
        v = cv.random.gamma(shape, alpha, beta=beta, dtype=dtype)
        w = tf.random.gamma(shape, alpha, beta=beta, dtype=dtype)
        assert _np(v).dtype == _np(w).dtype and _np(v).shape == _np(w).shape
    alpha, beta = np.array([0.2, 1.0, 5.0]), np.array([1.0, 2.0, 0.5])
    g = _np(cv.random.gamma([40000], alpha, beta=beta, dtype=dtype)).astype(np.float64)
    assert (g > 0).all()
    np.testing.assert_allclose(g.mean(0), alpha / beta, rtol=0.05)
    np.testing.assert_allclose(g.var(0), alpha / beta ** 2, rtol=0.1)


def test_gamma_mixup_traced():
    def mixup(t, i):  # a Beta(0.2, 0.2) weight from two gammas
        a = t.random.gamma([], 0.2, seed=1)
        b = t.random.gamma([], 0.2, seed=2)
        return a / (a + b)

    def pipeline(parallel):
        return np.array(_native(cv.data.Dataset.range(400).map(
            lambda i: mixup(cv, i), num_parallel_calls=parallel)))
    a, b = pipeline(None), pipeline(2)
    np.testing.assert_array_equal(a, b)
    assert a.dtype == np.float32 and ((a >= 0) & (a <= 1)).all()
    assert abs(a.mean() - 0.5) < 0.07 and len(set(a.tolist())) > 390
    w = [_np(v) for v in tf.data.Dataset.range(2).map(lambda i: mixup(tf, i))]
    assert w[0].dtype == a.dtype and w[0].shape == a[0].shape
