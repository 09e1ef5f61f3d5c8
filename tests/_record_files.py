"""Helpers for the record-file tests: TFRecord framing in pure Python, and
reading a dataset to the end while recording errors."""
import re
import struct
import zlib

import numpy as np

_POLY = 0x82F63B78
_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ (_POLY if _c & 1 else 0)
    _TABLE.append(_c)


def crc32c(data):
    """Bytewise reference CRC-32C (slow; for small inputs)."""
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _TABLE[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


def masked_crc(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(record, length=None):
    """One TFRecord frame; `length` forges the header's length (with a valid CRC)."""
    n = len(record) if length is None else length
    header = struct.pack("<Q", n)
    return header + struct.pack("<I", masked_crc(header)) + record + struct.pack(
        "<I", masked_crc(record))


def tfrecord_bytes(records):
    return b"".join(frame(r) for r in records)


def compress(raw, compression):
    if not compression:
        return raw
    c = zlib.compressobj(-1, zlib.DEFLATED, 31 if compression == "GZIP" else 15, 9)
    return c.compress(raw) + c.flush()


def record_starts(records):
    """Offsets of each record's start, and of the end."""
    out, pos = [], 0
    for r in records:
        out.append(pos)
        pos += len(r) + 16
    out.append(pos)
    return out


_OFFSET = re.compile(r"(truncated|corrupted) record at (\d+)")


def outcome(dataset_iter_factory, limit=1000, stop_after_error=False):
    """Read everything: (records, errors) where errors are (kind, offset or None, message)."""
    records, errors = [], []
    it = dataset_iter_factory()
    for _ in range(limit):
        try:
            x = next(it)
        except StopIteration:
            return records, errors
        except Exception as e:  # noqa: BLE001 - we classify every error
            msg = str(e)
            m = _OFFSET.search(msg)
            errors.append((type(e).__name__, (m.group(1), int(m.group(2))) if m else None, msg))
            if stop_after_error:
                return records, errors
            continue
        records.append(bytes(x.numpy()) if hasattr(x, "numpy") else bytes(x))
    raise AssertionError("the dataset did not end")


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def random_records(rng, n, max_len):
    return [rng.integers(0, 256, size=int(rng.integers(0, max_len)), dtype=np.uint8).tobytes()
            for _ in range(n)]
