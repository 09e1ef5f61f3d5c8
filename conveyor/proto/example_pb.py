"""tf.train's Example messages as plain Python classes.

``Example``, ``Features``, ``Feature``, ``BytesList``, ``FloatList``,
``Int64List``, ``SequenceExample``, ``FeatureList`` and ``FeatureLists``
behave as TensorFlow's protobuf classes (protobuf's Python API, upb backend)
do for the uses of input-pipeline code: keyword constructors, field access
with protobuf's presence rules (reading an unset sub-message gives an empty
one; changing it sets it), repeated fields and message maps, ``CopyFrom``,
``MergeFrom``, ``Clear``, ``HasField``, ``WhichOneof``, ``SerializeToString``
(``deterministic=True`` gives TensorFlow's bytes exactly), ``FromString``,
``ParseFromString``, ``ByteSize``, equality, and ``str()`` in protobuf's text
format. There is no protobuf dependency: the wire encoder and decoder are
in ``conveyor.proto.wire``, which ``conveyor.io.serialize_example`` uses too.

Not provided: descriptors (``DESCRIPTOR``), reflection, extensions, other
message types, text or JSON parsing.
"""
import array as _array
import struct as _struct
from collections import abc as _abc

from conveyor.proto.wire import (_BIG_ENDIAN, _BYTE, _U64, _Corrupt, _ld, _map_order,
                                 _read_tag, _read_varint, _skip, _unpack_varints, encode_bytes_list,
                                 encode_float_list, encode_int64_list, encode_map_entry,
                                 to_bytes_list, to_float_array, to_int64_array)

try:  # code written for TensorFlow catches protobuf's DecodeError
    from google.protobuf.message import DecodeError as _ProtobufDecodeError
except Exception:  # noqa: BLE001 - protobuf is optional
    _ProtobufDecodeError = Exception

__all__ = ["Example", "Features", "Feature", "BytesList", "FloatList", "Int64List",
           "SequenceExample", "FeatureList", "FeatureLists", "DecodeError"]


class DecodeError(_ProtobufDecodeError):
    """Bytes that are not a valid serialized message (truncated or corrupt).

    A subclass of ``google.protobuf.message.DecodeError`` when protobuf is
    installed, so ``except message.DecodeError`` catches it too."""


# ---- text format (what str() of a upb message prints) ------------------------

_BYTES_ESC = []
for _i in range(256):
    _c = chr(_i)
    if _c in "\n\r\t\"'\\":
        _BYTES_ESC.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "'": "\\'",
                           "\\": "\\\\"}[_c])
    elif _i < 0x20 or _i >= 0x7F:
        _BYTES_ESC.append("\\%03o" % _i)
    else:
        _BYTES_ESC.append(_c)
_STR_ESC = {i: _BYTES_ESC[i] for i in range(0x80) if len(_BYTES_ESC[i]) > 1}
del _i, _c

_F32 = _struct.Struct("<f")


def _text_float(v):
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    s = "%.6g" % v
    try:
        if _F32.unpack(_F32.pack(float(s)))[0] == v:
            return s
    except OverflowError:
        pass
    return "%.9g" % v


# ---- containers --------------------------------------------------------------

class RepeatedScalarContainer:
    """A repeated int64 / float / bytes field (``value`` of the list messages)."""

    __slots__ = ("_owner", "_values", "_convert")

    def __init__(self, owner, convert, values):
        self._owner, self._convert, self._values = owner, convert, values

    def _changed(self):
        self._owner._modified()

    def append(self, value):
        self._values.extend(self._convert([value]))
        self._changed()

    def extend(self, values):
        self._values.extend(self._convert(values))
        self._changed()

    def insert(self, index, value):
        self._values.insert(index, self._convert([value])[0])
        self._changed()

    def pop(self, index=-1):
        value = self._values.pop(index)
        self._changed()
        return value

    def remove(self, value):
        try:
            self._values.remove(value)
        except ValueError:
            raise ValueError("remove(x): x not in container") from None
        self._changed()

    def reverse(self):
        self._values.reverse()
        self._changed()

    def sort(self, key=None, reverse=False):
        self._values[:] = self._convert(sorted(self._values, key=key, reverse=reverse))
        self._changed()

    def clear(self):
        del self._values[:]
        self._changed()

    def MergeFrom(self, other):
        self.extend(other)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return list(self._values[index])
        return self._values[index]

    def __setitem__(self, index, value):
        if isinstance(index, slice):
            self._values[index] = self._convert(value)
        else:
            self._values[index] = self._convert([value])[0]
        self._changed()

    def __delitem__(self, index):
        del self._values[index]
        self._changed()

    def __len__(self):
        return len(self._values)

    def __iter__(self):
        return iter(self._values)

    def __contains__(self, value):
        return value in self._values

    def __eq__(self, other):
        if isinstance(other, RepeatedScalarContainer):
            return list(self._values) == list(other._values)
        if isinstance(other, list):
            return list(self._values) == other
        return NotImplemented

    __hash__ = None

    def __repr__(self):
        return repr(list(self._values))


class RepeatedCompositeContainer:
    """A repeated message field (``FeatureList.feature``): elements are copied in."""

    __slots__ = ("_owner", "_cls", "_values")

    def __init__(self, owner, cls):
        self._owner, self._cls, self._values = owner, cls, []

    def _copy_in(self, value):
        if type(value) is not self._cls:
            raise TypeError(f"Parameter to MergeFrom() must be instance of same class: expected "
                            f"{self._cls!r} got {type(value)!r}.")
        return value._copy()

    def add(self, **kwargs):
        msg = self._cls(**kwargs)
        self._values.append(msg)
        self._owner._modified()
        return msg

    def append(self, value):
        self._values.append(self._copy_in(value))
        self._owner._modified()

    def extend(self, values):
        self._values.extend([self._copy_in(v) for v in values])
        self._owner._modified()

    def insert(self, index, value):
        self._values.insert(index, self._copy_in(value))
        self._owner._modified()

    def pop(self, index=-1):
        value = self._values.pop(index)
        self._owner._modified()
        return value

    def remove(self, value):
        self._values.remove(value)
        self._owner._modified()

    def reverse(self):
        self._values.reverse()
        self._owner._modified()

    def sort(self, key=None, reverse=False):
        self._values.sort(key=key, reverse=reverse)
        self._owner._modified()

    def clear(self):
        self._values.clear()
        self._owner._modified()

    def MergeFrom(self, other):
        self.extend(other)

    def __getitem__(self, index):
        return self._values[index]

    def __setitem__(self, index, value):
        raise TypeError("does not support assignment")

    def __delitem__(self, index):
        del self._values[index]
        self._owner._modified()

    def __len__(self):
        return len(self._values)

    def __iter__(self):
        return iter(self._values)

    def __eq__(self, other):
        if isinstance(other, RepeatedCompositeContainer):
            return self._values == other._values
        if isinstance(other, list):
            return self._values == other
        return NotImplemented

    __hash__ = None

    def __repr__(self):
        return repr(self._values)


def _map_key(key):
    if isinstance(key, str):
        key.encode()  # a lone surrogate raises UnicodeEncodeError, as in protobuf
        return str(key) if type(key) is not str else key
    if isinstance(key, bytes):
        return key.decode("utf-8")
    raise TypeError(f"map keys are str (or UTF-8 bytes), got {type(key).__name__}")


class MessageMap(_abc.MutableMapping):
    """A ``map<string, Message>`` field: ``m[key]`` creates a missing entry (as
    protobuf's message maps do); values cannot be assigned (use
    ``m[key].CopyFrom(msg)``). Iterates in insertion order."""

    __slots__ = ("_owner", "_cls", "_entries")

    def __init__(self, owner, cls):
        self._owner, self._cls, self._entries = owner, cls, {}

    def __getitem__(self, key):
        entries = self._entries
        try:
            return entries[key]
        except (KeyError, TypeError):
            pass
        key = _map_key(key)
        value = entries.get(key)
        if value is None:
            value = entries[key] = self._cls()
            self._owner._modified()
        return value

    def get_or_create(self, key):
        return self[key]

    def get(self, key, default=None):
        if not isinstance(key, (str, bytes)):
            raise TypeError(f"map keys are str (or UTF-8 bytes), got {type(key).__name__}")
        if isinstance(key, bytes):
            key = key.decode("utf-8", "replace")
        return self._entries.get(key, default)

    def __setitem__(self, key, value):
        raise ValueError("Message objects may not be assigned")

    def setdefault(self, key, default=None):
        raise NotImplementedError("Set message map value directly is not supported.")

    def __delitem__(self, key):
        if isinstance(key, bytes):
            key = key.decode("utf-8", "replace")
        try:
            del self._entries[key]
        except (KeyError, TypeError):
            raise KeyError("Key not present in map") from None
        self._owner._modified()

    def __contains__(self, key):
        if isinstance(key, bytes):
            key = key.decode("utf-8", "replace")
        try:
            return key in self._entries
        except TypeError:
            return False

    def __len__(self):
        return len(self._entries)

    def __iter__(self):
        return iter(self._entries)

    def clear(self):
        self._entries.clear()
        self._owner._modified()

    def MergeFrom(self, other):
        for key, value in other.items():
            self._entries[_map_key(key)] = value._copy()
        self._owner._modified()

    def __repr__(self):
        return repr(self._entries)


# ---- messages ----------------------------------------------------------------

# Field kinds.
_MSG, _MAP, _REP_MSG, _REP_INT64, _REP_FLOAT, _REP_BYTES = range(6)

# FieldDescriptor.type values (descriptor.proto).
_TYPES = {_MSG: 11, _MAP: 11, _REP_MSG: 11, _REP_INT64: 3, _REP_FLOAT: 2, _REP_BYTES: 12}


class FieldDescriptor:
    """The little of a protobuf FieldDescriptor that ``ListFields`` gives: name,
    number, full_name, type and label."""

    __slots__ = ("name", "number", "full_name", "type", "label", "kind", "message_type", "tag")

    TYPE_FLOAT, TYPE_INT64, TYPE_MESSAGE, TYPE_BYTES = 2, 3, 11, 12
    LABEL_OPTIONAL, LABEL_REPEATED = 1, 3

    def __init__(self, owner, name, number, kind, message_type=None):
        self.name, self.number, self.kind, self.message_type = name, number, kind, message_type
        self.full_name = f"tensorflow.{owner}.{name}"
        self.type = _TYPES[kind]
        self.label = 1 if kind == _MSG else 3
        self.tag = _BYTE[(number << 3) | 2]  # the tag byte of the length-delimited field

    def __repr__(self):
        return f"<FieldDescriptor {self.full_name}>"


def _field_property(field):
    name = field.name
    if field.kind == _MSG:
        def get(self):
            value = self._fields.get(name)
            return value if value is not None else self._stub(field)
        what = "message field"
    else:
        def get(self):
            return self._fields[name]
        what = "map, or repeated field"

    def set_(self, value):
        raise AttributeError(f'Assignment not allowed to {what} "{name}" in protocol message '
                             f'object.')
    return property(get, set_, doc=f"The ``{name}`` field.")


class _Message:
    """The protobuf Python message API shared by the Example messages."""

    __slots__ = ("_fields", "_stubs", "_parent", "_pfield", "_unknown")
    _SCHEMA = ()   # FieldDescriptors in field-number order
    _ONEOF = None  # ("kind", {member names})
    _CONTAINERS = ()  # (name, factory) of the repeated and map fields

    def __init__(self, *args, **kwargs):
        if args:
            raise TypeError("No positional arguments allowed")
        self._stubs = self._parent = self._pfield = None
        self._unknown = b""
        fields = self._fields = {}
        for name, make in self._CONTAINERS:
            fields[name] = make(self)
        if kwargs:
            by_name = self._BY_NAME
            for name, value in kwargs.items():
                field = by_name.get(name)
                if field is None:
                    raise ValueError(f'Protocol message {type(self).__name__} has no "{name}" '
                                     f'field.')
                if value is not None:
                    self._init_field(field, value)

    @classmethod
    def _new(cls):
        """An empty message, without __init__'s argument handling."""
        self = object.__new__(cls)
        self._stubs = self._parent = self._pfield = None
        self._unknown = b""
        fields = self._fields = {}
        for name, make in cls._CONTAINERS:
            fields[name] = make(self)
        return self

    def _new_containers(self):
        fields = self._fields
        for name, make in self._CONTAINERS:
            fields[name] = make(self)

    def _init_field(self, field, value):
        kind, cls = field.kind, field.message_type
        if kind == _MSG:
            self._set_child(field.name, _message_from(cls, value))
        elif kind == _MAP:
            if not isinstance(value, _abc.Mapping):
                raise TypeError(f"Argument for field {field.full_name} must be a dict, got "
                                f"{type(value).__name__}")
            entries = self._fields[field.name]._entries
            for key, item in value.items():
                if not isinstance(item, (dict, cls)):
                    raise TypeError(f"Parameter to CopyFrom() must be instance of same class: "
                                    f"expected {cls!r} got {type(item)!r}.")
                entries[_map_key(key)] = _message_from(cls, item)
        elif kind == _REP_MSG:
            try:
                items = list(value)
            except TypeError:
                raise TypeError(f"Argument for field {field.full_name} is not iterable") from None
            self._fields[field.name]._values.extend([_message_from(cls, v) for v in items])
        else:
            self._fields[field.name].extend(value)

    # -- presence

    def _stub(self, field):
        """The empty message read from an unset field; changing it sets the field."""
        stubs = self._stubs
        if stubs is None:
            stubs = self._stubs = {}
        stub = stubs.get(field.name)
        if stub is None:
            stub = stubs[field.name] = field.message_type._new()
            stub._parent, stub._pfield = self, field.name
        return stub

    def _modified(self):
        parent = self._parent
        if parent is not None:
            self._parent = None
            parent._adopt(self._pfield, self)

    def _adopt(self, name, child):
        stubs = self._stubs
        if stubs is None or stubs.get(name) is not child:
            return  # a stale stub (the field was cleared since): it stays detached
        del stubs[name]
        self._set_child(name, child)
        self._modified()

    def _set_child(self, name, child):
        oneof = self._ONEOF
        if oneof is not None and name in oneof[1]:
            for other in oneof[1]:
                if other != name:
                    self._fields.pop(other, None)
        self._fields[name] = child

    def _copy(self):
        new = self._new()
        new._merge(self)
        return new

    # -- the message API

    def HasField(self, field_name):
        field = self._BY_NAME.get(field_name)
        if field is None:
            if self._ONEOF is not None and field_name == self._ONEOF[0]:
                return self.WhichOneof(field_name) is not None
            raise ValueError(f'Protocol message {type(self).__name__} has no "{field_name}" '
                             f'field.')
        if field.kind != _MSG:
            raise ValueError(f"Field {field.full_name} does not have presence.")
        return field_name in self._fields

    def WhichOneof(self, oneof_group):
        oneof = self._ONEOF
        if oneof is None or oneof_group != oneof[0]:
            raise ValueError(f'Protocol message {type(self).__name__} has no "{oneof_group}" '
                             f'field.')
        for field in self._SCHEMA:
            if field.name in self._fields:
                return field.name
        return None

    def ClearField(self, field_name):
        field = self._BY_NAME.get(field_name)
        if field is None:
            if self._ONEOF is not None and field_name == self._ONEOF[0]:
                for name in self._ONEOF[1]:
                    self._fields.pop(name, None)
                return
            raise ValueError(f'Protocol message {type(self).__name__} has no "{field_name}" '
                             f'field.')
        if field.kind == _MSG:
            self._fields.pop(field_name, None)
            if self._stubs:
                self._stubs.pop(field_name, None)
        else:
            container = self._fields[field_name]
            if field.kind == _MAP:
                container._entries.clear()
            else:
                del container._values[:]

    def Clear(self):
        self._fields = {}
        self._stubs = None
        self._unknown = b""
        self._new_containers()
        self._modified()

    def SetInParent(self):
        self._modified()

    def IsInitialized(self):
        return True

    def FindInitializationErrors(self):
        return []

    def DiscardUnknownFields(self):
        self._unknown = b""
        for field in self._SCHEMA:
            value = self._fields.get(field.name)
            if value is None:
                continue
            if field.kind == _MSG:
                value.DiscardUnknownFields()
            elif field.kind == _MAP:
                for item in value._entries.values():
                    item.DiscardUnknownFields()
            elif field.kind == _REP_MSG:
                for item in value._values:
                    item.DiscardUnknownFields()

    def _check_same(self, other, method):
        if type(other) is not type(self):
            raise TypeError(f"Parameter to {method}() must be instance of same class: expected "
                            f"{type(self)!r} got {type(other)!r}.")

    def CopyFrom(self, other_msg):
        self._check_same(other_msg, "CopyFrom")
        if other_msg is self:
            return
        self.Clear()
        self._merge(other_msg)

    def MergeFrom(self, other_msg):
        self._check_same(other_msg, "MergeFrom")
        self._merge(other_msg)
        self._modified()

    def _merge(self, other):
        for field in self._SCHEMA:
            name, kind = field.name, field.kind
            value = other._fields.get(name)
            if kind == _MSG:
                if value is not None:
                    mine = self._fields.get(name)
                    if mine is None:
                        mine = field.message_type._new()
                        self._set_child(name, mine)
                    mine._merge(value)
            elif kind == _MAP:
                entries = self._fields[name]._entries
                for key, item in value._entries.items():
                    entries[key] = item._copy()
            elif kind == _REP_MSG:
                self._fields[name]._values.extend([item._copy() for item in value._values])
            else:
                self._fields[name]._values.extend(value._values)
        self._unknown += other._unknown

    def ListFields(self):
        """(FieldDescriptor, value) of the set fields (non-empty for repeated and maps)."""
        out = []
        for field in self._SCHEMA:
            value = self._fields.get(field.name)
            if value is not None and (field.kind == _MSG or len(value)):
                out.append((field, value))
        return out

    def SerializeToString(self, deterministic=False):
        """The wire bytes. Map entries are written in insertion order, or with
        ``deterministic=True`` in the order TensorFlow's protobuf writes them
        (then the bytes equal TensorFlow's)."""
        return self._serialize(bool(deterministic))

    def SerializePartialToString(self, deterministic=False):
        return self._serialize(bool(deterministic))

    def ByteSize(self):
        return len(self._serialize(False))

    def _serialize(self, det):
        parts = []
        fields = self._fields
        for field in self._SCHEMA:
            kind = field.kind
            value = fields.get(field.name)
            if kind == _MSG:
                if value is not None:
                    parts.append(_ld(field.tag, value._serialize(det)))
            elif kind == _MAP:
                items = value._entries.items()
                if det and len(items) > 1:
                    items = sorted(((_map_order(k.encode()), k, v) for k, v in items))
                    items = [(k, v) for _, k, v in items]
                for key, item in items:
                    parts.append(encode_map_entry(key.encode(), item._serialize(det)))
            elif kind == _REP_MSG:
                for item in value._values:
                    parts.append(_ld(field.tag, item._serialize(det)))
            elif kind == _REP_INT64:
                parts.append(encode_int64_list(value._values))
            elif kind == _REP_FLOAT:
                parts.append(encode_float_list(value._values))
            else:
                parts.append(encode_bytes_list(value._values))
        if self._unknown:
            parts.append(self._unknown)
        return b"".join(parts)

    @classmethod
    def FromString(cls, s):
        """A new message parsed from the bytes s (raises DecodeError)."""
        msg = cls()
        msg.MergeFromString(s)
        return msg

    def ParseFromString(self, serialized):
        """Clear, then merge the message in serialized; returns its length."""
        self.Clear()
        return self.MergeFromString(serialized)

    def MergeFromString(self, serialized):
        """Merge the message in serialized into this one; returns its length."""
        if not isinstance(serialized, bytes):
            if isinstance(serialized, (bytearray, memoryview)):
                serialized = bytes(serialized)
            else:
                raise TypeError(f"expected bytes, {type(serialized).__name__} found")
        try:
            self._decode(serialized, 0, len(serialized))
        except _Corrupt as e:
            raise DecodeError(f"Error parsing message with type 'tensorflow."
                              f"{type(self).__name__}': {e}") from None
        self._modified()
        return len(serialized)

    # -- decoding

    def _decode(self, data, pos, end):
        by_number = self._BY_NUMBER
        fields = self._fields
        unknown = None
        while pos < end:
            start = pos
            tag = data[pos]
            if 8 <= tag < 0x80:
                number, wire_type = tag >> 3, tag & 7
                pos += 1
            else:
                number, wire_type, pos = _read_tag(data, pos, end)
            field = by_number.get(number)
            if wire_type == 2:
                b = data[pos] if pos < end else 0x80
                if b < 0x80:
                    n = b
                    pos += 1
                else:
                    n, pos = _read_varint(data, pos, end)
                stop = pos + n
                if stop > end:
                    raise _Corrupt("Wire format was corrupt (a length past the end)")
                if field is not None:
                    kind = field.kind
                    if kind == _MSG:
                        child = fields.get(field.name)
                        if child is None:
                            child = field.message_type._new()
                            self._set_child(field.name, child)
                        child._decode(data, pos, stop)
                    elif kind == _MAP:
                        odd = self._decode_entry(field, data, pos, stop)
                        if odd is not None:
                            if unknown is None:
                                unknown = []
                            unknown.append(odd)
                    elif kind == _REP_MSG:
                        child = field.message_type._new()
                        child._decode(data, pos, stop)
                        fields[field.name]._values.append(child)
                    elif kind == _REP_BYTES:
                        fields[field.name]._values.append(data[pos:stop])
                    elif kind == _REP_INT64:
                        fields[field.name]._values.extend(_unpack_varints(data, pos, stop))
                    else:
                        if (stop - pos) % 4:
                            raise _Corrupt("Wire format was corrupt (packed floats of "
                                           f"{stop - pos} bytes)")
                        floats = _array.array("f", data[pos:stop])
                        if _BIG_ENDIAN:
                            floats.byteswap()
                        fields[field.name]._values.extend(floats)
                    pos = stop
                    continue
                pos = stop
            elif field is not None and wire_type == 0 and field.kind == _REP_INT64:
                v, pos = _read_varint(data, pos, end)
                fields[field.name]._values.append(v - _U64 if v >> 63 else v)
                continue
            elif field is not None and wire_type == 5 and field.kind == _REP_FLOAT:
                if pos + 4 > end:
                    raise _Corrupt("Wire format was corrupt (truncated)")
                fields[field.name]._values.extend(_array.array("f", data[pos:pos + 4]) if not
                                                  _BIG_ENDIAN else [_F32.unpack_from(data, pos)[0]])
                pos += 4
                continue
            else:
                pos = _skip(data, pos, end, number, wire_type)
            if unknown is None:
                unknown = []
            unknown.append(data[start:pos])
        if unknown:
            self._unknown += b"".join(unknown)

    def _decode_entry(self, field, data, pos, stop):
        key, value, odd = "", None, []
        while pos < stop:
            field_start = pos
            number, wire_type, pos = _read_tag(data, pos, stop)
            if wire_type == 2 and number in (1, 2):
                n, pos = _read_varint(data, pos, stop)
                if pos + n > stop:
                    raise _Corrupt("Wire format was corrupt (a length past the end)")
                if number == 1:
                    try:  # every occurrence must be UTF-8, not only the last
                        key = data[pos:pos + n].decode("utf-8")
                    except UnicodeDecodeError:
                        raise _Corrupt("String field had bad UTF-8") from None
                else:
                    if value is None:
                        value = field.message_type._new()
                    value._decode(data, pos, pos + n)
                pos += n
            else:
                pos = _skip(data, pos, stop, number, wire_type)
                odd.append(data[field_start:pos])
        if odd:
            # An entry with fields beyond key and value goes to the unknown
            # fields, written again as upb does: the key unless empty, the value
            # if there was one, then the other fields.
            body = (_ld(b"\x0a", key.encode()) if key else b"") + (
                _ld(b"\x12", value._serialize(False)) if value is not None else b"")
            return _ld(field.tag, body + b"".join(odd))
        self._fields[field.name]._entries[key] = value if value is not None else \
            field.message_type._new()

    # -- Python protocol

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return other is self or self._serialize(True) == other._serialize(True)

    __hash__ = None

    def __str__(self):
        out = []
        self._text(out, "")
        return "".join(out)

    __repr__ = __str__

    def _text(self, out, ind):
        fields = self._fields
        for field in self._SCHEMA:
            kind, name = field.kind, field.name
            value = fields.get(name)
            if kind == _MSG:
                if value is not None:
                    out.append(f"{ind}{name} {{\n")
                    value._text(out, ind + "  ")
                    out.append(f"{ind}}}\n")
            elif kind == _MAP:
                inner = ind + "  "
                for key, item in value._entries.items():
                    out.append(f'{ind}{name} {{\n{inner}key: "{key.translate(_STR_ESC)}"\n'
                               f'{inner}value {{\n')
                    item._text(out, inner + "  ")
                    out.append(f"{inner}}}\n{ind}}}\n")
            elif kind == _REP_MSG:
                for item in value._values:
                    out.append(f"{ind}{name} {{\n")
                    item._text(out, ind + "  ")
                    out.append(f"{ind}}}\n")
            elif kind == _REP_INT64:
                out.extend([f"{ind}{name}: {v}\n" for v in value._values])
            elif kind == _REP_FLOAT:
                out.extend([f"{ind}{name}: {_text_float(v)}\n" for v in value._values])
            else:
                esc = _BYTES_ESC
                out.extend([f'{ind}{name}: "{"".join([esc[c] for c in v])}"\n'
                            for v in value._values])

    def __reduce__(self):
        return type(self), (), {"serialized": self.SerializePartialToString()}

    def __setstate__(self, state):
        self.ParseFromString(state["serialized"])

    def __copy__(self):
        return self._copy()

    def __deepcopy__(self, memo=None):
        return self._copy()


def _message_from(cls, value):
    """A copy of value (a cls message, or a dict of its fields) for a field of type cls."""
    if type(value) is cls:
        return value._copy()
    if isinstance(value, dict):
        return cls(**value)
    raise TypeError(f"Parameter to initialize message field must be dict or instance of same "
                    f"class: expected {cls!r} got {type(value)!r}.")


def _define(cls, *fields):
    """Give a message class its schema and field properties."""
    schema = []
    for name, number, kind, message_type in fields:
        field = FieldDescriptor(cls.__name__, name, number, kind, message_type)
        schema.append(field)
        setattr(cls, name, _field_property(field))
    cls._SCHEMA = tuple(schema)
    cls._BY_NAME = {f.name: f for f in schema}
    cls._BY_NUMBER = {f.number: f for f in schema}
    cls._CONTAINERS = tuple((f.name, _container_factory(f)) for f in schema if f.kind != _MSG)


def _container_factory(field):
    kind, cls = field.kind, field.message_type
    if kind == _MAP:
        return lambda owner: MessageMap(owner, cls)
    if kind == _REP_MSG:
        return lambda owner: RepeatedCompositeContainer(owner, cls)
    if kind == _REP_INT64:
        return lambda owner: RepeatedScalarContainer(owner, to_int64_array, _array.array("q"))
    if kind == _REP_FLOAT:
        return lambda owner: RepeatedScalarContainer(owner, to_float_array, _array.array("f"))
    return lambda owner: RepeatedScalarContainer(owner, to_bytes_list, [])


class BytesList(_Message):
    """``tf.train.BytesList``: ``value``, a repeated bytes field."""
    __slots__ = ()


class FloatList(_Message):
    """``tf.train.FloatList``: ``value``, a repeated float (float32) field."""
    __slots__ = ()


class Int64List(_Message):
    """``tf.train.Int64List``: ``value``, a repeated int64 field."""
    __slots__ = ()


class Feature(_Message):
    """``tf.train.Feature``: one of ``bytes_list``, ``float_list``, ``int64_list``
    (the oneof ``kind``)."""
    __slots__ = ()
    _ONEOF = ("kind", frozenset({"bytes_list", "float_list", "int64_list"}))


class Features(_Message):
    """``tf.train.Features``: ``feature``, a map from str to :class:`Feature`."""
    __slots__ = ()


class FeatureList(_Message):
    """``tf.train.FeatureList``: ``feature``, a repeated :class:`Feature`."""
    __slots__ = ()


class FeatureLists(_Message):
    """``tf.train.FeatureLists``: ``feature_list``, a map from str to :class:`FeatureList`."""
    __slots__ = ()


class Example(_Message):
    """``tf.train.Example``: ``features``, a :class:`Features`."""
    __slots__ = ()


class SequenceExample(_Message):
    """``tf.train.SequenceExample``: ``context`` (:class:`Features`) and
    ``feature_lists`` (:class:`FeatureLists`)."""
    __slots__ = ()


_define(BytesList, ("value", 1, _REP_BYTES, None))
_define(FloatList, ("value", 1, _REP_FLOAT, None))
_define(Int64List, ("value", 1, _REP_INT64, None))
_define(Feature, ("bytes_list", 1, _MSG, BytesList), ("float_list", 2, _MSG, FloatList),
        ("int64_list", 3, _MSG, Int64List))
_define(Features, ("feature", 1, _MAP, Feature))
_define(FeatureList, ("feature", 1, _REP_MSG, Feature))
_define(FeatureLists, ("feature_list", 1, _MAP, FeatureList))
_define(Example, ("features", 1, _MSG, Features))
_define(SequenceExample, ("context", 1, _MSG, Features),
        ("feature_lists", 2, _MSG, FeatureLists))

for _cls in (BytesList, FloatList, Int64List, Feature, Features, FeatureList, FeatureLists,
             Example, SequenceExample, DecodeError):
    _cls.__module__ = "conveyor.train"
del _cls
