"""tf.image.crop_and_resize and tf.image.draw_bounding_boxes against
TensorFlow's: values bit for bit, dtypes, shapes and error types, eagerly
and traced in Dataset.map (no Python fallback)."""
import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from conveyor.framework.tracing import TracingWarning  # noqa: E402


def random_boxes(rs, n):
    """Boxes inside, across and outside the image, flipped, degenerate."""
    boxes = rs.uniform(-0.3, 1.3, [n, 4]).astype(np.float32)
    boxes[: n // 2] = np.sort(rs.uniform(0, 1, [n // 2, 2, 2]), axis=1).transpose(
        0, 2, 1).reshape(-1, 4)[:, [0, 1, 2, 3]]
    boxes[0] = [0, 0, 1, 1]
    boxes[1] = [0.5, 0.5, 0.5, 0.5]
    return boxes


@pytest.mark.parametrize("dtype", ["uint8", "int16", "int32", "float16", "float32", "float64"])
@pytest.mark.parametrize("method", ["bilinear", "nearest"])
def test_crop_and_resize_matches_tensorflow(dtype, method):
    rs = np.random.RandomState(0)
    for h, w, d in ((7, 9, 3), (1, 1, 1), (1, 5, 2), (32, 20, 4)):
        image = (rs.uniform(0, 200, [3, h, w, d])).astype(dtype)
        boxes = random_boxes(rs, 12)
        idx = rs.randint(0, 3, [12]).astype(np.int32)
        for crop in ((1, 1), (3, 5), (8, 8), (1, 6)):
            for extra in (0.0, -1.5):
                want = tf.image.crop_and_resize(image, boxes, idx, crop, method=method,
                                                extrapolation_value=extra).numpy()
                got = cv.image.crop_and_resize(image, boxes, idx, crop, method=method,
                                               extrapolation_value=extra)
                assert got.dtype == want.dtype and got.shape == want.shape
                np.testing.assert_array_equal(np.asarray(got), want, err_msg=str((h, w, d, crop)))


def test_crop_and_resize_in_map_is_traced_and_matches():
    rs = np.random.RandomState(1)
    images = rs.randint(0, 256, [4, 20, 30, 3]).astype(np.uint8)
    boxes = random_boxes(rs, 4)

    def fn(lib):
        def f(image, box):
            crops = lib.image.crop_and_resize(image[None], box[None], [0], [7, 5])
            return crops[0]
        return f

    want = list(tf.data.Dataset.from_tensor_slices((images, boxes)).map(fn(tf))
                .as_numpy_iterator())
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracingWarning)
        ds = cv.data.Dataset.from_tensor_slices((images, boxes)).map(fn(cv))
        got = list(ds.as_numpy_iterator())
    assert repr(ds.element_spec) == repr(tf.data.Dataset.from_tensor_slices(
        (images, boxes)).map(fn(tf)).element_spec)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_crop_and_resize_errors():
    image = np.zeros([2, 4, 4, 3], np.float32)
    bad = [(dict(box_indices=[2]), "OutOfRangeError"), (dict(box_indices=[-1]), "OutOfRangeError"),
           (dict(crop_size=[0, 3]), "InvalidArgumentError"),
           (dict(crop_size=[2]), "InvalidArgumentError"),
           (dict(boxes=[[0, 0, 1]]), "InvalidArgumentError"),
           (dict(box_indices=[0, 0]), "InvalidArgumentError"),
           (dict(image=np.zeros([4, 4, 3], np.float32)), "InvalidArgumentError")]
    for kw, error in bad:
        args = dict(image=image, boxes=[[0, 0, 1, 1]], box_indices=[0], crop_size=[2, 2])
        args.update(kw)
        with pytest.raises(getattr(tf.errors, error)):
            tf.image.crop_and_resize(**args)
        with pytest.raises(getattr(cv.errors, error)):
            cv.image.crop_and_resize(**args)
    with pytest.raises(ValueError):
        cv.image.crop_and_resize(image, [[0, 0, 1, 1]], [0], [2, 2], method="bicubic")


@pytest.mark.parametrize("depth", [1, 3, 4])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_draw_bounding_boxes_matches_tensorflow(depth, dtype):
    rs = np.random.RandomState(depth)
    for h, w in ((10, 10), (1, 7), (31, 17)):
        images = rs.uniform(0, 1, [2, h, w, depth]).astype(dtype)
        boxes = np.stack([random_boxes(rs, 13), random_boxes(rs, 13)])
        for colors in (None, rs.uniform(0, 1, [3, 4]).astype(np.float32),
                       np.zeros([0, 4], np.float32), rs.uniform(0, 1, [2, 5]).astype(np.float32)):
            # (TensorFlow 2.21 returns float32 for float16 images from its
            # second eager call on; the first, and the kernel, give float16)
            want = tf.image.draw_bounding_boxes(images, boxes, colors).numpy().astype(dtype)
            got = cv.image.draw_bounding_boxes(images, boxes, colors)
            assert got.dtype == images.dtype and got.shape == want.shape
            np.testing.assert_array_equal(np.asarray(got), want)


def test_draw_bounding_boxes_in_map_and_errors():
    rs = np.random.RandomState(2)
    images = rs.uniform(0, 1, [3, 12, 9, 3]).astype(np.float32)
    boxes = random_boxes(rs, 6).reshape(3, 2, 4)

    def fn(lib):
        return lambda im, bx: lib.image.draw_bounding_boxes(im[None], bx[None], None)[0]

    want = list(tf.data.Dataset.from_tensor_slices((images, boxes)).map(fn(tf))
                .as_numpy_iterator())
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracingWarning)
        got = list(cv.data.Dataset.from_tensor_slices((images, boxes)).map(fn(cv))
                   .as_numpy_iterator())
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    for images, colors in ((np.zeros([1, 4, 4, 2], np.float32), None),
                           (np.zeros([1, 4, 4, 4], np.float32), [[1, 0, 0]]),
                           (tf.zeros([1, 4, 4, 3], tf.uint8), None)):
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.image.draw_bounding_boxes(images, [[[0, 0, 1, 1]]], colors)
        with pytest.raises(cv.errors.InvalidArgumentError):
            cv.image.draw_bounding_boxes(cv.constant(np.asarray(images)), [[[0, 0, 1, 1]]], colors)
    image = np.full([1, 4, 4, 3], 7, np.uint8)
    want = tf.image.draw_bounding_boxes(image, [[[0, 0, 1, 1]]], None).numpy()
    got = cv.image.draw_bounding_boxes(image, [[[0, 0, 1, 1]]], None)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
