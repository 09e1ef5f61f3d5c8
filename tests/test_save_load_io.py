"""tf.io.serialize_tensor / parse_tensor (byte-identical to TensorFlow),
Dataset.save / load, tf.data.experimental.TFRecordWriter,
make_batched_features_dataset, group_by_reducer and the other older
tf.data.experimental spellings."""
import os
import struct

import numpy as np
import pytest

import conveyor as cv
from conveyor import errors


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


RNG = np.random.default_rng(11)
SAMPLES = [
    np.float32(2.5), np.array([[1.0, -2.0], [3.5, 4.0]], np.float32), np.int32(-7),
    np.array([], np.int64), np.zeros((0, 3), np.float16), np.array([True, False, True]),
    np.array([b"a", b"", b"b\x00c"], object), np.array(b"scalar", object),
    RNG.integers(-100, 100, (2, 3, 4)).astype(np.int16), RNG.standard_normal(7),
    RNG.integers(0, 255, 9).astype(np.uint8), np.array([2**63 + 5, 1], np.uint64),
    np.array([-1, 3], np.int8), np.array([7, 2**31 + 1], np.uint32), np.array([9], np.uint16),
]


@pytest.mark.parametrize("value", SAMPLES, ids=lambda v: f"{v.dtype}{list(np.shape(v))}")
def test_serialize_tensor_is_byte_identical_and_parses_back(tf, value):
    theirs = tf.io.serialize_tensor(value).numpy()
    ours = cv.io.serialize_tensor(value)
    assert ours == theirs
    dtype = tf.constant(value).dtype.name
    parsed = np.asarray(cv.io.parse_tensor(theirs, dtype))
    expected = np.asarray(tf.io.parse_tensor(theirs, tf.as_dtype(dtype)).numpy())
    assert parsed.shape == expected.shape and parsed.tolist() == expected.tolist()


def test_parse_tensor_reads_typed_value_fields_as_tensorflow(tf):
    shape = b"\x12\x04\x12\x02\x08\x03"  # [3]
    protos = {
        "float32": b"\x08\x01" + shape + b"\x2a\x04" + struct.pack("<f", 1.5),  # repeats
        "int64": b"\x08\x09" + shape + b"\x52\x02\x05\x07",  # packed int64_val 5, 7
        "int32": b"\x08\x03" + shape + b"\x38\x7f\x38\x02\x38\x03",  # unpacked int_val
        "bool": b"\x08\x0a" + shape,  # no values: zeros
    }
    for dtype, data in protos.items():
        ours = cv.io.parse_tensor(data, dtype)
        theirs = tf.io.parse_tensor(data, tf.as_dtype(dtype)).numpy()
        assert ours.tolist() == theirs.tolist() and ours.dtype == theirs.dtype, dtype


@pytest.mark.parametrize("data,dtype", [
    (b"\x08\x03\x12\x00\x22\x04\x03\x00\x00\x00", "int64"),  # an int32 tensor
    (b"\xff\xff", "int64"), (b"\x08\x01\x12\x00\x22\x03abc", "float32"),  # wrong size
])
def test_parse_tensor_errors_as_tensorflow(tf, data, dtype):
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.io.parse_tensor(data, tf.as_dtype(dtype))
    with pytest.raises(errors.InvalidArgumentError):
        cv.io.parse_tensor(data, dtype)


def test_parse_tensor_in_a_map_runs_in_python_and_matches():
    values = [np.arange(i, dtype=np.float32) for i in range(4)]
    blobs = [bytes(cv.io.serialize_tensor(v)) for v in values]
    ds = cv.data.Dataset.from_tensor_slices(np.array(blobs, object)).map(
        lambda s: cv.io.parse_tensor(s, cv.float32))
    assert [x.tolist() for x in ds.as_numpy_iterator()] == [v.tolist() for v in values]


# -- save / load -------------------------------------------------------------------------

def _plain(ds):
    return [[np.asarray(leaf).tolist() for leaf in cv.nest.flatten(e)]
            for e in ds.as_numpy_iterator()]


def test_save_and_load_keep_elements_structure_and_spec(tmp_path):
    ds = cv.data.Dataset.range(7).map(lambda x: {
        "id": x, "pair": (cv.cast(x, cv.float32) / 2, cv.fill([3], x)),
        "name": cv.strings.as_string(x) if hasattr(cv.strings, "as_string") else x})
    ds.save(str(tmp_path / "saved"))
    loaded = cv.data.Dataset.load(str(tmp_path / "saved"))
    assert loaded.element_spec == ds.element_spec
    assert _plain(loaded) == _plain(ds)
    assert "native" in repr(loaded)  # static shapes restored natively, decoding in Python


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_save_shards_and_compression(tmp_path, compression):
    path = str(tmp_path / "sharded")
    cv.data.Dataset.range(10).save(path, compression=compression, shard_func=lambda x: x % 3)
    assert sorted(f for f in os.listdir(path) if f.endswith(".tfrecord")) == [
        f"shard-0000{i}.tfrecord" for i in range(3)]
    loaded = cv.data.experimental.load(path)
    assert sorted(int(x) for x in loaded) == list(range(10))
    assert [int(x) for x in loaded] == [0, 3, 6, 9, 1, 4, 7, 2, 5, 8]  # shards in order


def test_load_errors_and_empty(tmp_path):
    with pytest.raises(errors.NotFoundError, match="no saved dataset"):
        cv.data.Dataset.load(str(tmp_path / "nothing"))
    cv.data.Dataset.range(0).save(str(tmp_path / "empty"))
    empty = cv.data.Dataset.load(str(tmp_path / "empty"))
    assert list(empty) == [] and empty.element_spec == cv.TensorSpec([], cv.int64)


def test_save_load_against_tensorflow_elements(tf, tmp_path):
    def make(t):
        return t.data.Dataset.from_tensor_slices((np.arange(6), np.arange(6) * 1.5)).batch(4)
    make(cv).save(str(tmp_path / "c"))
    make(tf).save(str(tmp_path / "t"))
    ours = cv.data.Dataset.load(str(tmp_path / "c"))
    theirs = tf.data.Dataset.load(str(tmp_path / "t"))
    assert _plain(ours) == [[np.asarray(v).tolist() for v in e] for e in theirs.as_numpy_iterator()]
    assert str(ours.element_spec) == str(theirs.element_spec)


# -- TFRecordWriter, make_batched_features_dataset ------------------------------------------

def test_experimental_tfrecord_writer_is_read_by_tensorflow(tf, tmp_path):
    path = str(tmp_path / "out.tfrecord")
    records = [b"", b"a", bytes(range(256)) * 40]
    cv.data.experimental.TFRecordWriter(path).write(cv.data.Dataset.from_tensor_slices(
        np.array(records, object)))
    assert [r.numpy() for r in tf.data.TFRecordDataset(path)] == records
    gz = str(tmp_path / "out.gz")
    cv.data.experimental.TFRecordWriter(gz, "GZIP").write(
        cv.data.Dataset.from_tensor_slices(np.array(records, object)))
    assert [r.numpy() for r in tf.data.TFRecordDataset(gz, "GZIP")] == records
    with pytest.raises(TypeError, match="scalar `string`"):
        cv.data.experimental.TFRecordWriter(path).write(cv.data.Dataset.range(3))


def _example_files(tmp_path, n_files=2, per_file=5):
    paths = []
    for f in range(n_files):
        path = str(tmp_path / f"ex-{f}.tfrecord")
        with cv.io.TFRecordWriter(path) as w:
            for i in range(per_file):
                ex = cv.train.Example(features=cv.train.Features(feature={
                    "age": cv.train.Feature(int64_list=cv.train.Int64List(value=[f * 100 + i])),
                    "w": cv.train.Feature(float_list=cv.train.FloatList(value=[i / 2, -i])),
                    "label": cv.train.Feature(int64_list=cv.train.Int64List(value=[i % 2]))}))
                w.write(ex.SerializeToString())
        paths.append(path)
    return paths


@pytest.mark.parametrize("kwargs", [
    dict(batch_size=3, num_epochs=1, shuffle=False),
    dict(batch_size=4, num_epochs=2, shuffle=False, label_key="label", drop_final_batch=True),
    dict(batch_size=2, num_epochs=1, shuffle=False, reader_num_threads=2),
])
def test_make_batched_features_dataset_matches_tensorflow(tf, tmp_path, kwargs):
    _example_files(tmp_path)
    pattern = str(tmp_path / "ex-*.tfrecord")

    def features(t):
        return {"age": t.io.FixedLenFeature([], t.int64), "w": t.io.FixedLenFeature([2], t.float32),
                "label": t.io.FixedLenFeature([], t.int64)}
    ours = cv.data.experimental.make_batched_features_dataset(pattern, features=features(cv),
                                                             **kwargs)
    theirs = tf.data.experimental.make_batched_features_dataset(pattern, features=features(tf),
                                                               **kwargs)
    assert _plain(ours) == [[np.asarray(v).tolist() for v in tf.nest.flatten(e)]
                            for e in theirs.as_numpy_iterator()]


# -- group_by_reducer and the other experimental spellings ------------------------------------

def test_group_by_reducer_matches_tensorflow(tf):
    def make(t):
        reducer = t.data.experimental.Reducer(
            init_func=lambda key: np.int64(0), reduce_func=lambda s, x: s + x,
            finalize_func=lambda s: s * 10)
        return t.data.Dataset.range(20).apply(t.data.experimental.group_by_reducer(
            key_func=lambda x: x % 3, reducer=reducer))
    assert sorted(int(x) for x in make(cv)) == sorted(int(x) for x in make(tf))


def test_experimental_spellings_match_tensorflow(tf):
    cases = [
        lambda t: t.data.Dataset.range(7).apply(t.data.experimental.map_and_batch(
            lambda x: x * 2, 3, num_parallel_batches=2)),
        lambda t: t.data.Dataset.range(4).apply(t.data.experimental.parallel_interleave(
            lambda x: t.data.Dataset.range(x), cycle_length=2, block_length=2)),
        lambda t: t.data.Dataset.range(3).apply(t.data.experimental.enumerate_dataset(4)),
        lambda t: t.data.experimental.from_list([{"a": 1, "b": [1.5, 2.0]},
                                                 {"a": 2, "b": [0.0, -1.0]}]),
        lambda t: t.data.experimental.RandomDataset(seed=4).take(3),
    ]
    for make in cases:
        assert _plain(make(cv)) == [[np.asarray(v).tolist() for v in tf.nest.flatten(e)]
                                    for e in make(tf).as_numpy_iterator()]


def test_experimental_spelling_errors():
    with pytest.raises(ValueError, match="only one of"):
        cv.data.experimental.map_and_batch(lambda x: x, 2, num_parallel_batches=1,
                                           num_parallel_calls=2)
    with pytest.raises(ValueError, match="empty"):
        cv.data.experimental.from_list([])
    with pytest.raises(TypeError, match="same type spec"):
        cv.data.experimental.from_list([1, 2.5])
    options = cv.data.Options()
    options.experimental_deterministic = False
    assert options.deterministic is False
    assert cv.data.experimental.AutoShardPolicy.DATA.name == "DATA"


# -- rejection_resample ------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("initial", [[0.7, 0.2, 0.1], None])
def test_rejection_resample_reaches_the_target_distribution(initial):
    classes = np.random.RandomState(0).choice(3, size=20000, p=[0.7, 0.2, 0.1]).astype(np.int64)
    ds = cv.data.Dataset.from_tensor_slices((classes, np.arange(20000)))
    out = ds.rejection_resample(lambda c, i: c, target_dist=[0.25, 0.25, 0.5],
                                initial_dist=initial, seed=5)
    pairs = list(out.as_numpy_iterator())
    got = np.bincount([int(c) for c, _ in pairs], minlength=3) / len(pairs)
    assert np.allclose(got, [0.25, 0.25, 0.5], atol=0.03), got
    assert all(int(c) == int(e[0]) for c, e in pairs)  # (class, element) pairs
    ids = [int(e[1]) for _, e in pairs]
    assert set(ids) <= set(range(20000))


@pytest.mark.filterwarnings("ignore")
def test_rejection_resample_structure_matches_tensorflow(tf):
    def make(t, initial):
        ds = t.data.Dataset.from_tensor_slices(np.array([0] * 18 + [1] * 6, np.int64))
        return ds.rejection_resample(lambda x: x, target_dist=[0.5, 0.5], initial_dist=initial,
                                     seed=3)
    for initial in ([0.75, 0.25], None):
        assert str(make(cv, initial).element_spec) == str(make(tf, initial).element_spec)
    with pytest.raises(ValueError, match="same length"):
        make(cv, [1.0])


# -- snapshot ----------------------------------------------------------------------------------

def test_snapshot_writes_once_and_is_read_by_the_same_pipeline(tmp_path):
    calls = []

    def slow(x):
        calls.append(int(x))
        return x * 2

    def make(scale=1):
        return cv.data.Dataset.range(6).map(
            lambda x: cv.numpy_function(slow, [x * scale], cv.int64)).snapshot(str(tmp_path))
    first = make()
    it = iter(first)
    next(it), next(it)
    del it  # an unfinished pass commits nothing
    assert [int(x) for x in first] == [0, 2, 4, 6, 8, 10]
    done = len(calls)
    assert [int(x) for x in make()] == [0, 2, 4, 6, 8, 10]  # rebuilt: read, not run
    assert len(calls) == done
    assert [int(x) for x in make(scale=3)] == [0, 6, 12, 18, 24, 30]  # another pipeline
    assert len([f for f in os.listdir(tmp_path) if f.startswith("snapshot-")]) == 2


def test_snapshot_elements_match_tensorflow(tf, tmp_path):
    def make(t, sub):
        return t.data.Dataset.range(8).map(lambda x: (x, t.cast(x, t.float32) / 4)).snapshot(
            str(tmp_path / sub)).batch(3)
    assert _plain(make(cv, "c")) == [[np.asarray(v).tolist() for v in e]
                                     for e in make(tf, "t").as_numpy_iterator()]
