"""Dataset.filter: kept elements, calling convention, predicate results, errors,
cardinality, lifetimes."""
import collections
import gc
import threading

import numpy as np
import pytest

import conveyor as cv

pytestmark = pytest.mark.filterwarnings("ignore:.*runs in Python per element")  # on purpose

Dataset = cv.data.Dataset
Point = collections.namedtuple("Point", ["x", "y"])


def values(ds):
    return [int(v) for v in ds]


def test_keeps_elements_where_predicate_is_true():
    assert values(Dataset.range(10).filter(lambda x: x % 3 == 0)) == [0, 3, 6, 9]
    assert values(Dataset.range(5).filter(lambda x: False)) == []
    assert values(Dataset.range(0).filter(lambda x: True)) == []


@pytest.mark.parametrize("verdict", [True, np.bool_(True), np.array(True)])
def test_scalar_bool_forms(verdict):
    assert values(Dataset.range(3).filter(lambda x: verdict)) == [0, 1, 2]


def test_calling_convention_is_maps():
    ds = Dataset.from_tensor_slices((np.arange(4), np.array([b"a", b"bb", b"c", b"dd"])))
    assert [(int(a), b) for a, b in ds.filter(lambda a, b: len(b) == 2)] == [(1, b"bb"), (3, b"dd")]
    ds = Dataset.from_tensor_slices({"a": np.arange(4), "b": np.arange(4.0)})
    assert [int(d["a"]) for d in ds.filter(lambda d: d["b"] > 1)] == [2, 3]
    ds = Dataset.from_tensor_slices(Point(np.arange(4), np.arange(4) * 2))
    out = list(ds.filter(lambda p: p.y == 4))
    assert len(out) == 1 and type(out[0]) is Point and out[0].x == 2
    # A nested tuple is unpacked at the top level only.
    ds = Dataset.from_tensor_slices(((np.arange(3), np.arange(3)), np.arange(3)))
    assert len(list(ds.filter(lambda pair, z: pair[0] + z > 1))) == 2


def test_element_spec_and_structure_are_the_inputs():
    ds = Dataset.from_tensor_slices({"s": np.array([b"x", b"yy"]), "v": np.zeros((2, 3))})
    f = ds.filter(lambda d: True)
    assert f.element_spec == ds.element_spec
    out = list(f)
    assert out[1]["s"] == b"yy" and out[1]["v"].shape == (3,)


def test_strings():
    ds = Dataset.from_tensor_slices(np.array([b"a", b"", b"ccc", b"dd"]))
    assert list(ds.filter(lambda s: len(s) > 1)) == [b"ccc", b"dd"]


@pytest.mark.parametrize("result, what", [
    (1, "int32"), (np.array([True]), "rank 1"), ((True, True), "2 component"), ("yes", "string")])
def test_non_scalar_bool_results_raise_invalid_argument(result, what):
    it = iter(Dataset.range(3).filter(lambda x: result))
    with pytest.raises(cv.errors.InvalidArgumentError, match="filter") as info:
        next(it)
    assert what in str(info.value) or "scalar bool" in str(info.value)
    with pytest.raises(cv.errors.InvalidArgumentError):  # every element, and iteration goes on
        next(it)


def test_changing_result_dtype_is_reported_for_the_predicate():
    it = iter(Dataset.range(3).filter(lambda x: True if x == 0 else 1))
    assert next(it) == 0
    with pytest.raises(cv.errors.InvalidArgumentError, match="predicate"):
        next(it)


def test_not_callable():
    with pytest.raises(ValueError, match="callable"):
        Dataset.range(3).filter(None)


def test_exception_in_predicate_is_reraised_and_iteration_goes_on():
    def pred(x):
        if x == 2:
            raise KeyError("boom")
        return x % 2 == 0
    it = iter(Dataset.range(6).filter(pred))
    assert next(it) == 0
    with pytest.raises(KeyError, match="boom") as info:
        next(it)
    assert any("Dataset.filter" in n for n in getattr(info.value, "__notes__", []))
    assert [int(v) for v in it] == [4]


def test_error_in_input_passes_through():
    def fn(x):
        if x == 1:
            raise ValueError("bad input")
        return x
    it = iter(Dataset.range(4).map(fn).filter(lambda x: True))
    assert next(it) == 0
    with pytest.raises(ValueError, match="bad input"):
        next(it)
    assert [int(v) for v in it] == [2, 3]


def test_cardinality_is_unknown():
    assert Dataset.range(5).filter(lambda x: True).cardinality() == cv.data.UNKNOWN_CARDINALITY
    assert Dataset.range(5).repeat().filter(lambda x: True).cardinality() == -2
    with pytest.raises(TypeError):
        len(Dataset.range(5).filter(lambda x: True))


def test_infinite_input_and_take():
    assert values(Dataset.range(3).repeat().filter(lambda x: x == 2).take(4)) == [2, 2, 2, 2]


def test_parallel_pipeline_around_filter_equals_sequential():
    seq = Dataset.range(200).map(lambda x: x * 3).filter(lambda x: x % 2 == 0).batch(7)
    par = (Dataset.range(200).map(lambda x: x * 3, num_parallel_calls=3)
           .filter(lambda x: x % 2 == 0).prefetch(2).batch(7, num_parallel_calls=2))
    assert [b.tolist() for b in seq] == [b.tolist() for b in par]


def test_repeated_iteration_and_concurrent_iterators():
    ds = Dataset.range(50).filter(lambda x: x % 5 == 0)
    assert values(ds) == values(ds) == list(range(0, 50, 5))
    results = []
    threads = [threading.Thread(target=lambda: results.append(values(ds))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [list(range(0, 50, 5))] * 3


def test_partially_consumed_iterators_are_released():
    gc.collect()
    ds = (Dataset.range(1000).map(lambda x: x + 1, num_parallel_calls=2)
          .filter(lambda x: x % 2 == 0).prefetch(3))
    for _ in range(3):
        it = iter(ds)
        assert next(it) == 2
        del it
    gc.collect()
    assert cv._engine.live_iterators() == 0


def test_predicate_gets_each_input_elements_position():
    """The engine passes (epoch, index) to a predicate that asks for it (per-element
    random seeds): the index counts input elements, kept or not; each iterator is
    a new epoch."""
    from conveyor import _engine
    seen = []

    def pred(epoch, index, x):
        seen.append((epoch, index, int(x)))
        return np.bool_(x % 2 == 0)
    ds = _engine.filter(Dataset.range(5)._engine(Dataset.range(5)._context()), pred,
                        lambda r: [np.asarray(r)], "Dataset.filter", True)
    assert [int(v) for v in ds.make_iterator(lambda: (0, None))] == [0, 2, 4]
    assert [int(v) for v in ds.make_iterator(lambda: (0, None))] == [0, 2, 4]
    assert [(i, x) for _, i, x in seen] == [(i, i) for i in range(5)] * 2
    assert len({e for e, _, _ in seen[:5]}) == 1 and seen[0][0] != seen[5][0]


def test_traceable_predicate_runs_native():
    ds = Dataset.range(20).filter(lambda x: x % 3 == 0)
    assert "mode=native" in repr(ds)
    assert values(ds) == list(range(0, 20, 3))
    d = Dataset.from_tensor_slices({"a": np.arange(5), "b": np.arange(5.0)}).filter(
        lambda e: e["b"] > 2.0)
    assert "mode=native" in repr(d) and [int(e["a"]) for e in d] == [3, 4]


def test_traced_predicate_of_wrong_type_raises_when_built():
    with pytest.raises(ValueError, match="scalar"):
        Dataset.range(3).filter(lambda x: x % 2)  # int64, as tf.data says at trace time


def test_native_python_and_debug_predicates_agree_with_random_ops():
    def pred(x):
        return cv.random.uniform([], seed=7) < 0.5
    cv.random.set_seed(1)
    native = Dataset.range(200).filter(pred)
    assert "mode=native" in repr(native)
    first, second = values(native), values(native)
    assert 60 < len(first) < 140 and first != second  # each pass draws anew
    cv.data.experimental.enable_debug_mode()
    try:
        cv.random.set_seed(1)
        debug = Dataset.range(200).filter(pred)
    finally:
        cv.data.experimental.disable_debug_mode()
    assert "mode=python" in repr(debug)
    assert values(debug) == first
