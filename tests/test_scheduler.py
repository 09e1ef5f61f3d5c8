"""One pool per pipeline (csrc/core/pool.h) and the autotuner (csrc/core/autotune.h).

The thread count of a pipeline is bounded by its CPU budget whatever the
number of stages; a stage that becomes the bottleneck gets the workers of
one that stopped being it (asserted on the autotuner's recorded choices,
never on time); results never depend on the strategy or the budget.
"""
import os
import re
import threading
import time
import warnings

import numpy as np
import pytest

import conveyor as cv
from conveyor.data import AUTOTUNE, Dataset

# csrc/core/pool.h: threads a pool may start beyond its budget for turns
# blocked in blocking sections (the GIL, Python code, I/O).
POOL_SPARE = 4


def _os_threads():
    return len(os.listdir("/proc/self/task"))


def _settled_threads(want=None, timeout=5.0):
    """The thread count once it stops changing (or reaches `want`): a
    pipeline released under load finishes its teardown on a detached thread
    (python/iterator_type.c), which may still be running for a moment."""
    deadline = time.monotonic() + timeout
    last = _os_threads()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = _os_threads()
        if (want is not None and now == want) or (want is None and now == last):
            return now
        last = now
    return _os_threads()


def _seven_stages(budget=None, algorithm=None, n=400, parallel=True):
    """interleave -> map -> shuffle -> map -> batch -> map -> prefetch, all AUTOTUNE
    (or, with parallel=False, all sequential and no prefetch), with Python
    functions that block (sleep) and native ones."""
    calls = AUTOTUNE if parallel else None
    def slow(x):
        time.sleep(0.0005)
        return x

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = Dataset.range(8).interleave(
            lambda i: Dataset.range(i * 1000, i * 1000 + n // 8),
            cycle_length=4, num_parallel_calls=calls)
        ds = ds.map(slow, num_parallel_calls=calls)
        ds = ds.shuffle(32, seed=7)
        ds = ds.map(lambda x: x * 2, num_parallel_calls=calls)
        ds = ds.batch(5)
        ds = ds.map(lambda b: b + 1, num_parallel_calls=calls)
        ds = ds.prefetch(AUTOTUNE if parallel else 0)
    options = cv.data.Options()
    if budget is not None:
        options.autotune.cpu_budget = budget
    if algorithm is not None:
        options.autotune.autotune_algorithm = algorithm
    return ds.with_options(options)


def _drain_counting_threads(ds):
    """(elements as lists, the most OS threads seen while iterating)."""
    before = _os_threads()
    most, stop = [before], threading.Event()

    def sample():
        while not stop.is_set():
            most[0] = max(most[0], _os_threads())
            time.sleep(0.001)
    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        it = iter(ds)
        out = [np.asarray(b).tolist() for b in it]
        stats = it.stats()
    finally:
        stop.set()
        sampler.join()
    return out, most[0] - before - 1, stats  # less the sampler


@pytest.mark.parametrize("budget", [None, 1, 2, 3])
def test_seven_stage_pipeline_threads_stay_within_the_budget(budget):
    out, threads, stats = _drain_counting_threads(_seven_stages(budget))
    expected_budget = budget or cv._engine.cpu_count()
    assert stats.cpu_budget == expected_budget
    assert threads <= expected_budget + POOL_SPARE, (threads, expected_budget)
    assert sorted(x for b in out for x in b) == sorted(
        2 * x + 1 for i in range(8) for x in range(i * 1000, i * 1000 + 50))


def test_threads_are_joined_when_the_iterator_ends():
    before = _settled_threads()
    ds = _seven_stages(2)
    it = iter(ds)
    next(it)
    assert _os_threads() > before
    it.close()
    assert _settled_threads(before) == before
    list(iter(ds))
    assert _settled_threads(before) == before


@pytest.mark.parametrize("algorithm", [None, "MAX_PARALLELISM", "HILL_CLIMB"])
@pytest.mark.parametrize("budget", [1, 2, 5])
def test_results_equal_the_sequential_run_whatever_the_budget_and_strategy(budget, algorithm):
    sequential = [np.asarray(b).tolist() for b in _seven_stages(parallel=False)]
    parallel = [np.asarray(b).tolist() for b in _seven_stages(budget, algorithm)]
    assert parallel == sequential


def _sleepy_pair(switch, n, budget):
    """map(a) then map(b): a sleeps 4 ms per element before `switch`, b after."""
    def a(x):
        time.sleep(0.004 if x < switch else 0.0002)
        return x

    def b(x):
        time.sleep(0.0002 if x < switch else 0.004)
        return x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = (Dataset.range(n).map(a, num_parallel_calls=AUTOTUNE)
              .map(b, num_parallel_calls=AUTOTUNE).prefetch(2))
    options = cv.data.Options()
    options.autotune.cpu_budget = budget
    return ds.with_options(options)


def test_a_bottleneck_that_moves_gets_the_workers():
    n, switch = 1500, 500
    it = iter(_sleepy_pair(switch, n, 4))
    out = [int(x) for x in it]
    assert out == list(range(n))
    stats = it.stats()
    outer, inner = stats.stages[1].name, stats.stages[2].name  # map(b), map(a)
    assert stats.stages[1].kernel == stats.stages[2].kernel == "Map"
    choices = stats.choices
    assert stats.autotune_algorithm == "model" and stats.autotune_runs > 0
    # Before the switch map(a) is the bottleneck: map(b) gives workers up...
    first_down = next(i for i, c in enumerate(choices)
                      if c.stage == outer and c.after < c.before and c.bottleneck == inner)
    # ...after it, map(b) is: it gets workers back, then map(a) gives its up.
    up = next(i for i, c in enumerate(choices)
              if i > first_down and c.stage == outer and c.after > c.before)
    assert any(c.stage == inner and c.after < c.before for c in choices[up:]), choices
    assert stats.bottleneck == outer
    # At the end map(b) has at least map(a)'s workers. Not more, always: on a
    # loaded 2-core VM (CI runs the sanitized suite beside this one) map(a)'s
    # 0.2 ms calls wait for a core, and it may climb back level (5 and 5 seen).
    final = {c.stage: c.after for c in choices}
    assert final[outer] >= final[inner], choices


def test_the_fixed_rule_changes_nothing():
    it = iter(_sleepy_pair(100, 300, 4).with_options(_algorithm("MAX_PARALLELISM")))
    assert [int(x) for x in it] == list(range(300))
    stats = it.stats()
    assert stats.autotune_algorithm == "fixed" and stats.choices == []
    # AUTOTUNE's ceiling on a budget of 4 CPUs: 4 + 1 (csrc/core/pipeline.h)
    assert stats.stages[1].parallelism == stats.stages[1].max_parallelism == 5


def _algorithm(name):
    options = cv.data.Options()
    options.autotune.autotune_algorithm = name
    return options


def test_an_unknown_algorithm_is_refused():
    with pytest.raises(ValueError, match="autotune_algorithm"):
        iter(Dataset.range(3).with_options(_algorithm("SIMULATED_ANNEALING")))


def test_blocking_work_does_not_starve_cpu_work():
    """Python sleeps (blocking sections) in one stage and native work in
    another, on a budget of one: the sleeps overlap (spare threads run them),
    so the run takes about one sleep per element / parallelism, not the sum."""
    def sleepy(x):
        time.sleep(0.01)
        return x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = Dataset.range(40).map(sleepy, num_parallel_calls=4).map(
            lambda x: x + 1, num_parallel_calls=AUTOTUNE)
    options = cv.data.Options()
    options.autotune.cpu_budget = 1
    it = iter(ds.with_options(options))
    assert [int(x) for x in it] == list(range(1, 41))
    stats = it.stats()
    sleepy_stage = stats.stages[1]
    # Four sleeps at a time: 40 x 10 ms of sleeping took well under 400 ms of
    # the stage's wall time per turn slot (asserted on the engine's own
    # measure of turns blocked, not on a clock).
    assert sleepy_stage.blocked >= 0.3
    assert sleepy_stage.max_parallelism == 4


@pytest.mark.parametrize("budget", [4, 8])
def test_cpu_work_ramps_up_to_the_parallelism(budget):
    """Native work with no blocking section at all (no I/O, no Python): the
    pool still starts a thread per turn the stage may run, up to the budget
    (a turn that starts wakes a peer while more could run; before, only
    submits and blocking sections woke threads, and this ran on one)."""
    images = np.random.default_rng(0).random((128, 48, 48, 3), dtype=np.float32)
    ds = Dataset.from_tensor_slices(images).map(
        lambda x: cv.image.resize(x, [80, 80]), num_parallel_calls=budget).batch(8)
    options = cv.data.Options()
    options.autotune.cpu_budget = budget
    it = iter(ds.with_options(options))
    peak, got = 0, []
    for b in it:
        got.append(b)
        peak = max(peak, it.stats().threads)
    assert peak == budget
    expected = [cv.image.resize(x, [80, 80]) for x in images]
    assert all(np.array_equal(g, np.stack(expected[8 * i:8 * i + 8])) for i, g in enumerate(got))


def _cached_io_works(path):
    """openat2(RESOLVE_CACHED) and preadv2(RWF_NOWAIT), as csrc/io/file.c uses them."""
    import ctypes
    import struct
    libc = ctypes.CDLL(None, use_errno=True)
    how = struct.pack("QQQ", os.O_RDONLY | os.O_CLOEXEC, 0, 0x20)  # open_how; RESOLVE_CACHED
    fd = libc.syscall(437, -100, os.fsencode(path), how, len(how))  # SYS_openat2, AT_FDCWD
    if fd < 0:
        return False
    try:
        return os.preadv(fd, [bytearray(16)], 0, os.RWF_NOWAIT) == 16
    except OSError:
        return False
    finally:
        os.close(fd)


def test_reading_cached_files_keeps_to_the_budget(tmp_path):
    """read_file of files the page cache holds is CPU work: the open
    (openat2 RESOLVE_CACHED) and the read (RWF_NOWAIT) give up no place in
    the pool, so no spare thread starts and no turn counts as blocked. (A
    handoff at every file had run three JPEG turns on two cores: 20% slower
    than two, csrc/io/file.c.)"""
    # procfs refuses RWF_NOWAIT (EOPNOTSUPP): that must not turn it off for
    # the files of other file systems (it did, for the rest of the process).
    assert b"Name:" in cv.io.read_file("/proc/self/status")
    paths = []
    for i in range(64):
        p = tmp_path / f"f{i:02d}.bin"
        with open(p, "wb") as f:
            f.write(bytes([i]) * (1000 + 997 * i))
            os.fsync(f.fileno())  # no page of it under writeback while it is read (RWF_NOWAIT: EAGAIN)
        paths.append(str(p))
    ds = Dataset.from_tensor_slices(paths).map(
        lambda f: cv.strings.length(cv.io.read_file(f)), num_parallel_calls=AUTOTUNE).batch(4)
    options = cv.data.Options()
    options.autotune.cpu_budget = 2
    ds = ds.with_options(options)
    expected = [1000 + 997 * i for i in range(64)]
    assert [int(v) for b in ds for v in b] == expected  # the files are in the page cache now
    if not _cached_io_works(paths[-1]):
        pytest.skip("this kernel cannot open by the dentry cache alone or read with RWF_NOWAIT "
                    "(Linux < 5.12, or a seccomp filter): every file is a blocking section")
    # Where the kernel cannot serve a call from its caches after all (a page
    # locked for a moment on a busy machine), that call blocks, rightly: so
    # one clean epoch of three is asked for. Before, every epoch blocked at
    # every file.
    clean = []
    for epoch in range(3):
        it = iter(ds)
        peak, got = 0, []
        for b in it:
            got += [int(v) for v in b]
            peak = max(peak, it.stats().threads)
        assert got == expected
        stage = next(s for s in it.stats().stages if s.kernel in ("MapAndBatch", "ParallelMap"))
        clean.append((stage.blocked, peak))
    assert (0.0, 1) in clean or (0.0, 2) in clean, clean


def test_nested_pipelines_in_a_map_function_finish():
    """A Python function that iterates another pipeline runs on a pool thread
    (its own pool for the inner pipeline): no deadlock, right values."""
    def inner_sum(x):
        return sum(int(v) for v in Dataset.range(int(x)).map(
            lambda v: v * 2, num_parallel_calls=AUTOTUNE).prefetch(2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = Dataset.range(12).map(lambda x: cv.numpy_function(inner_sum, [x], cv.int64),
                                   num_parallel_calls=AUTOTUNE).prefetch(3)
    options = cv.data.Options()
    options.autotune.cpu_budget = 1
    assert [int(x) for x in ds.with_options(options)] == [x * (x - 1) for x in range(12)]


def _engine_thread_names():
    names = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass  # the thread exited meanwhile
    return [n for n in names if n.startswith("cv")]


def test_the_default_budget_is_the_cpu_budget_of_all_cpus():
    """One place resolves budgets (csrc/core/pipeline.h): a default AUTOTUNE
    pipeline on N CPUs gets the pool, the per-stage ceilings and so the thread
    bound of options.autotune.cpu_budget = N."""
    cpus = cv._engine.cpu_count()
    default = _drain_counting_threads(_seven_stages(None))
    explicit = _drain_counting_threads(_seven_stages(cpus))
    assert default[0] == explicit[0]
    assert default[2].cpu_budget == explicit[2].cpu_budget == cpus
    assert ([s.max_parallelism for s in default[2].stages]
            == [s.max_parallelism for s in explicit[2].stages])
    assert {s.max_parallelism for s in default[2].stages if s.kernel == "Map"} == {cpus + 1}
    assert default[1] <= cpus + POOL_SPARE and explicit[1] <= cpus + POOL_SPARE


def test_engine_threads_are_named_by_pipeline_and_role():
    """top -H, gdb and py-spy show cv<pipeline>-pool (and cv<pipeline>-stop
    for a detached teardown), never "python"; the process-wide I/O threads
    (another test may have started them) are cv-io and cv-uring."""
    before = set(_engine_thread_names())
    it = iter(_seven_stages(2))
    next(it)
    names = _engine_thread_names()
    it.close()
    assert all(re.fullmatch(r"cv\d+-(pool|stop)|cv-io|cv-uring", n) for n in names), names
    ours = set(names) - before
    assert len(ours) == 1 and ours.pop().endswith("-pool"), names
