"""Fuzz target: TFRecordDataset over a file made of the input (plain, GZIP, ZLIB).

Input layout: byte 0 is a set of flags, the rest is the file.

  bits 0-1  compression: "", "GZIP", "ZLIB", "" (again)
  bit 2     repair the framing CRCs first (so the mutations reach the length
            and truncation logic instead of stopping at the first CRC check)
  bit 3     with GZIP/ZLIB: compress the (repaired) bytes here, so the file
            is a valid stream of mutated records; otherwise the bytes are the
            compressed stream itself (a mutated .gz or zlib file)
  bits 4-5  buffer_size: default, 1, 7, 4096 bytes
  bit 6     max_record_bytes=64 (the "record size too large" path)
  bit 7     the file twice with num_parallel_reads=2 (the interleaved reader)

Checks besides "no crash, only conveyor.errors": whenever the uncompressed
record stream is known (no compression, or compressed here) the records read
equal those of a reference reader written in Python, and the read ends in a
DataLossError exactly when the reference says the stream is damaged (read
with on_truncation="error": a torn tail raises too).
"""
import os
import struct
import zlib

import _harness
from _harness import check, outcome, signal

import conveyor as cv

COMPRESSIONS = ("", "GZIP", "ZLIB", "")
BUFFERS = (None, 1, 7, 4096)
MAX_RECORD = 64
_crc32c = cv._engine.crc32c


def masked(data):
    c = _crc32c(bytes(data))
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def repair(raw):
    """The bytes with every header and data CRC that the framing reaches made valid."""
    b = bytearray(raw)
    pos = 0
    while pos + 12 <= len(b):
        (length,) = struct.unpack_from("<Q", b, pos)
        struct.pack_into("<I", b, pos + 8, masked(b[pos:pos + 8]))
        end = pos + 12 + length
        if end + 4 > len(b):
            break
        struct.pack_into("<I", b, end, masked(b[pos + 12:end]))
        pos = end + 4
    return bytes(b)


def reference(raw, max_record):
    """(records, damaged, torn_header) as a TFRecord reader must see `raw`."""
    records, pos = [], 0
    while pos < len(raw):
        if len(raw) - pos < 12:
            return records, True, True
        (length,) = struct.unpack_from("<Q", raw, pos)
        (crc,) = struct.unpack_from("<I", raw, pos + 8)
        if crc != masked(raw[pos:pos + 8]) or (max_record and length > max_record):
            return records, True, False
        end = pos + 12 + length
        if end + 4 > len(raw):
            return records, True, False
        if struct.unpack_from("<I", raw, end)[0] != masked(raw[pos + 12:end]):
            return records, True, False
        records.append(bytes(raw[pos + 12:end]))
        pos = end + 4
    return records, False, False


def compress(raw, kind):
    c = zlib.compressobj(6, zlib.DEFLATED, 31 if kind == "GZIP" else 15)
    return c.compress(raw) + c.flush()


def one_input(data):
    if not data:
        return
    flags, body = data[0], data[1:]
    kind = COMPRESSIONS[flags & 3]
    if flags & 4:
        body = repair(body)
    raw = body if not kind or flags & 8 else None  # the record stream, when known
    if kind and flags & 8:
        body = compress(body, kind)
    buffer_size = BUFFERS[(flags >> 4) & 3]
    max_record = MAX_RECORD if flags & 64 else None
    twice = bool(flags & 128)

    path = os.path.join(_harness.workdir(), "input.tfrecord")
    with open(path, "wb") as f:
        f.write(body)
    files = [path, path] if twice else path
    ds = cv.data.TFRecordDataset(files, kind, buffer_size=buffer_size,
                                 num_parallel_reads=2 if twice else None,
                                 max_record_bytes=max_record, on_truncation="error")
    got = []

    def read():
        for record in ds.as_numpy_iterator():
            got.append(record)
    _, error = outcome(read)
    signal(f"{kind} {len(got).bit_length()} {type(error).__name__}")
    for record in got:
        check(isinstance(record, bytes), f"record of type {type(record)}")
    if error is not None:
        check(isinstance(error, (cv.errors.DataLossError, cv.errors.InvalidArgumentError,
                                 cv.errors.ResourceExhaustedError)),
              f"unexpected error class {type(error).__name__}: {error}")

    if raw is None:
        return
    records, damaged, torn = reference(raw, max_record)
    if twice:
        # One record of each file in turn; the first error ends the read.
        expect = [r for r in records for _ in (0, 1)]
        check(got == expect[:len(got)], "interleaved records differ from the reference")
        if error is None:
            check(got == expect and (not damaged or torn), "interleaved read missed records or an error")
        return
    check(got == records[:len(got)], "records differ from the reference reader")
    if error is None:
        check(got == records, f"read ended quietly after {len(got)} of {len(records)} records")
        check(not damaged or torn, "damaged stream read without an error")
    else:
        check(damaged, f"error on a valid stream: {error}")
        check(isinstance(error, cv.errors.DataLossError), f"{type(error).__name__}: {error}")
        check(got == records, f"error after {len(got)} of {len(records)} good records: {error}")


if __name__ == "__main__":
    _harness.main(one_input)
