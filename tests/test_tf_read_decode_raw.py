"""conveyor.io.read_file and decode_raw against TensorFlow: values, shapes,
error types, and the same map pipelines."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402


def outcome(fn, *args, **kwargs):
    try:
        out = fn(*args, **kwargs)
    except (tf.errors.OpError, cv.errors.OpError) as e:
        return type(e).__name__
    return out.numpy() if hasattr(out, "numpy") else out


def test_read_file_matches_tensorflow(tmp_path):
    paths = []
    for i, payload in enumerate([b"", b"x", bytes(range(256)) * 300, b"\0\1\0"]):
        (tmp_path / f"f{i}").write_bytes(payload)
        paths.append(str(tmp_path / f"f{i}"))
    for p in paths:
        assert cv.io.read_file(p) == tf.io.read_file(p).numpy()
    for bad in (str(tmp_path / "missing"), str(tmp_path), ""):
        assert outcome(cv.io.read_file, bad) == outcome(tf.io.read_file, bad)
    assert outcome(cv.io.read_file, paths[:2]) == outcome(tf.io.read_file, paths[:2]) == \
        "InvalidArgumentError"
    got = list(cv.data.Dataset.from_tensor_slices(paths).map(cv.io.read_file,
                                                             num_parallel_calls=2))
    want = list(tf.data.Dataset.from_tensor_slices(paths).map(tf.io.read_file)
                .as_numpy_iterator())
    assert got == want


VALUES = np.array([[1, -2, 300, -40000], [5, 6, 7, 2 ** 30]], np.int64)
CASES = [
    (VALUES.astype("<i4").tobytes(), "int32"),
    ([VALUES[0].astype("<i2").tobytes(), VALUES[1].astype("<i2").tobytes()], "int16"),
    ([[b"abcd", b"efgh"]], "uint8"),
    ([[b"abcd", b"efgh"]], "int8"),
    ([b"abcdefgh"], "uint16"),
    ([b"abcdefgh"], "int64"),
    ([b"abcdefgh"], "float32"),
    ([b"abcdefgh"], "float64"),
    ([b"\x00<\x00\xbc"], "float16"),
    ([b"\x00\x01\x00"], "bool"),
    ([], "int32"),
    ([b"abc"], "int16"),
    ([b"ab", b"abcd"], "int16"),
    ([b"abcd"], "uint32"),
    ([b"abcd"], "string"),
]


@pytest.mark.parametrize("data,dtype", CASES)
@pytest.mark.parametrize("little_endian", [True, False])
def test_decode_raw_matches_tensorflow(data, dtype, little_endian):
    want = outcome(tf.io.decode_raw, data, getattr(tf, dtype), little_endian=little_endian)
    got = outcome(cv.io.decode_raw, data, getattr(cv, dtype), little_endian=little_endian)
    if isinstance(want, str):
        assert got == want
        return
    assert got.shape == want.shape and got.dtype == want.dtype
    if dtype == "bool":  # TensorFlow keeps the raw bytes; conveyor stores 0/1
        want = want.view(np.uint8) != 0
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fixed_length", [2, 4, 6, 8, 3, 0, -2])
@pytest.mark.parametrize("dtype", ["uint8", "int16", "float32"])
def test_decode_raw_fixed_length_matches_tensorflow(fixed_length, dtype):
    data = [b"abcdefgh", b"ab", b"", b"abcd"]
    want = outcome(tf.io.decode_raw, data, getattr(tf, dtype), fixed_length=fixed_length)
    got = outcome(cv.io.decode_raw, data, getattr(cv, dtype), fixed_length=fixed_length)
    if isinstance(want, str):
        assert got == want
        return
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_decode_raw_in_a_pipeline_matches_tensorflow():
    records = [np.arange(i, i + 6, dtype=np.float32).tobytes() for i in range(10)]

    def pipe(lib):
        return lib.data.Dataset.from_tensor_slices(records).batch(4).map(
            lambda s: lib.io.decode_raw(s, lib.float32))

    got = list(pipe(cv))
    want = list(pipe(tf).as_numpy_iterator())
    assert pipe(cv).element_spec.shape.as_list() == pipe(tf).element_spec.shape.as_list()
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
