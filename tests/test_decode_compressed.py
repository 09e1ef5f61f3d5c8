"""tf.io.decode_compressed against TensorFlow, eagerly and natively in a map."""
import gzip
import zlib

import numpy as np
import pytest

import conveyor as cv
from conveyor import errors


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


RNG = np.random.default_rng(2)
PAYLOADS = [b"", b"hello", bytes(RNG.integers(0, 256, 100_000, dtype=np.uint8)), b"ab" * 300_000]


@pytest.mark.parametrize("kind,compress", [("ZLIB", zlib.compress), ("GZIP", gzip.compress),
                                           ("", lambda b: b)])
def test_decode_compressed_matches_tensorflow(tf, kind, compress):
    blobs = np.array([compress(p) for p in PAYLOADS], object)
    theirs = tf.io.decode_compressed(blobs, kind).numpy()
    ours = cv.io.decode_compressed(blobs, kind)
    assert ours.tolist() == theirs.tolist() == PAYLOADS
    ds = cv.data.Dataset.from_tensor_slices(blobs).map(lambda b: cv.io.decode_compressed(b, kind))
    if kind:
        assert "mode=native" in repr(ds)
    assert [bytes(x) for x in ds.as_numpy_iterator()] == PAYLOADS


def test_cut_short_and_corrupt_as_tensorflow(tf):
    cut = zlib.compress(b"hello world" * 100)[:-9]
    assert cv.io.decode_compressed(cut, "ZLIB") == tf.io.decode_compressed(cut, "ZLIB").numpy()
    assert cv.io.decode_compressed(b"x", "GZIP") == tf.io.decode_compressed(b"x", "GZIP").numpy()
    with pytest.raises(tf.errors.DataLossError):
        tf.io.decode_compressed(b"garbage", "ZLIB")
    with pytest.raises(errors.DataLossError, match="incorrect header check"):
        cv.io.decode_compressed(b"garbage", "ZLIB")
    with pytest.raises(ValueError, match="Only ZLIB"):
        cv.io.decode_compressed(b"x", "LZ4")
