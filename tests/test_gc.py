"""Reference cycles through engine datasets are collected by the garbage collector.

A Python function held by an engine dataset can refer back to the conveyor Dataset
that holds that engine dataset (a closure over the pipeline, a method of an object
that owns it). _engine.Dataset reports the Python objects of the part of the engine
graph it owns alone, live iterators made from it included (see
csrc/python/dataset_type.c), so gc.collect() frees such a cycle; what another
holder shares is never reported, so a live iterator keeps working through a
collection (tests/test_iterator_gc.py: cycles through live iterators).
"""
import gc
import threading
import warnings
import weakref

import numpy as np
import pytest

import conveyor as tf
from conveyor import _engine

Dataset = tf.data.Dataset


class _Sentinel:
    """Something only the user function's closure holds."""


@pytest.fixture(autouse=True)
def _quiet():
    # The functions below run in Python on purpose (TracingWarning says so).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _py(x):
    """Identity that cannot be traced, so that map/filter keep the Python callable."""
    return np.asarray(x).copy()


def _assert_cycle_collected(make, expected):
    """make(sentinel, box) builds a dataset whose Python callable closes over box and
    sentinel; box["ds"] = the dataset closes the cycle. After one full pass (which
    builds the engine pipeline) and dropping every outside reference, gc.collect()
    must free the dataset and, with it, the engine dataset that holds the callable."""
    sentinel = _Sentinel()
    box = {}
    ds = make(sentinel, box)
    box["ds"] = ds
    assert [np.asarray(v).tolist() for v in ds] == expected
    sentinel_ref, ds_ref = weakref.ref(sentinel), weakref.ref(ds)
    del ds, box, sentinel
    gc.collect()
    assert ds_ref() is None, "the Dataset on the cycle was not collected"
    assert sentinel_ref() is None, "the engine dataset holding the function was not freed"


@pytest.mark.parametrize("parallel", [None, 2])
def test_cycle_through_map_function(parallel):
    def make(sentinel, box):
        def fn(x):
            assert box and sentinel
            return _py(x)
        return Dataset.range(5).map(fn, num_parallel_calls=parallel)
    _assert_cycle_collected(make, [0, 1, 2, 3, 4])


def test_cycle_through_filter_predicate():
    def make(sentinel, box):
        def keep(x):
            assert box and sentinel
            return bool(np.asarray(x) % 2 == 0)
        return Dataset.range(6).filter(keep)
    _assert_cycle_collected(make, [0, 2, 4])


def test_cycle_through_from_generator():
    def make(sentinel, box):
        def gen():
            assert box is not None and sentinel
            yield from range(3)
        return Dataset.from_generator(gen, output_signature=tf.TensorSpec([], tf.int64))
    _assert_cycle_collected(make, [0, 1, 2])


def test_cycle_through_interleave_function():
    def make(sentinel, box):
        def inner(x):
            assert box and sentinel
            return Dataset.from_tensors(x).repeat(2)
        return Dataset.range(3).interleave(inner, cycle_length=2, block_length=1)
    _assert_cycle_collected(make, [0, 1, 0, 1, 2, 2])


def test_cycle_through_flat_map():
    def make(sentinel, box):
        def inner(x):
            assert box and sentinel
            return Dataset.from_tensors(x).repeat(2)
        return Dataset.range(3).flat_map(inner)
    _assert_cycle_collected(make, [0, 0, 1, 1, 2, 2])


def test_cycle_through_a_stage_below_others():
    """Every conveyor Dataset of the chain holds its own engine dataset: the map's is
    shared by its wrapper and the batch above, all wrappers, all on the cycle."""
    def make(sentinel, box):
        def fn(x):
            assert box and sentinel
            return _py(x)
        return Dataset.range(8).map(fn).batch(3).prefetch(2)
    _assert_cycle_collected(make, [[0, 1, 2], [3, 4, 5], [6, 7]])


def test_cycle_through_both_inputs_of_a_zip():
    def make(sentinel, box):
        def fn(x):
            assert box and sentinel
            return _py(x)
        left = Dataset.range(3).map(fn)
        return Dataset.zip((left, left.map(fn))).map(lambda a, b: (a, b))
    _assert_cycle_collected(make, [[0, 0], [1, 1], [2, 2]])


def _cycle(build):
    """A dataset built by build(fn) whose Python fn closes over a box holding the
    dataset; returns (dataset, box, weakref to a sentinel only fn holds)."""
    sentinel = _Sentinel()
    box = {}

    def fn(x):
        assert box and sentinel
        return _py(x)
    ds = build(fn)
    box["ds"] = ds
    return ds, box, weakref.ref(sentinel)


def test_shared_engine_dataset_is_collected_once_no_longer_shared():
    ds, box, sentinel_ref = _cycle(lambda fn: Dataset.range(4).map(fn))
    other = ds.take(2)  # its engine dataset shares the map's
    assert list(other) == [0, 1] and list(ds) == [0, 1, 2, 3]
    del ds, box
    gc.collect()
    assert sentinel_ref() is not None  # reachable from `other`
    assert list(other) == [0, 1]
    del other
    gc.collect()
    assert sentinel_ref() is None


@pytest.mark.parametrize("parallel", [None, 4])
def test_live_iterator_survives_collection(parallel):
    ds, box, sentinel_ref = _cycle(
        lambda fn: Dataset.range(200).map(fn, num_parallel_calls=parallel).prefetch(4))
    it = iter(ds)
    box["it"] = it  # the iterator is on the cycle too
    out = [next(it) for _ in range(10)]
    del ds, box
    for _ in range(3):
        gc.collect()
        out.append(next(it))
    out.extend(it)
    assert out == list(range(200))
    assert sentinel_ref() is not None
    del it
    gc.collect()  # exhausted: the iterator let go of the engine, the cycle goes
    assert sentinel_ref() is None


def test_collections_from_other_threads_while_iterating():
    """gc runs on other threads (allocation-triggered) while workers call Python."""
    def fn(x):
        return _py(x) + 1
    ds = Dataset.range(300).map(fn, num_parallel_calls=4)
    stop = threading.Event()

    def collect():
        while not stop.is_set():
            gc.collect()
    threads = [threading.Thread(target=collect) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for _ in range(3):
            assert list(ds) == list(range(1, 301))
    finally:
        stop.set()
        for t in threads:
            t.join()


def _engine_map(fn, convert):
    return _engine.map(_engine.range(0, 5, 1, tf.int64._code), fn, convert, 1, True, "test map")


def _reports(engine_ds, obj):
    return any(r is obj for r in gc.get_referents(engine_ds))


def test_engine_dataset_reports_its_functions_while_wrappers_and_their_iterators_own_them():
    def fn(x):
        return [x]

    def convert(result):
        return result
    ds = _engine_map(fn, convert)
    assert _reports(ds, fn) and _reports(ds, convert)
    it = ds.make_iterator(lambda: (0, None))  # its pipeline is accounted for: ds still reports
    assert _reports(ds, fn) and _reports(it, ds)
    assert list(it) == [0, 1, 2, 3, 4]
    assert not _reports(it, ds)  # finished: the pipeline let go of the dataset
    del it
    assert _reports(ds, fn)
    above = _engine.take(ds, 3)  # held by a wrapper's dataset: the chain is still owned
    assert _reports(ds, fn) and not _reports(above, fn) and _reports(above, ds)
    it = above.make_iterator(lambda: (0, None))  # an iterator above, reported by its iterator
    assert _reports(ds, fn) and _reports(it, above)
    assert next(it) == 0
    second = ds.make_iterator(lambda: (0, None))  # two pipelines, both accounted for
    assert next(second) == 0 and _reports(ds, fn)
    del second
    assert list(it) == [1, 2]
    del it
    assert _reports(ds, fn)
    del ds  # the wrapper lives on in `above`, which holds it
    held = [r for r in gc.get_referents(above) if type(r) is _engine.Dataset]
    assert len(held) == 1 and _reports(held[0], fn)


def test_interleave_inner_dataset_is_not_reported_while_its_iterator_is_open():
    """A dataset that an interleave function returns is held by the open slot
    (a holder that no wrapper accounts for): its functions are not reported
    until that inner iterator ends."""
    def fn(x):
        return [x]
    inner = _engine_map(fn, lambda result: result)
    outer = _engine.interleave(_engine.range(0, 1, 1, tf.int64._code), lambda _: inner, 1, 1, 0,
                               True, "test interleave")
    it = outer.make_iterator(lambda: (0, None))
    assert next(it) == 0
    assert not _reports(inner, fn)
    assert list(it) == [1, 2, 3, 4]
    assert _reports(inner, fn)


def test_live_iterator_over_a_lower_stage_keeps_the_chain_alive():
    stages = []

    def build(fn):
        stages.append(Dataset.range(50).map(fn))
        return stages[0].batch(5)
    ds, box, sentinel_ref = _cycle(build)
    assert len(list(ds)) == 10
    it = iter(stages.pop())  # the map stage, iterated on its own
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    del ds, box
    gc.collect()
    assert sentinel_ref() is not None
    assert list(it) == list(range(3, 50))
    del it
    gc.collect()
    assert sentinel_ref() is None


def test_collections_amid_shared_stages_and_live_iterators():
    """Stages shared between several chains, some iterated, some on cycles: every
    collection keeps what a live iterator or a live dataset still runs."""
    refs = []
    for round_ in range(6):
        box = {}

        def fn(x, box=box):
            assert "base" in box
            return _py(x)
        base = Dataset.range(40).map(fn)
        chains = {
            "base": base,
            "batched": base.batch(4).map(lambda b: (b, b)),
            "zipped": Dataset.zip((base, base.map(fn))),
            "taken": base.take(7).prefetch(2),
        }
        box.update(chains)
        expected = {name: [np.asarray(v).tolist() for v in ds] for name, ds in chains.items()}
        iterated = [name for i, name in enumerate(chains) if (i + round_) % 2 == 0]
        iterators = {name: iter(chains[name]) for name in iterated}
        got = {name: [np.asarray(next(it)).tolist()] for name, it in iterators.items()}
        refs.append(weakref.ref(base))
        kept = chains[iterated[0]] if round_ % 3 == 0 else None
        del base, chains, box, fn
        gc.collect()
        for name, it in iterators.items():
            got[name].extend(np.asarray(v).tolist() for v in it)
            assert got[name] == expected[name], name
        if kept is not None:
            assert [np.asarray(v).tolist() for v in kept] == expected[iterated[0]]
        del iterators, kept
    gc.collect()
    assert all(ref() is None for ref in refs)
