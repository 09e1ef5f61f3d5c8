"""choose_from_datasets, sample_from_datasets and Dataset.random.

Semantics are checked against a Python model of tf.data's DirectedInterleave
and, where TensorFlow is installed, against tf.data itself (the random picks
are TensorFlow's bit for bit).
"""
import collections
import gc
import os
import time

import numpy as np
import pytest

import conveyor as cv
from conftest import thread_count

Dataset = cv.data.Dataset
# These tests use Python functions on purpose (maps that raise, sleep, branch).
pytestmark = pytest.mark.filterwarnings("ignore:.*runs in Python per element")


@pytest.fixture(scope="module")
def tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return pytest.importorskip("tensorflow")


def values(ds):
    return [v.tolist() if isinstance(v, np.ndarray) else v for v in ds]


def tf_values(ds):
    return [v.tolist() if isinstance(v, np.ndarray) else v for v in ds.as_numpy_iterator()]


def choices(*picks):
    return Dataset.from_tensor_slices(np.array(picks, dtype=np.int64))


def model(lengths, picks, stop_on_empty):
    """tf.data's DirectedInterleave over datasets [i * 100, i * 100 + lengths[i])."""
    its = [iter(range(i * 100, i * 100 + n)) for i, n in enumerate(lengths)]
    out, active = [], len(its)
    for p in picks:
        if its[p] is None:
            continue
        v = next(its[p], None)
        if v is not None:
            out.append(v)
            continue
        if stop_on_empty:
            break
        its[p], active = None, active - 1
        if active == 0:
            break
    return out


def ranges(lengths):
    return [Dataset.range(i * 100, i * 100 + n) for i, n in enumerate(lengths)]


# -- choose_from_datasets ---------------------------------------------------------


@pytest.mark.parametrize("stop", [True, False])
@pytest.mark.parametrize("lengths,picks", [
    ([5, 3, 2], [0, 1, 2, 1, 1, 1, 0, 2, 2, 2, 0]),
    ([1, 1], [1, 1, 0, 0, 1]),
    ([0, 4], [0, 1, 1]),
    ([2, 2, 2, 2, 2, 2, 2], [6, 5, 4, 3, 2, 1, 0] * 3),  # more inputs than the engine's fixed slots
    ([3], []),
])
def test_choose_order_matches_the_model(lengths, picks, stop):
    ds = Dataset.choose_from_datasets(ranges(lengths), choices(*picks) if picks else
                                      Dataset.range(0), stop_on_empty_dataset=stop)
    assert values(ds) == model(lengths, picks, stop)
    assert values(ds) == model(lengths, picks, stop)  # a second iterator starts over


def test_choose_experimental_alias_and_default_stops():
    ds = cv.data.experimental.choose_from_datasets(ranges([1, 3]), choices(0, 1, 0, 1))
    assert values(ds) == [0, 100]


@pytest.mark.parametrize("bad", [3, -1])
def test_choice_out_of_range_raises_at_that_element_and_goes_on(bad):
    it = iter(Dataset.choose_from_datasets(ranges([3, 3, 3]), choices(0, bad, 1, 2)))
    assert next(it) == 0
    with pytest.raises(cv.errors.InvalidArgumentError,
                       match=f"Selector index out of range: {bad} >= 3"):
        next(it)
    assert list(it) == [100, 200]


def test_error_inside_a_chosen_dataset_surfaces_there():
    def check(x):
        if x == 1:
            raise ZeroDivisionError("one")
        return x

    ds = Dataset.choose_from_datasets([Dataset.range(3).map(check), Dataset.range(10, 12)],
                                      choices(0, 1, 0, 0, 1))
    it = iter(ds)
    assert [next(it), next(it)] == [0, 10]
    with pytest.raises(ZeroDivisionError):
        next(it)
    assert list(it) == [2, 11]


def test_choose_cardinality_as_tf():
    finite, infinite = Dataset.range(3), Dataset.range(3).repeat()
    unknown = Dataset.range(3).interleave(lambda x: Dataset.range(x), cycle_length=1)
    for picks in (Dataset.range(2), Dataset.range(2).repeat(), unknown):
        for data, expected in (([finite, Dataset.range(2)], cv.data.UNKNOWN_CARDINALITY),
                               ([infinite, finite], cv.data.INFINITE_CARDINALITY),
                               ([unknown, finite], cv.data.UNKNOWN_CARDINALITY)):
            for stop in (True, False):
                ds = Dataset.choose_from_datasets(data, picks, stop_on_empty_dataset=stop)
                assert ds.cardinality() == expected


def test_choose_element_spec_is_the_common_supertype():
    a = Dataset.from_tensors(np.zeros([2], np.float32))
    b = Dataset.from_tensors(np.zeros([3], np.float32))
    ds = Dataset.choose_from_datasets([a, b], choices(0, 1))
    assert ds.element_spec == cv.TensorSpec([None], cv.float32)
    assert [v.tolist() for v in ds] == [[0, 0], [0, 0, 0]]
    c = Dataset.from_tensors(np.zeros([2, 2], np.float32))
    assert Dataset.choose_from_datasets([a, c], choices(0)).element_spec.shape.rank is None


def test_choose_structures():
    a = Dataset.from_tensor_slices({"x": np.arange(3), "s": np.array([b"a", b"b", b"c"])})
    b = Dataset.from_tensor_slices({"x": np.arange(10, 12), "s": np.array([b"y", b"z"])})
    got = list(Dataset.choose_from_datasets([a, b], choices(1, 0, 1, 0)))
    assert [(int(e["x"]), e["s"]) for e in got] == [(10, b"y"), (0, b"a"), (11, b"z"), (1, b"b")]


def test_choose_bad_arguments_raise_tf_error_types():
    with pytest.raises(ValueError, match="`datasets` should not be empty"):
        Dataset.choose_from_datasets([], choices(0))
    with pytest.raises(TypeError, match="`choice_dataset` should be a `tf.data.Dataset`"):
        Dataset.choose_from_datasets([Dataset.range(3)], [0, 1])
    with pytest.raises(TypeError, match="must be scalar `tf.int64` tensors"):
        Dataset.choose_from_datasets([Dataset.range(3)], Dataset.range(3, output_type=cv.int32))
    with pytest.raises(TypeError, match="must be scalar `tf.int64` tensors"):
        Dataset.choose_from_datasets([Dataset.range(3)], Dataset.from_tensors(np.array([1])))
    with pytest.raises(TypeError, match="must have compatible element specs"):
        Dataset.choose_from_datasets([Dataset.range(3), Dataset.from_tensors(1.0)], choices(0))
    with pytest.raises(TypeError, match="must have compatible element specs"):
        Dataset.choose_from_datasets([Dataset.range(3), Dataset.from_tensors((1, 2))], choices(0))
    with pytest.raises(TypeError):
        Dataset.choose_from_datasets([Dataset.range(3), [1, 2]], choices(0))


def slow(x):
    time.sleep(0.002)
    return x


@pytest.mark.parametrize("kind", ["choose", "sample"])
def test_dropped_iterators_mid_way_leave_no_threads(kind):
    gc.collect()
    baseline = thread_count()
    data = [Dataset.range(1000).map(slow, num_parallel_calls=2).prefetch(2),
            Dataset.range(1000, 2000).prefetch(3)]
    if kind == "choose":
        ds = Dataset.choose_from_datasets(data, Dataset.range(10000).map(lambda x: x % 2))
    else:
        ds = Dataset.sample_from_datasets(data, seed=3).prefetch(2)
    for _ in range(3):
        it = iter(ds)
        got = [next(it) for _ in range(5)]
        assert len(set(got)) == 5
        del it
    gc.collect()
    deadline = time.monotonic() + 5
    while thread_count() > baseline and time.monotonic() < deadline:
        time.sleep(0.01)
    assert thread_count() == baseline
    assert cv._engine.live_iterators() == 0


def test_parallel_inputs_give_the_sequential_order():
    seq = [Dataset.range(50).map(lambda x: x * 2), Dataset.range(100, 130)]
    par = [Dataset.range(50).map(lambda x: x * 2, num_parallel_calls=3).prefetch(4),
           Dataset.range(100, 130).prefetch(1)]
    a = values(Dataset.sample_from_datasets(seq, [0.3, 0.7], seed=5))
    b = values(Dataset.sample_from_datasets(par, [0.3, 0.7], seed=5))
    assert a == b and len(a) == 80


# -- Dataset.random -----------------------------------------------------------------


def test_random_is_infinite_uint32_valued_and_seeded():
    ds = Dataset.random(seed=4)
    assert ds.cardinality() == cv.data.INFINITE_CARDINALITY
    assert ds.element_spec == cv.TensorSpec([], cv.int64)
    a = values(ds.take(200))
    assert a == values(ds.take(200))  # fixed seeds: every iteration repeats
    assert all(0 <= v < 2 ** 32 for v in a) and len(set(a)) == 200
    assert a != values(Dataset.random(seed=5).take(200))


def test_random_rerandomize_each_iteration():
    ds = Dataset.random(seed=4, rerandomize_each_iteration=True).take(20)
    first, second = values(ds), values(ds)
    assert first != second
    again = Dataset.random(seed=4, rerandomize_each_iteration=True).take(20)
    assert [values(again), values(again)] == [first, second]  # still seeded


def test_unseeded_random_differs_between_datasets():
    assert values(Dataset.random().take(5)) != values(Dataset.random().take(5))


# -- sample_from_datasets ---------------------------------------------------------


def test_sample_is_deterministic_per_seed_and_complete():
    data = ranges([30, 20, 10])
    a = values(Dataset.sample_from_datasets(data, [0.5, 0.3, 0.2], seed=42))
    b = values(Dataset.sample_from_datasets(data, [0.5, 0.3, 0.2], seed=42))
    c = values(Dataset.sample_from_datasets(data, [0.5, 0.3, 0.2], seed=43))
    assert a == b and a != c
    expected = sorted(v for d in data for v in values(d))
    assert sorted(a) == expected and sorted(c) == expected  # every element exactly once
    for i in range(3):  # each dataset keeps its own order
        own = [v for v in a if v // 100 == i]
        assert own == sorted(own)


def test_sample_frequencies_follow_the_weights():
    weights = [0.6, 0.3, 0.1]
    picks = Dataset.sample_from_datasets(
        [Dataset.from_tensors(np.int64(i)).repeat() for i in range(3)], weights, seed=1)
    counts = collections.Counter(values(picks.take(20000)))
    for i, w in enumerate(weights):
        # ~6 standard deviations of a binomial(20000, w)
        assert abs(counts[i] / 20000 - w) < 6 * (w * (1 - w) / 20000) ** 0.5


def test_sample_stop_on_empty_dataset():
    data = ranges([5, 100])
    got = values(Dataset.sample_from_datasets(data, seed=7, stop_on_empty_dataset=True))
    assert got.count(4) == 1 and len([v for v in got if v < 100]) == 5
    assert len(got) < 105


def test_sample_zero_weights_and_single_dataset():
    d = ranges([4, 4, 4])
    got = values(Dataset.sample_from_datasets(d, [0.0, 1.0, 0.0], seed=1))
    assert got == [100, 101, 102, 103]
    only = Dataset.range(3)
    assert Dataset.sample_from_datasets([only]) is only
    assert values(Dataset.sample_from_datasets(d, [0.0, 0.0, 0.0])) == []


def test_sample_rerandomize_each_iteration():
    ds = Dataset.sample_from_datasets(ranges([20, 20]), seed=3, rerandomize_each_iteration=True)
    first, second = values(ds), values(ds)
    assert first != second and sorted(first) == sorted(second)
    fixed = Dataset.sample_from_datasets(ranges([20, 20]), seed=3)
    assert values(fixed) == values(fixed)


def test_sample_weights_dataset():
    w = np.array([[1.0, 0.0], [0.0, 1.0]] * 5, np.float32)
    got = values(Dataset.sample_from_datasets(ranges([10, 10]), Dataset.from_tensor_slices(w),
                                              seed=1))
    assert got == [0, 100, 1, 101, 2, 102, 3, 103, 4, 104]  # ends with the weights
    bad = Dataset.from_tensor_slices(np.ones([2, 2, 2], np.float32))
    with pytest.raises(cv.errors.InvalidArgumentError, match="logits should be a matrix"):
        values(Dataset.sample_from_datasets(ranges([3, 3]), bad))


def test_sample_bad_arguments_raise_tf_error_types():
    with pytest.raises(ValueError, match="`datasets` should not be empty"):
        Dataset.sample_from_datasets([])
    with pytest.raises(ValueError, match="same length as `datasets`"):
        Dataset.sample_from_datasets([Dataset.range(3)], [1.0, 2.0])
    with pytest.raises(TypeError, match="must be either `tf.float32` or `tf.float64`"):
        Dataset.sample_from_datasets(ranges([3, 3]), [1, 2])
    with pytest.raises(TypeError):
        Dataset.sample_from_datasets(ranges([3, 3]), Dataset.range(3))
    with pytest.raises(TypeError, match="`seed` must be an int"):
        Dataset.sample_from_datasets(ranges([3, 3]), seed="x")


def test_all_weights_zero_in_a_weights_dataset_is_out_of_range():
    w = Dataset.from_tensors(np.zeros(2, np.float32))
    with pytest.raises(cv.errors.InvalidArgumentError, match="Selector index out of range: 2 >= 2"):
        values(Dataset.sample_from_datasets(ranges([3, 3]), w))


# -- against TensorFlow -------------------------------------------------------------


@pytest.mark.parametrize("seed", [None, 0, 7, 2 ** 40])
@pytest.mark.parametrize("rerandomize", [None, False, True])
def test_random_equals_tf(tf, seed, rerandomize):
    if seed is None:
        tf.random.set_seed(11)
        cv.random.set_seed(11)
    try:
        t = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=rerandomize).take(10)
        c = Dataset.random(seed=seed, rerandomize_each_iteration=rerandomize).take(10)
        assert [values(c) for _ in range(3)] == [tf_values(t) for _ in range(3)]
        assert values(c.repeat(2)) == tf_values(t.repeat(2))
    finally:
        tf.random.set_seed(None)
        cv.random.set_seed(None)


@pytest.mark.parametrize("stop", [True, False])
def test_choose_equals_tf(tf, stop):
    picks = np.array([0, 1, 2, 1, 1, 1, 0, 2, 2, 2, 0, 1, 3, 3, 3], np.int64)
    for lengths in ([5, 3, 2, 1], [0, 2, 2, 9]):
        t = tf.data.Dataset.choose_from_datasets(
            [tf.data.Dataset.range(i * 100, i * 100 + n) for i, n in enumerate(lengths)],
            tf.data.Dataset.from_tensor_slices(picks), stop_on_empty_dataset=stop)
        c = Dataset.choose_from_datasets(ranges(lengths), Dataset.from_tensor_slices(picks),
                                         stop_on_empty_dataset=stop)
        assert values(c) == tf_values(t)
        assert c.cardinality() == int(t.cardinality())


def test_choose_error_equals_tf(tf):
    t = tf.data.Dataset.choose_from_datasets(
        [tf.data.Dataset.range(3)], tf.data.Dataset.from_tensor_slices(np.array([0, 1], np.int64)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Selector index out of range: 1 >= 1"):
        tf_values(t)
    c = Dataset.choose_from_datasets([Dataset.range(3)], choices(0, 1))
    with pytest.raises(cv.errors.InvalidArgumentError, match="Selector index out of range: 1 >= 1"):
        values(c)


SAMPLE_CASES = [
    dict(n=2),
    dict(n=3, weights=[0.2, 0.5, 0.3]),
    dict(n=4, weights=[1.0, 3.0, 0.0, 2.0]),
    dict(n=3, weights=np.array([0.25, 0.7, 0.05])),  # float64
    dict(n=9, weights=[0.1 * (i + 1) for i in range(9)]),
    dict(n=2, stop_on_empty_dataset=True),
    dict(n=3, weights=[5.0, 1.0, 1.0], rerandomize_each_iteration=True),
]


@pytest.mark.parametrize("case", SAMPLE_CASES)
@pytest.mark.parametrize("seed", [3, 2 ** 33 + 1])
def test_sample_equals_tf(tf, case, seed):
    case = dict(case)
    n = case.pop("n")

    def make(D):
        data = [D.range(i * 100, i * 100 + 15 + 3 * i) for i in range(n)]
        return D.sample_from_datasets(data, seed=seed, **case)

    t, c = make(tf.data.Dataset), make(Dataset)
    assert [values(c) for _ in range(2)] == [tf_values(t) for _ in range(2)]
    assert c.cardinality() == int(t.cardinality())


def test_sample_with_global_seed_equals_tf(tf):
    tf.random.set_seed(99)
    cv.random.set_seed(99)
    try:
        t = [tf_values(tf.data.Dataset.sample_from_datasets(
            [tf.data.Dataset.range(10), tf.data.Dataset.range(100, 110)])) for _ in range(2)]
        c = [values(Dataset.sample_from_datasets(ranges([10, 10]))) for _ in range(2)]
        assert c == t
    finally:
        tf.random.set_seed(None)
        cv.random.set_seed(None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sample_weights_dataset_equals_tf(tf, dtype):
    w = np.random.default_rng(0).random((60, 4)).astype(dtype)
    w[::7, 1] = 0
    t = tf.data.Dataset.sample_from_datasets(
        [tf.data.Dataset.range(i * 100, i * 100 + 20) for i in range(4)],
        weights=tf.data.Dataset.from_tensor_slices(w), seed=12)
    c = Dataset.sample_from_datasets(ranges([20] * 4), weights=Dataset.from_tensor_slices(w),
                                     seed=12)
    assert values(c) == tf_values(t)


def test_experimental_sample_equals_tf(tf):
    t = tf.data.experimental.sample_from_datasets(
        [tf.data.Dataset.range(10), tf.data.Dataset.range(100, 110)], [0.9, 0.1], seed=8)
    c = cv.data.experimental.sample_from_datasets(ranges([10, 10]), [0.9, 0.1], seed=8)
    assert values(c) == tf_values(t)


# Ctrl-C while the consumer waits inside next(): the element it waits for is
# held back until well after the interrupt, so the interrupt always lands in
# the wait (never between next() returning and the caller storing its result).
CTRL_C = """
import _thread, threading, time, numpy as np, conveyor as cv
Dataset = cv.data.Dataset
armed = threading.Event()  # not while the pipeline is built (element_spec probes run maps)
def gate(x):
    if x == {gate_at} and armed.is_set():
        threading.Timer(0.2, _thread.interrupt_main).start()
        time.sleep(0.7)
    return x
ds = {pipeline}
ds.element_spec
it = iter(ds)
armed.set()
out, interrupted = [], 0
while True:
    try:
        out.append(np.asarray(next(it)).tolist())
    except KeyboardInterrupt:
        interrupted += 1
    except StopIteration:
        break
print(interrupted, out)
"""


def test_ctrl_c_while_a_chosen_dataset_is_waited_for_loses_no_pick(run_python):
    pipeline = ("Dataset.choose_from_datasets([Dataset.range(4).map(gate, num_parallel_calls=1), "
                "Dataset.range(10, 14).map(gate, num_parallel_calls=1)], "
                "Dataset.range(8).map(lambda x: (x + 1) % 2))")
    result = run_python(CTRL_C.format(pipeline=pipeline, gate_at=1))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1 [10, 0, 11, 1, 12, 2, 13, 3]"
