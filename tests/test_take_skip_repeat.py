"""take / skip / repeat: counts, negative counts, epochs, cardinality."""
import pytest

import conveyor as tf

Dataset = tf.data.Dataset
INF, UNK = tf.data.INFINITE_CARDINALITY, tf.data.UNKNOWN_CARDINALITY


def gen_ds(n):
    return Dataset.from_generator(lambda: iter(range(n)), output_signature=tf.TensorSpec([], tf.int64))


@pytest.mark.parametrize("count,expected", [(0, []), (1, [0]), (3, [0, 1, 2]), (5, [0, 1, 2, 3, 4]),
                                            (100, [0, 1, 2, 3, 4]), (-1, [0, 1, 2, 3, 4])])
def test_take(count, expected):
    ds = Dataset.range(5).take(count)
    assert list(ds) == expected
    assert ds.cardinality() == len(expected)


def test_take_negative_other_than_minus_one_takes_all():
    assert list(Dataset.range(4).take(-7)) == [0, 1, 2, 3]


@pytest.mark.parametrize("count,expected", [(0, [0, 1, 2, 3, 4]), (2, [2, 3, 4]), (5, []),
                                            (100, []), (-1, [])])
def test_skip(count, expected):
    ds = Dataset.range(5).skip(count)
    assert list(ds) == expected
    assert ds.cardinality() == len(expected)


@pytest.mark.parametrize("count,expected", [(0, []), (1, [1, 2, 3]), (3, [1, 2, 3] * 3)])
def test_repeat_finite(count, expected):
    ds = Dataset.from_tensor_slices([1, 2, 3]).repeat(count)
    assert list(ds) == expected
    assert ds.cardinality() == len(expected)


@pytest.mark.parametrize("count", [None, -1])
def test_repeat_forever(count):
    ds = Dataset.from_tensor_slices([1, 2, 3]).repeat(count)
    assert ds.cardinality() == INF
    assert list(ds.take(8)) == [1, 2, 3, 1, 2, 3, 1, 2]
    with pytest.raises(TypeError):
        len(ds)


def test_repeat_empty_forever_terminates():
    ds = Dataset.range(0).repeat()
    assert list(ds) == []
    assert ds.cardinality() == 0


def test_repeat_forever_of_filtered_to_empty_generator_terminates():
    # an input that is empty only at run time must not make repeat() spin forever
    ds = gen_ds(0).repeat()
    assert list(ds.take(3)) == []


def test_take_skip_repeat_composition():
    ds = Dataset.range(10).skip(2).take(5).repeat(2).skip(3).take(4)
    expected = ([2, 3, 4, 5, 6] * 2)[3:][:4]
    assert list(ds) == expected
    assert ds.cardinality() == 4


def test_repeat_reruns_map_each_epoch():
    calls = []

    def f(x):
        calls.append(int(x))
        return x
    assert list(Dataset.range(3).map(f).repeat(2)) == [0, 1, 2, 0, 1, 2]
    assert calls == [0, 1, 2, 0, 1, 2]


def test_take_from_infinite():
    ds = Dataset.range(4).repeat().take(10)
    assert ds.cardinality() == 10
    assert list(ds) == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]


def test_skip_from_infinite_stays_infinite():
    ds = Dataset.range(4).repeat().skip(3)
    assert ds.cardinality() == INF
    assert list(ds.take(3)) == [3, 0, 1]


def test_take_does_not_pull_extra_elements():
    calls = []

    def f(x):
        calls.append(int(x))
        return x
    assert list(Dataset.range(100).map(f).take(3)) == [0, 1, 2]
    assert calls == [0, 1, 2]


def test_unknown_cardinality_rules():
    g = gen_ds(5)
    assert g.take(3).cardinality() in (UNK,)
    assert g.skip(3).cardinality() == UNK
    assert g.repeat(2).cardinality() == UNK
    assert g.repeat().cardinality() == INF
    assert list(g.take(3)) == [0, 1, 2]
    assert list(g.skip(3)) == [3, 4]
    assert list(g.repeat(2)) == [0, 1, 2, 3, 4] * 2


def test_take_zero_of_unknown_is_empty():
    assert list(gen_ds(5).take(0)) == []
    assert gen_ds(5).take(0).cardinality() in (0, UNK)


def test_repeat_of_batch_restarts_batches():
    out = [b.tolist() for b in Dataset.range(5).batch(2).repeat(2)]
    assert out == [[0, 1], [2, 3], [4], [0, 1], [2, 3], [4]]


def test_batch_of_repeat_crosses_epochs():
    out = [b.tolist() for b in Dataset.range(5).repeat(2).batch(3)]
    assert out == [[0, 1, 2], [3, 4, 0], [1, 2, 3], [4]]


def test_end_is_sticky():
    for ds in (Dataset.range(5).take(2), Dataset.range(5).skip(4), Dataset.range(1).repeat(2)):
        it = iter(ds)
        list(it)
        for _ in range(2):
            with pytest.raises(StopIteration):
                next(it)


def test_numpy_integer_counts():
    import numpy as np
    assert list(Dataset.range(5).take(np.int64(2)).skip(np.int32(1)).repeat(np.int16(2))) == [1, 1]


def test_iterator_get_next_raises_out_of_range_at_the_end():
    it = iter(Dataset.range(2))
    assert it.get_next() == 0
    assert next(it) == 1
    with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
        it.get_next()
    with pytest.raises(StopIteration):
        next(it)
