"""Dataset.from_tensor_slices: slicing along dim 0, structure, dtypes (no TensorFlow needed)."""
import collections

import numpy as np
import pytest

import conveyor as tf
from _isolated import assert_isolated_ok

Dataset = tf.data.Dataset



def test_python_list_int32():
    out = list(Dataset.from_tensor_slices([1, 2, 3]).as_numpy_iterator())
    assert out == [1, 2, 3]
    for v in out:
        assert isinstance(v, np.int32), type(v)


def test_python_float_list_float32():
    out = list(Dataset.from_tensor_slices([1.5, 2.5]).as_numpy_iterator())
    assert [type(v) for v in out] == [np.float32, np.float32]
    assert out == [1.5, 2.5]


def test_python_bool_list():
    out = list(Dataset.from_tensor_slices([True, False]).as_numpy_iterator())
    assert [type(v) for v in out] == [np.bool_, np.bool_]
    assert [bool(v) for v in out] == [True, False]


def test_python_int_beyond_int32_is_int64():
    out = list(Dataset.from_tensor_slices([1, 2 ** 40]).as_numpy_iterator())
    assert [type(v) for v in out] == [np.int64, np.int64]
    assert out[1] == 2 ** 40


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                   np.uint32, np.uint64, np.float16, np.float32, np.float64,
                                   np.bool_])
def test_numpy_dtype_kept(dtype):
    src = np.arange(6).reshape(3, 2).astype(dtype)
    ds = Dataset.from_tensor_slices(src)
    assert ds.element_spec == tf.TensorSpec([2], tf.as_dtype(dtype))
    out = list(ds)
    assert len(out) == 3
    for i, row in enumerate(out):
        assert isinstance(row, np.ndarray)
        assert row.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(row, src[i])


def test_rank3_slices():
    src = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    ds = Dataset.from_tensor_slices(src)
    assert ds.element_spec.shape == tf.TensorShape([3, 4])
    out = list(ds)
    assert len(out) == 2
    np.testing.assert_array_equal(out[0], src[0])
    np.testing.assert_array_equal(out[1], src[1])


def test_tuple_structure():
    out = list(Dataset.from_tensor_slices(([1, 2], [3, 4], [5, 6])))
    assert out == [(1, 3, 5), (2, 4, 6)]
    assert all(type(e) is tuple for e in out)


def test_dict_structure():
    out = list(Dataset.from_tensor_slices({"a": [1, 2], "b": [3, 4]}))
    assert out == [{"a": 1, "b": 3}, {"a": 2, "b": 4}]
    assert all(type(e) is dict for e in out)


def test_namedtuple_structure():
    Point = collections.namedtuple("Point", ["x", "y"])
    out = list(Dataset.from_tensor_slices(Point(np.array([1, 2]), np.array([3.0, 4.0]))))
    assert out == [Point(1, 3.0), Point(2, 4.0)]
    assert all(type(e) is Point for e in out)


def test_nested_structure():
    src = {"img": np.zeros((3, 2, 2), np.uint8), "meta": (np.arange(3), np.arange(3) * 1.5)}
    ds = Dataset.from_tensor_slices(src)
    assert ds.element_spec == {"img": tf.TensorSpec([2, 2], tf.uint8),
                               "meta": (tf.TensorSpec([], tf.int64), tf.TensorSpec([], tf.float64))}
    out = list(ds)
    assert len(out) == 3
    assert out[2]["meta"] == (2, 3.0)
    assert out[1]["img"].shape == (2, 2)


def test_list_is_a_tensor_not_structure():
    # a Python list of lists is ONE rank-2 tensor, sliced into rows
    out = list(Dataset.from_tensor_slices([[1, 2], [3, 4], [5, 6]]))
    assert len(out) == 3
    np.testing.assert_array_equal(out[2], [5, 6])
    assert out[0].dtype == np.int32


def test_empty_leading_dim_gives_empty_dataset():
    ds = Dataset.from_tensor_slices(np.zeros((0, 3), np.float32))
    assert list(ds) == []
    assert ds.cardinality() == 0
    assert ds.element_spec == tf.TensorSpec([3], tf.float32)


def test_string_scalar_slices_are_bytes():
    out = list(Dataset.from_tensor_slices(["A", "B", "A"]).as_numpy_iterator())
    assert out == [b"A", b"B", b"A"]
    assert all(type(v) is bytes for v in out)


def test_bytes_and_unicode_utf8():
    out = list(Dataset.from_tensor_slices(["héllo", b"\x00\xff"]))
    assert out == ["héllo".encode("utf-8"), b"\x00\xff"]


def test_numpy_unicode_array_slices():
    out = list(Dataset.from_tensor_slices(np.array(["ab", "c"])))
    assert out == [b"ab", b"c"]


def test_string_rank2_slices_are_object_arrays_of_bytes():
    assert_isolated_ok("""
        ds = tf.data.Dataset.from_tensor_slices([["a", "b"], ["c", "d"]])
        out = list(ds)
        assert len(out) == 2
        assert out[0].dtype == object and out[0].shape == (2,)
        assert list(out[1]) == [b"c", b"d"]  # scalar string tensors, equal to the bytes
        assert all(type(v) is bytes for v in out[0].tolist())
    """)


def test_each_iterator_restarts():
    ds = Dataset.from_tensor_slices(np.arange(4))
    it1 = iter(ds)
    assert next(it1) == 0 and next(it1) == 1
    it2 = iter(ds)
    assert list(it2) == [0, 1, 2, 3]
    assert list(it1) == [2, 3]


def test_source_copied_at_creation():
    src = np.arange(4)
    ds = Dataset.from_tensor_slices(src)
    src[:] = 100
    assert list(ds) == [0, 1, 2, 3]


def test_non_contiguous_source():
    src = np.arange(20).reshape(4, 5)[:, ::2]
    out = list(Dataset.from_tensor_slices(src))
    for i, row in enumerate(out):
        np.testing.assert_array_equal(row, src[i])
    src_t = np.arange(12).reshape(3, 4).T  # Fortran-ordered view
    out = list(Dataset.from_tensor_slices(src_t))
    assert len(out) == 4
    for i, row in enumerate(out):
        np.testing.assert_array_equal(row, src_t[i])


def test_end_is_sticky():
    it = iter(Dataset.from_tensor_slices([1]))
    assert next(it) == 1
    for _ in range(3):
        with pytest.raises(StopIteration):
            next(it)


def test_cardinality_and_len():
    ds = Dataset.from_tensor_slices(np.zeros((7, 2)))
    assert ds.cardinality() == 7
    assert len(ds) == 7


# -- errors -------------------------------------------------------------------

def test_empty_tuple_rejected():
    with pytest.raises(ValueError, match="should not be empty"):
        Dataset.from_tensor_slices(())


def test_empty_dict_rejected():
    with pytest.raises(ValueError, match="should not be empty"):
        Dataset.from_tensor_slices({})


def test_scalar_component_rejected():
    with pytest.raises(ValueError, match="rank >= 1"):
        Dataset.from_tensor_slices(5)


def test_scalar_inside_structure_rejected():
    with pytest.raises(ValueError, match="rank >= 1"):
        Dataset.from_tensor_slices(([1, 2], 3))


def test_mismatched_leading_dims_names_components_and_sizes():
    with pytest.raises(ValueError) as info:
        Dataset.from_tensor_slices(([1, 2], [1, 2, 3]))
    msg = str(info.value)
    assert "[0]" in msg and "[1]" in msg
    assert "2" in msg and "3" in msg


def test_mismatched_leading_dims_dict_names_keys():
    with pytest.raises(ValueError, match=r"'a'.*2.*'b'.*1|'b'.*1.*'a'.*2"):
        Dataset.from_tensor_slices({"a": [1, 2], "b": [1]})


def test_non_rectangular_list():
    with pytest.raises(ValueError, match="non-rectangular"):
        Dataset.from_tensor_slices([[1, 2], [3]])


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_unsupported_dtype(dtype):
    with pytest.raises(TypeError, match="complex"):
        Dataset.from_tensor_slices(np.zeros(3, dtype))


def test_unconvertible_object():
    with pytest.raises(TypeError):
        Dataset.from_tensor_slices(object())
