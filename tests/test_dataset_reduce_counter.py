"""Dataset.counter / experimental.Counter, Dataset.reduce, get_single_element
(and experimental.get_single_element), experimental.assert_cardinality:
conveyor alone, and against TensorFlow where it is installed."""
import numpy as np
import pytest

import conveyor as cv
from conveyor import errors
from checkpoint_helpers import verify_resume

INFINITE = cv.data.INFINITE_CARDINALITY


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


def _values(ds, n=None):
    if n is not None:
        ds = ds.take(n)
    return [np.asarray(x).tolist() for x in ds.as_numpy_iterator()]


def _spec(t, ds):
    spec = ds.element_spec
    return (tuple(spec.shape.as_list()), spec.dtype.name)


# -- counter ---------------------------------------------------------------------

COUNTERS = [
    ("default", lambda t: t.data.Dataset.counter()),
    ("start_step", lambda t: t.data.Dataset.counter(5, 3)),
    ("negative_step", lambda t: t.data.Dataset.counter(5, -2)),
    ("zero_step", lambda t: t.data.Dataset.counter(7, 0)),
    ("int32", lambda t: t.data.Dataset.counter(1, 2, dtype=t.int32)),
    ("int32_down", lambda t: t.data.Dataset.counter(-3, -5, dtype=t.int32)),
    ("float32", lambda t: t.data.Dataset.counter(1, 2, dtype=t.float32)),
    ("experimental", lambda t: t.data.experimental.Counter(10, -1)),
    ("experimental_dtype", lambda t: t.data.experimental.Counter(0, 4, t.int32)),
]


@pytest.mark.parametrize("name,make", COUNTERS, ids=[c[0] for c in COUNTERS])
def test_counter_matches_tensorflow(tf, name, make):
    ours, theirs = make(cv), make(tf)
    assert _spec(cv, ours) == _spec(tf, theirs)
    assert int(ours.cardinality()) == int(theirs.cardinality()) == INFINITE
    assert _values(ours, 6) == _values(theirs, 6)


def test_counter_alone():
    ds = cv.data.Dataset.counter(5, -2)
    assert ds.cardinality() == INFINITE
    assert _values(ds, 4) == [5, 3, 1, -1]
    assert ds.element_spec == cv.TensorSpec([], cv.int64)
    assert _values(cv.data.Dataset.counter(2, 0), 3) == [2, 2, 2]
    assert _values(cv.data.Dataset.counter().skip(10), 2) == [10, 11]
    with pytest.raises(TypeError):
        cv.data.Dataset.counter(1.5)
    # zipped with a finite dataset: enumerate's shape
    pairs = cv.data.Dataset.zip((cv.data.Dataset.counter(100), cv.data.Dataset.range(3)))
    assert pairs.cardinality() == 3
    assert _values(pairs) == [[100, 0], [101, 1], [102, 2]]


@pytest.mark.parametrize("step", [3, -3, 0])
def test_counter_resumes(step):
    verify_resume(lambda: cv.data.Dataset.counter(4, step).take(8), breaks=[0, 1, 5, 8])


# -- reduce -----------------------------------------------------------------------

REDUCES = [
    ("count", lambda t: t.data.Dataset.range(5).reduce(0, lambda s, _: s + 1)),
    ("sum_int64", lambda t: t.data.Dataset.range(5).reduce(np.int64(0), lambda s, x: s + x)),
    ("empty", lambda t: t.data.Dataset.range(0).reduce(7, lambda s, _: s + 1)),
    ("float", lambda t: t.data.Dataset.from_tensor_slices([1.5, 2.0]).reduce(
        0.0, lambda s, x: s + x)),
    ("tuple_dict", lambda t: t.data.Dataset.range(5).reduce(
        (0, {"a": 1.0}), lambda s, x: (s[0] + 1, {"a": s[1]["a"] * 2}))),
    ("tuple_elements", lambda t: t.data.Dataset.from_tensor_slices(([1, 2], [10, 20])).reduce(
        np.int32(0), lambda s, e: s + e[0] * e[1])),
    ("list_result", lambda t: t.data.Dataset.range(3).reduce(
        (np.int64(0), np.int64(1)), lambda s, x: [s[0] + x, s[1] * 2])),
    ("shape_grows", lambda t: t.data.Dataset.range(3).reduce(
        t.constant([1], t.int64), lambda s, x: t.concat([s, s + x], 0))),
]


def _plain(x):
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return tuple(_plain(v) for v in x)
    return (np.asarray(x.numpy()).tolist(), np.asarray(x.numpy()).dtype.name)


@pytest.mark.parametrize("name,make", REDUCES, ids=[c[0] for c in REDUCES])
def test_reduce_matches_tensorflow(tf, name, make):
    assert _plain(make(cv)) == _plain(make(tf))


def test_reduce_alone():
    total = cv.data.Dataset.range(5).reduce(np.int64(0), lambda s, x: s + x)
    assert isinstance(total, cv.EagerTensor)
    assert total.numpy() == 10 and total.dtype == np.int64
    seen = []

    def func(state, element):
        seen.append((type(state), type(element[0]), type(element[1])))
        return state + 1
    cv.data.Dataset.from_tensor_slices(([1, 2], ["a", "b"])).reduce(0, func)
    assert seen == [(cv.EagerTensor, cv.EagerTensor, cv.EagerTensor)] * 2
    state = cv.data.Dataset.range(3).reduce({"n": 0, "xs": (0.0,)},
                                            lambda s, x: {"n": s["n"] + 1, "xs": (s["xs"][0] + 1,)})
    assert set(state) == {"n", "xs"} and state["n"].numpy() == 3
    assert state["xs"][0].dtype == np.float32 and state["xs"][0].numpy() == 3.0


BAD_REDUCES = [
    ("more_components", lambda t: t.data.Dataset.range(3).reduce(
        np.int64(0), lambda s, x: (s, s)), errors.InvalidArgumentError,
     "The number of components of the initial state and the reduce function output does not "
     "match. (initial_state=1, output=2)."),
    ("dtype", lambda t: t.data.Dataset.range(3).reduce(
        np.int64(0), lambda s, x: t.cast(s, t.float32)), TypeError,
     "The element types for the new state must match the initial state. Expected "
     "<dtype: 'int64'> but got <dtype: 'float32'>."),
    ("not_callable", lambda t: t.data.Dataset.range(3).reduce(0, 5), ValueError,
     "Argument `func` must be a callable. Received func=5 (of type <class 'int'>)"),
]


@pytest.mark.parametrize("name,make,exc,message", BAD_REDUCES, ids=[c[0] for c in BAD_REDUCES])
def test_reduce_errors(name, make, exc, message):
    with pytest.raises(exc) as info:
        make(cv)
    assert str(info.value) == message


@pytest.mark.parametrize("name,make,exc,message", BAD_REDUCES, ids=[c[0] for c in BAD_REDUCES])
def test_reduce_errors_match_tensorflow(tf, name, make, exc, message):
    with pytest.raises(Exception) as info:
        make(tf)
    assert type(info.value).__name__ == exc.__name__
    assert message in str(info.value)


def test_reduce_structure_change():
    with pytest.raises((TypeError, ValueError)):
        cv.data.Dataset.range(2).reduce((np.int64(0), np.int64(0)),
                                        lambda s, x: {"a": s[0], "b": s[1]})


# -- get_single_element --------------------------------------------------------------

def test_get_single_element():
    value = cv.data.Dataset.from_tensors((1, "a")).get_single_element()
    assert isinstance(value, tuple) and isinstance(value[0], cv.EagerTensor)
    assert value[0].numpy() == 1 and value[1].numpy() == b"a"
    batch = cv.data.Dataset.range(4).batch(4).get_single_element()
    assert batch.numpy().tolist() == [0, 1, 2, 3]
    assert cv.data.experimental.get_single_element(
        cv.data.Dataset.from_tensors({"x": 2.5}))["x"].numpy() == 2.5
    with pytest.raises(errors.InvalidArgumentError, match="^Dataset was empty.$"):
        cv.data.Dataset.range(0).get_single_element()
    with pytest.raises(errors.InvalidArgumentError, match="^Dataset had more than one element.$"):
        cv.data.Dataset.range(2).get_single_element()
    with pytest.raises(TypeError, match="Invalid `dataset`"):
        cv.data.experimental.get_single_element([1])


@pytest.mark.parametrize("n", [0, 1, 2])
def test_get_single_element_matches_tensorflow(tf, n):
    def run(t):
        try:
            return ("ok", _plain(t.data.Dataset.range(n).map(lambda x: x * 2).get_single_element()))
        except Exception as e:  # noqa: BLE001 - compare the kind and the message
            return (type(e).__name__, str(e).split("}} ")[-1].split(" [Op:")[0])
    assert run(cv) == run(tf)


# -- assert_cardinality ------------------------------------------------------------------

def _run(t, n, expected):
    ds = t.data.Dataset.range(n).apply(t.data.experimental.assert_cardinality(expected))
    got = []
    try:
        for x in ds:
            got.append(int(x))
    except Exception as e:  # noqa: BLE001 - compare the kind and the message
        return got, type(e).__name__, str(e).split("}} ")[-1].split(" [Op:")[0]
    return got, None, None


AC_CASES = [(5, 5), (3, 5), (7, 5), (0, 0), (1, 0), (0, 2), (1, 2), (2, 1), (0, 1),
            (2, INFINITE), (1, INFINITE)]


@pytest.mark.parametrize("n,expected", AC_CASES)
def test_assert_cardinality_matches_tensorflow(tf, n, expected):
    assert _run(cv, n, expected) == _run(tf, n, expected)


def test_assert_cardinality_alone():
    ac = cv.data.experimental.assert_cardinality
    ds = cv.data.Dataset.range(10).filter(lambda x: x % 2 == 0)
    assert ds.cardinality() == cv.data.UNKNOWN_CARDINALITY
    checked = ds.apply(ac(5))
    assert checked.cardinality() == 5 and len(checked) == 5
    assert checked.batch(2).cardinality() == 3
    assert checked.element_spec == ds.element_spec
    assert _values(checked) == [0, 2, 4, 6, 8]
    assert _run(cv, 3, 5) == ([0, 1, 2], "FailedPreconditionError",
                              "Input dataset was expected to contain 5 elements but contained "
                              "only 3 elements.")
    assert _run(cv, 7, 5) == ([0, 1, 2, 3, 4], "FailedPreconditionError",
                              "Input dataset was expected to contain 5 elements but contained "
                              "at least 6 elements.")
    assert cv.data.Dataset.range(3).apply(ac(INFINITE)).cardinality() == INFINITE
    with pytest.raises(TypeError):
        ac(1.5)
    with pytest.raises(ValueError):
        ac(-2)
    with pytest.raises(TypeError, match="DatasetSpec components are not supported"):
        cv.data.Dataset.range(4).window(2).apply(ac(2))
    with pytest.raises(errors.FailedPreconditionError):
        cv.data.Dataset.range(0).apply(ac(1)).get_single_element()  # fails while reading
    # structured elements with strings and static shapes keep their spec
    pairs = cv.data.Dataset.from_tensor_slices(({"a": [[1, 2], [3, 4]]}, ["x", "y"]))
    out = pairs.apply(ac(2))
    assert out.element_spec == pairs.element_spec
    assert [(e[0]["a"].tolist(), e[1]) for e in out.as_numpy_iterator()] == [
        ([1, 2], b"x"), ([3, 4], b"y")]


def test_assert_cardinality_cardinality_matches_tensorflow(tf):
    def card(t):
        ds = t.data.Dataset.range(10).filter(lambda x: x % 2 == 0)
        ds = ds.apply(t.data.experimental.assert_cardinality(5))
        return int(ds.cardinality()), int(ds.batch(2).cardinality())
    assert card(cv) == card(tf)


@pytest.mark.parametrize("shuffled", [False, True])
def test_assert_cardinality_resumes(shuffled):
    def make():
        ds = cv.data.Dataset.range(12).filter(lambda x: x % 3 != 0)
        if shuffled:
            ds = ds.shuffle(4, seed=7, reshuffle_each_iteration=False)
        return ds.apply(cv.data.experimental.assert_cardinality(8)).map(lambda x: x * 10)
    verify_resume(make, breaks=[0, 1, 4, 7, 8])


def test_assert_cardinality_after_the_error():
    def calls(n, expected, k):
        it = iter(cv.data.Dataset.range(n).apply(cv.data.experimental.assert_cardinality(expected)))
        out = []
        for _ in range(k):
            try:
                out.append(int(next(it)))
            except StopIteration:
                out.append("stop")
            except errors.FailedPreconditionError as e:
                out.append(str(e).split("contained ")[-1])
        return out
    # the count in the message stays the input's; never a filler element
    assert calls(2, 4, 6) == [0, 1, "only 2 elements.", "only 2 elements.", "only 2 elements.",
                              "stop"]
    assert calls(6, 4, 6) == [0, 1, 2, 3, "at least 5 elements.", "stop"]
