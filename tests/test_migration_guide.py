"""The claims of docs/migrating.md, each backed by a test.

Every claim in the guide ends with a marker ``(test: test_migration_guide.py::test_name)``
naming the test below that backs it; ``test_every_claim_has_a_test`` parses the
guide and fails when a marker names no test here, and when a test here backs
no claim. Tests that compare with TensorFlow skip without it.
"""
import inspect
import os
import re
import sys

import numpy as np
import pytest

import conveyor

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GUIDE = os.path.join(REPO, "docs", "migrating.md")
MARKER = re.compile(r"\(test: test_migration_guide\.py::(test_\w+)\)")


def _tf():
    return pytest.importorskip("tensorflow")


def _numpy(element):
    """An element as plain NumPy, for either library (TF tensors have .numpy())."""
    if isinstance(element, dict):
        return {k: _numpy(v) for k, v in element.items()}
    if isinstance(element, tuple):
        return tuple(_numpy(v) for v in element)
    if hasattr(element, "numpy"):
        element = element.numpy()
    return np.asarray(element)


def _assert_same(a, b):
    a, b = _numpy(a), _numpy(b)
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys()
        for k in a:
            _assert_same(a[k], b[k])
    elif isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    else:
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
        np.testing.assert_array_equal(a, b)


def _assert_same_elements(tf_ds, cv_ds):
    expected, got = list(tf_ds), list(cv_ds)
    assert len(expected) == len(got)
    for e, g in zip(expected, got):
        _assert_same(e, g)


# -- What stays the same ------------------------------------------------------

PIPELINE = """
def make(tf, features, labels):
    return (tf.data.Dataset.from_tensor_slices((features, labels))
            .shuffle(64, seed=7)
            .map(lambda x, y: (tf.cast(x, tf.float32) * 2.0 - 1.0, y),
                 num_parallel_calls=tf.data.AUTOTUNE)
            .batch(16, drop_remainder=True)
            .prefetch(tf.data.AUTOTUNE))
"""


def test_same_code_runs_with_either_import():
    tf = _tf()
    namespace = {}
    exec(PIPELINE, namespace)  # the same source text, run with either module as `tf`
    features = np.arange(200 * 3, dtype=np.int32).reshape(200, 3)
    labels = np.arange(200) % 10
    _assert_same_elements(namespace["make"](tf, features, labels),
                          namespace["make"](conveyor, features, labels))


def test_dataset_has_tf_datas_methods():
    tf = _tf()
    names = {m for m in dir(tf.data.Dataset) if not m.startswith("_")}
    missing = {m for m in names if not hasattr(conveyor.data.Dataset, m)}
    assert missing <= {"fingerprint"}, missing
    for name in ("TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset", "Options"):
        assert hasattr(conveyor.data, name), name
    assert hasattr(conveyor.data.experimental, "CsvDataset")


def test_shuffle_order_matches_tf():
    tf = _tf()
    for reshuffle in (True, False):
        _assert_same_elements(
            tf.data.Dataset.range(100).shuffle(30, seed=3, reshuffle_each_iteration=reshuffle).repeat(3),
            conveyor.data.Dataset.range(100).shuffle(30, seed=3, reshuffle_each_iteration=reshuffle).repeat(3))
    tf.random.set_seed(11)
    conveyor.random.set_seed(11)
    try:
        _assert_same_elements(tf.data.Dataset.range(50).shuffle(50), conveyor.data.Dataset.range(50).shuffle(50))
    finally:
        tf.random.set_seed(None)
        conveyor.random.set_seed(None)


def test_parallel_map_keeps_order():
    tf = _tf()

    def pipe(mod):
        return (mod.data.Dataset.range(1000)
                .map(lambda x: x * x, num_parallel_calls=mod.data.AUTOTUNE)
                .interleave(lambda x: mod.data.Dataset.from_tensors(x).repeat(2), cycle_length=4,
                            num_parallel_calls=mod.data.AUTOTUNE))
    _assert_same_elements(pipe(tf), pipe(conveyor))


def test_dtypes_match_tf():
    tf = _tf()
    sources = [[1, 2, 3], [1.5, 2.5], [True, False], ["a", "bc"], [2 ** 40],
               np.arange(3, dtype=np.uint8), np.ones(2, np.float64)]
    for values in sources:
        t = tf.data.Dataset.from_tensor_slices(values).element_spec
        c = conveyor.data.Dataset.from_tensor_slices(values).element_spec
        assert t.dtype.name == c.dtype.name, (values, t, c)
    assert conveyor.data.Dataset.range(3).element_spec.dtype.name == "int64"


def test_element_spec_matches_tf():
    tf = _tf()

    def pipe(mod, drop):
        return (mod.data.Dataset.from_tensor_slices({"x": np.zeros((10, 4), np.float32),
                                                     "y": np.arange(10)})
                .batch(3, drop_remainder=drop))
    for drop in (False, True):
        t, c = pipe(tf, drop).element_spec, pipe(conveyor, drop).element_spec
        assert t.keys() == c.keys()
        for k in t:
            assert t[k].shape.as_list() == c[k].shape.as_list()
            assert t[k].dtype.name == c[k].dtype.name


def test_cardinality_matches_tf():
    tf = _tf()
    pipes = [lambda m: m.data.Dataset.range(10).batch(3),
             lambda m: m.data.Dataset.range(10).batch(3, drop_remainder=True),
             lambda m: m.data.Dataset.range(10).repeat(),
             lambda m: m.data.Dataset.range(10).filter(lambda x: x > 3),
             lambda m: m.data.Dataset.range(10).skip(4).take(3)]
    for pipe in pipes:
        assert int(pipe(tf).cardinality()) == int(pipe(conveyor).cardinality())


def test_engine_errors_have_tfs_classes(tmp_path):
    tf = _tf()
    missing = str(tmp_path / "missing.tfrecord")
    for mod in (tf, conveyor):
        with pytest.raises(mod.errors.NotFoundError):
            list(mod.data.TFRecordDataset(missing))
    damaged = tmp_path / "damaged.tfrecord"
    with tf.io.TFRecordWriter(str(damaged)) as w:
        w.write(b"x" * 100)
    data = bytearray(damaged.read_bytes())
    data[20] ^= 0xFF
    damaged.write_bytes(bytes(data))
    for mod in (tf, conveyor):
        with pytest.raises(mod.errors.DataLossError):
            list(mod.data.TFRecordDataset(str(damaged)))
    for mod in (tf, conveyor):
        it = iter(mod.data.Dataset.range(1))
        next(it)
        with pytest.raises(StopIteration):
            next(it)
    record = conveyor.io.serialize_example({"image": b"abc"})  # no "label"
    for mod in (tf, conveyor):
        spec = {"label": mod.io.FixedLenFeature([], mod.int64)}
        ds = mod.data.Dataset.from_tensors(record).map(lambda r: mod.io.parse_single_example(r, spec))
        with pytest.raises(mod.errors.InvalidArgumentError):
            list(ds)


def test_errors_are_also_builtin_exceptions():
    assert issubclass(conveyor.errors.InvalidArgumentError, ValueError)
    assert issubclass(conveyor.errors.NotFoundError, FileNotFoundError)
    assert issubclass(conveyor.errors.DataLossError, OSError)
    assert issubclass(conveyor.errors.InvalidArgumentError, conveyor.errors.OpError)


def test_elements_are_numpy_arrays():
    x, y = next(iter(conveyor.data.Dataset.from_tensor_slices(
        (np.ones((4, 2), np.float32), np.arange(4))).batch(2)))
    assert isinstance(x, np.ndarray) and x.dtype == np.float32 and x.shape == (2, 2)
    assert type(x.numpy()) is np.ndarray
    assert x.shape.as_list() == [2, 2]
    plain = next(conveyor.data.Dataset.range(3).as_numpy_iterator())
    assert isinstance(plain, np.integer)


def test_exact_resume_in_a_new_iterator():
    def pipe():
        return (conveyor.data.Dataset.range(200)
                .shuffle(50, seed=1)
                .map(lambda x: x * 3, num_parallel_calls=conveyor.data.AUTOTUNE)
                .batch(8)
                .prefetch(4))
    full = [b.tolist() for b in pipe()]
    it = iter(pipe())
    head = [next(it).tolist() for _ in range(7)]
    state = it.save()
    assert isinstance(state, bytes)
    rest = iter(pipe())
    rest.restore(state)
    assert head + [b.tolist() for b in rest] == full


def test_checkpoint_resumes_like_tf(tmp_path):
    tf = _tf()
    continued = {}
    for name, mod in (("tf", tf), ("cv", conveyor)):
        ds = mod.data.Dataset.range(100).shuffle(20, seed=5).batch(4)
        it = iter(ds)
        for _ in range(5):
            next(it)
        prefix = mod.train.Checkpoint(iterator=it).save(str(tmp_path / name / "ckpt"))
        it2 = iter(ds)
        mod.train.Checkpoint(iterator=it2).restore(prefix)
        continued[name] = [_numpy(b).tolist() for b in it2]
    assert continued["tf"] == continued["cv"]
    assert len(continued["cv"]) == 20


def test_tfrecord_files_interoperate(tmp_path):
    tf = _tf()
    records = [b"", b"a", bytes(range(256)) * 40]
    with tf.io.TFRecordWriter(str(tmp_path / "tf.tfrecord")) as w:
        for r in records:
            w.write(r)
    with conveyor.io.TFRecordWriter(str(tmp_path / "cv.tfrecord")) as w:
        for r in records:
            w.write(r)
    assert (tmp_path / "tf.tfrecord").read_bytes() == (tmp_path / "cv.tfrecord").read_bytes()
    assert [bytes(r) for r in conveyor.data.TFRecordDataset(str(tmp_path / "tf.tfrecord"))] == records


# -- What differs ---------------------------------------------------------------


def test_python_exception_keeps_its_type():
    class MyError(Exception):
        pass

    def fail(x):
        raise MyError("boom")

    with pytest.raises(MyError):
        list(conveyor.data.Dataset.range(3).map(lambda x: conveyor.py_function(fail, [x], conveyor.int64)))


def test_numpy_map_function_runs_in_python():
    with pytest.warns(UserWarning, match="runs in Python per element"):
        ds = conveyor.data.Dataset.range(4).map(lambda x: np.sqrt(np.asarray(x, np.float64)))
    np.testing.assert_allclose([float(v) for v in ds], np.sqrt(np.arange(4)))


def test_no_tensorflow_runtime():
    # (conveyor.keras has only Keras' dataset utilities: tests/test_keras_utils.py)
    for name in ("distribute", "GradientTape"):
        assert not hasattr(conveyor, name), name

    @conveyor.function
    def double(x):
        return x * 2
    assert double(3) == 6


# -- Porting a pipeline step by step ----------------------------------------------


def _write_examples(tf_or_cv, path, n=40):
    rng = np.random.default_rng(0)
    with tf_or_cv.io.TFRecordWriter(path) as w:
        for i in range(n):
            image = rng.integers(0, 256, size=(8, 8, 3), dtype=np.uint8)
            w.write(conveyor.io.serialize_example({"image": image.tobytes(), "label": i % 5}))


def make_pipeline(tf, files):
    """The pipeline of docs/migrating.md, written once for either module."""
    features = {"image": tf.io.FixedLenFeature([], tf.string),
                "label": tf.io.FixedLenFeature([], tf.int64)}

    def parse(record):
        ex = tf.io.parse_single_example(record, features)
        image = tf.io.decode_raw(ex["image"], tf.uint8)
        image = tf.reshape(image, [8, 8, 3])
        image = tf.cast(image, tf.float32) / 255.0
        return image, ex["label"]

    return (tf.data.TFRecordDataset(files)
            .map(parse, num_parallel_calls=tf.data.AUTOTUNE)
            .shuffle(16, seed=42)
            .batch(8)
            .prefetch(tf.data.AUTOTUNE))


def test_ported_pipeline_matches_tf(tmp_path):
    tf = _tf()
    path = str(tmp_path / "train.tfrecord")
    _write_examples(conveyor, path)
    _assert_same_elements(make_pipeline(tf, [path]), make_pipeline(conveyor, [path]))


def test_repr_shows_how_a_map_runs():
    native = conveyor.data.Dataset.range(3).map(lambda x: x * 2, num_parallel_calls=conveyor.data.AUTOTUNE)
    assert repr(native).startswith("<ParallelMapDataset mode=native ")
    with pytest.warns(UserWarning, match="runs in Python per element"):
        python = conveyor.data.Dataset.range(3).map(lambda x: np.sqrt(x))
    assert repr(python).startswith("<MapDataset mode=python (")


def test_doctor_checks_a_ported_pipeline(tmp_path):
    path = str(tmp_path / "train.tfrecord")
    _write_examples(conveyor, path)
    diagnosis = conveyor.data.experimental.diagnose(make_pipeline(conveyor, [path]), steps=3)
    assert diagnosis.checks and str(diagnosis)


def test_example_serialization_matches_tf():
    tf = _tf()
    image = np.arange(12, dtype=np.uint8).tobytes()
    ours = conveyor.io.serialize_example({"image": image, "label": 3})
    parsed = tf.io.parse_single_example(ours, {"image": tf.io.FixedLenFeature([], tf.string),
                                               "label": tf.io.FixedLenFeature([], tf.int64)})
    assert parsed["image"].numpy() == image and parsed["label"].numpy() == 3


# -- The guide itself -----------------------------------------------------------------


def _tests_here():
    module = sys.modules[__name__]
    return {name for name, f in inspect.getmembers(module, inspect.isfunction)
            if name.startswith("test_") and f.__module__ == __name__}


def test_every_claim_has_a_test():
    text = open(GUIDE, encoding="utf-8").read()
    cited = MARKER.findall(text)
    assert cited, "docs/migrating.md cites no test"
    assert not set(cited) - _tests_here(), f"claims cite missing tests: {set(cited) - _tests_here()}"
    uncited = _tests_here() - set(cited) - {"test_every_claim_has_a_test"}
    assert not uncited, f"tests that back no claim of docs/migrating.md: {uncited}"
