"""Dataset.cache: in memory and in files.

Memory and file caches must give the same elements as the uncached pipeline
on every pass, run the pipeline above them once, discard (and say so, once)
a pass that stops early, and never trust a file that was not completely
written. File tests also run writers and readers in separate processes.
"""
import collections
import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import types
import warnings

import numpy as np
import pytest

import conveyor as cv
from conveyor.data.ops import cache_op as dataset_module
from conveyor.data.experimental import CacheWarning

# Many map functions here compute in Python on purpose (the work a cache saves);
# map says once that they cannot be compiled.
pytestmark = pytest.mark.filterwarnings("ignore::conveyor.framework.tracing.TracingWarning")

Point = collections.namedtuple("Point", ["x", "y"])
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(cv.__file__)))


def as_lists(ds):
    return [_plain(e) for e in ds]


def _plain(e):
    if isinstance(e, dict):
        return {k: _plain(v) for k, v in e.items()}
    if isinstance(e, tuple):
        return type(e)(*[_plain(v) for v in e]) if hasattr(e, "_fields") else tuple(
            _plain(v) for v in e)
    if isinstance(e, np.ndarray):
        return (e.dtype.str, e.shape, e.tolist())
    if isinstance(e, np.generic):
        return (e.dtype.str, e.item())
    return e


def counting(fn=lambda x: x, dtype=cv.int64):
    """A map function that runs in Python per element (numpy_function), counting calls."""
    calls = []

    def python(x):
        calls.append(1)
        return fn(x)
    return (lambda x: cv.numpy_function(python, [x], dtype)), calls


def cache_files(directory):
    return sorted(os.listdir(directory))


def run_script(code, timeout=60, **kwargs):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=env, **kwargs)


def nested_source():
    """Nested structures, strings (empty ones too), several dtypes, varying shapes."""
    n = 7
    return cv.data.Dataset.from_tensor_slices({
        "image": np.arange(n * 6, dtype=np.uint8).reshape(n, 2, 3),
        "text": np.array([b"", b"a", b"bb", b"\x00\xff", b"cccc", b"", b"long" * 50], dtype=object),
        "pair": (np.arange(n, dtype=np.float16), np.arange(n) % 2 == 0),
        "point": Point(np.arange(n, dtype=np.uint64), np.linspace(0, 1, n)),
    })


def ragged(ds):
    """Elements whose shapes differ (a map making 0..k values, and short last batches)."""
    return ds.map(lambda x: (np.arange(int(x) % 4, dtype=np.int32), np.array([b"x" * int(x)] * (int(x) % 3), dtype=object)))


PIPELINES = {
    "range": lambda: cv.data.Dataset.range(10),
    "nested": nested_source,
    "batched": lambda: nested_source().batch(3),
    "ragged": lambda: ragged(cv.data.Dataset.range(11)),
    "empty": lambda: cv.data.Dataset.range(0),
    "zero-size": lambda: cv.data.Dataset.from_tensor_slices(np.zeros((4, 0, 3), np.float32)),
}


# ------------------------------------------------------------------ memory


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_memory_and_file_caches_replay_the_pipeline(name, tmp_path):
    expected = as_lists(PIPELINES[name]())
    memory = PIPELINES[name]().cache()
    file = PIPELINES[name]().cache(str(tmp_path / "c"))
    for ds in (memory, file):
        assert as_lists(ds) == expected   # the pass that fills the cache
        assert as_lists(ds) == expected   # a new iterator replays it
        assert as_lists(ds.repeat(2)) == expected * 2
    assert cache_files(tmp_path) == ["c.cvcache"]
    again = PIPELINES[name]().cache(str(tmp_path / "c"))  # a new Dataset reads the file
    assert as_lists(again) == expected
    assert memory.element_spec == PIPELINES[name]().element_spec
    assert file.cardinality() == PIPELINES[name]().cardinality()


def test_memory_cache_runs_the_pipeline_once():
    fn, calls = counting(lambda x: x * 2)
    ds = cv.data.Dataset.range(100).map(fn).cache()
    assert as_lists(ds.repeat(3)) == as_lists(cv.data.Dataset.range(100).map(lambda x: x * 2)) * 3
    assert len(calls) == 100
    assert [int(x) for x in ds] == list(range(0, 200, 2))
    assert len(calls) == 100


def test_memory_cache_shares_buffers():
    """Replayed elements are the recorded ones, not copies; and read-only."""
    x = np.arange(40, dtype=np.float32).reshape(10, 4)
    ds = cv.data.Dataset.from_tensor_slices(x).map(lambda r: r + 1).cache()
    first = list(ds)
    second = list(ds)
    for a, b in zip(first, second):
        assert a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
        assert not b.flags.writeable
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError):
        second[0][0] = 5


def test_cache_is_shared_across_options_and_iterators():
    fn, calls = counting()
    base = cv.data.Dataset.range(20).map(fn).cache()
    opts = cv.data.Options()
    opts.threading.private_threadpool_size = 1
    assert [int(x) for x in base] == list(range(20))
    assert [int(x) for x in base.with_options(opts)] == list(range(20))
    assert [int(x) for x in base.prefetch(2)] == list(range(20))
    assert len(calls) == 20


def test_iterators_started_while_filling_follow_tf():
    """As tf.data: each unfinished iterator reads the input; the first to finish publishes."""
    fn, calls = counting(lambda x: x * 10)
    ds = cv.data.Dataset.range(5).map(fn).cache()
    it1 = iter(ds)
    assert int(next(it1)) == 0
    assert [int(x) for x in ds] == [0, 10, 20, 30, 40]
    assert [int(x) for x in it1] == [10, 20, 30, 40]
    assert len(calls) == 10
    assert [int(x) for x in ds] == [0, 10, 20, 30, 40]
    assert len(calls) == 10


def test_replay_from_many_threads():
    ds = cv.data.Dataset.from_tensor_slices(np.arange(2000)).cache()
    expected = list(range(2000))
    assert [int(x) for x in ds] == expected
    results = []

    def reader():
        results.append([int(x) for x in ds])
    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 4


def test_errors_pass_through_and_are_not_recorded():
    """tf.data: an input error reaches the consumer; the cache keeps the other elements."""
    def fn(x):
        if x == 2:
            raise ValueError("boom")
        return x
    ds = cv.data.Dataset.range(5).map(fn).cache().ignore_errors()
    assert [int(x) for x in ds] == [0, 1, 3, 4]
    assert [int(x) for x in ds] == [0, 1, 3, 4]
    it = iter(cv.data.Dataset.range(5).map(fn).cache())
    assert [int(next(it)), int(next(it))] == [0, 1]
    with pytest.raises(ValueError, match="boom"):
        next(it)
    assert [int(x) for x in it] == [3, 4]


def test_completion_by_known_cardinality():
    """Reading as many elements as the input's cardinality completes the cache (tf.data's rule)."""
    fn, calls = counting()
    ds = cv.data.Dataset.from_tensor_slices(np.arange(6)).map(fn, num_parallel_calls=2).cache()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        assert [int(x) for x in ds.take(6)] == list(range(6))
    assert [int(x) for x in ds] == list(range(6))


def test_close_and_cancel_a_replaying_iterator():
    ds = cv.data.Dataset.range(100).cache().prefetch(4)
    assert len(list(ds)) == 100
    it = iter(ds)
    next(it)
    it.close()
    assert list(it) == []
    gc.collect()
    assert cv._engine.live_iterators() == 0


def test_parallel_pipeline_around_the_cache_equals_sequential(tmp_path):
    def make(parallel, filename):
        fn, _ = counting(lambda x: x * 3)
        ds = cv.data.Dataset.range(500).map(fn, num_parallel_calls=4 if parallel else None)
        ds = ds.cache(filename).map(lambda x: x + 1, num_parallel_calls=3 if parallel else None)
        return ds.batch(7).prefetch(3 if parallel else 0)
    for filename in ("", str(tmp_path / "c")):
        expected = as_lists(make(False, ""))
        ds = make(True, filename)
        assert as_lists(ds) == expected
        assert as_lists(ds) == expected


def test_close_while_the_writer_waits_for_its_input():
    def slow(x):
        time.sleep(0.01)
        return x
    fn, _ = counting(slow)
    ds = cv.data.Dataset.range(1000).map(fn).cache().prefetch(2)
    it = iter(ds)
    next(it)
    with pytest.warns(CacheWarning):
        it.close()  # cancels the worker blocked in the map below the cache; a hang fails the run
        gc.collect()
    assert cv._engine.live_iterators() == 0


def test_fork_child_replays_the_parents_cache():
    out = run_script("""
        import os, conveyor as cv
        ds = cv.data.Dataset.range(50).map(lambda x: x * 2).cache()
        assert [int(x) for x in ds] == list(range(0, 100, 2))
        pid = os.fork()
        if pid == 0:
            ok = [int(x) for x in ds] == list(range(0, 100, 2))
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0"


def test_memory_cache_charges_its_bytes_to_the_budget():
    opts = cv.data.Options()
    opts.autotune.ram_budget = 1 << 30
    ds = cv.data.Dataset.from_tensor_slices(np.zeros((1000, 10), np.float32)).cache().with_options(opts)
    before = cv._engine.memory_in_use()
    assert len(list(ds)) == 1000
    assert cv._engine.memory_in_use() - before == 1000 * 10 * 4  # the published cache
    assert len(list(ds)) == 1000
    assert cv._engine.memory_in_use() - before == 1000 * 10 * 4
    del ds
    gc.collect()
    assert cv._engine.memory_in_use() == before


def test_memory_cache_over_budget_warns_and_passes_through():
    opts = cv.data.Options()
    opts.autotune.ram_budget = 10_000  # room for about 60 of the 160-byte elements
    fn, calls = counting()
    ds = cv.data.Dataset.from_tensor_slices(np.arange(4000).reshape(200, 20)).map(
        fn).cache().with_options(opts)
    before = cv._engine.memory_in_use()
    with pytest.warns(CacheWarning, match="RESOURCE_EXHAUSTED.*Cache.*cache to a file") as record:
        assert len(list(ds)) == 200
        assert len(list(ds)) == 200   # not cached: computed again, no second warning
    assert len([r for r in record if r.category is CacheWarning]) == 1
    assert len(calls) == 400
    assert cv._engine.memory_in_use() == before


# ----------------------------------------------------------------- warnings


def partial_pass(ds, n):
    it = iter(ds)
    for _ in range(n):
        next(it)
    del it
    gc.collect()


@pytest.mark.parametrize("filename", ["", "file"])
def test_partial_pass_warns_once_per_dataset(filename, tmp_path):
    fn, calls = counting()
    ds = cv.data.Dataset.range(10).map(fn).cache(str(tmp_path / filename) if filename else "")
    with pytest.warns(CacheWarning, match="stopped after 3 elements") as record:
        partial_pass(ds, 3)
    assert "take(k).cache()" in str(record[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        partial_pass(ds, 4)   # once per dataset, not per pass
        partial_pass(ds, 0)
        assert [int(x) for x in ds] == list(range(10))
        assert [int(x) for x in ds] == list(range(10))
    assert len(calls) == 3 + 4 + 10
    if filename:
        assert cache_files(tmp_path) == ["file.cvcache"]


@pytest.mark.parametrize("filename", ["", "file"])
def test_take_preview_is_quiet(filename, tmp_path):
    ds = cv.data.Dataset.range(10).cache(str(tmp_path / filename) if filename else "")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        assert [int(x) for x in ds.take(3)] == [0, 1, 2]
        assert [int(x) for x in ds.take(3)] == [0, 1, 2]
        assert len(list(ds.batch(4).take(1))) == 1
        assert len(list(ds.shuffle(4, seed=1).take(2).prefetch(1))) == 2
        assert [int(x) for x in ds.map(lambda x: x).take(1)] == [0]
        assert [int(x) for x in ds] == list(range(10))
    assert not [f for f in os.listdir(tmp_path) if ".tmp-" in f or f.endswith(".lock")]


def test_take_preview_before_the_count_warns():
    ds = cv.data.Dataset.range(10).cache()
    with pytest.warns(CacheWarning, match="stopped after 2 elements"):
        partial_pass(ds.take(5), 2)


def test_cache_take_repeat_warns():
    fn, calls = counting()
    ds = cv.data.Dataset.range(10).map(fn).cache().take(3).repeat(4)
    with pytest.warns(CacheWarning, match=r"take\(k\) inside repeat\(\)") as record:
        assert [int(x) for x in ds] == [0, 1, 2] * 4
    assert len([r for r in record if r.category is CacheWarning]) == 1
    assert len(calls) == 12  # the cache never fills: that is what the warning says


def test_no_warning_when_another_pass_completed():
    ds = cv.data.Dataset.range(5).cache()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        it1 = iter(ds)
        next(it1)
        assert len(list(ds)) == 5
        del it1
        gc.collect()


def test_warning_category_is_a_user_warning():
    assert issubclass(CacheWarning, UserWarning)
    assert cv.data.experimental.CacheWarning is CacheWarning


# -------------------------------------------------------------------- files


def test_file_is_written_next_to_the_target_and_dirs_are_created(tmp_path):
    target = tmp_path / "a" / "b" / "train"
    ds = cv.data.Dataset.range(3).cache(str(target))
    it = iter(ds)
    next(it)
    during = cache_files(target.parent)
    assert any(f.startswith("train.cvcache.tmp-") for f in during)
    assert "train.cvcache" not in during
    assert [int(x) for x in it] == [1, 2]
    assert cache_files(target.parent) == ["train.cvcache"]
    assert [int(x) for x in cv.data.Dataset.range(3).cache(target)] == [0, 1, 2]  # PathLike


def test_file_cache_is_used_even_if_the_pipeline_changed(tmp_path):
    """tf.data: range(5).cache(f) then range(10).cache(f) gives 0..4."""
    f = str(tmp_path / "c")
    assert [int(x) for x in cv.data.Dataset.range(5).cache(f)] == list(range(5))
    assert [int(x) for x in cv.data.Dataset.range(10).cache(f)] == list(range(5))


def test_file_cache_spec_mismatch_is_a_clear_error(tmp_path):
    f = str(tmp_path / "c")
    list(cv.data.Dataset.from_tensor_slices(np.zeros((3, 4), np.float32)).cache(f))
    for bad in (np.zeros((3, 5), np.float32), np.zeros((3, 4), np.float64),
                (np.zeros((3, 4), np.float32), np.zeros(3))):
        with pytest.raises(cv.errors.InvalidArgumentError, match="written for another pipeline") as e:
            iter(cv.data.Dataset.from_tensor_slices(bad).cache(f))
        assert "c.cvcache" in str(e.value)


def test_file_cache_many_chunks_and_shapes(tmp_path):
    """Enough data for many chunks, with shapes varying inside chunks."""
    def make():
        return cv.data.Dataset.range(3000).map(
            lambda x: (np.full((int(x) % 5, 17), x, np.float64), str(x).encode() * (int(x) % 7)))
    expected = as_lists(make())
    f = str(tmp_path / "c")
    assert as_lists(make().cache(f)) == expected
    assert os.path.getsize(f + ".cvcache") > 3 * (256 << 10)
    assert as_lists(make().cache(f)) == expected


def test_file_read_skips_the_pipeline_in_a_new_process(tmp_path):
    f = str(tmp_path / "c")
    write = f"""
        import numpy as np, conveyor as cv, collections
        P = collections.namedtuple("P", ["a", "b"])
        ds = cv.data.Dataset.range(6).map(lambda x: {{"p": P(x * 2, np.full(2, x, np.float32)), "s": b"v" * int(x)}}).cache({f!r})
        print(len(list(ds)))
    """
    out = run_script(write)
    assert out.returncode == 0, out.stderr
    read = f"""
        import conveyor as cv
        def boom(x):
            raise RuntimeError("the pipeline above the cache ran")
        ds = cv.data.Dataset.range(6).map(boom).cache({f!r})
        print(ds.element_spec)
        for e in ds.repeat(2):
            print(type(e["p"]).__name__, int(e["p"].a), e["p"].b.tolist(), e["s"])
    """
    out = run_script(read)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "TensorSpec" in lines[0] and "'p'" in lines[0]
    assert lines[1:] == [f"P {2 * i} {[float(i)] * 2} {b'v' * i!r}" for i in range(6)] * 2


def test_interrupted_passes_leave_nothing_trusted(tmp_path):
    f = str(tmp_path / "c")

    def fn(x):
        if x == 7:
            raise ValueError("boom")
        return x
    with pytest.warns(CacheWarning):
        with pytest.raises(ValueError):
            for _ in cv.data.Dataset.range(10).map(fn).cache(f):
                pass
        gc.collect()
    assert cache_files(tmp_path) == []
    partial = cv.data.Dataset.range(10).cache(f)
    with pytest.warns(CacheWarning, match="partly written cache file was deleted"):
        partial_pass(partial, 5)
    assert cache_files(tmp_path) == []
    assert [int(x) for x in cv.data.Dataset.range(10).cache(f)] == list(range(10))


def test_keyboard_interrupt_in_a_writer_process(tmp_path):
    f = str(tmp_path / "c")
    code = f"""
        import os, signal, time, conveyor as cv
        def slow(x):
            if x == 20:
                os.kill(os.getpid(), signal.SIGINT)
            return x
        try:
            for x in cv.data.Dataset.range(1000).map(slow).cache({f!r}):
                pass
        except KeyboardInterrupt:
            print("interrupted", sorted(os.listdir({str(tmp_path)!r})))
    """
    out = run_script(code)
    assert out.returncode == 0, out.stderr
    assert "interrupted" in out.stdout
    assert cache_files(tmp_path) == []


def test_killed_writer_leaves_a_temp_file_that_is_never_trusted(tmp_path):
    f = str(tmp_path / "c")
    code = f"""
        import os, signal, conveyor as cv
        def fn(x):
            if x == 2000:
                os.kill(os.getpid(), signal.SIGKILL)
            return x
        for x in cv.data.Dataset.range(5000).map(lambda x: (fn(x), b"x" * 300)).cache({f!r}):
            pass
    """
    out = run_script(code)
    assert out.returncode == -signal.SIGKILL
    left = cache_files(tmp_path)
    assert "c.cvcache" not in left and any(".tmp-" in n for n in left)
    ds = cv.data.Dataset.range(50).map(lambda x: (x, b"x" * 300)).cache(f)
    assert len(list(ds)) == 50
    assert cache_files(tmp_path) == ["c.cvcache"]  # the dead writer's file was cleaned up


def test_two_writer_processes(tmp_path):
    """Both compute everything; one writes; the committed file is whole."""
    f = str(tmp_path / "c")
    code = f"""
        import sys, time, numpy as np, conveyor as cv
        def slow(x):
            time.sleep(0.002)
            return x, np.full(100, x, np.int64)
        n = sum(int(a) + int(b.sum()) for a, b in cv.data.Dataset.range(400).map(slow).cache({f!r}))
        print(n)
    """
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    total = sum(range(400)) * 101
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert int(out) == total
    assert cache_files(tmp_path) == ["c.cvcache"]
    read = cv.data.Dataset.range(400).map(lambda x: 1 / 0).cache(f)
    assert sum(int(a) + int(b.sum()) for a, b in read) == total


def test_second_iterator_while_writing_passes_through(tmp_path):
    """Another iterator of the same file cache reads the pipeline without writing
    (tf.data raises AlreadyExistsError instead)."""
    f = str(tmp_path / "c")
    ds = cv.data.Dataset.range(5).cache(f)
    it1 = iter(ds)
    next(it1)
    assert [int(x) for x in ds] == list(range(5))
    assert "c.cvcache" not in cache_files(tmp_path)
    assert [int(x) for x in it1] == [1, 2, 3, 4]
    assert cache_files(tmp_path) == ["c.cvcache"]


def write_file(tmp_path, n=2000):
    f = str(tmp_path / "c")
    ds = cv.data.Dataset.range(n).map(lambda x: (x, np.full(50, x, np.float32), b"s" * (int(x) % 9)))
    list(ds.cache(f))
    return f, f + ".cvcache"


def read_all(f):
    return list(cv.data.Dataset.range(1).map(lambda x: (x, np.zeros(50, np.float32), b"")).cache(f))


@pytest.mark.parametrize("cut", [0, 10, 40, 5000, -40, -1])
def test_truncated_file_is_data_loss(tmp_path, cut):
    f, path = write_file(tmp_path)
    size = os.path.getsize(path)
    with open(path, "r+b") as fh:
        fh.truncate(cut if cut >= 0 else size + cut)
    with pytest.raises(cv.errors.DataLossError, match="c.cvcache") as e:
        list(cv.data.Dataset.range(1).map(lambda x: (x, np.zeros(50, np.float32), b""))
             .cache(f, on_truncation="error"))
    assert "Delete it" in str(e.value) and "torn tail" in str(e.value)
    # The default warns (naming the file and the offset) and computes the cache again.
    with pytest.warns(cv.errors.DataLossWarning, match=r"c\.cvcache' is truncated at byte offset \d+"):
        assert len(read_all(f)) == 1
    assert os.path.getsize(path) < size  # replaced by the one-element pass


@pytest.mark.parametrize("where", [5, 40, 60, 300, 30000, -60, -20])
def test_corrupted_file_is_data_loss(tmp_path, where):
    f, path = write_file(tmp_path)
    size = os.path.getsize(path)
    offset = where if where >= 0 else size + where
    with open(path, "r+b") as fh:
        fh.seek(offset)
        byte = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([byte[0] ^ 0x40]))
    with pytest.raises(cv.errors.DataLossError, match="c.cvcache"):
        read_all(f)


def test_corruption_mid_file_fails_at_its_chunk_and_then_ends(tmp_path):
    f, path = write_file(tmp_path, n=20000)
    with open(path, "r+b") as fh:
        fh.seek(os.path.getsize(path) // 2)
        fh.write(b"\xff\xfe\xfd")
    it = iter(cv.data.Dataset.range(1).map(lambda x: (x, np.zeros(50, np.float32), b"")).cache(f))
    got = 0
    with pytest.raises(cv.errors.DataLossError, match=r"chunk \d+") as e:
        for _ in it:
            got += 1
    assert 0 < got < 20000
    assert "byte offset" in str(e.value)
    assert list(it) == []


def test_garbage_and_foreign_files(tmp_path):
    f = str(tmp_path / "c")
    for content in (b"hello world" * 100, os.urandom(5000)):
        with open(f + ".cvcache", "wb") as fh:
            fh.write(content)
        with pytest.raises(cv.errors.DataLossError, match="c.cvcache"):
            list(cv.data.Dataset.range(3).cache(f))
    os.remove(f + ".cvcache")
    os.mkdir(f + ".cvcache")
    with pytest.raises(cv.errors.OpError, match="c.cvcache"):
        list(cv.data.Dataset.range(3).cache(f))


def test_other_format_version_is_refused(tmp_path):
    f, path = write_file(tmp_path, n=10)
    with open(path, "r+b") as fh:
        data = bytearray(fh.read(32))
        data[8] = 9  # version
        crc = cv._engine.crc32c(bytes(data[:28]))
        masked = (((crc >> 15) | (crc << 17)) + 0xa282ead8) & 0xffffffff
        data[28:32] = masked.to_bytes(4, sys.byteorder)
        fh.seek(0)
        fh.write(data)
    with pytest.raises(cv.errors.FailedPreconditionError, match="format version 9"):
        read_all(f)


def test_unwritable_location_warns_and_passes_through(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    try:
        ds = cv.data.Dataset.range(4).cache(str(d / "c"))
        with pytest.warns(CacheWarning, match="could not write"):
            assert [int(x) for x in ds] == [0, 1, 2, 3]
    finally:
        d.chmod(0o700)


def test_write_failure_warns_and_passes_through(tmp_path):
    """A cache file that cannot be written: the pass goes on, uncached, with one warning."""
    (tmp_path / "blocker").write_text("")  # a file where a directory should be
    ds = cv.data.Dataset.range(4).cache(str(tmp_path / "blocker" / "c"))
    with pytest.warns(CacheWarning, match="could not write the cache file") as record:
        assert [int(x) for x in ds] == [0, 1, 2, 3]
        assert [int(x) for x in ds] == [0, 1, 2, 3]
    assert len(record) == 1


def test_element_spec_and_cardinality(tmp_path):
    ds = nested_source()
    for cached in (ds.cache(), ds.cache(str(tmp_path / "c"))):
        assert cached.element_spec == ds.element_spec
        assert int(cached.cardinality()) == 7
    assert int(cv.data.Dataset.range(3).repeat().cache().cardinality()) == cv.data.INFINITE_CARDINALITY


def test_map_output_spec_is_stored_in_the_file(tmp_path):
    f = str(tmp_path / "c")
    list(cv.data.Dataset.range(3).map(lambda x: Point(x, np.float32(x))).cache(f))
    fresh = cv.data.Dataset.range(3).map(lambda x: 1 / 0).cache(f)
    spec = fresh.element_spec
    assert type(spec) is Point
    assert spec.y.dtype == cv.float32
    assert [tuple(int(v) for v in p) for p in fresh] == [(0, 0), (1, 1), (2, 2)]


def test_bad_arguments():
    ds = cv.data.Dataset.range(3)
    with pytest.raises(TypeError, match="filename"):
        ds.cache(3)
    with pytest.raises(TypeError, match="filename"):
        ds.cache(None)
    with pytest.raises(cv.errors.InvalidArgumentError, match="NUL"):
        ds.cache("a\0b")


def test_datasets_and_stores_are_freed(tmp_path):
    import weakref
    ds = cv.data.Dataset.range(10).map(lambda x: x).cache()
    list(ds)
    ref = weakref.ref(ds)
    del ds
    gc.collect()
    assert ref() is None


# ----------------------------------------------------------------- progress


def test_progress_bar_with_tqdm(monkeypatch, tmp_path):
    bars = []

    class FakeBar:
        def __init__(self, total=None, desc="", **kw):
            self.total, self.desc, self.n, self.closed, self.postfix = total, desc, 0, False, ""
            bars.append(self)

        def update(self, k):
            self.n += k

        def set_postfix_str(self, s, refresh=True):
            self.postfix = s

        def set_description_str(self, s, refresh=True):
            self.desc = s

        def close(self):
            self.closed = True
    monkeypatch.setitem(sys.modules, "tqdm", types.SimpleNamespace(tqdm=FakeBar))
    monkeypatch.setattr(dataset_module, "_CACHE_PROGRESS_DELAY", 0.0)
    cv.data.experimental.cache_progress(True)
    try:
        assert [int(x) for x in cv.data.Dataset.range(3000).cache(str(tmp_path / "c"))] == list(range(3000))
        assert len(bars) == 1
        assert bars[0].total == 3000 and bars[0].closed and bars[0].n == 3000
        assert "cache" in bars[0].desc and "MiB" in bars[0].postfix
        with pytest.warns(CacheWarning):
            partial_pass(cv.data.Dataset.range(3000).cache(), 1000)
        assert bars[1].closed and "discarded" in bars[1].desc
        cv.data.experimental.cache_progress(False)
        list(cv.data.Dataset.range(3000).cache())
        assert len(bars) == 2
    finally:
        cv.data.experimental.cache_progress(None)


def test_cache_progress_needs_tqdm(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    with pytest.raises(ImportError, match="tqdm"):
        cv.data.experimental.cache_progress(True)
    cv.data.experimental.cache_progress(False)
    cv.data.experimental.cache_progress(None)
