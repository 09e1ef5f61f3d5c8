"""Stateless random ops, colour adjustments and random augmentations
against TensorFlow.

Tolerance: none. Every deterministic op and every stateless op must give
TensorFlow's values bit for bit (dtype, shape, bytes; NaN where TensorFlow
gives NaN), eagerly and traced in Dataset.map, for float32 and uint8 images,
single images and batches, and edge values (0, 1, out-of-range values,
infinities, NaN, subnormals). Exceptions: adjust_gamma, within 1 ulp of
TensorFlow for float32 (exact for integer images), and subnormals in
adjust_hue (docs/differences.md). The stateful random_* ops are compared
by their ranges, errors and reproducibility (their values differ from
TensorFlow's by design).
"""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from conveyor import _engine  # noqa: E402
from conveyor.framework import tracing as _tracing
from conveyor import image as cvi  # noqa: E402

RNG = np.random.default_rng(1234)
F32 = RNG.random((9, 11, 3), dtype=np.float32)
U8 = RNG.integers(0, 256, (9, 11, 3), dtype=np.uint8)
F32_BATCH = RNG.random((5, 6, 7, 3), dtype=np.float32)
U8_BATCH = RNG.integers(0, 256, (5, 6, 7, 3), dtype=np.uint8)
EDGE = np.array([[[0, 0, 0], [1, 1, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0.5, 0.5, 0.2],
                  [0.2, 0.5, 0.5], [0.5, 0.2, 0.5], [1, 1, 0], [0.3, 0.3, 0.3], [1.5, -0.2, 0.3],
                  [np.nan, 0.2, 0.3], [np.inf, 0.1, 0.2], [-np.inf, 0, 1], [0.5, np.nan, 0.5],
                  [-0.0, 0.0, 0.0], [2, 3, 4], [-1, -2, -3], [0.2, 0.2, np.inf]]], np.float32)
IMAGES = {"f32": F32, "u8": U8, "f32_batch": F32_BATCH, "u8_batch": U8_BATCH,
          "i16": RNG.integers(-2**15, 2**15, (4, 5, 3)).astype(np.int16),
          "f64": RNG.random((4, 5, 3)), "edge": EDGE, "one_pixel": F32[:1, :1],
          "odd": RNG.random((7, 13, 3), dtype=np.float32)}
SEEDS = [(1, 2), (0, 0), (-3, 7), (123456789, -1), np.array([5, 2**40], np.int64),
         np.array([7, 9], np.int32)]


def same(c, t):
    """Identical dtype, shape and bits (NaN payloads aside)."""
    c, t = np.asarray(c), np.asarray(t)
    assert c.dtype == t.dtype and c.shape == t.shape, (c.dtype, c.shape, t.dtype, t.shape)
    np.testing.assert_array_equal(c, t)
    if c.dtype.kind == "f":
        assert np.array_equal(np.signbit(c) & ~np.isnan(c), np.signbit(t) & ~np.isnan(t))


def traced(fn, *args):
    """fn run as a traced native program on `args` (height and width of
    images unknown)."""
    specs = [cv.TensorSpec(tuple(None if x.ndim >= 3 and i in (x.ndim - 3, x.ndim - 2) else d
                                 for i, d in enumerate(x.shape)), cv.as_dtype(x.dtype))
             for x in args]
    prog, _, _, _ = _tracing.trace(fn, specs, lambda flat: flat, "fn")
    return _engine.run_program(prog, list(args), 0, 0)[0]


def as_seed(seed):
    if isinstance(seed, np.ndarray):
        return seed
    fits = all(-2**31 <= v < 2**31 for v in seed)
    return np.array(seed, np.int32 if fits else np.int64)


# ---------------------------------------------------------------------------
# tf.random stateless ops
# ---------------------------------------------------------------------------

UNIFORM_CASES = [dict(), dict(minval=-2.5, maxval=3), dict(dtype="float64"), dict(dtype="float16"),
                 dict(dtype="float16", minval=-3, maxval=5),
                 dict(dtype="float64", minval=1, maxval=2), dict(minval=-5, maxval=100, dtype="int32"),
                 dict(minval=-5, maxval=2**40, dtype="int64"),
                 dict(minval=None, maxval=None, dtype="int32"),
                 dict(minval=None, maxval=None, dtype="int64")]


@pytest.mark.parametrize("seed", SEEDS, ids=str)
@pytest.mark.parametrize("kw", UNIFORM_CASES, ids=str)
def test_stateless_uniform_matches_tf(seed, kw):
    for shape in ([], [7], [3, 5], [2, 0, 3]):
        want = tf.random.stateless_uniform(shape, seed, **kw).numpy()
        same(cv.random.stateless_uniform(shape, seed, **kw), want)
        same(traced(lambda s: cv.random.stateless_uniform(shape, s, **kw), as_seed(seed)), want)


@pytest.mark.parametrize("seed", SEEDS, ids=str)
@pytest.mark.parametrize("kw", [dict(), dict(mean=2.5, stddev=0.3), dict(dtype="float64"),
                                dict(dtype="float16", mean=0.5, stddev=2),
                                dict(dtype="float64", mean=-1, stddev=3)], ids=str)
def test_stateless_normal_matches_tf(seed, kw):
    """Box-Muller with the same libm calls as TensorFlow: exact."""
    for shape in ([], [7], [1000], [3, 3]):
        want = tf.random.stateless_normal(shape, seed, **kw).numpy()
        same(cv.random.stateless_normal(shape, seed, **kw), want)
        same(traced(lambda s: cv.random.stateless_normal(shape, s, **kw), as_seed(seed)), want)


@pytest.mark.parametrize("seed", SEEDS, ids=str)
def test_stateless_split_matches_tf(seed):
    for num in (1, 2, 5):
        want = tf.random.experimental.stateless_split(seed, num).numpy()
        same(cv.random.experimental.stateless_split(seed, num), want)
        same(cv.random.split(seed, num), tf.random.split(seed, num).numpy())
        same(traced(lambda s: cv.random.split(s, num), as_seed(seed)), want)


@pytest.mark.parametrize("seed", SEEDS, ids=str)
def test_fold_in_matches_tf(seed):
    for data in (5, -7, np.int64(2**40), np.int32(3)):
        want = tf.random.experimental.stateless_fold_in(seed, data).numpy()
        same(cv.random.experimental.stateless_fold_in(seed, data), want)
        same(cv.random.fold_in(seed, data), tf.random.fold_in(seed, data).numpy())
    ids = np.arange(4, dtype=np.int64)
    ours = cv.data.Dataset.from_tensor_slices(ids).map(lambda i: cv.random.fold_in(seed, i))
    assert "mode=native" in repr(ours)
    theirs = tf.data.Dataset.from_tensor_slices(ids).map(lambda i: tf.random.fold_in(seed, i))
    for a, b in zip(ours, theirs.as_numpy_iterator()):
        same(a, b)


def test_stateless_errors():
    with pytest.raises(ValueError):
        cv.random.stateless_uniform([2], [1, 2, 3])
    with pytest.raises(ValueError):
        cv.random.stateless_uniform([2], [1, 2], minval=1, dtype="int32")
    with pytest.raises(cv.errors.InvalidArgumentError):
        cv.random.stateless_uniform([2], [1, 2], minval=3, maxval=3, dtype="int32")
    with pytest.raises(TypeError):
        cv.random.stateless_uniform([2], [1.5, 2.0])


# ---------------------------------------------------------------------------
# deterministic colour ops
# ---------------------------------------------------------------------------

ADJUST = {
    "saturation": [(lambda lib, x, f: lib.image.adjust_saturation(x, f)), [0.0, 0.5, 1.7, 3.0]],
    "hue": [(lambda lib, x, d: lib.image.adjust_hue(x, d)), [-1, -0.7, -0.2, 0.0, 0.13, 0.5, 1.0]],
    "contrast": [(lambda lib, x, f: lib.image.adjust_contrast(x, f)), [0.0, 0.5, 1.7, -2.0]],
}


@pytest.mark.parametrize("name", sorted(IMAGES))
@pytest.mark.parametrize("op", sorted(ADJUST))
def test_adjust_matches_tf(op, name):
    fn, values = ADJUST[op]
    x = IMAGES[name]
    if x.ndim < 3:
        return
    for v in values:
        want = fn(tf, x, v).numpy()
        same(fn(cv, x, v), want)
        same(traced(lambda img: fn(cv, img, v), x), want)
        # the factor as a traced scalar
        same(traced(lambda img, f: fn(cv, img, f), x, np.float32(v)), want)


@pytest.mark.parametrize("name", ["f32", "f32_batch", "edge", "u8", "f64", "odd"])
def test_hsv_conversions_match_tf(name):
    x = IMAGES[name]
    for f in ("rgb_to_hsv", "hsv_to_rgb"):
        want = getattr(tf.image, f)(x).numpy()
        same(getattr(cvi, f)(x), want)
        same(traced(getattr(cvi, f), x), want)
    round_trip = tf.image.hsv_to_rgb(tf.image.rgb_to_hsv(x)).numpy()
    same(traced(lambda v: cvi.hsv_to_rgb(cvi.rgb_to_hsv(v)), x), round_trip)


@pytest.mark.parametrize("gamma,gain", [(0.3, 1), (1, 1), (2.2, 1), (0.5, 2.5), (0, 1), (3, 0.5)])
def test_adjust_gamma_matches_tf(gamma, gain):
    """Integer images exactly; float32 within 1 ulp (TensorFlow's vectorized
    pow is not correctly rounded, conveyor's is); float16 within 2e-3."""
    ramp = np.arange(256, dtype=np.uint8).reshape(16, 16, 1)
    u16 = RNG.integers(0, 2**16, (9, 9, 3)).astype(np.uint16)
    for x in (U8, U8_BATCH, ramp, u16):
        want = tf.image.adjust_gamma(x, gamma, gain).numpy()
        same(cvi.adjust_gamma(x, gamma, gain), want)
        same(traced(lambda v: cvi.adjust_gamma(v, gamma, gain), x), want)
    for x in (F32, F32_BATCH, EDGE[..., :10, :].clip(0, 10)):
        want = tf.image.adjust_gamma(x, gamma, gain).numpy()
        got = np.asarray(cvi.adjust_gamma(x, gamma, gain))
        assert got.dtype == want.dtype
        np.testing.assert_array_max_ulp(got, want, 1 if gain == 1 else 2)
    x = F32.astype(np.float16)  # float16: TensorFlow's half pow is less exact
    np.testing.assert_allclose(cvi.adjust_gamma(x, gamma, gain),
                               tf.image.adjust_gamma(x, gamma, gain).numpy(), rtol=0, atol=2e-3)
    with pytest.raises(ValueError, match="Gamma should be a non-negative"):
        cvi.adjust_gamma(F32, -1)


def test_traced_hue_delta_out_of_range():
    """A traced delta is not range-checked (as in a tf.function): far-out
    deltas wrap as TensorFlow's; an infinite one (TensorFlow never returns)
    gives NaN instead of hanging."""
    for d in (7.3, -5.2, 100.7):
        want = tf.function(lambda x: tf.image.adjust_hue(x, d))(F32).numpy()
        same(traced(lambda x, dd: cvi.adjust_hue(x, dd), F32, np.float32(d)), want)
    for d in (np.inf, -np.inf, np.nan):
        got = np.asarray(traced(lambda x, dd: cvi.adjust_hue(x, dd), F32, np.float32(d)))
        assert np.isnan(got).any(axis=-1).all()


def test_subnormals_flushed_like_tf():
    x = np.array([[[1e-40, 0, 0], [0.5, 1e-39, 0.2], [3e-39, 3e-39, 1e-38], [0.3, 0.2, 0.1]]],
                 np.float32)
    for fn in (lambda lib: lib.image.adjust_saturation(x, 1.3),
               lambda lib: lib.image.adjust_contrast(x, 0.7),
               lambda lib: lib.image.rgb_to_hsv(x), lambda lib: lib.image.hsv_to_rgb(x)):
        same(fn(cv), fn(tf).numpy())


def test_large_image_contrast_mean_order():
    """The mean is folded in halves as TensorFlow sums it: an exact match
    on sizes where another order would round differently."""
    for shape in [(1, 1, 3), (3, 1, 1), (17, 33, 3), (64, 100, 4), (2, 31, 29, 2)]:
        x = (RNG.random(shape, dtype=np.float32) * 1000).astype(np.float32)
        same(cvi.adjust_contrast(x, 1.3), tf.image.adjust_contrast(x, 1.3).numpy())


def test_colour_errors_match_tf():
    x16 = F32.astype(np.float16)
    for fn in (lambda lib: lib.image.adjust_saturation(x16, 2.0),
               lambda lib: lib.image.adjust_hue(x16, 0.1),
               lambda lib: lib.image.adjust_contrast(x16, 0.5)):
        with pytest.raises(tf.errors.NotFoundError):
            fn(tf)
        with pytest.raises(cv.errors.NotFoundError):
            fn(cv)
    for lib in (tf, cv):
        with pytest.raises(ValueError, match="delta must be in the interval"):
            lib.image.adjust_hue(F32, 1.5)
        with pytest.raises(ValueError, match="upper must be > lower"):
            lib.image.random_contrast(F32, 0.5, 0.5)
        with pytest.raises(ValueError, match="lower must be non-negative"):
            lib.image.stateless_random_saturation(F32, -0.5, 0.5, (1, 2))
        with pytest.raises(ValueError, match="max_delta must be <= 0.5"):
            lib.image.random_hue(F32, 0.6)
        with pytest.raises(ValueError, match="max_delta must be non-negative"):
            lib.image.stateless_random_brightness(F32, -0.1, (1, 2))
    x2, x4 = F32[0], RNG.random((4, 4, 4), dtype=np.float32)
    for fn in (lambda lib: lib.image.adjust_saturation(x2, 2.0),
               lambda lib: lib.image.adjust_saturation(x4, 2.0),
               lambda lib: lib.image.adjust_hue(x4, 0.1),
               lambda lib: lib.image.adjust_contrast(x2, 0.5),
               lambda lib: lib.random.stateless_uniform([2], [1, 2, 3])):
        with pytest.raises(tf.errors.InvalidArgumentError) as want:
            fn(tf)
        with pytest.raises(cv.errors.InvalidArgumentError) as got:
            fn(cv)
        assert str(got.value).split(": ", 1)[-1] in str(want.value)  # after the op name
    with pytest.raises(tf.errors.FailedPreconditionError):
        tf.image.rgb_to_hsv(x4)
    with pytest.raises(cv.errors.FailedPreconditionError, match="input must have 3 channels"):
        cvi.rgb_to_hsv(x4)
    with pytest.raises(ValueError):
        traced(lambda s: cv.random.stateless_uniform([2], s), np.array([1, 2, 3], np.int32))


# ---------------------------------------------------------------------------
# stateless random augmentations
# ---------------------------------------------------------------------------

STATELESS = {
    "flip_left_right": lambda lib, x, s: lib.image.stateless_random_flip_left_right(x, s),
    "flip_up_down": lambda lib, x, s: lib.image.stateless_random_flip_up_down(x, s),
    "brightness": lambda lib, x, s: lib.image.stateless_random_brightness(x, 0.3, s),
    "contrast": lambda lib, x, s: lib.image.stateless_random_contrast(x, 0.2, 1.8, s),
    "saturation": lambda lib, x, s: lib.image.stateless_random_saturation(x, 0.2, 1.8, s),
    "hue": lambda lib, x, s: lib.image.stateless_random_hue(x, 0.3, s),
    "crop": lambda lib, x, s: lib.image.stateless_random_crop(
        x, [5, 4, 3] if x.ndim == 3 else [3, 4, 5, 3], s),
}


@pytest.mark.parametrize("name", ["f32", "u8", "f32_batch", "u8_batch"])
@pytest.mark.parametrize("op", sorted(STATELESS))
def test_stateless_image_ops_match_tf(op, name):
    fn, x = STATELESS[op], IMAGES[name]
    for seed in SEEDS + [(i, 100 - i) for i in range(12)]:
        want = fn(tf, x, seed).numpy()
        same(fn(cv, x, seed), want)
        same(traced(lambda img, s: fn(cv, img, s), x, as_seed(seed)), want)


def test_stateless_batch_flip_blends_like_tf():
    """A batch is f * flipped + (1 - f) * image: infinities give NaN."""
    x = np.stack([EDGE] * 8)
    for seed in [(i, 3) for i in range(6)]:
        same(cvi.stateless_random_flip_left_right(x, seed),
             tf.image.stateless_random_flip_left_right(x, seed).numpy())


def test_stateless_crop_errors():
    with pytest.raises(cv.errors.InvalidArgumentError, match="Need value.shape >= size"):
        cvi.stateless_random_crop(F32, [10, 4, 3], (1, 2))
    with pytest.raises(cv.errors.InvalidArgumentError, match="Need value.shape >= size"):
        traced(lambda v: cvi.stateless_random_crop(v, [10, 4, 3], (1, 2)), F32)


def test_stateless_pipeline_matches_tf_data():
    """The tutorial's pattern: a seed per element from a zipped counter,
    traced natively, TensorFlow's values."""
    images = U8_BATCH

    def make(lib):
        def augment(image_seed, image):
            seed = lib.random.experimental.stateless_split(image_seed, num=1)[0, :]
            image = lib.image.convert_image_dtype(image, lib.float32)
            image = lib.image.stateless_random_crop(image, [4, 4, 3], seed)
            image = lib.image.stateless_random_flip_left_right(image, seed)
            image = lib.image.stateless_random_brightness(image, 0.4, seed)
            image = lib.image.stateless_random_contrast(image, 0.5, 1.5, seed)
            image = lib.image.stateless_random_saturation(image, 0.5, 1.5, seed)
            image = lib.image.stateless_random_hue(image, 0.2, seed)
            return lib.clip_by_value(image, 0, 1)
        return augment

    seeds = np.array([[i, 2 * i + 1] for i in range(len(images))], np.int64)
    ours = cv.data.Dataset.from_tensor_slices((seeds, images)).map(make(cv), num_parallel_calls=2)
    assert "mode=native" in repr(ours)
    theirs = tf.data.Dataset.from_tensor_slices((seeds, images)).map(make(tf))
    for a, b in zip(ours, theirs.as_numpy_iterator()):
        same(a, b)


def test_seed_from_a_pair_of_traced_scalars():
    """seed=(counter, counter) as in the tutorial: the scalars are stacked."""
    def make(lib):
        def fn(image, i):
            return lib.image.stateless_random_brightness(image, 0.5, seed=(i, i))
        return fn

    ids = np.arange(5, dtype=np.int64)
    ours = cv.data.Dataset.from_tensor_slices((F32_BATCH, ids)).map(make(cv))
    assert "mode=native" in repr(ours)
    theirs = tf.data.Dataset.from_tensor_slices((F32_BATCH, ids)).map(make(tf))
    for a, b in zip(ours, theirs.as_numpy_iterator()):
        same(a, b)


# ---------------------------------------------------------------------------
# stateful random augmentations (conveyor's own stream)
# ---------------------------------------------------------------------------


def test_random_adjustments_in_range_and_reproducible():
    x = np.full((4, 4, 3), 0.5, np.float32)
    delta = np.asarray(cvi.random_brightness(x, 0.2)) - 0.5
    assert np.all(np.abs(delta) <= 0.2 + 1e-6) and np.ptp(delta) < 1e-6

    def make(seed):
        def fn(image):
            image = cvi.random_brightness(image, 0.2, seed=seed)
            image = cvi.random_contrast(image, 0.5, 1.5, seed=seed)
            image = cvi.random_saturation(image, 0.5, 1.5, seed=seed)
            return cvi.random_hue(image, 0.2, seed=seed)
        return fn

    ds = cv.data.Dataset.from_tensor_slices(F32_BATCH)
    first = ds.map(make(7), num_parallel_calls=2)
    assert "mode=native" in repr(first)
    a = [np.asarray(v) for v in first]
    b = [np.asarray(v) for v in ds.map(make(7), num_parallel_calls=1)]
    for u, v in zip(a, b):
        same(u, v)
    # different elements get different draws
    assert not np.array_equal(a[0] - F32_BATCH[0], a[1] - F32_BATCH[1])
    # a random factor applied is one of adjust_*'s results
    g = np.asarray(cvi.random_saturation(F32, 0.0, 1e-30))
    same(g, tf.image.adjust_saturation(F32, 0.0).numpy())
