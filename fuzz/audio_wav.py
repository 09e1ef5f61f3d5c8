"""Fuzz target: tf.audio.decode_wav on mutated WAV files, against a Python
reading of TensorFlow's rules.

Input layout: byte 0 is flags, the rest is the file.

  byte 0 bits 0-1  desired_channels: -1, 1, 2, 3
  byte 0 bits 2-3  desired_samples: -1, 0, 5, 300
  byte 0 bit 4     decode inside Dataset.map (the traced native program) as well

Checks besides "no crash, only conveyor.errors": the op fails exactly when
the reference reader (below: RIFF/WAVE, a 16- or 18-byte PCM 16-bit "fmt "
chunk first with a consistent byte rate and block alignment, unpadded
chunks to the end, exactly one "data" chunk read in whole frames) refuses
the file, and otherwise gives its samples, shape and rate; the traced decode
equals the eager one.
"""
import struct

import numpy as np

import _harness
from _harness import check, outcome, signal

import conveyor as cv

CHANNELS = (-1, 1, 2, 3)
SAMPLES = (-1, 0, 5, 300)


def reference(b, want_ch, want_n):
    """(audio, rate), or None where TensorFlow refuses the file."""
    if len(b) < 12 or b[:4] != b"RIFF" or b[8:12] != b"WAVE":
        return None
    if len(b) < 20 or b[12:16] != b"fmt ":
        return None
    if len(b) < 36:
        return None
    size, fmt, ch, rate, byte_rate, align, bits = struct.unpack("<IHHIIHH", b[16:36])
    if size not in (16, 18) or fmt != 1 or ch < 1 or bits != 16:
        return None
    if rate * ch * 2 != byte_rate or align != ch * 2:
        return None
    pos = 36 + (2 if size == 18 else 0)
    if pos > len(b):
        return None
    samples = None
    while pos < len(b):
        if len(b) - pos < 8:
            return None
        tag, n = b[pos:pos + 4], struct.unpack("<I", b[pos + 4:pos + 8])[0]
        pos += 8
        if tag == b"data":
            if samples is not None:
                return None
            frames = n // (ch * 2)
            if frames * ch * 2 > len(b) - pos:
                return None
            samples = np.frombuffer(b[pos:pos + frames * ch * 2], "<i2").reshape(frames, ch)
            pos += frames * ch * 2
        else:
            pos += min(n, len(b) - pos)
    if samples is None:
        return None
    n = samples.shape[0] if want_n < 0 else want_n
    c = ch if want_ch < 0 else want_ch
    out = np.zeros((n, c), np.float32)
    k = min(n, samples.shape[0])
    for j in range(c):
        out[:k, j] = samples[:k, min(j, ch - 1)].astype(np.float32) / 32768.0
    return out, rate


def one_input(data):
    if len(data) < 1:
        return
    f0, body = data[0], data[1:]
    want_ch, want_n = CHANNELS[f0 & 3], SAMPLES[(f0 >> 2) & 3]

    def decode(x):
        return cv.audio.decode_wav(x, desired_channels=want_ch, desired_samples=want_n)

    result, error = outcome(lambda: decode(body))
    want = reference(body, want_ch, want_n)
    if error is not None:
        signal(f"error {error}")
        check(isinstance(error, cv.errors.InvalidArgumentError), f"{type(error).__name__}: {error}")
        check(want is None, f"refused a file the reference reads: {error}")
    else:
        audio, rate = (np.asarray(v) for v in result)
        signal(f"ok {audio.shape[1]}")
        check(want is not None, "read a file the reference refuses")
        check(audio.dtype == np.float32 and rate.dtype == np.int32, f"dtypes {audio.dtype}")
        check(audio.shape == want[0].shape and np.array_equal(audio, want[0]),
              f"samples differ: shape {audio.shape} vs {want[0].shape}")
        check(int(rate) == want[1], f"rate {rate} vs {want[1]}")

    if f0 & 16:
        ds = cv.data.Dataset.from_tensors(np.array(body, dtype=object)).map(decode)
        got, terror = outcome(lambda: next(iter(ds)))
        check((terror is None) == (error is None),
              f"eager and traced decodes disagree: {error!r} / {terror!r}")
        if error is None:
            check(np.array_equal(np.asarray(got[0]), audio) and int(got[1]) == int(rate),
                  "traced decode differs from eager")


if __name__ == "__main__":
    _harness.main(one_input)
