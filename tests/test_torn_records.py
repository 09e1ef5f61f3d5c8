"""Torn tails: a record file or cache file that ends inside a record (a writer that died
mid-write, a copy cut short). Every whole record before the tear is read; then a
DataLossWarning naming the file and the byte offset of the torn record (default), a
DataLossError naming both (on_truncation="error"), or nothing ("ignore")."""
import os
import warnings

import numpy as np
import pytest

import conveyor as cv
from _record_files import compress, outcome, record_starts, tfrecord_bytes

RECORDS = [b"abc", b"", b"0123456789" * 3, b"z" * 7]
STARTS = record_starts(RECORDS)
COMPRESSIONS = [None, "ZLIB", "GZIP"]


def read(make, mode):
    """(records, errors, warnings) of one pass, every warning recorded."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cv.errors._warned.clear()  # the once-per-message memory, for this pass
        records, errors = outcome(lambda: iter(make(mode)))
    return records, errors, [x for x in w if issubclass(x.category, cv.errors.DataLossWarning)]


def tfrecord(path, compression):
    return lambda mode: cv.data.TFRecordDataset(str(path), compression, on_truncation=mode)


# (where the cut is, relative to the start of the last record): in its header, in its
# data, in its footer
CUTS = {"header": 5, "data": 12 + 3, "footer": 12 + 7 + 2}


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("where", sorted(CUTS))
def test_tfrecord_torn_tail(tmp_path, compression, where):
    raw = tfrecord_bytes(RECORDS)
    torn_at = STARTS[3]
    path = tmp_path / "t.tfr"
    path.write_bytes(compress(raw[:torn_at + CUTS[where]], compression))
    records, errors, warned = read(tfrecord(path, compression), "warn")
    assert records == RECORDS[:3] and errors == []  # nothing before the tear is lost
    assert len(warned) == 1
    message = str(warned[0].message)
    assert str(path) in message and f"byte offset {torn_at}" in message and "record 3" in message
    if compression:
        assert f"uncompressed {compression} stream" in message

    records, errors, warned = read(tfrecord(path, compression), "error")
    assert records == RECORDS[:3] and not warned
    assert len(errors) == 1 and errors[0][0] == "DataLossError"
    assert errors[0][1] == ("truncated", torn_at) and str(path) in errors[0][2]
    assert "torn tail" in errors[0][2]

    assert read(tfrecord(path, compression), "ignore") == (RECORDS[:3], [], [])


@pytest.mark.parametrize("compression", ["ZLIB", "GZIP"])
def test_compressed_stream_cut_at_a_record_boundary_is_torn(tmp_path, compression):
    # The framing ends cleanly, but the GZIP/ZLIB stream stops before its end: records may
    # be missing, so it is a tear too (TensorFlow ends quietly).
    whole = compress(tfrecord_bytes(RECORDS), compression)
    path = tmp_path / "t.tfr"
    path.write_bytes(whole[:-4])  # the stream's checksum / size trailer
    records, errors, warned = read(tfrecord(path, compression), "warn")
    assert records == RECORDS and not errors and len(warned) == 1
    assert str(path) in str(warned[0].message)
    records, errors, _ = read(tfrecord(path, compression), "error")
    assert records == RECORDS and errors[0][0] == "DataLossError"


def test_whole_files_say_nothing(tmp_path):
    for compression in COMPRESSIONS:
        path = tmp_path / f"ok{compression}.tfr"
        path.write_bytes(compress(tfrecord_bytes(RECORDS), compression))
        for mode in ("warn", "error"):
            assert read(tfrecord(path, compression), mode) == (RECORDS, [], [])


def test_warned_once_per_file_and_the_next_file_goes_on(tmp_path):
    torn = tmp_path / "torn.tfr"
    torn.write_bytes(tfrecord_bytes(RECORDS)[:STARTS[2] + 4])
    ok = tmp_path / "ok.tfr"
    ok.write_bytes(tfrecord_bytes([b"next"]))
    ds = cv.data.TFRecordDataset([str(torn), str(ok)]).repeat(3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cv.errors._warned.clear()
        got = list(ds)
    assert got == (RECORDS[:2] + [b"next"]) * 3
    assert len([x for x in w if issubclass(x.category, cv.errors.DataLossWarning)]) == 1
    # Parallel reads: the same records, one warning.
    cv.errors._warned.clear()
    with pytest.warns(cv.errors.DataLossWarning, match="torn.tfr"):
        got = list(cv.data.TFRecordDataset([str(torn), str(ok)], num_parallel_reads=2))
    assert sorted(got) == sorted(RECORDS[:2] + [b"next"])


def test_warning_as_error_filter_does_not_break_the_pipeline(tmp_path, monkeypatch):
    # An "error" filter cannot raise through the engine: the warning is reported as
    # unraisable and the records still come. on_truncation="error" is the way to fail.
    import sys
    path = tmp_path / "t.tfr"
    path.write_bytes(tfrecord_bytes(RECORDS)[:STARTS[1] + 3])
    cv.errors._warned.clear()
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))
    with warnings.catch_warnings():
        warnings.simplefilter("error", cv.errors.DataLossWarning)
        assert list(cv.data.TFRecordDataset(str(path))) == RECORDS[:1]
    assert len(seen) == 1 and isinstance(seen[0], cv.errors.DataLossWarning)


def fixed(path, compression, **kw):
    return lambda mode: cv.data.FixedLengthRecordDataset(
        str(path), 4, header_bytes=2, footer_bytes=3, compression_type=compression,
        on_truncation=mode, **kw)


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_fixed_length_torn_tail(tmp_path, compression):
    path = tmp_path / "f.bin"
    path.write_bytes(compress(b"HH" + b"0123" b"4567" b"89" + b"FFF", compression))
    records, errors, warned = read(fixed(path, compression), "warn")
    assert records == [b"0123", b"4567"] and not errors and len(warned) == 1
    assert str(path) in str(warned[0].message) and "byte offset 10" in str(warned[0].message)
    records, errors, warned = read(fixed(path, compression), "error")
    assert records == [b"0123", b"4567"] and errors[0][0] == "DataLossError"
    assert errors[0][1] == ("truncated", 10) and str(path) in errors[0][2]
    assert read(fixed(path, compression), "ignore") == ([b"0123", b"4567"], [], [])


def text(path, compression):
    return lambda mode: cv.data.TextLineDataset(str(path), compression, on_truncation=mode)


def test_text_without_final_newline_is_not_torn(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"one\ntwo")
    for compression in COMPRESSIONS:
        path.write_bytes(compress(b"one\ntwo", compression))
        for mode in ("warn", "error"):
            assert read(text(path, compression), mode) == ([b"one", b"two"], [], [])


@pytest.mark.parametrize("compression", ["ZLIB", "GZIP"])
def test_text_compressed_stream_cut_short(tmp_path, compression):
    body = b"".join(b"line %d\n" % i for i in range(200))
    data = compress(body, compression)
    path = tmp_path / "a.txt"
    path.write_bytes(data[:len(data) // 2])
    records, errors, warned = read(text(path, "ZLIB" if compression == "ZLIB" else "GZIP"), "warn")
    assert records and not errors and len(warned) == 1 and str(path) in str(warned[0].message)
    whole = body.split(b"\n")
    assert records[:-1] == whole[:len(records) - 1]  # the last line may be incomplete
    ignored, _, quiet = read(text(path, compression), "ignore")
    assert ignored == records and not quiet
    strict, errors, _ = read(text(path, compression), "error")
    assert strict == records[:-1] and errors[0][0] == "DataLossError"


def test_bad_mode():
    with pytest.raises(ValueError, match="on_truncation"):
        cv.data.TFRecordDataset("x", on_truncation="loud")
    with pytest.raises(ValueError, match="on_truncation"):
        cv.data.Dataset.range(3).cache("x", on_truncation=None)


# -- the cache file ---------------------------------------------------------------

def cached(f):
    return cv.data.Dataset.range(3000).map(lambda x: (x, np.full(40, x, np.float32)))


@pytest.mark.parametrize("cut", [0, 5, 31, 32, 100, 200_000, -33, -1])
def test_torn_cache_file(tmp_path, cut):
    f = str(tmp_path / "c")
    ds = cached(f)
    expected = [tuple(np.asarray(v) for v in e) for e in ds]
    assert len(list(ds.cache(f))) == 3000
    path = f + ".cvcache"
    size = os.path.getsize(path)
    with open(path, "r+b") as fh:
        fh.truncate(cut if cut >= 0 else size + cut)
    with pytest.raises(cv.errors.DataLossError, match=r"c\.cvcache' is truncated at byte offset "
                       r"\d+ \(a torn tail"):
        list(ds.cache(f, on_truncation="error"))
    cv.errors._warned.clear()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = list(ds.cache(f))  # computed again, and the file replaced
    msgs = [str(x.message) for x in w if issubclass(x.category, cv.errors.DataLossWarning)]
    assert len(msgs) == 1 and path in msgs[0] and "byte offset" in msgs[0]
    assert len(got) == 3000 and all(np.array_equal(a[1], b[1]) for a, b in zip(got, expected))
    assert os.path.getsize(path) == size
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(ds.cache(f))) == 3000  # read from the new file, quietly


def test_torn_cache_offset_is_the_first_incomplete_chunk(tmp_path):
    f = str(tmp_path / "c")
    ds = cached(f)
    list(ds.cache(f))
    path = f + ".cvcache"
    with open(path, "r+b") as fh:
        fh.truncate(100)  # inside the first chunk, which starts after the 32-byte prologue
    with pytest.raises(cv.errors.DataLossError, match="byte offset 32 "):
        list(ds.cache(f, on_truncation="error"))
    cv.errors._warned.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        list(ds.cache(f, on_truncation="ignore"))
    assert os.path.getsize(path) > 100


def test_damaged_cache_file_is_still_an_error(tmp_path):
    f = str(tmp_path / "c")
    ds = cached(f)
    list(ds.cache(f))
    path = f + ".cvcache"
    with open(path, "r+b") as fh:
        fh.seek(os.path.getsize(path) - 20)  # inside the footer: damaged, not torn
        fh.write(b"\x55")
    with pytest.raises(cv.errors.DataLossError, match="c.cvcache' is corrupted"):
        list(ds.cache(f))


# -- TensorFlow ------------------------------------------------------------------

def test_tensorflow_ends_quietly_at_a_torn_header(tmp_path):
    tf = pytest.importorskip("tensorflow")
    path = tmp_path / "t.tfr"
    path.write_bytes(tfrecord_bytes(RECORDS)[:STARTS[3] + CUTS["header"]])
    theirs = [x.numpy() for x in tf.data.TFRecordDataset(str(path))]
    records, errors, warned = read(tfrecord(path, None), "warn")
    assert records == theirs == RECORDS[:3]
    assert not errors and len(warned) == 1  # TensorFlow says nothing
    assert read(tfrecord(path, None), "ignore") == (theirs, [], [])


def test_tensorflow_raises_at_a_torn_data_section(tmp_path):
    tf = pytest.importorskip("tensorflow")
    path = tmp_path / "t.tfr"
    path.write_bytes(tfrecord_bytes(RECORDS)[:STARTS[3] + CUTS["data"]])
    theirs, their_errors = outcome(lambda: iter(tf.data.TFRecordDataset(str(path))))
    records, errors, _ = read(tfrecord(path, None), "error")
    assert records == theirs and [e[:2] for e in errors] == [e[:2] for e in their_errors]
