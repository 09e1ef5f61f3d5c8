"""Dataset.prefetch: never changes order or values; buffer sizes; interaction with errors."""
import threading
import time

import numpy as np
import pytest

import conveyor as tf

Dataset = tf.data.Dataset
AUTOTUNE = tf.data.AUTOTUNE


@pytest.mark.parametrize("buf", [0, 1, 2, 16, AUTOTUNE])
def test_order_and_values_unchanged(buf):
    assert list(Dataset.range(300).prefetch(buf)) == list(range(300))


@pytest.mark.parametrize("buf", [0, 1, 3, AUTOTUNE])
def test_prefetch_batches(buf):
    out = [b.tolist() for b in Dataset.range(7).batch(3).prefetch(buf)]
    assert out == [[0, 1, 2], [3, 4, 5], [6]]


def test_element_spec_and_cardinality_unchanged():
    ds = Dataset.from_tensor_slices(np.zeros((5, 2), np.float32)).batch(2)
    p = ds.prefetch(2)
    assert p.element_spec == ds.element_spec
    assert p.cardinality() == 3
    assert len(p) == 3


def test_prefetch_of_empty():
    assert list(Dataset.range(0).prefetch(4)) == []


def test_chained_prefetch():
    ds = Dataset.range(50).prefetch(1).map(lambda x: x + 1).prefetch(3).prefetch(AUTOTUNE)
    assert list(ds) == list(range(1, 51))


def test_prefetch_structured():
    ds = Dataset.from_tensor_slices({"a": np.arange(4), "b": (np.arange(4) * 2,)}).prefetch(2)
    out = list(ds)
    assert out[3] == {"a": 3, "b": (6,)}


def test_prefetch_infinite_with_take():
    assert list(Dataset.range(3).repeat().prefetch(5).take(7)) == [0, 1, 2, 0, 1, 2, 0]


def test_prefetch_produces_ahead():
    produced = []
    lock = threading.Lock()

    def f(x):
        with lock:
            produced.append(int(x))
        return x
    it = iter(Dataset.range(20).map(f).prefetch(4))
    assert next(it) == 0
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with lock:
            if len(produced) >= 3:
                break
        time.sleep(0.01)
    with lock:
        assert len(produced) >= 3, produced
        assert len(produced) <= 1 + 4 + 2, produced  # bounded by the buffer (+ in-flight slack)
    assert list(it) == list(range(1, 20))


def test_exception_through_prefetch_keeps_type_and_position():
    class E(Exception):
        pass

    def f(x):
        if x == 5:
            raise E("five")
        return x
    it = iter(Dataset.range(10).map(f).prefetch(3))
    got = []
    with pytest.raises(E, match="five"):
        while True:
            got.append(int(next(it)))
    assert got == [0, 1, 2, 3, 4]
    assert list(it) == [6, 7, 8, 9]


def test_abandoned_iterator_does_not_hang():
    ds = Dataset.range(10 ** 9).prefetch(8)
    for _ in range(5):
        it = iter(ds)
        next(it)
        del it


def test_end_is_sticky():
    it = iter(Dataset.range(2).prefetch(4))
    assert list(it) == [0, 1]
    for _ in range(3):
        with pytest.raises(StopIteration):
            next(it)


def test_bad_buffer_size():
    with pytest.raises(tf.errors.InvalidArgumentError, match="buffer_size"):
        Dataset.range(3).prefetch(-2)
