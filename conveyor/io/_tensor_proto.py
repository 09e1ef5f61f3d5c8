"""``tf.io.serialize_tensor`` / ``tf.io.parse_tensor``: a tensor as a
TensorFlow ``TensorProto`` message, byte for byte as TensorFlow writes it.

serialize_tensor writes the dtype, the shape and the values: numbers as
``tensor_content`` (little-endian bytes), strings as repeated ``string_val``.
parse_tensor also reads the typed repeated fields (``float_val``,
``int64_val``...) that other writers use, with protobuf's rule that a
shorter list repeats its last value. Both run in Python on the calling
thread (a map function that uses them runs in Python; see
docs/differences.md).
"""
import struct

import numpy as np

from conveyor import dtypes as _dtypes
from conveyor import errors
from conveyor.framework.convert import to_array
from conveyor.framework.eager import as_eager
from conveyor.framework.tracing import Tensor, UntraceableError
from conveyor.proto.wire import _Corrupt, _ld, _read_tag, _read_varint, _varint

__all__ = ["serialize_tensor", "parse_tensor"]

# TensorFlow's DataType enum values (types.proto).
_CODES = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
          "string": 7, "int64": 9, "bool": 10, "uint16": 17, "float16": 19, "uint32": 22,
          "uint64": 23}
_BY_CODE = {code: name for name, code in _CODES.items()}
# The typed repeated value field of each dtype, and how its values are stored
# (varint or a fixed-width little-endian format).
_VALUE_FIELDS = {"float32": (5, "<f"), "float64": (6, "<d"), "int32": (7, "varint"),
                 "uint8": (7, "varint"), "int16": (7, "varint"), "int8": (7, "varint"),
                 "uint16": (7, "varint"), "float16": (13, "varint"), "int64": (10, "varint"),
                 "bool": (11, "varint"), "uint32": (16, "varint"), "uint64": (17, "varint")}


def _untraceable(*values):
    if any(isinstance(v, Tensor) for v in values):
        raise UntraceableError("serialize_tensor/parse_tensor run in Python")


def serialize_tensor(tensor, name=None):
    """The TensorProto bytes of `tensor`, as TensorFlow's (``bytes``, as
    conveyor's eager ops give scalar strings)."""
    _untraceable(tensor)
    arr = to_array(tensor)
    dtype = _dtypes.as_dtype(arr.dtype)
    if dtype.name not in _CODES:
        raise errors.InvalidArgumentError(f"serialize_tensor: dtype {dtype.name} is not supported")
    shape = b"".join(_ld(b"\x12", b"\x08" + _varint(d) if d else b"") for d in arr.shape)
    out = b"\x08" + _varint(_CODES[dtype.name]) + _ld(b"\x12", shape)
    if dtype == _dtypes.string:
        out += b"".join(_ld(b"B", bytes(v)) for v in arr.reshape(-1))
    elif arr.size:
        out += _ld(b'"', np.ascontiguousarray(arr, arr.dtype.newbyteorder("<")).tobytes())
    return out


def _fields(data, pos, end):
    """(field, wire type, value) of each field in data[pos:end]: ints for
    varints, bytes for the others."""
    while pos < end:
        field, wire, pos = _read_tag(data, pos, end)
        if wire == 0:
            value, pos = _read_varint(data, pos, end)
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            if pos + width > end:
                raise _Corrupt("truncated")
            value, pos = data[pos:pos + width], pos + width
        elif wire == 2:
            n, pos = _read_varint(data, pos, end)
            if n > end - pos:
                raise _Corrupt("truncated")
            value, pos = data[pos:pos + n], pos + n
        else:
            raise _Corrupt(f"wire type {wire}")
        yield field, wire, value


def _shape(data):
    dims = []
    for field, wire, value in _fields(data, 0, len(data)):
        if field == 2 and wire == 2:
            size = 0
            for f, w, v in _fields(value, 0, len(value)):
                if f == 1 and w == 0:
                    size = v - (1 << 64) if v >> 63 else v
            if size < 0:
                raise _Corrupt("a negative dimension")
            dims.append(size)
        elif field == 3 and wire == 0 and value:
            raise _Corrupt("a shape of unknown rank")
    return dims


def _typed_values(dtype, pieces):
    """The values of the typed repeated field (packed or not) as a list."""
    field_fmt = _VALUE_FIELDS[dtype][1]
    values = []
    for wire, value in pieces:
        if field_fmt == "varint":
            if wire == 0:
                values.append(value)
            else:
                pos = 0
                while pos < len(value):
                    v, pos = _read_varint(value, pos, len(value))
                    values.append(v)
        elif wire == 2:
            width = struct.calcsize(field_fmt)
            if len(value) % width:
                raise _Corrupt("a packed list of the wrong length")
            values.extend(struct.unpack(f"<{len(value) // width}{field_fmt[1]}", value))
        else:
            values.append(struct.unpack(field_fmt, value)[0])
    return values


def parse_tensor(serialized, out_type, name=None):
    """The tensor in the TensorProto bytes `serialized` (a scalar string);
    ``InvalidArgumentError`` when they are not one or its dtype is not
    `out_type`, as in TensorFlow."""
    _untraceable(serialized)
    data = serialized.numpy() if hasattr(serialized, "numpy") else serialized
    if isinstance(data, np.ndarray):
        data = data.item() if data.ndim == 0 else data
    if isinstance(data, str):
        data = data.encode()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise errors.InvalidArgumentError(
            f"parse_tensor: `serialized` must be a scalar string, got {type(data).__name__}")
    data = bytes(data)
    out_type = _dtypes.as_dtype(out_type)
    dtype_code, shape, content, strings, typed = 0, [], None, [], []
    try:
        for field, wire, value in _fields(data, 0, len(data)):
            if field == 1 and wire == 0:
                dtype_code = value
            elif field == 2 and wire == 2:
                shape = _shape(value)
            elif field == 4 and wire == 2:
                content = value
            elif field == 8 and wire == 2:
                strings.append(value)
            elif field in (5, 6, 7, 10, 11, 13, 16, 17):
                typed.append((field, wire, value))
        name_ = _BY_CODE.get(dtype_code)
        if name_ is None:
            raise _Corrupt(f"dtype code {dtype_code}")
        count = int(np.prod(shape, dtype=np.int64))
        if name_ != out_type.name:
            raise errors.InvalidArgumentError(
                f"Type mismatch between parsed tensor ({name_}) and dtype ({out_type.name})")
        if name_ == "string":
            if len(strings) != count:
                raise _Corrupt(f"{len(strings)} strings for {count} elements")
            arr = np.empty(count, dtype=object)
            arr[:] = strings
            return as_eager(arr.reshape(shape))
        np_dtype = out_type.as_numpy_dtype
        if content is not None:
            if len(content) != count * np.dtype(np_dtype).itemsize:
                raise _Corrupt("tensor_content of the wrong size")
            arr = np.frombuffer(content, np.dtype(np_dtype).newbyteorder("<")).astype(np_dtype)
            return as_eager(arr.reshape(shape))
        field = _VALUE_FIELDS[name_][0]
        values = _typed_values(name_, [(w, v) for f, w, v in typed if f == field])
        if name_ == "float16":
            values = np.array(values, np.uint16).view(np.float16)
        elif name_ in ("int32", "int16", "int8", "int64"):
            values = [v - (1 << 64) if v >> 63 else v for v in values]
        if count and not len(values):
            values = [0]
        if len(values) > count:
            raise _Corrupt(f"{len(values)} values for {count} elements")
        arr = np.empty(count, np_dtype)
        if count:
            arr[:len(values)] = np.asarray(values).astype(np_dtype)
            arr[len(values):] = arr[len(values) - 1]
        return as_eager(arr.reshape(shape))
    except (_Corrupt, OverflowError, ValueError) as e:
        if isinstance(e, errors.InvalidArgumentError):
            raise
        raise errors.InvalidArgumentError(
            f"Could not parse `serialized` as TensorProto ({e})") from None
