"""tf.train.Example equivalence with TensorFlow: bytes from serialize_example parse the same
in TensorFlow, TensorFlow's SerializeToString() output parses the same in conveyor, and
errors have the same type and text."""
import os
import re

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import pytest  # noqa: E402

tf = pytest.importorskip("tensorflow")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import conveyor  # noqa: E402
from conveyor import errors  # noqa: E402
from conveyor import io as cio  # noqa: E402

DT = {"float32": (tf.float32, conveyor.float32), "int64": (tf.int64, conveyor.int64),
      "string": (tf.string, conveyor.string)}


def tf_example(**kw):
    feats = {}
    for k, v in kw.items():
        if isinstance(v, tf.train.Feature):
            feats[k] = v
        elif v and isinstance(v[0], float):
            feats[k] = tf.train.Feature(float_list=tf.train.FloatList(value=v))
        elif v and isinstance(v[0], bytes):
            feats[k] = tf.train.Feature(bytes_list=tf.train.BytesList(value=v))
        else:
            feats[k] = tf.train.Feature(int64_list=tf.train.Int64List(value=v))
    return tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString()


def specs(spec):
    """{key: (kind, shape, dtype name, default)} -> (tf features, conveyor features)."""
    t, c = {}, {}
    for k, (kind, shape, dt, dflt) in spec.items():
        tdt, cdt = DT[dt]
        if kind == "fixed":
            t[k] = tf.io.FixedLenFeature(shape, tdt, default_value=dflt)
            c[k] = cio.FixedLenFeature(shape, cdt, default_value=dflt)
        elif kind == "var":
            t[k], c[k] = tf.io.VarLenFeature(tdt), cio.VarLenFeature(cdt)
        else:
            t[k] = tf.io.FixedLenSequenceFeature(shape, tdt, allow_missing=True, default_value=dflt)
            c[k] = cio.FixedLenSequenceFeature(shape, cdt, allow_missing=True, default_value=dflt)
    return t, c


def tf_parse(serialized, features, batch):
    out = (tf.io.parse_example(serialized, features) if batch
           else tf.io.parse_single_example(serialized, features))
    res = {}
    for k, v in out.items():
        if isinstance(v, tf.SparseTensor):
            res[k] = ("sparse", v.indices.numpy(), v.values.numpy(), v.dense_shape.numpy())
        else:
            res[k] = as_array(v.numpy())
    return res


def as_array(v):
    return np.array(v, dtype=object) if isinstance(v, bytes) else np.asarray(v)


def cv_parse(serialized, features, batch):
    out = (cio.parse_example(serialized, features) if batch
           else cio.parse_single_example(serialized, features))
    res = {}
    for k, v in out.items():
        if isinstance(v, cio.SparseTensor):
            res[k] = ("sparse", v.indices, v.values, v.dense_shape)
        else:
            res[k] = as_array(v)
    return res


def assert_same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, tuple):
            assert isinstance(y, tuple), k
            for p, q in zip(x[1:], y[1:]):
                assert np.asarray(p).dtype == np.asarray(q).dtype, k
                assert np.asarray(p).shape == np.asarray(q).shape, k
                np.testing.assert_array_equal(p, q, err_msg=k)
        else:
            y = np.asarray(y)
            assert x.dtype == y.dtype and x.shape == y.shape, (k, x, y)
            np.testing.assert_array_equal(x, y, err_msg=k)


def tf_message(e):
    return re.sub(r" \[Op:\w+\]$", "", re.sub(r"^\{\{function_node [^}]*\}\} ", "", str(e)))


SPEC = {
    "f": ("fixed", [2], "float32", None),
    "fd": ("fixed", [2, 2], "float32", [[1.0, 2.0], [3.0, 4.0]]),
    "i": ("fixed", [], "int64", None),
    "idef": ("fixed", [3], "int64", [7, 8, 9]),
    "s": ("fixed", [], "string", None),
    "sdef": ("fixed", [2], "string", [b"p", b"q"]),
    "v": ("var", None, "float32", None),
    "vi": ("var", None, "int64", None),
    "vs": ("var", None, "string", None),
    "q": ("seq", [2], "float32", None),
    "qi": ("seq", [], "int64", -5),
    "qs": ("seq", [], "string", b"pad"),
}

RECORDS = [
    dict(f=[1.5, -2.0], i=[3], s=[b"a"], v=[1.0], vi=[1, 2, 3], vs=[b"x", b"yy"], q=[1.0, 2.0, 3.0, 4.0],
         qi=[1], qs=[b"u"], fd=[5.0, 6.0, 7.0, 8.0]),
    dict(f=[0.0, 1e30], i=[-(2**63)], s=[b""], idef=[1, 2, 3], sdef=[b"r", b"\x00\xff"], qi=[2, 3, 4]),
    dict(f=[float("inf"), -0.0], i=[2**63 - 1], s=["é".encode()], vs=[b""], q=[9.0, 8.0]),
]


def test_conveyor_bytes_parse_same_in_tensorflow():
    t, c = specs(SPEC)
    recs = [cio.serialize_example(r) for r in RECORDS]
    for r in recs:
        assert_same(tf_parse(r, t, False), cv_parse(r, c, False))
    assert_same(tf_parse(recs, t, True), cv_parse(recs, c, True))


def test_tensorflow_bytes_parse_same_in_conveyor():
    t, c = specs(SPEC)
    recs = [tf_example(**r) for r in RECORDS]
    for r in recs:
        assert_same(tf_parse(r, t, False), cv_parse(r, c, False))
    assert_same(tf_parse(recs, t, True), cv_parse(recs, c, True))
    # Same message, byte for byte after a TensorFlow round trip.
    for r in RECORDS:
        ours = cio.serialize_example(r)
        assert tf.train.Example.FromString(ours) == tf.train.Example.FromString(tf_example(**r))


def test_empty_batch_and_names():
    t, c = specs(SPEC)
    assert_same(tf_parse(tf.constant([], tf.string), t, True), cv_parse([], c, True))


ERROR_CASES = [
    ("missing", [dict(x=[1])], {"age": ("fixed", [], "float32", None)}),
    ("missing_i", [dict(x=[1])], {"age": ("fixed", [2], "int64", None)}),
    ("missing_s", [dict(x=[1])], {"age": ("fixed", [], "string", None)}),
    ("count", [dict(age=[1.0, 2.0, 3.0])], {"age": ("fixed", [2], "float32", None)}),
    ("count_i", [dict(age=[1, 2])], {"age": ("fixed", [3], "int64", None)}),
    ("count_s", [dict(age=[b"a"])], {"age": ("fixed", [2], "string", None)}),
    ("count_2d", [dict(age=[1.0] * 5)], {"age": ("fixed", [2, 3], "float32", None)}),
    ("count_empty", [dict(age=tf.train.Feature(float_list=tf.train.FloatList()))],
     {"age": ("fixed", [], "float32", None)}),
    ("type", [dict(age=[1])], {"age": ("fixed", [], "float32", None)}),
    ("type_s", [dict(age=[1.0])], {"age": ("fixed", [], "string", None)}),
    ("type_var", [dict(age=[1])], {"age": ("var", None, "float32", None)}),
    ("type_seq", [dict(age=[1])], {"age": ("seq", [], "float32", None)}),
    ("stride", [dict(age=[1.0] * 5)], {"age": ("seq", [2], "float32", None)}),
    ("stride_2d", [dict(age=[1.0] * 5)], {"age": ("seq", [2, 3], "float32", None)}),
    ("second", [dict(age=[1.0]), dict(age=[1])], {"age": ("fixed", [], "float32", None)}),
    ("empty_feature", [dict(age=tf.train.Feature())], {"age": ("fixed", [], "float32", None)}),
]


@pytest.mark.parametrize("batch", [False, True])
@pytest.mark.parametrize("case", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors_match_tensorflow(case, batch):
    name, records, spec = case
    if not batch and len(records) > 1:
        pytest.skip("one example")
    t, c = specs(spec)
    recs = [tf_example(**r) for r in records]
    arg = recs if batch else recs[0]
    with pytest.raises(tf.errors.InvalidArgumentError) as te:
        tf_parse(arg, t, batch)
    with pytest.raises(errors.InvalidArgumentError) as ce:
        cv_parse(arg, c, batch)
    assert str(ce.value) == tf_message(te.value)


def test_example_names_in_errors():
    t, c = specs({"age": ("fixed", [], "float32", None)})
    recs = [tf_example(age=[1.0]), tf_example(x=[1])]
    with pytest.raises(tf.errors.InvalidArgumentError) as te:
        tf.io.parse_example(recs, t, example_names=["a", "b"])
    with pytest.raises(errors.InvalidArgumentError) as ce:
        cio.parse_example(recs, c, example_names=["a", "b"])
    assert str(ce.value) == tf_message(te.value)


@pytest.mark.parametrize("garbage", [b"hello world", b"\n\x05\n\x03\n\x01a",
                                     b"this is not a protobuf at all, not even close"])
@pytest.mark.parametrize("batch", [False, True])
def test_garbage_matches_tensorflow(garbage, batch):
    t, c = specs({"a": ("fixed", [], "float32", 0.0)})
    arg = [garbage] if batch else garbage
    with pytest.raises(tf.errors.InvalidArgumentError) as te:
        tf_parse(arg, t, batch)
    with pytest.raises(errors.InvalidArgumentError) as ce:
        cv_parse(arg, c, batch)
    assert str(ce.value) == tf_message(te.value)


def test_config_errors_same_type():
    for bad in (tf.int32, tf.bool):
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.io.parse_single_example(tf_example(a=[1]), {"a": tf.io.FixedLenFeature([], bad)})
    for bad in (conveyor.int32, conveyor.bool):
        with pytest.raises(errors.InvalidArgumentError):
            cio.parse_single_example(tf_example(a=[1]), {"a": cio.FixedLenFeature([], bad)})
    with pytest.raises(tf.errors.InvalidArgumentError) as te:
        tf.io.parse_single_example(tf_example(x=[1]),
                                   {"a": tf.io.FixedLenFeature([2], tf.float32, [1.0, 2.0, 3.0])})
    with pytest.raises(errors.InvalidArgumentError) as ce:
        cio.parse_single_example(tf_example(x=[1]),
                                 {"a": cio.FixedLenFeature([2], conveyor.float32, [1.0, 2.0, 3.0])})
    assert str(ce.value) == tf_message(te.value)


# -- malformed protobufs: conveyor gives TensorFlow's result or InvalidArgumentError --------

from _example_wire import entry, example, ld, varint  # noqa: E402,F401


FL = ld(0x12, ld(0x0A, np.float32(1.0).tobytes()))
MALFORMED = {
    "truncated_varint": b"\x0a\x80",
    "overlong_length": b"\x0a\x7f\x00\x00",
    "wrong_wire_type_float_list": example(entry(b"a", ld(0x12, b"\x08\x01"))),
    "packed_floats_odd": example(entry(b"a", ld(0x12, ld(0x0A, b"\x00\x00\x80\x3f\x00")))),
    "duplicate_keys": example(entry(b"a", FL), entry(b"a", ld(0x12, ld(0x0A, np.float32(2).tobytes())))),
    "empty_feature": example(entry(b"a", b"")),
    "empty_feature_last": example(entry(b"a", FL), entry(b"a", b"")),
    "unpacked_floats": example(entry(b"a", ld(0x12, b"\x0d\x00\x00\x80\x3f"))),
    "unpacked_int64": example(entry(b"b", ld(0x1A, b"\x08\x05\x08\x07"))),
    "value_before_key": example(ld(0x0A, ld(0x12, FL) + ld(0x0A, b"a"))),
    "unknown_fields": b"\x10\x05" + example(entry(b"a", FL)) + b"\x1d\x00\x00\x00\x00",
    "concatenated": example(entry(b"a", FL)) + example(entry(b"b", ld(0x1A, ld(0x0A, b"\x03")))),
    "deep_garbage": b"\x0a\x80\x80\x04" * 50,
    "unsupported_kind": example(entry(b"a", b"\x22\x00")),
    "bytes_past_end": example(entry(b"c", ld(0x0A, b"\x0a\x10abc"))),
}
MAL_SPECS = [
    {"a": ("fixed", [], "float32", 0.0), "b": ("var", None, "int64", None),
     "c": ("var", None, "string", None)},
    {"a": ("var", None, "float32", None), "b": ("seq", [], "int64", None),
     "c": ("fixed", [], "string", b"d")},
]


def compare(data, spec, batch):
    t, c = specs(spec)
    arg = [data, tf_example(a=[2.0], b=[1])] if batch else data
    try:
        want = tf_parse(arg, t, batch)
    except UnicodeDecodeError:  # TensorFlow cannot even build its message
        want = None
    except tf.errors.InvalidArgumentError:
        want = None
    try:
        got = cv_parse(arg, c, batch)
    except errors.InvalidArgumentError:
        return want, None
    assert want is not None, "conveyor accepted what TensorFlow rejects"
    assert_same(want, got)
    return want, got


@pytest.mark.parametrize("batch", [False, True])
@pytest.mark.parametrize("spec", [0, 1])
@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_vs_tensorflow(name, spec, batch):
    want, got = compare(MALFORMED[name], MAL_SPECS[spec], batch)
    if name in ("duplicate_keys", "empty_feature", "unpacked_floats", "unpacked_int64",
                "value_before_key", "unknown_fields", "concatenated"):
        assert got is not None  # valid protobuf: both accept
    if name == "empty_feature_last" and not (batch and spec == 1):
        assert got is not None


FUZZ_RECORDS = [tf_example(a=[1.5], b=[1, -1, 300], c=[b"xy"]),
                tf_example(b=[5], c=[b"", b"q"], zz=[1.0, 2.0]),
                cio.serialize_example({"c": "s", "a": 0.25, "b": cio.Feature(int64_list=[])})]


@settings(max_examples=200, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(rec=st.integers(0, 2), spec=st.integers(0, 1), batch=st.booleans(),
       flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), max_size=2),
       cut=st.one_of(st.none(), st.integers(0, 10**6)))
def test_fuzz_against_tensorflow(rec, spec, batch, flips, cut):
    data = bytearray(FUZZ_RECORDS[rec])
    for pos, x in flips:
        data[pos % len(data)] ^= x
    if cut is not None:
        data = data[:cut % (len(data) + 1)]
    compare(bytes(data), MAL_SPECS[spec], batch)


def test_result_keys_in_tensorflow_order():
    # sparse features sorted, then dense ones sorted, whatever the dict's order
    record = tf_example(b=[1], z=[2])
    spec = {"z": ("fixed", [], "int64", 0), "b": ("var", None, "int64", None),
            "a": ("seq", [], "int64", None), "y": ("var", None, "int64", None)}
    spec_tf, spec_cv = {}, {}
    for k, (kind, shape, dt, dflt) in spec.items():
        for m, out in ((tf, spec_tf), (conveyor, spec_cv)):
            dtype = getattr(m, dt)
            out[k] = (m.io.FixedLenFeature(shape, dtype, default_value=dflt) if kind == "fixed"
                      else m.io.VarLenFeature(dtype) if kind == "var"
                      else m.io.FixedLenSequenceFeature(shape, dtype, allow_missing=True))
    want = list(tf.io.parse_single_example(record, spec_tf))
    assert want == ["b", "y", "a", "z"]
    assert list(cio.parse_single_example(record, spec_cv)) == want
    assert list(cio.parse_example([record], spec_cv)) == want
    ds = conveyor.data.Dataset.from_tensors(record).map(
        lambda s: cio.parse_single_example(s, spec_cv))
    assert list(ds.element_spec) == want
