"""interleave, flat_map and ignore_errors against real TensorFlow."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402

LENGTHS = [
    [6, 6, 6, 6, 6],
    [3, 0, 5, 1, 0, 0, 7, 2],
    [0, 0, 0],
    [9, 2, 0, 4, 4, 1, 8, 0, 3],
]


def tf_interleave(lengths, **kwargs):
    table = tf.constant(lengths, tf.int64)
    ds = tf.data.Dataset.range(len(lengths)).interleave(
        lambda i: tf.data.Dataset.range(tf.gather(table, i)).map(lambda k: (i, k)), **kwargs)
    return [(int(a), int(b)) for a, b in ds.as_numpy_iterator()]


def cv_interleave(lengths, **kwargs):
    ds = cv.data.Dataset.range(len(lengths)).interleave(
        lambda i: cv.data.Dataset.range(lengths[int(i)]).map(lambda k, i=i: (i, k)), **kwargs)
    return [(int(a), int(b)) for a, b in ds]


@pytest.mark.parametrize("lengths", LENGTHS, ids=lambda l: "-".join(map(str, l)))
@pytest.mark.parametrize("cycle_length", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("block_length", [1, 2, 5])
def test_interleave_order_equals_tf(lengths, cycle_length, block_length):
    kw = dict(cycle_length=cycle_length, block_length=block_length)
    expected = tf_interleave(lengths, **kw)
    assert cv_interleave(lengths, **kw) == expected
    workers = min(2, cycle_length)
    assert cv_interleave(lengths, num_parallel_calls=workers, **kw) == expected
    assert cv_interleave(lengths, num_parallel_calls=cv.data.AUTOTUNE, **kw) == expected
    # TensorFlow's own parallel deterministic interleave agrees too.
    assert tf_interleave(lengths, num_parallel_calls=workers, deterministic=True, **kw) == expected


def test_non_deterministic_same_multiset_as_tf():
    lengths = LENGTHS[3]
    kw = dict(cycle_length=3, block_length=2, num_parallel_calls=3, deterministic=False)
    assert sorted(cv_interleave(lengths, **kw)) == sorted(tf_interleave(lengths, **kw))


def test_docs_example_equals_tf():
    t = tf.data.Dataset.range(1, 6).interleave(lambda x: tf.data.Dataset.from_tensors(x).repeat(6),
                                               cycle_length=2, block_length=4)
    c = cv.data.Dataset.range(1, 6).interleave(lambda x: cv.data.Dataset.from_tensors(x).repeat(6),
                                               cycle_length=2, block_length=4)
    assert [int(v) for v in c] == [int(v) for v in t.as_numpy_iterator()]


def test_flat_map_equals_tf():
    t = tf.data.Dataset.range(5).flat_map(lambda x: tf.data.Dataset.range(x))
    c = cv.data.Dataset.range(5).flat_map(lambda x: cv.data.Dataset.range(int(x)))
    assert [int(v) for v in c] == [int(v) for v in t.as_numpy_iterator()]


def test_element_spec_and_cardinality_equal_tf():
    t = tf.data.Dataset.range(3).interleave(lambda x: tf.data.Dataset.from_tensors((x, "s")),
                                            cycle_length=2)
    c = cv.data.Dataset.range(3).interleave(lambda x: cv.data.Dataset.from_tensors((x, b"s")),
                                            cycle_length=2)
    assert [s.dtype.name for s in c.element_spec] == [s.dtype.name for s in t.element_spec]
    assert [s.shape.as_list() for s in c.element_spec] == [s.shape.as_list() for s in t.element_spec]
    assert int(c.cardinality()) == int(t.cardinality())


@pytest.mark.parametrize("kwargs", [{"cycle_length": 0}, {"cycle_length": 2, "block_length": 0},
                                    {"cycle_length": 1, "num_parallel_calls": 2}])
def test_bad_lengths_raise_like_tf(kwargs):
    with pytest.raises(tf.errors.InvalidArgumentError):
        list(tf.data.Dataset.range(2).interleave(lambda x: tf.data.Dataset.range(1), **kwargs))
    with pytest.raises(cv.errors.InvalidArgumentError):
        list(cv.data.Dataset.range(2).interleave(lambda x: cv.data.Dataset.range(1), **kwargs))


def test_ignore_errors_equals_tf():
    t = tf.data.Dataset.from_tensor_slices([1.0, 2.0, 0.0, 4.0]).map(
        lambda x: tf.debugging.check_numerics(1.0 / x, "inf")).ignore_errors()
    c = cv.data.Dataset.from_tensor_slices([1.0, 2.0, 0.0, 4.0]).map(
        lambda x: np.float32(1.0) / x if x != 0 else (_ for _ in ()).throw(
            cv.errors.InvalidArgumentError("inf"))).ignore_errors()
    assert [float(v) for v in c] == [float(v) for v in t.as_numpy_iterator()]
