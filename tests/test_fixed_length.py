"""FixedLengthRecordDataset: header/footer, whole records, short trailing data."""
import pytest

import conveyor as tf
from _record_files import compress


def read(path, *args, **kwargs):
    records, errors = [], []
    it = iter(tf.data.FixedLengthRecordDataset(str(path), *args, **kwargs))
    while True:
        try:
            records.append(next(it))
        except StopIteration:
            return records, errors
        except tf.errors.OpError as e:
            errors.append(e)


@pytest.mark.parametrize("compression", [None, "ZLIB", "GZIP"])
def test_header_footer(tmp_path, compression):
    path = tmp_path / "f.bin"
    path.write_bytes(compress(b"HH" + b"0123456789AB" + b"FFF", compression))
    records, errors = read(path, 4, header_bytes=2, footer_bytes=3, compression_type=compression)
    assert records == [b"0123", b"4567", b"89AB"] and not errors
    records, errors = read(path, 1, 2, 3, buffer_size=1, compression_type=compression)
    assert records == [bytes([c]) for c in b"0123456789AB"] and not errors
    path.write_bytes(compress(b"HHFFF", compression))
    assert read(path, 4, 2, 3, compression_type=compression) == ([], [])


@pytest.mark.parametrize("compression", [None, "ZLIB", "GZIP"])
def test_short_trailing_record(tmp_path, compression):
    # A partial last record is a torn tail: the whole records come first, then (default) a
    # DataLossWarning naming the file and the torn record's offset. tf.data refuses an
    # uncompressed file at open (InvalidArgumentError, no records) and raises DataLossError
    # after the whole records of a compressed one.
    path = tmp_path / "f.bin"
    path.write_bytes(compress(b"HH" + b"0123456789" + b"FFF", compression))
    with pytest.warns(tf.errors.DataLossWarning) as w:
        records, errors = read(path, 4, 2, 3, compression_type=compression)
    assert records == [b"0123", b"4567"] and not errors
    assert str(path) in str(w[0].message) and "byte offset 10" in str(w[0].message)
    records, errors = read(path, 4, 2, 3, compression_type=compression, on_truncation="error")
    assert records == [b"0123", b"4567"] and len(errors) == 1
    assert isinstance(errors[0], tf.errors.DataLossError)
    assert "truncated record at 10" in str(errors[0]) and str(path) in str(errors[0])
    if compression:
        assert "body length 10 bytes" in str(errors[0])
    assert read(path, 4, 2, 3, compression_type=compression, on_truncation="ignore") == (
        [b"0123", b"4567"], [])


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_file_shorter_than_header_and_footer(tmp_path, compression):
    # TensorFlow raises an InternalError ("returned OutOfRange") here; conveyor says why.
    path = tmp_path / "f.bin"
    path.write_bytes(compress(b"H", compression))
    records, errors = read(path, 4, 2, 3, compression_type=compression)
    assert records == [] and len(errors) == 1
    assert "fewer than the header (2 bytes) and footer (3 bytes)" in str(errors[0])


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="record_bytes"):
        tf.data.FixedLengthRecordDataset("x", 0)
    with pytest.raises(ValueError, match="header_bytes"):
        tf.data.FixedLengthRecordDataset("x", 4, header_bytes=-1)
    with pytest.raises(TypeError, match="record_bytes"):
        tf.data.FixedLengthRecordDataset("x", "4")
    with pytest.raises(TypeError, match="record_bytes"):
        tf.data.FixedLengthRecordDataset("x", None)


def test_many_files_and_errors_move_on(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"aaaabbbb")
    (tmp_path / "b.bin").write_bytes(b"ccc")  # not a multiple of 4
    (tmp_path / "c.bin").write_bytes(b"dddd")
    files = [str(tmp_path / n) for n in ("a.bin", "b.bin", "c.bin")]
    ds = tf.data.FixedLengthRecordDataset(files, 4)
    assert list(ds.ignore_errors()) == [b"aaaa", b"bbbb", b"dddd"]
