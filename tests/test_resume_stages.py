"""Exact resume of the run-ahead stages (csrc/core/stage.h): map (sequential
and parallel), prefetch, batch (parallel and not), map+batch fused, and
chains of them. A stage has pulled elements the consumer has not seen; the
state must point right after the last element handed out, so nothing in
flight is lost or repeated (docs/resume.md, "Run-ahead stages")."""
import os
import re

import numpy as np
import pytest

import conveyor as cv
from conveyor import errors
from checkpoint_helpers import (plain, run, straight, verify_resume, verify_resume_in_new_process,
                                verify_two_restores)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
try:
    import tensorflow as tf
except ImportError:  # pragma: no cover - the tf extra is optional
    tf = None

D = cv.data.Dataset
AUTOTUNE = cv.data.AUTOTUNE
needs_tf = pytest.mark.skipif(tf is None, reason="tensorflow is not installed")
pytestmark = pytest.mark.filterwarnings("ignore::conveyor.framework.tracing.TracingWarning",
                                        "ignore:.*runs in Python per element")
PARALLEL = [None, 1, 2, AUTOTUNE]


def double(x):  # traced: runs natively
    return x * 2


def py_double(x):  # calls no conveyor op on a tensor it can trace: runs in Python
    return np.int64(int(x) * 2)


def options(fusion=None, parallel_batch=None):
    o = cv.data.Options()
    o.experimental_optimization.map_and_batch_fusion = fusion
    o.experimental_optimization.parallel_batch = parallel_batch
    return o


# -- a harness where errors are elements ------------------------------------------------


def run_errors(it, n=None):
    """Up to n results (all when None); an error counts as one, in place, and
    iteration goes on after it."""
    out = []
    while n is None or len(out) < n:
        try:
            out.append(plain(next(it)))
        except StopIteration:
            break
        except errors.OpError as e:
            # A Python exception computed ahead and kept by a first save comes
            # back as an error of its code with its message (docs/resume.md):
            # compare where errors are and what they say.
            out.append(("error", re.search(r"boom at \d+", str(e)).group()))
    return out


def verify_resume_errors(make, breaks=None):
    expected = run_errors(iter(make()))
    assert any(x[0] == "error" for x in expected)
    for k in breaks if breaks is not None else range(len(expected) + 1):
        it = iter(make())
        head = run_errors(it, k)
        state = it.save()
        it = iter(make())
        it.restore(state)
        tail = run_errors(it)
        assert head + tail == expected, f"break at {k}"
    return expected


# -- map ---------------------------------------------------------------------------------


@pytest.mark.parametrize("npc", PARALLEL)
@pytest.mark.parametrize("fn", [double, py_double], ids=["native", "python"])
def test_map_resumes_at_every_element(npc, fn):
    out = verify_resume(lambda: D.range(25).map(fn, num_parallel_calls=npc))
    assert len(out) == 25


def test_map_two_restores_and_a_long_run():
    make = lambda: D.range(3000).map(double, num_parallel_calls=AUTOTUNE)
    verify_two_restores(make, 7, 1800)
    verify_resume(make, breaks=[0, 1, 2, 31, 32, 33, 500, 1999, 2999, 3000])
    make = lambda: D.range(400).map(py_double, num_parallel_calls=2)
    verify_two_restores(make, 100, 101)


def test_map_saves_again_and_again_on_one_iterator():
    """Save after every element of one iterator (the first save quiesces, the
    later ones use marks); each state restores to its position."""
    make = lambda: D.range(60).map(double, num_parallel_calls=AUTOTUNE)
    expected = straight(make)
    it, states = iter(make()), []
    for k in range(61):
        states.append(it.save())
        run(it, 1)
    for k in (0, 1, 2, 3, 17, 59, 60):
        it2 = iter(make())
        it2.restore(states[k])
        assert run(it2) == expected[k:], k


@pytest.mark.parametrize("npc", [None, 2, AUTOTUNE])
def test_python_errors_come_again_at_their_position(npc):
    """A function raising at some x: an error not yet returned comes again
    after restore, at the same position; one already returned does not."""
    bad = {0, 3, 4, 11, 19}

    def f(x):
        if int(x) in bad:
            raise errors.InvalidArgumentError(None, None, f"boom at {int(x)}")
        return x * 10
    got = verify_resume_errors(lambda: D.range(20).map(f, num_parallel_calls=npc))
    assert sum(x[0] == "error" for x in got) == len(bad)


def test_python_exceptions_keep_their_type_after_a_marked_save():
    """Once marks are on (after the first save), a restored map calls the
    function again on what was in flight: a plain Python exception comes back
    as itself."""
    def f(x):
        if int(x) % 5 == 4:
            raise ValueError(f"bad {int(x)}")
        return x

    def results(it, n=None):
        out = []
        while n is None or len(out) < n:
            try:
                out.append(int(next(it)))
            except StopIteration:
                break
            except ValueError as e:
                out.append(type(e).__name__ + str(e))
        return out
    make = lambda: D.range(30).map(f, num_parallel_calls=2)
    expected = results(iter(make()))
    for k in (1, 5, 12, 29):
        it = iter(make())
        it.save()  # arms the marks
        head = results(it, k)
        it2 = iter(make())
        it2.restore(it.save())
        assert head + results(it2) == expected, k


def test_random_ops_continue_their_sequence():
    """The element ids {epoch, index} seed a map's random ops: a restored map
    gives the values a straight run gives (op seed: no base seed drawn)."""
    def f(x):
        return x, cv.random.uniform([2], seed=7)
    for npc in (None, 3):
        make = lambda: D.range(30).map(f, num_parallel_calls=npc)
        verify_resume(make, breaks=[0, 1, 9, 29])


def test_random_ops_continue_the_saved_epoch():
    """The second epoch of a dataset saved and restored into a new iterator
    (whose own epoch would be the third) continues the second; the iterator
    after it gets a later epoch than the restored one."""
    ds = D.range(20).map(lambda x: cv.random.uniform([], seed=3), num_parallel_calls=2)
    first = run(iter(ds))
    it = iter(ds)
    second_head = run(it, 8)
    state = it.save()
    second = second_head + run(it)
    assert second != first
    it = iter(ds)
    it.restore(state)
    assert second_head + run(it) == second
    third = run(iter(ds))
    assert third not in (first, second)


def test_map_deterministic_false_loses_and_repeats_nothing():
    """deterministic=False: each save quiesces the stage and keeps the
    results computed but not returned, so the elements returned before and
    after a restore are the straight run's elements, each once (the order of
    those in flight follows the saved run, not a straight run)."""
    def make():
        return D.range(200).map(double, num_parallel_calls=4, deterministic=False)
    expected = sorted(map(repr, straight(make)))
    for k in (0, 1, 13, 100, 199, 200):
        it = iter(make())
        head = run(it, k)
        it2 = iter(make())
        it2.restore(it.save())
        got = head + run(it2)
        assert sorted(map(repr, got)) == expected, k


# -- prefetch ------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 4, AUTOTUNE])
def test_prefetch_resumes_at_every_element(size):
    verify_resume(lambda: D.range(30).prefetch(size))
    verify_resume(lambda: D.range(30).map(py_double, num_parallel_calls=2).prefetch(size),
                  breaks=[0, 1, 5, 29, 30])


def test_prefetch_two_restores_and_long_runs():
    make = lambda: D.range(5000).prefetch(64)
    verify_two_restores(make, 1, 4000)
    verify_resume(make, breaks=[0, 1, 63, 64, 65, 2500, 4999, 5000])


def test_prefetch_of_a_large_input_state_saves_its_buffer_instead():
    """The input's position is bigger than the mark limit (an unarmed
    prefetch holding big elements): the outer stage saves what it buffered
    and the input's state once per save instead of copying it per pull."""
    def make():
        return (D.range(40).map(lambda x: np.full([600], int(x)), num_parallel_calls=2)
                .prefetch(8).prefetch(4))
    verify_resume(make, breaks=[0, 1, 2, 7, 20, 39, 40])
    verify_two_restores(make, 3, 30)


# -- batch ----------------------------------------------------------------------------------


@pytest.mark.parametrize("drop", [False, True])
@pytest.mark.parametrize("npc", [None, 2, AUTOTUNE])
@pytest.mark.parametrize("parallel_batch", [False, True])
def test_batch_resumes_at_every_batch(drop, npc, parallel_batch):
    def make():
        return D.range(23).batch(4, drop_remainder=drop, num_parallel_calls=npc).with_options(
            options(parallel_batch=parallel_batch))
    out = verify_resume(make)
    assert len(out) == (5 if drop else 6)
    verify_two_restores(make, 1, 3)


def test_batch_input_errors_fail_their_batch_and_resume_after():
    def f(x):
        if int(x) in (5, 6, 17):
            raise errors.InvalidArgumentError(None, None, f"input boom at {int(x)}")
        return x
    for npc in (None, 2):
        verify_resume_errors(lambda: D.range(30).map(f).batch(4, num_parallel_calls=npc))


# -- map + batch, fused or not ------------------------------------------------------------


@pytest.mark.parametrize("fusion", [True, False])
@pytest.mark.parametrize("fn", [double, py_double], ids=["native", "python"])
@pytest.mark.parametrize("drop", [False, True])
def test_map_batch_resumes_at_every_batch(fusion, fn, drop):
    def make():
        return (D.range(45).map(fn, num_parallel_calls=AUTOTUNE).batch(4, drop)
                .with_options(options(fusion=fusion)))
    verify_resume(make)
    verify_two_restores(make, 2, 7)


@pytest.mark.parametrize("fusion", [True, False])
@pytest.mark.parametrize("batch", [1, 3, 7])
def test_map_batch_errors_shift_boundaries_and_resume(fusion, batch):
    """Errors in the function at some rows: each fails its batch and the next
    batch starts after it (boundaries shift); a restore anywhere, also inside
    a shifted stretch, goes on as the straight run."""
    bad = {2, 9, 10, 21, 33}

    def f(x):
        if int(x) in bad:
            raise errors.InvalidArgumentError(None, None, f"boom at {int(x)}")
        return x * 10
    verify_resume_errors(lambda: D.range(40).map(f, num_parallel_calls=2).batch(batch)
                         .with_options(options(fusion=fusion)))


def test_map_batch_of_strings_and_ragged_rows():
    """Rows the fused kernel batches by its exact path (strings, a short last
    batch)."""
    words = [b"a", b"bb", b"", b"dddd", b"eeeee"] * 7

    def make():
        return (D.range(len(words)).map(lambda i: words[int(i)])
                .map(lambda s: s, num_parallel_calls=2).batch(4)
                .with_options(options(fusion=True)))
    verify_resume(make)


# -- chains -------------------------------------------------------------------------------


def chain(n=200, npc=AUTOTUNE, batch=7, prefetch=AUTOTUNE, fn=double):
    return lambda: D.range(n).map(fn, num_parallel_calls=npc).batch(batch).prefetch(prefetch)


@pytest.mark.parametrize("npc", [1, AUTOTUNE])
def test_chain_resumes_at_every_element(npc):
    verify_resume(chain(60, npc=npc, batch=4, prefetch=2))
    verify_resume(chain(40, npc=npc, batch=3, fn=py_double))


def test_chain_at_many_points_and_two_restores():
    make = chain(20000, batch=32, prefetch=AUTOTUNE)
    verify_resume(make, breaks=[0, 1, 2, 3, 100, 311, 312, 624, 625])
    verify_two_restores(make, 5, 400)
    verify_two_restores(make, 0, 1)


@pytest.mark.parametrize("fusion", [True, False])
def test_chain_state_stays_small(fusion):
    """Once marks are on, the state of map -> batch -> prefetch is its
    fields and the source's position, whatever is in flight."""
    it = iter(chain(100000, batch=64, prefetch=16)().with_options(options(fusion=fusion)))
    run(it, 3)
    it.save()  # the first save may carry what is in flight
    run(it, 40)
    assert len(it.save()) < 512


def test_restore_in_a_new_process():
    verify_resume_in_new_process("""
        import numpy as np
        import conveyor as cv
        def make():
            ds = cv.data.Dataset.range(300).map(lambda x: x * 3, num_parallel_calls=cv.data.AUTOTUNE)
            return ds.batch(8).prefetch(cv.data.AUTOTUNE)
    """, breaks=[0, 1, 17, 37, 38])
    verify_resume_in_new_process("""
        import conveyor as cv
        def make():
            f = lambda x: (x, cv.random.uniform([], seed=11))
            return cv.data.Dataset.range(50).map(f, num_parallel_calls=2).prefetch(3)
    """, breaks=[0, 9, 50])


@needs_tf
def test_continuations_match_tensorflows_checkpoint():
    """Run k elements, save, restore into a new iterator, run the rest: the
    continuation equals tf.data's (tf.train.Checkpoint of its iterator)."""
    def tf_tail(k):
        ds = (tf.data.Dataset.range(50).map(lambda x: x * 2, num_parallel_calls=tf.data.AUTOTUNE)
              .batch(3).prefetch(2))
        it = iter(ds)
        for _ in range(k):
            next(it)
        ckpt = tf.train.Checkpoint(iterator=it)
        mgr = tf.train.CheckpointManager(ckpt, tf_dir, max_to_keep=1)
        path = mgr.save()
        it2 = iter(ds)
        tf.train.Checkpoint(iterator=it2).restore(path)
        return [plain(x.numpy()) for x in it2]

    import tempfile
    with tempfile.TemporaryDirectory() as tf_dir:
        for k in (0, 4, 16, 17):
            it = iter(chain(50, batch=3, prefetch=2)())
            run(it, k)
            it2 = iter(chain(50, batch=3, prefetch=2)())
            it2.restore(it.save())
            assert run(it2) == tf_tail(k), k


def test_a_finished_stage_and_a_corrupt_state():
    make = chain(30, batch=4, prefetch=2)
    it = iter(make())
    run(it)
    it2 = iter(make())
    it2.restore(it.save())
    assert run(it2) == []
    it = iter(make())
    run(it, 2)
    state = it.save()
    for bad in (state[:-3], state[:len(state) // 2]):
        with pytest.raises(errors.DataLossError):
            iter(make()).restore(bad)


def test_an_unsaveable_input_names_its_stage():
    ds = D.from_generator(lambda: iter(range(10)), output_signature=cv.TensorSpec([], cv.int64))
    for make in (lambda: ds.map(double, num_parallel_calls=2).prefetch(2),
                 lambda: ds.batch(2).prefetch(1),
                 lambda: ds.map(double, num_parallel_calls=2).batch(2)):
        it = iter(make())
        run(it, 1)
        with pytest.raises(errors.UnimplementedError, match="Generator|generator"):
            it.save()
        assert len(run(it)) >= 1  # the iterator goes on


def test_a_stage_above_an_unordered_map_quiesces_instead_of_marking():
    """A prefetch above a deterministic=False map takes no marks (each would
    quiesce the map): every save quiesces both, and nothing is lost or
    repeated, also over two saves and restores."""
    def make():
        return D.range(3000).map(double, num_parallel_calls=4, deterministic=False).prefetch(8)
    expected = sorted(map(repr, straight(make)))
    for k in (0, 5, 1000):
        it = iter(make())
        head = run(it, k)
        it.save()
        head += run(it, 7)
        it2 = iter(make())
        it2.restore(it.save())
        head += run(it2, 100)
        it3 = iter(make())
        it3.restore(it2.save())
        assert sorted(map(repr, head + run(it3))) == expected, k


def _shuffle_saves():
    try:
        iter(D.range(3).shuffle(2, seed=1)).save()
    except errors.UnimplementedError:
        return False
    return True


@pytest.mark.skipif(not _shuffle_saves(), reason="shuffle has no exact resume in this build")
def test_a_shuffle_buffer_below_a_prefetch_is_saved_once_per_save():
    """shuffle -> batch -> prefetch: the input's position (the buffer) is over
    the mark limit, so the prefetch never copies it per pull; each save holds
    the buffer once and the batches in flight, and restores exactly."""
    def make():
        return D.range(3000).shuffle(1000, seed=5).batch(8).prefetch(4)
    verify_resume(make, breaks=[0, 1, 2, 3, 50, 200, 374, 375])
    verify_two_restores(make, 3, 100)
    it = iter(make())
    run(it, 5)
    sizes = []
    for _ in range(3):
        run(it, 3)
        sizes.append(len(it.save()))
    assert max(sizes) < 2 * min(sizes)  # one buffer each, never more
    make = lambda: (D.range(3000).map(double, num_parallel_calls=AUTOTUNE).shuffle(100, seed=1)
                    .batch(8).prefetch(AUTOTUNE))
    verify_resume(make, breaks=[0, 1, 2, 3, 50, 374, 375])


def test_a_saved_error_with_a_damaged_message_is_corrupt_state():
    """A first save keeps an error in flight as code and message; a message
    that is not UTF-8 any more is DataLoss at restore, not a crash later."""
    from conveyor.data.checkpoint import _parse

    def f(x):
        if int(x) == 3:
            raise errors.InvalidArgumentError(None, None, "boom at 3")
        return x

    def make():
        return D.range(50).map(f, num_parallel_calls=2).prefetch(8)
    for _ in range(20):  # until the error is in flight at the save
        it = iter(make())
        run(it, 1)
        engine = _parse(it.save())[3]
        if b"boom at 3" in engine:
            break
    else:
        pytest.skip("the error was never in flight at the save")
    it2 = iter(make())
    it2._restore_engine(engine)
    assert run_errors(it2, 3) == run_errors(iter(make()), 4)[1:]
    bad = engine.replace(b"boom at 3", b"boom at \xff")
    with pytest.raises(errors.DataLossError, match="UTF-8"):
        iter(make())._restore_engine(bad)
