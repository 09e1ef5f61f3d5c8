"""TFRecordDataset and TFRecordWriter without TensorFlow: round trips, compression,
files made by Python's zlib/gzip, filename forms, argument checks, CRC-32C."""
import gzip
import pathlib
import zlib

import numpy as np
import pytest

import conveyor as tf
from conveyor import _engine
from _record_files import crc32c, masked_crc, random_records, tfrecord_bytes

COMPRESSIONS = [None, "ZLIB", "GZIP"]


def write(path, records, compression=None):
    with tf.io.TFRecordWriter(str(path), compression) as w:
        for r in records:
            w.write(r)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_round_trip_many_files(tmp_path, compression):
    rng = np.random.default_rng(0)
    files, expected = [], []
    for k in range(6):
        recs = [] if k == 1 else random_records(rng, 30, 2000) + [b""]
        write(tmp_path / f"{k}.tfr", recs, compression)
        files.append(str(tmp_path / f"{k}.tfr"))
        expected += recs
    ds = tf.data.TFRecordDataset(files, compression_type=compression)
    assert ds.element_spec == tf.TensorSpec([], tf.string)
    assert list(ds) == expected
    assert list(ds) == expected  # a second pass re-reads
    assert ds.cardinality() == tf.data.UNKNOWN_CARDINALITY


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("buffer_size", [0, 1, 4096, 1 << 20])
def test_buffer_sizes_and_big_records(tmp_path, compression, buffer_size):
    recs = [b"a" * 5, bytes(range(256)) * 4000, b"", b"b" * 70_000, b"c" * 3]
    write(tmp_path / "r.tfr", recs, compression)
    ds = tf.data.TFRecordDataset(str(tmp_path / "r.tfr"), compression, buffer_size=buffer_size)
    assert list(ds) == recs


def test_python_zlib_and_gzip_files(tmp_path):
    recs = [b"x" * i for i in range(50)]
    raw = tfrecord_bytes(recs)
    with gzip.GzipFile(tmp_path / "g.tfr", "wb") as f:
        f.write(raw)
    (tmp_path / "z.tfr").write_bytes(zlib.compress(raw, 1))
    # Concatenated gzip members form one stream, as TensorFlow reads them.
    (tmp_path / "gg.tfr").write_bytes(gzip.compress(raw[:116]) + gzip.compress(raw[116:]))
    assert list(tf.data.TFRecordDataset(str(tmp_path / "g.tfr"), "GZIP")) == recs
    assert list(tf.data.TFRecordDataset(str(tmp_path / "z.tfr"), "ZLIB")) == recs
    assert list(tf.data.TFRecordDataset(str(tmp_path / "gg.tfr"), "GZIP")) == recs


def test_filename_forms(tmp_path):
    write(tmp_path / "a.tfr", [b"1", b"2"])
    write(tmp_path / "b.tfr", [b"3"])
    a, b = tmp_path / "a.tfr", tmp_path / "b.tfr"
    assert list(tf.data.TFRecordDataset(a)) == [b"1", b"2"]
    assert list(tf.data.TFRecordDataset(str(a).encode())) == [b"1", b"2"]
    assert list(tf.data.TFRecordDataset([a, str(b)])) == [b"1", b"2", b"3"]
    assert list(tf.data.TFRecordDataset(np.array([str(b), str(a)]))) == [b"3", b"1", b"2"]
    files = tf.data.Dataset.from_tensor_slices([str(a), str(b)])
    assert list(tf.data.TFRecordDataset(files)) == [b"1", b"2", b"3"]
    assert list(tf.data.TFRecordDataset([])) == []
    assert isinstance(tf.data.TFRecordDataset(a), tf.data.Dataset)
    assert list(tf.data.TFRecordDataset(a).map(lambda x: len(x))) == [1, 1]


def test_bad_arguments(tmp_path):
    with pytest.raises(TypeError, match="tf.string"):
        tf.data.TFRecordDataset([1, 2])
    with pytest.raises(TypeError, match="tf.string"):
        tf.data.TFRecordDataset(tf.data.Dataset.range(3))
    with pytest.raises(TypeError, match="scalars"):
        tf.data.TFRecordDataset(tf.data.Dataset.from_tensor_slices([["a"]]))
    with pytest.raises(ValueError, match="compression_type"):
        tf.data.TFRecordDataset("x", "BZ2")
    with pytest.raises(ValueError, match="compression_type"):
        tf.data.TFRecordDataset("x", "gzip")
    with pytest.raises(ValueError, match="buffer_size"):
        tf.data.TFRecordDataset("x", buffer_size=-5)
    with pytest.raises(TypeError, match="buffer_size"):
        tf.data.TFRecordDataset("x", buffer_size="big")
    with pytest.raises(ValueError, match="num_parallel_reads"):
        tf.data.TFRecordDataset("x", num_parallel_reads=0)
    with pytest.raises(TypeError):
        _engine.tfrecord(object(), 0, 0, 0)


def test_num_parallel_reads(tmp_path):
    if not hasattr(tf.data.Dataset, "interleave"):
        pytest.skip("Dataset.interleave has not landed")
    files = []
    for k in range(3):
        write(tmp_path / f"{k}.tfr", [b"%d-%d" % (k, j) for j in range(3 + k)])
        files.append(str(tmp_path / f"{k}.tfr"))
    got = list(tf.data.TFRecordDataset(files, num_parallel_reads=3))
    assert got == [b"0-0", b"1-0", b"2-0", b"0-1", b"1-1", b"2-1", b"0-2", b"1-2", b"2-2",
                   b"1-3", b"2-3", b"2-4"]
    got = list(tf.data.TFRecordDataset(files, num_parallel_reads=tf.data.AUTOTUNE))
    assert sorted(got) == sorted(b"%d-%d" % (k, j) for k in range(3) for j in range(3 + k))
    assert tf.data.TFRecordDataset(files, num_parallel_reads=2).element_spec == \
        tf.TensorSpec([], tf.string)


def test_writer_behaviour(tmp_path):
    path = tmp_path / "w.tfr"
    w = tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression_type="GZIP"))
    w.write(b"one")
    w.write(bytearray(b"two"))
    w.write(memoryview(b"three"))
    w.write("four")
    w.flush()
    w.close()
    w.close()  # idempotent
    with pytest.raises(tf.errors.FailedPreconditionError, match="closed"):
        w.write(b"x")
    with pytest.raises(TypeError):
        tf.io.TFRecordWriter(tmp_path / "x.tfr").write(12)
    assert list(tf.data.TFRecordDataset(str(path), "GZIP")) == [b"one", b"two", b"three", b"four"]
    with pytest.raises(ValueError):
        tf.io.TFRecordWriter(tmp_path / "y.tfr", "BZ2")
    with pytest.raises(tf.errors.NotFoundError):
        tf.io.TFRecordWriter(tmp_path / "no" / "such" / "dir.tfr")
    # The framing is TFRecord's: length, masked CRC of it, data, masked CRC of data.
    with tf.io.TFRecordWriter(tmp_path / "plain.tfr") as w:
        w.write(b"hello")
    assert (tmp_path / "plain.tfr").read_bytes() == tfrecord_bytes([b"hello"])


def test_crc32c_hardware_equals_software():
    assert _engine.crc32c(b"123456789") == 0xE3069283
    assert _engine.crc32c(b"123456789", True) == 0xE3069283
    rng = np.random.default_rng(5)
    for n in list(range(70)) + [1000, 4097, 65536 + 3]:
        data = rng.bytes(n)
        for offset in range(0, min(n, 9)):
            piece = data[offset:]
            assert _engine.crc32c(piece) == _engine.crc32c(piece, True)
        if n < 200:
            assert _engine.crc32c(data) == crc32c(data)
    # Extending matches one pass.
    data = rng.bytes(10_000)
    assert _engine.crc32c(data[5000:], False, _engine.crc32c(data[:5000])) == _engine.crc32c(data)
    assert masked_crc(b"") == 0xA282EAD8


def test_crc32c_forced_software_reads_the_same(tmp_path):
    write(tmp_path / "s.tfr", [b"abc" * 100, b"d"])
    _engine.crc32c_force_software(True)
    try:
        assert not _engine.crc32c_hardware()
        assert list(tf.data.TFRecordDataset(str(tmp_path / "s.tfr"))) == [b"abc" * 100, b"d"]
    finally:
        _engine.crc32c_force_software(False)


def test_gfile(tmp_path):
    for name in ["b.tfr", "a.tfr", "c.txt", ".hidden.tfr"]:
        (tmp_path / name).write_bytes(b"")
    got = tf.io.gfile.glob(str(tmp_path / "*.tfr"))
    assert got == sorted(got) and [pathlib.Path(p).name for p in got] == [
        ".hidden.tfr", "a.tfr", "b.tfr"]
    assert tf.io.gfile.exists(tmp_path / "a.tfr") and not tf.io.gfile.exists(tmp_path / "z")
    assert tf.io.gfile.isdir(tmp_path) and not tf.io.gfile.isdir(tmp_path / "a.tfr")
    tf.io.gfile.makedirs(tmp_path / "x" / "y")
    tf.io.gfile.makedirs(tmp_path / "x" / "y")
    assert sorted(tf.io.gfile.listdir(tmp_path / "x")) == ["y"]
    with pytest.raises(tf.errors.NotFoundError):
        tf.io.gfile.listdir(tmp_path / "nope")


def test_read_buffers_come_from_the_pool(tmp_path):
    # Each file's read buffer (256 KiB by default) is a pooled buffer: a
    # fresh malloc of that size was mapped, faulted in page by page and
    # unmapped for every file of every epoch. After a warm-up, opening the
    # files again takes warm buffers. Asserted on the pool's own record.
    files = []
    for k in range(8):
        write(tmp_path / f"{k}.tfr", [b"%d" % i for i in range(10)])
        files.append(str(tmp_path / f"{k}.tfr"))
    ds = tf.data.TFRecordDataset(files)
    assert len(list(ds)) == 80  # warm-up
    before = _engine.buffer_pool_stats()
    for _ in range(3):
        assert len(list(ds)) == 80
    after = _engine.buffer_pool_stats()
    assert after["hits"] - before["hits"] >= 3 * 8, (before, after)
    assert after["missed_bytes"] - before["missed_bytes"] < (256 << 10), (before, after)
