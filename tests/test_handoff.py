"""Hand-offs between a stage's workers and its consumer (core/stage.h).

The consumer takes ready results in runs and hands them out without the
lock; the binding takes a ready element with the GIL held (try_next) and
releases the GIL only to wait. None of this may change what comes out: order,
values, error positions, the RAM budget's count, Ctrl-C behaviour.
"""
import numpy as np
import pytest

import conveyor as tf
from conveyor import _engine
from conveyor import errors

Dataset = tf.data.Dataset
AUTOTUNE = tf.data.AUTOTUNE

pytestmark = pytest.mark.filterwarnings("ignore::conveyor.framework.tracing.TracingWarning")


@pytest.mark.parametrize("buffer_size", [1, 2, 3, 8, 64, AUTOTUNE])
def test_prefetch_runs_keep_order(buffer_size):
    n = 20_000
    assert [int(x) for x in Dataset.range(n).prefetch(buffer_size)] == list(range(n))


@pytest.mark.parametrize("deterministic", [True, False])
def test_parallel_map_runs_keep_every_element(deterministic):
    n = 20_000
    out = [int(x) for x in Dataset.range(n).map(lambda x: x * 3, num_parallel_calls=3,
                                                  deterministic=deterministic)]
    want = [3 * i for i in range(n)]
    assert (out if deterministic else sorted(out)) == want


def test_errors_keep_their_positions_inside_runs():
    # Elements are produced in chunks and handed out in runs; every error must
    # still come out at its own position, with the elements between them.
    def f(x):
        if x % 7 == 3:
            raise ValueError(f"bad {x}")
        return x

    for ds in (Dataset.range(200).map(f, num_parallel_calls=2).prefetch(16),
               Dataset.range(200).map(f, num_parallel_calls=2)):
        it = iter(ds)
        outcomes = []
        while True:
            try:
                outcomes.append(int(next(it)))
            except ValueError as e:
                outcomes.append(str(e))
            except StopIteration:
                break
        assert outcomes == [f"bad {i}" if i % 7 == 3 else i for i in range(200)]


def test_budget_released_when_runs_are_used_up():
    options = tf.data.Options()
    options.autotune.ram_budget = 10**9
    ds = Dataset.range(3000).map(lambda x: np.full(100, x % 256, np.uint8)).prefetch(64)
    ds = ds.with_options(options)
    budget = ds._ram_budget()
    it = iter(ds)
    for _ in range(1500):
        next(it)
    used, _ = _engine.memory_budget_usage(budget)
    assert used % 100 == 0 and used <= 64 * 100  # at most the window's slots
    assert sum(1 for _ in it) == 1500
    assert _engine.memory_budget_usage(budget)[0] == 0


def test_close_with_a_run_in_hand_frees_it():
    options = tf.data.Options()
    options.autotune.ram_budget = 10**9
    ds = Dataset.range(10**6).map(lambda x: np.zeros(10, np.uint8)).prefetch(64).with_options(options)
    it = iter(ds)
    for _ in range(10):
        next(it)
    it.close()
    with pytest.raises(StopIteration):
        next(it)
    assert _engine.memory_budget_usage(ds._ram_budget())[0] == 0


def test_close_from_another_thread_while_taking_ready_elements():
    import threading

    for _ in range(20):
        it = iter(Dataset.range(10**7).map(lambda x: x + 1, num_parallel_calls=2).prefetch(8))
        stop = threading.Event()

        def consume():
            try:
                while not stop.is_set():
                    next(it)
            except (StopIteration, errors.CancelledError):
                pass

        t = threading.Thread(target=consume)
        t.start()
        it.close()
        stop.set()
        t.join(10)
        assert not t.is_alive()


def test_interrupts_as_next_returns_lose_nothing(run_python):
    """Ctrl-C (interrupt_main, and a real SIGINT raised on another thread) at
    many varied moments while a pipeline with a stage is drained: each lands
    either while next() waits (it raises, the element stays in the pipeline),
    or while the element is on its way out (next() holds it back and raises;
    the next call returns it), or in the caller's code. The elements that come
    out are exactly the expected ones, in order, none lost or repeated."""
    result = run_python("""
        import _thread, itertools, random, signal, sys, threading, time, conveyor as cv
        D = cv.data.Dataset
        sys.setswitchinterval(1e-4)  # hand the GIL to the interrupter often
        def jitter(x):  # a Python producer that is sometimes slower than the consumer
            if x % 97 == 0:
                time.sleep(0.0005)
            return x
        N = 6000
        pipelines = {
            "prefetch": lambda: D.range(N).map(jitter, num_parallel_calls=1).prefetch(4),
            "parallel_map": lambda: D.range(N).map(jitter, num_parallel_calls=2),
            "native_prefetch": lambda: D.range(N).map(lambda x: x * 2, num_parallel_calls=2).prefetch(2),
            "concatenate": lambda: D.range(N // 2).map(jitter, num_parallel_calls=1).concatenate(
                D.range(N // 2, N).map(jitter, num_parallel_calls=1)),
            # dict elements: packing runs Python code after the element is taken
            "dict": lambda: D.zip({"v": D.range(N).map(jitter, num_parallel_calls=1)}).prefetch(2),
        }
        def norm(v):
            return int(v["v"] if isinstance(v, dict) else v)
        for name, build in pipelines.items():
            expected = [norm(v) for v in build()]
            random.seed(name)
            state = {"out": [], "caught": 0, "fired": 0, "done": False}
            lock = threading.Lock()  # no interrupt is fired once done is set
            go = threading.Event()

            def interrupter():
                go.wait()
                while True:
                    time.sleep(random.uniform(0.0001, 0.003))
                    with lock:
                        if state["done"]:
                            return
                        if state["fired"] % 2:
                            _thread.interrupt_main()
                        else:
                            signal.raise_signal(signal.SIGINT)
                        state["fired"] += 1

            def drain(it):
                out = state["out"]
                while not state["done"]:
                    try:
                        # list.extend takes the element from next() and stores it
                        # in C: `out.append(next(it))` would let the interpreter
                        # run a pending signal handler between the two, dropping
                        # an element that next() had already handed over (any
                        # Python iterator loses it there).
                        before = len(out)
                        out.extend(itertools.islice(it, 1))
                        if len(out) == before:  # sticky end: ask until enough fired
                            with lock:
                                state["done"] = state["fired"] >= 10
                    except KeyboardInterrupt:
                        state["caught"] += 1

            it = iter(build())
            t = threading.Thread(target=interrupter, daemon=True)
            t.start()
            # An interrupt can land anywhere, also in this harness's own code:
            # every statement that runs while interrupts may come is in a try.
            while True:
                try:
                    go.set()
                    drain(it)
                    for _ in range(5):  # the last one fired may still be pending
                        time.sleep(0.01)
                    break
                except KeyboardInterrupt:
                    state["caught"] += 1
            t.join()
            got = [norm(v) for v in state["out"]]
            print(name, got == expected, len(got), len(expected), state["fired"], state["caught"],
                  flush=True)
    """, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = [line.split() for line in result.stdout.strip().split("\n")]
    assert len(lines) == 5, result.stdout
    for name, same, got, want, fired, caught in lines:
        assert same == "True", (name, got, want, result.stdout)
        assert int(fired) >= 10 and int(caught) >= 1, result.stdout
