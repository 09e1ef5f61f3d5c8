"""shuffle and list_files against real TensorFlow: the same seeds give the same order."""
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402


def tf_list(ds):
    return [v.tolist() if isinstance(v, np.ndarray) else v for v in ds.as_numpy_iterator()]


def cv_list(ds):
    return [v.tolist() if isinstance(v, np.ndarray) else v for v in ds]


@pytest.mark.parametrize("seed", [0, 1, 7, 2**31 + 5])
@pytest.mark.parametrize("buffer_size", [1, 2, 7, 20, 50])
@pytest.mark.parametrize("reshuffle", [None, True, False])
def test_seeded_shuffle_equals_tf_across_epochs(seed, buffer_size, reshuffle):
    t = tf.data.Dataset.range(20).shuffle(buffer_size, seed=seed, reshuffle_each_iteration=reshuffle)
    c = cv.data.Dataset.range(20).shuffle(buffer_size, seed=seed, reshuffle_each_iteration=reshuffle)
    assert cv_list(c.repeat(3)) == tf_list(t.repeat(3))
    # Separate iterators of the same dataset: the seed generator is shared, as in tf.data.
    assert [cv_list(c) for _ in range(3)] == [tf_list(t) for _ in range(3)]


def test_global_seed_equals_tf():
    tf.random.set_seed(1234)
    cv.random.set_seed(1234)
    t = [tf_list(tf.data.Dataset.range(30).shuffle(10)) for _ in range(3)]
    c = [cv_list(cv.data.Dataset.range(30).shuffle(10)) for _ in range(3)]
    assert c == t
    t2 = tf_list(tf.data.Dataset.range(30).shuffle(30, seed=5))
    c2 = cv_list(cv.data.Dataset.range(30).shuffle(30, seed=5))
    assert c2 == t2
    tf.random.set_seed(None)
    cv.random.set_seed(None)


def test_shuffle_of_structures_and_strings_equals_tf():
    x = (np.arange(12, dtype=np.int32), np.array([f"s{i}".encode() for i in range(12)], dtype=object))
    t = tf.data.Dataset.from_tensor_slices({"a": x[0], "b": x[1]}).shuffle(5, seed=3).batch(4)
    c = cv.data.Dataset.from_tensor_slices({"a": x[0], "b": x[1]}).shuffle(5, seed=3).batch(4)
    for tb, cb in zip(t.as_numpy_iterator(), c):
        assert tb["a"].tolist() == cb["a"].tolist() and tb["b"].tolist() == cb["b"].tolist()


def test_unseeded_shuffle_is_a_permutation_that_changes():
    c = cv.data.Dataset.range(100).shuffle(100)
    a, b = cv_list(c), cv_list(c)
    assert sorted(a) == list(range(100)) and a != b


def test_buffer_size_zero_raises_like_tf():
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.data.Dataset.range(3).shuffle(0)
    with pytest.raises(cv.errors.InvalidArgumentError, match="buffer_size must be greater than zero"):
        cv.data.Dataset.range(3).shuffle(0)


@pytest.fixture
def files(tmp_path):
    for name in ["b.txt", "a.txt", "c.txt", "d.log", "e.txt"]:
        (tmp_path / name).write_text(name)
    return tmp_path


def test_list_files_unshuffled_is_sorted_like_tf(files):
    pattern = str(files / "*.txt")
    assert cv_list(cv.data.Dataset.list_files(pattern, shuffle=False)) == tf_list(
        tf.data.Dataset.list_files(pattern, shuffle=False))


@pytest.mark.parametrize("seed", [1, 99])
def test_list_files_seeded_shuffle_equals_tf(files, seed):
    pattern = str(files / "*.txt")
    t = tf.data.Dataset.list_files(pattern, seed=seed)
    c = cv.data.Dataset.list_files(pattern, seed=seed)
    assert [cv_list(c) for _ in range(3)] == [tf_list(t) for _ in range(3)]
    assert cv.data.Dataset.list_files(pattern, seed=seed).element_spec == cv.TensorSpec([], cv.string)


def test_list_files_no_match_raises_like_tf(files):
    pattern = str(files / "*.nothing")
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.data.Dataset.list_files(pattern)
    with pytest.raises(cv.errors.InvalidArgumentError, match="No files matched pattern"):
        cv.data.Dataset.list_files(pattern)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("after", [
    lambda t, ds: ds.map(lambda x: x),  # Python: its spec comes from a probe run
    lambda t, ds: ds.map(lambda x: x).cache(),
    lambda t, ds: ds.interleave(lambda x: t.data.Dataset.from_tensors(x).repeat(2),
                                cycle_length=2),
])
def test_a_spec_probe_draws_nothing_from_a_seeded_shuffle(after):
    # Learning a Python function's output spec runs the pipeline for one
    # element; that run must not take the shuffle's first seed.
    def make(t):
        return after(t, t.data.Dataset.range(10).shuffle(3, seed=3))
    ours, theirs = make(cv), make(tf)
    ours.element_spec  # the probe
    assert [cv_list(ours) for _ in range(2)] == [tf_list(theirs) for _ in range(2)]
