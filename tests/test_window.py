"""window(): windows of elements as datasets, against a Python model of
tf.data's WindowDataset and, where installed, tf.data itself."""
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
Point = collections.namedtuple("Point", "x y")


@pytest.fixture(scope="module")
def tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return pytest.importorskip("tensorflow")


def model(n, size, shift, stride, drop, errors=()):
    """tf.data's windows over positions 0..n-1; a window holding an error
    position (picked every `stride`) is "ERR"."""
    target = (size - 1) * stride + 1
    out, start = [], 0
    while start < n:
        buf = list(range(start, min(start + target, n)))
        if drop and len(buf) < target:
            break
        picked = buf[::stride]
        out.append("ERR" if any(p in errors for p in picked) else picked)
        start += shift
    return out


def listed(w):
    """A window (a dataset, or a structure of them) as plain lists."""
    if isinstance(w, tuple):
        return tuple(listed(c) for c in w)
    if isinstance(w, dict):
        return {k: listed(c) for k, c in w.items()}
    return [v.tolist() if isinstance(v, np.ndarray) else v for v in w]


def windows(ds):
    out, it = [], iter(ds)
    while True:
        try:
            out.append(listed(next(it)))
        except StopIteration:
            return out
        except cv.errors.InvalidArgumentError:
            out.append("ERR")


GRID = [(size, shift, stride, drop) for size in (1, 2, 3, 5) for shift in (None, 1, 2, 4)
        for stride in (1, 2, 3) for drop in (False, True)]


@pytest.mark.parametrize("size,shift,stride,drop", GRID)
def test_windows_match_the_model(size, shift, stride, drop):
    for n in (0, 1, 6, 11):
        ds = Dataset.range(n).window(size, shift, stride, drop)
        expected = model(n, size, shift or size, stride, drop)
        assert windows(ds) == expected
        assert ds.cardinality() == len(expected)


def test_element_spec_is_a_structure_of_dataset_specs():
    ds = Dataset.from_tensor_slices({"a": np.arange(4), "b": np.zeros([4, 2], np.float32)})
    spec = ds.window(2).element_spec
    assert spec == {"a": cv.data.DatasetSpec(cv.TensorSpec([], cv.int64)),
                    "b": cv.data.DatasetSpec(cv.TensorSpec([2], cv.float32))}
    assert repr(spec["a"]) == ("DatasetSpec(TensorSpec(shape=(), dtype=tf.int64, "
                               "name=None), TensorShape([]))")
    w = next(iter(ds.window(2)))
    assert isinstance(w["a"], Dataset) and w["a"].element_spec == spec["a"].element_spec
    with pytest.raises(TypeError):
        ds.window(2).as_numpy_iterator()


def test_structures_and_strings():
    words = np.array([b"a", b"bb", b"", b"dddd", b"e"], dtype=object)
    ds = Dataset.from_tensor_slices((np.arange(5), words)).map(lambda i, w: Point(i, w))
    got = windows(ds.window(2, 1, 2))
    assert got == [Point([0, 2], [b"a", b""]), Point([1, 3], [b"bb", b"dddd"]),
                   Point([2, 4], [b"", b"e"]), Point([3], [b"dddd"]), Point([4], [b"e"])]


def test_ragged_windows_of_variable_shapes():
    rows = [[], [1], [2, 2], [3, 3, 3], [4]]
    ds = Dataset.from_generator(lambda: iter(rows), cv.int64, output_shapes=[None])
    assert windows(ds.window(2)) == [[[], [1]], [[2, 2], [3, 3, 3]], [[4]]]
    strings = [[b"x"], [b"y", b"zz"], []]
    ds = Dataset.from_generator(lambda: iter(strings), cv.string, output_shapes=[None])
    assert windows(ds.window(3)) == [[[b"x"], [b"y", b"zz"], []]]
    # Unknown rank: scalars and matrices in one window.
    mixed = [np.int32(1), np.ones([2, 2], np.int32), np.array([7], np.int32)]
    ds = Dataset.from_generator(lambda: iter(mixed), cv.int32)
    assert windows(ds.window(3)) == [[1, [[1, 1], [1, 1]], [7]]]


def test_windows_feed_flat_map_interleave_batch_and_iteration():
    ds = Dataset.range(7).window(3, 2)
    batched = ds.flat_map(lambda w: w.batch(3))
    assert [v.tolist() for v in batched] == [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6]]
    assert batched.element_spec == cv.TensorSpec([None], cv.int64)
    inter = ds.interleave(lambda w: w, cycle_length=2, block_length=1)
    assert [int(v) for v in inter] == [0, 2, 1, 3, 2, 4, 4, 6, 5, 6]
    pairs = Dataset.range(6).map(lambda x: (x, -x)).window(3)
    sums = pairs.flat_map(lambda a, b: a.batch(3).map(lambda v: v.sum()))
    assert [int(v) for v in sums] == [3, 12]
    w = next(iter(ds))
    assert [int(v) for v in w] == [int(v) for v in w] == [0, 1, 2]  # a window iterates again
    assert w.cardinality() == 3
    assert [v.tolist() for v in w.batch(2)] == [[0, 1], [2]]


def test_windows_survive_the_rest_of_the_pipeline():
    ds = Dataset.range(10).window(4).take(2).repeat(2).prefetch(2)
    assert windows(ds) == [[0, 1, 2, 3], [4, 5, 6, 7]] * 2


@pytest.mark.skipif(not hasattr(Dataset, "zip"), reason="Dataset.zip not available")
def test_windows_zip():
    ds = Dataset.range(5).map(lambda x: (x, x * 10)).window(2)
    zipped = ds.flat_map(lambda a, b: Dataset.zip((a, b)))
    assert [(int(a), int(b)) for a, b in zipped] == [(i, i * 10) for i in range(5)]


def failing_at(positions):
    def f(x):
        if int(x) in positions:
            raise ValueError(f"bad {int(x)}")
        return x
    return f


@pytest.mark.parametrize("size,shift,stride", [(2, None, 1), (3, 1, 1), (2, 3, 1), (2, 1, 2),
                                               (3, 5, 2)])
def test_an_error_fails_the_windows_holding_it(size, shift, stride):
    errors = {3}
    ds = Dataset.range(9).map(failing_at(errors)).window(size, shift, stride)
    out, it = [], iter(ds)
    while True:
        try:
            out.append(listed(next(it)))
        except StopIteration:
            break
        except ValueError as e:  # the user's exception for the first window, then a copy
            assert "bad 3" in str(e)
            out.append("ERR")
    assert out == model(9, size, shift or size, stride, False, errors)


def test_bad_arguments_raise_tf_error_types():
    ds = Dataset.range(3)
    for args, what in (((0,), "size"), ((-1,), "size"), ((2, 0), "shift"), ((2, 1, 0), "stride")):
        with pytest.raises(cv.errors.InvalidArgumentError,
                           match=f"Window {what} must be greater than zero"):
            ds.window(*args)
    with pytest.raises(TypeError):
        ds.window(2.5)
    with pytest.raises(TypeError):
        ds.window(2, shift="1")
    with pytest.raises(cv.errors.InvalidArgumentError, match="overflow"):
        ds.window(2 ** 62, stride=4)
    with pytest.raises(TypeError, match="not supported"):
        ds.window(2).window(2).element_spec


def test_dropped_iterators_mid_way_leave_no_threads():
    gc.collect()
    baseline = thread_count()

    def slow(x):
        time.sleep(0.002)
        return x

    ds = Dataset.range(10000).map(slow, num_parallel_calls=2).prefetch(3).window(5, 2)
    ds = ds.flat_map(lambda w: w.batch(5)).prefetch(2)
    for _ in range(3):
        it = iter(ds)
        assert next(it).tolist() == [0, 1, 2, 3, 4]
        del it
    gc.collect()
    deadline = time.monotonic() + 5
    while thread_count() > baseline and time.monotonic() < deadline:
        time.sleep(0.01)
    assert thread_count() == baseline
    assert cv._engine.live_iterators() == 0


def test_window_data_outlives_the_pipeline():
    it = iter(Dataset.range(6).map(lambda x: x * 2).window(3))
    w = next(it)
    del it
    gc.collect()
    assert [int(v) for v in w] == [0, 2, 4]


# -- against TensorFlow -------------------------------------------------------------


def tf_windows(ds):
    out, it = [], iter(ds)
    while True:
        try:
            w = next(it)
        except StopIteration:
            return out
        except Exception:  # noqa: BLE001 - tf.errors.InvalidArgumentError
            out.append("ERR")
            continue
        if isinstance(w, tuple):
            out.append(tuple([v.tolist() for v in c.as_numpy_iterator()] for c in w))
        elif isinstance(w, dict):
            out.append({k: [v.tolist() for v in c.as_numpy_iterator()] for k, c in w.items()})
        else:
            out.append([v.tolist() for v in w.as_numpy_iterator()])


@pytest.mark.parametrize("size,shift,stride,drop", GRID[::3])
def test_windows_equal_tf(tf, size, shift, stride, drop):
    for n in (0, 5, 11):
        t = tf.data.Dataset.range(n).window(size, shift, stride, drop)
        c = Dataset.range(n).window(size, shift, stride, drop)
        assert windows(c) == tf_windows(t)
        assert c.cardinality() == int(t.cardinality())


def test_structured_and_ragged_windows_equal_tf(tf):
    x = np.arange(7)
    t = tf.data.Dataset.from_tensor_slices({"a": x, "b": x * 2}).window(3, 2)
    c = Dataset.from_tensor_slices({"a": x, "b": x * 2}).window(3, 2)
    assert windows(c) == tf_windows(t)
    rows = [[], [1], [2, 2], [3, 3, 3], [4]]
    t = tf.data.Dataset.from_generator(lambda: iter(rows), tf.int64, output_shapes=[None])
    c = Dataset.from_generator(lambda: iter(rows), cv.int64, output_shapes=[None])
    assert windows(c.window(2, 1)) == tf_windows(t.window(2, 1))
    assert str(c.window(2).element_spec) == str(t.window(2).element_spec)




def test_window_flat_map_equals_tf(tf):
    t = tf.data.Dataset.range(9).window(4, 3, 2).flat_map(lambda w: w.batch(4))
    c = Dataset.range(9).window(4, 3, 2).flat_map(lambda w: w.batch(4))
    assert [v.tolist() for v in c] == [v.tolist() for v in t.as_numpy_iterator()]
    assert c.element_spec.shape == t.element_spec.shape.as_list()


def test_window_errors_equal_tf(tf):
    def tf_fail(x):
        return tf.cond(tf.equal(x, 3), lambda: tf.debugging.check_numerics(
            tf.constant(np.nan), "bad 3"), lambda: tf.constant(0.0)) + tf.cast(x, tf.float32)

    for size, shift, stride in ((2, None, 1), (3, 1, 1), (2, 1, 2)):
        t = tf.data.Dataset.range(8).map(tf_fail).window(size, shift, stride)
        c = Dataset.range(8).map(lambda x: np.float32(x)).map(failing_at({3})).window(
            size, shift, stride)
        got = []
        it = iter(c)
        while True:
            try:
                got.append(listed(next(it)))
            except StopIteration:
                break
            except ValueError:
                got.append("ERR")
        assert got == tf_windows(t)


def test_ctrl_c_while_a_window_fills_loses_nothing(run_python):
    from test_choose_sample import CTRL_C
    pipeline = ("Dataset.range(8).map(gate, num_parallel_calls=1).window(3, 2)"
                ".flat_map(lambda w: w.batch(3))")
    result = run_python(CTRL_C.format(pipeline=pipeline, gate_at=5))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1 [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6, 7]]"


def test_map_over_windows_gets_datasets():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "runs in Python" warning: datasets cannot trace
        ds = Dataset.range(7).window(3).map(lambda w: sum(int(x) for x in w),
                                            num_parallel_calls=2)
    assert [int(v) for v in ds] == [3, 12, 6]
