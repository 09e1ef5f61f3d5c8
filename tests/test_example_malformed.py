"""Malformed tf.train.Example records: every one gives InvalidArgumentError or a documented
result, never a crash (run under .ci/sanitize too). Regression inputs stay here for ever."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import conveyor
from conveyor import errors
from conveyor.io import (Feature, FixedLenFeature, FixedLenSequenceFeature, VarLenFeature,
                         parse_example, parse_single_example, serialize_example)

F32, I64, STR = conveyor.float32, conveyor.int64, conveyor.string


from _example_wire import entry, example, ld, varint  # noqa: F401


def floats(*v):
    return ld(0x12, ld(0x0A, np.array(v, "<f4").tobytes()))


SPECS = [
    {"a": FixedLenFeature([], F32, default_value=0.0)},
    {"a": VarLenFeature(F32)},
    {"a": VarLenFeature(I64), "b": VarLenFeature(STR)},
    {"a": FixedLenSequenceFeature([], F32, allow_missing=True),
     "b": FixedLenFeature([], STR, default_value=b"")},
]

BAD = {
    "truncated_varint": b"\x0a\x80",
    "overlong_length": b"\x0a\x7f" + b"\x00" * 5,
    "overlong_length_5byte": b"\x0a\x85\x80\x80\x80\x10" + b"\x00" * 5,
    "varint_11_bytes": b"\x08" + b"\xff" * 10 + b"\x01",
    "group_wire_type": b"\x0b\x0c",
    "wire_type_7": b"\x0f",
    "features_not_entries": ld(0x0A, b"\x10\x01"),
    "entry_one_field": example(ld(0x0A, ld(0x0A, b"a"))),
    "entry_three_fields": example(ld(0x0A, ld(0x0A, b"a") + ld(0x12, floats(1.0)) + ld(0x0A, b"a"))),
    "entry_bad_tag": example(ld(0x0A, ld(0x0A, b"a") + b"\x18\x01")),
    "bytes_entry_past_end": example(entry(b"a", ld(0x0A, b"\x0a\x10abc"))),
    "float_list_wrong_wire": example(entry(b"a", ld(0x12, b"\x08\x01"))),
    "packed_floats_odd": example(entry(b"a", ld(0x12, ld(0x0A, b"\x00\x00\x80\x3f\x00")))),
    "two_packed_chunks": example(entry(b"a", ld(0x12, ld(0x0A, b"\x00" * 4) * 2))),
    "two_kinds": example(entry(b"a", floats(1.0) + ld(0x1A, ld(0x0A, b"\x01")))),
    "mixed_packed_unpacked": example(entry(b"a", ld(0x12, b"\x0d\x00\x00\x80\x3f" + ld(0x0A, b"\x00" * 4)))),
    "int64_varint_unterminated": example(entry(b"a", ld(0x1A, ld(0x0A, b"\x81\x82")))),
    "unsupported_kind": example(entry(b"a", b"\x22\x00")),
    "list_length_past_feature": example(entry(b"a", b"\x12\x09\x0a\x04\x00\x00\x80\x3f")),
    "skip_past_end": b"\x12\x7f\x00",
    "deep_nesting": b"\x0a\x80\x80\x04" * 1000,
}


@pytest.mark.parametrize("name", sorted(BAD))
@pytest.mark.parametrize("spec", range(len(SPECS)))
def test_malformed_table(name, spec):
    features = SPECS[spec]
    data = BAD[name]
    with pytest.raises(errors.InvalidArgumentError):
        parse_single_example(data, features)
    with pytest.raises(errors.InvalidArgumentError):
        parse_example([serialize_example({"z": 1}), data], features)


def test_deep_nesting_fast():
    data = b"\x0a" + b"\x0a\x0a" * 100000  # 10^5 levels of "length-delimited"
    with pytest.raises(errors.InvalidArgumentError, match="Could not parse example input"):
        parse_single_example(data, SPECS[0])


def test_duplicate_keys_last_wins():
    data = example(entry(b"a", floats(1.0)), entry(b"a", floats(2.0)))
    assert parse_single_example(data, SPECS[0])["a"] == 2.0
    # Repeated `features` fields merge, as protobuf concatenation does.
    data = example(entry(b"a", floats(3.0))) + example(entry(b"a", floats(4.0)))
    assert parse_example([data], SPECS[0])["a"].tolist() == [4.0]


def test_empty_feature_is_missing():
    data = example(entry(b"a", b""))
    assert parse_single_example(data, SPECS[0])["a"] == 0.0
    with pytest.raises(errors.InvalidArgumentError, match="is required"):
        parse_single_example(data, {"a": FixedLenFeature([], F32)})
    assert parse_single_example(data, SPECS[1])["a"].values.size == 0
    # An empty Feature after a real one does not hide it (TensorFlow's dense rule) ...
    data = example(entry(b"a", floats(3.0)), entry(b"a", b""))
    assert parse_single_example(data, SPECS[0])["a"] == 3.0
    assert parse_single_example(data, SPECS[1])["a"].values.tolist() == [3.0]
    # ... except for VarLen features in a batched parse, where TensorFlow lets it win.
    assert parse_example([data], SPECS[1])["a"].values.size == 0


def test_unpacked_repeated_fields():
    data = example(entry(b"f", ld(0x12, b"\x0d\x00\x00\x80\x3f\x0d\x00\x00\x00\x40")),
                   entry(b"i", ld(0x1A, b"\x08\x05\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01")))
    out = parse_single_example(data, {"f": FixedLenFeature([2], F32), "i": VarLenFeature(I64)})
    assert out["f"].tolist() == [1.0, 2.0] and out["i"].values.tolist() == [5, -1]


def test_unknown_example_fields_are_skipped():
    data = b"\x10\x05\x19" + b"\x00" * 8 + example(entry(b"a", floats(3.0))) + b"\x1d\x00\x00\x00\x00"
    assert parse_single_example(data, SPECS[0])["a"] == 3.0


def test_garbage_feature_of_unrequested_key_is_ignored():
    data = example(entry(b"zz", b"\xff\xff\xff"), entry(b"a", floats(1.0)))
    assert parse_single_example(data, SPECS[0])["a"] == 1.0


def test_empty_and_zero_bytes():
    assert parse_single_example(b"", SPECS[0])["a"] == 0.0
    # Unknown fields are skipped by wire type, as TensorFlow does (field 0 included) ...
    assert parse_single_example(b"\x00\x07", SPECS[0])["a"] == 0.0
    # ... but a truncated one is an error; NULs and non-UTF-8 bytes are escaped in the message.
    with pytest.raises(errors.InvalidArgumentError, match=r"value: '\\x00\\x80'"):
        parse_single_example(b"\x00\x80", SPECS[0])


def test_long_garbage_message_is_bounded():
    with pytest.raises(errors.InvalidArgumentError) as e:
        parse_single_example(b"\x07" * 100000, SPECS[0])
    assert len(str(e.value)) < 20000


def valid_records():
    return [
        serialize_example({"a": [1.0, 2.5], "b": [b"xy", b""], "c": [1, -1, 2**40]}),
        serialize_example({"a": 7.0, "b": "z", "c": Feature(int64_list=[])}),
        serialize_example({"b": [b"q"] * 3, "a": Feature(float_list=[]), "d": 1}),
    ]


FUZZ_SPECS = SPECS + [
    {"a": VarLenFeature(F32), "b": VarLenFeature(STR), "c": VarLenFeature(I64)},
    {"a": FixedLenSequenceFeature([2], F32, allow_missing=True, default_value=-1.0),
     "c": FixedLenSequenceFeature([], I64, allow_missing=True),
     "b": FixedLenSequenceFeature([], STR, allow_missing=True, default_value=b"pad")},
    {"a": FixedLenFeature([2], F32, [0.0, 0.0]), "b": FixedLenFeature([2], STR, [b"u", b"v"]),
     "c": FixedLenFeature([3], I64, [0, 0, 0])},
]


def check_outputs(out, features, batch):
    for key, f in features.items():
        v = out[key]
        if isinstance(f, VarLenFeature):
            assert v.indices.shape == (v.values.shape[0], 2 if batch else 1)
            assert v.dense_shape.shape == ((2,) if batch else (1,))
        elif isinstance(f, FixedLenFeature):
            assert np.shape(v) == ((batch,) if batch else ()) + tuple(f.shape)


@settings(max_examples=400, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(rec=st.integers(0, 2), spec=st.integers(0, len(FUZZ_SPECS) - 1),
       flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), max_size=3),
       cut=st.one_of(st.none(), st.integers(0, 10**6)))
def test_fuzz_flips_and_truncations(rec, spec, flips, cut):
    data = bytearray(valid_records()[rec])
    for pos, x in flips:
        data[pos % len(data)] ^= x
    if cut is not None:
        data = data[:cut % (len(data) + 1)]
    features = FUZZ_SPECS[spec]
    for batch in (0, 2):
        try:
            out = (parse_example([bytes(data)] * 2, features) if batch
                   else parse_single_example(bytes(data), features))
        except errors.InvalidArgumentError:
            continue
        check_outputs(out, features, batch)


@settings(max_examples=300, deadline=None, database=None)
@given(data=st.binary(max_size=64), spec=st.integers(0, len(FUZZ_SPECS) - 1))
def test_fuzz_random_bytes(data, spec):
    try:
        parse_example([data], FUZZ_SPECS[spec])
    except errors.InvalidArgumentError:
        pass
