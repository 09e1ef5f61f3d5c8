"""Dataset.shard: positions, arguments, cardinality, errors while skipping."""
import gc

import numpy as np
import pytest

import conveyor as cv

pytestmark = pytest.mark.filterwarnings("ignore:.*runs in Python per element")  # on purpose

Dataset = cv.data.Dataset


@pytest.mark.parametrize("n", [0, 1, 7, 10])
@pytest.mark.parametrize("k", [1, 2, 3, 11])
def test_shards_partition_the_input(n, k):
    shards = [[int(v) for v in Dataset.range(n).shard(k, i)] for i in range(k)]
    for i, s in enumerate(shards):
        assert s == list(range(i, n, k))
        assert Dataset.range(n).shard(k, i).cardinality() == len(s)


def test_structure_and_numpy_arguments():
    ds = Dataset.from_tensor_slices({"s": np.array([b"a", b"b", b"c"]), "i": np.arange(3)})
    assert [d["s"] for d in ds.shard(np.int64(2), np.int32(1))] == [b"b"]
    assert ds.shard(2, 0).element_spec == ds.element_spec


def test_cardinality_of_infinite_and_unknown_inputs():
    assert Dataset.range(3).repeat().shard(2, 1).cardinality() == -1
    assert Dataset.range(3).filter(lambda x: True).shard(2, 1).cardinality() == -2


@pytest.mark.parametrize("args, exc", [
    ((0, 0), cv.errors.InvalidArgumentError), ((3, 3), cv.errors.InvalidArgumentError),
    ((3, -1), cv.errors.InvalidArgumentError), ((-2, 0), cv.errors.InvalidArgumentError),
    ((2.0, 0), TypeError), (("2", 0), TypeError), ((2, None), TypeError)])
def test_bad_arguments(args, exc):
    with pytest.raises(exc):
        Dataset.range(3).shard(*args)


def test_shard_hint_cannot_be_iterated():
    ds = Dataset.range(4).shard(cv.data.experimental.SHARD_HINT, 0)
    with pytest.raises(cv.errors.FailedPreconditionError, match="SHARD_HINT"):
        iter(ds)


def test_errors_while_skipping_follow_tf():
    def fn(x):
        if x == 1:
            raise ValueError("boom")
        return x
    it = iter(Dataset.range(10).map(fn).shard(3, 2))
    with pytest.raises(ValueError):
        next(it)
    # tf.data does not count the elements skipped before the error: the next
    # element is 4, not 5 (tests/test_tf_transformations.py compares with TF).
    assert [int(v) for v in it] == [4, 7]


def test_partially_consumed_iterator_is_released():
    gc.collect()
    it = iter(Dataset.range(10 ** 6).map(lambda x: x, num_parallel_calls=2).shard(5, 3).prefetch(2))
    assert [int(next(it)) for _ in range(3)] == [3, 8, 13]
    del it
    gc.collect()
    assert cv._engine.live_iterators() == 0
