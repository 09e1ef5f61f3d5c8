"""conveyor.image.resize without TensorFlow: shapes, dtypes, values worked out
by hand, traced programs against eager calls, spec propagation and bad
arguments. (tests/test_tf_resize.py compares against tf.image.resize.)"""
import threading

import numpy as np
import pytest

import conveyor as cv
from conveyor import _engine
from conveyor.framework import tracing as _tracing
from conveyor.tensor_spec import TensorSpec

METHODS = ["bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
           "mitchellcubic"]
RNG = np.random.default_rng(1234)


def image(shape, dtype=np.uint8):
    if np.dtype(dtype).kind == "f":
        return (RNG.standard_normal(shape) * 50).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dtype)


def traced(fn, spec):
    """fn traced on a placeholder: (program, result spec)."""
    prog, _, specs, _ = _tracing.trace(fn, [spec], lambda flat: flat, "resize_fn")
    return prog, specs[0]


def run(prog, value):
    (out,) = _engine.run_program(prog, [value], 0, 0)
    return out


# -- shapes and dtypes -------------------------------------------------------

@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("antialias", [False, True])
def test_shapes_and_dtypes(method, antialias):
    for shape in [(7, 5, 3), (2, 7, 5, 4)]:
        x = image(shape)
        out = cv.image.resize(x, [13, 3], method=method, antialias=antialias)
        assert out.shape == shape[:-3] + (13, 3, shape[-1])
        assert out.dtype == (np.uint8 if method == "nearest" else np.float32)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.uint16, np.int32, np.uint32,
                                   np.int64, np.uint64, np.float16, np.float32, np.float64])
def test_every_numeric_dtype(dtype):
    x = image((4, 6, 2), dtype)
    nearest = cv.image.resize(x, [8, 3], method="nearest")
    assert nearest.dtype == dtype
    # nearest copies pixels: every output pixel is one of the input's
    pixels = {tuple(p) for p in x.reshape(-1, 2).tolist()}
    assert all(tuple(p) in pixels for p in nearest.reshape(-1, 2).tolist())
    for method in ["bilinear", "area", "bicubic", "lanczos3"]:
        out = cv.image.resize(x, [8, 3], method=method)
        assert out.dtype == np.float32
        # converted to float32 first: the same as resizing the float32 image
        np.testing.assert_array_equal(out, cv.image.resize(x.astype(np.float32), [8, 3],
                                                           method=method))


def test_resize_method_constants():
    rm = cv.image.ResizeMethod
    assert (rm.BILINEAR, rm.NEAREST_NEIGHBOR, rm.BICUBIC, rm.AREA) == (
        "bilinear", "nearest", "bicubic", "area")
    assert (rm.LANCZOS3, rm.LANCZOS5, rm.GAUSSIAN, rm.MITCHELLCUBIC) == (
        "lanczos3", "lanczos5", "gaussian", "mitchellcubic")
    x = image((5, 5, 1))
    np.testing.assert_array_equal(cv.image.resize(x, [3, 3], method=rm.NEAREST_NEIGHBOR),
                                  cv.image.resize(x, [3, 3], method="nearest"))


# -- values ------------------------------------------------------------------

def test_tf_docstring_examples():
    # The examples in tf.image.resize's documentation.
    eye = np.eye(5, dtype=np.int32)[None, ..., None]
    out = cv.image.resize(eye, [3, 5])[0, ..., 0]
    np.testing.assert_allclose(out, [[0.6666667, 0.3333333, 0, 0, 0],
                                     [0, 0, 1, 0, 0],
                                     [0, 0, 0, 0.3333335, 0.6666665]], atol=1e-6)
    nn = cv.image.resize(eye, [5, 7], method="nearest")[0, ..., 0]
    assert nn.dtype == np.int32
    np.testing.assert_array_equal(nn, [[1, 0, 0, 0, 0, 0, 0],
                                       [0, 1, 1, 0, 0, 0, 0],
                                       [0, 0, 0, 1, 0, 0, 0],
                                       [0, 0, 0, 0, 1, 1, 0],
                                       [0, 0, 0, 0, 0, 0, 1]])
    assert cv.image.resize(eye, [10, 20], preserve_aspect_ratio=True).shape == (1, 10, 10, 1)
    # antialias has no effect when upsampling
    np.testing.assert_array_equal(cv.image.resize(eye, [5, 10]),
                                  cv.image.resize(eye, [5, 10], antialias=True))


def test_bilinear_half_pixel_by_hand():
    # 1x2 -> 1x4: samples at (x + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25 (clamped)
    x = np.array([[[10.0], [20.0]]], np.float32)
    np.testing.assert_allclose(cv.image.resize(x, [1, 4])[0, :, 0], [10, 12.5, 17.5, 20])
    # 4 -> 2 halves: the mean of each pair (samples at 0.5 and 2.5)
    x = np.array([[[0], [4], [8], [12]]], np.uint8)
    np.testing.assert_allclose(cv.image.resize(x, [1, 2])[0, :, 0], [2, 10])
    # area averages the covered pixels
    np.testing.assert_allclose(cv.image.resize(x, [1, 2], method="area")[0, :, 0], [2, 10])


def test_nearest_by_hand():
    x = np.arange(5, dtype=np.int16).reshape(1, 5, 1)
    # floor((x + 0.5) * 5 / 3) = 0, 2, 4
    np.testing.assert_array_equal(cv.image.resize(x, [1, 3], method="nearest")[0, :, 0],
                                  [0, 2, 4])
    np.testing.assert_array_equal(cv.image.resize(x, [1, 10], method="nearest")[0, :, 0],
                                  [0, 0, 1, 1, 2, 2, 3, 3, 4, 4])


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("antialias", [False, True])
def test_constant_image_stays_constant(method, antialias):
    x = np.full((9, 14, 3), 77, np.uint8)
    for size in [(4, 5), (9, 14), (20, 3), (1, 1)]:
        out = cv.image.resize(x, size, method=method, antialias=antialias)
        np.testing.assert_allclose(out, 77, atol=1e-3)


@pytest.mark.parametrize("method", METHODS)
def test_same_size(method):
    x = image((6, 9, 3))
    out = cv.image.resize(x, [6, 9], method=method)
    if method in ("bilinear", "nearest", "area"):
        np.testing.assert_array_equal(out, x)
    elif method in ("bicubic", "lanczos3", "lanczos5"):  # interpolating kernels
        np.testing.assert_allclose(out, x, atol=1e-3)
    else:  # gaussian and mitchellcubic blur even at the same size
        assert out.shape == x.shape and not np.allclose(out, x, atol=1)


def test_same_size_bilinear_is_a_cast():
    x = np.array([[[np.inf], [np.nan], [-np.inf]]], np.float32)
    out = cv.image.resize(x, [1, 3])
    np.testing.assert_array_equal(out, x)


def test_batch_is_independent_images():
    x = image((3, 11, 7, 3))
    for method in METHODS:
        batched = cv.image.resize(x, [5, 9], method=method, antialias=True)
        for i in range(3):
            np.testing.assert_array_equal(batched[i], cv.image.resize(x[i], [5, 9], method=method,
                                                                      antialias=True))


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_bilinear_of_uint8_equals_bilinear_of_its_float32(channels):
    # uint8 rows of 3 and 4 channels take their own passes (two pixels per
    # AVX2 vector where the CPU has it, the last ones lane by lane), float32
    # rows another: the same floats, every width and parity, down and up.
    rng = np.random.default_rng(channels)
    for shape, size in [((375, 500), (224, 224)), ((31, 17), (10, 9)), ((7, 9), (20, 33)),
                        ((64, 3), (5, 1)), ((2, 2), (3, 5)), ((50, 41), (49, 40))]:
        x = rng.integers(0, 256, shape + (channels,), dtype=np.uint8)
        np.testing.assert_array_equal(cv.image.resize(x, size),
                                      cv.image.resize(x.astype(np.float32), size))


def test_channels_are_independent():
    x = image((10, 12, 5), np.float32)
    for method in METHODS:
        out = cv.image.resize(x, [7, 17], method=method)
        for c in [0, 3]:
            np.testing.assert_array_equal(out[..., c:c + 1],
                                          cv.image.resize(x[..., c:c + 1], [7, 17], method=method))


def test_one_pixel_rows_and_columns():
    for shape, size in [((1, 9, 3), (4, 17)), ((9, 1, 3), (2, 5)), ((1, 1, 1), (3, 3)),
                        ((5, 5, 3), (1, 9))]:
        x = image(shape)
        for method in METHODS:
            for antialias in (False, True):
                out = cv.image.resize(x, size, method=method, antialias=antialias)
                assert out.shape == size + (shape[-1],)
                assert np.isfinite(out.astype(np.float64)).all()


def test_preserve_aspect_ratio_sizes():
    x = np.zeros((375, 500, 3), np.uint8)
    assert cv.image.resize(x, [224, 224], preserve_aspect_ratio=True).shape == (168, 224, 3)
    assert cv.image.resize(x, [1000, 2000], preserve_aspect_ratio=True).shape == (1000, 1333, 3)
    assert cv.image.resize(x[None], [300, 300], preserve_aspect_ratio=True,
                           method="nearest").shape == (1, 225, 300, 3)


def test_empty_batch():
    for method in METHODS:
        out = cv.image.resize(np.zeros((0, 4, 4, 2), np.float32), [3, 5], method=method)
        assert out.shape == (0, 3, 5, 2)


def test_eager_is_thread_safe():
    x = image((2, 60, 80, 3))
    want = {m: cv.image.resize(x, [33, 45], method=m, antialias=True) for m in METHODS}
    errors = []

    def work():
        try:
            for _ in range(3):
                for m in METHODS:
                    np.testing.assert_array_equal(
                        cv.image.resize(x, [33, 45], method=m, antialias=True), want[m])
        except AssertionError as e:
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# -- traced programs -----------------------------------------------------------

@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("antialias", [False, True])
def test_traced_equals_eager(method, antialias):
    x = image((23, 31, 3))

    def fn(img):
        return cv.image.resize(img, [12, 40], method=method, antialias=antialias)

    prog, spec = traced(fn, TensorSpec((23, 31, 3), cv.uint8))
    assert spec.shape.as_list() == [12, 40, 3]
    assert spec.dtype == (cv.uint8 if method == "nearest" else cv.float32)
    np.testing.assert_array_equal(run(prog, x), fn(x))


def test_traced_spec_propagation():
    def spec_of(fn, shape, dtype=cv.uint8):
        return traced(fn, TensorSpec(shape, dtype))[1]

    s = spec_of(lambda x: cv.image.resize(x, [224, 224]), (None, None, 3))
    assert s.shape.as_list() == [224, 224, 3] and s.dtype == cv.float32
    s = spec_of(lambda x: cv.image.resize(x, (5, 6), method="nearest"), (None, 8, 9, None),
                cv.int16)
    assert s.shape.as_list() == [None, 5, 6, None] and s.dtype == cv.int16
    s = spec_of(lambda x: cv.image.resize(x, [224, 224], preserve_aspect_ratio=True), (375, 500, 3))
    assert s.shape.as_list() == [168, 224, 3]
    s = spec_of(lambda x: cv.image.resize(x, [224, 224], preserve_aspect_ratio=True),
                (None, 500, 3))
    assert s.shape.as_list() == [None, None, 3]
    # a size that is not positive is an error when the op runs, as in TensorFlow
    s = spec_of(lambda x: cv.image.resize(x, [-1, 5]), (4, 4, 3))
    assert s.shape.as_list() == [None, 5, 3]


def test_traced_preserve_aspect_ratio_with_unknown_size():
    prog, _ = traced(lambda x: cv.image.resize(x, [224, 224], preserve_aspect_ratio=True),
                     TensorSpec((None, None, 3), cv.uint8))
    for shape in [(375, 500, 3), (500, 375, 3), (100, 100, 3), (7, 1000, 3)]:
        x = image(shape)
        out = run(prog, x)
        np.testing.assert_array_equal(out, cv.image.resize(x, [224, 224],
                                                           preserve_aspect_ratio=True))


def test_traced_chain_with_cast():
    def fn(img):
        small = cv.image.resize(img, [8, 8], method="area")
        return cv.cast(small, cv.uint8)

    x = image((32, 32, 3))
    prog, spec = traced(fn, TensorSpec((32, 32, 3), cv.uint8))
    assert spec.dtype == cv.uint8
    np.testing.assert_array_equal(run(prog, x), fn(x))


def test_traced_runtime_errors():
    prog, _ = traced(lambda x: cv.image.resize(x, [5, 5]), TensorSpec((None, None, None), cv.uint8))
    with pytest.raises(cv.errors.InvalidArgumentError, match="non-zero size"):
        run(prog, np.zeros((0, 4, 3), np.uint8))
    with pytest.raises(cv.errors.InvalidArgumentError, match="at least one channel"):
        run(prog, np.zeros((4, 4, 0), np.uint8))
    prog, _ = traced(lambda x: cv.image.resize(x, [0, 5]), TensorSpec((4, 4, 3), cv.uint8))
    with pytest.raises(cv.errors.InvalidArgumentError, match="output dimensions must be positive"):
        run(prog, np.zeros((4, 4, 3), np.uint8))
    prog, _ = traced(lambda x: cv.image.resize(x, [1, 100], preserve_aspect_ratio=True),
                     TensorSpec((None, None, 1), cv.uint8))
    with pytest.raises(cv.errors.InvalidArgumentError, match="output dimensions must be positive"):
        run(prog, np.zeros((1000, 10, 1), np.uint8))  # the width rounds to 0


# -- bad arguments -------------------------------------------------------------

def test_bad_rank():
    for shape in [(4, 5), (1, 1, 4, 5, 1), ()]:
        with pytest.raises(ValueError, match="3 or 4 dimensions"):
            cv.image.resize(np.zeros(shape), [2, 2])
    with pytest.raises(ValueError, match="3 or 4 dimensions"):
        traced(lambda x: cv.image.resize(x, [2, 2]), TensorSpec((4, 5), cv.float32))
    with pytest.raises(ValueError, match="contains no shape"):
        traced(lambda x: cv.image.resize(x, [2, 2]), TensorSpec(None, cv.float32))


def test_bad_dtype_at_trace_time():
    for dtype in [cv.string, cv.bool]:
        with pytest.raises(TypeError, match="integer or floating"):
            traced(lambda x: cv.image.resize(x, [2, 2]), TensorSpec((4, 4, 3), dtype))
    with pytest.raises(TypeError):
        cv.image.resize(np.array([[[b"a"]]]), [2, 2])
    with pytest.raises(TypeError):
        cv.image.resize(np.zeros((2, 2, 1), bool), [2, 2])


def test_bad_size():
    x = np.zeros((4, 5, 3), np.uint8)
    for size in [[1, 2, 3], [3], [[3, 3]], []]:
        with pytest.raises(ValueError, match="2 elements"):
            cv.image.resize(x, size)
    for size in [[1.5, 2], "ab", [None, 2]]:
        with pytest.raises(ValueError, match="int32"):
            cv.image.resize(x, size)
    with pytest.raises(ValueError, match="int32"):
        cv.image.resize(x, [2 ** 31, 3])
    # numpy integer sizes are fine
    assert cv.image.resize(x, np.array([3, 3], np.int64)).shape == (3, 3, 3)
    # a traced size is the op's second input, read per element: the map stays native
    prog, _, specs, _ = _tracing.trace(lambda img, s: cv.image.resize(img, s),
                                       [TensorSpec((4, 5, 3), cv.uint8), TensorSpec((2,), cv.int32)],
                                       lambda flat: flat, "f")
    assert specs[0].shape.as_list() == [None, None, 3]
    ds = cv.data.Dataset.from_tensors((x, np.array([2, 3], np.int32))).map(
        lambda img, s: cv.image.resize(img, s))
    assert ds._function.mode == "native"
    assert next(iter(ds)).shape == (2, 3, 3)


def test_size_not_positive_fails_when_run():
    x = np.zeros((4, 5, 3), np.uint8)
    for size in [[-1, 5], [0, 5], [5, 0]]:
        for method in METHODS:
            with pytest.raises(cv.errors.InvalidArgumentError,
                               match="output dimensions must be positive"):
                cv.image.resize(x, size, method=method)


def test_bad_method():
    x = np.zeros((4, 5, 3), np.uint8)
    for method in ["foo", "BILINEAR", None, 3]:
        with pytest.raises(ValueError, match="Resize method is not implemented"):
            cv.image.resize(x, [2, 2], method=method)


def test_empty_images_fail_when_run():
    for method in METHODS:
        with pytest.raises(cv.errors.InvalidArgumentError, match="non-zero size"):
            cv.image.resize(np.zeros((0, 4, 1)), [3, 3], method=method)
        with pytest.raises(cv.errors.InvalidArgumentError, match="at least one channel"):
            cv.image.resize(np.zeros((2, 2, 0)), [3, 3], method=method)


def test_op_attribute_checks():
    # The C ops validate their attributes even when called directly.
    x = np.zeros((4, 4, 3), np.uint8)
    rng = (0, 0, 0, 0, 0, 0)
    with pytest.raises(cv.errors.InvalidArgumentError):
        _engine.run_op("ResizeBilinear", [x], [3], [], None, None, 1, rng)
    with pytest.raises(cv.errors.InvalidArgumentError, match="kernel type"):
        _engine.run_op("ScaleAndTranslate", [x], [3, 3, 0, 1], [], "nope", None, 1, rng)
    with pytest.raises(cv.errors.InvalidArgumentError, match="positive"):
        _engine.run_op("ResizeArea", [x], [2 ** 40, 3, 0], [], None, None, 1, rng)
    with pytest.raises(cv.errors.InvalidArgumentError, match="3 or 4 dimensions"):
        _engine.run_op("ResizeNearestNeighbor", [x[0]], [3, 3, 0], [], None, None, 1, rng)
    with pytest.raises(cv.errors.InvalidArgumentError, match="dtype"):
        _engine.run_op("ResizeBicubic", [np.zeros((2, 2, 1), bool)], [3, 3, 0], [], None, None,
                       1, rng)
    # extra kernels of ScaleAndTranslate
    for kernel in ["box", "lanczos1"]:
        out = _engine.run_op("ScaleAndTranslate", [x + 9], [3, 5, 0, 1], [], kernel, None, 1, rng)
        np.testing.assert_allclose(out[0], 9, atol=1e-5)


@pytest.mark.parametrize("epilogue", [lambda r: r / 255.0, lambda r: r * 0.5, lambda r: r + 1.5,
                                      lambda r: r - 0.25, lambda r: r / 7.0 + 1.0])
@pytest.mark.parametrize("size", [[224, 224], [375, 500]])
def test_an_elementwise_scalar_after_bilinear_is_folded_with_the_same_values(epilogue, size):
    # In a traced map, `resize(...) / 255.0` runs as one pass (the resize
    # applies the division as it writes each row): bit for bit what the two
    # ops give one at a time (eager), batched (rows written in place) or not.
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, (375, 500, 3), dtype=np.uint8)
    fn = lambda x: epilogue(cv.image.resize(x, size))  # noqa: E731
    want = np.asarray(fn(img))
    ds = cv.data.Dataset.from_tensors(img).repeat(5)
    for built in (ds.map(fn), ds.map(fn, num_parallel_calls=2).batch(2)):
        for got in built.as_numpy_iterator():
            got = got.reshape((-1,) + want.shape)
            assert got.dtype == np.float32
            for row in got:
                np.testing.assert_array_equal(row, want)


def test_a_resize_used_twice_is_not_folded():
    img = np.arange(6 * 8 * 3, dtype=np.uint8).reshape(6, 8, 3)

    def fn(x):
        r = cv.image.resize(x, [3, 4])
        return r / 255.0, r
    (a, b), = cv.data.Dataset.from_tensors(img).map(fn).as_numpy_iterator()
    r = np.asarray(cv.image.resize(img, [3, 4]))
    np.testing.assert_array_equal(b, r)
    np.testing.assert_array_equal(a, r / np.float32(255.0))
