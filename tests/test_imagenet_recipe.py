"""The ImageNet recipes' normalization in a traced map (issue 28): the
mean and stddev steps fold into the resize's write (per-channel epilogues),
`tf.broadcast_to(means, tf.shape(image))` adds no copy, `set_shape` stays
in the traced program, and the values are bit for bit those of the ops one
at a time and TensorFlow's."""
import glob
import os
import warnings

import numpy as np
import pytest

import conveyor as cv
from conveyor.framework.tracing import TracingWarning

JPEGS = sorted(p for p in glob.glob("/work/shared/testdata/jpeg/*.jpg")
               if "truncated" not in p)
MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STDDEV = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def import_tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return pytest.importorskip("tensorflow")


def normalize(tf, image):
    image = image - tf.broadcast_to(MEAN, tf.shape(image))
    image = image / tf.broadcast_to(STDDEV, tf.shape(image))
    image.set_shape([None, None, 3])
    return image


def eval_recipe(tf, image_bytes, size=224, padding=32):
    """decode_and_center_crop, resize (compat.v1 bilinear), normalize."""
    shape = tf.image.extract_jpeg_shape(image_bytes)
    h, w = shape[0], shape[1]
    crop = tf.cast(((size / (size + padding)) * tf.cast(tf.minimum(h, w), tf.float32)),
                   tf.int32)
    window = tf.stack([((h - crop) + 1) // 2, ((w - crop) + 1) // 2, crop, crop])
    image = tf.image.decode_and_crop_jpeg(image_bytes, window, channels=3)
    image = tf.compat.v1.image.resize(image, [size, size],
                                      method=tf.image.ResizeMethod.BILINEAR,
                                      align_corners=False)
    return normalize(tf, image)


def traced_only(ds_fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracingWarning)
        return ds_fn()


@pytest.mark.parametrize("resize", ["v2", "v1", "v1_align"])
@pytest.mark.parametrize("size", [[224, 224], [17, 300], [400, 520]])
def test_per_channel_steps_after_a_resize_fold_with_the_same_values(resize, size):
    rng = np.random.default_rng(5)
    img = rng.integers(0, 256, (375, 500, 3), dtype=np.uint8)

    def fn(x):
        if resize == "v2":
            r = cv.image.resize(x, size)
        else:
            r = cv.compat.v1.image.resize_bilinear(x[None], size,
                                                   align_corners=resize == "v1_align")[0]
        return ((r - cv.constant(MEAN)) / cv.constant(STDDEV)) * 0.5
    want = np.asarray(fn(img))  # eager: one op at a time
    ds = cv.data.Dataset.from_tensors(img).repeat(3)
    for built in (ds.map(fn), ds.map(fn, num_parallel_calls=2).batch(3)):
        got = np.concatenate([b.reshape((-1,) + want.shape)
                              for b in traced_only(lambda: built).as_numpy_iterator()])
        assert got.shape == (3,) + want.shape and got.dtype == np.float32
        for row in got:
            np.testing.assert_array_equal(row, want)


def test_a_vector_that_widens_the_result_is_not_an_epilogue():
    # [6, 8, 1] - [3] is [6, 8, 3]: not a step the resize could apply.
    img = np.arange(6 * 8, dtype=np.uint8).reshape(6, 8, 1)

    def fn(x):
        return cv.image.resize(x, [4, 4]) - cv.constant([1.0, 2.0, 3.0])
    got, = cv.data.Dataset.from_tensors(img).map(fn).as_numpy_iterator()
    want = np.asarray(cv.image.resize(img, [4, 4])) - np.float32([1, 2, 3])
    assert got.shape == (4, 4, 3)
    np.testing.assert_array_equal(got, want)


def test_broadcast_to_of_a_known_shape_traces_and_keeps_values():
    x = np.arange(2 * 3 * 3, dtype=np.float32).reshape(2, 3, 3)

    def fn(t):
        b = cv.broadcast_to([1.0, 2.0, 4.0], cv.shape(t))
        return t - b, b  # b used as a result too: it is still made
    (diff, b), = traced_only(lambda: cv.data.Dataset.from_tensors(x).map(fn)).as_numpy_iterator()
    np.testing.assert_array_equal(diff, x - np.float32([1, 2, 4]))
    np.testing.assert_array_equal(b, np.broadcast_to(np.float32([1, 2, 4]), x.shape))
    spec = cv.data.Dataset.from_tensors(x).map(fn).element_spec
    assert spec[0].shape.as_list() == [2, 3, 3] and spec[1].shape.as_list() == [2, 3, 3]


def test_get_static_value_of_a_known_shape():
    seen = []

    def fn(t):
        seen.append(cv.get_static_value(cv.shape(t)))
        seen.append(cv.get_static_value(cv.shape(t, out_type=cv.int64)))
        return t
    cv.data.Dataset.from_tensors(np.zeros((2, 5), np.float32)).map(fn)
    np.testing.assert_array_equal(seen[0], [2, 5])
    assert seen[0].dtype == np.int32 and seen[1].dtype == np.int64

    def unknown(t):
        seen.append(cv.get_static_value(cv.shape(t)))
        return t
    cv.data.Dataset.from_tensor_slices([b"ab"]).map(lambda s: cv.io.decode_raw(s, cv.uint8)).map(
        unknown)
    assert seen[-1] is None


def test_set_shape_in_a_traced_map():
    tf = import_tf()
    for lib in (cv, tf):
        def fn(x):
            y = lib.reshape(x, [-1])
            y.set_shape([6])
            return y
        ds = lib.data.Dataset.from_tensors(np.zeros((2, 3), np.float32))
        ds = traced_only(lambda: ds.map(fn)) if lib is cv else ds.map(fn)
        assert ds.element_spec.shape.as_list() == [6]



@pytest.mark.skipif(not JPEGS, reason="no test photos")
def test_the_eval_recipe_equals_tensorflow():
    tf = import_tf()
    paths = JPEGS[:6]

    def build(lib):
        ds = lib.data.Dataset.from_tensor_slices(paths)
        return ds.map(lambda f: eval_recipe(lib, lib.io.read_file(f)),
                      num_parallel_calls=2).batch(2)
    ours = list(traced_only(lambda: build(cv)).as_numpy_iterator())
    theirs = list(build(tf).as_numpy_iterator())
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype == np.float32 and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
