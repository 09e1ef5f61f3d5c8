"""TextLineDataset: tf.data's line rules (every \\r dropped, last segment only if non-empty)."""
import numpy as np
import pytest

import conveyor as tf
from _record_files import compress

CASES = [
    (b"", []),
    (b"a", [b"a"]),
    (b"a\n", [b"a"]),
    (b"a\n\n", [b"a", b""]),
    (b"\n", [b""]),
    (b"\r", []),
    (b"\r\n", [b""]),
    (b"a\r\nb\rc\n\nd\r\n\r\n", [b"a", b"bc", b"", b"d", b""]),
    (b"x\ny", [b"x", b"y"]),
    (b"a\n\r", [b"a"]),
    (b"one\ntwo\r\nthree", [b"one", b"two", b"three"]),
]


@pytest.mark.parametrize("compression", [None, "ZLIB", "GZIP"])
def test_line_rules(tmp_path, compression):
    for k, (text, expected) in enumerate(CASES):
        path = tmp_path / f"{k}.txt"
        path.write_bytes(compress(text, compression))
        ds = tf.data.TextLineDataset(str(path), compression_type=compression)
        assert list(ds) == expected, text
    assert ds.element_spec == tf.TensorSpec([], tf.string)


@pytest.mark.parametrize("buffer_size", [1, 4096, None])
def test_long_lines_across_buffers(tmp_path, buffer_size):
    rng = np.random.default_rng(0)
    pieces = rng.choice([b"ab", b"\r", b"\n", b"x" * 9000, b"\r\n"], size=3000).tolist()
    text = b"".join(pieces)
    (tmp_path / "t.txt").write_bytes(text)
    lines = text.replace(b"\r", b"").split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    ds = tf.data.TextLineDataset([str(tmp_path / "t.txt")] * 2, buffer_size=buffer_size)
    assert list(ds) == lines * 2


def test_files_in_order_and_missing_file(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"1\n2\n")
    (tmp_path / "b.txt").write_bytes(b"3")
    files = [str(tmp_path / "a.txt"), str(tmp_path / "missing.txt"), str(tmp_path / "b.txt")]
    it = iter(tf.data.TextLineDataset(files))
    assert [next(it), next(it)] == [b"1", b"2"]
    with pytest.raises(tf.errors.NotFoundError, match="missing.txt") as e:
        next(it)
    assert isinstance(e.value, FileNotFoundError)
    assert next(it) == b"3"  # goes on with the next file
    with pytest.raises(StopIteration):
        next(it)
    assert list(tf.data.TextLineDataset(files).ignore_errors()) == [b"1", b"2", b"3"]


def test_num_parallel_reads(tmp_path):
    if not hasattr(tf.data.Dataset, "interleave"):
        pytest.skip("Dataset.interleave has not landed")
    (tmp_path / "a.txt").write_bytes(b"a1\na2\na3\n")
    (tmp_path / "b.txt").write_bytes(b"b1\n")
    files = [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    assert list(tf.data.TextLineDataset(files, num_parallel_reads=2)) == [b"a1", b"b1", b"a2", b"a3"]
