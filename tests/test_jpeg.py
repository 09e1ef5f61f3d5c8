"""conveyor.io.decode_jpeg / decode_image / read_file / decode_raw without
TensorFlow: eager vs traced programs vs pipelines, the decompression-bomb
guard, truncated data, bad arguments, and damaged bytes that must never crash
or hang the decoder. (Pixel equality with TensorFlow: test_tf_jpeg.py.)"""
import os
import random
import struct

import numpy as np
import pytest

import conveyor as cv
from conveyor import _engine
from conveyor.framework import tracing as _tracing

from _jpeg_files import ALL, GOOD, TRUNCATED, damaged, needs_files, read

Y, X = np.mgrid[0:61, 0:83]
IMAGE = np.stack([X * 3, Y * 4, (X + Y) * 2], -1).astype(np.uint8)
JPEG = cv.io.encode_jpeg(IMAGE, quality=90).numpy()
GRAY_JPEG = cv.io.encode_jpeg(IMAGE[:, :, :1], quality=90).numpy()


def traced(fn, value, spec_shape=(), dtype=cv.string):
    prog, _, specs, _ = _tracing.trace(fn, [cv.TensorSpec(spec_shape, dtype)], lambda f: f, "fn")
    return _engine.run_program(prog, [value], 0, 0)[0], specs[0]


@pytest.fixture
def pixel_limit():
    saved = cv.io.get_max_image_pixels()
    yield
    cv.io.set_max_image_pixels(saved)


# -- decoding ------------------------------------------------------------------


def test_decodes_an_encoded_image():
    got = cv.io.decode_jpeg(JPEG)
    assert got.shape == IMAGE.shape and got.dtype == np.uint8
    assert np.abs(got.astype(int) - IMAGE).mean() < 3
    assert cv.io.decode_jpeg(GRAY_JPEG).shape == (61, 83, 1)
    assert cv.io.decode_jpeg(GRAY_JPEG, channels=3).shape == (61, 83, 3)
    assert cv.io.decode_jpeg(JPEG, channels=1).shape == (61, 83, 1)


@pytest.mark.parametrize("ratio,shape", [(1, (61, 83)), (2, (31, 42)), (4, (16, 21)),
                                         (8, (8, 11))])
def test_ratio_scales_while_decoding(ratio, shape):
    assert cv.io.decode_jpeg(JPEG, ratio=ratio).shape == shape + (3,)


def test_options_change_pixels_but_not_shape():
    base = cv.io.decode_jpeg(JPEG)
    for kw in ({"fancy_upscaling": False}, {"dct_method": "INTEGER_ACCURATE"}):
        other = cv.io.decode_jpeg(JPEG, **kw)
        assert other.shape == base.shape
        assert 0 < np.abs(other.astype(int) - base).mean() < 3
    np.testing.assert_array_equal(cv.io.decode_jpeg(JPEG, dct_method="INTEGER_FAST"), base)


def test_image_namespace_exports_the_same_functions():
    assert cv.image.decode_jpeg is cv.io.decode_jpeg
    assert cv.image.decode_image is cv.io.decode_image


@needs_files
@pytest.mark.parametrize("path", GOOD, ids=os.path.basename)
def test_traced_program_equals_eager(path):
    data = read(path)
    for kw in ({}, {"channels": 3, "ratio": 2}, {"channels": 1, "fancy_upscaling": False}):
        if kw.get("channels") == 1 and "cmyk" in path:
            continue  # CMYK has no grayscale conversion (as in TensorFlow)
        want = cv.io.decode_jpeg(data, **kw)
        got, spec = traced(lambda s: cv.io.decode_jpeg(s, **kw), np.array(data, dtype=object))
        np.testing.assert_array_equal(got, want)
        assert spec.shape.as_list() == [None, None, kw.get("channels") or None]


@needs_files
def test_pipeline_reads_and_decodes_files_in_parallel():
    ds = cv.data.Dataset.from_tensor_slices(GOOD)
    fn = lambda f: cv.io.decode_jpeg(cv.io.read_file(f), channels=3)  # noqa: E731
    parallel = ds.map(fn, num_parallel_calls=4)
    assert "mode=native" in repr(parallel)
    assert parallel.element_spec == cv.TensorSpec((None, None, 3), cv.uint8)
    got = list(parallel)
    assert len(got) == len(GOOD)
    for path, image in zip(GOOD, got):
        np.testing.assert_array_equal(image, cv.io.decode_jpeg(read(path), channels=3))
    for a, b in zip(got, ds.map(fn)):
        np.testing.assert_array_equal(a, b)


def test_pipeline_error_names_the_element_and_stays_in_order():
    blobs = [JPEG, b"not an image", JPEG[:40], JPEG]
    ds = cv.data.Dataset.from_tensor_slices(blobs).map(cv.io.decode_jpeg, num_parallel_calls=3)
    it = iter(ds)
    assert next(it).shape == (61, 83, 3)
    with pytest.raises(cv.errors.InvalidArgumentError, match="Unknown image file format"):
        next(it)
    ok = list(cv.data.Dataset.from_tensor_slices(blobs).map(cv.io.decode_jpeg)
              .ignore_errors())
    assert len(ok) == 2


# -- decode_image ------------------------------------------------------------------


def test_decode_image_dtypes():
    pixels = cv.io.decode_jpeg(JPEG)
    np.testing.assert_array_equal(cv.io.decode_image(JPEG), pixels)
    as16 = cv.io.decode_image(JPEG, dtype=cv.uint16)
    assert as16.dtype == np.uint16
    np.testing.assert_array_equal(as16, pixels.astype(np.uint16) * 256)
    as32 = cv.io.decode_image(JPEG, dtype=cv.float32)
    assert as32.dtype == np.float32
    np.testing.assert_array_equal(as32, pixels.astype(np.float32) * np.float32(1 / 255))
    as64 = cv.io.decode_image(JPEG, dtype=cv.float64)
    assert as64.dtype == np.float64  # via uint16, as TensorFlow converts
    np.testing.assert_allclose(as64, pixels.astype(np.float64) * 256 / 65535, rtol=1e-12)
    assert cv.io.decode_image(GRAY_JPEG, channels=3).shape == (61, 83, 3)


def test_decode_image_static_shapes():
    _, spec = traced(cv.io.decode_image, np.array(JPEG, dtype=object))
    assert spec.shape.rank is None  # an animated GIF would be 4-D
    got, spec = traced(lambda s: cv.io.decode_image(s, channels=3, expand_animations=False),
                       np.array(JPEG, dtype=object))
    assert spec.shape.as_list() == [None, None, 3] and got.shape == (61, 83, 3)


@pytest.mark.parametrize("blob,fmt", [
    (b"GIF89a" + bytes(40), "GIF"),
    (b"BM" + bytes(40), "BMP"), (b"RIFF\0\0\0\0WEBPVP8 " + bytes(30), "WebP"),
])
def test_other_formats_are_named(blob, fmt):
    for fn in (cv.io.decode_image, cv.io.decode_jpeg, cv.io.decode_png):
        with pytest.raises(cv.errors.UnimplementedError, match=f"{fmt} image"):
            fn(blob)


# -- the decompression-bomb guard ------------------------------------------------


def huge_header_jpeg(width, height):
    """A JPEG whose frame header declares width x height, with almost no data."""
    sof = JPEG.index(b"\xff\xc0")
    return JPEG[:sof + 5] + struct.pack(">HH", height, width) + JPEG[sof + 9:]


def test_bomb_guard_refuses_before_allocating(pixel_limit):
    bomb = huge_header_jpeg(60000, 60000)
    with pytest.raises(cv.errors.InvalidArgumentError,
                       match=r"60000x60000 pixels \(3600000000\) exceeds the limit of "
                             r"178956970 pixels"):
        cv.io.decode_jpeg(bomb)
    with pytest.raises(cv.errors.InvalidArgumentError, match="exceeds the limit"):
        cv.io.decode_image(bomb, dtype=cv.float32)
    with pytest.raises(cv.errors.InvalidArgumentError, match="exceeds the limit"):
        cv.io.decode_jpeg(bomb, ratio=8)  # the limit is on the image, not the output


def test_pixel_limit_is_configurable_and_captured_when_traced(pixel_limit):
    assert cv.io.get_max_image_pixels() == 178_956_970
    assert cv.io.set_max_image_pixels(61 * 83) == 178_956_970
    assert cv.io.decode_jpeg(JPEG).shape == (61, 83, 3)
    ds = cv.data.Dataset.from_tensors(JPEG).map(cv.io.decode_jpeg)
    cv.io.set_max_image_pixels(61 * 83 - 1)
    with pytest.raises(cv.errors.InvalidArgumentError, match=r"83x61 pixels \(5063\) exceeds "
                                                             r"the limit of 5062"):
        cv.io.decode_jpeg(JPEG)
    assert next(iter(ds)).shape == (61, 83, 3)  # built under the old limit
    strict = cv.data.Dataset.from_tensors(JPEG).map(cv.io.decode_jpeg)
    with pytest.raises(cv.errors.InvalidArgumentError, match="exceeds the limit"):
        next(iter(strict))
    cv.io.set_max_image_pixels(None)
    assert cv.io.get_max_image_pixels() is None
    assert cv.io.decode_jpeg(JPEG).shape == (61, 83, 3)
    for bad in (-1, 1.5, "10", True):
        with pytest.raises(ValueError, match="limit"):
            cv.io.set_max_image_pixels(bad)


# -- truncated and damaged data ---------------------------------------------------


def test_truncated_data_and_acceptable_fraction():
    whole = cv.io.decode_jpeg(JPEG)
    cut = JPEG[:len(JPEG) * 2 // 3]
    with pytest.raises(cv.errors.InvalidArgumentError,
                       match=r"Premature end of JPEG file: the data ends after row \d+ of 61"):
        cv.io.decode_jpeg(cut)
    partial = cv.io.decode_jpeg(cut, acceptable_fraction=0.1)
    rows = int(np.flatnonzero(partial.reshape(61, -1).any(axis=1)).max()) + 1
    assert 8 <= rows < 61
    assert not partial[rows:].any()  # missing rows are black
    np.testing.assert_array_equal(partial[:rows], whole[:rows])
    recovered = cv.io.decode_jpeg(cut, try_recover_truncated=True)
    assert recovered.shape == whole.shape and recovered[rows:].any()


@needs_files
def test_truncated_progressive_file():
    data = read(TRUNCATED[0])
    with pytest.raises(cv.errors.InvalidArgumentError, match="ends before the last scan"):
        cv.io.decode_jpeg(data)
    assert cv.io.decode_jpeg(data, try_recover_truncated=True).shape == (100, 100, 3)


@needs_files
def test_damage_that_makes_tensorflow_loop_forever_ends():
    # TensorFlow's recovery re-reads a trailing 0xFF as fill bytes forever.
    data = bytearray(read(TRUNCATED[0]))
    data[2231:2231 + 158] = bytes(158)
    got = cv.io.decode_jpeg(bytes(data), channels=3, ratio=8, fancy_upscaling=False,
                            try_recover_truncated=True)
    assert got.shape == (13, 13, 3)


OPTIONS = [{}, {"try_recover_truncated": True}, {"acceptable_fraction": 0.0},
           {"channels": 1, "ratio": 4}, {"channels": 3, "fancy_upscaling": False, "ratio": 2},
           {"try_recover_truncated": True, "ratio": 8, "dct_method": "INTEGER_ACCURATE"}]


def test_damaged_bytes_never_crash():
    sources = [JPEG, GRAY_JPEG, cv.io.encode_jpeg(IMAGE, progressive=True).numpy()]
    sources += [read(p) for p in ALL]
    rng = random.Random(7)
    outcomes = {"ok": 0, "error": 0}
    for data in sources:
        for bad, how in (damaged(data, rng) for _ in range(25)):
            kw = OPTIONS[rng.randrange(len(OPTIONS))]
            try:
                got = cv.io.decode_jpeg(bad, **kw)
                assert got.dtype == np.uint8 and got.ndim == 3, how
                outcomes["ok"] += 1
            except (cv.errors.InvalidArgumentError, cv.errors.UnimplementedError):
                outcomes["error"] += 1
    assert outcomes["ok"] and outcomes["error"]


def test_random_bytes_after_a_jpeg_marker_never_crash():
    rng = np.random.default_rng(11)
    for n in (1, 3, 10, 100, 1000):
        for _ in range(20):
            blob = b"\xff\xd8\xff" + rng.integers(0, 256, n, dtype=np.uint8).tobytes()
            with pytest.raises(cv.errors.InvalidArgumentError):
                cv.io.decode_jpeg(blob, try_recover_truncated=bool(n % 2))


# -- bad arguments ------------------------------------------------------------------


def test_bad_arguments():
    IA = cv.errors.InvalidArgumentError
    with pytest.raises(IA, match="`channels` must be 0, 1, 3 or 4 but got 2"):
        cv.io.decode_jpeg(JPEG, channels=2)
    with pytest.raises(IA, match="JPEG does not support 4 channels"):
        cv.io.decode_jpeg(JPEG, channels=4)
    with pytest.raises(IA, match="ratio must be 1, 2, 4, or 8, got 3"):
        cv.io.decode_jpeg(JPEG, ratio=3)
    with pytest.raises(IA, match="dct_method must be one of"):
        cv.io.decode_jpeg(JPEG, dct_method="FLOAT")
    with pytest.raises(IA, match="Input is empty"):
        cv.io.decode_jpeg(b"")
    with pytest.raises(IA, match="Unknown image file format"):
        cv.io.decode_image(b"hello")
    with pytest.raises(IA, match="must be scalar"):
        cv.io.decode_jpeg([JPEG, JPEG])
    with pytest.raises(TypeError, match="contents"):
        cv.io.decode_jpeg(np.zeros(3, np.uint8))
    with pytest.raises(IA, match="must be scalar"):
        cv.data.Dataset.from_tensors([JPEG]).map(cv.io.decode_jpeg)
    with pytest.raises(TypeError, match="must be a Python"):
        cv.data.Dataset.from_tensors((JPEG, 2)).map(lambda s, r: cv.io.decode_jpeg(s, ratio=r))
    with pytest.raises(IA, match="`channels` must be"):
        cv.io.decode_image(JPEG, channels=2)
    with pytest.raises(IA, match="JPEG does not support 4 channels"):
        cv.io.decode_image(JPEG, channels=4)


def test_a_non_scalar_reaching_the_op_at_run_time():
    # A traced function whose input shape is unknown checks the rank when it runs.
    got, _ = traced(cv.io.decode_jpeg, np.array(JPEG, dtype=object), spec_shape=None)
    assert got.shape == (61, 83, 3)
    with pytest.raises(cv.errors.InvalidArgumentError, match=r"scalar string but got string "
                                                             r"shape \[2\]"):
        traced(cv.io.decode_jpeg, np.array([JPEG, JPEG], dtype=object), spec_shape=None)


# -- read_file ------------------------------------------------------------------


def test_read_file(tmp_path):
    path = tmp_path / "x.bin"
    payload = bytes(range(256)) * 1000 + b"\0tail"
    path.write_bytes(payload)
    assert cv.io.read_file(str(path)) == payload
    assert cv.io.read_file(str(path).encode()) == payload
    (tmp_path / "empty").write_bytes(b"")
    assert cv.io.read_file(str(tmp_path / "empty")) == b""
    got, spec = traced(cv.io.read_file, np.array(str(path).encode(), dtype=object))
    assert got == payload and spec == cv.TensorSpec((), cv.string)


def test_read_file_of_a_pipe(tmp_path):
    r, w = os.pipe()
    os.write(w, b"from a pipe")
    os.close(w)
    try:
        assert cv.io.read_file(f"/proc/self/fd/{r}") == b"from a pipe"
    finally:
        os.close(r)
    assert b"Name:" in cv.io.read_file("/proc/self/status")


def test_read_file_errors(tmp_path):
    with pytest.raises(cv.errors.NotFoundError, match="nope; No such file or directory"):
        cv.io.read_file(str(tmp_path / "nope"))
    with pytest.raises(cv.errors.FailedPreconditionError, match="Is a directory"):
        cv.io.read_file(str(tmp_path))
    with pytest.raises(cv.errors.NotFoundError, match="NUL"):
        cv.io.read_file(b"a\0b")
    with pytest.raises(cv.errors.InvalidArgumentError, match="must be scalar"):
        cv.io.read_file(["a", "b"])
    with pytest.raises(TypeError):
        cv.io.read_file(3)
    locked = tmp_path / "locked"
    locked.write_bytes(b"x")
    locked.chmod(0)
    if os.geteuid() != 0:
        with pytest.raises(cv.errors.PermissionDeniedError, match="locked"):
            cv.io.read_file(str(locked))


def test_read_file_error_in_a_pipeline_names_the_file(tmp_path):
    (tmp_path / "a").write_bytes(b"A")
    files = [str(tmp_path / "a"), str(tmp_path / "missing"), str(tmp_path / "a")]
    ds = cv.data.Dataset.from_tensor_slices(files).map(cv.io.read_file, num_parallel_calls=2)
    it = iter(ds)
    assert next(it) == b"A"
    with pytest.raises(cv.errors.NotFoundError, match="missing"):
        next(it)


# -- decode_raw -------------------------------------------------------------------


def test_decode_raw():
    values = np.arange(-6, 6, dtype=np.int32)
    blob = values.tobytes()
    np.testing.assert_array_equal(cv.io.decode_raw(blob, cv.int32), values)
    np.testing.assert_array_equal(cv.io.decode_raw([blob, blob], cv.int32), [values, values])
    big = values.astype(">i4").tobytes()
    np.testing.assert_array_equal(cv.io.decode_raw(big, cv.int32, little_endian=False), values)
    np.testing.assert_array_equal(cv.io.decode_raw(big, cv.uint8, little_endian=False),
                                  np.frombuffer(big, np.uint8))
    f16 = np.array([1.5, -2, 65504], np.float16)
    np.testing.assert_array_equal(cv.io.decode_raw(f16.tobytes(), cv.float16), f16)
    np.testing.assert_array_equal(cv.io.decode_raw(b"\0\1\2", cv.bool), [False, True, True])
    assert cv.io.decode_raw(b"\0\1\2", cv.bool).view(np.uint8).max() == 1
    padded = cv.io.decode_raw([b"\1\0\2\0\3\0", b"\7\0"], cv.int16, fixed_length=4)
    np.testing.assert_array_equal(padded, [[1, 2], [7, 0]])
    empty = cv.io.decode_raw(np.array([], dtype=object).reshape(0, 2), cv.float64)
    assert empty.shape == (0, 2, 0)


def test_decode_raw_traced_shapes():
    blob = np.arange(4, dtype=np.float32).tobytes()
    got, spec = traced(lambda s: cv.io.decode_raw(s, cv.float32), np.array([blob] * 3, object),
                       spec_shape=(3,))
    assert spec.shape.as_list() == [3, None] and got.shape == (3, 4)
    got, spec = traced(lambda s: cv.io.decode_raw(s, cv.float32, fixed_length=8),
                       np.array([blob] * 3, object), spec_shape=(None,))
    assert spec.shape.as_list() == [None, 2] and got.shape == (3, 2)
    _, spec = traced(lambda s: cv.io.decode_raw(s, cv.uint8), np.array(blob, object),
                     spec_shape=None)
    assert spec.shape.rank is None


def test_decode_raw_errors():
    IA = cv.errors.InvalidArgumentError
    with pytest.raises(IA, match="length 3 that is not a multiple of 2"):
        cv.io.decode_raw(b"abc", cv.int16)
    with pytest.raises(IA, match="element 1 has size 2 != 4"):
        cv.io.decode_raw([b"ab", b"abcd"], cv.int16)
    with pytest.raises(IA, match=r"fixed_length \(3\) must be a multiple"):
        cv.io.decode_raw(b"abc", cv.int16, fixed_length=3)
    with pytest.raises(IA, match="must be greater than zero"):
        cv.io.decode_raw(b"abc", cv.int16, fixed_length=0)
    for bad in (cv.string, cv.uint32):
        with pytest.raises(IA, match="not in the list of allowed values"):
            cv.io.decode_raw(b"abcd", bad)
    with pytest.raises(IA, match="not in the list of allowed values"):
        cv.io.decode_raw(b"abcd", cv.bool, fixed_length=4)
    with pytest.raises(TypeError):
        cv.io.decode_raw(np.zeros(4, np.uint8), cv.uint8)
