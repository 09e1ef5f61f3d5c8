"""tf.train.Example parsing and building without TensorFlow (conveyor.io)."""
import numpy as np
import pytest

import conveyor
from conveyor import errors
from conveyor.io import (Feature, FixedLenFeature, FixedLenSequenceFeature, SparseTensor,
                         VarLenFeature, parse_example, parse_single_example, serialize_example)

F32, I64, STR = conveyor.float32, conveyor.int64, conveyor.string


def ex(**kw):
    return serialize_example(kw)


def test_roundtrip_all_dtypes_single():
    s = ex(f=[1.5, -2.0], i=[1, -2, 2**62], b=[b"x", "é"], scalar=3)
    out = parse_single_example(s, {
        "f": FixedLenFeature([2], F32), "i": FixedLenFeature([3], I64),
        "b": FixedLenFeature([2], STR), "scalar": FixedLenFeature([], I64)})
    np.testing.assert_array_equal(out["f"], np.array([1.5, -2.0], np.float32))
    assert out["f"].dtype == np.float32
    np.testing.assert_array_equal(out["i"], [1, -2, 2**62])
    assert out["i"].dtype == np.int64
    assert out["b"].tolist() == [b"x", "é".encode()]
    assert out["scalar"] == 3 and out["scalar"].dtype == np.int64


def test_multi_dim_shape_and_defaults():
    s = ex(m=list(range(6)))
    out = parse_single_example(s, {
        "m": FixedLenFeature([2, 3], I64),
        "d": FixedLenFeature([2, 2], F32, default_value=[[1, 2], [3, 4]]),
        "ds": FixedLenFeature([], STR, default_value="none")})
    assert out["m"].shape == (2, 3) and out["m"][1, 2] == 5
    np.testing.assert_array_equal(out["d"], [[1, 2], [3, 4]])
    assert out["ds"] == b"none"


def test_varlen_single_and_batched():
    s1, s2, s3 = ex(v=[1.0, 2.0]), ex(other=1), ex(v=[3.0])
    one = parse_single_example(s1, {"v": VarLenFeature(F32)})["v"]
    assert isinstance(one, SparseTensor)
    assert one.indices.tolist() == [[0], [1]] and one.dense_shape.tolist() == [2]
    b = parse_example([s1, s2, s3], {"v": VarLenFeature(F32)})["v"]
    assert b.indices.tolist() == [[0, 0], [0, 1], [2, 0]]
    assert b.values.tolist() == [1.0, 2.0, 3.0] and b.dense_shape.tolist() == [3, 2]
    np.testing.assert_array_equal(b.to_dense(), [[1, 2], [0, 0], [3, 0]])


def test_sequence_feature_padding():
    spec = {"s": FixedLenSequenceFeature([2], F32, allow_missing=True, default_value=-1.0)}
    out = parse_example([ex(s=[1.0, 2.0, 3.0, 4.0]), ex(x=1), ex(s=[5.0, 6.0])], spec)["s"]
    assert out.shape == (3, 2, 2)
    np.testing.assert_array_equal(out[1], [[-1, -1], [-1, -1]])
    np.testing.assert_array_equal(out[2], [[5, 6], [-1, -1]])
    single = parse_single_example(ex(x=1), spec)["s"]
    assert single.shape == (0, 2)
    strs = parse_example([ex(s=[b"a", b"b"]), ex(x=1)],
                         {"s": FixedLenSequenceFeature([], STR, allow_missing=True)})["s"]
    assert strs.tolist() == [[b"a", b"b"], [b"", b""]]


def test_empty_batch_shapes():
    out = parse_example([], {"a": FixedLenFeature([2], F32, [1.0, 2.0]), "v": VarLenFeature(I64),
                             "s": FixedLenSequenceFeature([2], F32, allow_missing=True)})
    assert out["a"].shape == (0, 2)
    assert out["v"].indices.shape == (0, 2) and out["v"].dense_shape.tolist() == [0, 0]
    assert out["s"].shape == (0, 0, 2)


def test_serialized_forms():
    s = ex(a=[1])
    spec = {"a": FixedLenFeature([], I64)}
    for form in (s, np.bytes_(s), np.array(s, dtype=object), np.array(s)):
        assert parse_single_example(form, spec)["a"] == 1
    assert parse_example(np.array([s, s], dtype=object), spec)["a"].tolist() == [1, 1]
    assert parse_example(s, spec)["a"] == 1


def test_error_texts():
    spec = {"age": FixedLenFeature([2], F32)}
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"^Feature: age \(data type: float\) is required but could not be found\.$"):
        parse_single_example(ex(x=1), spec)
    with pytest.raises(errors.InvalidArgumentError, match=r"^Name: <unknown>, Key: age, Index: 1\.  "
                       r"Number of float values != expected\.  Values size: 3 but output shape: \[2\]$"):
        parse_example([ex(age=[1.0, 2.0]), ex(age=[1.0, 2.0, 3.0])], spec)
    with pytest.raises(errors.InvalidArgumentError, match=r"^Name: <unknown>, Key: age, Index: 0\.  "
                       r"Data types don't match\. Data type: int64 but expected type: float$"):
        parse_example([ex(age=[1, 2])], spec)
    with pytest.raises(errors.InvalidArgumentError, match=r"^Name: second, Feature: age"):
        parse_example([ex(age=[1.0, 2.0]), ex(x=1)], spec, example_names=["first", "second"])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"^Could not parse example input, value: 'hello'$"):
        parse_single_example(b"hello", spec)
    with pytest.raises(ValueError):  # InvalidArgumentError is a ValueError
        parse_single_example(b"\xff\x00", spec)


def test_config_validation():
    s = ex(a=1)
    with pytest.raises(errors.InvalidArgumentError, match="Invalid config dtype: int32"):
        parse_single_example(s, {"a": FixedLenFeature([], conveyor.int32)})
    with pytest.raises(errors.InvalidArgumentError, match="sparse_types"):
        parse_single_example(s, {"a": VarLenFeature(conveyor.bool)})
    with pytest.raises(errors.InvalidArgumentError, match="Input to reshape is a tensor with 3 values"):
        parse_single_example(s, {"a": FixedLenFeature([2], F32, default_value=[1.0, 2.0, 3.0])})
    with pytest.raises(ValueError, match="features cannot be empty"):
        parse_single_example(s, {})
    with pytest.raises(ValueError, match="requires allow_missing"):
        parse_single_example(s, {"a": FixedLenSequenceFeature([], I64)})
    with pytest.raises(ValueError, match="need to be known"):
        parse_single_example(s, {"a": FixedLenFeature([None], I64)})
    with pytest.raises(ValueError, match="zero-sized"):  # TensorFlow dies of SIGFPE here
        parse_single_example(s, {"a": FixedLenSequenceFeature([0], I64, allow_missing=True)})
    with pytest.raises(TypeError):
        parse_single_example(s, {"a": FixedLenFeature([], I64, default_value="x")})
    with pytest.raises(TypeError):
        parse_single_example(123, {"a": FixedLenFeature([], I64)})


def test_zero_sized_fixed_len():
    out = parse_single_example(serialize_example({"a": Feature(float_list=[])}),
                               {"a": FixedLenFeature([0], F32)})
    assert out["a"].shape == (0,)


def test_serialize_example_kinds():
    s = serialize_example({"b": True, "n": np.arange(3, dtype=np.uint8), "f": np.float64(0.5),
                           "e": Feature(int64_list=[]), "x": Feature(bytes_list="one")})
    out = parse_single_example(s, {"b": FixedLenFeature([], I64), "n": VarLenFeature(I64),
                                   "f": FixedLenFeature([], F32), "e": VarLenFeature(I64),
                                   "x": FixedLenFeature([], STR)})
    assert out["b"] == 1 and out["n"].values.tolist() == [0, 1, 2] and out["f"] == 0.5
    assert out["e"].values.size == 0 and out["x"] == b"one"
    with pytest.raises(ValueError, match="empty"):
        serialize_example({"a": []})
    with pytest.raises(ValueError, match="int64 range"):
        serialize_example({"a": 2**63})
    with pytest.raises(ValueError):
        Feature(int64_list=[1], float_list=[1.0])
    assert serialize_example({}) == b""


def test_pipeline_map_batch():
    records = [ex(label=i, x=[float(i), float(i) + 0.5]) for i in range(10)]
    spec = {"label": FixedLenFeature([], I64), "x": FixedLenFeature([2], F32)}
    ds = conveyor.data.Dataset.from_tensor_slices(records).map(
        lambda s: parse_single_example(s, spec)).batch(4)
    batches = list(ds)
    assert [b["label"].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0]["x"].shape == (4, 2) and batches[0]["x"].dtype == np.float32


def test_pipeline_parallel_map_parse_example():
    records = [ex(v=Feature(int64_list=list(range(i % 3))), y=[b"r%d" % i]) for i in range(40)]
    spec = {"v": VarLenFeature(I64), "y": FixedLenFeature([], STR)}
    ds = conveyor.data.Dataset.from_tensor_slices(records).batch(8).map(
        lambda s: parse_example(s, spec), num_parallel_calls=4)
    got = list(ds)
    assert len(got) == 5
    assert got[0]["y"].tolist() == [b"r%d" % i for i in range(8)]
    assert got[0]["v"].dense_shape.tolist() == [8, 2]


def test_large_batch_releases_gil_and_matches():
    records = [ex(a=[i, i + 1], s=[b"x" * (i % 7)]) for i in range(3000)]
    out = parse_example(records, {"a": FixedLenFeature([2], I64), "s": VarLenFeature(STR)})
    assert out["a"][2999].tolist() == [2999, 3000]
    assert out["s"].values[6] == b"x" * 6
