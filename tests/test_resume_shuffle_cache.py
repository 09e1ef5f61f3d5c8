"""Exact resume of shuffle, the fused shuffle_batch and cache (memory and file):
tf.data's checkpoint test pattern (run k, save, rebuild, restore, run the rest ==
one straight run), unseeded shuffles (the saved seeds go on), epochs under
repeat(), a fresh process, and TensorFlow's own checkpoints of the same seeded
pipelines. Tests whose pipeline has another stage that cannot be saved yet skip,
naming it."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import conveyor as cv
from conveyor import errors
from checkpoint_helpers import (ROOT, plain, run, straight, verify_resume,
                                verify_resume_in_new_process, verify_two_restores)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
try:
    import tensorflow as tf
except ImportError:  # pragma: no cover - the tf extra is optional
    tf = None

D = cv.data.Dataset
needs_tf = pytest.mark.skipif(tf is None, reason="tensorflow is not installed")
pytestmark = [pytest.mark.filterwarnings("ignore::conveyor.framework.tracing.TracingWarning"),
              pytest.mark.filterwarnings("ignore::conveyor.data.experimental.CacheWarning")]

OURS = ("Shuffle", "ShuffleBatch", "Cache", "Range")


def savable(make):
    """Skip when a stage of make() other than these tests' cannot be saved yet."""
    it = iter(make())
    try:
        it.save()
    except errors.UnimplementedError as e:
        if not any(f"iterator of {name} " in str(e) for name in OURS):
            pytest.skip(f"another stage has no resume yet: {e}")
        raise
    finally:
        it.close()


def options(fusion=True, parallel_batch=False):
    o = cv.data.Options()
    o.experimental_optimization.shuffle_and_batch_fusion = fusion
    o.experimental_optimization.parallel_batch = parallel_batch
    return o


def kernel(ds):
    return ds._engine(ds._context()).kernel


def continues(make, breaks):
    """For pipelines whose straight runs differ (unseeded): the restored iterator
    of a new pipeline goes on exactly as the saved one does."""
    for k in breaks:
        it = iter(make())
        run(it, k)
        state = it.save()
        rest = run(it)
        again = iter(make())
        again.restore(state)
        assert run(again) == rest, f"break at {k}"


# -- shuffle -------------------------------------------------------------------------


@pytest.mark.parametrize("buffer_size", [1, 7, 30])
@pytest.mark.parametrize("reshuffle", [True, False])
def test_seeded_shuffle_resumes_at_every_element(buffer_size, reshuffle):
    verify_resume(lambda: D.range(20).shuffle(buffer_size, seed=3,
                                              reshuffle_each_iteration=reshuffle))


@pytest.mark.parametrize("buffer_size", [1, 7, 30])
@pytest.mark.parametrize("reshuffle", [True, False])
def test_shuffle_under_repeat_resumes_across_epochs(buffer_size, reshuffle):
    def make():
        return D.range(20).shuffle(buffer_size, seed=3, reshuffle_each_iteration=reshuffle).repeat(3)
    savable(make)
    expected = verify_resume(make)
    epochs = [expected[i:i + 20] for i in (0, 20, 40)]
    assert (epochs[0] != epochs[1]) == (reshuffle and buffer_size > 1)
    verify_two_restores(make, 13, 47)


@pytest.mark.parametrize("seed", [None, 3])
@pytest.mark.parametrize("buffer_size", [1, 7, 30])
@pytest.mark.parametrize("reshuffle", [True, False])
def test_later_iterators_draw_the_seeds_a_straight_run_draws(seed, buffer_size, reshuffle):
    # Epochs as iterators of one dataset (repeat() makes them the same way): the
    # restored dataset's seed generator goes on as the saved one's.
    for k in (0, 5, 20):
        ds = D.range(20).shuffle(buffer_size, seed=seed, reshuffle_each_iteration=reshuffle)
        first = run(iter(ds))
        it = iter(ds)
        run(it, k)
        state = it.save()
        rest, later = run(it), [run(iter(ds)) for _ in range(2)]
        again = D.range(20).shuffle(buffer_size, seed=seed, reshuffle_each_iteration=reshuffle)
        restored = iter(again)
        restored.restore(state)
        assert run(restored) == rest
        assert [run(iter(again)) for _ in range(2)] == later
        assert (later[0] != first) == (reshuffle and buffer_size > 1)


@pytest.mark.parametrize("buffer_size", [1, 7, 30])
@pytest.mark.parametrize("reshuffle", [True, False])
def test_unseeded_shuffle_goes_on_with_the_saved_seeds(buffer_size, reshuffle):
    def make():
        return D.range(20).shuffle(buffer_size, reshuffle_each_iteration=reshuffle).repeat(3)
    savable(make)
    continues(make, range(0, 61, 3))


def test_shuffle_over_rows_keeps_values_dtypes_and_shapes():
    x = np.arange(60, dtype=np.float32).reshape(20, 3)

    def make():
        return D.from_tensor_slices((x, np.arange(20, dtype=np.int16))).shuffle(6, seed=1)
    savable(make)
    verify_resume(make)


def test_a_finished_shuffle_restores_to_the_end_and_a_changed_one_raises():
    it = iter(D.range(5).shuffle(3, seed=2))
    run(it)
    again = iter(D.range(5).shuffle(3, seed=2))
    again.restore(it.save())
    assert run(again) == []
    it = iter(D.range(5).shuffle(3, seed=2))
    run(it, 2)
    state = it.save()
    for changed in (D.range(5).shuffle(4, seed=2), D.range(5).shuffle(3, seed=5)):
        with pytest.raises(errors.FailedPreconditionError, match="different pipeline"):
            iter(changed).restore(state)


def test_damaged_engine_frames_raise_conveyor_errors():
    # Past the CRC (through _restore_engine): a damaged byte in a frame's kernel
    # name, count or element is DataLoss or FailedPrecondition, never a crash or
    # a Python error of another kind; the iterator then runs from the start.
    ds = D.range(12).shuffle(5, seed=1, reshuffle_each_iteration=False)
    it = iter(ds)
    run(it, 3)
    state = it._save_engine()
    expected = straight(lambda: ds)
    for at in range(0, len(state), 3):
        for byte in (0x00, 0x7f, 0xbf, 0xff):
            damaged = state[:at] + bytes([byte]) + state[at + 1:]
            again = iter(ds)
            try:
                again._restore_engine(damaged)
            except (errors.DataLossError, errors.FailedPreconditionError):
                assert run(again) == expected
            else:
                try:
                    run(again)
                except errors.OpError:
                    pass


def test_state_size_is_the_buffer_plus_a_little():
    sizes = {}
    for buffer_size in (1000, 10000):
        it = iter(D.range(2 * buffer_size).shuffle(buffer_size, seed=1))
        run(it, 1)
        sizes[buffer_size] = len(it.save())
    # A scalar int64 costs ~40 bytes by value (dtype, rank, length, 8 bytes).
    assert sizes[1000] < 48_000 and sizes[10000] < 480_000, sizes
    it = iter(D.range(100).shuffle(10, seed=1))
    assert len(it.save()) < 600  # nothing buffered yet: seeds, generator, input


def test_shuffle_restores_in_a_new_process():
    verify_resume_in_new_process("""
        import conveyor as cv
        def make():
            return cv.data.Dataset.range(30).shuffle(8, seed=4)
    """, breaks=[0, 1, 9, 29, 30])


_UNSEEDED_CHILD = """
import json, sys
sys.path.insert(0, {root!r}); sys.path.insert(0, {tests!r})
from checkpoint_helpers import run
{code}
mode, k, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
it = iter(make())
if mode == "save":
    run(it, k)
    open(path, "wb").write(it.save())
else:
    it.restore(open(path, "rb").read())
print(json.dumps(run(it)))
"""


@pytest.mark.parametrize("epochs", [1, 3])
def test_unseeded_reshuffling_shuffle_goes_on_in_a_new_process(tmp_path, epochs):
    code = textwrap.dedent(f"""
        import conveyor as cv
        def make():
            ds = cv.data.Dataset.range(12).shuffle(5)
            return ds.repeat({epochs}) if {epochs} > 1 else ds
    """)
    if epochs > 1:
        savable(lambda: D.range(12).shuffle(5).repeat(epochs))
    script = _UNSEEDED_CHILD.format(root=ROOT, tests=os.path.join(ROOT, "tests"), code=code)
    for k in (0, 7, 12, 30)[:4 if epochs > 1 else 3]:
        path = str(tmp_path / "state")
        outs = [json.loads(subprocess.run([sys.executable, "-c", script, mode, str(k), path],
                                          capture_output=True, text=True, check=True,
                                          timeout=120).stdout)
                for mode in ("save", "restore")]
        assert outs[0] == outs[1] and len(outs[0]) == 12 * epochs - k


# -- shuffle + batch, fused and not ----------------------------------------------------


@pytest.mark.parametrize("fusion", [True, False])
@pytest.mark.parametrize("buffer_size", [1, 7, 40])
@pytest.mark.parametrize("drop", [False, True])
@pytest.mark.parametrize("reshuffle", [True, False])
def test_shuffle_batch_resumes_fused_and_not(fusion, buffer_size, drop, reshuffle):
    def make():
        return D.range(23).shuffle(buffer_size, seed=3, reshuffle_each_iteration=reshuffle).batch(
            4, drop_remainder=drop).repeat(2).with_options(options(fusion))
    assert kernel(D.range(23).shuffle(buffer_size, seed=3).batch(4).with_options(
        options(fusion))) == ("ShuffleBatch" if fusion else "Batch")
    savable(make)
    verify_resume(make)
    verify_two_restores(make, 3, 8)


@pytest.mark.parametrize("buffer_size", [1, 7, 40])
@pytest.mark.parametrize("drop", [False, True])
def test_fused_shuffle_batch_resumes_at_every_batch(buffer_size, drop):
    def make():
        return D.range(23).shuffle(buffer_size, seed=3).batch(4, drop_remainder=drop)
    assert kernel(make()) == "ShuffleBatch"
    verify_resume(make)
    verify_two_restores(make, 1, 4)


def test_unseeded_fused_shuffle_batch_goes_on_with_the_saved_seeds():
    continues(lambda: D.range(30).shuffle(9).batch(4), range(0, 9))
    make = lambda: D.range(30).shuffle(9).batch(4).repeat(2)  # noqa: E731
    savable(make)
    continues(make, range(0, 17, 2))


def test_fused_shuffle_batch_restores_in_a_new_process():
    verify_resume_in_new_process("""
        import conveyor as cv
        def make():
            return cv.data.Dataset.range(30).shuffle(8, seed=4).batch(4)
    """, breaks=[0, 1, 4, 8])


def test_fused_shuffle_batch_on_a_worker_cannot_be_saved():
    ds = D.range(30).shuffle(8, seed=4).batch(4, num_parallel_calls=2)
    assert kernel(ds) == "ShuffleBatch"
    it = iter(ds)
    next(it)
    with pytest.raises(errors.UnimplementedError, match="ShuffleBatch.*shuffle_and_batch_fusion"):
        it.save()
    it.close()


def _fails_at(n, bad):
    ragged = D.range(n).map(lambda i: np.full(3 if i == bad else 2, float(i)))
    return ragged.map(lambda v: cv.reshape(v, [2]))


def _run_with_errors(it):
    out = []
    while True:
        try:
            out.append(plain(next(it)))
        except StopIteration:
            return out
        except errors.OpError as e:
            out.append(type(e).__name__)


@pytest.mark.parametrize("fusion", [True, False])
def test_an_input_error_stays_at_its_batch_after_restore(fusion):
    def make():
        return _fails_at(30, 9).shuffle(6, seed=8).batch(4).with_options(options(fusion))
    savable(make)
    expected = _run_with_errors(iter(make()))
    assert "InvalidArgumentError" in expected
    for k in range(len(expected) + 1):
        it = iter(make())
        head = [_run_with_errors_one(it) for _ in range(k)]
        state = it.save()
        again = iter(make())
        again.restore(state)
        assert head + _run_with_errors(again) == expected, k


def _run_with_errors_one(it):
    try:
        return plain(next(it))
    except errors.OpError as e:
        return type(e).__name__


def _mixed_rows(i):
    i = int(i)
    if i % 11 == 4:
        return np.full(3, i, np.float64)  # another shape: kept whole ("spilled")
    return np.full(2, i, np.float64)


def _engine_fused(buffer_size, batch_size):
    from conveyor import _engine
    ds = D.range(40).map(_mixed_rows)
    e = ds._engine(ds._context())
    return _engine.shuffle_batch(_engine.shuffle(e, buffer_size, 3, 0, True), batch_size, False, 0,
                                 True)


def _engine_run(it, n=None):
    out = []
    while n is None or len(out) < n:
        try:
            out.append(plain(next(it)))
        except StopIteration:
            break
        except errors.OpError as e:
            out.append(type(e).__name__)
    return out


@pytest.mark.parametrize("buffer_size,batch_size", [(1, 3), (5, 3), (50, 6)])
def test_fused_rows_of_another_shape_resume(buffer_size, batch_size):
    # Through the engine: the Python layer fuses only elements whose spec is
    # known, and a kernel built on it keeps the others whole.
    fused = _engine_fused(buffer_size, batch_size)
    assert fused.kernel == "ShuffleBatch"
    kind = (0, None)
    it = fused.make_iterator(lambda: kind)
    try:
        it._save_engine()
    except errors.UnimplementedError as e:
        pytest.skip(f"another stage has no resume yet: {e}")
    it.close()
    expected = _engine_run(_engine_fused(buffer_size, batch_size).make_iterator(lambda: kind))
    assert "InvalidArgumentError" in expected
    for k in range(len(expected) + 1):
        it = _engine_fused(buffer_size, batch_size).make_iterator(lambda: kind)
        head = _engine_run(it, k)
        state = it._save_engine()
        again = _engine_fused(buffer_size, batch_size).make_iterator(lambda: kind)
        again._restore_engine(state)
        assert head + _engine_run(again) == expected, k


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("budget", [64, 100])
def test_an_element_held_back_by_the_ram_budget_is_in_the_state(batched, budget):
    # Over the budget, shuffle keeps the element it pulled aside (pending). The
    # engine's frames go into a pipeline with room (options are in the
    # fingerprint, so through _save_engine/_restore_engine): it continues as a
    # straight run with room does.
    def make(ram_budget):
        o = cv.data.Options()
        o.autotune.ram_budget = ram_budget
        ds = D.range(40).shuffle(20, seed=1)
        return (ds.batch(3) if batched else ds).with_options(o)
    assert kernel(make(budget)) == ("ShuffleBatch" if batched else "Shuffle")
    it = iter(make(budget))
    with pytest.raises(errors.ResourceExhaustedError, match="Shuffle"):
        next(it)
    state = it._save_engine()
    roomy = iter(make(1 << 30))
    roomy._restore_engine(state)
    assert run(roomy) == straight(lambda: make(1 << 30))


# -- cache -----------------------------------------------------------------------------


def test_memory_cache_first_pass_and_replay_resume_everywhere():
    # A new dataset per make(): each restore finds no recording (as a new process).
    verify_resume(lambda: D.range(10).cache())
    make = lambda: D.range(10).shuffle(4, seed=5).cache().repeat(3)  # noqa: E731
    savable(make)
    expected = verify_resume(make)
    assert expected[:10] == expected[10:20] == expected[20:]  # every epoch replays the first
    verify_two_restores(make, 4, 25)


def test_memory_cache_replay_restored_where_the_recording_is():
    ds = D.range(10).shuffle(4, seed=5).cache().repeat(3)
    savable(lambda: ds)
    expected = straight(lambda: ds)  # fills the cache: later iterators replay
    verify_resume(lambda: ds, expected=expected)


def test_two_restores_into_one_memory_cache_before_it_fills():
    # The second restore finds the refill the first one left in the store.
    def make():
        return D.range(10).shuffle(4, seed=5).cache().repeat(3)
    savable(make)
    expected = straight(make)
    ds = make()
    it = iter(ds)
    got = run(it, 4)
    state = it.save()
    del it
    for stop in (6, 8):
        it = iter(ds)
        it.restore(state)
        got += run(it, stop - len(got))
        state = it.save()
        del it
    it = iter(ds)
    it.restore(state)
    assert got + run(it) == expected


@pytest.mark.parametrize("filename", [False, True])
def test_the_epoch_after_a_restored_pass_fills_the_cache_with_that_pass(tmp_path, filename):
    # Epochs as iterators of one dataset. Unseeded and reshuffled below the
    # cache: every epoch must replay the first pass, restored or not.
    path = str(tmp_path / "c")
    for k in (0, 1, 6, 11, 12):
        if os.path.exists(path + ".cvcache"):
            os.remove(path + ".cvcache")
        ds = D.range(12).shuffle(12).cache(path if filename else "")
        it = iter(ds)
        head = run(it, k)
        state = it.save()
        first = head + run(it)
        assert run(iter(ds)) == first  # the cache replays the first pass
        if os.path.exists(path + ".cvcache"):
            os.remove(path + ".cvcache")  # as in a new process: no committed file
        again = D.range(12).shuffle(12).cache(path if filename else "")
        restored = iter(again)
        restored.restore(state)
        assert head + run(restored) == first
        assert run(iter(again)) == first and run(iter(again)) == first


def test_restored_cache_over_a_reshuffling_shuffle_fills_with_the_saved_pass():
    # The restored pass records nothing; the next epoch computes the saved pass
    # again (the shuffle's seeds included) and records it: later epochs replay
    # what a straight run replays.
    def make():
        return D.range(12).shuffle(12).cache().repeat(3)
    savable(make)
    continues(make, [0, 1, 6, 11, 12, 13, 20, 35, 36])


@pytest.mark.parametrize("break_at", [0, 1, 6, 9, 10, 11, 17, 30])
def test_file_cache_first_pass_resumes(tmp_path, break_at):
    path = str(tmp_path / "c")

    def make():
        return D.range(10).shuffle(4, seed=5).cache(path).repeat(3)

    def fresh():  # no committed file: the next pass writes it
        if os.path.exists(path + ".cvcache"):
            os.remove(path + ".cvcache")
        return make()
    savable(make)
    expected = straight(fresh)
    it = iter(fresh())
    head = run(it, break_at)
    state = it.save()
    del it  # its temporary file goes with it, as with a process that stopped
    again = iter(make())
    again.restore(state)
    assert head + run(again) == expected
    assert os.path.exists(path + ".cvcache")  # a later epoch wrote it
    assert straight(make) == expected


def test_file_cache_replay_resumes_everywhere_and_needs_its_file(tmp_path):
    path = str(tmp_path / "c")

    def make():
        return D.range(10).shuffle(4, seed=5).cache(path).repeat(2)
    savable(make)
    expected = straight(make)  # writes the file; every run below reads it
    verify_resume(make, expected=expected)
    it = iter(make())
    run(it, 3)
    state = it.save()
    it.close()
    os.remove(path + ".cvcache")
    with pytest.raises(errors.FailedPreconditionError, match="cache file"):
        iter(make()).restore(state)


def test_memory_cache_restores_in_a_new_process():
    verify_resume_in_new_process("""
        import conveyor as cv
        def make():
            return cv.data.Dataset.range(10).shuffle(4, seed=5).cache()
    """, breaks=[0, 4, 10])
    savable(lambda: D.range(10).shuffle(4, seed=5).cache().repeat(3))
    verify_resume_in_new_process("""
        import conveyor as cv
        def make():
            return cv.data.Dataset.range(10).shuffle(4, seed=5).cache().repeat(3)
    """, breaks=[0, 4, 10, 15, 30])


def test_file_cache_restores_in_a_new_process(tmp_path):
    verify_resume_in_new_process(f"""
        import conveyor as cv
        def make():
            return cv.data.Dataset.range(10).shuffle(4, seed=5).cache({str(tmp_path / "g")!r})
    """, breaks=[0, 4, 10])
    savable(lambda: D.range(10).shuffle(4, seed=5).cache(str(tmp_path / "f")).repeat(3))
    verify_resume_in_new_process(f"""
        import conveyor as cv
        def make():
            return cv.data.Dataset.range(10).shuffle(4, seed=5).cache({str(tmp_path / "f")!r}).repeat(3)
    """, breaks=[0, 4, 10, 15, 30])


# -- TensorFlow's checkpoints of the same seeded pipelines -----------------------------


def _tf_resume(make, k, folder):
    it = iter(make())
    head = [plain(v.numpy()) for v in (next(it) for _ in range(k))]
    path = tf.train.Checkpoint(iterator=it).save(os.path.join(folder, "ckpt"))
    again = iter(make())
    tf.train.Checkpoint(iterator=again).restore(path)
    return head + [plain(v.numpy()) for v in again]


def _cv_resume(make, k):
    it = iter(make())
    head = run(it, k)
    again = iter(make())
    again.restore(it.save())
    return head + run(again)


@needs_tf
@pytest.mark.parametrize("reshuffle", [True, False])
def test_shuffle_under_repeat_continues_as_tensorflow_does(tmp_path, reshuffle):
    def make(lib):
        return lib.data.Dataset.range(15).shuffle(6, seed=7,
                                                 reshuffle_each_iteration=reshuffle).repeat(2)
    savable(lambda: make(cv))
    for k in (0, 5, 15, 22):
        folder = str(tmp_path / f"k{k}")
        assert _cv_resume(lambda: make(cv), k) == _tf_resume(lambda: make(tf), k, folder)


@needs_tf
@pytest.mark.parametrize("buffer_size", [1, 6, 40])
def test_shuffle_continues_as_tensorflow_does(tmp_path, buffer_size):
    def make(lib):
        return lib.data.Dataset.range(25).shuffle(buffer_size, seed=7)
    for k in (0, 1, 12, 25):
        folder = str(tmp_path / f"k{k}")
        assert _cv_resume(lambda: make(cv), k) == _tf_resume(lambda: make(tf), k, folder)


@needs_tf
def test_shuffle_batch_continues_as_tensorflow_does(tmp_path):
    def make(lib):
        return lib.data.Dataset.range(30).shuffle(9, seed=2).batch(4)
    for k in (0, 3, 7):
        folder = str(tmp_path / f"k{k}")
        assert _cv_resume(lambda: make(cv), k) == _tf_resume(lambda: make(tf), k, folder)
