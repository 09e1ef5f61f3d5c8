"""Bad record files: byte flips, truncation, forged lengths, missing files, directories,
permissions, corrupt compressed streams, cancellation. Never a crash, a hang or wrong data."""
import os
import struct

import pytest

import conveyor as tf
from _record_files import (compress, frame, outcome, record_starts, rss_bytes,
                           tfrecord_bytes)

RECORDS = [b"abc", b"", b"0123456789" * 3, b"z"]
COMPRESSIONS = [None, "ZLIB", "GZIP"]


def read(path, compression=None, **kwargs):
    return outcome(lambda: iter(tf.data.TFRecordDataset(str(path), compression, **kwargs)))


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_byte_flip_sweep(tmp_path, compression):
    raw = tfrecord_bytes(RECORDS)
    data = compress(raw, compression)
    starts = record_starts(RECORDS)
    path = tmp_path / "f.tfr"
    for i in range(len(data)):
        for mask in (0x01, 0x80):
            b = bytearray(data)
            b[i] ^= mask
            path.write_bytes(bytes(b))
            records, errors = read(path, compression)
            assert records == RECORDS[:len(records)], (i, mask)  # never different data
            if compression is None:
                # Every byte is covered by a CRC: the damaged record raises, at its offset.
                assert len(records) < len(RECORDS) and len(errors) == 1, (i, mask)
                name, where, message = errors[0]
                assert name == "DataLossError"
                kind, offset = where
                assert offset in (starts[len(records)], starts[len(records)] + 12)
                assert str(path) in message and f"(record {len(records)})" in message
            elif len(records) == len(RECORDS):
                # Only bytes zlib does not check (gzip mtime/xfl/os) may leave all records.
                assert errors == [] or errors[0][0] == "DataLossError"
            else:
                assert len(errors) == 1 and errors[0][0] == "DataLossError", (i, mask, errors)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_truncation_sweep(tmp_path, compression):
    raw = tfrecord_bytes(RECORDS)
    data = compress(raw, compression)
    starts = record_starts(RECORDS)
    path = tmp_path / "t.tfr"
    for n in range(len(data) + 1):
        path.write_bytes(data[:n])
        records, errors = read(path, compression, on_truncation="error")
        assert records == RECORDS[:len(records)], n
        assert len(errors) <= 1
        if errors:
            assert errors[0][0] == "DataLossError"
            if errors[0][1] is not None:
                assert errors[0][1] == ("truncated", starts[len(records)]), (n, errors)
        # The default (warn) and ignore give the same records, and never raise for a tear.
        for mode in ("warn", "ignore"):
            quiet, quiet_errors = read(path, compression, on_truncation=mode)
            assert quiet == records, (n, mode)
            assert not quiet_errors or "torn" not in quiet_errors[0][2], (n, mode)
        if compression is None:
            whole = max(k for k, s in enumerate(starts) if s <= n)
            assert len(records) == whole
            # Any cut inside a record (header, data or footer) is a torn tail:
            # "truncated record at <start>" in error mode (TensorFlow ends quietly at a cut
            # inside a header).
            torn = n < len(data) and n != starts[whole]
            assert bool(errors) == torn, n
            if torn:
                assert "torn tail" in errors[0][2] and str(path) in errors[0][2]


@pytest.mark.parametrize("length", [2 ** 60, 2 ** 63, 2 ** 33, 100_000_000])
@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_forged_length_is_data_loss_without_memory(tmp_path, compression, length):
    path = tmp_path / "forged.tfr"
    data = frame(b"ok") + frame(b"tiny" * 10, length=length)
    path.write_bytes(compress(data, compression))
    before = rss_bytes()
    # A length past the end of the file is a torn tail (the default warns; "error" raises).
    records, errors = read(path, compression, on_truncation="error")
    assert rss_bytes() - before < 20 << 20
    assert records == [b"ok"] and len(errors) == 1 and errors[0][0] == "DataLossError"
    if compression is None or length > 256 << 20:
        assert errors[0][1] is not None or "record size too large" in errors[0][2]


def test_max_record_bytes_is_configurable(tmp_path):
    path = tmp_path / "big.tfr"
    with tf.io.TFRecordWriter(str(path), "GZIP") as w:
        w.write(b"x" * 5000)
    assert list(tf.data.TFRecordDataset(str(path), "GZIP")) == [b"x" * 5000]
    records, errors = read(path, "GZIP", max_record_bytes=4999)
    assert records == [] and "record size too large" in errors[0][2]
    assert "max_record_bytes (4999)" in errors[0][2]


def test_gzip_bomb_record_grows_with_data(tmp_path):
    # A record that claims 200 MB but whose stream ends after 3 MB of zeros: the buffer
    # grows only as far as the data that arrives.
    path = tmp_path / "bomb.tfr"
    header = struct.pack("<Q", 200_000_000)
    from _record_files import masked_crc
    raw = header + struct.pack("<I", masked_crc(header)) + bytes(3_000_000)
    path.write_bytes(compress(raw, "GZIP"))
    before = rss_bytes()
    records, errors = read(path, "GZIP", on_truncation="error")
    assert rss_bytes() - before < 20 << 20
    assert records == [] and errors[0][1] == ("truncated", 0)


def test_missing_file_names_path(tmp_path):
    path = str(tmp_path / "nope.tfr")
    with pytest.raises(tf.errors.NotFoundError, match="nope.tfr") as e:
        next(iter(tf.data.TFRecordDataset(path)))
    assert isinstance(e.value, FileNotFoundError)


def test_directory_as_filename(tmp_path):
    for make in (tf.data.TFRecordDataset, tf.data.TextLineDataset,
                 lambda p: tf.data.FixedLengthRecordDataset(p, 4)):
        with pytest.raises(tf.errors.FailedPreconditionError, match="Is a directory"):
            next(iter(make(str(tmp_path))))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads anything")
def test_permission_denied(tmp_path):
    path = tmp_path / "secret.tfr"
    path.write_bytes(tfrecord_bytes([b"x"]))
    path.chmod(0)
    with pytest.raises(tf.errors.PermissionDeniedError, match="secret.tfr"):
        next(iter(tf.data.TFRecordDataset(str(path))))


def test_error_moves_to_next_file_and_ignore_errors(tmp_path):
    files = []
    for k in range(3):
        recs = [b"%d-%d" % (k, j) for j in range(10)]
        raw = bytearray(tfrecord_bytes(recs))
        if k == 1:
            raw[record_starts(recs)[5] + 13] ^= 0xFF
        (tmp_path / f"{k}.tfr").write_bytes(bytes(raw))
        files.append(str(tmp_path / f"{k}.tfr"))
    records, errors = outcome(lambda: iter(tf.data.TFRecordDataset(files)))
    assert len(errors) == 1 and "corrupted record at" in errors[0][2] and files[1] in errors[0][2]
    assert len(records) == 25
    assert list(tf.data.TFRecordDataset(files).ignore_errors()) == records


@pytest.mark.parametrize("compression", ["ZLIB", "GZIP"])
def test_corrupt_stream_names_file(tmp_path, compression):
    path = tmp_path / "c.tfr"
    data = bytearray(compress(tfrecord_bytes([b"q" * 1000] * 5), compression))
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    records, errors = read(path, compression)
    assert errors and errors[0][0] == "DataLossError"
    assert str(path) in errors[0][2]


def test_end_is_sticky_and_close_midway(tmp_path):
    path = tmp_path / "s.tfr"
    path.write_bytes(tfrecord_bytes(RECORDS))
    it = iter(tf.data.TFRecordDataset(str(path)))
    assert list(it) == RECORDS
    with pytest.raises(StopIteration):
        next(it)
    it = iter(tf.data.TFRecordDataset([str(path)] * 100).prefetch(2))
    next(it)
    del it  # destroying a reader mid-file with a prefetch thread above it


def test_filename_with_nul_byte():
    with pytest.raises(tf.errors.InvalidArgumentError, match="NUL"):
        next(iter(tf.data.TFRecordDataset(["a\0b"])))
