"""element_spec, cardinality, len, TensorSpec / TensorShape basics."""
import numpy as np
import pytest

import conveyor as tf

Dataset = tf.data.Dataset
Spec, Shape = tf.TensorSpec, tf.TensorShape
INF, UNK = tf.data.INFINITE_CARDINALITY, tf.data.UNKNOWN_CARDINALITY


def test_constants():
    assert tf.data.AUTOTUNE == -1
    assert INF == -1 and UNK == -2


def test_tensor_shape_basics():
    s = Shape([2, None, 3])
    assert s.rank == 3 and s.ndims == 3
    assert s.as_list() == [2, None, 3]
    assert not s.is_fully_defined()
    assert Shape([2, 3]).is_fully_defined()
    assert s[0] == 2 and s[1] is None
    assert s[1:] == Shape([None, 3])
    assert len(s) == 3 and list(s) == [2, None, 3]
    assert s == [2, None, 3]
    assert s.is_compatible_with([2, 5, 3])
    assert not s.is_compatible_with([2, 5])
    assert not s.is_compatible_with([1, 5, 3])
    assert Shape([]).rank == 0
    assert Shape(()).as_list() == []


def test_tensor_shape_unknown_rank():
    s = Shape(None)
    assert s.rank is None
    assert s.is_compatible_with([1, 2, 3])
    with pytest.raises(ValueError):
        s.as_list()


def test_tensor_shape_concatenate():
    assert Shape([None]).concatenate([2, 3]) == Shape([None, 2, 3])


def test_tensor_shape_str():
    assert str(Shape([3])) == "(3,)"
    assert str(Shape([2, None])) == "(2, None)"
    assert str(Shape([])) == "()"


def test_tensor_shape_negative_rejected():
    with pytest.raises(ValueError, match="non-negative"):
        Shape([2, -3])


def test_tensor_spec_basics():
    s = Spec([2, None], tf.float32, name="x")
    assert s.shape == Shape([2, None])
    assert s.dtype == tf.float32
    assert s.name == "x"
    assert s == Spec([2, None], tf.float32, name="x")
    assert s != Spec([2, None], tf.float32)
    assert Spec([2, None], tf.float32).is_compatible_with(Spec([2, 7], tf.float32))
    assert not Spec([2], tf.float32).is_compatible_with(Spec([2], tf.int32))
    assert hash(Spec([1], tf.int64)) == hash(Spec([1], tf.int64))


def test_tensor_spec_default_dtype_float32():
    assert Spec([]).dtype == tf.float32


def test_tensor_spec_accepts_numpy_dtypes_and_names():
    assert Spec([], np.int64).dtype == tf.int64
    assert Spec([], "int32").dtype == tf.int32
    assert Spec([], np.float64).dtype == tf.float64


def test_dtype_api():
    assert tf.int64.as_numpy_dtype is np.int64
    assert tf.float32.is_floating and not tf.float32.is_integer
    assert tf.uint8.is_integer
    assert tf.bool.is_bool
    assert tf.as_dtype("float64") == tf.float64 == tf.double
    assert tf.as_dtype(np.dtype("int16")) == tf.int16
    assert tf.as_dtype(str) == tf.string
    with pytest.raises(TypeError):
        tf.as_dtype(np.complex64)


@pytest.mark.parametrize("ds,spec", [
    (lambda: Dataset.range(3), Spec([], tf.int64)),
    (lambda: Dataset.from_tensor_slices([1, 2]), Spec([], tf.int32)),
    (lambda: Dataset.from_tensor_slices([1.0, 2.0]), Spec([], tf.float32)),
    (lambda: Dataset.from_tensor_slices(np.zeros((3, 4), np.float64)), Spec([4], tf.float64)),
    (lambda: Dataset.from_tensor_slices(["a", "b"]), Spec([], tf.string)),
    (lambda: Dataset.from_tensors([[1, 2]]), Spec([1, 2], tf.int32)),
    (lambda: Dataset.from_tensors("s"), Spec([], tf.string)),
    (lambda: Dataset.range(5).batch(2), Spec([None], tf.int64)),
    (lambda: Dataset.range(5).batch(2, drop_remainder=True), Spec([2], tf.int64)),
    (lambda: Dataset.range(5).batch(2).batch(3), Spec([None, None], tf.int64)),
    (lambda: Dataset.range(5).batch(2, True).batch(3, True), Spec([3, 2], tf.int64)),
    (lambda: Dataset.range(5).take(2).skip(1).repeat(3).prefetch(1), Spec([], tf.int64)),
    (lambda: Dataset.range(5).map(lambda x: np.float32(x)), Spec([], tf.float32)),
])
def test_element_spec(ds, spec):
    assert ds().element_spec == spec


def test_structured_element_spec():
    ds = Dataset.from_tensor_slices({"a": np.zeros((3, 2), np.uint8), "b": ([1, 2, 3], [b"x", b"y", b"z"])})
    assert ds.element_spec == {"a": Spec([2], tf.uint8), "b": (Spec([], tf.int32), Spec([], tf.string))}
    assert ds.batch(2).element_spec == {"a": Spec([None, 2], tf.uint8),
                                        "b": (Spec([None], tf.int32), Spec([None], tf.string))}


def test_generator_element_spec_is_signature():
    sig = (Spec([None, 3], tf.float32), {"k": Spec([], tf.string)})
    ds = Dataset.from_generator(lambda: iter([]), output_signature=sig)
    assert ds.element_spec == sig


@pytest.mark.parametrize("make,expected", [
    (lambda: Dataset.range(10), 10),
    (lambda: Dataset.range(0), 0),
    (lambda: Dataset.from_tensors(1), 1),
    (lambda: Dataset.range(10).batch(3), 4),
    (lambda: Dataset.range(10).batch(3, drop_remainder=True), 3),
    (lambda: Dataset.range(10).take(4), 4),
    (lambda: Dataset.range(10).skip(4), 6),
    (lambda: Dataset.range(10).skip(40), 0),
    (lambda: Dataset.range(10).skip(-1), 0),
    (lambda: Dataset.range(10).take(-1), 10),
    (lambda: Dataset.range(10).repeat(3), 30),
    (lambda: Dataset.range(10).repeat(0), 0),
    (lambda: Dataset.range(10).repeat(), INF),
    (lambda: Dataset.range(10).repeat().take(5), 5),
    (lambda: Dataset.range(10).repeat().batch(2), INF),
    (lambda: Dataset.range(10).map(lambda x: x), 10),
    (lambda: Dataset.range(10).prefetch(2), 10),
    (lambda: Dataset.from_generator(lambda: iter([]), output_signature=Spec([], tf.int64)), UNK),
    (lambda: Dataset.from_generator(lambda: iter([]), output_signature=Spec([], tf.int64)).map(
        lambda x: x, num_parallel_calls=2), UNK),
])
def test_cardinality(make, expected):
    ds = make()
    c = ds.cardinality()
    assert c == expected
    assert int(c.numpy()) == expected  # TF returns a tensor: .numpy() must work


def test_len():
    assert len(Dataset.range(7).batch(2)) == 4


def test_len_infinite_raises_type_error():
    with pytest.raises(TypeError, match="infinite"):
        len(Dataset.range(3).repeat())


def test_len_unknown_raises_type_error():
    ds = Dataset.from_generator(lambda: iter([]), output_signature=Spec([], tf.int64))
    with pytest.raises(TypeError, match="unknown"):
        len(ds)


def test_dataset_truthy_even_if_empty_or_unknown():
    assert bool(Dataset.range(0))
    assert bool(Dataset.range(3).repeat())


def test_element_spec_matches_actual_outputs():
    ds = Dataset.from_tensor_slices((np.zeros((4, 2, 3), np.float32), np.arange(4, dtype=np.uint16)))
    ds = ds.map(lambda a, b: (a.sum(axis=0), b)).batch(3)
    spec = ds.element_spec
    for a, b in ds:
        assert spec[0].shape.is_compatible_with(a.shape) and a.dtype == spec[0].dtype.as_numpy_dtype
        assert spec[1].shape.is_compatible_with(b.shape) and b.dtype == spec[1].dtype.as_numpy_dtype
