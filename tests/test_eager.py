"""Plain iteration yields EagerTensor (NumPy arrays with numpy(), as TF's eager
tensors); as_numpy_iterator() yields plain NumPy; py_function gets EagerTensor."""
import pickle

import numpy as np

import conveyor as tf
from conveyor import EagerTensor


def test_plain_iteration_yields_eager_tensors():
    x = next(iter(tf.data.Dataset.range(3)))
    assert type(x) is EagerTensor and x.shape == () and x.dtype == np.int64
    assert type(x.numpy()) is np.int64 and x.numpy() == 0
    s = next(iter(tf.data.Dataset.from_tensors(b"abc")))
    assert type(s) is EagerTensor and s.numpy() == b"abc" and type(s.numpy()) is bytes
    assert s == b"abc"
    a = next(iter(tf.data.Dataset.from_tensors(np.arange(6, dtype=np.float32).reshape(2, 3))))
    assert type(a) is EagerTensor and a.shape == (2, 3) and a.shape.as_list() == [2, 3]
    assert type(a.numpy()) is np.ndarray and np.shares_memory(a, a.numpy())
    strings = next(iter(tf.data.Dataset.from_tensors(np.array([b"a", b"b"], dtype=object))))
    assert type(strings) is EagerTensor and strings.numpy().tolist() == [b"a", b"b"]


def test_structures_and_zero_copy():
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    ds = tf.data.Dataset.from_tensor_slices({"x": data, "y": np.arange(4)}).batch(2)
    el = next(iter(ds))
    assert type(el["x"]) is EagerTensor and type(el["y"]) is EagerTensor
    np.testing.assert_array_equal(el["x"].numpy(), data[:2])
    # the array is a view of the engine's buffer, as plain NumPy output is
    assert el["x"].base is not None and el["x"].numpy().base is el["x"]


def test_as_numpy_iterator_yields_plain_numpy():
    assert [type(v) for v in tf.data.Dataset.range(2).as_numpy_iterator()] == [np.int64] * 2
    assert list(tf.data.Dataset.from_tensor_slices([b"a"]).as_numpy_iterator()) == [b"a"]
    a = next(tf.data.Dataset.from_tensors(np.ones(3)).as_numpy_iterator())
    assert type(a) is np.ndarray


def test_scalars_hash_compare_and_convert():
    xs = list(tf.data.Dataset.range(3))
    assert sorted(set(xs)) == [0, 1, 2] and {xs[1]: "one"}[1] == "one"
    assert int(xs[2]) == 2 and float(xs[2]) == 2.0 and list(range(xs[2])) == [0, 1]
    assert f"{xs[2]:03d}" == "002"
    s = next(iter(tf.data.Dataset.from_tensors(b"k")))
    assert s in {b"k"} and hash(s) == hash(b"k")


def test_pickle_gives_plain_numpy():
    x, s, a = next(iter(tf.data.Dataset.from_tensors((np.int32(5), b"z", np.ones(2)))))
    assert type(pickle.loads(pickle.dumps(x))) is np.int32
    assert pickle.loads(pickle.dumps(s)) == b"z"
    assert type(pickle.loads(pickle.dumps(a))) is np.ndarray


def test_eager_elements_feed_back_in():
    el = next(iter(tf.data.Dataset.from_tensors((np.arange(3), b"q"))))
    back = list(tf.data.Dataset.from_tensors(el).as_numpy_iterator())
    np.testing.assert_array_equal(back[0][0], np.arange(3))
    assert back[0][1] == b"q"


def test_py_function_gets_eager_tensors():
    seen = []

    def f(x, s):
        seen.append((type(x), type(s)))
        return x.numpy() * 2, s.numpy().upper()

    ds = tf.data.Dataset.from_tensor_slices((np.arange(2), [b"a", b"b"])).map(
        lambda x, s: tf.py_function(f, [x, s], [tf.int64, tf.string]))
    assert [(int(a), b) for a, b in ds.as_numpy_iterator()] == [(0, b"A"), (2, b"B")]
    assert set(seen) == {(EagerTensor, EagerTensor)}


def test_numpy_function_keeps_plain_numpy():
    def f(x):
        assert type(x) is np.ndarray
        return x + 1

    ds = tf.data.Dataset.from_tensors(np.arange(3)).map(
        lambda x: tf.numpy_function(f, [x], tf.int64))
    np.testing.assert_array_equal(next(ds.as_numpy_iterator()), [1, 2, 3])


def test_scalar_strings_from_iteration_build_string_tensors():
    names = list(tf.data.Dataset.from_tensor_slices([b"a", b"bb"]))
    assert list(tf.data.Dataset.from_tensor_slices(names).as_numpy_iterator()) == [b"a", b"bb"]
    as_objects = np.array(names, dtype=object)  # an object array of 0-d EagerTensors

    def gen():
        yield as_objects
    ds = tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec([None], tf.string))
    assert next(ds.as_numpy_iterator()).tolist() == [b"a", b"bb"]
