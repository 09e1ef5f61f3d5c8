"""AUTOTUNE runs tiny stages inline (issue 26; csrc/core/autotune.h, "Inline").

A parallel map or prefetch whose work per element is smaller than a hand-off
gets parallelism 0 from the autotuner: its consumer runs it on its own
thread. Asserted on the autotuner's recorded choices and the stages'
parallelism, never on time; every pipeline must give exactly what the
sequential one gives."""
import os
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import conveyor as cv
from checkpoint_helpers import plain, run

D = cv.data.Dataset
AUTOTUNE = cv.data.AUTOTUNE
pytestmark = pytest.mark.filterwarnings("ignore::conveyor.framework.tracing.TracingWarning",
                                        "ignore:.*runs in Python per element")
N = 300_000


# Whether a map is "tiny" is measured: under a sanitizer its native work is
# many times slower and may never go inline. The tests that assert that it
# does skip there (the other jobs run them); the rest still run its paths.
needs_native_speed = pytest.mark.skipif(
    bool(os.environ.get("CV_SANITIZED")),
    reason="under a sanitizer the 'tiny' map's native work is not tiny")


def double(x):  # traced: a few nanoseconds of native work
    return x * 2


def inline_choices(stats, stage):
    return [c for c in stats.choices if c.stage == stage and c.after == 0]


@needs_native_speed
def test_a_tiny_map_and_its_prefetch_run_inline():
    it = iter(D.range(N).map(double, num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE))
    out = np.fromiter((int(x) for x in it), dtype=np.int64, count=N)
    assert np.array_equal(out, np.arange(N) * 2)
    stats = it.stats()
    prefetch, pmap = stats.stages[0], stats.stages[1]
    assert (prefetch.kernel, pmap.kernel) == ("Prefetch", "Map")
    assert stats.autotune_algorithm == "model"
    assert inline_choices(stats, pmap.name), stats.choices
    assert inline_choices(stats, prefetch.name), stats.choices


@needs_native_speed
def test_a_tiny_map_then_batch_runs_inline_and_gives_the_same_batches():
    # map(AUTOTUNE).batch() is fused (MapAndBatch): its unit is a piece of a
    # batch, a few microseconds here, above the per-unit rule's bound; the
    # hand-off rule (autotune.h) sees that the parallel pipeline is no
    # faster than its sequential estimate and tries it inline. The values
    # and batch boundaries must be the unfused sequential pipeline's.
    def make(parallel):
        return D.range(N).map(double, num_parallel_calls=parallel).batch(32)
    it = iter(make(AUTOTUNE).prefetch(AUTOTUNE))
    got = run(it)
    assert got == run(iter(make(None)))
    stats = it.stats()
    fused = stats.stages[1]
    assert fused.kernel == "MapAndBatch", stats.stages
    assert inline_choices(stats, fused.name), stats.choices


def _batched(fn, n, parallel):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return D.range(n).map(fn, num_parallel_calls=parallel).batch(32)


def _assert_stays_parallel(fn, n, gain=False):
    """gain: the gain rule may take it inline (a Python map under the GIL,
    tests/test_autotune_gain.py); no other rule may, nor its prefetch while
    it runs turns."""
    it = iter(_batched(fn, n, AUTOTUNE).prefetch(AUTOTUNE))
    got = run(it)
    assert got == run(iter(_batched(fn, n, None)))
    stats = it.stats()
    fused = stats.stages[1]
    assert fused.kernel == "MapAndBatch", stats.stages
    assert stats.autotune_runs > 0
    assert not [c for c in inline_choices(stats, fused.name) if not (gain and c.gain)], stats.choices
    assert fused.parallelism >= 1 or gain
    if not any(c.gain for c in stats.choices):
        assert not inline_choices(stats, stats.stages[0].name), stats.choices


def test_a_heavy_native_map_then_batch_stays_parallel():
    def heavy(x):  # traced: 50,000 additions natively, tens of microseconds
        return cv.math.reduce_sum(cv.range(np.int64(50_000))) + x
    _assert_stays_parallel(heavy, 32 * 40)


def test_a_python_map_then_batch_stays_parallel():
    def python_work(x):  # runs in Python: a loop of a few microseconds
        total = 0
        for i in range(200):
            total += i
        return np.int64(int(x) + total)
    _assert_stays_parallel(python_work, 32 * 60, gain=True)


def test_a_slow_map_stays_parallel():
    def slow(x):
        time.sleep(0.001)
        return np.int64(int(x) * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = D.range(400).map(slow, num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE)
    it = iter(ds)
    assert [int(x) for x in it] == [2 * i for i in range(400)]
    stats = it.stats()
    pmap = stats.stages[1]
    assert stats.autotune_runs > 0
    assert pmap.parallelism >= 1
    # The prefetch over it hides its bursts: it stays too. Under load the
    # gain rule may try either inline (its workers waited for the GIL), and
    # takes such a trial back when it loses: each settles parallel.
    for stage in (pmap.name, stats.stages[0].name):
        mine = [c for c in stats.choices if c.stage == stage]
        assert not mine or mine[-1].after > 0, stats.choices
        assert all(c.gain for c in inline_choices(stats, stage)), stats.choices


def test_explicit_parallelism_and_buffer_are_never_touched():
    it = iter(D.range(N).map(double, num_parallel_calls=2).prefetch(8))
    out = np.fromiter((int(x) for x in it), dtype=np.int64, count=N)
    assert np.array_equal(out, np.arange(N) * 2)
    stats = it.stats()
    assert stats.choices == []
    assert stats.stages[1].parallelism == 2 and stats.stages[0].buffer_size == 8


def _with_errors(it):
    """Every element of it, an error as its type's name, in order."""
    out = []
    while True:
        try:
            out.append(int(next(it)))
        except StopIteration:
            return out
        except Exception as e:  # noqa: BLE001 - the error is the value compared
            out.append(type(e).__name__)


def test_errors_stay_at_their_element_inline():
    def fail_some(x):  # runs in Python; raises at every 1000th element
        if int(x) % 1000 == 7:
            raise ValueError(f"element {int(x)}")
        return np.int64(int(x))

    def make(parallel):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return D.range(40_000).map(fail_some, num_parallel_calls=parallel).map(
                double, num_parallel_calls=parallel)
    seq = _with_errors(iter(make(None)))
    assert seq.count("ValueError") == 40
    assert _with_errors(iter(make(AUTOTUNE).prefetch(AUTOTUNE))) == seq


@needs_native_speed
def test_an_inline_map_goes_back_to_parallel_when_its_work_grows():
    switch = N // 2

    def cost(i):  # 1 until the switch, then 50,000
        return cv.where(i < switch, np.int64(1), np.int64(50_000))

    def work(n):  # traced: n additions, natively
        return cv.math.reduce_sum(cv.range(n))

    def make(parallel):
        return D.range(switch + 6000).map(cost).map(work, num_parallel_calls=parallel)
    it = iter(make(AUTOTUNE).prefetch(AUTOTUNE))
    got = [int(x) for x in it]
    assert got == [int(x) for x in make(None)]
    stats = it.stats()
    pmap = stats.stages[1].name
    mine = [c for c in stats.choices if c.stage == pmap]
    first_inline = next(i for i, c in enumerate(mine) if c.after == 0)
    assert any(c.before == 0 and c.after > 0 for c in mine[first_inline:]), stats.choices


def _until_inline(it, stage, most):
    """Elements of it, as plain values, until `stage` runs inline (or most)."""
    head = []
    while len(head) < most:
        head += run(it, 2000)
        if it.stats().stages[stage].parallelism == 0:
            break
    return head


@needs_native_speed
def test_a_state_saved_inline_restores_exactly():
    def make():
        return D.range(N).map(double, num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE)
    it = iter(make())
    head = _until_inline(it, 1, N // 2)
    assert it.stats().stages[1].parallelism == 0, it.stats().choices
    state = it.save()
    head += run(it, 1000)
    second = it.save()
    tail = run(it)
    expected = [plain(np.int64(2 * i)) for i in range(N)]
    assert head + tail == expected
    again = iter(make())
    again.restore(state)
    assert head[-1000:] + tail == run(again)
    again = iter(make())
    again.restore(second)
    assert tail == run(again)


def test_many_short_epochs_going_inline_never_hang(tmp_path):
    # Once, under load, a prefetch turn waited forever in MapAndBatch's
    # next() with no MapAndBatch turn running (the suspected race: going
    # inline while that stage's last turn was ending; core/stage.c,
    # settle_wait). Many short epochs, each going inline early, in a child
    # process that must finish in time: a smoke test, the race is rare.
    code = textwrap.dedent("""
        import conveyor as cv
        D, A = cv.data.Dataset, cv.data.AUTOTUNE
        def double(x):
            return x * 2
        for n in [20_000, 3_000] * 40:
            ds = D.range(n).map(double, num_parallel_calls=A).batch(32).prefetch(A)
            assert sum(1 for _ in ds) == (n + 31) // 32
        print("done")
    """)
    here = os.path.dirname(os.path.dirname(os.path.abspath(cv.__file__)))  # this conveyor
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in [here, os.environ.get("PYTHONPATH")] if p))
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], env=env, timeout=300,
                         capture_output=True, text=True, cwd=str(tmp_path))
    assert out.returncode == 0 and "done" in out.stdout, out.stderr[-2000:]


# -- The start probe (autotune.h, "The start probe"): an AUTOTUNE stage starts
# inline, times its first units and gets the autotuner's verdict, recorded
# as a choice with from_start; a tiny one never runs a turn on a pool thread.

def _from_start(stats, stage):
    return [c for c in stats.choices if c.stage == stage and c.from_start]


@needs_native_speed
def test_a_tiny_map_is_inline_from_the_start_with_no_parallel_phase():
    it = iter(D.range(N).map(double, num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE))
    head = np.fromiter((int(x) for x in it), dtype=np.int64, count=1000)
    # After the probe's verdict (64 units): no pool thread was ever started
    # (mid-epoch: the pool stops at the end).
    assert it.stats().threads == 0, it.stats().choices
    out = np.concatenate([head, [int(x) for x in it]])
    assert np.array_equal(out, np.arange(N) * 2)
    stats = it.stats()
    prefetch, pmap = stats.stages[0], stats.stages[1]
    for stage in (pmap, prefetch):
        # No parallel phase: the stage's first choice is the probe's verdict,
        # inline from the start (later ones follow the work as measured: on
        # a loaded machine a descheduled sample may still move it).
        mine = [c for c in stats.choices if c.stage == stage.name]
        assert mine and mine[0].from_start and (mine[0].before, mine[0].after) == (0, 0), stats.choices
        assert len(_from_start(stats, stage.name)) == 1, stats.choices


@needs_native_speed
def test_a_tiny_map_then_batch_is_inline_from_the_start():
    def make(parallel):
        return D.range(N).map(double, num_parallel_calls=parallel).batch(32)
    it = iter(make(AUTOTUNE).prefetch(AUTOTUNE))
    assert run(it) == run(iter(make(None)))
    stats = it.stats()
    fused = stats.stages[1]
    assert fused.kernel == "MapAndBatch", stats.stages
    # Inline from the start: the hand-off trial (parallel first) is not needed.
    mine = [c for c in stats.choices if c.stage == fused.name]
    assert mine and mine[0].from_start and (mine[0].before, mine[0].after) == (0, 0), stats.choices


def run_n(it, n):
    return [next(it) for _ in range(n)]


def test_a_slow_map_goes_parallel_after_its_first_units_and_gains_parallelism():
    # A native function (a Python one starts parallel: it may wait for
    # another element's call, tests/test_map.py's barrier).
    def slow(x):  # traced: 200,000 additions natively, a few hundred microseconds
        return cv.math.reduce_sum(cv.range(np.int64(200_000))) + x
    total = sum(range(200_000))
    ds = D.range(300).map(slow, num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE)
    it = iter(ds)
    head = [int(x) for x in run_n(it, 200)]
    threads = it.stats().threads  # mid-epoch (the pool stops at the end)
    assert head + [int(x) for x in it] == [total + i for i in range(300)]
    stats = it.stats()
    pmap = stats.stages[1]
    verdict = _from_start(stats, pmap.name)
    assert len(verdict) == 1 and verdict[0].before == 0 and verdict[0].after >= 1, stats.choices
    mine = [c for c in stats.choices if c.stage == pmap.name]
    assert mine[0] is verdict[0] or mine[0] == verdict[0], stats.choices  # the probe's verdict comes first
    assert not inline_choices(stats, pmap.name), stats.choices
    assert max(c.after for c in mine) >= 2 and pmap.parallelism >= 2, stats.choices
    assert threads >= 2, stats
    # The prefetch over it buffers its bursts.
    prefetch = stats.stages[0]
    assert [c.after for c in _from_start(stats, prefetch.name)] == [1], stats.choices


def test_states_saved_while_probing_restore_exactly():
    # A state saved within the probe's first units (inline, every unit
    # timed), and one after its verdict, restore to the same elements.
    def make():
        return D.range(5000).map(double, num_parallel_calls=AUTOTUNE).batch(7).prefetch(AUTOTUNE)
    expected = run(iter(make()))
    for k in (0, 1, 5, 40, 300):
        it = iter(make())
        head = run(it, k)
        state = it.save()
        tail = run(it)
        assert head + tail == expected
        again = iter(make())
        again.restore(state)
        assert run(again) == tail


def test_an_interleave_of_autotune_maps_keeps_its_order():
    # Inner iterators (interleave's) never start inline: the tuner does not
    # decide them. Same elements as the sequential pipeline, in order.
    def inner(i):
        return D.range(i * 100, i * 100 + 50).map(double, num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE)

    def make(parallel):
        return D.range(8).interleave(inner, cycle_length=3, block_length=2,
                                     num_parallel_calls=parallel).map(double, num_parallel_calls=parallel)
    assert run(iter(make(AUTOTUNE).prefetch(AUTOTUNE))) == run(iter(make(None)))


@needs_native_speed
def test_an_inline_prefetch_at_the_root_hands_over_its_input_elements():
    # The pipeline takes the elements of an inline prefetch at its root from
    # the map below it directly, up to the prefetch's next timed unit
    # (CvKernel.pass_through): values, errors at their element and the
    # prefetch's own counts are the same as through the prefetch.
    def fail_some(x):  # traced: an error at every 1000th element
        return cv.debugging.check_numerics(1.0 / cv.cast(x % 1000 - 999, cv.float64), "x")

    def make(parallel):
        return D.range(N // 10).map(fail_some, num_parallel_calls=parallel)
    expected = _with_errors(iter(make(None)))
    assert expected.count("InvalidArgumentError") == N // 10000
    it = iter(make(AUTOTUNE).prefetch(AUTOTUNE))
    assert _with_errors(it) == expected
    stats = it.stats()
    prefetch, pmap = stats.stages[0], stats.stages[1]
    assert [c.after for c in _from_start(stats, prefetch.name)] == [0], stats.choices
    assert prefetch.parallelism == 0, stats.choices
    counts = (N // 10 - N // 10000, N // 10000)
    assert (prefetch.elements, prefetch.errors) == (pmap.elements, pmap.errors) == counts


@pytest.mark.parametrize("python_predicate", [False, True])
def test_a_filter_over_an_inline_map_gives_the_sequential_elements_and_errors(python_predicate):
    # The filter answers try_next (the binding's first ask, GIL held) when its
    # input has an element now, running the predicate there as next() would:
    # the same elements, errors at their element, in order.
    def traced(x):  # an error (check_numerics) at every 500th element; keeps x % 4 == 0
        cv.debugging.check_numerics(1.0 / cv.cast(x % 1000 - 998, cv.float64), "x")
        return x % 4 == 0

    def in_python(x):
        if int(x) % 1000 == 998:
            raise ValueError(f"element {int(x)}")
        return int(x) % 4 == 0

    predicate = in_python if python_predicate else traced

    def make(parallel):
        ds = D.range(N // 10).map(double, num_parallel_calls=parallel).filter(predicate)
        return ds.prefetch(AUTOTUNE) if parallel else ds
    expected = _with_errors(iter(make(None)))
    assert expected.count("ValueError" if python_predicate else "InvalidArgumentError") == N // 5000
    assert _with_errors(iter(make(AUTOTUNE))) == expected


# -- Interleave (issue 26): an AUTOTUNE interleave reports its turns as a stage
# does, and at parallelism 0 its consumer runs the turns itself (kernels/
# interleave.c, follow_limit): the same cycle, order, errors and saved states.

def _repeated(x):  # an inner dataset of 4 elements: microseconds of work per element
    return D.from_tensors(x).repeat(4)


def _tiny_interleave(parallel, n=20_000, deterministic=None):
    return D.range(n).interleave(_repeated, cycle_length=4, num_parallel_calls=parallel,
                                 deterministic=deterministic)


def _interleave_stage(stats):
    stage = next(s for s in stats.stages if s.kernel == "Interleave")
    return stage.name, stage.parallelism


@needs_native_speed
@pytest.mark.parametrize("deterministic", [None, False])
def test_a_tiny_interleave_runs_inline_with_the_sequential_elements(deterministic):
    it = iter(_tiny_interleave(AUTOTUNE, deterministic=deterministic).prefetch(AUTOTUNE))
    got = run(it)
    expected = run(iter(_tiny_interleave(None)))
    if deterministic is None:
        assert got == expected
    else:  # any order across inner datasets, each one's own order kept
        assert sorted(got) == sorted(expected)
        assert [x for x in got if x[0][2] % 7 == 3] == [x for x in expected if x[0][2] % 7 == 3]
    stats = it.stats()
    name, _ = _interleave_stage(stats)
    # Inline at some point (under load the gain rule's trials of its most
    # may still be running, or have moved it, at the end).
    assert inline_choices(stats, name), stats.choices


def test_a_slow_interleave_stays_parallel():
    def slow(x):  # runs in Python and sleeps: the inner datasets wait, as on storage
        time.sleep(0.002)
        return np.int64(int(x))

    def make(parallel):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return D.range(60).interleave(lambda x: D.from_tensors(x).repeat(4).map(slow),
                                          cycle_length=8, num_parallel_calls=parallel)
    it = iter(make(AUTOTUNE).prefetch(AUTOTUNE))
    assert run(it) == run(iter(make(None)))
    stats = it.stats()
    name, parallelism = _interleave_stage(stats)
    assert parallelism >= 1, stats.choices
    # The gain rule may try it with fewer (its turns waited for the GIL) and
    # takes such a trial back when it loses: it settles parallel.
    assert all(c.gain for c in inline_choices(stats, name)), stats.choices


def test_an_inline_interleave_gives_errors_at_their_element():
    def inner(x):  # the inner dataset of every 50th element fails at its third element
        return D.from_tensors(x).repeat(4).map(
            lambda v: cv.debugging.check_numerics(1.0 / cv.cast(v % 50 - 7, cv.float64), "v"))

    def make(parallel):
        return D.range(2000).interleave(inner, cycle_length=3, block_length=2,
                                        num_parallel_calls=parallel)
    expected = _with_errors(iter(make(None)))
    assert expected.count("InvalidArgumentError") == 4 * 40
    assert _with_errors(iter(make(AUTOTUNE).prefetch(AUTOTUNE))) == expected


@needs_native_speed
def test_a_state_saved_with_the_interleave_inline_restores_exactly():
    def make():
        return _tiny_interleave(AUTOTUNE, n=40_000).prefetch(AUTOTUNE)
    it = iter(make())
    head = []
    while _interleave_stage(it.stats())[1] != 0 and len(head) < 80_000:
        head += run(it, 1000)
    assert _interleave_stage(it.stats())[1] == 0, it.stats().choices
    head += run(it, 333)  # mid-cycle, mid-block
    state = it.save()
    tail = run(it)
    assert head + tail == run(iter(_tiny_interleave(None, n=40_000)))
    again = iter(make())
    again.restore(state)
    assert run(again) == tail


@needs_native_speed
def test_an_inline_interleave_goes_back_to_parallel_when_its_work_grows():
    switch = 3000

    def inner(x):  # tiny elements until the switch, then 50,000 native additions each
        n = cv.where(x < switch, np.int64(1), np.int64(50_000))
        return D.from_tensors(n).repeat(4).map(lambda k: cv.math.reduce_sum(cv.range(k)))

    def make(parallel):
        return D.range(switch + 600).interleave(inner, cycle_length=4, num_parallel_calls=parallel)
    it = iter(make(AUTOTUNE).prefetch(AUTOTUNE))
    assert run(it) == run(iter(make(None)))
    stats = it.stats()
    name, _ = _interleave_stage(stats)
    mine = [c for c in stats.choices if c.stage == name]
    first_inline = next(i for i, c in enumerate(mine) if c.after == 0)
    assert any(c.before == 0 and c.after > 0 for c in mine[first_inline:]), stats.choices


def test_a_map_over_an_inline_batch_gives_the_sequential_batches_and_errors():
    # The map answers try_next over the batch (a parallel batch run inline,
    # whose dataset may block) through the batch's own try_next (map.c,
    # map_try_pull): the same batches, errors at their batch, in order.
    def fail_some(x):  # traced: an error at every 100th batch
        cv.debugging.check_numerics(1.0 / cv.cast(x[0] % 3200 - 320, cv.float64), "x")
        return x * 2

    def make(parallel):
        ds = D.range(N // 10 + 7).batch(32).map(fail_some, num_parallel_calls=parallel)
        return ds.prefetch(AUTOTUNE) if parallel else no_parallelism(ds)
    expected = _with_errors_batches(iter(make(None)))
    assert expected.count("InvalidArgumentError") == sum(
        1 for start in range(0, N // 10 + 7, 32) if start % 3200 == 320)
    assert _with_errors_batches(iter(make(AUTOTUNE))) == expected


def no_parallelism(ds):
    options = cv.data.Options()
    options.experimental_optimization.parallel_batch = False
    return ds.with_options(options)


def _with_errors_batches(it):
    """Every batch of it as a list, an error as its type's name, in order."""
    out = []
    while True:
        try:
            out.append(np.asarray(next(it)).tolist())
        except StopIteration:
            return out
        except Exception as e:  # noqa: BLE001 - the error is the value compared
            out.append(type(e).__name__)


def plus_one(x):  # traced
    return x + 1


def _saved_along(it, steps):
    """All elements of it as plain values, and (elements before, state) saved
    after each count of elements in steps (cycled)."""
    got, states, k = [], [], 0
    while True:
        states.append((len(got), it.save()))
        more = run(it, steps[k % len(steps)])
        k += 1
        if not more:
            return got, states
        got += more


@needs_native_speed
def test_states_saved_through_inline_stages_restore_exactly():
    # Two tiny maps, the second fused with the batch: every stage runs inline.
    # The fused batch saves the inline map below for each batch, and a save
    # arms it; armed and inline, a stage takes its mark when one is wanted,
    # not per element, and keeps its direct path (core/stage.c, inline_mark).
    def make():
        return (D.range(N // 3).map(double, num_parallel_calls=AUTOTUNE)
                .map(plus_one, num_parallel_calls=AUTOTUNE).batch(32).prefetch(AUTOTUNE))
    expected = run(iter(no_parallelism(D.range(N // 3).map(double).map(plus_one).batch(32))))
    it = iter(make())
    got, states = _saved_along(it, [1, 7, 300, 2, 1000])
    assert got == expected
    assert all(s.parallelism == 0 for s in it.stats().stages if s.max_parallelism), it.stats().stages
    for before, state in states[::3]:
        again = iter(make())
        again.restore(state)
        assert run(again) == expected[before:], before


@needs_native_speed
def test_a_state_saved_as_an_inline_map_goes_parallel_restores_exactly():
    # Saved while the map is inline (armed by the first save), then after its
    # work grew and it went parallel again: leaving inline takes the mark of
    # the last inline element, and the turns' marks follow it.
    switch = N // 4

    def cost(i):
        return cv.where(i < switch, np.int64(1), np.int64(20_000))

    def work(n):
        return cv.math.reduce_sum(cv.range(n))

    def make(parallel):
        ds = D.range(switch + 3000).map(cost).map(work, num_parallel_calls=parallel)
        return ds.prefetch(AUTOTUNE) if parallel else ds
    expected = run(iter(make(None)))
    it = iter(make(AUTOTUNE))
    got, states = _saved_along(it, [997, 13, 5000])
    assert got == expected
    pmap = it.stats().stages[1].name
    mine = [c for c in it.stats().choices if c.stage == pmap]
    first_inline = next(i for i, c in enumerate(mine) if c.after == 0)
    assert any(c.before == 0 and c.after > 0 for c in mine[first_inline:]), mine
    for before, state in states[::4] + states[-3:]:
        again = iter(make(AUTOTUNE))
        again.restore(state)
        assert run(again) == expected[before:], before
