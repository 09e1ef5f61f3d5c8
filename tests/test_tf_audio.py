"""tf.audio.decode_wav / encode_wav against TensorFlow's: values, dtypes,
shapes and error types, eagerly and traced in Dataset.map (no Python
fallback), and hostile files (truncated, mutated, lying sizes) that must
raise InvalidArgumentError exactly where TensorFlow does, never crash."""
import os
import struct
import warnings

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from conveyor.framework.tracing import TracingWarning  # noqa: E402

SAMPLES = np.array([0, 1, -1, 32767, -32768, 100, 200, -300, 5, -7, 9, 11], np.int16)


def wav(samples, ch=1, rate=16000, bits=16, fmt=1, extra=b"", fmtsize=16, datalen=None,
        trailer=b""):
    data = np.asarray(samples, np.int16).astype("<i2").tobytes()
    fmtc = struct.pack("<HHIIHH", fmt, ch, rate, rate * ch * bits // 8, ch * bits // 8,
                       bits) + b"\0" * (fmtsize - 16)
    body = (b"WAVE" + b"fmt " + struct.pack("<I", fmtsize) + fmtc + extra + b"data" +
            struct.pack("<I", len(data) if datalen is None else datalen) + data + trailer)
    return b"RIFF" + struct.pack("<I", len(body)) + body


def files():
    w = wav(SAMPLES)
    chunk = b"LIST" + struct.pack("<I", 4) + b"abcd"
    return {
        "mono": w, "stereo": wav(SAMPLES, ch=2), "three": wav(SAMPLES, ch=3),
        "four": wav(SAMPLES, ch=4, rate=44100), "fmt18": wav(SAMPLES, fmtsize=18, ch=2),
        "list_after_fmt": wav(SAMPLES, extra=chunk), "empty_data": wav(SAMPLES[:0]),
        "trailing_chunk": w + b"abcd" + struct.pack("<I", 2) + b"xy",
        "odd_chunk": wav(SAMPLES, extra=b"LIST" + struct.pack("<I", 3) + b"abc\0"),
        "partial_frame": wav(SAMPLES[:8], ch=3), "odd_datalen": wav(SAMPLES, datalen=15),
        "datalen_big": wav(SAMPLES, datalen=1000), "trailing_4": w + b"abcd",
        "two_data": w + b"data" + struct.pack("<I", 2) + b"\0\x40",
        "list_before_fmt": w[:12] + chunk + w[12:], "no_fmt": w[:12] + w[36:],
        "fmt_after_data": w[:12] + w[36:] + w[12:36], "8bit": wav(SAMPLES, bits=8),
        "24bit": wav(SAMPLES[:9], bits=24), "float": wav(SAMPLES, fmt=3),
        "extensible": wav(SAMPLES, fmt=0xFFFE), "zero_channels": wav(SAMPLES, ch=0),
        "fmt14": w[:16] + struct.pack("<I", 14) + w[20:34] + w[36:], "fmt20": wav(SAMPLES, fmtsize=20),
        "not_riff": b"RIFX" + w[4:], "not_wave": w[:8] + b"WAVX" + w[12:], "empty": b"",
        "header_only": w[:44], "huge_chunk": w[:36] + b"LIST" + struct.pack("<I", 0xFFFFFFFF) + w[36:],
        "bad_byte_rate": w[:28] + struct.pack("<I", 1) + w[32:],
        "bad_block_align": w[:32] + struct.pack("<H", 4) + w[34:],
        "riff_size_wrong": b"RIFF" + struct.pack("<I", 9999) + w[8:],
    }


def run_tf(contents, **kw):
    try:
        a, r = tf.audio.decode_wav(contents, **kw)
        return ("ok", a.numpy().dtype, a.numpy().shape, a.numpy().tolist(), r.numpy().dtype,
                int(r.numpy()))
    except (tf.errors.InvalidArgumentError, UnicodeDecodeError):
        # (TensorFlow's message quotes a bad chunk tag; Python cannot decode
        # one that is not UTF-8)
        return ("InvalidArgumentError",)


def run_cv(contents, **kw):
    try:
        a, r = cv.audio.decode_wav(contents, **kw)
        return ("ok", a.numpy().dtype, a.numpy().shape, a.numpy().tolist(), r.numpy().dtype,
                int(r.numpy()))
    except cv.errors.InvalidArgumentError:
        return ("InvalidArgumentError",)


@pytest.mark.parametrize("name", sorted(files()))
def test_decode_wav_matches_tensorflow(name):
    contents = files()[name]
    for kw in ({}, {"desired_channels": 1}, {"desired_channels": 2}, {"desired_channels": 3},
               {"desired_samples": 3}, {"desired_samples": 20},
               {"desired_channels": 2, "desired_samples": 0}):
        assert run_cv(contents, **kw) == run_tf(contents, **kw), (name, kw)


def test_decode_wav_hostile_inputs_match_tensorflow():
    """Truncations at every byte and random byte mutations of real files:
    the same values or the same InvalidArgumentError as TensorFlow."""
    rs = np.random.RandomState(0)
    base = [wav(SAMPLES), wav(SAMPLES, ch=2, fmtsize=18),
            wav(SAMPLES, extra=b"LIST" + struct.pack("<I", 4) + b"abcd")]
    inputs = [b[:n] for b in base for n in range(len(b))]
    for _ in range(300):
        b = bytearray(base[rs.randint(len(base))])
        for _ in range(rs.randint(1, 4)):
            b[rs.randint(len(b))] = rs.randint(256)
        inputs.append(bytes(b))
    for contents in inputs:
        assert run_cv(contents) == run_tf(contents), contents


def test_decode_wav_in_map_is_traced_and_matches():
    contents = [wav(SAMPLES), wav(SAMPLES, ch=2), wav(SAMPLES[:4], rate=8000)]

    def fn(x):
        audio, rate = tf.audio.decode_wav(x, desired_channels=1, desired_samples=6)
        return tf.squeeze(audio, axis=-1), rate

    want = list(tf.data.Dataset.from_tensor_slices(contents).map(fn).as_numpy_iterator())
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracingWarning)
        ds = cv.data.Dataset.from_tensor_slices(contents).map(_cv_fn)
        got = list(ds.as_numpy_iterator())
    assert repr(ds.element_spec) == repr(tf.data.Dataset.from_tensor_slices(contents).map(
        fn).element_spec)
    for (ga, gr), (wa, wr) in zip(got, want):
        assert ga.dtype == wa.dtype and ga.tolist() == wa.tolist() and gr == wr
        assert gr.dtype == wr.dtype


def _cv_fn(x):
    audio, rate = cv.audio.decode_wav(x, desired_channels=1, desired_samples=6)
    return cv.squeeze(audio, axis=-1), rate


def test_decode_wav_element_spec_matches():
    def spec(lib, **kw):
        ds = lib.data.Dataset.from_tensors(wav(SAMPLES)).map(
            lambda x: lib.audio.decode_wav(x, **kw))
        return [(list(s.shape.as_list()) if s.shape.rank is not None else None, s.dtype.name)
                for s in ds.element_spec]
    for kw in ({}, {"desired_channels": 2}, {"desired_samples": 5},
               {"desired_channels": 1, "desired_samples": 7}):
        assert spec(cv, **kw) == spec(tf, **kw), kw


def test_decode_wav_bad_arguments():
    with pytest.raises(cv.errors.InvalidArgumentError):
        cv.audio.decode_wav([wav(SAMPLES)])
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.audio.decode_wav([wav(SAMPLES)])


def test_encode_wav_matches_tensorflow():
    rs = np.random.RandomState(0)
    values = [rs.uniform(-1.3, 1.3, [500, 1]), rs.uniform(-1, 1, [7, 2]),
              np.array([[0.3], [-0.3], [2e-5], [-2e-5], [0.5 / 32768], [1.5 / 32768],
                        [-0.5 / 32768], [np.nan], [np.inf], [-np.inf], [-0.99999]]),
              np.zeros([0, 2])]
    for x in values:
        x = x.astype(np.float32)
        for rate in (8000, 44100):
            want = tf.audio.encode_wav(x, rate).numpy()
            got = cv.audio.encode_wav(x, rate)
            assert got.numpy() == want
            assert cv.audio.decode_wav(got)[0].numpy().tolist() == \
                tf.audio.decode_wav(want)[0].numpy().tolist()
    with pytest.raises(cv.errors.InvalidArgumentError):
        cv.audio.encode_wav(np.zeros([3], np.float32), 8000)
    for bad in (np.zeros([3, 0], np.float32),):
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.audio.encode_wav(bad, 8000)
        with pytest.raises(cv.errors.InvalidArgumentError):
            cv.audio.encode_wav(bad, 8000)


def test_encode_wav_in_map():
    x = np.random.RandomState(1).uniform(-1, 1, [4, 10, 2]).astype(np.float32)
    want = list(tf.data.Dataset.from_tensor_slices(x).map(
        lambda a: tf.audio.encode_wav(a, 22050)).as_numpy_iterator())
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracingWarning)
        got = list(cv.data.Dataset.from_tensor_slices(x).map(
            lambda a: cv.audio.encode_wav(a, 22050)).as_numpy_iterator())
    assert got == want
