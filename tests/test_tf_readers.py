"""Equivalence with TensorFlow's record readers and writer (skipped without TensorFlow)."""
import os
import zlib

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from _record_files import compress, outcome, record_starts, tfrecord_bytes  # noqa: E402

COMPRESSIONS = ["", "ZLIB", "GZIP"]
RECORDS = [b"abc", b"", b"0123456789" * 3, b"z"]


def tf_outcome(make):
    return outcome(lambda: iter(make()))


def cv_outcome(make):
    return outcome(lambda: iter(make()))


def kinds(errors):
    return [(name, off) for name, off, _ in errors]


def assert_same_or_torn(my_err, their_err, where):
    """With on_truncation="error": TensorFlow's errors (type and offset), except that a
    torn tail TensorFlow passes over quietly (a cut inside a header, a compressed stream
    cut short) is conveyor's one extra DataLossError, and a torn record is reported as
    torn where TensorFlow's stream reader says the stream is damaged."""
    if kinds(my_err) == kinds(their_err):
        return
    assert len(my_err) == 1 and my_err[0][0] == "DataLossError", (where, my_err, their_err)
    assert "torn tail" in my_err[0][2], (where, my_err, their_err)
    assert [e[0] for e in their_err] in ([], ["DataLossError"]), (where, my_err, their_err)


def write_tf(path, records, compression, flush_after=()):
    with tf.io.TFRecordWriter(str(path), compression) as w:
        for i, r in enumerate(records):
            w.write(r)
            if i in flush_after:
                w.flush()


def write_cv(path, records, compression, flush_after=()):
    with cv.io.TFRecordWriter(str(path), compression) as w:
        for i, r in enumerate(records):
            w.write(r)
            if i in flush_after:
                w.flush()


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_tf_written_files_read_identically(tmp_path, compression):
    rng = np.random.default_rng(1)
    files, expected = [], []
    for k in range(5):
        recs = [] if k == 2 else [rng.bytes(int(n)) for n in rng.integers(0, 3000, size=20)]
        recs += [b""] if k == 3 else []
        path = tmp_path / f"f{k}.tfr"
        write_tf(path, recs, compression)
        files.append(str(path))
        expected += recs
    got = list(cv.data.TFRecordDataset(files, compression_type=compression or None))
    assert got == expected


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_conveyor_files_are_byte_identical_and_read_by_tf(tmp_path, compression):
    rng = np.random.default_rng(2)
    recs = [rng.bytes(int(n)) for n in rng.integers(0, 5000, size=300)]
    recs += [b"", b"q" * 400_000, rng.bytes(600_000)]
    flushes = (5, 6, 100, 301)
    write_tf(tmp_path / "tf.tfr", recs, compression, flushes)
    write_cv(tmp_path / "cv.tfr", recs, compression, flushes)
    assert (tmp_path / "tf.tfr").read_bytes() == (tmp_path / "cv.tfr").read_bytes()
    back = [x.numpy() for x in tf.data.TFRecordDataset(str(tmp_path / "cv.tfr"), compression)]
    assert back == recs
    # An empty file is identical too (GZIP/ZLIB: an empty stream).
    write_tf(tmp_path / "tf0.tfr", [], compression)
    write_cv(tmp_path / "cv0.tfr", [], compression)
    assert (tmp_path / "tf0.tfr").read_bytes() == (tmp_path / "cv0.tfr").read_bytes()


def _both(path, compression, on_truncation="error"):
    c = compression or None
    mine = cv_outcome(lambda: cv.data.TFRecordDataset(str(path), compression_type=c,
                                                      on_truncation=on_truncation))
    theirs = tf_outcome(lambda: tf.data.TFRecordDataset(str(path), compression_type=compression))
    return mine, theirs


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_byte_flip_sweep_matches_tf(tmp_path, compression):
    """Every byte of a small file flipped: the same records and the same error (and, for
    the record framing, the same offset) as TensorFlow; never different data."""
    raw = tfrecord_bytes(RECORDS)
    data = compress(raw, compression)
    path = tmp_path / "flip.tfr"
    starts = record_starts(RECORDS)
    for i in range(len(data)):
        b = bytearray(data)
        b[i] ^= 0x01
        path.write_bytes(bytes(b))
        (mine, my_err), (theirs, their_err) = _both(path, compression)
        assert mine == theirs, (compression, i)
        assert mine == RECORDS[:len(mine)], (compression, i)
        assert_same_or_torn(my_err, their_err, (compression, i))
        if not compression:
            # The damaged record is the first one not returned, reported at its start.
            # (TensorFlow reports a bad data CRC at the data's offset, 12 bytes in.)
            assert my_err and my_err[0][1][1] in (starts[len(mine)], starts[len(mine)] + 12), (i, my_err)
            assert str(path) in my_err[0][2]


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_truncation_sweep_matches_tf(tmp_path, compression):
    raw = tfrecord_bytes(RECORDS)
    data = compress(raw, compression)
    path = tmp_path / "cut.tfr"
    for n in range(len(data) + 1):
        path.write_bytes(data[:n])
        (mine, my_err), (theirs, their_err) = _both(path, compression)
        assert mine == theirs == RECORDS[:len(mine)], (compression, n)
        assert_same_or_torn(my_err, their_err, (compression, n))
        # The default warns instead of raising, after the same records.
        (quiet, quiet_err), _ = _both(path, compression, on_truncation="warn")
        assert quiet == theirs and not any("torn" in e[2] for e in quiet_err), (compression, n)


def test_missing_file_and_directory_like_tf(tmp_path):
    missing = str(tmp_path / "nope.tfr")
    with pytest.raises(tf.errors.NotFoundError):
        next(iter(tf.data.TFRecordDataset(missing)))
    with pytest.raises(cv.errors.NotFoundError, match="nope.tfr"):
        next(iter(cv.data.TFRecordDataset(missing)))
    with pytest.raises(tf.errors.FailedPreconditionError):
        next(iter(tf.data.TFRecordDataset(str(tmp_path))))
    with pytest.raises(cv.errors.FailedPreconditionError, match="Is a directory"):
        next(iter(cv.data.TFRecordDataset(str(tmp_path))))


def test_ignore_errors_skips_rest_of_corrupt_file_like_tf(tmp_path):
    files = []
    for k in range(3):
        raw = bytearray(tfrecord_bytes([b"%d-%d" % (k, j) for j in range(10)]))
        if k == 1:
            raw[record_starts([b"1-0"] * 10)[5] + 14] ^= 0xFF  # data of record 5
        (tmp_path / f"{k}.tfr").write_bytes(bytes(raw))
        files.append(str(tmp_path / f"{k}.tfr"))
    mine = list(cv.data.TFRecordDataset(files).ignore_errors())
    theirs = [x.numpy() for x in tf.data.TFRecordDataset(files).ignore_errors()]
    assert mine == theirs
    assert len(mine) == 25


TEXTS = [b"", b"a", b"a\n", b"a\n\n", b"\n", b"\r", b"\r\n", b"a\r\nb\rc\n\nd\r\n\r\n", b"x\ny",
         b"a\n\r", b"\r\r\n\r", b"one\ntwo\r\nthree"]


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_text_lines_match_tf(tmp_path, compression):
    for k, text in enumerate(TEXTS):
        path = tmp_path / f"t{k}.txt"
        path.write_bytes(compress(text, compression))
        mine = list(cv.data.TextLineDataset(str(path), compression_type=compression or None))
        theirs = [x.numpy() for x in tf.data.TextLineDataset(str(path), compression)]
        assert mine == theirs, text
    # Long lines crossing buffer boundaries, many files.
    rng = np.random.default_rng(3)
    text = b"".join(rng.choice([b"ab", b"\r", b"\n", b"xyz" * 100], size=5000).tolist())
    path = tmp_path / "long.txt"
    path.write_bytes(compress(text, compression))
    mine = list(cv.data.TextLineDataset([str(path)] * 2, compression or None, buffer_size=4096))
    theirs = [x.numpy() for x in tf.data.TextLineDataset([str(path)] * 2, compression)]
    assert mine == theirs


FIXED_CASES = [  # (content, record, header, footer)
    (b"HH" + b"0123456789AB" + b"FFF", 4, 2, 3),
    (b"HH" + b"0123456789" + b"FFF", 4, 2, 3),
    (b"0123456789", 4, 0, 0),
    (b"01234567", 4, 0, 0),
    (b"", 4, 0, 0),
    (b"HHFFF", 4, 2, 3),
    (b"HH0123FFF", 1, 2, 3),
    (b"HH0123", 4, 2, 3),
]


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_fixed_length_matches_tf(tmp_path, compression):
    for k, (content, rec, head, foot) in enumerate(FIXED_CASES):
        path = tmp_path / f"f{k}.bin"
        path.write_bytes(compress(content, compression))
        mine, my_err = outcome(lambda: iter(cv.data.FixedLengthRecordDataset(
            str(path), rec, head, foot, compression_type=compression or None,
            on_truncation="error")))
        theirs, their_err = outcome(lambda: iter(tf.data.FixedLengthRecordDataset(
            str(path), rec, head, foot, compression_type=compression)), stop_after_error=True)
        if their_err and "not an exact multiple" in their_err[0][2] and not compression:
            # A torn tail: TensorFlow refuses the uncompressed file at open; conveyor reads
            # the whole records, then raises DataLossError at the torn one.
            body = len(content) - head - foot
            assert mine == [content[head + i:head + i + rec] for i in range(0, body - rec + 1, rec)]
            assert [e[0] for e in my_err] == ["DataLossError"] and "torn tail" in my_err[0][2]
            continue
        assert mine == theirs, (compression, content)
        if their_err:
            # TensorFlow repeats an error raised when opening a file forever; conveyor
            # raises it once and goes on with the next file.
            assert my_err and my_err[0][0] == their_err[0][0], (compression, content, my_err)
            if "torn tail" in my_err[0][2]:  # the same account, with the file and offset
                assert "not an exact multiple" in my_err[0][2] and str(path) in my_err[0][2]
            else:
                assert my_err[0][2].split(" [Op")[0] in their_err[0][2]
        else:
            assert not my_err


def test_fixed_length_many_files_match_tf(tmp_path):
    files = []
    for k in range(4):
        path = tmp_path / f"m{k}.bin"
        path.write_bytes(b"HDR" + bytes(range(k, k + 40)) + b"F")
        files.append(str(path))
    mine = list(cv.data.FixedLengthRecordDataset(files, 8, header_bytes=3, footer_bytes=1))
    theirs = [x.numpy() for x in tf.data.FixedLengthRecordDataset(files, 8, 3, 1)]
    assert mine == theirs


def test_num_parallel_reads_order_matches_tf(tmp_path):
    if not hasattr(cv.data.Dataset, "interleave"):
        pytest.skip("Dataset.interleave has not landed")
    files = []
    for k in range(5):
        path = tmp_path / f"p{k}.tfr"
        write_cv(path, [b"%d-%d" % (k, j) for j in range(k * 3)], "")
        files.append(str(path))
    for n in (1, 2, 3, 8):
        mine = list(cv.data.TFRecordDataset(files, num_parallel_reads=n))
        theirs = [x.numpy() for x in tf.data.TFRecordDataset(files, num_parallel_reads=n)]
        assert mine == theirs, n


def test_gzip_file_from_python_gzip_module(tmp_path):
    import gzip
    raw = tfrecord_bytes(RECORDS)
    with gzip.GzipFile(tmp_path / "g.tfr", "wb") as f:
        f.write(raw)
    assert list(cv.data.TFRecordDataset(str(tmp_path / "g.tfr"), "GZIP")) == RECORDS
    (tmp_path / "z.tfr").write_bytes(zlib.compress(raw, 9))
    assert list(cv.data.TFRecordDataset(str(tmp_path / "z.tfr"), "ZLIB")) == RECORDS
