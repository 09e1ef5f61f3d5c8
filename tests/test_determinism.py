"""Parallelism and prefetching never change what a deterministic pipeline yields."""
import collections
import random
import time

import numpy as np
import pytest

import conveyor as tf

Dataset = tf.data.Dataset
AUTOTUNE = tf.data.AUTOTUNE
N = 400
FAIL_AT = 137


class Planted(Exception):
    pass


def jittery(x):
    # uneven per-element cost so parallel workers finish out of order
    x = int(x)
    if x % 7 == 0:
        time.sleep(0.0005)
    if x == FAIL_AT:
        raise Planted(f"element {x}")
    return np.array([x, x * x], np.int64)


def outcomes(ds, limit=10_000):
    """Everything the iterator produces, including errors, in order."""
    out = []
    it = iter(ds)
    for _ in range(limit):
        try:
            el = next(it)
        except StopIteration:
            out.append("END")
            # sticky end
            try:
                next(it)
                out.append("NOT-STICKY")
            except StopIteration:
                pass
            return out
        except Exception as e:  # noqa: BLE001
            out.append(("ERR", type(e).__name__, str(e)))
        else:
            out.append(np.asarray(el).tolist())
    raise AssertionError("iterator did not end")


def reference(batch=None):
    ds = Dataset.range(N).map(jittery)
    if batch:
        ds = ds.batch(batch)
    return outcomes(ds)


@pytest.fixture(scope="module")
def ref_map():
    return reference()


@pytest.fixture(scope="module")
def ref_batch():
    return reference(batch=8)


def test_reference_has_error_at_fixed_element(ref_map):
    assert ref_map[FAIL_AT] == ("ERR", "Planted", f"element {FAIL_AT}")
    assert ref_map[FAIL_AT + 1] == [FAIL_AT + 1, (FAIL_AT + 1) ** 2]
    assert len(ref_map) == N + 1 and ref_map[-1] == "END"


@pytest.mark.parametrize("npc", [1, 2, 4, AUTOTUNE])
@pytest.mark.parametrize("prefetch", [None, 0, 1, 8, AUTOTUNE])
def test_parallel_map_identical(ref_map, npc, prefetch):
    ds = Dataset.range(N).map(jittery, num_parallel_calls=npc, deterministic=True)
    if prefetch is not None:
        ds = ds.prefetch(prefetch)
    assert outcomes(ds) == ref_map


@pytest.mark.parametrize("npc", [2, AUTOTUNE])
def test_parallel_map_default_deterministic(ref_map, npc):
    assert outcomes(Dataset.range(N).map(jittery, num_parallel_calls=npc)) == ref_map


@pytest.mark.parametrize("map_npc", [None, 2, 4, AUTOTUNE])
@pytest.mark.parametrize("batch_npc", [None, 1, 2, AUTOTUNE])
def test_parallel_map_then_parallel_batch_identical(ref_batch, map_npc, batch_npc):
    ds = Dataset.range(N).map(jittery, num_parallel_calls=map_npc)
    ds = ds.batch(8, num_parallel_calls=batch_npc).prefetch(2)
    assert outcomes(ds) == ref_batch


def test_batch_error_position(ref_batch):
    # As TF's BatchDataset: the batch being filled when element 137 fails raises (its
    # partial contents, element 136, are dropped) and the next batch starts at element 138.
    assert ref_batch[FAIL_AT // 8][0] == "ERR"
    assert [r[0] for r in ref_batch[FAIL_AT // 8 + 1]] == list(range(138, 146))


@pytest.mark.parametrize("batch_npc", [2, 4, AUTOTUNE])
def test_parallel_batch_large_elements_identical(batch_npc):
    src = np.random.default_rng(0).standard_normal((300, 32, 8)).astype(np.float32)
    seq = [b.copy() for b in Dataset.from_tensor_slices(src).batch(7)]
    par = list(Dataset.from_tensor_slices(src).batch(7, num_parallel_calls=batch_npc))
    assert len(seq) == len(par)
    for a, b in zip(seq, par):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("npc", [2, 4, AUTOTUNE])
def test_nondeterministic_same_multiset(npc):
    def f(x):
        if int(x) % 5 == 0:
            time.sleep(0.001)
        return x * 2
    out = [int(v) for v in Dataset.range(N).map(f, num_parallel_calls=npc, deterministic=False)]
    assert collections.Counter(out) == collections.Counter(2 * i for i in range(N))


@pytest.mark.parametrize("npc", [2, 4])
def test_nondeterministic_same_multiset_with_error(npc):
    ds = Dataset.range(N).map(jittery, num_parallel_calls=npc, deterministic=False)
    res = outcomes(ds)
    errors = [r for r in res if isinstance(r, tuple)]
    values = [r for r in res if isinstance(r, list)]
    assert errors == [("ERR", "Planted", f"element {FAIL_AT}")]
    assert sorted(v[0] for v in values) == [i for i in range(N) if i != FAIL_AT]
    assert res[-1] == "END"


def test_nondeterministic_batch_same_multiset():
    ds = Dataset.range(N).batch(10, num_parallel_calls=4, deterministic=False)
    rows = sorted(tuple(b.tolist()) for b in ds)
    assert rows == [tuple(range(i, i + 10)) for i in range(0, N, 10)]


def test_options_deterministic_false_same_multiset():
    opts = tf.data.Options()
    opts.deterministic = False
    ds = Dataset.range(N).map(lambda x: x + 1, num_parallel_calls=4).with_options(opts)
    assert sorted(int(v) for v in ds) == list(range(1, N + 1))


def test_repeat_epochs_identical_under_parallelism():
    seq = outcomes(Dataset.range(50).map(jittery).repeat(3).batch(4))
    par = outcomes(Dataset.range(50).map(jittery, num_parallel_calls=4).repeat(3)
                   .batch(4, num_parallel_calls=2).prefetch(AUTOTUNE))
    assert par == seq


def test_many_iterators_in_a_row_identical(ref_map):
    ds = Dataset.range(N).map(jittery, num_parallel_calls=4).prefetch(4)
    for _ in range(3):
        assert outcomes(ds) == ref_map


def test_random_early_abandon_then_full_run(ref_map):
    rng = random.Random(1)
    ds = Dataset.range(N).map(jittery, num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE)
    for _ in range(5):
        it = iter(ds)
        for _ in range(rng.randrange(0, 50)):
            next(it)
        del it
    assert outcomes(ds) == ref_map
