"""A reference cycle through a live iterator is collected.

The usual shape of a loader class: the object holds iter(ds) while the dataset
holds the object (from_generator(self.gen), map(self.method)). The engine
Iterator reports the engine Dataset it runs, which then reports the callables
(csrc/python/dataset_type.c), so gc.collect() finds the cycle; clearing the
iterator stops its pipeline and its threads end. An iterator still referenced
keeps working through collections, and collections on the pipeline's own
threads (inside a map function or a generator) neither deadlock nor crash.
"""
import gc
import os
import re
import threading
import time
import warnings
import weakref

import numpy as np
import pytest
from _isolated import assert_isolated_ok

import conveyor as tf
from conveyor import _engine

Dataset = tf.data.Dataset
TIMEOUT = 30.0


@pytest.fixture(autouse=True)
def _quiet():
    # The functions below run in Python on purpose (TracingWarning says so).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _engine_threads():
    """{tid: name} of the engine's threads (named cv<N>-...)."""
    found = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue  # ended meanwhile
        if re.match(r"cv\d+-", name):
            found[tid] = name
    return found


def _collect_until(ref):
    """gc.collect() until ref() is None (a Python call in flight on a worker
    holds its object until it returns), within TIMEOUT."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        gc.collect()
        if ref() is None or time.monotonic() > deadline:
            return ref() is None
        time.sleep(0.01)


def _wait_threads_gone(tids):
    """Wait for the threads to end, collecting: the collection that cleared a
    weak reference to the loader may still keep its cycle (a finalizer that
    runs Python code, a generator's close, lets a worker take the GIL and a
    reference to an object of it: the gc then clears none of them), and the
    next one takes it apart."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        left = set(_engine_threads()) & set(tids)
        if not left:
            return set()
        gc.collect()
        time.sleep(0.01)
    return set(_engine_threads()) & set(tids)


def _py(x):
    return np.asarray(x).copy()


def _inner_generators(ref):
    """An interleave function that does not hold the loader; the inner
    datasets it returns do (from_generator(loader.quad)), so the cycle goes
    through them alone while an inner iterator is open."""
    def inner(x):
        return Dataset.from_generator(ref().quad, args=(x,),
                                      output_signature=tf.TensorSpec([], tf.int64))
    return inner


class Loader:
    """Holds its dataset and a live iterator over it; the dataset holds the
    loader through a bound method."""

    def __init__(self, kind, n=200, collect_inside=False):
        self.n = n
        self.collect_inside = collect_inside
        self.calls = 0
        spec = tf.TensorSpec([], tf.int64)
        if kind == "generator":
            ds = Dataset.from_generator(self.gen, output_signature=spec)
        elif kind == "generator_prefetch":
            ds = Dataset.from_generator(self.gen, output_signature=spec).prefetch(4)
        elif kind == "map":
            ds = Dataset.range(n).map(self.fn)
        elif kind == "map_prefetch":
            ds = Dataset.range(n).map(self.fn).prefetch(4)
        elif kind == "parallel_map":
            ds = Dataset.range(n).map(self.fn, num_parallel_calls=4).prefetch(4)
        elif kind == "generator_parallel_map":
            ds = Dataset.from_generator(self.gen, output_signature=spec).map(
                self.fn, num_parallel_calls=4)
        elif kind == "interleave":
            ds = Dataset.range(n // 4).interleave(self.inner, cycle_length=2, block_length=1)
        elif kind == "parallel_interleave":
            ds = Dataset.range(n // 4).map(self.fn).interleave(
                self.inner, cycle_length=2, num_parallel_calls=2).prefetch(2)
        elif kind == "interleave_generators":
            ds = Dataset.range(n // 4).interleave(_inner_generators(weakref.ref(self)),
                                                  cycle_length=2, block_length=1)
        elif kind == "parallel_interleave_generators":
            ds = Dataset.range(n // 4).interleave(_inner_generators(weakref.ref(self)),
                                                  cycle_length=2, num_parallel_calls=2).prefetch(2)
        else:
            raise ValueError(kind)
        self.ds = ds
        self.it = iter(ds)

    def _maybe_collect(self):
        self.calls += 1
        if self.collect_inside and self.calls % 7 == 0:
            gc.collect()

    def gen(self):
        for i in range(self.n):
            self._maybe_collect()
            yield i

    def fn(self, x):
        self._maybe_collect()
        return _py(x)

    def quad(self, x):
        for _ in range(4):
            self._maybe_collect()
            yield int(x) * 4

    def inner(self, x):
        self._maybe_collect()
        return Dataset.from_tensors(x * 4).repeat(4)


KINDS = ["generator", "generator_prefetch", "map", "map_prefetch", "parallel_map",
         "generator_parallel_map", "interleave", "parallel_interleave", "interleave_generators",
         "parallel_interleave_generators"]


def _expected(kind, n=200):
    if "interleave" in kind:  # cycle_length=2, block_length=1
        return [4 * (2 * pair + j) for pair in range(n // 8) for _ in range(4) for j in (0, 1)]
    return list(range(n))


def _values(it):
    return [int(np.asarray(v)) for v in it]


def _assert_freed_with_its_threads(start, what):
    """start() makes a loader on a cycle with its live iterator and returns it:
    once dropped, the collector frees it, its pipeline's threads end and no
    iterator of it stays live."""
    before = set(_engine_threads())
    live = _engine.live_iterators()
    ref = weakref.ref(start())
    threads = set(_engine_threads()) - before
    assert _collect_until(ref), f"{what} was not collected"
    assert _wait_threads_gone(threads) == set(), f"{what}: the pipeline's threads did not end"
    assert _engine.live_iterators() == live


@pytest.mark.parametrize("advanced", [0, 3])
@pytest.mark.parametrize("kind", KINDS)
def test_cycle_through_live_iterator_is_collected(kind, advanced):
    def start():
        loader = Loader(kind)
        got = [int(np.asarray(next(loader.it))) for _ in range(advanced)]
        assert got == _expected(kind)[:advanced]
        return loader
    _assert_freed_with_its_threads(start, f"{kind}: the loader on the cycle")


@pytest.mark.parametrize("kind", ["generator_prefetch", "parallel_map", "parallel_interleave"])
def test_referenced_iterator_keeps_working_through_collections(kind):
    loader = Loader(kind)
    it = loader.it
    ref = weakref.ref(loader)
    out = [int(np.asarray(next(it))) for _ in range(5)]
    del loader
    for _ in range(3):
        gc.collect()
        out.append(int(np.asarray(next(it))))
    out.extend(_values(it))
    assert out == _expected(kind)
    assert ref() is not None  # the iterator holds it through its dataset
    del it
    assert _collect_until(ref)


@pytest.mark.parametrize("kind", ["interleave_generators", "parallel_interleave_generators"])
def test_open_inner_datasets_keep_working_through_collections(kind):
    """Only the open inner datasets hold the loader (map_func holds a weak
    reference): collections while the iterator is referenced keep them and
    the loader, and every element comes."""
    loader = Loader(kind)
    it = loader.it
    out = [int(np.asarray(next(it))) for _ in range(5)]
    del loader
    for _ in range(3):
        gc.collect()
        out.append(int(np.asarray(next(it))))
    assert out == _expected(kind)[:8]
    it.close()


def test_referenced_dataset_keeps_the_cycle_alive():
    """A dataset still referenced holds the loader (its function's object), so
    the loader and its iterator live on; the dataset iterates from the start."""
    loader = Loader("parallel_map", n=50)
    ds = loader.ds
    next(loader.it)
    ref = weakref.ref(loader)
    del loader
    gc.collect()
    assert _values(ds) == list(range(50))  # the dataset holds the loader
    assert ref() is not None
    del ds
    assert _collect_until(ref)


@pytest.mark.parametrize("kind", ["generator", "generator_prefetch", "parallel_map",
                                  "generator_parallel_map", "parallel_interleave",
                                  "interleave_generators", "parallel_interleave_generators"])
def test_collections_inside_the_pipeline_while_it_runs(kind):
    """gc.collect() inside a generator or map function (on the consumer or a
    worker): the running pipeline is never collected and gives every element."""
    loader = Loader(kind, collect_inside=True)
    assert _values(loader.it) == _expected(kind)
    ref = weakref.ref(loader)
    del loader
    assert _collect_until(ref)


@pytest.mark.parametrize("kind", ["generator_prefetch", "parallel_map", "generator_parallel_map",
                                  "parallel_interleave"])
def test_collection_on_a_worker_finds_its_own_pipeline_unreachable(kind):
    """The loader is dropped while its workers still run Python functions that
    collect: the collection that frees the iterator may run on one of the
    pipeline's own threads, which stops it without waiting for itself."""
    before = set(_engine_threads())
    loader = Loader(kind, n=4000, collect_inside=True)
    next(loader.it)
    threads = set(_engine_threads()) - before
    ref = weakref.ref(loader)
    del loader
    deadline = time.monotonic() + 2.0  # the workers' own collections first, most often
    while ref() is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _collect_until(ref)
    assert _wait_threads_gone(threads) == set()


def test_many_cycles_with_shared_stages():
    """Loaders sharing a stage, some iterating it: each collection keeps what a
    live iterator still runs and frees the rest."""
    shared_fns = []

    class Holder:
        def fn(self, x):
            return _py(x)

    holder = Holder()
    base = Dataset.range(30).map(holder.fn)
    refs, keep = [], []
    for i in range(8):
        loader = Loader("map_prefetch", n=30)
        loader.base = base.map(loader.fn)
        loader.base_it = iter(loader.base)
        next(loader.base_it)
        if i % 3 == 0:
            keep.append(loader.base_it)
        refs.append(weakref.ref(loader))
        del loader
    shared_fns.append(weakref.ref(holder))
    del holder
    gc.collect()
    for it in keep:
        assert _values(it) == list(range(1, 30))
    assert _values(base) == list(range(30))
    del keep, it, base
    assert all(_collect_until(r) for r in refs + shared_fns)


def test_garbage_pipelines_call_none_of_their_cleared_functions():
    """A dropped iterator in a cycle with its pipeline: the collection that
    finds it garbage also clears the plain functions the pipeline calls (a
    function loses its globals), and lets go of the GIL while it stops the
    pipeline. The workers then waiting for the GIL call none of them (the
    iterator's finalizer cancelled the pipeline before anything was cleared):
    no crash, for a map function, an interleave function and a generator's
    factory, with the collection on the consumer and on the workers."""
    out = assert_isolated_ok("""
        import gc, warnings
        warnings.simplefilter("ignore")
        D, AUTOTUNE = tf.data.Dataset, tf.data.AUTOTUNE
        OFFSET = 3

        def plus(r):
            return np.int64(int(r) + OFFSET)

        def gen(n):
            for i in range(n):
                yield plus(i)

        def collecting(r):
            if int(r) % 5 == 0:
                gc.collect()
            return plus(r)

        def make(kind):
            if kind == "map":
                return D.range(100000).map(lambda r: plus(r), num_parallel_calls=AUTOTUNE)
            if kind == "collecting_map":
                return D.range(100000).map(lambda r: collecting(r), num_parallel_calls=2)
            if kind == "interleave":
                return D.range(1000).interleave(lambda r: D.range(plus(r)), cycle_length=2,
                                                num_parallel_calls=2)
            return D.from_generator(lambda: gen(100000),
                                    output_signature=tf.TensorSpec([], tf.int64))

        gc.disable()  # the cycles below are found by the gc.collect() that follows each
        for i in range(400):
            kind = ("map", "collecting_map", "interleave", "generator")[i % 4]
            it = iter(make(kind).prefetch(AUTOTUNE))
            for _ in range(3):
                next(it)
            cycle = [it]
            cycle.append(cycle)
            del it, cycle
            gc.collect()
        print("ok")
    """, timeout=240)
    assert out.strip() == "ok"


def test_garbage_pipelines_call_none_of_their_cleared_cache_hooks():
    """An interleave's inner cache() is held by the engine only, so its store
    reports its progress and describe hooks: a collection that finds the
    pipeline garbage clears them, and (the iterator in an older generation)
    before the iterator, whose teardown ends the inner passes and tells the
    hooks (a discarded bar). They are methods of a module-level class, which
    the gc never clears: no crash, for a memory and a file cache."""
    out = assert_isolated_ok("""
        import gc, os, tempfile, warnings
        from conveyor.data.ops import cache_op
        warnings.simplefilter("ignore")
        cache_op._CACHE_PROGRESS_DELAY = 0.0  # the progress hook from the 257th element on
        D, AUTOTUNE = tf.data.Dataset, tf.data.AUTOTUNE
        files = iter(range(10**9))

        def inner(kind, folder):
            ds = D.range(600)
            if kind == "memory":
                return ds.cache()
            return ds.cache(os.path.join(folder, str(next(files))))

        gc.disable()
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as folder:  # teardowns may lag
            for i in range(40):
                kind = ("memory", "file")[i % 2]
                ds = D.range(10**6).interleave(lambda r: inner(kind, folder), cycle_length=3,
                                               num_parallel_calls=3)
                it = iter(ds.prefetch(AUTOTUNE))
                del ds
                gc.collect(0)  # the iterator to generation 1: the hooks made below go first
                for _ in range(800):
                    next(it)
                cycle = [it]
                cycle.append(cycle)
                del it, cycle
                gc.collect()
        print("ok")
    """, timeout=240)
    assert out.strip() == "ok"


class FailingLoader:
    """Holds a live iterator whose pipeline raised ahead of the consumer: the
    error waits in a buffer, unread, and its traceback's frames refer to this
    object (self in the method that raised)."""

    def __init__(self, kind):
        self.raised = threading.Event()
        spec = tf.TensorSpec([], tf.int64)
        if kind == "map":
            ds = Dataset.range(20).map(self.fn, num_parallel_calls=2).prefetch(4)
        elif kind == "interleave":
            ds = Dataset.range(20).interleave(self.inner, cycle_length=2,
                                              num_parallel_calls=2).prefetch(4)
        else:
            ds = Dataset.from_generator(self.gen, output_signature=spec).prefetch(4)
        self.it = iter(ds)

    def fail(self, x):
        if int(x) == 3:
            self.raised.set()
            raise ValueError(f"no element {int(x)}")

    def fn(self, x):
        self.fail(x)
        return _py(x)

    def inner(self, x):
        self.fail(x)
        return Dataset.from_tensors(x)

    def gen(self):
        for i in range(20):
            self.fail(i)
            yield i


@pytest.mark.parametrize("kind", ["map", "interleave", "generator"])
def test_a_cycle_through_an_unread_error_is_collected(kind):
    """The exception a function raised for an element the consumer has not
    reached is held by the pipeline (core/status.h, payload lists), and its
    frames hold the object that holds the iterator: the function's wrapper
    reports it, so the collector frees the cycle, threads included."""
    def start():
        loader = FailingLoader(kind)
        assert int(np.asarray(next(loader.it))) == 0
        assert loader.raised.wait(TIMEOUT)
        return loader
    _assert_freed_with_its_threads(start, f"{kind}: the loader behind the unread error")


@pytest.mark.parametrize("kind", ["map", "interleave", "generator"])
def test_an_unread_error_on_the_list_still_raises_as_it_was(kind):
    """Through collections, the listed exception comes out as the function
    raised it: its type, message and traceback (the raising frame)."""
    loader = FailingLoader(kind)
    got = [int(np.asarray(next(loader.it))) for _ in range(3)]
    assert loader.raised.wait(TIMEOUT)
    gc.collect()
    with pytest.raises(ValueError, match="no element 3") as info:
        next(loader.it)
    assert got == [0, 1, 2]
    assert "fail" in [entry.name for entry in info.traceback]
