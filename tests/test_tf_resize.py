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
