"""Batches of large strings reference their rows' buffers instead of copying
them (kernels/common/batch_rows.h): every consumer of such a batch must read
the same values as from a copied one. Records below and above the sharing
threshold (4 KiB), mixed in one batch, through every kernel and op that
reads string bytes."""
import numpy as np
import pytest

import conveyor as cv

pytestmark = pytest.mark.filterwarnings("ignore:.*runs in Python per element")

Dataset = cv.data.Dataset
SIZES = [0, 5, 4095, 4096, 4097, 100 * 1024, 3, 70_000]


def payloads(n=24, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, SIZES[i % len(SIZES)], dtype=np.uint8).tobytes()
            for i in range(n)]


@pytest.fixture
def records(tmp_path):
    """Two TFRecord files of mixed-size records; returns (paths, records in file order)."""
    data = payloads()
    paths = []
    for f in range(2):
        path = str(tmp_path / f"r{f}.tfrecord")
        with cv.io.TFRecordWriter(path) as w:
            for r in data[f::2]:
                w.write(r)
        paths.append(path)
    return paths, data[0::2] + data[1::2]


def batches(ds):
    return [b.tolist() for b in ds]


def chunks(values, n):
    return [values[i:i + n] for i in range(0, len(values), n)]


@pytest.mark.parametrize("npc", [None, 2])
def test_batch_of_records_values(records, npc):
    paths, data = records
    ds = cv.data.TFRecordDataset(paths).batch(5, num_parallel_calls=npc)
    out = list(ds)
    # One string of a batch is a scalar string tensor (TF's), as bytes in tolist().
    assert all(b.dtype == object and all(type(x) is bytes for x in b.tolist()) for b in out)
    assert all(isinstance(x, cv.EagerTensor) and x.shape == () for b in out for x in b)
    assert [b.tolist() for b in out] == chunks(data, 5)


def test_interleave_batch_as_in_the_benchmark(records):
    paths, data = records
    ds = Dataset.from_tensor_slices(paths).interleave(
        lambda f: cv.data.TFRecordDataset(f), cycle_length=2, num_parallel_calls=2).batch(4)
    expected = [x for pair in zip(data[:12], data[12:]) for x in pair]
    assert batches(ds) == chunks(expected, 4)


def test_unbatch_and_batch_again(records):
    paths, data = records
    ds = cv.data.TFRecordDataset(paths).batch(5).unbatch()
    assert [bytes(x) for x in ds] == data
    assert batches(ds.batch(7)) == chunks(data, 7)
    assert batches(ds.batch(7).unbatch().batch(3)) == chunks(data, 3)


def test_rebatch_padded_batch_and_window(records):
    paths, data = records
    ds = cv.data.TFRecordDataset(paths)
    assert batches(ds.batch(5).rebatch(3)) == chunks(data, 3)
    assert batches(ds.batch(5).unbatch().padded_batch(4)) == chunks(data, 4)
    windows = ds.batch(2).window(3).flat_map(lambda w: w.batch(3))
    assert [b.tolist() for b in windows] == chunks(chunks(data, 2), 3)


def test_vectors_of_large_strings(records):
    """Rows that are rank-1 string tensors (batches themselves) batched again."""
    paths, data = records
    out = list(cv.data.TFRecordDataset(paths).batch(2).batch(3, drop_remainder=True))
    assert [b.tolist() for b in out] == chunks(chunks(data, 2), 3)


def test_zip_map_and_cache(records, tmp_path):
    paths, data = records
    ds = cv.data.TFRecordDataset(paths).batch(4)
    zipped = Dataset.zip((ds, ds.map(lambda s: cv.shape(s))))
    assert [(a.tolist(), b.tolist()) for a, b in zipped] == [(c, [len(c)]) for c in chunks(data, 4)]
    for cached in (ds.cache(), ds.cache(str(tmp_path / "c"))):
        assert batches(cached) == chunks(data, 4)
        assert batches(cached) == chunks(data, 4)  # from the cache


def test_python_functions_see_the_bytes(records):
    paths, data = records
    ds = cv.data.TFRecordDataset(paths).batch(4)
    lengths = ds.map(lambda s: cv.numpy_function(lambda b: np.array([len(x) for x in b]), [s],
                                                 cv.int64))
    assert [v.tolist() for v in lengths] == [[len(x) for x in c] for c in chunks(data, 4)]
    echoed = ds.map(lambda s: cv.numpy_function(lambda b: b, [s], cv.string))
    assert batches(echoed) == chunks(data, 4)


def test_decode_raw_and_parse_example_read_referenced_strings(tmp_path):
    raw = [bytes([i]) * 8192 for i in range(6)]
    path = str(tmp_path / "raw.tfrecord")
    with cv.io.TFRecordWriter(path) as w:
        for r in raw:
            w.write(r)
    decoded = cv.data.TFRecordDataset(path).batch(3).map(lambda s: cv.io.decode_raw(s, cv.uint8))
    assert [d.shape for d in decoded] == [(3, 8192)] * 2
    np.testing.assert_array_equal(np.concatenate(list(decoded)),
                                  np.frombuffer(b"".join(raw), np.uint8).reshape(6, 8192))

    blobs = [bytes([65 + i]) * (5000 + i) for i in range(5)]
    path = str(tmp_path / "ex.tfrecord")
    with cv.io.TFRecordWriter(path) as w:
        for i, b in enumerate(blobs):
            w.write(cv.io.serialize_example({"blob": b, "pad": b"x" * 6000, "i": i}))
    spec = {"blob": cv.io.FixedLenFeature([], cv.string),
            "i": cv.io.FixedLenFeature([], cv.int64)}
    parsed = list(cv.data.TFRecordDataset(path).batch(2).map(lambda s: cv.io.parse_example(s, spec)))
    assert [x for p in parsed for x in p["blob"].tolist()] == blobs
    assert [x for p in parsed for x in p["i"].tolist()] == list(range(5))


def test_slices_of_one_large_blob_are_copied_correctly():
    """Rows that are slices of one big source tensor (not their own buffers)."""
    data = payloads(10, seed=3)
    ds = Dataset.from_tensor_slices(np.array(data, dtype=object))
    assert batches(ds.batch(4)) == chunks(data, 4)
    assert batches(ds.batch(4).unbatch().batch(3)) == chunks(data, 3)


def test_memory_accounting_and_release(records):
    """The budget charges a batch its string bytes as before, and the rows'
    buffers are released with the batch."""
    paths, data = records
    before = cv._engine.memory_in_use()
    it = iter(cv.data.TFRecordDataset(paths).batch(24))
    b = next(it)
    assert b.tolist() == data
    del b, it
    assert cv._engine.memory_in_use() <= before + (1 << 20)
