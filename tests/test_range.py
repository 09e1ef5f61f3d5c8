"""Dataset.range: Python range semantics, int64 default, output_type."""
import numpy as np
import pytest

import conveyor as tf

Dataset = tf.data.Dataset


@pytest.mark.parametrize("args", [(5,), (2, 5), (1, 5, 2), (1, 5, -2), (5, 1), (5, 1, -2), (0,),
                                  (-3,), (-5, 5, 3), (10, -10, -7), (3, 3), (0, 100, 1000),
                                  (-1, -10, -1)])
def test_python_range_semantics(args):
    ds = Dataset.range(*args)
    out = list(ds.as_numpy_iterator())
    assert out == list(range(*args))
    assert all(type(v) is np.int64 for v in out)
    assert ds.cardinality() == len(range(*args))


def test_default_dtype_int64():
    assert Dataset.range(3).element_spec == tf.TensorSpec([], tf.int64)


@pytest.mark.parametrize("dtype,np_type", [(tf.float32, np.float32), (tf.float64, np.float64),
                                           (tf.int32, np.int32), (tf.int8, np.int8),
                                           (tf.uint16, np.uint16)])
def test_output_type(dtype, np_type):
    ds = Dataset.range(1, 5, 2, output_type=dtype)
    assert ds.element_spec == tf.TensorSpec([], dtype)
    out = list(ds.as_numpy_iterator())
    assert out == [1, 3]
    assert all(type(v) is np_type for v in out)


def test_numpy_integer_args():
    assert list(Dataset.range(np.int64(2), np.int32(6), np.int16(2))) == [2, 4]


def test_large_bounds():
    big = 2 ** 62
    assert list(Dataset.range(big, big + 3)) == [big, big + 1, big + 2]
    ds = Dataset.range(-2 ** 63, 2 ** 63 - 2, 2 ** 62)
    assert list(ds) == list(range(-2 ** 63, 2 ** 63 - 2, 2 ** 62))
    assert ds.cardinality() == 4


def test_large_range_cardinality_without_iterating():
    assert Dataset.range(10 ** 15).cardinality() == 10 ** 15


def test_take_from_huge_range():
    assert list(Dataset.range(10 ** 15).take(3)) == [0, 1, 2]


def test_iterators_independent():
    ds = Dataset.range(4)
    a, b = iter(ds), iter(ds)
    assert next(a) == 0 and next(a) == 1
    assert list(b) == [0, 1, 2, 3]
    assert list(a) == [2, 3]


def test_end_is_sticky():
    it = iter(Dataset.range(2))
    assert list(it) == [0, 1]
    for _ in range(3):
        with pytest.raises(StopIteration):
            next(it)


def test_step_zero_is_invalid_argument():
    with pytest.raises(tf.errors.InvalidArgumentError, match="step must be a non-zero integer"):
        Dataset.range(0, 5, 0)


def test_step_zero_is_also_value_error():
    with pytest.raises(ValueError, match="step must be a non-zero"):
        Dataset.range(0, 5, 0)


def test_no_args():
    with pytest.raises(ValueError, match="between 1 and 3"):
        Dataset.range()


def test_too_many_args():
    with pytest.raises(ValueError, match="between 1 and 3"):
        Dataset.range(1, 2, 3, 4)


@pytest.mark.parametrize("bad", [1.5, "3", None])
def test_non_integer_args(bad):
    with pytest.raises(TypeError, match="must be integers"):
        Dataset.range(bad)


def test_string_output_type_rejected():
    with pytest.raises(TypeError, match="output_type"):
        Dataset.range(3, output_type=tf.string)


def test_cardinality_beyond_int64_is_unknown_not_negative():
    assert Dataset.range(-2**62, 2**62 + 5).cardinality() == tf.data.UNKNOWN_CARDINALITY
    assert Dataset.range(-2**63, 2**63 - 2).cardinality() == tf.data.UNKNOWN_CARDINALITY
    assert Dataset.range(0, 2**63 - 2).cardinality() == 2**63 - 2


def test_stop_at_int64_max_is_infinite_as_in_tf():
    """tf.data reports a range up to int64 max as infinite (enumerate() relies on it)."""
    assert Dataset.range(0, 2**63 - 1).cardinality() == tf.data.INFINITE_CARDINALITY
    assert Dataset.range(-5, 2**63 - 1, 3).cardinality() == tf.data.INFINITE_CARDINALITY
