"""sample_distorted_bounding_box and its stateless twin against TensorFlow's.

The values are TensorFlow's, value for value: the stateless op for any seed,
the stateful op for a given seed eagerly (call after call, as TensorFlow's
cached kernel draws) and inside Dataset.map (element after element, from a
fresh iterator), over the argument ranges the ImageNet recipes use:
min_object_covered 0.1, aspect 3/4..4/3, area 0.05 or 0.08..1, 10 or 100
attempts, with and without boxes.
"""
import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from conveyor.framework.tracing import TracingWarning  # noqa: E402


def as_lists(result):
    return [np.asarray(x.numpy() if hasattr(x, "numpy") else x).tolist() for x in result]


def cases(n, seed=0):
    """(image_size, boxes, kwargs): sizes, boxes and the recipes' arguments."""
    rs = np.random.RandomState(seed)
    out = []
    for i in range(n):
        h, w = int(rs.randint(1, 700)), int(rs.randint(1, 700))
        kw = dict(min_object_covered=[0.1, 0.1, 0.5, 0.0][i % 4],
                  aspect_ratio_range=[(0.75, 1.33), (3 / 4, 4 / 3)][i % 2],
                  area_range=[(0.05, 1.0), (0.08, 1.0), (0.1, 0.5)][i % 3],
                  max_attempts=[100, 10, 100, 1][i % 4])
        if i % 3 == 0:
            boxes = np.zeros((1, 0, 4), np.float32)
            kw["use_image_if_no_bounding_boxes"] = True
        else:
            k = 1 + i % 3
            y, x = np.sort(rs.rand(2, k, 2), axis=-1)
            boxes = np.stack([y[:, 0], x[:, 0], y[:, 1], x[:, 1]], -1)[None].astype(np.float32)
        out.append(([h, w, 3], boxes, kw))
    return out


def test_stateless_matches_tensorflow():
    rs = np.random.RandomState(1)
    for size, boxes, kw in cases(300):
        seed = [int(v) for v in rs.randint(-2**31, 2**31, size=2)]
        want = as_lists(tf.image.stateless_sample_distorted_bounding_box(size, boxes, seed, **kw))
        got = as_lists(cv.image.stateless_sample_distorted_bounding_box(size, boxes, seed, **kw))
        assert got == want, (size, boxes.tolist(), seed, kw)


def test_stateless_int64_seed_and_image_size_dtypes():
    boxes = np.array([[[0.1, 0.2, 0.7, 0.9]]], np.float32)
    for dtype in ("uint8", "int16", "int32", "int64"):
        size = np.array([200, 150, 3], dtype)
        seed = np.array([2**40 + 3, -5], np.int64)
        want = as_lists(tf.image.stateless_sample_distorted_bounding_box(size, boxes, seed))
        got = cv.image.stateless_sample_distorted_bounding_box(size, boxes, seed)
        assert as_lists(got) == want
        assert np.asarray(got[0]).dtype == np.dtype(dtype)


def test_stateful_eager_calls_follow_tensorflows_kernel():
    """Each call of an op with the same arguments draws the next window."""
    for size, boxes, kw in cases(12, seed=2):
        seed = 1 + len(boxes.tolist()[0]) + size[0]
        want = [as_lists(tf.image.sample_distorted_bounding_box(size, boxes, seed=seed, **kw))
                for _ in range(3)]
        got = [as_lists(cv.image.sample_distorted_bounding_box(size, boxes, seed=seed, **kw))
               for _ in range(3)]
        assert got == want, (size, kw)


def test_stateful_global_seed_rules_match_tensorflow():
    boxes = np.zeros((1, 0, 4), np.float32)
    try:
        for g in (1, 1234):
            tf.random.set_seed(g)
            cv.random.set_seed(g)
            want = as_lists(tf.image.sample_distorted_bounding_box(
                [480, 640, 3], boxes, seed=99, use_image_if_no_bounding_boxes=True))
            got = as_lists(cv.image.sample_distorted_bounding_box(
                [480, 640, 3], boxes, seed=99, use_image_if_no_bounding_boxes=True))
            assert got == want
    finally:
        tf.random.set_seed(None)
        cv.random.set_seed(None)


def _map_windows(mod, sizes, **kw):
    def fn(size):
        begin, sz, bbox = mod.image.sample_distorted_bounding_box(
            size, np.zeros((1, 0, 4), np.float32), seed=5, use_image_if_no_bounding_boxes=True,
            **kw)
        return begin, sz, bbox
    ds = mod.data.Dataset.from_tensor_slices(sizes).repeat(2).map(fn)
    first = [as_lists(e) for e in ds]
    again = [as_lists(e) for e in ds]  # a fresh iterator starts over, in both
    assert again == first
    return first


@pytest.mark.parametrize("kw", [dict(), dict(max_attempts=10, area_range=(0.08, 1.0))])
def test_stateful_in_a_map_matches_tensorflow_element_by_element(kw):
    sizes = np.array([[375, 500, 3], [500, 375, 3], [100, 100, 3], [1, 1, 3]] * 5, np.int32)
    want = _map_windows(tf, sizes, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracingWarning)
        got = _map_windows(cv, sizes, **kw)
    assert got == want


def test_stateful_in_a_parallel_map_is_deterministic():
    """Keyed by element, not by thread: the same windows as the sequential map."""
    sizes = np.array([[375, 500, 3]] * 40, np.int32)

    def fn(size):
        return cv.image.sample_distorted_bounding_box(
            size, np.zeros((1, 0, 4), np.float32), seed=5, use_image_if_no_bounding_boxes=True)[0]
    seq = [np.asarray(x).tolist() for x in cv.data.Dataset.from_tensor_slices(sizes).map(fn)]
    par = cv.data.Dataset.from_tensor_slices(sizes).map(fn, num_parallel_calls=4)
    assert [np.asarray(x).tolist() for x in par] == seq
    assert len({tuple(x) for x in seq}) > 30


def test_unseeded_windows_vary():
    boxes = np.zeros((1, 0, 4), np.float32)
    got = {tuple(np.asarray(cv.image.sample_distorted_bounding_box(
        [500, 500, 3], boxes, use_image_if_no_bounding_boxes=True)[0]).tolist())
        for _ in range(20)}
    assert len(got) > 10


def outcome(fn, *args, **kwargs):
    try:
        return as_lists(fn(*args, **kwargs))
    except (tf.errors.OpError, cv.errors.OpError) as e:
        return type(e).__name__


@pytest.mark.parametrize("args,kw", [
    (([10, 10, 3], np.zeros((1, 0, 4), np.float32)), {}),
    (([10, 10, 3], np.zeros((1, 0, 4), np.float32)), dict(aspect_ratio_range=(0, 1))),
    (([10, 10, 3], np.zeros((1, 0, 4), np.float32)), dict(aspect_ratio_range=(1,))),
    (([10, 10, 3], np.zeros((1, 0, 4), np.float32)), dict(area_range=(0.5, 1.5))),
    (([10, 10, 3], np.zeros((1, 0, 4), np.float32)), dict(area_range=(0, 1))),
    (([10, 10, 3], np.zeros((1, 0, 4), np.float32)), dict(max_attempts=0)),
    (([10, 10, 3], [[[0, 0, 1, 2.]]]), {}),
    (([10, 10, 3], [[[0, 0, 1, 1.]]]), dict(min_object_covered=-1.0)),
    (([10, 10], np.zeros((1, 0, 4), np.float32)), {}),
    (([10, 10, 3], np.zeros((1, 4), np.float32)), {}),
    (([0, 10, 3], [[[0.5, 0.5, 0.2, 0.2]]]), {}),
    (([10, 10, 3], [[[0.5, 0.5, 0.2, 0.2]]]), {}),
])
def test_errors_and_edge_cases_match_tensorflow(args, kw):
    for fn, mod in ((lambda m: m.image.sample_distorted_bounding_box, "stateful"),
                    (lambda m: m.image.stateless_sample_distorted_bounding_box, "stateless")):
        extra = dict(seed=3) if mod == "stateful" else dict(seed=[3, 4])
        want = outcome(fn(tf), *args, **extra, **kw)
        got = outcome(fn(cv), *args, **extra, **kw)
        if isinstance(want, list) and want[2][0][0][0] != want[2][0][0][0]:  # NaN boxes
            assert str(got) == str(want)
        else:
            assert got == want, (mod, args, kw)


def test_imagenet_training_recipe_traces_and_matches_tensorflow():
    """tensorflow/models' ImageNet training preprocessing (our snippet,
    tests/tf_snippets/imagenet_recipes.py): extract_jpeg_shape ->
    sample_distorted_bounding_box -> the window stacked -> decode_and_crop_jpeg
    -> resize to 224 -> flip runs in the native program (no TracingWarning)
    and gives TensorFlow's images, bit for bit, for a fixed seed."""
    from tf_snippets import imagenet_recipes as recipes
    from tf_snippets._compare import MissingTestData
    try:
        want = [x.numpy() for x in recipes.imagenet_train_dataset(tf)]
    except MissingTestData as e:
        pytest.skip(str(e))
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracingWarning)
        ds = recipes.imagenet_train_dataset(cv)
        got = [np.asarray(x) for x in ds]
        par = [np.asarray(x) for x in ds.map(lambda x: x, num_parallel_calls=2)]
    assert len(got) == len(want) == len(par)
    for g, p, w in zip(got, par, want):
        assert g.dtype == w.dtype and g.shape == w.shape == (224, 224, 3)
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(p, w)
