"""Dataset.map: argument unpacking, return conversion, parallelism, exceptions."""
import collections
import threading
import traceback
import warnings

import numpy as np
import pytest

import conveyor as tf

Dataset = tf.data.Dataset
AUTOTUNE = tf.data.AUTOTUNE
PARALLEL = [None, 1, 2, 4, AUTOTUNE]


@pytest.mark.parametrize("npc", PARALLEL)
def test_simple_map(npc):
    out = list(Dataset.range(50).map(lambda x: x * 3, num_parallel_calls=npc).as_numpy_iterator())
    assert out == [3 * i for i in range(50)]
    assert all(type(v) is np.int64 for v in out)


def test_function_gets_numpy_values():
    seen = []

    def f(x):
        seen.append(type(x))
        return x
    list(Dataset.range(2).map(f))
    # Traced once on a placeholder; it calls no conveyor op, so it then runs in
    # Python, per element, on NumPy values.
    assert seen[0] is tf.Tensor and len(seen) == 3, seen
    assert all(issubclass(t, (np.generic, np.ndarray)) for t in seen[1:]), seen


def test_tuple_element_unpacked():
    ds = Dataset.from_tensor_slices(([1, 2], [10, 20]))
    assert list(ds.map(lambda a, b: a + b)) == [11, 22]


def test_dict_element_passed_whole():
    ds = Dataset.from_tensor_slices({"a": [1, 2], "b": [10, 20]})
    assert list(ds.map(lambda d: d["a"] * d["b"])) == [10, 40]


def test_namedtuple_passed_whole():
    P = collections.namedtuple("P", "x y")
    ds = Dataset.from_tensor_slices(P(np.array([1, 2]), np.array([3, 4])))
    seen = []

    def f(p):
        seen.append(type(p))
        return p.x - p.y
    assert list(ds.map(f)) == [-2, -2]
    assert seen and all(t is P for t in seen)


def test_nested_tuple_unpacked_top_level_only():
    ds = Dataset.from_tensor_slices(((np.array([1, 2]), np.array([3, 4])), np.array([5, 6])))
    assert list(ds.map(lambda ab, c: ab[0] + ab[1] + c)) == [9, 12]


def test_return_tuple_gives_tuple_element():
    ds = Dataset.range(3).map(lambda x: (x, x * 2))
    assert list(ds) == [(0, 0), (1, 2), (2, 4)]
    assert ds.element_spec == (tf.TensorSpec([], tf.int64), tf.TensorSpec([], tf.int64))


def test_return_list_becomes_tuple():
    ds = Dataset.range(2).map(lambda x: [x, x + 1])
    out = list(ds)
    assert out == [(0, 1), (1, 2)]
    assert all(type(e) is tuple for e in out)


def test_return_dict():
    out = list(Dataset.range(2).map(lambda x: {"v": x, "sq": x * x}))
    assert out == [{"v": 0, "sq": 0}, {"v": 1, "sq": 1}]


def test_return_python_scalars_converted():
    ds = Dataset.range(2).map(lambda x: (37.0, 5, True, "s"))
    assert ds.element_spec == (tf.TensorSpec([], tf.float32), tf.TensorSpec([], tf.int32),
                               tf.TensorSpec([], tf.bool), tf.TensorSpec([], tf.string))
    out = list(ds.as_numpy_iterator())
    assert out[0] == (37.0, 5, True, b"s")
    assert [type(v) for v in out[0]] == [np.float32, np.int32, np.bool_, bytes]


def test_return_numpy_float64_kept():
    ds = Dataset.range(2).map(lambda x: np.full((2,), x, np.float64))
    assert ds.element_spec == tf.TensorSpec([None], tf.float64)  # Python fn: dims unknown
    out = list(ds)
    assert out[1].dtype == np.float64
    np.testing.assert_array_equal(out[1], [1.0, 1.0])


def test_list_inside_tuple_is_a_tensor():
    ds = Dataset.range(2).map(lambda x: (x, [42, 16]))
    assert ds.element_spec[1] == tf.TensorSpec([None], tf.int32)  # Python fn: dims unknown
    out = list(ds)
    np.testing.assert_array_equal(out[0][1], [42, 16])


def test_chained_maps():
    ds = Dataset.range(10).map(lambda x: x + 1).map(lambda x: x * 2, num_parallel_calls=2)
    assert list(ds) == [(i + 1) * 2 for i in range(10)]


def test_map_over_batches():
    ds = Dataset.range(6).batch(4).map(lambda b: b.sum())
    assert list(ds) == [6, 9]


def test_map_cardinality_preserved():
    assert Dataset.range(17).map(lambda x: x).cardinality() == 17
    assert Dataset.range(3).repeat().map(lambda x: x).cardinality() == tf.data.INFINITE_CARDINALITY


def test_map_element_spec_without_full_iteration():
    calls = []

    def f(x):
        calls.append(int(x))
        return x
    ds = Dataset.range(100).map(f)
    assert ds.element_spec == tf.TensorSpec([], tf.int64)
    assert len(calls) <= 1


def test_map_element_spec_of_empty_input_raises_clearly():
    ds = Dataset.range(0).map(lambda x: int(x) * 2)  # Python: its output is known once run
    with pytest.raises(ValueError, match="element_spec"):
        ds.element_spec  # noqa: B018
    assert list(ds) == []


def test_a_function_rearranging_its_inputs_has_their_exact_specs():
    # no op: it runs in Python (side effects happen per element), but its
    # results are its inputs, so their specs are known as TensorFlow knows them
    value = {"image": np.zeros((4, 8, 3), np.uint8), "label": np.arange(4),
             "name": np.array([b"a", b"b", b"c", b"d"])}
    ds = Dataset.from_tensor_slices(value)
    pairs = ds.map(lambda d: (d["image"], d["label"]))
    assert pairs.element_spec == (tf.TensorSpec([8, 3], tf.uint8), tf.TensorSpec([], tf.int64))
    assert ds.batch(3).map(lambda d: [d["name"], d["image"]]).element_spec == (
        tf.TensorSpec([None], tf.string), tf.TensorSpec([None, 8, 3], tf.uint8))
    assert Dataset.range(0).map(lambda x: x).element_spec == tf.TensorSpec([], tf.int64)
    assert [int(b) for _, b in pairs] == [0, 1, 2, 3]


@pytest.mark.parametrize("npc", [2, 4, AUTOTUNE])
def test_parallel_calls_actually_overlap(npc):
    # with >=2 workers, two calls must be able to run at the same time
    barrier = threading.Barrier(2, timeout=10)

    def f(x):
        if x < 2:
            barrier.wait()
        return x
    out = list(Dataset.range(8).map(f, num_parallel_calls=npc))
    assert out == list(range(8))


def test_deterministic_without_parallelism_warns():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        Dataset.range(3).map(lambda x: x, deterministic=True)
    assert any("deterministic" in str(x.message) for x in w)


def test_inconsistent_return_dtype_is_invalid_argument():
    def f(x):
        return np.int32(x) if x == 0 else np.float64(x)
    it = iter(Dataset.range(3).map(f))
    assert next(it) == 0
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype"):
        next(it)


def test_inconsistent_return_structure_is_invalid_argument():
    def f(x):
        return (x, x) if x == 0 else x
    it = iter(Dataset.range(3).map(f))
    assert next(it) == (0, 0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="structure"):
        next(it)


# -- exceptions inside the map function ------------------------------------------

class Boom(Exception):
    pass


def raise_at(k, exc=Boom):
    def fn(x):
        if x == k:
            raise exc(f"bad element {int(x)}")
        return x * 10
    return fn


@pytest.mark.parametrize("npc", PARALLEL)
def test_exception_keeps_original_type_and_message(npc):
    it = iter(Dataset.range(5).map(raise_at(2), num_parallel_calls=npc))
    assert next(it) == 0 and next(it) == 10
    with pytest.raises(Boom, match="bad element 2"):
        next(it)


@pytest.mark.parametrize("npc", PARALLEL)
def test_exception_note_names_stage(npc):
    it = iter(Dataset.range(3).map(raise_at(0), num_parallel_calls=npc))
    with pytest.raises(Boom) as info:
        next(it)
    notes = getattr(info.value, "__notes__", None)
    assert notes, "expected a PEP 678 note"
    assert any("Dataset.map" in n for n in notes), notes


@pytest.mark.parametrize("npc", PARALLEL)
def test_exception_traceback_points_into_user_function(npc):
    def my_failing_map_fn(x):
        if x == 1:
            {}["missing"]
        return x
    it = iter(Dataset.range(3).map(my_failing_map_fn, num_parallel_calls=npc))
    next(it)
    with pytest.raises(KeyError) as info:
        next(it)
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "my_failing_map_fn" in frames, frames


@pytest.mark.parametrize("npc", PARALLEL)
def test_iteration_continues_after_exception(npc):
    it = iter(Dataset.range(6).map(raise_at(3), num_parallel_calls=npc))
    out = []
    while True:
        try:
            out.append(int(next(it)))
        except Boom:
            out.append("err")
        except StopIteration:
            break
    assert out == [0, 10, 20, "err", 40, 50]


@pytest.mark.parametrize("exc", [ValueError, TypeError, ZeroDivisionError, KeyError, IndexError,
                                 RuntimeError])
def test_builtin_exception_types_preserved(exc):
    with pytest.raises(exc):
        list(Dataset.range(3).map(raise_at(1, exc), num_parallel_calls=2))


def test_stop_iteration_inside_map_is_not_end_of_sequence():
    def f(x):
        if x == 1:
            raise StopIteration
        return x
    ds = Dataset.range(4).map(f)
    with pytest.raises(Exception) as info:
        list(ds)  # must not silently return [0]
    assert not isinstance(info.value, StopIteration)


def test_stop_iteration_inside_map_does_not_end_iterator():
    def f(x):
        if x == 1:
            raise StopIteration
        return x
    it = iter(Dataset.range(4).map(f))
    assert next(it) == 0
    with pytest.raises(BaseException):
        next(it)
    assert list(it) == [2, 3]


def test_exception_after_map_in_batch():
    it = iter(Dataset.range(6).map(raise_at(4)).batch(2))
    assert next(it).tolist() == [0, 10]
    assert next(it).tolist() == [20, 30]
    with pytest.raises(Boom, match="bad element 4"):
        next(it)


def test_exception_through_prefetch():
    it = iter(Dataset.range(4).map(raise_at(1), num_parallel_calls=2).prefetch(2))
    assert next(it) == 0
    with pytest.raises(Boom):
        next(it)
    assert list(it) == [20, 30]


def test_end_is_sticky_after_map():
    it = iter(Dataset.range(2).map(lambda x: x, num_parallel_calls=4))
    assert list(it) == [0, 1]
    for _ in range(3):
        with pytest.raises(StopIteration):
            next(it)


def test_map_that_releases_and_reacquires_gil_heavy():
    ds = Dataset.range(200).map(lambda x: np.arange(64, dtype=np.float64).sum() + x,
                                num_parallel_calls=4)
    assert list(ds) == [2016.0 + i for i in range(200)]
