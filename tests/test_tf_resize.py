"""conveyor.image.resize against tf.image.resize: every method, both antialias
settings, up- and down-scaling, odd sizes, integer and float inputs, 3-D and
4-D, real photos. Float results agree within 1e-4 (in practice they are
bit-identical: the C ops use TensorFlow's float32 arithmetic and order);
``nearest`` is identical."""
import glob
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402

METHODS = ["bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
           "mitchellcubic"]
JPEGS = sorted(p for p in glob.glob("/work/shared/testdata/jpeg/*.jpg") if "truncated" not in p)
ATOL = 1e-4


def assert_matches_tf(x, size, method, antialias, preserve_aspect_ratio=False):
    kwargs = dict(method=method, antialias=antialias, preserve_aspect_ratio=preserve_aspect_ratio)
    try:
        want = tf.image.resize(x, size, **kwargs).numpy()
    except tf.errors.InvalidArgumentError as e:  # a side rounded to 0
        with pytest.raises(cv.errors.InvalidArgumentError, match="output dimensions"):
            cv.image.resize(x, size, **kwargs)
        assert "output dimensions" in e.message
        return
    got = cv.image.resize(x, size, **kwargs)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape)
    if method == "nearest":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=0, atol=ATOL)


def random_image(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(shape) * 100).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -5000), min(info.max, 5000), shape,
                        endpoint=True).astype(dtype)


CASES = [
    ((375, 500, 3), (224, 224)),   # the benchmark's downscale
    ((7, 5, 3), (13, 3)),          # up in one direction, down in the other
    ((1, 9, 2), (4, 17)),          # 1xN
    ((9, 1, 1), (3, 1)),
    ((6, 6, 4), (6, 6)),           # same size
    ((2, 10, 13, 4), (5, 31)),     # batch
    ((16, 16, 5), (3, 40)),
    ((31, 3, 3), (1, 1)),
    ((3, 4, 3), (100, 77)),        # strong upscale
    ((200, 50, 1), (7, 49)),       # strong downscale (wide antialias kernels)
]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("antialias", [False, True])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_random_images(method, antialias, dtype):
    rng = np.random.default_rng(hash((method, antialias)) % 2 ** 32)
    for shape, size in CASES:
        assert_matches_tf(random_image(rng, shape, dtype), size, method, antialias)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint16, np.int32, np.int64, np.float16,
                                   np.float64])
def test_other_dtypes(dtype):
    rng = np.random.default_rng(7)
    x = random_image(rng, (2, 11, 14, 3), dtype)
    for method in METHODS:
        for antialias in (False, True):
            assert_matches_tf(x, (6, 19), method, antialias)


@pytest.mark.parametrize("path", JPEGS, ids=os.path.basename)
def test_photos(path):
    img = tf.io.decode_jpeg(tf.io.read_file(path)).numpy()
    for method in METHODS:
        for antialias in (False, True):
            assert_matches_tf(img, (224, 224), method, antialias)
    for size in [(97, 301), (img.shape[0] * 2 + 1, img.shape[1] // 3)]:
        assert_matches_tf(img, size, "bilinear", False)
        assert_matches_tf(img, size, "bilinear", True)
        assert_matches_tf(img, size, "nearest", False)
    assert_matches_tf(img.astype(np.float32) / 255.0, (224, 224), "bilinear", False)


def test_preserve_aspect_ratio():
    rng = np.random.default_rng(3)
    for shape in [(375, 500, 3), (500, 375, 3), (7, 1000, 1), (33, 33, 2), (3, 1, 1)]:
        x = random_image(rng, shape, np.uint8)
        for size in [(224, 224), (1000, 10), (13, 7), (500, 2000)]:
            for method in ["bilinear", "nearest", "area", "lanczos3"]:
                assert_matches_tf(x, size, method, False, preserve_aspect_ratio=True)


def test_special_values():
    x = np.array([[[0.0], [np.inf], [1.0], [np.nan]], [[-np.inf], [2.0], [3.0], [4.0]]],
                 np.float32)
    for method in METHODS:
        for antialias in (False, True):
            for size in [(2, 4), (3, 7), (1, 2)]:
                want = tf.image.resize(x, size, method=method, antialias=antialias).numpy()
                got = cv.image.resize(x, size, method=method, antialias=antialias)
                np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
                finite = np.isfinite(want)
                np.testing.assert_array_equal(np.isfinite(got), finite)
                np.testing.assert_allclose(got[finite], want[finite], rtol=0, atol=ATOL)


def test_traced_matches_tf_map():
    from conveyor import _engine
    from conveyor.framework import tracing as _tracing
    from conveyor.tensor_spec import TensorSpec

    x = np.random.default_rng(5).integers(0, 256, (375, 500, 3)).astype(np.uint8)

    def fn(m):
        return lambda img: m.image.resize(img, [224, 224], antialias=True)

    want = next(iter(tf.data.Dataset.from_tensors(x).map(fn(tf)))).numpy()
    prog, _, specs, _ = _tracing.trace(fn(cv), [TensorSpec((None, None, 3), cv.uint8)],
                                       lambda flat: flat, "fn")
    assert specs[0].shape.as_list() == [224, 224, 3]
    np.testing.assert_allclose(_engine.run_program(prog, [x], 0, 0)[0], want, rtol=0, atol=ATOL)


def test_error_types_match_tf():
    x = np.zeros((4, 5, 3), np.uint8)
    cases = [
        (np.zeros((4, 5)), [2, 2], {}),
        (x, [1, 2, 3], {}),
        (x, [1.5, 2], {}),
        (x, [2, 2], {"method": "foo"}),
    ]
    for images, size, kwargs in cases:
        with pytest.raises(ValueError) as tf_err:
            tf.image.resize(images, size, **kwargs)
        with pytest.raises(ValueError) as cv_err:
            cv.image.resize(images, size, **kwargs)
        assert str(cv_err.value) == str(tf_err.value)
    for images, size in [(x, [-1, 5]), (x, [3, 0]), (np.zeros((0, 2, 1)), [3, 3]),
                         (np.zeros((2, 2, 0)), [3, 3])]:
        with pytest.raises(tf.errors.InvalidArgumentError) as tf_err:
            tf.image.resize(images, size)
        with pytest.raises(cv.errors.InvalidArgumentError) as cv_err:
            cv.image.resize(images, size)
        assert tf_err.value.message.split(" [Op:")[0].split("} ")[-1] in cv_err.value.message


# A size computed from each element (tensorflow/models' scale jitter:
# tf.cast(tf.shape(image)[:2] * scale, tf.int32)) is the op's second input,
# read per element: the map stays native (no TracingWarning, mode=native).
PER_ELEMENT_SHAPES = [(10, 13, 3), (17, 16, 3), (31, 9, 3), (2, 40, 3), (64, 48, 3)]


def _per_element_pipeline(m, images, method, scale, preserve_aspect_ratio, batched=False):
    def fn(img):
        hw = m.shape(img)[-3:-1]
        size = m.cast(m.cast(hw, m.float32) * scale, m.int32)
        return m.image.resize(img, size, method=method,
                              preserve_aspect_ratio=preserve_aspect_ratio)

    spec = m.TensorSpec([None] * (4 if batched else 3), m.uint8)
    ds = m.data.Dataset.from_generator(lambda: iter(images), output_signature=spec)
    return ds.map(fn, num_parallel_calls=2)


@pytest.mark.parametrize("method", ["bilinear", "nearest", "area", "bicubic"])
@pytest.mark.parametrize("preserve_aspect_ratio", [False, True])
@pytest.mark.parametrize("scale", [0.6, 1.7])
def test_per_element_size_is_native_and_matches_tf(method, preserve_aspect_ratio, scale):
    import warnings

    from conveyor.framework.tracing import TracingWarning

    rng = np.random.default_rng(11)
    images = [rng.integers(0, 256, s, dtype=np.uint8) for s in PER_ELEMENT_SHAPES]
    want_ds = _per_element_pipeline(tf, images, method, scale, preserve_aspect_ratio)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracingWarning)
        got_ds = _per_element_pipeline(cv, images, method, scale, preserve_aspect_ratio)
    assert "mode=native" in repr(got_ds)
    assert str(got_ds.element_spec) == str(want_ds.element_spec)
    want = [x.numpy() for x in want_ds]
    got = [x.numpy() for x in got_ds]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=0, atol=0 if method == "nearest" else ATOL)


def test_per_element_size_batched_and_photo():
    images = [np.random.default_rng(2).integers(0, 256, (2, 9, 14, 3), dtype=np.uint8)]
    for path in JPEGS[:2]:
        photo = tf.io.decode_jpeg(open(path, "rb").read()).numpy()
        images.append(photo[None])
    for method in ("bilinear", "area"):
        want = [x.numpy() for x in _per_element_pipeline(tf, images, method, 0.3, False, True)]
        got = [x.numpy() for x in _per_element_pipeline(cv, images, method, 0.3, False, True)]
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=0, atol=ATOL)


def test_per_element_size_errors_match_tf():
    images = [np.zeros((3, 4, 3), np.uint8)]
    # A size that rounds to 0 fails when the element runs, naming the element.
    with pytest.raises(tf.errors.InvalidArgumentError):
        list(_per_element_pipeline(tf, images, "bilinear", 0.1, False))
    with pytest.raises(cv.errors.InvalidArgumentError, match="output dimensions must be positive"):
        list(_per_element_pipeline(cv, images, "bilinear", 0.1, False))

    # A traced size that is not int32, or not 2 elements, fails when traced.
    def bad(m, size_fn):
        ds = m.data.Dataset.from_tensors(np.zeros((3, 4, 3), np.uint8))
        return ds.map(lambda img: m.image.resize(img, size_fn(m, img)))

    for size_fn in (lambda m, img: m.shape(img, out_type=m.int64)[:2],
                    lambda m, img: m.shape(img)):
        with pytest.raises(ValueError):
            bad(tf, size_fn)
        with pytest.raises(ValueError):
            bad(cv, size_fn)
