"""Traced map functions: native programs, their Python twins, and the fallback."""
import sys
import warnings

import numpy as np
import pytest

import conveyor as tf
from conveyor.framework import tracing as _tracing
from conveyor.data import AUTOTUNE, Dataset

IMAGES = np.random.default_rng(0).integers(0, 256, (12, 9, 7, 3), dtype=np.uint8)


def augment(image, label):
    x = tf.cast(image, tf.float32) / 255.0
    x = x * 2.0 - 1.0 + tf.random.uniform([], -0.1, 0.1, seed=7)
    return {"image": tf.image.resize(x, [5, 4]), "label": tf.one_hot(label, 4)}


def pipeline(fn=augment, npc=None):
    ds = Dataset.from_tensor_slices((IMAGES, np.arange(12) % 4))
    return ds.map(fn, num_parallel_calls=npc)


def as_list(ds):
    return [{k: v.copy() for k, v in e.items()} if isinstance(e, dict) else e for e in ds]


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, dict):
            assert x.keys() == y.keys()
            for k in x:
                np.testing.assert_array_equal(x[k], y[k])
        else:
            np.testing.assert_array_equal(x, y)


@pytest.fixture(autouse=True)
def _seed():
    tf.random.set_seed(1234)
    yield
    tf.random.set_seed(None)
    tf.data.experimental.disable_debug_mode()


def test_conveyor_ops_compile_to_a_native_program():
    ds = pipeline()
    assert "mode=native" in repr(ds)
    spec = ds.element_spec
    assert spec["image"] == tf.TensorSpec([5, 4, 3], tf.float32)
    assert spec["label"] == tf.TensorSpec([4], tf.float32)


def test_traced_map_matches_its_eager_twin():
    out = as_list(pipeline())
    for i, e in enumerate(out):
        with _tracing.element_scope(_tracing.new_base_seed(), 0, i):
            expected = augment(IMAGES[i], np.int64(i % 4))
        np.testing.assert_array_equal(e["image"], expected["image"])
        np.testing.assert_array_equal(e["label"], expected["label"])


def test_parallel_and_sequential_give_identical_output():
    base = as_list(pipeline(npc=None))
    for npc in (1, 2, AUTOTUNE):
        assert_same(as_list(pipeline(npc=npc)), base)


def test_debug_mode_runs_python_with_the_same_output():
    native = as_list(pipeline(npc=AUTOTUNE))
    tf.data.experimental.enable_debug_mode()
    seen = []

    def spy(image, label):
        seen.append(type(image))
        return augment(image, label)
    ds = pipeline(spy, npc=AUTOTUNE)
    assert "debug mode" in repr(ds)
    assert_same(as_list(ds), native)
    assert all(t is np.ndarray for t in seen)


def test_random_values_differ_per_element_and_per_epoch_but_repeat_per_run():
    ds = Dataset.range(50).map(lambda x: tf.random.uniform([], seed=3), num_parallel_calls=4)
    first, second = [float(v) for v in ds], [float(v) for v in ds]
    assert len(set(first)) == 50 and first != second
    again = Dataset.range(50).map(lambda x: tf.random.uniform([], seed=3))
    assert [float(v) for v in again] == first  # same seed, same element: same values
    repeated = [float(v) for v in ds.repeat(2)]
    assert repeated[:50] != repeated[50:]  # a new map iterator per epoch: a new epoch key


def test_untraceable_function_warns_once_and_gives_numpy_results():
    def numpy_fn(x):
        return np.sqrt(x.astype(np.float64))

    with pytest.warns(_tracing.TracingWarning, match="runs in Python.*astype"):
        ds = Dataset.range(5).map(numpy_fn, num_parallel_calls=2)
    assert "mode=python" in repr(ds)
    assert [float(v) for v in ds] == [float(np.sqrt(i)) for i in range(5)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Dataset.range(5).map(numpy_fn)  # the same function: no second warning


def test_python_control_flow_falls_back():
    def branchy(x):
        return x * 2 if x > 2 else x

    with pytest.warns(_tracing.TracingWarning, match="control flow"):
        ds = Dataset.range(5).map(branchy)
    assert [int(v) for v in ds] == [0, 1, 2, 6, 8]


def test_tracing_warning_points_at_the_users_map_call():
    def branches(x):
        return x if x > 0 else -x

    with pytest.warns(_tracing.TracingWarning) as record:
        line = sys._getframe().f_lineno + 1
        Dataset.range(3).map(branches, num_parallel_calls=2)
    assert [(w.filename, w.lineno) for w in record] == [(__file__, line)]


def test_tracing_warning_of_a_function_traced_when_iterated_points_at_the_loop():
    def python_map(x):
        return np.int64(x) + 1  # NumPy on a traced value: Python

    def branches(x):
        return x if x > 1 else x + 10

    with pytest.warns(_tracing.TracingWarning):
        ds = Dataset.range(3).map(python_map)
    ds = ds.map(branches)  # its input spec is known once python_map has run: traced later
    with pytest.warns(_tracing.TracingWarning, match="branches") as record:
        line = sys._getframe().f_lineno + 1
        assert [int(v) for v in ds] == [11, 2, 3]
    assert [(w.filename, w.lineno) for w in record] == [(__file__, line)]


def test_numpy_function_is_python_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = Dataset.range(4).map(lambda x: tf.numpy_function(lambda v: v * 3, [x], tf.int64))
    assert "mode=python" in repr(ds)
    assert [int(v) for v in ds] == [0, 3, 6, 9]


def test_functions_without_conveyor_ops_stay_python():
    calls = []

    def count(x):
        calls.append(1)
        return x
    ds = Dataset.range(3).map(count)
    assert "mode=python" in repr(ds)
    assert [int(v) for v in ds] == [0, 1, 2] and len(calls) == 1 + 3  # traced once, then per element


def test_type_errors_raise_when_the_pipeline_is_built():
    images = Dataset.from_tensor_slices(np.full((2, 3, 3, 1), b"a", dtype=object))
    with pytest.raises(TypeError):
        images.map(lambda s: tf.image.resize(s, [2, 2]))
    with pytest.raises(TypeError, match="same dtype"):
        Dataset.range(3).map(lambda x: tf.add(x, tf.cast(x, tf.float32)))


def test_value_errors_inside_the_program_name_the_element_and_op():
    ds = Dataset.from_tensor_slices(np.array([1, 0, 2], np.int64))
    ds = ds.map(lambda x: tf.math.floordiv(10, x), num_parallel_calls=2)
    it = iter(ds)
    assert int(next(it)) == 10
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"element 1.*Elementwise.*by zero"):
        next(it)
    assert int(next(it)) == 5  # the map goes on after an element's error


def test_constants_and_passthrough_outputs():
    ds = Dataset.range(3).map(lambda x: (x, x + 1, 7, "tag"))
    assert "mode=native" in repr(ds)
    assert [(int(a), int(b), int(c), d) for a, b, c, d in ds] == [
        (0, 1, 7, b"tag"), (1, 2, 7, b"tag"), (2, 3, 7, b"tag")]


def test_operator_dtype_mix_follows_numpy_in_python():
    # TensorFlow would refuse int64 + float: code like this was written for NumPy.
    with pytest.warns(_tracing.TracingWarning, match="NumPy"):
        ds = Dataset.range(3).map(lambda x: x + 0.5)
    assert [float(v) for v in ds] == [0.5, 1.5, 2.5]


def test_traced_output_spec_keeps_unknown_dims():
    ds = Dataset.from_generator(lambda: iter([np.zeros((2, 3), np.float32)]),
                                output_signature=tf.TensorSpec([None, 3], tf.float32))
    mapped = ds.map(lambda x: tf.reshape(x * 2.0, [-1]))
    assert mapped.element_spec == tf.TensorSpec([None], tf.float32)
    assert [v.tolist() for v in mapped] == [[0.0] * 6]


def test_eager_ops_on_numpy():
    np.testing.assert_array_equal(tf.cast(np.array([1.7, -1.7]), tf.int32), [1, -1])
    np.testing.assert_array_equal(tf.reshape(np.arange(6), [3, -1]), np.arange(6).reshape(3, 2))
    np.testing.assert_array_equal(tf.one_hot([0, 2], 3), [[1, 0, 0], [0, 0, 1]])
    assert tf.add(np.int32(2), 3) == 5
    with pytest.raises(tf.errors.InvalidArgumentError, match="by zero"):
        tf.math.floordiv(np.array([1]), np.array([0]))


def test_parse_example_is_traced_and_matches_eager():
    records = [tf.io.serialize_example({"a": np.array([i, -i], np.int64), "b": b"x" * i,
                                        "v": np.arange(i + 1, dtype=np.float32)})
               for i in range(5)]
    feats = {"a": tf.io.FixedLenFeature([2], tf.int64), "b": tf.io.FixedLenFeature([], tf.string),
             "v": tf.io.VarLenFeature(tf.float32)}
    single = Dataset.from_tensor_slices(records).map(
        lambda s: tf.io.parse_single_example(s, feats), num_parallel_calls=2)
    assert "mode=native" in repr(single)
    assert single.element_spec["a"] == tf.TensorSpec([2], tf.int64)
    for rec, got in zip(records, single):
        want = tf.io.parse_single_example(rec, feats)
        np.testing.assert_array_equal(got["a"], want["a"])
        assert got["b"] == want["b"]
        for x, y in zip(got["v"], want["v"]):
            np.testing.assert_array_equal(x, y)
    batched = Dataset.from_tensor_slices(records).batch(2).map(
        lambda s: tf.io.parse_example(s, feats))
    assert batched.element_spec["a"] == tf.TensorSpec([None, 2], tf.int64)
    for i, got in enumerate(batched):
        want = tf.io.parse_example(records[2 * i:2 * i + 2], feats)
        np.testing.assert_array_equal(got["a"], want["a"])
        for x, y in zip(got["v"], want["v"]):
            np.testing.assert_array_equal(x, y)


def test_malformed_record_in_a_traced_parse_names_the_element():
    feats = {"a": tf.io.FixedLenFeature([], tf.int64)}
    good = tf.io.serialize_example({"a": np.int64(3)})
    ds = Dataset.from_tensor_slices([good, b"\x0a\x05junk", good]).map(
        lambda s: tf.io.parse_single_example(s, feats)["a"], num_parallel_calls=2)
    it = iter(ds)
    assert int(next(it)) == 3
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"element 1.*ParseExample"):
        next(it)
    assert int(next(it)) == 3


SLICES = [(0,), (-1,), (slice(None, None, -1),), (Ellipsis, slice(None, None, -1)),
          (slice(1, 4, 2), None, Ellipsis, 1), (-1, slice(3, 0, -2)), (Ellipsis, 0),
          (slice(10, 20),), (None,), (1, 2, 3, 2), (slice(-3, None), Ellipsis, slice(None, 1)),
          (slice(None), slice(5, None, -3))]


@pytest.mark.parametrize("key", SLICES, ids=[str(k) for k in SLICES])
@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int64, np.bool_])
def test_indexing_is_native_and_matches_numpy(key, dtype):
    x = (np.arange(2 * 5 * 4 * 3).reshape(2, 5, 4, 3) % 7).astype(dtype)
    ds = Dataset.from_tensors(x).map(lambda t: t[key])
    assert "mode=native" in repr(ds)
    got = next(iter(ds))
    np.testing.assert_array_equal(got, x[key])
    assert tuple(ds.element_spec.shape.as_list()) == x[key].shape
    unknown = Dataset.from_generator(lambda: iter([x]), output_signature=tf.TensorSpec(
        [None, None, 4, 3], tf.as_dtype(dtype))).map(lambda t: t[key])
    np.testing.assert_array_equal(next(iter(unknown)), x[key])


def test_index_out_of_range_at_run_time():
    ds = Dataset.from_generator(lambda: iter([np.zeros(3), np.zeros(1)]),
                                output_signature=tf.TensorSpec([None], tf.float64))
    it = iter(ds.map(lambda t: t[2] + 1.0))
    assert float(next(it)) == 1.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
        next(it)


def test_shape_stack_concat_expand_dims_clip():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    ds = Dataset.from_tensors(x).map(lambda t: (
        tf.shape(t), tf.shape(t)[-1], tf.stack([t[0], t[1]], axis=1), tf.concat([t, t], -1),
        tf.expand_dims(t, -1), tf.clip_by_value(t, 3.0, 10.0)))
    assert "mode=native" in repr(ds)
    s, last, st, cc, ed, cl = next(iter(ds))
    np.testing.assert_array_equal(s, [2, 3, 4])
    assert last == 4 and s.dtype == np.int32
    np.testing.assert_array_equal(st, np.stack([x[0], x[1]], 1))
    np.testing.assert_array_equal(cc, np.concatenate([x, x], -1))
    np.testing.assert_array_equal(ed, x[..., None])
    np.testing.assert_array_equal(cl, np.clip(x, 3, 10))
    np.testing.assert_array_equal(tf.stack([x[0], x[1]], axis=1), np.stack([x[0], x[1]], 1))


def test_pipeline_repr_shows_each_map_mode():
    ds = Dataset.range(3).map(lambda x: x * 2).map(lambda x: np.float32(x) if x else x)
    ds = ds.batch(2).prefetch(1)
    text = repr(ds)
    assert "Dataset.map(<lambda>): native" in text and "Dataset.map(<lambda>): python" in text
    assert text.index("native") < text.index("python")  # source first
