"""tf.constant, fill, zeros, ones, zeros_like, ones_like: eager values, and
constants inside traced map functions, against TensorFlow where installed."""
import numpy as np
import pytest

import conveyor as cv
from conveyor import errors

CASES = [
    ("constant", lambda t: t.constant([1, 2, 3])),
    ("constant_scalar_int", lambda t: t.constant(5)),
    ("constant_big_int", lambda t: t.constant(2 ** 40)),
    ("constant_float", lambda t: t.constant(1.5)),
    ("constant_nested", lambda t: t.constant([[1.0, 2.0], [3.0, 4.0]])),
    ("constant_dtype", lambda t: t.constant([1, 2], dtype=t.float64)),
    ("constant_shape_fill", lambda t: t.constant(0, shape=[2, 3])),
    ("constant_shape_reshape", lambda t: t.constant([1, 2, 3, 4], shape=[2, 2])),
    ("constant_string", lambda t: t.constant("abc")),
    ("constant_strings", lambda t: t.constant([b"a", b"bc"])),
    ("constant_numpy", lambda t: t.constant(np.arange(4, dtype=np.uint8))),
    ("constant_bool", lambda t: t.constant([True, False])),
    ("fill", lambda t: t.fill([2, 3], 9)),
    ("fill_float", lambda t: t.fill([1], 0.5)),
    ("zeros", lambda t: t.zeros([2, 2])),
    ("zeros_int", lambda t: t.zeros(3, t.int32)),
    ("ones", lambda t: t.ones((1, 2), t.int64)),
    ("zeros_like", lambda t: t.zeros_like(np.ones((2, 3), np.int32))),
    ("ones_like", lambda t: t.ones_like([[1.0, 2.0]])),
    ("ones_like_dtype", lambda t: t.ones_like(np.zeros(2, np.float64), dtype=t.int32)),
]


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_eager_values_have_numpy(name, make):
    x = make(cv)
    assert isinstance(x, cv.EagerTensor if hasattr(cv, "EagerTensor") else np.ndarray)
    value = x.numpy()
    assert np.asarray(value).shape == x.shape


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_equal_to_tensorflow(tf, name, make):
    ours, theirs = make(cv).numpy(), make(tf).numpy()
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_constant_shape_mismatch_is_a_type_error():
    with pytest.raises(TypeError, match="unsupported shape"):
        cv.constant([1, 2, 3], shape=[2, 2])


def test_fill_needs_a_scalar():
    with pytest.raises(ValueError):
        cv.fill([2], [1, 2])


def test_constants_in_a_map_are_traced():
    ds = cv.data.Dataset.range(3).map(
        lambda x: (x + cv.constant(10, cv.int64), cv.fill([2], 1.5), cv.zeros_like(x), cv.constant("s")))
    assert ds._function.mode == "native"
    assert [tuple(np.asarray(v).tolist() for v in e) for e in ds.as_numpy_iterator()] == [
        (10, [1.5, 1.5], 0, b"s"), (11, [1.5, 1.5], 0, b"s"), (12, [1.5, 1.5], 0, b"s")]


def test_a_map_of_constants_captures_the_loop_variable_at_map():
    parts = [cv.data.Dataset.range(2).map(lambda x: (x, cv.constant(i, cv.int64))) for i in range(3)]
    assert [[int(e[1]) for e in p.as_numpy_iterator()] for p in parts] == [[0, 0], [1, 1], [2, 2]]
    parts = [cv.data.Dataset.range(2).map(lambda x: (x, cv.cast(i, cv.int64))) for i in range(3)]
    assert [[int(e[1]) for e in p.as_numpy_iterator()] for p in parts] == [[0, 0], [1, 1], [2, 2]]


def test_a_traced_shape_stays_native():
    """fill of tf.shape(x): the sizes are read per element (tests/test_tf_dynamic_shapes.py)."""
    ds = cv.data.Dataset.from_tensor_slices(np.arange(6).reshape(3, 2)).map(
        lambda x: cv.fill(cv.shape(x), 7))
    assert ds._function.mode == "native"
    assert [e.tolist() for e in ds.as_numpy_iterator()] == [[7, 7]] * 3
    assert ds.element_spec.dtype == cv.int32


def test_constant_copies_its_value():
    a = np.arange(3)
    c = cv.constant(a)
    a[0] = 99
    assert c.numpy().tolist() == [0, 1, 2]


@pytest.mark.parametrize("value", [(1.0, 2.0), ((1, 2), (3, 4)), (1, 2 ** 40), ("a", b"b"),
                                   (True, False), ([1, 2], (3, 4))])
def test_a_tuple_is_a_sequence_as_in_tensorflow(tf, value):
    """tf.constant and broadcast_to take a tuple as TensorFlow does: a sequence, not a structure."""
    ours, theirs = cv.constant(value), tf.constant(value)
    assert ours.dtype.name == theirs.dtype.name and ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(cv.broadcast_to((1, 2), [3, 2]).numpy(),
                                  tf.broadcast_to((1, 2), [3, 2]).numpy())
