"""Interleave prepares each inner iterator when it opens a slot or a future
(cv_iterator_prepare): a file reader opens its file then, so the read-ahead
of every file of the cycle runs at once. What comes out (order, errors,
saved states) is the same as without it."""
import os
import time

import pytest

import conveyor as cv
from conveyor import errors
from checkpoint_helpers import plain
from _record_files import frame, tfrecord_bytes

D = cv.data.Dataset


def write_files(folder, n, records=1000):
    """n TFRecord files of `records` small records each: more than a slot
    reads ahead, so no file ends (and closes) while the test counts."""
    paths = []
    for i in range(n):
        path = os.path.join(folder, f"f{i:03d}.tfrecord")
        with open(path, "wb") as f:
            f.write(tfrecord_bytes([f"file{i}-record{k}".encode() for k in range(records)]))
        paths.append(path)
    return paths


def open_files_under(folder):
    """How many of this process's file descriptors point into folder."""
    prefix = os.path.realpath(folder) + os.sep
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith(prefix):
                count += 1
        except OSError:  # closed meanwhile
            pass
    return count


def wait_for_open_files(folder, at_least, timeout=60.0):
    """The count once it reaches at_least, or the last one seen at the timeout."""
    deadline = time.monotonic() + timeout
    count = open_files_under(folder)
    while count < at_least and time.monotonic() < deadline:
        time.sleep(0.01)
        count = open_files_under(folder)
    return count


@pytest.mark.parametrize("cycle_length", [4, 8, 16, 32])
def test_every_file_of_the_cycle_opens_after_the_first_element(cycle_length, tmp_path):
    folder = str(tmp_path)
    paths = write_files(folder, 2 * cycle_length + 8)
    ds = D.from_tensor_slices(paths).interleave(cv.data.TFRecordDataset, cycle_length=cycle_length,
                                                num_parallel_calls=2)
    it = iter(ds)
    assert plain(next(it))[0][2] == b"file0-record0"
    count = wait_for_open_files(folder, cycle_length)
    # The cycle's files, plus at most the futures (files opened ahead).
    assert cycle_length <= count <= cycle_length + min(2 * cycle_length, 16)


def test_files_close_with_the_iterator(tmp_path):
    folder = str(tmp_path)
    paths = write_files(folder, 12)
    it = iter(D.from_tensor_slices(paths).interleave(cv.data.TFRecordDataset, cycle_length=8,
                                                     num_parallel_calls=2))
    next(it)
    assert wait_for_open_files(folder, 8) >= 8
    del it
    assert open_files_under(folder) == 0


def test_sequential_interleave_opens_a_file_at_a_time(tmp_path):
    folder = str(tmp_path)
    paths = write_files(folder, 8)
    it = iter(D.from_tensor_slices(paths).interleave(cv.data.TFRecordDataset, cycle_length=4))
    next(it)
    assert open_files_under(folder) == 1  # the sequential algorithm opens a slot when it comes to it


def run_with_errors(it):
    out = []
    while True:
        try:
            out.append(plain(next(it)))
        except StopIteration:
            return out
        except errors.OpError as e:
            out.append(("error", type(e).__name__))


def faulty_files(folder):
    """Good files, a missing one, a directory, a corrupt one (a DataLossError
    at its third record) and an empty one."""
    paths = write_files(folder, 6, records=5)
    bad = bytearray(frame(b"third"))
    bad[-1] ^= 0xFF
    with open(os.path.join(folder, "corrupt.tfrecord"), "wb") as f:
        f.write(frame(b"first") + frame(b"second") + bytes(bad) + frame(b"fourth"))
    open(os.path.join(folder, "empty.tfrecord"), "wb").close()
    os.mkdir(os.path.join(folder, "adir"))
    return (paths[:2] + [os.path.join(folder, "missing.tfrecord")] + paths[2:3] +
            [os.path.join(folder, "adir"), os.path.join(folder, "corrupt.tfrecord")] + paths[3:5] +
            [os.path.join(folder, "empty.tfrecord")] + paths[5:])


@pytest.mark.parametrize("cycle_length,block_length", [(2, 1), (4, 2), (16, 3)])
def test_errors_keep_their_positions_and_resume(cycle_length, block_length, tmp_path):
    paths = faulty_files(str(tmp_path))

    def make(npc):
        return D.from_tensor_slices(paths).interleave(cv.data.TFRecordDataset,
                                                      cycle_length=cycle_length,
                                                      block_length=block_length,
                                                      num_parallel_calls=npc)
    expected = run_with_errors(iter(make(None)))
    kinds = sorted(e[1] for e in expected if e[0] == "error")
    assert len(kinds) == 3 and "NotFoundError" in kinds and "DataLossError" in kinds
    assert run_with_errors(iter(make(2))) == expected
    for k in range(len(expected) + 1):  # a save at every position, restored
        it = iter(make(2))
        head = []
        while len(head) < k:
            try:
                head.append(plain(next(it)))
            except errors.OpError as e:
                head.append(("error", type(e).__name__))
        state = it.save()
        it = iter(make(2))
        it.restore(state)
        assert head + run_with_errors(it) == expected, k
