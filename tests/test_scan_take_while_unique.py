"""Dataset.scan, take_while and unique (and their tf.data.experimental
spellings): against TensorFlow where it is installed, traced and in Python,
with exact resume and the errors tf.data gives."""
import numpy as np
import pytest

import conveyor as cv
from conveyor import errors
from checkpoint_helpers import verify_resume


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


def _values(ds, n=None):
    if n is not None:
        ds = ds.take(n)
    return [[np.asarray(leaf).tolist() for leaf in cv.nest.flatten(x)]
            for x in ds.as_numpy_iterator()]


def _specs(ds):
    return [(tuple(s.shape.as_list()) if s.shape.rank is not None else None, s.dtype.name)
            for s in cv.nest.flatten(ds.element_spec)]


# -- scan ------------------------------------------------------------------------------

SCANS = [
    ("running_sum", lambda t: t.data.Dataset.range(10).scan(
        t.constant(0, dtype=t.int64), lambda s, x: (s + x, s + x))),
    ("python_int_state", lambda t: t.data.Dataset.range(6).scan(
        0, lambda s, x: (s + 1, t.cast(x, t.int32) * s))),
    ("tuple_state", lambda t: t.data.Dataset.range(8).scan(
        (t.constant(0, t.int64), t.constant(1.0)),
        lambda s, x: ((s[0] + x, s[1] * 2.0), (s[0], s[1])))),
    ("dict_output", lambda t: t.data.Dataset.range(5).scan(
        t.constant(10, t.int64), lambda s, x: (s - x, {"a": s, "b": x}))),
    ("tuple_element", lambda t: t.data.Dataset.from_tensor_slices(
        (np.arange(6, dtype=np.int64), np.arange(6, dtype=np.float32) / 2)).scan(
        t.constant(0.0), lambda s, e: (s + e[1], (e[0], s)))),
    ("growing_state", lambda t: t.data.Dataset.range(5).scan(
        np.zeros([0], np.int64), lambda s, x: (t.concat([s, t.expand_dims(x, 0)], 0), s))),
    ("experimental", lambda t: t.data.Dataset.range(7).apply(t.data.experimental.scan(
        t.constant(1, t.int64), lambda s, x: (s * 2, s + x)))),
]


@pytest.mark.parametrize("name,make", SCANS, ids=[c[0] for c in SCANS])
def test_scan_matches_tensorflow(tf, name, make):
    ours, theirs = make(cv), make(tf)
    assert _values(ours) == _values(theirs)
    assert _specs(ours) == _specs(theirs)
    assert int(ours.cardinality()) == int(theirs.cardinality())


@pytest.mark.parametrize("name,make", SCANS, ids=[c[0] for c in SCANS])
def test_scan_runs_natively(name, make):
    assert "Dataset.scan(<lambda>): native" in repr(make(cv))


def test_scan_in_python_gives_the_native_results():
    native = cv.data.Dataset.range(9).scan(cv.constant(3, cv.int64), lambda s, x: (s + x, s * x))
    python = cv.data.Dataset.range(9).scan(
        np.int64(3), lambda s, x: (np.int64(s + x), np.int64(s * x)))
    assert "python" in repr(python)
    assert _values(native) == _values(python)


def test_each_iteration_starts_from_the_initial_state():
    ds = cv.data.Dataset.range(4).scan(cv.constant(0, cv.int64), lambda s, x: (s + x, s))
    assert _values(ds) == _values(ds) == [[0], [0], [1], [3]]
    assert _values(ds.repeat(2)) == [[0], [0], [1], [3]] * 2


def test_scan_resumes_with_its_state():
    verify_resume(lambda: cv.data.Dataset.range(12).scan(
        (cv.constant(0, cv.int64), cv.constant(1, cv.int64)),
        lambda s, x: ((s[1], s[0] + s[1]), s[0] * x)))


def test_scan_resumes_a_python_function():
    verify_resume(lambda: cv.data.Dataset.range(7).scan(
        np.float64(0.5), lambda s, x: (s * 1.5, float(s) + int(x))), breaks=[0, 3, 7])


@pytest.mark.parametrize("fn,message", [
    (lambda s, x: s + x, "must return a pair"),
    (lambda s, x: ((s, s), x), "element classes for the new state"),
    (lambda s, x: (cv.cast(s, cv.float32), x), "element types for the new state"),
])
def test_scan_function_errors(fn, message):
    with pytest.raises(TypeError, match=message):
        cv.data.Dataset.range(3).scan(cv.constant(0, cv.int64), fn)


def test_scan_error_in_the_function_names_the_stage_and_goes_on():
    def step(s, x):
        if x == 2:
            raise KeyError("boom")
        return s + 1, x * 10
    it = iter(cv.data.Dataset.range(4).scan(np.int64(0), step))
    assert [int(next(it)), int(next(it))] == [0, 10]
    with pytest.raises(KeyError, match="boom") as info:
        next(it)
    assert "Dataset.scan" in str(info.value.__notes__)
    assert int(next(it)) == 30


# -- take_while ------------------------------------------------------------------------

TAKE_WHILES = [
    ("docstring", lambda t: t.data.Dataset.range(10).take_while(lambda x: x < 5)),
    ("never_true", lambda t: t.data.Dataset.range(10).take_while(lambda x: x > 5)),
    ("always_true", lambda t: t.data.Dataset.range(4).take_while(lambda x: x >= 0)),
    ("tuple", lambda t: t.data.Dataset.from_tensor_slices(
        (np.arange(8), np.arange(8) * 1.5)).take_while(lambda a, b: b < 6.0)),
    ("infinite_input", lambda t: t.data.Dataset.range(3).repeat().take_while(
        lambda x: x < 2)),
    ("experimental", lambda t: t.data.Dataset.range(9).apply(
        t.data.experimental.take_while(lambda x: x * x < 20))),
]


@pytest.mark.parametrize("name,make", TAKE_WHILES, ids=[c[0] for c in TAKE_WHILES])
def test_take_while_matches_tensorflow(tf, name, make):
    ours, theirs = make(cv), make(tf)
    assert _values(ours) == _values(theirs)
    assert _specs(ours) == _specs(theirs)
    assert int(ours.cardinality()) == int(theirs.cardinality())
    assert "mode=native" in repr(ours)


def test_take_while_stops_reading_its_input():
    seen = []

    def gen():
        for i in range(100):
            seen.append(i)
            yield i
    ds = cv.data.Dataset.from_generator(gen, output_types=cv.int64).take_while(lambda x: x < 3)
    assert _values(ds) == [[0], [1], [2]]
    assert seen == [0, 1, 2, 3]


def test_take_while_resumes():
    verify_resume(lambda: cv.data.Dataset.range(10).take_while(lambda x: x < 6))


def test_take_while_python_predicate_and_bad_result():
    ds = cv.data.Dataset.range(10).take_while(lambda x: bool(np.asarray(x) < 4))
    assert _values(ds) == [[0], [1], [2], [3]]
    bad = cv.data.Dataset.range(3).take_while(lambda x: np.int64(1))
    with pytest.raises(errors.InvalidArgumentError, match="Dataset.take_while: the predicate"):
        next(iter(bad))
    with pytest.raises(ValueError, match="callable"):
        cv.data.Dataset.range(3).take_while(3)


# -- unique ----------------------------------------------------------------------------

UNIQUES = [
    ("ints", lambda t: t.data.Dataset.from_tensor_slices([1, 37, 2, 37, 2, 1]).unique()),
    ("int64", lambda t: t.data.Dataset.range(10).map(lambda x: x % 4).unique()),
    ("strings", lambda t: t.data.Dataset.from_tensor_slices(["b", "a", "b", "", "a\x00", ""])
     .unique()),
    ("vectors", lambda t: t.data.Dataset.from_tensor_slices(
        np.array([[1, 2], [3, 4], [1, 2], [2, 1]], np.int64)).unique()),
    ("experimental", lambda t: t.data.Dataset.from_tensor_slices([5, 5, 6]).apply(
        t.data.experimental.unique())),
]


@pytest.mark.parametrize("name,make", UNIQUES, ids=[c[0] for c in UNIQUES])
def test_unique_matches_tensorflow(tf, name, make):
    try:
        theirs = make(tf)
        expected = _values(theirs)
    except Exception as e:  # noqa: BLE001 - TF may not support a case; then neither errs alike
        pytest.skip(f"TensorFlow: {type(e).__name__}: {e}")
    ours = make(cv)
    assert _values(ours) == expected
    assert _specs(ours) == _specs(theirs)
    assert int(ours.cardinality()) == int(theirs.cardinality())


def test_unique_many_values_and_resume():
    values = np.random.default_rng(3).integers(0, 500, 3000)
    ds = cv.data.Dataset.from_tensor_slices(values).unique()
    _, first = np.unique(values, return_index=True)
    assert [v[0] for v in _values(ds)] == values[np.sort(first)].tolist()
    verify_resume(lambda: cv.data.Dataset.from_tensor_slices(values[:40] % 13).unique())


@pytest.mark.parametrize("make", [
    lambda: cv.data.Dataset.from_tensor_slices([1.0, 2.0]),
    lambda: cv.data.Dataset.from_tensor_slices(([1], [2])),
])
def test_unique_rejects_other_elements(make):
    with pytest.raises(TypeError, match="unique"):
        make().unique()


def test_unique_of_an_infinite_dataset_is_infinite():
    assert int(cv.data.Dataset.range(3).repeat().unique().cardinality()) == \
        cv.data.INFINITE_CARDINALITY
