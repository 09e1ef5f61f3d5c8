"""conveyor.keras.utils against tf.keras.utils (Keras 3 on TensorFlow):
the same files in the same order, the same splits, labels and values."""
import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import conveyor as cv  # noqa: E402


def _write_image(path, h, w, channels, seed):
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, size=(h, w, channels), dtype=np.uint8)
    if path.endswith(".png"):
        data = tf.io.encode_png(pixels).numpy()
    else:
        data = tf.io.encode_jpeg(pixels, quality=90).numpy()
    with open(path, "wb") as f:
        f.write(data)


@pytest.fixture(scope="module")
def image_dir(tmp_path_factory):
    """Three classes, nested folders, JPEG and PNG of several sizes, a file
    that is not an image and a hidden folder, which Keras ignores."""
    root = tmp_path_factory.mktemp("images")
    k = 0
    for cls, count in (("cats", 7), ("dogs", 5), ("birds", 6)):
        for i in range(count):
            sub = root / cls / ("deep" if i % 3 == 2 else "")
            os.makedirs(sub, exist_ok=True)
            ext = ".png" if i % 2 else ".JPG" if i == 4 else ".jpg"
            _write_image(str(sub / f"img{i:02d}{ext}"), 20 + 3 * k % 17, 30 - k % 11,
                         1 if i == 3 else 3, k)
            k += 1
        (root / cls / "notes.txt").write_text("not an image")
    os.makedirs(root / ".hidden")
    _write_image(str(root / ".hidden" / "x.jpg"), 8, 8, 3, 99)
    return str(root)


def _elements(ds):
    return [tuple(np.asarray(v) for v in e) if isinstance(e, tuple) else (np.asarray(e),)
            for e in ds]


def _same(a, b, atol=0.0):
    ea, eb = _elements(a), _elements(b)
    assert len(ea) == len(eb)
    for x, y in zip(ea, eb):
        assert len(x) == len(y)
        for u, v in zip(x, y):
            assert u.dtype == v.dtype and u.shape == v.shape
            if u.dtype.kind == "O":
                assert u.tolist() == v.tolist()
            else:
                np.testing.assert_allclose(u, v, atol=atol, rtol=0)


def _both(name, *args, **kwargs):
    theirs = getattr(tf.keras.utils, name)(*args, verbose=False, **kwargs) \
        if name != "timeseries_dataset_from_array" else getattr(tf.keras.utils, name)(*args, **kwargs)
    ours = getattr(cv.keras.utils, name)(*args, verbose=False, **kwargs) \
        if name != "timeseries_dataset_from_array" else getattr(cv.keras.utils, name)(*args, **kwargs)
    return theirs, ours


@pytest.mark.parametrize("kwargs", [
    dict(seed=7),
    dict(shuffle=False, image_size=(12, 9), batch_size=4),
    dict(seed=3, label_mode="categorical", image_size=(16, 16), batch_size=None),
    dict(seed=5, class_names=["dogs", "cats"], label_mode="binary", image_size=10),
    dict(seed=11, label_mode=None, color_mode="grayscale", image_size=(8, 8), batch_size=5),
    dict(seed=2, interpolation="nearest", image_size=(9, 13)),
    dict(seed=2, interpolation="bicubic", image_size=(31, 13), batch_size=7),
    dict(seed=2, interpolation="area", image_size=(7, 7), batch_size=3),
    dict(seed=4, crop_to_aspect_ratio=True, image_size=(10, 20), batch_size=6),
    dict(seed=4, crop_to_aspect_ratio=True, image_size=(25, 8), batch_size=6),
    dict(seed=9, pad_to_aspect_ratio=True, image_size=(15, 9), batch_size=6),
    dict(seed=1, validation_split=0.25, subset="training", image_size=(8, 8)),
    dict(seed=1, validation_split=0.25, subset="validation", image_size=(8, 8)),
])
def test_image_dataset_matches_keras(image_dir, kwargs):
    theirs, ours = _both("image_dataset_from_directory", image_dir, **kwargs)
    assert ours.class_names == theirs.class_names
    assert ours.file_paths == theirs.file_paths
    _same(theirs, ours)


def test_image_dataset_both_subsets_and_manual_labels(image_dir):
    theirs, ours = _both("image_dataset_from_directory", image_dir, seed=13,
                         validation_split=0.3, subset="both", image_size=(6, 6), batch_size=4)
    assert isinstance(ours, list) and len(ours) == 2
    for t, o in zip(theirs, ours):
        assert o.file_paths == t.file_paths and o.class_names == t.class_names
        _same(t, o)
    # labels=list: one per file in Keras' unshuffled walk order (of every
    # folder, hidden ones included, as labels=None lists them)
    n = len(tf.keras.utils.image_dataset_from_directory(image_dir, labels=None, shuffle=False,
                                                        verbose=False, batch_size=None))
    labels = [i % 4 for i in range(n)]
    theirs = tf.keras.utils.image_dataset_from_directory(
        image_dir, labels=list(labels), seed=21, image_size=(5, 5), verbose=False)
    ours = cv.keras.utils.image_dataset_from_directory(
        image_dir, labels=list(labels), seed=21, image_size=(5, 5), verbose=False)
    assert ours.class_names == theirs.class_names == ["0", "1", "2", "3"]
    _same(theirs, ours)


def test_image_dataset_runs_natively(image_dir):
    """The loader is traced: the engine decodes and resizes, no Python per element."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = cv.keras.utils.image_dataset_from_directory(image_dir, seed=1, image_size=(8, 8),
                                                         crop_to_aspect_ratio=True, verbose=False)
        next(iter(ds))


def test_tf_keras_names():
    assert cv.keras.utils.image_dataset_from_directory is \
        cv.keras.preprocessing.image_dataset_from_directory
    import conveyor.keras.utils as u
    assert u.timeseries_dataset_from_array is cv.keras.utils.timeseries_dataset_from_array


@pytest.mark.parametrize("kwargs,error", [
    (dict(labels="x"), "`labels` argument should be a list/tuple"),
    (dict(label_mode="sparse"), "`label_mode` argument must be one of"),
    (dict(color_mode="bgr"), "`color_mode` must be one of"),
    (dict(image_size=(1, 2, 3)), "Invalid `image_size` value"),
    (dict(interpolation="cubic"), "Argument `interpolation` should be one of"),
    (dict(validation_split=0.2, subset="training"), "you must provide a `seed`"),
    (dict(validation_split=1.5, subset="training", seed=1), "must be between 0 and 1"),
    (dict(subset="training"), "If `subset` is set"),
    (dict(label_mode="binary"), "there must be exactly 2"),
    (dict(class_names=["cats", "fish"]), "did not match the names"),
    (dict(crop_to_aspect_ratio=True, pad_to_aspect_ratio=True), "Only one of"),
])
def test_image_dataset_errors_as_keras(image_dir, kwargs, error):
    for mod in (tf.keras.utils, cv.keras.utils):
        with pytest.raises(ValueError, match=error):
            mod.image_dataset_from_directory(image_dir, verbose=False, **kwargs)


@pytest.fixture(scope="module")
def text_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("texts")
    for cls in ("neg", "pos"):
        for i in range(9):
            sub = root / cls / ("more" if i > 6 else "")
            os.makedirs(sub, exist_ok=True)
            (sub / f"t{i}.txt").write_bytes(f"{cls} review {i} ".encode() * (i + 1))
        (root / cls / "skip.md").write_text("ignored")
    return str(root)


@pytest.mark.parametrize("kwargs", [
    dict(seed=3),
    dict(shuffle=False, batch_size=4, max_length=11),
    dict(seed=8, label_mode="binary", batch_size=None),
    dict(seed=8, label_mode="categorical", batch_size=5),
    dict(seed=5, labels=None, batch_size=2),
    dict(seed=6, validation_split=0.2, subset="validation", batch_size=3),
])
def test_text_dataset_matches_keras(text_dir, kwargs):
    theirs, ours = _both("text_dataset_from_directory", text_dir, **kwargs)
    assert ours.class_names == theirs.class_names
    _same(theirs, ours)


def test_text_dataset_both(text_dir):
    theirs, ours = _both("text_dataset_from_directory", text_dir, seed=4, validation_split=0.4,
                         subset="both", batch_size=3)
    for t, o in zip(theirs, ours):
        _same(t, o)


@pytest.mark.parametrize("kwargs", [
    dict(sequence_length=5),
    dict(sequence_length=4, sequence_stride=3, sampling_rate=2, batch_size=3),
    dict(sequence_length=3, shuffle=True, seed=17, batch_size=4),
    dict(sequence_length=6, shuffle=True, seed=2, batch_size=None),
    dict(sequence_length=2, start_index=5, end_index=40, batch_size=7),
])
@pytest.mark.parametrize("with_targets", [False, True])
def test_timeseries_matches_keras(kwargs, with_targets):
    data = np.arange(60 * 2, dtype=np.float64).reshape(60, 2) * 0.5
    targets = np.arange(60, dtype=np.int64) * 3 if with_targets else None
    theirs, ours = _both("timeseries_dataset_from_array", data, targets, **kwargs)
    _same(theirs, ours)
    # Keras' windows come from a range of traced bounds: their length is not static
    ours = cv.keras.utils.timeseries_dataset_from_array(data, targets, **kwargs)
    theirs = tf.keras.utils.timeseries_dataset_from_array(data, targets, **kwargs)
    assert str(ours.element_spec) == str(theirs.element_spec)
    assert "): native" in repr(ours)  # the window's map stays native


def test_timeseries_errors_as_keras():
    data = np.zeros((10, 1))
    for kwargs, error in ((dict(start_index=20), "`start_index` must be lower"),
                          (dict(end_index=3, start_index=5), "`end_index` must be higher than `start_index`"),
                          (dict(sampling_rate=0), "`sampling_rate` must be higher"),
                          (dict(sequence_stride=10), "`sequence_stride` must be lower")):
        for mod in (tf.keras.utils, cv.keras.utils):
            with pytest.raises(ValueError, match=error):
                mod.timeseries_dataset_from_array(data, None, 3, **kwargs)


@pytest.mark.parametrize("follow_links", [False, True])
def test_follow_links_as_keras(image_dir, tmp_path, follow_links):
    """A symlinked folder inside a class is walked only with follow_links."""
    root = tmp_path / "linked"
    os.makedirs(root / "a")
    os.makedirs(root / "b")
    _write_image(str(root / "a" / "x.png"), 5, 6, 3, 1)
    _write_image(str(root / "b" / "y.png"), 7, 4, 3, 2)
    os.symlink(os.path.join(image_dir, "cats"), root / "a" / "more")
    theirs, ours = _both("image_dataset_from_directory", str(root), seed=3, image_size=(4, 4),
                         follow_links=follow_links)
    assert ours.file_paths == theirs.file_paths
    _same(theirs, ours)
