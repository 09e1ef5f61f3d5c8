"""conveyor.compat.v1 against tf.compat.v1: TensorFlow 1's spellings,
the legacy resize ops (exact values) and session-free iterators."""
import logging

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
import conveyor.compat.v1 as v1  # noqa: E402


def test_import_styles():
    import conveyor.compat.v2 as v2
    assert cv.compat.v1 is v1 and v2 is cv and cv.compat.v2 is cv
    for name in ("data", "image", "io", "cast", "reshape", "constant", "float32", "string",
                 "int64", "TensorSpec", "errors", "gfile", "logging"):
        assert hasattr(v1, name), name


_IMAGES = np.random.default_rng(0).integers(0, 256, size=(2, 7, 9, 3)).astype(np.uint8)


@pytest.mark.parametrize("name", ["resize_bilinear", "resize_nearest_neighbor", "resize_bicubic"])
@pytest.mark.parametrize("flags", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("size", [(3, 4), (11, 17), (1, 1), (7, 9), (1, 5)])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.int16])
def test_legacy_resize_exact(name, flags, size, dtype):
    x = _IMAGES.astype(dtype) * (1 if dtype == np.uint8 else 3)
    align, half = flags
    theirs = getattr(tf.compat.v1.image, name)(x, size, align_corners=align,
                                               half_pixel_centers=half).numpy()
    ours = getattr(v1.image, name)(x, size, align_corners=align, half_pixel_centers=half)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    if name == "resize_bicubic" and half:  # tf.image.resize's bicubic: a few float32 ulps
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-3)
    else:
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("method", [0, 1, 2, 3, "bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("size", [(3, 4), (11, 17), (7, 9)])
def test_resize_images_exact(method, size):
    for x in (_IMAGES[0], _IMAGES):
        theirs = tf.compat.v1.image.resize_images(x, size, method=method).numpy()
        ours = v1.image.resize_images(x, size, method=method)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)
    assert v1.image.resize is v1.image.resize_images


def test_legacy_resize_traced_in_map():
    def pipeline(t):
        ds = t.data.Dataset.from_tensor_slices(_IMAGES).map(
            lambda im: t.compat.v1.image.resize_bilinear(t.expand_dims(im, 0), [5, 6],
                                                         align_corners=True)[0])
        return [np.asarray(e) for e in ds]
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = pipeline(cv)
    for a, b in zip(pipeline(tf), ours):
        np.testing.assert_array_equal(a, b)


def test_legacy_resize_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="4-dimensional"):
        tf.compat.v1.image.resize_bilinear(_IMAGES[0], [3, 3])
    with pytest.raises(cv.errors.InvalidArgumentError, match="4-dimensional"):
        v1.image.resize_bilinear(_IMAGES[0], [3, 3])
    for mod, err in ((tf, tf.errors.InvalidArgumentError), (cv, cv.errors.InvalidArgumentError)):
        with pytest.raises(err, match="align_corners must be False"):
            mod.compat.v1.image.resize_nearest_neighbor(_IMAGES, [3, 3], align_corners=True,
                                                        half_pixel_centers=True)
    with pytest.raises(NotImplementedError, match="align_corners"):
        v1.image.resize_area(_IMAGES, [3, 3], align_corners=True)


def test_casts_and_read_file(tmp_path):
    p = tmp_path / "f.bin"
    p.write_bytes(b"abc\0def")
    assert v1.read_file(str(p)) == tf.compat.v1.read_file(str(p)).numpy()
    x = np.array([1.7, -2.5], np.float64)
    for name in ("to_float", "to_int32", "to_int64", "to_double"):
        theirs = getattr(tf.compat.v1, name)(x).numpy()
        ours = getattr(v1, name)(x)
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)


def test_random_ops_and_seed():
    v1.set_random_seed(5)
    u = v1.random_uniform([1000], 2, 4, seed=1)
    assert u.dtype == np.float32 and u.shape == (1000,) and 2 <= u.min() and u.max() < 4
    n = v1.random_normal([4000], mean=1.0, stddev=2.0, seed=3)
    assert n.dtype == np.float32 and abs(float(n.mean()) - 1.0) < 0.3
    assert 1.7 < float(n.std()) < 2.3
    ds = cv.data.Dataset.range(3).map(lambda i: v1.random_normal([2], seed=4))
    values = [np.asarray(e) for e in ds]
    assert not np.array_equal(values[0], values[1])
    cv.random.set_seed(None)


def _example(i):
    return tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(int64_list=tf.train.Int64List(value=[i, i * 2])),
        "s": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"a" * (i + 1)])),
    })).SerializeToString()


def test_parsing_names():
    features = {"x": v1.FixedLenFeature([2], v1.int64), "s": v1.VarLenFeature(v1.string)}
    tf_features = {"x": tf.compat.v1.FixedLenFeature([2], tf.int64),
                   "s": tf.compat.v1.VarLenFeature(tf.string)}
    ours = v1.parse_single_example(_example(3), features)
    theirs = tf.compat.v1.parse_single_example(_example(3), tf_features)
    np.testing.assert_array_equal(ours["x"], theirs["x"].numpy())
    assert list(ours["s"].values) == list(theirs["s"].values.numpy())
    batch = [_example(i) for i in range(3)]
    ours = v1.parse_example(batch, features)
    theirs = tf.compat.v1.parse_example(batch, tf_features)
    np.testing.assert_array_equal(ours["x"], theirs["x"].numpy())


def test_one_shot_and_initializable_iterators():
    ds = cv.data.Dataset.range(3).map(lambda i: i * 2)
    it = v1.data.make_one_shot_iterator(ds)
    tf_it = tf.compat.v1.data.make_one_shot_iterator(tf.data.Dataset.range(3).map(lambda i: i * 2))
    for _ in range(3):
        assert int(it.get_next()) == int(tf_it.get_next())
    with pytest.raises(tf.errors.OutOfRangeError):
        tf_it.get_next()
    with pytest.raises(cv.errors.OutOfRangeError):
        it.get_next()
    it = v1.data.make_initializable_iterator(ds)
    assert int(it.get_next()) == 0 and int(it.get_next()) == 2
    it.initializer.run()
    assert int(it.get_next()) == 0
    it.initializer()
    assert [int(x) for x in it] == [0, 2, 4]
    assert v1.data.get_output_types(ds) == cv.int64
    assert it.output_shapes == cv.TensorShape([])


def test_get_output_classes_names_tensor():
    value = {"a": np.zeros((4, 3), np.float32), "b": np.array([b"x", b"y", b"z", b"w"])}
    want = tf.compat.v1.data.get_output_classes(tf.data.Dataset.from_tensor_slices(value))
    got = v1.data.get_output_classes(cv.data.Dataset.from_tensor_slices(value))
    assert {k: c.__name__ for k, c in got.items()} == {k: c.__name__ for k, c in want.items()}
    assert got["a"] is cv.Tensor


def test_experimental_transformations():
    def run(t):
        ds = t.data.Dataset.range(6).apply(t.compat.v1.data.experimental.map_and_batch(
            lambda x: x * 3, 4))
        out = [np.asarray(e).tolist() for e in ds]
        ds = t.data.Dataset.range(3).apply(t.compat.v1.data.experimental.parallel_interleave(
            lambda x: t.data.Dataset.from_tensors(x).repeat(2), cycle_length=2))
        out.append([int(e) for e in ds])
        ds = t.data.Dataset.range(5).apply(t.compat.v1.data.experimental.shuffle_and_repeat(
            5, count=2, seed=3))
        out.append(sorted(int(e) for e in ds))
        return out
    assert run(cv) == run(tf)


def test_logging(caplog):
    assert v1.logging.INFO == tf.compat.v1.logging.INFO == logging.INFO
    v1.logging.set_verbosity(v1.logging.INFO)
    try:
        assert v1.logging.get_verbosity() == logging.INFO
        with caplog.at_level(logging.INFO, logger="tensorflow"):
            v1.logging.info("step %d", 3)
            for _ in range(3):
                v1.logging.log_first_n(v1.logging.WARN, "once", 1)
        messages = [r.getMessage() for r in caplog.records]
        assert "step 3" in messages and messages.count("once") == 1
    finally:
        v1.logging.set_verbosity(v1.logging.WARN)


def test_gfile_camel_case(tmp_path):
    (tmp_path / "a.txt").write_text("x")
    assert v1.gfile.Exists(str(tmp_path / "a.txt"))
    assert v1.gfile.IsDirectory(str(tmp_path))
    assert v1.gfile.ListDirectory(str(tmp_path)) == tf.compat.v1.gfile.ListDirectory(str(tmp_path))
    assert v1.gfile.Glob(str(tmp_path / "*.txt")) == tf.compat.v1.gfile.Glob(str(tmp_path / "*.txt"))
    with pytest.raises(AttributeError, match="no NoSuchThing"):
        v1.gfile.NoSuchThing
