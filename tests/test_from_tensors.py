"""Dataset.from_tensors: a single element equal to the whole structure."""
import collections

import numpy as np
import pytest

import conveyor as tf
from _isolated import assert_isolated_ok

Dataset = tf.data.Dataset



def test_list_becomes_one_int32_tensor():
    out = list(Dataset.from_tensors([1, 2, 3]))
    assert len(out) == 1
    assert isinstance(out[0], np.ndarray) and out[0].dtype == np.int32
    np.testing.assert_array_equal(out[0], [1, 2, 3])


def test_scalar_allowed():
    ds = Dataset.from_tensors(7)
    assert ds.element_spec == tf.TensorSpec([], tf.int32)
    out = list(ds.as_numpy_iterator())
    assert out == [7] and type(out[0]) is np.int32


def test_python_float_scalar():
    out = list(Dataset.from_tensors(1.25).as_numpy_iterator())
    assert out == [1.25] and type(out[0]) is np.float32


def test_string_scalar_is_bytes():
    out = list(Dataset.from_tensors("A").as_numpy_iterator())
    assert out == [b"A"] and type(out[0]) is bytes


def test_tuple_with_string():
    out = list(Dataset.from_tensors((np.arange(3), b"A")))
    assert len(out) == 1
    arr, s = out[0]
    np.testing.assert_array_equal(arr, [0, 1, 2])
    assert s == b"A"


def test_string_vector_is_object_array_of_bytes():
    assert_isolated_ok("""
        out = list(tf.data.Dataset.from_tensors(["a", "b"]))
        assert len(out) == 1
        assert out[0].dtype == object and out[0].shape == (2,)
        assert list(out[0]) == [b"a", b"b"]
    """)


def test_dict_and_namedtuple():
    Pair = collections.namedtuple("Pair", "a b")
    out = list(Dataset.from_tensors({"p": Pair(1, 2.0), "q": np.zeros((2, 2))}))
    assert len(out) == 1
    assert type(out[0]["p"]) is Pair
    assert out[0]["p"] == Pair(1, 2.0)
    assert out[0]["q"].shape == (2, 2)


def test_element_spec_full_shape():
    ds = Dataset.from_tensors(np.zeros((2, 3, 4), np.float16))
    assert ds.element_spec == tf.TensorSpec([2, 3, 4], tf.float16)


def test_empty_array_component():
    out = list(Dataset.from_tensors(np.zeros((0, 3), np.int64)))
    assert len(out) == 1 and out[0].shape == (0, 3)


def test_cardinality_one():
    ds = Dataset.from_tensors([1, 2])
    assert ds.cardinality() == 1
    assert len(ds) == 1


def test_repeat_gives_equal_copies():
    out = list(Dataset.from_tensors(np.arange(3)).repeat(3))
    assert len(out) == 3
    for a in out:
        np.testing.assert_array_equal(a, [0, 1, 2])


def test_end_is_sticky():
    it = iter(Dataset.from_tensors(1))
    next(it)
    for _ in range(3):
        with pytest.raises(StopIteration):
            next(it)


def test_empty_structure_rejected():
    with pytest.raises(ValueError, match="should not be empty"):
        Dataset.from_tensors(())


def test_unsupported_dtype():
    with pytest.raises(TypeError, match="complex"):
        Dataset.from_tensors(np.zeros(2, np.complex64))


def test_ragged_list_rejected():
    with pytest.raises(ValueError, match="non-rectangular"):
        Dataset.from_tensors([[1], [2, 3]])
