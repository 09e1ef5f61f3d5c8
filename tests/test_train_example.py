"""tf.train.Example and friends (conveyor.train) against protobuf's message API.

The first part needs no TensorFlow: presence rules, containers, type checks,
text format and errors, with the values TensorFlow 2.21 / protobuf (upb)
gives. The second part builds a random corpus of Examples and
SequenceExamples in both conveyor and TensorFlow (one module-scoped import,
skipped without it) and compares bytes, parses both ways, text and sizes.
"""
import copy
import math
import os
import pickle
import random
import struct

import numpy as np
import pytest

import conveyor
import conveyor as tf_like
from conveyor import train as T

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def int_feature(*values):
    return T.Feature(int64_list=T.Int64List(value=list(values)))


# ---- the message API, without TensorFlow ----------------------------------------

def test_reachable_as_tf_train():
    ex = tf_like.train.Example(features=tf_like.train.Features(feature={
        "a": tf_like.train.Feature(int64_list=tf_like.train.Int64List(value=[1]))}))
    assert str(ex) == ('features {\n  feature {\n    key: "a"\n    value {\n      int64_list {\n'
                       '        value: 1\n      }\n    }\n  }\n}\n')
    assert repr(ex) == str(ex)
    assert ex.SerializeToString() == b"\n\x0c\n\n\n\x01a\x12\x05\x1a\x03\n\x01\x01"
    assert conveyor.train.SequenceExample.__module__ == "conveyor.train"


def test_constructors_and_field_access():
    f = T.Feature(bytes_list=T.BytesList(value=[b"a", b""]))
    assert f.WhichOneof("kind") == "bytes_list" and f.HasField("kind")
    assert f.HasField("bytes_list") and not f.HasField("int64_list")
    assert f.bytes_list.value == [b"a", b""] and f.bytes_list.value[0] == b"a"
    ex = T.Example(features={"feature": {"k": {"float_list": {"value": [1.5]}}}})
    assert ex.features.feature["k"].float_list.value == [1.5]
    assert T.Feature(int64_list=None).WhichOneof("kind") is None
    # the last oneof member given wins, as in protobuf
    assert T.Feature(int64_list=T.Int64List(), float_list=T.FloatList()).WhichOneof(
        "kind") == "float_list"
    se = T.SequenceExample(
        context=T.Features(feature={"c": int_feature(1)}),
        feature_lists=T.FeatureLists(feature_list={"s": T.FeatureList(
            feature=[int_feature(1), T.Feature(), {"bytes_list": {"value": [b"x"]}}])}))
    fl = se.feature_lists.feature_list["s"].feature
    assert len(fl) == 3 and fl[1].WhichOneof("kind") is None
    assert fl[2].bytes_list.value == [b"x"]
    with pytest.raises(TypeError, match="No positional"):
        T.Int64List([1])
    with pytest.raises(ValueError, match='has no "values" field'):
        T.Int64List(values=[1])
    with pytest.raises(TypeError):
        T.Feature(int64_list=T.FloatList())
    with pytest.raises(TypeError):
        T.Feature(int64_list=[1])
    with pytest.raises(TypeError):
        T.Features(feature={"a": 1})
    with pytest.raises(TypeError):
        T.Features(feature=[("a", T.Feature())])
    with pytest.raises(TypeError):
        T.FeatureList(feature=1)


def test_constructors_copy():
    src = T.Int64List(value=[7])
    f = T.Feature(int64_list=src)
    src.value.append(8)
    assert f.int64_list.value == [7]
    fl = T.FeatureList()
    item = int_feature(1)
    fl.feature.append(item)
    item.int64_list.value.append(2)
    assert fl.feature[0].int64_list.value == [1]


def test_presence_of_sub_messages():
    ex = T.Example()
    assert not ex.HasField("features")
    assert ex.features.feature.get("x") is None and not ex.HasField("features")
    assert str(ex) == "" and ex.SerializeToString() == b""
    ex.features.feature["x"]  # a message map creates the entry
    assert ex.HasField("features") and "x" in ex.features.feature
    assert ex.features.feature["x"].WhichOneof("kind") is None
    assert ex.SerializeToString() == b"\n\x07\n\x05\n\x01x\x12\x00"

    f = T.Feature()
    stub = f.int64_list
    assert f.int64_list is stub and f.WhichOneof("kind") is None
    list(stub.value)
    assert f.WhichOneof("kind") is None
    stub.value.append(3)
    assert f.WhichOneof("kind") == "int64_list" and f.int64_list is stub
    f.float_list.value.append(1)
    assert f.WhichOneof("kind") == "float_list" and list(f.int64_list.value) == []
    for mutate in (lambda m: m.SetInParent(), lambda m: m.Clear(),
                   lambda m: m.value.extend([]), lambda m: m.CopyFrom(T.FloatList()),
                   lambda m: m.MergeFrom(T.FloatList()), lambda m: m.ParseFromString(b"")):
        g = T.Feature()
        mutate(g.float_list)
        assert g.WhichOneof("kind") == "float_list"
    g = T.Feature(int64_list=T.Int64List(value=[1]))
    g.ClearField("kind")
    assert g.WhichOneof("kind") is None
    # a child of a cleared parent is detached
    ex = T.Example(features=T.Features(feature={"a": T.Feature()}))
    feats = ex.features
    ex.Clear()
    feats.feature["b"]
    assert not ex.HasField("features") and str(ex) == ""


def test_presence_errors():
    with pytest.raises(ValueError, match="does not have presence"):
        T.Int64List().HasField("value")
    with pytest.raises(ValueError, match="does not have presence"):
        T.Features().HasField("feature")
    with pytest.raises(ValueError, match='has no "nope" field'):
        T.Feature().HasField("nope")
    with pytest.raises(ValueError, match='has no "nope" field'):
        T.Feature().WhichOneof("nope")
    with pytest.raises(ValueError):
        T.Feature().ClearField("nope")
    with pytest.raises(AttributeError, match="Assignment not allowed"):
        T.Int64List().value = [1]
    with pytest.raises(AttributeError, match="Assignment not allowed"):
        T.Example().features = T.Features()


def test_repeated_scalar_container():
    v = T.Int64List(value=[1, 2, 3]).value
    assert repr(v) == "[1, 2, 3]" and v[1:] == [2, 3] and v[-1] == 3 and 2 in v
    v[0] = 9
    v[0:2] = [7, 8]
    del v[0]
    v.insert(0, 5)
    assert v.pop() == 3 and v == [5, 8]
    v.remove(5)
    v.extend([3, 1])
    v.sort()
    assert v == [1, 3, 8]
    v.sort(reverse=True)
    v.reverse()
    assert list(v) == [1, 3, 8] and len(v) == 3
    v.MergeFrom([4])
    assert v == [1, 3, 8, 4] and v != (1, 3, 8, 4) and v == T.Int64List(value=[1, 3, 8, 4]).value
    np.testing.assert_array_equal(np.asarray(v), [1, 3, 8, 4])
    with pytest.raises(ValueError):
        v.remove(55)
    with pytest.raises(IndexError):
        v[100]
    with pytest.raises(TypeError):
        hash(v)
    v.clear()
    assert v == []


def test_type_checks_as_protobuf():
    with pytest.raises(TypeError, match="expected bytes, str found"):
        T.BytesList().value.append("x")
    for bad in (bytearray(b"x"), 1, None):
        with pytest.raises(TypeError):
            T.BytesList(value=[bad])
    assert type(T.BytesList(value=[np.bytes_(b"x")]).value[0]) is bytes
    with pytest.raises(TypeError):
        T.BytesList(value=b"ab")  # iterates to ints
    with pytest.raises(TypeError):
        T.Int64List(value=[1.0])
    with pytest.raises(TypeError):
        T.Int64List(value=["1"])
    with pytest.raises(TypeError, match="boolean"):
        T.Int64List(value=[True])
    with pytest.raises(TypeError):
        T.Int64List(value=[np.bool_(True)])
    with pytest.raises(TypeError):
        T.Int64List(value=1)
    with pytest.raises(ValueError, match="Value out of range: 9223372036854775808"):
        T.Int64List(value=[2 ** 63])
    with pytest.raises(ValueError, match="out of range"):
        T.Int64List(value=[-2 ** 63 - 1])
    with pytest.raises(ValueError, match="out of range"):
        T.Int64List(value=np.array([2 ** 64 - 1], np.uint64))
    with pytest.raises(ValueError, match="out of range"):
        T.Int64List(value=[1]).value.__setitem__(0, 2 ** 64)
    assert T.Int64List(value=[np.int32(3), np.uint64(5)]).value == [3, 5]
    assert T.Int64List(value=np.arange(3)).value == [0, 1, 2]
    assert T.Int64List(value=(i for i in range(3))).value == [0, 1, 2]
    assert T.Int64List(value=[-2 ** 63, 2 ** 63 - 1]).value == [-2 ** 63, 2 ** 63 - 1]
    with pytest.raises(TypeError, match="must be real number, not str"):
        T.FloatList(value=["1"])
    with pytest.raises(TypeError):
        T.FloatList(value=[None])
    with pytest.raises(TypeError):
        T.FloatList(value=[1j])
    # floats are stored as float32
    assert T.FloatList(value=[0.1]).value[0] == float(np.float32(0.1)) == 0.10000000149011612
    assert T.FloatList(value=[1e300]).value[0] == math.inf
    assert T.FloatList(value=[True, 2 ** 70]).value == [1.0, float(np.float32(2 ** 70))]
    assert T.FloatList(value=np.array([0.1], np.float16)).value == [0.0999755859375]
    assert type(T.FloatList(value=[np.float64(0.5)]).value[0]) is float


def test_message_map():
    m = T.Features()
    a = m.feature["a"]
    assert m.feature["a"] is a and m.feature[b"a"] is a
    assert m.feature.get("zz") is None and m.feature.get("zz", 5) == 5
    assert m.feature.get_or_create("b") is m.feature["b"]
    assert list(m.feature) == ["a", "b"] and len(m.feature) == 2
    assert [k for k, _ in m.feature.items()] == ["a", "b"]
    assert m.feature == {"a": T.Feature(), "b": T.Feature()}
    assert repr(m.feature) == "{'a': , 'b': }"
    with pytest.raises(ValueError, match="may not be assigned"):
        m.feature["c"] = T.Feature()
    with pytest.raises(ValueError):
        m.feature.update({"c": T.Feature()})
    with pytest.raises(NotImplementedError):
        m.feature.setdefault("c", T.Feature())
    with pytest.raises(TypeError):
        m.feature[1]
    with pytest.raises(UnicodeDecodeError):
        m.feature[b"\xff"]
    with pytest.raises(UnicodeEncodeError):
        m.feature["\ud800"]
    assert 1 not in m.feature
    del m.feature["a"]
    a.int64_list.value.append(1)  # detached: the map does not change
    assert list(m.feature) == ["b"]
    with pytest.raises(KeyError):
        del m.feature["a"]
    m.feature.MergeFrom(T.Features(feature={"x": int_feature(1)}).feature)
    assert m.feature["x"].int64_list.value == [1]
    m.feature.clear()
    assert not m.feature
    m.ClearField("feature")


def test_repeated_composite_container():
    fl = T.FeatureList(feature=[T.Feature(), int_feature(1)])
    e = fl.feature.add(int64_list=T.Int64List(value=[2]))
    assert fl.feature[2] is e and len(fl.feature) == 3
    with pytest.raises(TypeError):
        fl.feature.append(T.Int64List())
    with pytest.raises(TypeError):
        fl.feature[0] = T.Feature()
    assert fl.feature[1:] == [int_feature(1), int_feature(2)]
    assert fl.feature == [T.Feature(), int_feature(1), int_feature(2)]
    del fl.feature[0]
    fl.feature.extend([T.Feature()])
    fl.feature.insert(0, int_feature(9))
    assert fl.feature.pop().WhichOneof("kind") is None
    fl.feature.sort(key=lambda f: f.int64_list.value[0])
    assert [f.int64_list.value[0] for f in fl.feature] == [1, 2, 9]
    assert repr(T.FeatureList(feature=[T.Feature(), int_feature(1)]).feature) == \
        "[, int64_list {\n  value: 1\n}\n]"


def test_copy_merge_clear_equality():
    a = T.Features(feature={"a": int_feature(1), "b": int_feature(5)})
    a.MergeFrom(T.Features(feature={"a": int_feature(2)}))
    assert a.feature["a"].int64_list.value == [2]  # map entries are replaced
    f = int_feature(1)
    f.MergeFrom(int_feature(2))
    assert f.int64_list.value == [1, 2]  # the same oneof member merges
    c = T.Features()
    c.CopyFrom(a)
    assert c == a and c is not a and c.feature["a"] is not a.feature["a"]
    c.CopyFrom(c)
    assert c == a
    with pytest.raises(TypeError, match="CopyFrom"):
        T.Int64List().CopyFrom(T.FloatList())
    with pytest.raises(TypeError, match="MergeFrom"):
        T.Int64List().MergeFrom({"value": [1]})
    # equality is by content, map order ignored, floats compared bitwise (as upb)
    assert T.Features(feature={"a": T.Feature(), "b": T.Feature()}) == \
        T.Features(feature={"b": T.Feature(), "a": T.Feature()})
    nan = float("nan")
    assert T.FloatList(value=[nan]) == T.FloatList(value=[nan])
    assert T.FloatList(value=[-0.0]) != T.FloatList(value=[0.0])
    assert T.Feature() != T.Feature(int64_list=T.Int64List())
    assert T.FloatList() != T.Int64List() and T.FloatList() != 1
    assert T.SequenceExample() != T.Example()
    with pytest.raises(TypeError):
        hash(T.FloatList())
    ex = T.Example(features=T.Features(feature={"a": T.Feature()}))
    assert copy.deepcopy(ex) == ex and copy.copy(ex) == ex
    assert pickle.loads(pickle.dumps(ex)) == ex
    assert ex.__reduce__()[2] == {"serialized": b"\n\x07\n\x05\n\x01a\x12\x00"}
    assert ex.ByteSize() == 9 and T.Example().ByteSize() == 0
    assert ex.IsInitialized()
    ex.Clear()
    assert ex == T.Example()


def test_list_fields():
    names = [(d.name, d.number) for d, _ in int_feature(1).ListFields()]
    assert names == [("int64_list", 3)]
    assert T.Int64List().ListFields() == []
    [(d, v)] = T.Features(feature={"a": T.Feature()}).ListFields()
    assert d.name == "feature" and d.full_name == "tensorflow.Features.feature"
    assert v is not None and list(v) == ["a"]
    assert [d.name for d, _ in T.Feature(int64_list=T.Int64List()).ListFields()] == [
        "int64_list"]


def test_wire_encoding():
    assert T.Int64List(value=[-1]).SerializeToString().hex() == "0a0affffffffffffffffff01"
    assert T.FloatList(value=[-0.0, float("nan"), float("inf")]).SerializeToString().hex() == \
        "0a0c000000800000c07f0000807f"
    assert T.Feature(int64_list=T.Int64List()).SerializeToString() == b"\x1a\x00"
    assert T.BytesList(value=[b""]).SerializeToString() == b"\x0a\x00"
    assert T.Features(feature={"": T.Feature()}).SerializeToString() == b"\x0a\x04\x0a\x00\x12\x00"
    assert T.BytesList(value=[b"x" * 300]).ByteSize() == 303
    big = list(range(-500, 500)) + [2 ** 63 - 1, -2 ** 63]  # the vectorized paths
    blob = T.Int64List(value=big).SerializeToString()
    assert T.Int64List.FromString(blob).value == big
    small = T.Int64List(value=big[:60]).SerializeToString()
    assert T.Int64List.FromString(small).value == big[:60]
    keys = ["", "a", "ab", "abc", "b", "k1", "k10", "k2", "ÿ", "\x7f", "ab\x00"]
    feats = T.Features(feature={k: T.Feature() for k in keys})
    det = T.Features.FromString(feats.SerializeToString(deterministic=True))
    # upb's deterministic order: bytes order, a prefix after the longer key
    assert list(det.feature) == ["ab\x00", "abc", "ab", "a", "b", "k10", "k1", "k2", "\x7f",
                                 "ÿ", ""]
    assert list(T.Features.FromString(feats.SerializeToString()).feature) == keys


def test_decoding_is_lenient_as_protobuf():
    # unpacked repeated values, unknown fields kept and written back after the known ones
    assert T.Int64List.FromString(b"\x08\x01\x08\x02\x0a\x01\x03").value == [1, 2, 3]
    assert T.FloatList.FromString(b"\x0d\x00\x00\x80\x3f").value == [1.0]
    u = T.Example.FromString(b"\x10\x05\x0a\x00\x1a\x01z")
    assert u.SerializeToString().hex() == "0a0010051a017a" and u.ByteSize() == 7
    assert u != T.Example(features=T.Features()) and str(u) == "features {\n}\n"
    u.DiscardUnknownFields()
    assert u == T.Example(features=T.Features())
    assert T.Feature.FromString(b"\x10\x01\x1a\x02\x08\x01\x18\x00").SerializeToString().hex() \
        == "1a030a010110011800"
    assert T.Example.FromString(b"\x13\x1b\x1c\x08\x01\x14").SerializeToString() == \
        b"\x13\x1b\x1c\x08\x01\x14"  # groups
    assert T.Example.FromString(b"\x08\x01").SerializeToString() == b"\x08\x01"  # wrong type
    assert T.Feature.FromString(b"\x1a\x03\x0a\x01\x01\x1a\x03\x0a\x01\x02").int64_list.value \
        == [1, 2]
    assert T.Feature.FromString(b"\x1a\x03\x0a\x01\x01\x0a\x00").WhichOneof("kind") == \
        "bytes_list"
    assert T.Int64List.FromString(b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f").value == [-1]
    assert T.BytesList.FromString(b"\x0a\x80\x00").value == [b""]
    assert T.Example.FromString(b"\x90\x80\x80\x80\x00\x00").SerializeToString() == \
        b"\x90\x80\x80\x80\x00\x00"
    # a map entry with other fields stays whole among the unknown fields
    entry = b"\x0a\x05\x0a\x01a\x18\x01"
    assert str(T.Features.FromString(entry)) == ""
    assert T.Features.FromString(entry).SerializeToString() == entry
    assert list(T.Features.FromString(b"\x0a\x02\x12\x00").feature) == [""]
    x = T.Int64List(value=[9])
    assert x.MergeFromString(b"\x08\x01") == 2 and x.value == [9, 1]
    assert x.ParseFromString(bytearray(b"\x08\x02")) == 2 and x.value == [2]
    assert T.Int64List.FromString(memoryview(b"\x08\x01")).value == [1]


def ld(tag, payload):
    return bytes([tag, len(payload)]) + payload


CORRUPT = [
    b"\x0a\x05\x0a",                          # a length past the end
    b"\x0f", b"\x0e",                         # wire types 7 and 6
    b"\x00\x00",                              # field number 0
    b"\x14",                                  # an end-group without a start
    b"\x13", b"\x13\x1c",                     # an unterminated / mismatched group
    b"\x0a\x80\x80\x80\x80\x10",              # a huge length
    b"\xf8\xff\xff\xff\x1f\x00",              # field number too big
    b"\x90\x80\x80\x80\x80\x00\x00",          # a 6-byte tag
    b"\x11\x00\x00",                          # truncated fixed64
    b"\x0a\x06\x0a\x04\x0a\x02\xff\xfe",     # a key that is not UTF-8
    b"\x0a\x08\x0a\x06\x12\x04\x12\x02\x0a\x03",  # packed floats of 3 bytes
    b"\x0a\x09\x0a\x07\x12\x05\x1a\x03\x0a\x01\x80",  # a truncated packed varint
    b"\x0a\x12\x0a\x10\x12\x0e\x1a\x0c\x08" + b"\xff" * 10 + b"\x01",  # an 11-byte varint
    ld(0x0a, ld(0x0a, ld(0x0a, b"\xd3\x01") + ld(0x0a, b"ok"))),  # a bad key, then ok
    ld(0x0a, ld(0x0a, b"\xf0\x9f\x98\x80\x27\x00")),  # a tag over 32 bits
]


_FLOATS = ld(0x12, ld(0x0a, b"\x00" * 8))  # a Feature with two float zeros
# Odd but valid bytes: protobuf (upb) parses them and writes these back.
LENIENT = [
    # an unknown group (with a field number 0 inside) in a map entry: the entry
    # goes to the unknown fields, its value first
    (ld(0x0a, ld(0x0a, b"\x0b\x00\x12\x0c" + ld(0x12, _FLOATS))),
     ld(0x0a, ld(0x0a, ld(0x12, _FLOATS) + b"\x0b\x00\x12\x0c"))),
    # unknown fields and such an entry stay in their order
    (ld(0x0a, b"\x41" + b"\x01" * 8 + ld(0x0a, b"\x80\x01\x80\x80\x01")),
     ld(0x0a, b"\x41" + b"\x01" * 8 + ld(0x0a, b"\x80\x01\x80\x80\x01"))),
    # an empty key is not written again
    (ld(0x0a, ld(0x0a, b"\x0a\x00\x48\x02\x1a\x00\x12\x00")),
     ld(0x0a, ld(0x0a, b"\x12\x00\x48\x02\x1a\x00"))),
]


@pytest.mark.parametrize("data, written", LENIENT)
def test_lenient_bytes_written_back_as_upb(data, written):
    assert T.Example.FromString(data).SerializeToString() == written


@pytest.mark.parametrize("data", CORRUPT)
def test_decode_errors(data):
    with pytest.raises(T.DecodeError, match="Error parsing message with type "
                                            "'tensorflow.Example'"):
        T.Example.FromString(data)
    try:
        from google.protobuf.message import DecodeError
    except ImportError:
        return
    with pytest.raises(DecodeError):
        T.Example.FromString(data)


def test_bad_input_types():
    for bad in (None, "x", 1):
        with pytest.raises(TypeError):
            T.Example.FromString(bad)


def test_text_format():
    assert str(T.FloatList(value=[0.1, 1e30, 1e-45, float("nan"), -float("inf"), -0.0, 3.0,
                                  1e10, 123456789.0, 1e-5, 3.4028234663852886e38, 1.5e-7,
                                  100.0, 1e16, 0.5, 1e-40, 16777217.0])) == (
        "value: 0.1\nvalue: 1e+30\nvalue: 1.4013e-45\nvalue: nan\nvalue: -inf\nvalue: -0\n"
        "value: 3\nvalue: 1e+10\nvalue: 123456792\nvalue: 1e-05\nvalue: 3.40282347e+38\n"
        "value: 1.5e-07\nvalue: 100\nvalue: 1e+16\nvalue: 0.5\nvalue: 9.99995e-41\n"
        "value: 16777216\n")
    assert str(T.BytesList(value=[b"a\"'\\\n\r\t\x00\x7f\x80\xff", "é".encode(), b" ~"])) == (
        'value: "a\\"\\\'\\\\\\n\\r\\t\\000\\177\\200\\377"\nvalue: "\\303\\251"\n'
        'value: " ~"\n')
    assert str(T.Features(feature={"é\"\n\x01\\'": T.Feature()})) == (
        'feature {\n  key: "é\\"\\n\\001\\\\\\\'"\n  value {\n  }\n}\n')
    assert str(T.Int64List(value=[-2 ** 63, 2 ** 63 - 1])) == (
        "value: -9223372036854775808\nvalue: 9223372036854775807\n")
    assert str(T.SequenceExample(context=T.Features())) == "context {\n}\n"


def test_serialize_example_takes_feature_messages():
    record = conveyor.io.serialize_example({"a": int_feature(1, 2), "b": [0.5]})
    ex = T.Example.FromString(record)
    assert ex.features.feature["a"].int64_list.value == [1, 2]
    assert ex.features.feature["b"].float_list.value == [0.5]
    assert record == T.Example(features=T.Features(feature={
        "a": int_feature(1, 2),
        "b": T.Feature(float_list=T.FloatList(value=[0.5]))})).SerializeToString()


# ---- against TensorFlow -----------------------------------------------------------

@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


KEY_CHARS = ["a", "b", "k", "1", "0", "é", "日本", "😀", "\x00", "\n", '"', "\\", "'", " ", "ÿ",
             "\x7f"]
FLOAT_EDGES = [0.0, -0.0, float("nan"), float("inf"), -float("inf"), 0.1, 1e-45, 1e-40,
               3.4028234663852886e38, 1e39, -1e39, 16777217.0, 1.5, -2.5, 1e-7]
INT_EDGES = [0, 1, -1, 127, 128, 255, 16383, 16384, -128, 2 ** 31, -2 ** 31, 2 ** 63 - 1,
             -2 ** 63, 2 ** 62, -2 ** 62]


def random_key(rng):
    return "".join(rng.choice(KEY_CHARS) for _ in range(rng.choice([0, 1, 1, 2, 3, 6])))


def random_feature(rng):
    """A description of a Feature: (kind, values), kind None for an empty Feature."""
    kind = rng.choice(["int64", "float", "bytes", "int64", "float", "bytes", None])
    n = rng.choice([0, 1, 1, 2, 3, 5, 20, 100])
    if kind == "int64":
        values = [rng.choice(INT_EDGES) if rng.random() < 0.4 else
                  rng.randrange(-2 ** 63, 2 ** 63) >> rng.randrange(64) for _ in range(n)]
    elif kind == "float":
        values = []
        for _ in range(n):
            r = rng.random()
            if r < 0.4:
                values.append(rng.choice(FLOAT_EDGES))
            elif r < 0.7:  # any float32 bit pattern, NaNs included
                values.append(struct.unpack("<f", struct.pack("<I", rng.getrandbits(32)))[0])
            else:
                values.append(rng.uniform(-1e6, 1e6))
    elif kind == "bytes":
        values = [bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 5, 40, 300, 5000])))
                  for _ in range(min(n, 6))]
    else:
        values = None
    return kind, values


def random_features(rng):
    keys = list(dict.fromkeys(random_key(rng) for _ in range(rng.choice([0, 1, 1, 2, 4, 8]))))
    return [(k, random_feature(rng)) for k in keys]


def build(ns, desc):
    """Build a message in namespace ns (tf.train or conveyor.train) from a description."""
    what, body = desc

    def feature(fd):
        kind, values = fd
        if kind is None:
            return ns.Feature()
        if kind == "int64":
            return ns.Feature(int64_list=ns.Int64List(value=values))
        if kind == "float":
            return ns.Feature(float_list=ns.FloatList(value=values))
        return ns.Feature(bytes_list=ns.BytesList(value=values))

    def features(items):
        return ns.Features(feature={k: feature(fd) for k, fd in items})

    if what == "example":
        return ns.Example(features=features(body)) if body is not None else ns.Example()
    context, lists = body
    kwargs = {}
    if context is not None:
        kwargs["context"] = features(context)
    if lists is not None:
        kwargs["feature_lists"] = ns.FeatureLists(feature_list={
            k: ns.FeatureList(feature=[feature(fd) for fd in fds]) for k, fds in lists})
    return ns.SequenceExample(**kwargs)


def corpus(seed=1234, examples=500, sequences=120):
    rng = random.Random(seed)
    out = []
    for _ in range(examples):
        out.append(("example", random_features(rng) if rng.random() > 0.03 else None))
    for _ in range(sequences):
        context = random_features(rng) if rng.random() > 0.2 else None
        lists = None
        if rng.random() > 0.1:
            keys = list(dict.fromkeys(random_key(rng) for _ in range(rng.choice([0, 1, 2, 3]))))
            lists = [(k, [random_feature(rng) for _ in range(rng.choice([0, 1, 3, 6]))])
                     for k in keys]
        out.append(("sequence", (context, lists)))
    return out


def map_sizes_at_most_one(desc):
    what, body = desc
    if what == "example":
        return body is None or len(body) <= 1
    context, lists = body
    return (context is None or len(context) <= 1) and (lists is None or len(lists) <= 1)


def canonical_text(text):
    """Text format with map entries sorted (TensorFlow prints maps in hash order)."""
    lines = text.splitlines()

    def block(i):
        items = []
        while i < len(lines):
            line = lines[i].strip()
            if line == "}":
                return items, i + 1
            if line.endswith(" {"):
                children, i = block(i + 1)
                items.append((line, children))
            else:
                items.append(line)
                i += 1
        return items, i

    def norm(items):
        entries = [(it[0], norm(it[1])) for it in items if isinstance(it, tuple)
                   and it[1] and isinstance(it[1][0], str) and it[1][0].startswith("key: ")]
        rest = [(it[0], norm(it[1])) if isinstance(it, tuple) else it for it in items
                if not (isinstance(it, tuple) and it[1] and isinstance(it[1][0], str)
                        and it[1][0].startswith("key: "))]
        return rest + sorted(entries, key=repr)

    return norm(block(0)[0])


@pytest.fixture(scope="module")
def pairs(tf):
    items = corpus()
    return [(desc, build(T, desc), build(tf.train, desc)) for desc in items]


def test_corpus_size(pairs):
    kinds = [d[0] for d, _, _ in pairs]
    assert kinds.count("example") >= 500 and kinds.count("sequence") >= 100
    multi = sum(not map_sizes_at_most_one(d) for d, _, _ in pairs)
    assert 100 < multi < len(pairs) - 100


def test_serialization_byte_identical(tf, pairs):
    for desc, ours, theirs in pairs:
        det = ours.SerializeToString(deterministic=True)
        assert det == theirs.SerializeToString(deterministic=True), desc
        if map_sizes_at_most_one(desc):  # TensorFlow's default map order is its hash order
            assert ours.SerializeToString() == theirs.SerializeToString(), desc
        assert ours.ByteSize() == theirs.ByteSize()


def test_round_trips_both_ways(tf, pairs):
    for desc, ours, theirs in pairs:
        cls_tf = type(theirs)
        back = cls_tf.FromString(ours.SerializeToString())
        assert back == theirs, desc
        parsed = type(ours).FromString(theirs.SerializeToString())
        assert parsed == ours, desc
        assert parsed.SerializeToString(deterministic=True) == theirs.SerializeToString(
            deterministic=True)


def test_fields_equal_after_parsing_tensorflow_bytes(tf, pairs):
    for desc, ours, theirs in pairs:
        if desc[0] != "example":
            continue
        parsed = T.Example.FromString(theirs.SerializeToString())
        assert parsed.HasField("features") == theirs.HasField("features")
        assert sorted(parsed.features.feature) == sorted(theirs.features.feature)
        for key, f in theirs.features.feature.items():
            mine = parsed.features.feature[key]
            kind = f.WhichOneof("kind")
            assert mine.WhichOneof("kind") == kind
            if kind is None:
                continue
            a, b = list(getattr(mine, kind).value), list(getattr(f, kind).value)
            if kind == "float_list":
                np.testing.assert_array_equal(np.array(a, np.float32), np.array(b, np.float32))
            else:
                assert a == b


def test_text_format_equal(tf, pairs):
    exact = 0
    for desc, ours, theirs in pairs:
        if map_sizes_at_most_one(desc):
            assert str(ours) == str(theirs), desc
            exact += 1
        else:
            assert canonical_text(str(ours)) == canonical_text(str(theirs)), desc
    assert exact > 200


FUZZ_STEP, FUZZ_N = int(os.environ.get("CONVEYOR_FUZZ_STEP", 6)), int(
    os.environ.get("CONVEYOR_FUZZ_N", 3))


def test_corrupt_bytes_same_outcome(tf, pairs):
    """Cuts and flipped bytes: both decoders fail, or both give the same message."""
    from google.protobuf.message import DecodeError
    rng = random.Random(7)
    checked = 0
    for desc, ours, theirs in pairs[::FUZZ_STEP]:
        data = theirs.SerializeToString()
        if not data:
            continue
        variants = [data[:rng.randrange(len(data))] for _ in range(FUZZ_N)]
        for _ in range(FUZZ_N):
            b = bytearray(data)
            b[rng.randrange(len(b))] = rng.getrandbits(8)
            variants.append(bytes(b))
        for v in variants:
            cls_ours, cls_tf = type(ours), type(theirs)
            try:
                expected = cls_tf.FromString(v).SerializeToString(deterministic=True)
            except DecodeError:
                expected = None
            try:
                got = cls_ours.FromString(v).SerializeToString(deterministic=True)
            except T.DecodeError:
                got = None
            assert got == expected, (desc, v)
            checked += 1
    assert checked > 300


def test_corrupt_cases_fail_in_tensorflow_too(tf):
    from google.protobuf.message import DecodeError
    for data in CORRUPT:
        with pytest.raises(DecodeError):
            tf.train.Example.FromString(data)
    for data, written in LENIENT:
        assert tf.train.Example.FromString(data).SerializeToString() == written


def test_type_errors_as_tensorflow(tf):
    cases = [("BytesList", ["x"]), ("BytesList", [1]), ("BytesList", [bytearray(b"x")]),
             ("Int64List", [1.0]), ("Int64List", ["1"]), ("Int64List", [True]),
             ("Int64List", [None]), ("Int64List", [2 ** 63]), ("Int64List", [-2 ** 63 - 1]),
             ("FloatList", ["1"]), ("FloatList", [None]), ("FloatList", [1j])]
    for name, value in cases:
        with pytest.raises(Exception) as theirs:
            getattr(tf.train, name)(value=value)
        with pytest.raises(Exception) as ours:
            getattr(T, name)(value=value)
        assert type(ours.value) is type(theirs.value), (name, value)
        assert str(ours.value) == str(theirs.value), (name, value)


def test_records_parse_in_conveyor_and_tensorflow(tf, pairs, tmp_path):
    path = str(tmp_path / "examples.tfrecord")
    examples = [ours for desc, ours, _ in pairs if desc[0] == "example"][:200]
    with conveyor.io.TFRecordWriter(path) as writer:
        for ex in examples:
            writer.write(ex.SerializeToString())
    records = list(conveyor.data.TFRecordDataset(path).as_numpy_iterator())
    assert [T.Example.FromString(r) for r in records] == examples
    tf_records = [r.numpy() for r in tf.data.TFRecordDataset(path)]
    assert tf_records == records
    # parse every feature of each record with parse_single_example, in both
    for ex, record in zip(examples, records):
        spec_ours, spec_tf = {}, {}
        for key, f in ex.features.feature.items():
            kind = f.WhichOneof("kind")
            if kind is None:
                continue
            dtype = {"int64_list": "int64", "float_list": "float32", "bytes_list": "string"}[kind]
            spec_ours[key] = conveyor.io.VarLenFeature(getattr(conveyor, dtype))
            spec_tf[key] = tf.io.VarLenFeature(getattr(tf, dtype))
        if not spec_ours:
            continue
        got = conveyor.io.parse_single_example(record, spec_ours)
        want = tf.io.parse_single_example(record, spec_tf)
        for key in spec_ours:
            values = got[key].values
            kind = ex.features.feature[key].WhichOneof("kind")
            expected = list(getattr(ex.features.feature[key], kind).value)
            if kind == "float_list":
                np.testing.assert_array_equal(values, np.array(expected, np.float32))
            else:
                assert list(values) == expected
            np.testing.assert_array_equal(values, want[key].values.numpy())


def random_ops(rng, count):
    ops = []
    keys = ["a", "b", "é", ""]
    for _ in range(count):
        op = rng.choice(["append", "extend", "touch", "del", "clear_kind", "copy", "merge",
                         "clear_features", "pop", "insert", "setitem", "delitem", "sort",
                         "stub", "stub_write", "clear"])
        kind = rng.choice(["int64_list", "float_list", "bytes_list"])
        n = rng.choice([0, 1, 3])
        if kind == "int64_list":
            values = [rng.randrange(-2 ** 63, 2 ** 63) for _ in range(n)]
        elif kind == "float_list":
            values = [rng.uniform(-10, 10) for _ in range(n)]
        else:
            values = [bytes([rng.getrandbits(8)]) * rng.randrange(4) for _ in range(n)]
        ops.append((op, rng.choice(keys), kind, values))
    return ops


def apply_ops(ns, ops):
    """Apply ops to a new Example in namespace ns; the states after each op."""
    ex, stubs, states = ns.Example(), {}, []
    for op, key, kind, values in ops:
        feats = ex.features.feature
        if op == "append" and values:
            getattr(feats[key], kind).value.append(values[0])
        elif op == "extend":
            getattr(feats[key], kind).value.extend(values)
        elif op == "touch":
            feats[key]
        elif op == "del" and key in feats:
            del feats[key]
        elif op == "clear_kind" and key in feats:
            feats[key].ClearField("kind")
        elif op == "copy":
            other = ns.Feature()
            getattr(other, kind).value.extend(values)
            feats[key].CopyFrom(other)
        elif op == "merge":
            other = ns.Example()
            getattr(other.features.feature[key], kind).value.extend(values)
            ex.MergeFrom(other)
        elif op == "clear_features":
            ex.ClearField("features")
        elif op in ("pop", "insert", "setitem", "delitem", "sort") and key in feats:
            f = feats[key]
            which = f.WhichOneof("kind")
            if which is not None:
                v = getattr(f, which).value
                same = which == kind and values
                if op == "pop" and len(v):
                    v.pop()
                elif op == "insert" and same:
                    v.insert(0, values[0])
                elif op == "setitem" and same and len(v):
                    v[0] = values[0]
                elif op == "delitem" and len(v):
                    del v[0]
                elif op == "sort":
                    v.sort()
        elif op == "stub":
            stubs[(key, kind)] = getattr(ex.features.feature.get(key, ns.Feature()), kind)
        elif op == "stub_write" and (key, kind) in stubs and values:
            stubs[(key, kind)].value.append(values[0])
        elif op == "clear":
            ex.Clear()
        feats = ex.features.feature
        states.append((ex.SerializeToString(deterministic=True), ex.HasField("features"),
                       sorted(feats), [feats[k].WhichOneof("kind") for k in sorted(feats)],
                       ex.ByteSize()))
    return states


def test_random_mutations_as_tensorflow(tf):
    for seed in range(40):
        ops = random_ops(random.Random(seed), 60)
        ours, theirs = apply_ops(T, ops), apply_ops(tf.train, ops)
        for step, (a, b) in enumerate(zip(ours, theirs)):
            assert a == b, (seed, step, ops[:step + 1])
