"""Exact resume of interleave / flat_map / parallel interleave (issue 13).

tf.data's checkpoint pattern (tests/checkpoint_helpers.py) with breaks at
every element, sequential and parallel (where workers read ahead of the
consumer and open future inner datasets early), errors at their positions,
deterministic=False, and TensorFlow's own checkpoint as the reference where
it is installed.
"""
import os
import time

import numpy as np
import pytest

import conveyor as cv
from conveyor import errors
from checkpoint_helpers import (plain, run, straight, verify_resume, verify_resume_in_new_process,
                                verify_two_restores)
from _record_files import crc32c, frame, tfrecord_bytes

pytestmark = pytest.mark.filterwarnings("ignore::conveyor.framework.tracing.TracingWarning")

D = cv.data.Dataset
AUTOTUNE = cv.data.AUTOTUNE
PARALLELISM = [None, 1, 2, AUTOTUNE]


def brief(npc):
    return lambda: D.range(6).interleave(lambda x: D.range(x * 10, x * 10 + x), cycle_length=3,
                                         block_length=2, num_parallel_calls=npc)


@pytest.mark.parametrize("npc", PARALLELISM)
def test_resumes_at_every_element(npc):
    expected = verify_resume(brief(npc))
    assert [e[0][2] for e in expected] == [10, 20, 21, 30, 31, 40, 41, 32, 42, 43, 50, 51, 52, 53, 54]  # tf.data's


@pytest.mark.parametrize("npc", PARALLELISM)
@pytest.mark.parametrize("cycle_length,block_length,lengths", [
    (2, 1, [3, 0, 5, 1, 0, 0, 7, 2]),   # empty inner datasets, slots refilled mid-cycle
    (4, 3, [2, 9, 0, 4, 6]),
    (8, 2, [3, 1, 4]),                  # cycle_length larger than the input
    (1, 2, [2, 0, 3]),
])
def test_resumes_with_empty_inner_datasets_and_short_inputs(npc, cycle_length, block_length,
                                                            lengths):
    if npc == 2 and cycle_length == 1:
        npc = 1  # num_parallel_calls may not exceed a fixed cycle_length

    def make():
        return D.range(len(lengths)).interleave(
            lambda i: D.range(100 * i, 100 * i + np.int64(lengths[int(i)])),
            cycle_length=cycle_length, block_length=block_length, num_parallel_calls=npc)
    expected = verify_resume(make)
    assert len(expected) == sum(lengths)


def test_flat_map_resumes_at_every_element():
    verify_resume(lambda: D.range(5).flat_map(lambda x: D.range(x)))
    verify_two_restores(lambda: D.range(6).flat_map(lambda x: D.range(x)), 2, 9)


@pytest.mark.parametrize("npc", PARALLELISM)
def test_two_restores_in_one_epoch(npc):
    for first, second in [(0, 7), (3, 4), (5, 14), (1, 15)]:
        verify_two_restores(brief(npc), first, second)


@pytest.mark.parametrize("npc", [None, 2])
def test_nested_interleaves_resume(npc):
    def make():
        return D.range(4).interleave(
            lambda x: D.range(x + 1).interleave(lambda y: D.range(y * 3, y * 3 + 2), cycle_length=2,
                                                num_parallel_calls=npc),
            cycle_length=2, block_length=3, num_parallel_calls=npc)
    verify_resume(make)


def test_saved_while_workers_read_far_ahead():
    """Workers fill their buffers and open futures while the consumer waits:
    none of that read-ahead is in the state."""
    def make():
        return D.range(40).interleave(lambda x: D.range(x * 1000, x * 1000 + x % 7), cycle_length=3,
                                      block_length=2, num_parallel_calls=3)
    expected = straight(make)
    for k in (0, 1, 5, 17, 60, len(expected) - 1):
        it = iter(make())
        head = run(it, k)
        time.sleep(0.05)  # let the workers fill every ring and open every future
        state = it.save()
        time.sleep(0.01)
        assert it.save() == state  # saving is not affected by the read-ahead going on
        it = iter(make())
        it.restore(state)
        assert head + run(it) == expected, k


def test_a_restored_iterator_saves_its_restored_position():
    for npc in (None, 2):
        it = iter(brief(npc)())
        run(it, 7)
        state = it.save()
        it2 = iter(brief(npc)())
        it2.restore(state)
        if npc is None:  # parallel: the same position, as a frame instead of a mark and count
            assert it2.save() == state  # before its first next()
        it3 = iter(brief(npc)())
        it3.restore(it2.save())
        assert run(it3) == straight(brief(npc))[7:]


def test_restore_in_a_new_process():
    verify_resume_in_new_process("""
        import conveyor as cv
        D = cv.data.Dataset
        def make():
            return D.range(6).interleave(lambda x: D.range(x * 10, x * 10 + x), cycle_length=3,
                                         block_length=2, num_parallel_calls=cv.data.AUTOTUNE)
    """, breaks=[0, 1, 4, 9, 14, 15])


def test_state_is_small():
    it = iter(brief(2)())
    run(it, 5)
    # Three open slots (an outer element and a range frame each) and the input.
    assert len(it.save()) < 600


# ---- errors at their positions


def run_with_errors(it, n=None):
    """run(), with each error as an ("error", name) entry in its place."""
    out = []
    while n is None or len(out) < n:
        try:
            out.append(plain(next(it)))
        except StopIteration:
            break
        except (ValueError, KeyError, errors.OpError) as e:
            out.append(("error", type(e).__name__))
    return out


def verify_resume_with_errors(make):
    expected = run_with_errors(iter(make()))
    assert any(e[0] == "error" for e in expected)
    for k in range(len(expected) + 1):
        it = iter(make())
        head = run_with_errors(it, k)
        state = it.save()
        it = iter(make())
        it.restore(state)
        assert head + run_with_errors(it) == expected, k
    return expected


@pytest.mark.parametrize("npc", PARALLELISM)
def test_map_func_errors_keep_their_positions(npc):
    def map_func(x):
        if x in (2, 5):
            raise KeyError(f"map_func failed on {x}")
        return D.range(x * 10, x * 10 + 3)

    expected = verify_resume_with_errors(
        lambda: D.range(7).interleave(map_func, cycle_length=2, block_length=2,
                                      num_parallel_calls=npc))
    assert expected.count(("error", "KeyError")) == 2


@pytest.mark.parametrize("npc", PARALLELISM)
def test_errors_inside_inner_datasets_keep_their_positions(npc):
    """Inner datasets whose own map_func fails mid-way and that go on after
    the error (a worker's run of results ends at it)."""
    def inner_map_func(y):
        if y % 4 == 1:
            raise KeyError(f"inner map_func failed on {y}")
        return D.range(y * 100, y * 100 + 2)

    def make():
        return D.range(5).interleave(
            lambda x: D.range(x * 4, x * 4 + 4).interleave(inner_map_func, cycle_length=1),
            cycle_length=2, block_length=3, num_parallel_calls=npc)
    expected = verify_resume_with_errors(make)
    assert expected.count(("error", "KeyError")) == 5 and len(expected) == 5 + 5 * 3 * 2


def _saves(make):
    """Skip while a kernel the test needs has no exact resume yet (other
    stages land theirs separately)."""
    it = iter(make())
    run_with_errors(it, 3)  # slots open
    try:
        it.save()
    except errors.UnimplementedError as e:
        pytest.skip(f"needs a stage without exact resume yet: {e}")


@pytest.mark.parametrize("npc", PARALLELISM)
def test_inner_errors_keep_their_positions(npc):
    def bad(v):
        if v % 10 == 1:
            raise ValueError("inner element failed")
        return v

    def make():
        return D.range(5).interleave(lambda x: D.range(x * 10, x * 10 + 3).map(bad), cycle_length=2,
                                     block_length=2, num_parallel_calls=npc)
    _saves(make)
    expected = verify_resume_with_errors(make)
    assert expected.count(("error", "ValueError")) == 5


@pytest.mark.parametrize("npc", [None, 2])
def test_input_errors_keep_their_positions(npc):
    def outer(x):
        if x == 3:
            raise ValueError("input element failed")
        return x

    def make():
        return D.range(6).map(outer).interleave(lambda x: D.range(x * 10, x * 10 + 2),
                                                cycle_length=2, num_parallel_calls=npc)
    _saves(make)
    verify_resume_with_errors(make)


# ---- TFRecord files (the workload interleave is for)


def write_files(folder, counts, corrupt=None):
    """One TFRecord file per count; in file `corrupt`, the third record's
    payload CRC is wrong (a DataLossError in its turn, after which that file
    ends)."""
    paths = []
    for i, n in enumerate(counts):
        records = [f"file{i}-record{k}".encode() * (k % 3 + 1) for k in range(n)]
        if i == corrupt:
            data = b"".join(frame(r) for r in records[:2])
            bad = bytearray(frame(records[2]))
            bad[-1] ^= 0xFF
            data += bytes(bad) + b"".join(frame(r) for r in records[3:])
        else:
            data = tfrecord_bytes(records)
        path = os.path.join(folder, f"f{i}.tfrecord")
        with open(path, "wb") as f:
            f.write(data)
        paths.append(path)
    return paths


@pytest.mark.parametrize("npc", PARALLELISM)
def test_tfrecord_interleave_resumes_at_every_element(npc, tmp_path):
    paths = write_files(str(tmp_path), [5, 0, 7, 3, 6])

    def make():
        return D.from_tensor_slices(paths).interleave(cv.data.TFRecordDataset, cycle_length=2,
                                                      block_length=2, num_parallel_calls=npc)
    _saves(make)
    assert len(verify_resume(make)) == 21
    verify_two_restores(make, 4, 13)


@pytest.mark.parametrize("npc", [None, 2])
def test_tfrecord_corruption_keeps_its_position(npc, tmp_path):
    paths = write_files(str(tmp_path), [4, 6, 5], corrupt=1)

    def make():
        return D.from_tensor_slices(paths).interleave(cv.data.TFRecordDataset, cycle_length=2,
                                                      num_parallel_calls=npc)
    _saves(make)
    assert verify_resume_with_errors(make).count(("error", "DataLossError")) == 1


def test_tfrecord_interleave_restores_in_a_new_process(tmp_path):
    paths = write_files(str(tmp_path), [6, 2, 9, 4])
    it = iter(D.from_tensor_slices(paths).interleave(cv.data.TFRecordDataset, cycle_length=2))
    run(it, 2)
    try:
        it.save()
    except errors.UnimplementedError as e:
        pytest.skip(f"needs a stage without exact resume yet: {e}")
    verify_resume_in_new_process(f"""
        import conveyor as cv
        def make():
            return cv.data.Dataset.from_tensor_slices({paths!r}).interleave(
                cv.data.TFRecordDataset, cycle_length=2, block_length=3,
                num_parallel_calls=cv.data.AUTOTUNE)
    """, breaks=[0, 3, 10, 20, 21])


# ---- deterministic=False: exact for what was handed out


@pytest.mark.parametrize("k", [0, 1, 3, 8, 20, 29])
def test_non_deterministic_hands_out_each_element_once(k):
    def make():
        return D.range(8).interleave(lambda x: D.range(x * 10, x * 10 + x % 5 + 2), cycle_length=3,
                                     block_length=2, num_parallel_calls=3, deterministic=False)
    everything = sorted(e[0][2] for e in straight(make))
    it = iter(make())
    head = [e[0][2] for e in run(it, k)]
    state = it.save()
    it = iter(make())
    it.restore(state)
    tail = [e[0][2] for e in run(it)]
    assert sorted(head + tail) == everything
    for part in (head, tail):  # each inner dataset keeps its own order
        for inner in range(8):
            mine = [v for v in part if v // 10 == inner]
            assert mine == sorted(mine)


# ---- what cannot be saved, and damaged states


@pytest.mark.parametrize("npc", [None, 2])
def test_an_inner_dataset_without_resume_raises_on_save_and_keeps_running(npc):
    def make():
        return D.range(3).interleave(
            lambda x: D.from_generator(lambda: iter([1, 2, 3]), output_types=cv.int64),
            cycle_length=2, num_parallel_calls=npc)
    it = iter(make())
    got = [int(next(it)) for _ in range(2)]
    with pytest.raises((errors.UnimplementedError, errors.FailedPreconditionError),
                       match="(?i)generator"):
        it.save()
    got += [int(v) for v in it]
    assert sorted(got) == [1, 1, 1, 2, 2, 2, 3, 3, 3]


def test_an_input_without_resume_raises_on_save():
    def make():
        return D.from_generator(lambda: iter([1, 2, 3]), output_types=cv.int64).interleave(
            lambda x: D.range(x), cycle_length=2, num_parallel_calls=2)
    it = iter(make())
    next(it)
    with pytest.raises((errors.UnimplementedError, errors.FailedPreconditionError),
                       match="(?i)generator"):
        it.save()
    assert sorted(int(v) for v in it) == [0, 0, 1, 1, 2]


def reseal(frames, head):
    """frames with the interleave frame's checksum (at `head`) recomputed."""
    n = int.from_bytes(frames[head + 8:head + 16], "little")
    body = frames[head + 16:head + 16 + n]
    return frames[:head] + crc32c(body).to_bytes(8, "little") + frames[head + 8:]


@pytest.mark.parametrize("npc", [None, 2])
def test_a_corrupt_interleave_frame_is_data_loss(npc):
    it = iter(brief(npc)())
    run(it, 4)
    frames = it._save_engine()
    assert frames[1:11] == b"Interleave"
    head = 1 + 10 + 8  # the frame's name and length
    assert reseal(frames, head) == frames
    # Any damage, an outer element's value included, breaks the checksum.
    for offset in range(head, len(frames), 7):
        bad = bytearray(frames)
        bad[offset] ^= 0x10
        with pytest.raises(errors.DataLossError, match="corrupt iterator state"):
            iter(brief(npc)())._restore_engine(bytes(bad))
    # Damage that gets past it: each field is still checked.
    fields = head + 16
    for what, offset in {"cycle position": 8, "block position": 16, "end of input": 24,
                         "slot kind": 32}.items():
        bad = bytearray(frames)
        bad[fields + offset:fields + offset + 8] = (77).to_bytes(8, "little")
        it2 = iter(brief(npc)())
        with pytest.raises(errors.DataLossError, match=what):
            it2._restore_engine(reseal(bytes(bad), head))
        assert len(run(it2)) == 15  # usable, from the start
    bad = bytearray(frames)
    bad[fields:fields + 8] = (4).to_bytes(8, "little")  # another machine's AUTOTUNE cycle_length
    with pytest.raises(errors.FailedPreconditionError, match="cycle_length 4, this one has 3"):
        iter(brief(npc)())._restore_engine(reseal(bytes(bad), head))
    for cut in (len(frames) - 1, head + 20, 5):
        with pytest.raises(errors.DataLossError, match="corrupt iterator state"):
            iter(brief(npc)())._restore_engine(frames[:cut])


def test_map_func_failing_at_restore_raises_its_error():
    broken = []

    def map_func(x):
        if broken:
            raise FileNotFoundError(f"input {x} is gone")
        return D.range(x)

    def make():
        return D.range(5).interleave(map_func, cycle_length=2)
    it = iter(make())
    run(it, 3)
    state = it.save()
    broken.append(True)
    with pytest.raises(FileNotFoundError, match="is gone"):
        iter(make()).restore(state)


def test_a_state_from_another_map_func_fails_in_the_inner_frame():
    it = iter(D.range(4).interleave(lambda x: D.range(x), cycle_length=2))
    run(it, 2)
    frames = it._save_engine()
    other = iter(D.range(4).interleave(
        lambda x: D.range(x).interleave(lambda y: D.range(y), cycle_length=1), cycle_length=2))
    with pytest.raises(errors.FailedPreconditionError, match="not of this pipeline"):
        other._restore_engine(frames)


# ---- TensorFlow's checkpoint as the reference


@pytest.mark.parametrize("npc", [None, 2])
def test_continuations_match_tensorflow_checkpoints(npc, tmp_path):
    tf = pytest.importorskip("tensorflow")

    def tf_make():
        return tf.data.Dataset.range(6).interleave(
            lambda x: tf.data.Dataset.range(x * 10, x * 10 + x), cycle_length=3, block_length=2,
            num_parallel_calls=npc)

    for k in (0, 4, 9, 15):
        it = iter(tf_make())
        head = [int(next(it)) for _ in range(k)]
        path = tf.train.Checkpoint(iterator=it).save(str(tmp_path / f"tf{k}"))
        it = iter(tf_make())
        tf.train.Checkpoint(iterator=it).restore(path)
        tf_tail = [int(v) for v in it]

        ours = iter(brief(npc)())
        assert [e[0][2] for e in run(ours, k)] == head
        state = ours.save()
        ours = iter(brief(npc)())
        ours.restore(state)
        assert [e[0][2] for e in run(ours)] == tf_tail, k
