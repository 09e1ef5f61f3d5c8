"""The protobuf wire format of tf.train's Example messages: one encoder and decoder.

Used by the message classes (``conveyor.train.Example`` ...) and by
``conveyor.io.serialize_example``. Encoding follows protobuf's (proto3,
packed int64 and float lists); decoding accepts what protobuf accepts
(packed or not, unknown fields, groups) and raises ``_Corrupt`` otherwise.
"""
import array as _array
import sys as _sys

import numpy as np


class _Corrupt(Exception):
    """Raised inside the decoder; FromString turns it into a DecodeError."""


# ---- the wire encoder --------------------------------------------------------

_BYTE = [bytes([i]) for i in range(256)]
_U64 = 1 << 64
_BIG_ENDIAN = _sys.byteorder == "big"


def _varint(n):
    """The varint of n (n >= 0; negative int64 values pass n + 2**64)."""
    if n < 0x80:
        return _BYTE[n]
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _ld(tag, payload):
    """A length-delimited field: the tag byte(s), the length, the payload."""
    n = len(payload)
    return tag + (_BYTE[n] if n < 0x80 else _varint(n)) + payload


def _np_varints(values):
    """Packed varints of an int64 NumPy array, vectorized."""
    u = values.view(np.uint64)
    if int(u.max()) < 0x80:
        return u.astype(np.uint8).tobytes()
    lens = np.ones(len(u), np.int64)
    t = u >> np.uint64(7)
    while True:
        nz = t != 0
        if not nz.any():
            break
        lens += nz
        t >>= np.uint64(7)
    ends = np.cumsum(lens)
    starts = ends - lens
    out = np.empty(int(ends[-1]), np.uint8)
    t = u.copy()
    for i in range(int(lens.max())):
        sel = np.flatnonzero(lens > i)
        byte = (t[sel] & np.uint64(0x7F)).astype(np.uint8)
        byte[lens[sel] > i + 1] |= 0x80
        out[starts[sel] + i] = byte
        t >>= np.uint64(7)
    return out.tobytes()


def packed_int64(values):
    """The packed varints of an ``array('q')`` (or sequence) of int64 values."""
    n = len(values)
    if n == 0:
        return b""
    if n > 64:
        return _np_varints(np.asarray(values, dtype=np.int64))
    if min(values) >= 0 and max(values) < 0x80:
        return bytes(list(values))
    out = bytearray()
    for v in values:
        if v < 0:
            v += _U64
        while v > 0x7F:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
    return bytes(out)


def packed_float(values):
    """Little-endian float32 bytes of an ``array('f')``."""
    if _BIG_ENDIAN:
        values = _array.array("f", values)
        values.byteswap()
    return values.tobytes()


def encode_int64_list(values):
    """Serialized ``Int64List`` of an ``array('q')``: one packed field (none when empty)."""
    return _ld(b"\x0a", packed_int64(values)) if len(values) else b""


def encode_float_list(values):
    """Serialized ``FloatList`` of an ``array('f')``."""
    return _ld(b"\x0a", packed_float(values)) if len(values) else b""


def encode_bytes_list(values):
    """Serialized ``BytesList`` of a list of bytes (one field per value, never packed)."""
    return b"".join([_ld(b"\x0a", v) for v in values])


_KIND_TAGS = {"bytes_list": b"\x0a", "float_list": b"\x12", "int64_list": b"\x1a"}


def encode_feature(kind, list_bytes):
    """Serialized ``Feature`` holding the serialized list of ``kind`` (or none for None)."""
    return b"" if kind is None else _ld(_KIND_TAGS[kind], list_bytes)


def encode_map_entry(key_bytes, value_bytes):
    """One entry of a ``map<string, Message>`` field number 1 (key and value always written)."""
    return _ld(b"\x0a", _ld(b"\x0a", key_bytes) + _ld(b"\x12", value_bytes))


def _map_order(key_bytes):
    # protobuf's upb encoder (what TensorFlow's Python uses) writes a
    # deterministic map in byte order of the keys, except that a key that is a
    # prefix of another comes after it ("k10" before "k1", "" last). UTF-8 has
    # no 0xFF byte, so appending one gives that order.
    return key_bytes + b"\xff"


# ---- value checks (as protobuf's Python API) ---------------------------------

def _not_iterable(values):
    return TypeError(f"a repeated field takes an iterable of values, got "
                     f"{type(values).__name__}")


def to_int64_array(values):
    """``array('q')`` of values, with protobuf's checks: ints (``__index__``) only,
    no bool (TypeError), in the int64 range (ValueError)."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu" and values.ndim == 1:
        if values.size and values.dtype.kind == "u" and int(values.max()) >= 1 << 63:
            raise ValueError(f"Value out of range: {int(values.max())}")
        return _array.array("q", values.astype(np.int64).tobytes())
    if not isinstance(values, (list, tuple)):
        if isinstance(values, _array.array) and values.typecode == "q":
            return _array.array("q", values)
        try:
            values = list(values)
        except TypeError:
            raise _not_iterable(values) from None
    # Before the array: NumPy 1.x's bool_ still has __index__, with a DeprecationWarning.
    kinds = set(map(type, values))
    if bool in kinds or np.bool_ in kinds:
        raise TypeError("Field tensorflow.Int64List.value: Expected an int, got a boolean.")
    try:
        return _array.array("q", values)
    except OverflowError:
        for v in values:
            v = int(v.__index__())
            if not -(1 << 63) <= v < (1 << 63):
                raise ValueError(f"Value out of range: {v}") from None
        raise


def to_float_array(values):
    """``array('f')`` of values (real numbers, rounded to float32 as protobuf stores them)."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "fiub" and values.ndim == 1:
        with np.errstate(over="ignore", invalid="ignore"):
            return _array.array("f", values.astype(np.float32).tobytes())
    if not isinstance(values, (list, tuple)):
        if isinstance(values, _array.array) and values.typecode == "f":
            return _array.array("f", values)
        try:
            values = list(values)
        except TypeError:
            raise _not_iterable(values) from None
    return _array.array("f", values)


def _check_bytes(v):
    if type(v) is bytes:
        return v
    if isinstance(v, bytes):
        return bytes(v)
    raise TypeError(f"expected bytes, {type(v).__name__} found")


def to_bytes_list(values):
    """A list of bytes (only ``bytes``: a str raises TypeError, as in protobuf)."""
    if not isinstance(values, (list, tuple)):
        try:
            values = list(values)
        except TypeError:
            raise _not_iterable(values) from None
    return [_check_bytes(v) for v in values]


# ---- the decoder ---------------------------------------------------------------

def _read_varint(data, pos, end):
    result = shift = 0
    while True:
        if pos >= end:
            raise _Corrupt("Wire format was corrupt (truncated)")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift >= 70:
            raise _Corrupt("Wire format was corrupt (a varint longer than 10 bytes)")


def _read_tag(data, pos, end, allow_zero=False):
    """(field number, wire type, position after) of the tag at pos.

    Field number 0 is corrupt, except inside a group being skipped, where upb
    lets it pass (its value is skipped as any other)."""
    start = pos
    tag, pos = _read_varint(data, pos, end)
    if pos - start > 5 or tag > 0xFFFFFFFF:
        raise _Corrupt("Wire format was corrupt (a field tag too long)")
    if tag < 8 and not allow_zero:
        raise _Corrupt("Wire format was corrupt (field number 0)")
    return tag >> 3, tag & 7, pos


def _unpack_varints(data, pos, stop):
    """int64 values of the packed varints in data[pos:stop]."""
    if stop - pos > 256:
        b = np.frombuffer(data, np.uint8, stop - pos, pos)
        ends = np.flatnonzero(b < 0x80)
        if not len(ends) or ends[-1] != len(b) - 1:
            raise _Corrupt("Wire format was corrupt (truncated)")
        starts = np.empty_like(ends)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        lens = ends - starts + 1
        longest = int(lens.max())
        if longest > 10:
            raise _Corrupt("Wire format was corrupt (a varint longer than 10 bytes)")
        values = np.zeros(len(ends), np.uint64)
        for i in range(longest):
            sel = np.flatnonzero(lens > i)
            values[sel] |= (b[starts[sel] + i] & 0x7F).astype(np.uint64) << np.uint64(7 * i)
        return _array.array("q", values.view(np.int64).tobytes())
    out = []
    while pos < stop:
        b = data[pos]
        if b < 0x80:
            out.append(b)
            pos += 1
        else:
            v, pos = _read_varint(data, pos, stop)
            out.append(v - _U64 if v >> 63 else v)
    return out


def _skip(data, pos, end, number, wire_type):
    """The position after an (unknown) field's value."""
    if wire_type == 0:
        return _read_varint(data, pos, end)[1]
    if wire_type == 1 or wire_type == 5:
        pos += 8 if wire_type == 1 else 4
        if pos > end:
            raise _Corrupt("Wire format was corrupt (truncated)")
        return pos
    if wire_type == 2:
        n, pos = _read_varint(data, pos, end)
        if pos + n > end:
            raise _Corrupt("Wire format was corrupt (a length past the end)")
        return pos + n
    if wire_type == 3:
        groups = [number]
        while groups:
            inner, inner_type, pos = _read_tag(data, pos, end, allow_zero=True)
            if inner_type == 4:
                if inner != groups.pop():
                    raise _Corrupt("Wire format was corrupt (a mismatched end-group tag)")
            elif inner_type == 3:
                if len(groups) >= 100:
                    raise _Corrupt("Wire format was corrupt (groups nested too deeply)")
                groups.append(inner)
            else:
                pos = _skip(data, pos, end, inner, inner_type)
        return pos
    if wire_type == 4:
        raise _Corrupt("Wire format was corrupt (an end-group tag without a start)")
    raise _Corrupt(f"Wire format was corrupt (wire type {wire_type})")
