"""Fuzz target: reading a Dataset.cache(filename) file that was damaged.

Input layout: byte 0 is a set of flags, the rest is the ``.cvcache`` file.

  bits 0-1  which pipeline reads the file: PIPELINES[0..2] (0 again for 3);
            the seeds were written by the same pipeline
  bit 2     repair every CRC first (prologue, chunk headers and bodies,
            trailer, footer), so that mutations reach the parser of the
            chunk and trailer contents instead of stopping at a CRC

Checks besides "no crash, only conveyor.errors": every element read has the
structure, dtypes and shapes of the pipeline's element_spec.
"""
import os
import struct
import warnings

import numpy as np

import _harness
from _harness import check, outcome, signal

import conveyor as cv
from conveyor import nest

_crc32c = cv._engine.crc32c


def _pipelines():
    r = cv.data.Dataset.range
    return [
        # scalars, a fixed vector and strings
        lambda: r(6).map(lambda x: (x, np.full(3, x, np.float32), b"s" * (int(x) % 4))),
        # a dict with a varying shape and a float64
        lambda: r(5).map(lambda x: {"a": np.ones((int(x), 2), np.uint8) * np.uint8(x),
                                    "b": np.float64(x) / 3}),
        # batches of int32 vectors of varying length (ragged last batch)
        lambda: r(7).map(lambda x: np.arange(int(x) % 3, dtype=np.int32)).padded_batch(3),
    ]


with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the maps run in Python (TracingWarning)
    PIPELINES = [make() for make in _pipelines()]


def masked(data):
    c = _crc32c(bytes(data))
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def repair(raw):
    """The file with every CRC that its structure reaches made valid (cache_file.h)."""
    b = bytearray(raw)
    n = len(b)
    if n >= 32:
        struct.pack_into("<I", b, 28, masked(b[0:28]))
    end = n
    if n >= 64:
        f = n - 32
        toff, tlen = struct.unpack_from("<QQ", b, f)
        if 32 <= toff and toff + tlen <= f:
            struct.pack_into("<I", b, f + 16, masked(b[toff:toff + tlen]))
            end = toff
        struct.pack_into("<I", b, f + 20, masked(b[f:f + 20]))
    pos = 32
    while pos + 32 <= end:
        data_bytes, shape_bytes = struct.unpack_from("<QQ", b, pos + 8)
        body_end = pos + 32 + data_bytes + shape_bytes
        if body_end <= end:
            struct.pack_into("<I", b, pos + 24, masked(b[pos + 32:body_end]))
        struct.pack_into("<I", b, pos + 28, masked(b[pos:pos + 28]))
        if body_end > end:
            break
        pos = body_end
    return bytes(b)


def conforms(spec, value):
    a = np.asarray(value)
    if spec.dtype == cv.string:
        ok = a.dtype == object or a.dtype.kind == "S"
    else:
        ok = a.dtype == np.dtype(spec.dtype.as_numpy_dtype)
    return ok and spec.shape.is_compatible_with(a.shape)


def one_input(data):
    if not data:
        return
    flags, body = data[0], data[1:]
    which = (flags & 3) % len(PIPELINES)
    if flags & 4:
        body = repair(body)
    prefix = os.path.join(_harness.workdir(), f"p{which}")
    with open(prefix + ".cvcache", "wb") as f:
        f.write(body)
    ds = PIPELINES[which].cache(prefix)
    specs = nest.flatten(ds.element_spec)
    got = []

    def read():
        for element in ds:
            got.append(element)
    _, error = outcome(read)
    signal(f"{which} {len(got)} {type(error).__name__}")
    for element in got:
        values = nest.flatten(element)
        check(len(values) == len(specs), "element has another structure")
        for spec, value in zip(specs, values):
            check(conforms(spec, value), f"{value!r} does not fit {spec}")
    if error is not None:
        check(isinstance(error, (cv.errors.DataLossError, cv.errors.InvalidArgumentError,
                                 cv.errors.FailedPreconditionError)),
              f"{type(error).__name__}: {error}")


if __name__ == "__main__":
    _harness.main(one_input)
