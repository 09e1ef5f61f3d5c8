"""Stress for the pipeline pool (csrc/core/pool.h): many short pipelines with
nested parallel stages, interleave and Python maps, under CPU budgets 1..4,
drained, closed mid-epoch and read (stats()) from several Python threads at
once; interrupts and interpreter exit with pipelines running.

Every scenario runs in a fresh interpreter with a timeout and
faulthandler.dump_traceback_later, so a hang (a lost wake-up, a deadlock in
help-then-block) fails with every thread's stack instead of stalling the
suite. .ci/tsan runs this file under ThreadSanitizer too.
"""
import os

import pytest

from conftest import fork_with_busy_threads

# Under a sanitizer everything runs several times slower: fewer rounds.
ROUNDS = 6 if os.environ.get("CV_SANITIZED") == "1" else 30

PRELUDE = """
import faulthandler, random, sys, threading, time, warnings
import numpy as np
import conveyor as cv
from conveyor.data import AUTOTUNE, Dataset
faulthandler.dump_traceback_later(%(hang)d, exit=True)
warnings.simplefilter("ignore")
sys.setswitchinterval(1e-4)

def slow(x):  # a Python map that blocks: a blocking section on the pool
    if int(x) %% 7 == 0:
        time.sleep(0.0002)
    return x

def build(kind, budget, n):
    if kind == 0:  # Python map over a native parallel map, prefetched
        ds = Dataset.range(n).map(lambda x: x * 2, num_parallel_calls=2)
        ds = ds.map(slow, num_parallel_calls=AUTOTUNE).prefetch(2)
        want = [2 * i for i in range(n)]
    elif kind == 1:  # parallel interleave of inner parallel maps, then a stage above it
        ds = Dataset.range(4).interleave(
            lambda i: Dataset.range(i * 100, i * 100 + n // 4).map(lambda x: x + 1, num_parallel_calls=2),
            cycle_length=2, block_length=3, num_parallel_calls=AUTOTUNE)
        ds = ds.map(slow, num_parallel_calls=2).prefetch(1)
        want = list(Dataset.range(4).interleave(
            lambda i: Dataset.range(i * 100, i * 100 + n // 4).map(lambda x: x + 1),
            cycle_length=2, block_length=3).as_numpy_iterator())
    elif kind == 2:  # batch in parallel over a Python map, in repeat epochs
        ds = Dataset.range(n // 2).map(slow, num_parallel_calls=3).batch(4, num_parallel_calls=2).repeat(2)
        ds = ds.map(lambda b: b + 1, num_parallel_calls=AUTOTUNE)
        want = [list(range(i, min(i + 4, n // 2))) for i in range(0, n // 2, 4)] * 2
        want = [[x + 1 for x in b] for b in want]
    else:  # nested interleave (an inner interleave inside an outer one), non-deterministic
        ds = Dataset.range(3).interleave(
            lambda i: Dataset.range(2).interleave(
                lambda j: Dataset.range(n // 6).map(lambda x: x * 10, num_parallel_calls=2),
                cycle_length=2, num_parallel_calls=2),
            cycle_length=3, num_parallel_calls=2, deterministic=False)
        want = sorted([x * 10 for x in range(n // 6)] * 6)
    options = cv.data.Options()
    options.autotune.cpu_budget = budget
    return ds.with_options(options), want, kind == 3

def norm(v):
    return np.asarray(v).tolist()
"""


def _run(run_python, body, timeout=240):
    code = PRELUDE % {"hang": timeout - 20} + body
    result = run_python(code, timeout=timeout)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    return result.stdout


def test_many_short_pipelines_from_several_threads(run_python):
    """Four Python threads each drain, cut short or close many pipelines (all
    four shapes, budgets 1..4) while reading stats(); every drained pipeline
    gives exactly its elements."""
    out = _run(run_python, """
errors = []
def worker(seed):
    rng = random.Random(seed)
    try:
        for r in range(%d):
            kind, budget = rng.randrange(4), rng.randrange(1, 5)
            ds, want, unordered = build(kind, budget, 48)
            it = iter(ds)
            mode = rng.randrange(3)
            if mode == 0:  # drain
                got = [norm(v) for v in it]
                if unordered:
                    got = sorted(got)
                assert got == want, (kind, budget, got, want)
                it.stats()
            elif mode == 1:  # a few elements, then close mid-epoch
                for _ in range(rng.randrange(1, 6)):
                    next(it)
                it.stats()
                it.close()
                it.stats()
            else:  # a few elements, then drop it (destroyed by the GC / refcount)
                for _ in range(rng.randrange(0, 4)):
                    next(it)
                del it
    except BaseException as e:
        errors.append(repr(e))
        raise
threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert not errors, errors
print("ok", cv._engine.live_iterators())
""" % ROUNDS)
    assert out.split() == ["ok", "0"], out


def test_stats_read_from_other_threads_while_the_pipeline_runs(run_python):
    """stats() from two other threads, in a loop, while inner iterators are
    made and destroyed on pool threads (interleave's inner datasets, repeat's
    epochs) and the autotuner reads the same statistics."""
    out = _run(run_python, """
stop = threading.Event()
reads = [0]
def reader(it):
    while not stop.is_set():
        s = it.stats()
        assert s is not None
        reads[0] += 1
for kind in range(4):
    for budget in (1, 3):
        ds, want, unordered = build(kind, budget, 96)
        it = iter(ds)
        stop.clear()
        readers = [threading.Thread(target=reader, args=(it,)) for _ in range(2)]
        for t in readers:
            t.start()
        got = [norm(v) for v in it]
        stop.set()
        for t in readers:
            t.join()
        assert (sorted(got) if unordered else got) == want, (kind, budget)
print("ok", reads[0] > 0)
""")
    assert out.split() == ["ok", "True"], out


def test_close_from_another_thread_while_next_waits(run_python):
    """close() from another thread at varied moments while next() runs or
    waits: next() ends (an error or StopIteration), nothing hangs, and every
    pool thread is joined."""
    out = _run(run_python, """
import os
list(build(0, 2, 8)[0])  # a first pipeline: threads that live on (a sanitizer's) are there
before = len(os.listdir("/proc/self/task"))
rng = random.Random(5)
outcomes = set()
for r in range(%d):
    kind, budget = r %% 4, 1 + r %% 4
    ds, _, _ = build(kind, budget, 400)
    it = iter(ds)
    next(it)
    def close_later():
        time.sleep(rng.uniform(0, 0.004))
        it.close()
    t = threading.Thread(target=close_later)
    t.start()
    try:
        for _ in it:
            pass
        outcomes.add("end")
    except cv.errors.CancelledError:
        outcomes.add("cancelled")
    t.join()
    it.close()
time.sleep(0.05)
print("ok", len(os.listdir("/proc/self/task")) - before, sorted(outcomes))
""" % ROUNDS)
    words = out.split()
    assert words[:2] == ["ok", "0"], out


def test_budget_one_nested_stages_under_interrupts(run_python):
    """Budget 1 (one running turn: nested stages progress only by helping):
    interrupts from another thread land while next() waits or hands an
    element out; the elements that come out are exactly the expected ones."""
    out = _run(run_python, """
import _thread, itertools
for kind in (0, 1, 2):
    ds, want, _ = build(kind, 1, 200)
    it = iter(ds)
    got, fired, done = [], [0], [False]
    lock = threading.Lock()  # no interrupt is fired once done is set
    go = threading.Event()  # none either before the harness is in its try
    def interrupter():
        go.wait()
        while True:
            time.sleep(random.uniform(0.0005, 0.004))
            with lock:
                if done[0]:
                    return
                _thread.interrupt_main()
                fired[0] += 1
    t = threading.Thread(target=interrupter, daemon=True)
    t.start()
    # An interrupt can land anywhere, also in this harness: all in a try.
    while True:
        try:
            go.set()
            while True:
                # extend stores the element in C: with got.append(next(it)) a
                # pending signal handler could run between the two and drop an
                # element that next() had already handed over.
                before = len(got)
                got.extend(itertools.islice(it, 1))
                if len(got) == before:
                    with lock:
                        done[0] = True
                    break
            time.sleep(0.02)  # the last one fired may still be pending
            t.join()
            break
        except KeyboardInterrupt:
            pass
    got = [norm(v) for v in got]
    assert got == want, (kind, len(got), len(want))
print("ok")
""")
    assert out.split() == ["ok"], out


def test_interpreter_exit_with_pipelines_running_in_threads(run_python):
    """The interpreter exits (atexit: _engine.shutdown) while daemon threads
    are inside next() of nested pipelines with Python maps, and while
    undrained iterators sit in the main thread: it exits promptly, cleanly."""
    for budget in (1, 3):
        out = _run(run_python, """
its = []
for kind in range(4):
    ds, _, _ = build(kind, %d, 4000)
    it = iter(ds)
    next(it)
    its.append(it)
def spin(kind):
    ds, _, _ = build(kind, %d, 100000)
    for _ in ds:
        pass
for kind in range(4):
    threading.Thread(target=spin, args=(kind,), daemon=True).start()
time.sleep(0.2)
print("exiting", flush=True)
""" % (budget, budget), timeout=120)
        assert out.split() == ["exiting"], out


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
@fork_with_busy_threads
def test_fork_while_pipelines_run(run_python):
    """fork() while pipelines run in the parent: the child can make and drain
    new pipelines (the parent's iterators are unusable there), the parent
    goes on."""
    out = _run(run_python, """
import os
ds, want, _ = build(1, 2, 96)
it = iter(ds)
first = norm(next(it))
pid = os.fork()
if pid == 0:
    try:
        ds2, want2, _ = build(0, 2, 48)
        ok = [norm(v) for v in ds2] == want2
        try:
            next(it)
            ok = False
        except RuntimeError:
            pass
        os._exit(0 if ok else 3)
    except BaseException:
        os._exit(4)
rest = [norm(v) for v in it]
_, status = os.waitpid(pid, 0)
print("ok", [first] + rest == want, os.waitstatus_to_exitcode(status))
""", timeout=120)
    assert out.split() == ["ok", "True", "0"], out


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
@fork_with_busy_threads
def test_fork_while_engine_threads_are_born(run_python):
    """fork() at the moment an engine thread makes its Python thread state
    (its first Python call) must not leave the child deadlocked inside
    CPython's after-fork code (the runtime's head lock held by a thread that
    does not exist there). Each round starts fresh pool threads that call
    Python and forks at once; every child must exit."""
    seconds = 3 if os.environ.get("CV_SANITIZED") == "1" else 10
    out = _run(run_python, """
import os
def py(x):
    return x
forks = hung = 0
end = time.monotonic() + %d
while time.monotonic() < end:
    it = iter(Dataset.range(64).map(py, num_parallel_calls=8).prefetch(1))
    for _ in range(forks %% 3):
        next(it)
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    forks += 1
    waited = time.monotonic()
    while os.waitpid(pid, os.WNOHANG)[0] == 0:
        if time.monotonic() - waited > 20:
            hung += 1
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            break
        time.sleep(0.001)
    del it
print("forks", forks > 0, "hung", hung)
""" % seconds, timeout=120)
    assert out.split() == ["forks", "True", "hung", "0"], out
