"""group_by_window and bucket_by_sequence_length, against a Python model of
tf.data's GroupByWindowDataset and, where installed, tf.data itself."""
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
needs_padded_batch = pytest.mark.skipif(not hasattr(Dataset, "padded_batch"),
                                        reason="Dataset.padded_batch not available")


@pytest.fixture(scope="module")
def tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return pytest.importorskip("tensorflow")


def model(elements, key, size_of):
    """tf.data's groups: (key, window) in output order."""
    groups, sizes, out = {}, {}, []
    for e in elements:
        k = key(e)
        if k not in sizes:
            sizes[k] = size_of(k)
        groups.setdefault(k, []).append(e)
        if len(groups[k]) == sizes[k]:
            out.append((k, groups.pop(k)))
    out += [(k, groups[k]) for k in sorted(groups)]  # the ordered map's remainder
    return out


def keyed_windows(ds):
    return [(int(k), w.tolist()) for k, w in ds]


def reduce_to_pairs(key, window):
    return window.batch(1000).map(lambda w: (key, w))


KEYS = [5, 1, 3, 5, 1, 7, 3, 3, 5, 1, 2, -4, 0, 3, 3, 3]


@pytest.mark.parametrize("size", [1, 2, 3, 100])
def test_groups_match_the_model(size):
    ds = Dataset.from_tensor_slices(np.array(KEYS, np.int64)).group_by_window(
        lambda x: x, reduce_to_pairs, window_size=size)
    assert keyed_windows(ds) == model(KEYS, lambda x: x, lambda k: size)


def test_window_size_func_is_asked_once_per_key():
    asked = []

    def size_of(key):
        asked.append(int(key))
        return key % 3 + 1

    ds = Dataset.range(20).group_by_window(lambda x: x % 4, reduce_to_pairs,
                                           window_size_func=size_of)
    expected = model(range(20), lambda x: x % 4, lambda k: k % 3 + 1)
    assert keyed_windows(ds) == expected
    assert sorted(asked) == [0, 1, 2, 3]


def test_reduce_gets_the_key_and_a_dataset_of_whole_elements():
    ds = Dataset.from_tensor_slices({"id": np.arange(6), "v": np.arange(6) * 10.0})
    seen = []

    def reduce(key, window):
        seen.append((type(key), window.element_spec))
        return window.map(lambda e: e["v"] + key)

    got = [float(v) for v in ds.group_by_window(lambda e: e["id"] % 2, reduce, window_size=3)]
    assert got == [0.0, 20.0, 40.0, 11.0, 31.0, 51.0]
    assert seen[0][0] is np.int64
    assert seen[-1][1] == {"id": cv.TensorSpec([], cv.int64), "v": cv.TensorSpec([], cv.float64)}


def test_tuple_elements_are_unpacked_for_key_func():
    ds = Dataset.from_tensor_slices((np.arange(6), np.array([0, 1, 0, 1, 1, 1])))
    out = ds.group_by_window(lambda i, k: k, lambda k, w: w.map(lambda i, k: i), window_size=2)
    assert [int(v) for v in out] == [0, 2, 1, 3, 4, 5]


def test_ragged_groups():
    rows = [[1], [2, 2], [3, 3, 3], [4], [5, 5]]
    ds = Dataset.from_generator(lambda: iter(rows), cv.int64, output_shapes=[None])
    out = ds.group_by_window(lambda r: len(r) % 2, lambda k, w: w, window_size=2)
    assert [v.tolist() for v in out] == [[1], [3, 3, 3], [2, 2], [5, 5], [4]]


def test_element_spec_claims_no_dimension_that_depends_on_the_key():
    ds = Dataset.range(9).group_by_window(
        lambda x: x % 3, lambda k, w: w.batch(int(k) + 1, drop_remainder=True), window_size=3)
    assert ds.element_spec == cv.TensorSpec([None], cv.int64)
    assert sorted(len(v) for v in ds) == [1, 1, 1, 2, 3]


def test_element_spec_does_not_run_the_input():
    pulled = []

    def gen():
        for i in range(4):
            pulled.append(i)
            yield i

    src = Dataset.from_generator(gen, output_signature=cv.TensorSpec([], cv.int64))
    ds = src.group_by_window(lambda x: x % 2, lambda k, w: w.batch(2), window_size=2)
    assert ds.element_spec == cv.TensorSpec([None], cv.int64)
    assert pulled == []
    assert [v.tolist() for v in ds] == [[0, 2], [1, 3]]


def test_cardinality_as_tf():
    fn = dict(key_func=lambda x: x % 2, reduce_func=lambda k, w: w, window_size=2)
    assert Dataset.range(5).group_by_window(**fn).cardinality() == cv.data.UNKNOWN_CARDINALITY
    assert Dataset.range(5).repeat().group_by_window(**fn).cardinality() == \
        cv.data.INFINITE_CARDINALITY


def test_experimental_group_by_window():
    ds = Dataset.range(6).apply(cv.data.experimental.group_by_window(
        lambda x: x % 3, lambda k, w: w.batch(2), window_size=2))
    assert [v.tolist() for v in ds] == [[0, 3], [1, 4], [2, 5]]


def iterate(ds):
    out, it = [], iter(ds)
    while True:
        try:
            out.append(next(it).tolist())
        except StopIteration:
            return out
        except Exception as e:  # noqa: BLE001 - recorded for the assertion
            out.append(type(e).__name__)


def test_errors_surface_at_their_element_and_grouping_goes_on():
    def key(x):
        if x == 2:
            raise KeyError("no key for 2")
        return x % 2

    ds = Dataset.range(7).group_by_window(key, lambda k, w: w.batch(2), window_size=2)
    assert iterate(ds) == ["KeyError", [1, 3], [0, 4], [6], [5]]

    def boom(x):
        if x == 1:
            raise ValueError("input")
        return x

    ds = Dataset.range(5).map(boom).group_by_window(lambda x: 0, lambda k, w: w.batch(2),
                                                     window_size=2)
    assert iterate(ds) == ["ValueError", [0, 2], [3, 4]]


@pytest.mark.parametrize("kwargs,message", [
    (dict(window_size=0), "Window size must be greater than zero, but got 0."),
    (dict(window_size=-2), "Window size must be greater than zero, but got -2."),
    (dict(window_size_func=lambda k: k - 1), "Window size must be greater than zero, but got -1."),
])
def test_bad_window_sizes_raise_invalid_argument_when_iterated(kwargs, message):
    ds = Dataset.range(4).group_by_window(lambda x: x % 2, lambda k, w: w, **kwargs)
    with pytest.raises(cv.errors.InvalidArgumentError, match=message):
        list(ds)


def test_bad_functions_raise_tf_error_types():
    fn = lambda k, w: w.batch(2)  # noqa: E731
    with pytest.raises(ValueError, match="Either the `window_size` argument or"):
        Dataset.range(3).group_by_window(lambda x: x, fn)
    with pytest.raises(ValueError, match="Either the `window_size` argument or"):
        Dataset.range(3).group_by_window(lambda x: x, fn, 2, lambda k: k)
    with pytest.raises(TypeError):
        Dataset.range(3).group_by_window("x", fn, 2)
    with pytest.raises(TypeError):
        Dataset.range(3).group_by_window(lambda x: x, fn, 2.5)
    with pytest.raises(TypeError, match="Expected int64, but got 1.5"):
        list(Dataset.range(3).group_by_window(lambda x: 1.5, fn, 2))
    with pytest.raises(ValueError, match="must return a single `tf.int64` scalar"):
        list(Dataset.range(3).group_by_window(lambda x: np.array([1, 2]), fn, 2))
    with pytest.raises(TypeError, match="`reduce_func` must return a single `tf.data.Dataset`"):
        list(Dataset.range(3).group_by_window(lambda x: x, lambda k, w: 3, 2))
    with pytest.raises(TypeError, match="Expected int64"):
        list(Dataset.range(3).group_by_window(lambda x: x, fn, window_size_func=lambda k: "2"))


def test_dropped_iterators_mid_way_leave_no_threads():
    gc.collect()
    baseline = thread_count()

    def slow(x):
        time.sleep(0.002)
        return x

    ds = Dataset.range(10000).map(slow, num_parallel_calls=2).prefetch(2).group_by_window(
        lambda x: x % 3, lambda k, w: w.batch(4).prefetch(1), window_size=4).prefetch(2)
    for _ in range(3):
        it = iter(ds)
        assert next(it).tolist() == [0, 3, 6, 9]
        del it
    gc.collect()
    deadline = time.monotonic() + 5
    while thread_count() > baseline and time.monotonic() < deadline:
        time.sleep(0.01)
    assert thread_count() == baseline
    assert cv._engine.live_iterators() == 0


# -- bucket_by_sequence_length -----------------------------------------------------

ELEMENTS = [[0], [1, 2, 3, 4], [5, 6, 7], [7, 8, 9, 10, 11], [13, 14, 15, 16, 19, 20], [21, 22]]


def sequences():
    return Dataset.from_generator(lambda: iter(ELEMENTS), cv.int64, output_shapes=[None])


def test_bucket_no_padding_batches_each_bucket():
    ds = sequences().map(lambda e: e[:1]).bucket_by_sequence_length(
        lambda e: 3, [3, 5], [2, 2, 2], no_padding=True)
    assert [v.tolist() for v in ds] == [[[0], [1]], [[5], [7]], [[13], [21]]]


def test_bucket_bad_arguments():
    with pytest.raises(ValueError, match=r"`len\(bucket_batch_sizes\)` must equal"):
        sequences().bucket_by_sequence_length(len, [3, 5], [2, 2])
    with pytest.raises(TypeError):
        sequences().bucket_by_sequence_length("len", [3, 5], [2, 2, 2])


@needs_padded_batch
def test_bucket_pads_each_batch_to_its_longest():
    ds = sequences().bucket_by_sequence_length(len, [3, 5], [2, 2, 2])
    assert [v.tolist() for v in ds] == [[[1, 2, 3, 4], [5, 6, 7, 0]],
                                        [[7, 8, 9, 10, 11, 0], [13, 14, 15, 16, 19, 20]],
                                        [[0, 0], [21, 22]]]
    assert ds.element_spec == cv.TensorSpec([None, None], cv.int64)


@needs_padded_batch
def test_bucket_padding_options():
    ds = sequences().bucket_by_sequence_length(len, [3, 5, 7], [2, 2, 2, 2],
                                               pad_to_bucket_boundary=True)
    assert [v.tolist() for v in ds] == [[[1, 2, 3, 4], [5, 6, 7, 0]],
                                        [[7, 8, 9, 10, 11, 0], [13, 14, 15, 16, 19, 20]],
                                        [[0, 0], [21, 22]]]
    ds = sequences().bucket_by_sequence_length(len, [3, 5], [2, 2, 2], padded_shapes=[8],
                                               padding_values=np.int64(-1))
    assert [v.tolist()[0] for v in ds] == [[1, 2, 3, 4, -1, -1, -1, -1],
                                           [7, 8, 9, 10, 11, -1, -1, -1],
                                           [0, -1, -1, -1, -1, -1, -1, -1]]
    ds = sequences().bucket_by_sequence_length(len, [3, 5], [2, 2, 2],
                                               pad_to_bucket_boundary=True)
    with pytest.raises(cv.errors.InvalidArgumentError, match="pad_to_bucket_boundary"):
        list(ds)
    ds = sequences().bucket_by_sequence_length(len, [2], [3, 3], drop_remainder=True)
    assert [v.tolist() for v in ds] == [[[1, 2, 3, 4, 0], [5, 6, 7, 0, 0], [7, 8, 9, 10, 11]]]


# -- against TensorFlow -------------------------------------------------------------


def test_groups_equal_tf(tf):
    keys = np.array(KEYS, np.int64)

    def make(D, size, size_func):
        return D.from_tensor_slices(keys).group_by_window(
            lambda x: x, lambda k, w: w.batch(1000).map(lambda b: (k, b)), window_size=size,
            window_size_func=size_func)

    for size, size_func in ((2, None), (5, None), (None, lambda k: k % 3 + 1)):
        t, c = make(tf.data.Dataset, size, size_func), make(Dataset, size, size_func)
        assert keyed_windows(c) == [(int(k), w.tolist()) for k, w in t.as_numpy_iterator()]
        assert c.cardinality() == int(t.cardinality())
        assert c.element_spec[1].shape == t.element_spec[1].shape.as_list() == [None]


def test_ragged_groups_equal_tf(tf):
    t = tf.data.Dataset.from_generator(lambda: iter(ELEMENTS), tf.int64, output_shapes=[None])
    t = t.group_by_window(lambda e: tf.cast(tf.size(e) % 2, tf.int64),
                          lambda k, w: w.flat_map(lambda e: tf.data.Dataset.from_tensors(e)),
                          window_size=2)
    c = sequences().group_by_window(lambda e: len(e) % 2,
                                    lambda k, w: w.flat_map(lambda e: Dataset.from_tensors(e)),
                                    window_size=2)
    assert [v.tolist() for v in c] == [v.tolist() for v in t.as_numpy_iterator()]


@needs_padded_batch
@pytest.mark.parametrize("kwargs", [
    dict(), dict(pad_to_bucket_boundary=True, bucket_boundaries=[3, 5, 7]),
    dict(padded_shapes=[8], padding_values=np.int64(-1)), dict(drop_remainder=True),
    dict(bucket_boundaries=[2], bucket_batch_sizes=[3, 1]),
])
def test_bucket_by_sequence_length_equals_tf(tf, kwargs):
    kwargs = dict(kwargs)
    boundaries = kwargs.pop("bucket_boundaries", [3, 5])
    sizes = kwargs.pop("bucket_batch_sizes", [2] * (len(boundaries) + 1))
    t = tf.data.Dataset.from_generator(lambda: iter(ELEMENTS), tf.int64, output_shapes=[None])
    t = t.bucket_by_sequence_length(lambda e: tf.shape(e)[0], boundaries, sizes, **kwargs)
    c = sequences().bucket_by_sequence_length(len, boundaries, sizes, **kwargs)
    assert [v.tolist() for v in c] == [v.tolist() for v in t.as_numpy_iterator()]
    assert c.element_spec == cv.TensorSpec([None, None], cv.int64)
    assert c.element_spec.shape.is_compatible_with(t.element_spec.shape.as_list())


def test_ctrl_c_while_grouping_loses_nothing(run_python):
    from test_choose_sample import CTRL_C
    pipeline = ("Dataset.range(8).map(gate, num_parallel_calls=1).group_by_window("
                "lambda x: x % 2, lambda k, w: w.batch(2), window_size=2)")
    result = run_python(CTRL_C.format(pipeline=pipeline, gate_at=5))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1 [[0, 2], [1, 3], [4, 6], [5, 7]]"
