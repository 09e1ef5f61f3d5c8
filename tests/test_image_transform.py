"""conveyor.image crops, pads, flips and dtype conversion, without TensorFlow.

The same function runs eagerly on arrays and traced into a native program;
both must agree (random ops too, for the same element), traced specs must
carry what is known statically, run-time windows must be computed from the
element's shape, and the random ops must be deterministic per seed and
element, valid (a crop is a slice of the input, a flip the input or its
mirror) and uniformly distributed.
"""
import re

import numpy as np
import pytest

import conveyor as cv
from conveyor import _engine
from conveyor.framework import tracing as _tracing
from conveyor import image as cvi

RNG = np.random.default_rng(3)
IMG = RNG.integers(0, 256, (6, 8, 3), dtype=np.uint8)
BATCH = RNG.integers(0, 256, (4, 5, 7, 2), dtype=np.uint8)


def trace(fn, *specs):
    """(program, flat output specs, base seed) of fn traced on specs."""
    prog, _, out, base = _tracing.trace(fn, [cv.TensorSpec(s, d) for s, d in specs],
                                        lambda flat: flat, "fn")
    return prog, out, base


def run(prog, *args, index=0):
    return _engine.run_program(prog, list(args), 0, index)[0]


OPS = {
    "flip_left_right": lambda x: cvi.flip_left_right(x),
    "flip_up_down": lambda x: cvi.flip_up_down(x),
    "random_flip_left_right": lambda x: cvi.random_flip_left_right(x, seed=1),
    "random_flip_up_down": lambda x: cvi.random_flip_up_down(x),
    # 0.5: a fraction float32 holds exactly (TensorFlow rounds it to float32
    # for dims only known at run time, so other fractions may crop a traced
    # image one pixel differently, as in TensorFlow).
    "central_crop": lambda x: cvi.central_crop(x, 0.5),
    "crop_to_bounding_box": lambda x: cvi.crop_to_bounding_box(x, 1, 2, 3, 4),
    "pad_to_bounding_box": lambda x: cvi.pad_to_bounding_box(x, 1, 2, 9, 12),
    "resize_with_crop_or_pad": lambda x: cvi.resize_with_crop_or_pad(x, 3, 11),
    "random_crop": lambda x: cvi.random_crop(x, [3, 4, x.shape[2] or 3], seed=7),
    "convert_image_dtype": lambda x: cvi.convert_image_dtype(x, cv.float32),
    "convert_back": lambda x: cvi.convert_image_dtype(cvi.convert_image_dtype(x, cv.float16),
                                                      cv.int16, saturate=True),
    "transpose": lambda x: cvi.transpose(x),
    "rot90": lambda x: cvi.rot90(x),
    "rot180": lambda x: cvi.rot90(x, 2),
    "rot270": lambda x: cvi.rot90(x, -1),
    "grayscale": lambda x: cvi.grayscale_to_rgb(cvi.rgb_to_grayscale(x)),
    "adjust_brightness": lambda x: cvi.adjust_brightness(x, 0.2),
    "adjust_brightness_f16": lambda x: cvi.adjust_brightness(
        cvi.convert_image_dtype(x, cv.float16), -0.1),
    "per_image_standardization": lambda x: cvi.per_image_standardization(x),
    "chain": lambda x: cvi.random_flip_left_right(
        cvi.random_crop(cvi.convert_image_dtype(x, cv.float32), [4, 5, x.shape[2] or 3])),
}


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("image", [IMG, BATCH[0], BATCH], ids=["3d", "3d-2ch", "4d"])
def test_eager_equals_traced(name, image):
    fn = OPS[name]
    if name.startswith("random_crop") or name == "chain":
        if image.ndim == 4:
            return  # random_crop sizes below are written for 3-D values
    if name == "grayscale" and image.shape[-1] != 3:
        return
    dims = (None,) * (image.ndim - 1) + (image.shape[-1],)
    prog, specs, base = trace(fn, (dims, cv.uint8))
    for index in (0, 1, 5):
        got = run(prog, image, index=index)
        with _tracing.element_scope(base, 0, index):
            want = fn(image)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        assert specs[0].shape.is_compatible_with(cv.TensorShape(got.shape))
        assert specs[0].dtype == cv.as_dtype(got.dtype)


@pytest.mark.parametrize("fn,spec,want", [
    (lambda x: cvi.flip_left_right(x), (None, 5, 3), (None, 5, 3)),
    (lambda x: cvi.flip_up_down(x), None, None),
    (lambda x: cvi.random_flip_up_down(x), (2, None, None, 3), (2, None, None, 3)),
    (lambda x: cvi.central_crop(x, 0.5), (10, None, 3), (6, None, 3)),
    (lambda x: cvi.central_crop(x, 0.5), (None, 8, 10, 3), (None, 4, 6, 3)),
    (lambda x: cvi.central_crop(cvi.flip_up_down(x), 1.0), (None, None, 1), (None, None, 1)),
    (lambda x: cvi.crop_to_bounding_box(x, 1, 1, 3, 4), (None, None, 3), (3, 4, 3)),
    (lambda x: cvi.crop_to_bounding_box(x, 1, 1, 3, 4), (7, None, None, None), (7, 3, 4, None)),
    (lambda x: cvi.crop_to_bounding_box(x, 1, 1, 3, 4), None, None),
    (lambda x: cvi.pad_to_bounding_box(x, 1, 1, 30, 40), (None, None, 3), (30, 40, 3)),
    (lambda x: cvi.resize_with_crop_or_pad(x, 3, 4), (5, None, None, 1), (5, 3, 4, 1)),
    (lambda x: cvi.random_crop(x, [2, 3, 1]), (None, None, 1), (2, 3, 1)),
    (lambda x: cvi.random_crop(x, [2, 3]), None, (2, 3)),
    (lambda x: cvi.convert_image_dtype(x, "float32"), (None, 4, 3), (None, 4, 3)),
    (lambda x: cvi.transpose(x), (2, 5, None, 3), (2, None, 5, 3)),
    # TensorFlow switches over every k: height and width known only when equal
    (lambda x: cvi.rot90(x), (5, 4, 3), (None, None, 3)),
    (lambda x: cvi.rot90(x, 2), (5, 4, 3), (None, None, 3)),
    (lambda x: cvi.rot90(x, 3), (2, 6, 6, 3), (2, 6, 6, 3)),
    (lambda x: cvi.rgb_to_grayscale(x), (None, 4, 3), (None, 4, 1)),
    (lambda x: cvi.grayscale_to_rgb(x), (7, None, 1), (7, None, 3)),
    (lambda x: cvi.adjust_brightness(x, 0.5), (None, 4, 3), (None, 4, 3)),
    (lambda x: cvi.per_image_standardization(x), (None, 4, 3), (None, 4, 3)),
])
def test_traced_specs(fn, spec, want):
    _, specs, _ = trace(fn, (spec, cv.uint8))
    assert specs[0].shape == cv.TensorShape(want)


def test_crop_parameters_as_traced_scalars():
    """Offsets and sizes may be tensors of the element: checked at run time."""
    scalar = ((), cv.int32)
    prog, specs, _ = trace(lambda x, oh, tw: cvi.crop_to_bounding_box(x, oh, 1, 2, tw),
                           ((None, None, 3), cv.uint8), scalar, scalar)
    assert specs[0].shape.as_list() == [2, None, 3]
    for oh, tw in ((0, 1), (4, 7), (2, 3)):
        got = _engine.run_program(prog, [IMG, np.int32(oh), np.int32(tw)], 0, 0)[0]
        np.testing.assert_array_equal(got, IMG[oh:oh + 2, 1:1 + tw])
    for oh, tw, message in ((5, 2, "height must be >= target + offset."),
                            (-1, 2, "offset_height must be >= 0."),
                            (0, 0, "target_width must be > 0."),
                            (0, 8, "width must be >= target + offset.")):
        with pytest.raises(cv.errors.InvalidArgumentError, match=re.escape(message)):
            _engine.run_program(prog, [IMG, np.int32(oh), np.int32(tw)], 0, 0)
    prog, _, _ = trace(lambda x, th: cvi.pad_to_bounding_box(x, 1, 0, th, 8),
                       ((None, None, 3), cv.uint8), ((), cv.int64))
    got = _engine.run_program(prog, [IMG, np.int64(9)], 0, 0)[0]
    np.testing.assert_array_equal(got, cvi.pad_to_bounding_box(IMG, 1, 0, 9, 8))
    with pytest.raises(cv.errors.InvalidArgumentError, match="height must be <= target - offset"):
        _engine.run_program(prog, [IMG, np.int64(6)], 0, 0)
    prog, _, _ = trace(lambda x, f: cvi.central_crop(x, f), ((None, None, 3), cv.uint8),
                       ((), cv.float32))
    np.testing.assert_array_equal(_engine.run_program(prog, [IMG, np.float32(0.5)], 0, 0)[0],
                                  cvi.central_crop(IMG, float(np.float32(0.5))))
    with pytest.raises(cv.errors.InvalidArgumentError, match=r"within \(0, 1\]"):
        _engine.run_program(prog, [IMG, np.float32(1.5)], 0, 0)
    prog, specs, _ = trace(lambda x, s: cvi.random_crop(x, s, seed=2),
                           ((None, None, 3), cv.uint8), ((3,), cv.int32))
    assert specs[0].shape.as_list() == [None, None, None]
    assert _engine.run_program(prog, [IMG, np.int32([2, 5, 3])], 0, 0)[0].shape == (2, 5, 3)
    with pytest.raises(cv.errors.InvalidArgumentError, match="Need value.shape >= size"):
        _engine.run_program(prog, [IMG, np.int32([7, 5, 3])], 0, 0)


def test_rgb_to_grayscale_runtime_channels():
    prog, specs, _ = trace(lambda x: cvi.rgb_to_grayscale(x), ((None, None, None), cv.uint8))
    assert specs[0].shape.as_list() == [None, None, 1]
    assert run(prog, IMG).shape == (6, 8, 1)
    with pytest.raises(cv.errors.InvalidArgumentError, match="must be 3"):
        run(prog, BATCH[0])
    prog, _, _ = trace(lambda x: cvi.grayscale_to_rgb(x), ((None, None, None), cv.uint8))
    with pytest.raises(cv.errors.InvalidArgumentError, match="should be size 1"):
        run(prog, IMG)


def test_brightness_delta_as_traced_scalar():
    prog, _, _ = trace(lambda x, d: cvi.adjust_brightness(x, d), ((None, None, 3), cv.uint8),
                       ((), cv.float32))
    for d in (-0.5, 0.25, 2.0):
        np.testing.assert_array_equal(_engine.run_program(prog, [IMG, np.float32(d)], 0, 0)[0],
                                      cvi.adjust_brightness(IMG, d))


def test_runtime_rank_and_shape_checks():
    prog, _, _ = trace(lambda x: cvi.flip_left_right(x), (None, cv.uint8))
    with pytest.raises(cv.errors.InvalidArgumentError, match="at least three-dimensional"):
        run(prog, IMG[0])
    with pytest.raises(cv.errors.InvalidArgumentError, match="either 3 or 4 dimensions"):
        run(prog, BATCH[None])
    prog, _, _ = trace(lambda x: cvi.crop_to_bounding_box(x, 0, 0, 1, 1), (None, cv.uint8))
    with pytest.raises(cv.errors.InvalidArgumentError, match="either 3 or 4 dimensions"):
        run(prog, IMG[0])
    np.testing.assert_array_equal(run(prog, BATCH), BATCH[:, :1, :1])
    prog, _, _ = trace(lambda x: cvi.random_crop(x, [1, 1, 1]), (None, cv.uint8))
    with pytest.raises(cv.errors.InvalidArgumentError, match=r"Incompatible shapes: \[4\] vs. \[3\]"):
        run(prog, BATCH)


def flipped_or_not(got, x, axis):
    if np.array_equal(got, x):
        return 0
    assert np.array_equal(got, np.flip(x, axis)), "neither the image nor its mirror"
    return 1


@pytest.mark.parametrize("fn,axis", [(cvi.random_flip_left_right, 1),
                                     (cvi.random_flip_up_down, 0)])
def test_random_flip_distribution(fn, axis):
    x = IMG
    prog, _, _ = trace(lambda v: fn(v, seed=11), ((None, None, 3), cv.uint8))
    flips = [flipped_or_not(run(prog, x, index=i), x, axis) for i in range(2000)]
    assert 900 < sum(flips) < 1100  # p = 1/2: 4.5 sigma either side
    assert flips == [flipped_or_not(run(prog, x, index=i), x, axis) for i in range(2000)]
    # 4-D: each image of the batch on its own draw.
    prog, _, _ = trace(lambda v: fn(v, seed=11), ((None, None, None, 2), cv.uint8))
    per_item = np.array([[flipped_or_not(img, x_, axis) for img, x_ in zip(run(prog, BATCH, index=i),
                                                                           BATCH)]
                         for i in range(300)])
    assert 500 < per_item.sum() < 700
    assert len({tuple(r) for r in per_item}) == 16  # all patterns of 4 images occur


def test_random_ops_deterministic_per_seed_and_element():
    fn = lambda v: cvi.random_crop(v, [3, 3, 3], seed=5)  # noqa: E731
    a, _, _ = trace(fn, ((None, None, 3), cv.uint8))
    b, _, _ = trace(fn, ((None, None, 3), cv.uint8))
    for i in range(20):
        np.testing.assert_array_equal(run(a, IMG, index=i), run(b, IMG, index=i))
    crops = {run(a, IMG, index=i).tobytes() for i in range(20)}
    assert len(crops) > 5  # elements get different crops
    c, _, _ = trace(lambda v: cvi.random_crop(v, [3, 3, 3], seed=6), ((None, None, 3), cv.uint8))
    assert [run(c, IMG, index=i).tobytes() for i in range(20)] != \
        [run(a, IMG, index=i).tobytes() for i in range(20)]


def test_random_crop_valid_and_uniform():
    h, w = 6, 8
    x = np.arange(h * w, dtype=np.int32).reshape(h, w, 1)  # each value names its position
    prog, _, _ = trace(lambda v: cvi.random_crop(v, [2, 3, 1], seed=3), ((None, None, 1), cv.int32))
    counts = np.zeros((h - 2 + 1, w - 3 + 1), int)
    for i in range(3000):
        got = run(prog, x, index=i)
        oy, ox = divmod(int(got[0, 0, 0]), w)
        np.testing.assert_array_equal(got, x[oy:oy + 2, ox:ox + 3])
        counts[oy, ox] += 1
    expected = 3000 / counts.size  # 30 offsets, 100 each
    assert counts.min() > expected * 0.55 and counts.max() < expected * 1.45
    # A crop of the whole value, and of size 0.
    np.testing.assert_array_equal(cvi.random_crop(x, [6, 8, 1]), x)
    assert cvi.random_crop(x, [0, 8, 1]).shape == (0, 8, 1)
    assert cvi.random_crop(np.arange(10), [4], seed=1).shape == (4,)


def test_random_flip_values_4d_eager():
    for _ in range(5):
        got = cvi.random_flip_left_right(BATCH)
        for g, x in zip(got, BATCH):
            flipped_or_not(g, x, 1)


def test_window_edge_cases():
    # Views and copies give the same values as NumPy slicing.
    np.testing.assert_array_equal(cvi.crop_to_bounding_box(IMG, 2, 0, 3, 8), IMG[2:5])
    np.testing.assert_array_equal(cvi.crop_to_bounding_box(BATCH, 1, 2, 3, 4), BATCH[:, 1:4, 2:6])
    np.testing.assert_array_equal(cvi.crop_to_bounding_box(BATCH[:1], 1, 0, 3, 7), BATCH[:1, 1:4])
    padded = cvi.pad_to_bounding_box(BATCH, 2, 1, 8, 9)
    want = np.zeros((4, 8, 9, 2), np.uint8)
    want[:, 2:7, 1:8] = BATCH
    np.testing.assert_array_equal(padded, want)
    np.testing.assert_array_equal(cvi.pad_to_bounding_box(IMG, 0, 0, 6, 8), IMG)
    # An empty batch.
    assert cvi.resize_with_crop_or_pad(BATCH[:0], 3, 9).shape == (0, 3, 9, 2)
    assert cvi.flip_left_right(BATCH[:0]).shape == (0, 5, 7, 2)
    # Every dtype, including bool and float16.
    for dtype in (np.bool_, np.int8, np.uint16, np.int32, np.uint64, np.float16, np.float64):
        x = IMG.astype(dtype)
        np.testing.assert_array_equal(cvi.flip_left_right(x), x[:, ::-1])
        np.testing.assert_array_equal(cvi.flip_up_down(x), x[::-1])
        np.testing.assert_array_equal(cvi.resize_with_crop_or_pad(x, 4, 10)[:, 1:9], x[1:5])


def test_convert_image_dtype_basics():
    np.testing.assert_array_equal(cvi.convert_image_dtype(np.uint8([0, 255]), cv.float32),
                                  np.float32([0, 1]))
    np.testing.assert_array_equal(cvi.convert_image_dtype(np.float32([0, 0.5, 1]), cv.uint8),
                                  np.uint8([0, 127, 255]))
    np.testing.assert_array_equal(
        cvi.convert_image_dtype(np.float32([-0.5, 1.5]), cv.uint8, saturate=True), [0, 255])
    np.testing.assert_array_equal(cvi.convert_image_dtype(np.uint8([255, 1]), cv.uint16),
                                  [65280, 256])
    np.testing.assert_array_equal(cvi.convert_image_dtype(np.uint16([65535, 256]), cv.uint8),
                                  [255, 1])
    np.testing.assert_array_equal(cvi.convert_image_dtype(np.int8([-1, 127]), cv.uint8,
                                                          saturate=True), [0, 254])
    x = np.float32([0.25])
    assert cvi.convert_image_dtype(x, "float32") is x or \
        np.shares_memory(cvi.convert_image_dtype(x, "float32"), x)
    assert cvi.convert_image_dtype([[[1, 2]]], cv.float64).dtype == np.float64  # int32 input


@pytest.mark.parametrize("call,exc", [
    (lambda: cvi.flip_left_right(np.array([[[b"a"]]], dtype=object)), TypeError),
    (lambda: cvi.crop_to_bounding_box(IMG, 0.5, 0, 1, 1), TypeError),
    (lambda: cvi.crop_to_bounding_box(IMG, "1", 0, 1, 1), TypeError),
    (lambda: cvi.pad_to_bounding_box(IMG, None, 0, 9, 9), TypeError),
    (lambda: cvi.pad_to_bounding_box(IMG, 0, 0, 2**70, 9), TypeError),
    (lambda: cvi.central_crop(IMG, "half"), TypeError),
    (lambda: cvi.random_crop(IMG, [[2, 2, 3]]), cv.errors.InvalidArgumentError),
    (lambda: cvi.random_crop(IMG, [2, -1, 3]), cv.errors.InvalidArgumentError),
    (lambda: cvi.random_crop(IMG, [7, 2, 3]), cv.errors.InvalidArgumentError),
    (lambda: cvi.convert_image_dtype(IMG, "string"), AttributeError),
    (lambda: cvi.convert_image_dtype(IMG, "no such dtype"), TypeError),
    (lambda: cvi.rot90(IMG, 1.5), TypeError),
    (lambda: cvi.rot90(IMG, [1, 2]), ValueError),
    (lambda: cvi.adjust_brightness(IMG, [0.1, 0.2, 0.3]), TypeError),
    (lambda: cvi.adjust_brightness(IMG, "x"), TypeError),
    (lambda: cvi.rgb_to_grayscale(IMG[..., :2]), cv.errors.InvalidArgumentError),
    (lambda: cvi.grayscale_to_rgb(IMG), ValueError),
    (lambda: cvi.per_image_standardization(IMG[0]), ValueError),
])
def test_bad_arguments(call, exc):
    with pytest.raises(exc):
        call()


def test_traced_bad_arguments_raise_when_traced():
    with pytest.raises(ValueError, match="must be >= 0"):
        trace(lambda x: cvi.crop_to_bounding_box(x, -1, 0, 1, 1), ((None, None, 3), cv.uint8))
    with pytest.raises(ValueError, match="at least three-dimensional"):
        trace(lambda x: cvi.flip_up_down(x), ((None, None), cv.uint8))
    with pytest.raises(cv.errors.InvalidArgumentError, match="Need value.shape >= size"):
        trace(lambda x: cvi.random_crop(x, [9, 2, 3]), ((8, 8, 3), cv.uint8))


def augment(image):
    image = cvi.random_crop(image, [4, 6, 3], seed=1)
    image = cvi.random_flip_left_right(image, seed=2)
    image = cvi.resize_with_crop_or_pad(image, 6, 6)
    return cvi.convert_image_dtype(image, cv.float32)


@pytest.fixture
def global_seed():
    cv.random.set_seed(99)
    yield
    cv.random.set_seed(None)


def test_traced_map_pipeline(global_seed):
    """A traced map: native, same output at any parallelism, equal to the
    function's eager twin, valid crops and flips."""
    images = RNG.integers(0, 256, (16, 6, 8, 3), dtype=np.uint8)

    def build(npc):
        return cv.data.Dataset.from_tensor_slices(images).map(augment, num_parallel_calls=npc)
    ds = build(None)
    assert "mode=native" in repr(ds)
    assert ds.element_spec == cv.TensorSpec((6, 6, 3), cv.float32)
    base = [x.copy() for x in ds]
    for npc in (1, 2, cv.data.AUTOTUNE):
        for got, want in zip(build(npc), base):
            np.testing.assert_array_equal(got, want)
    for i, got in enumerate(base):
        with _tracing.element_scope(_tracing.new_base_seed(), 0, i):
            np.testing.assert_array_equal(got, augment(images[i]))
        inner = cvi.convert_image_dtype(got[1:5], cv.uint8)  # undo the pad and the scale
        crops = [images[i][y:y + 4, x:x + 6] for y in range(3) for x in range(3)]
        assert any(np.array_equal(inner, c) or np.array_equal(inner, c[:, ::-1]) for c in crops)


def test_traced_map_on_images_of_varying_size():
    """Unknown height and width: windows from each element's shape; an
    image too small fails at its element, and iteration goes on."""
    sizes = [(5, 7), (9, 4), (2, 2), (8, 8)]
    images = [RNG.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in sizes]
    ds = cv.data.Dataset.from_generator(
        lambda: iter(images), output_signature=cv.TensorSpec((None, None, 3), cv.uint8))
    ds = ds.map(lambda x: cvi.crop_to_bounding_box(cvi.central_crop(x, 0.75), 0, 0, 2, 3),
                num_parallel_calls=2)
    assert "mode=native" in repr(ds)
    assert ds.element_spec == cv.TensorSpec((2, 3, 3), cv.uint8)
    it = iter(ds)
    for k, x in enumerate(images):
        want = None
        try:
            want = cvi.crop_to_bounding_box(cvi.central_crop(x, float(np.float32(0.75))), 0, 0, 2, 3)
        except ValueError:
            pass
        if want is None:
            with pytest.raises(cv.errors.InvalidArgumentError, match="width must be >= target"):
                next(it)
        else:
            np.testing.assert_array_equal(next(it), want)
    with pytest.raises(StopIteration):
        next(it)
