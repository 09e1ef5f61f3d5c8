"""Cancellation never waits on user code or a blocked read (docs/design.md,
"Threads, the GIL, and lifetimes"): Ctrl-C, dropping an iterator and
interpreter exit return within a second whatever is in flight."""
import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import conveyor as cv
from conveyor.data import Dataset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _spawn(code):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-u", "-c", textwrap.dedent(code)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


PIPELINES = {
    # A parallel map whose workers are inside a 5 s Python call.
    "slow_map": ("cv.data.Dataset.range(5).map(lambda x: cv.numpy_function("
                 "lambda v: (time.sleep(5), v)[1], [x], cv.int64), num_parallel_calls=2)"),
    # A generator that sleeps 10 s, behind a prefetch (so on a pool thread).
    "sleeping_generator": ("cv.data.Dataset.from_generator(lambda: (time.sleep(10) or i for i in "
                           "range(3)), output_signature=cv.TensorSpec([], cv.int64)).prefetch(2)"),
    # A record file that is a FIFO nobody writes: the read waits forever.
    "fifo": "cv.data.TFRecordDataset(fifo)",
    "fifo_prefetched": "cv.data.TFRecordDataset(fifo).prefetch(2)",
    "fifo_read_file": ("cv.data.Dataset.from_tensors(fifo).map(cv.io.read_file, "
                       "num_parallel_calls=2)"),
}


@pytest.mark.parametrize("where", sorted(PIPELINES))
def test_ctrl_c_ends_the_loop_within_a_second_and_the_process_goes_on(where, tmp_path):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    child = _spawn(f"""
        import time, conveyor as cv
        fifo = {fifo!r}
        print("ready", flush=True)
        try:
            for _ in {PIPELINES[where]}:
                pass
            print("ended without interrupt", flush=True)
        except KeyboardInterrupt:
            pass
        print("loop ended", time.time(), flush=True)
        print(sum(int(v) for v in cv.data.Dataset.range(10).map(lambda x: x + 1,
                                                                  num_parallel_calls=2)), flush=True)
        print("exiting", time.time(), flush=True)
    """)
    try:
        assert child.stdout.readline().strip() == "ready"
        time.sleep(0.5)  # inside the slow call or the read by now
        sent = time.time()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
        done = time.time()
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    lines = out.split("\n")
    assert lines[0].startswith("loop ended"), (out, err)
    assert float(lines[0].split()[-1]) - sent < 1.0, out
    assert lines[1] == "55", (out, err)  # a new iterator works afterwards
    assert float(lines[2].split()[-1]) - sent < 1.5, out
    assert child.returncode == 0, err
    assert "Fatal Python error" not in err
    assert done - sent < 3.0, f"the process took {done - sent:.1f}s to exit"


def test_dropping_an_iterator_with_slow_work_in_flight_returns_at_once():
    release = threading.Event()

    def block(x):
        release.wait(60)
        return x
    it = iter(Dataset.range(10).map(lambda x: cv.numpy_function(block, [x], cv.int64),
                                    num_parallel_calls=2).prefetch(2))
    with pytest.raises(Exception):  # noqa: PT011 - nothing is ready: give up the wait
        _next_within(it, 0.3)
    stats_before = it.stats()
    start = time.monotonic()
    del it
    gc.collect()  # with TensorFlow imported a full collection alone can take 1 s under load
    assert time.monotonic() - start < 20.0  # far below the 60 s the calls block: no wait on them
    assert cv._engine.live_iterators() == 0
    release.set()  # the detached teardown finishes once the calls return
    assert stats_before.stages[0].name == "PrefetchDataset"


def _next_within(it, seconds):
    """next(it), interrupted after `seconds` by closing it from another thread."""
    timer = threading.Timer(seconds, it.close)
    timer.start()
    try:
        return next(it)
    finally:
        timer.cancel()


def test_a_blocked_pipe_read_is_cancelled_by_close(tmp_path):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    it = iter(cv.data.TFRecordDataset(fifo).prefetch(2))
    start = time.monotonic()
    with pytest.raises(cv.errors.CancelledError):
        _next_within(it, 0.3)
    it.close()
    assert time.monotonic() - start < 1.5
    assert cv._engine.live_iterators() == 0


def test_a_pipe_with_a_writer_is_read_to_its_end(tmp_path):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    records = [b"a" * 10, b"bb" * 300, b""]
    path = str(tmp_path / "f.tfrecord")
    with cv.io.TFRecordWriter(path) as w:
        for r in records:
            w.write(r)
    data = open(path, "rb").read()

    def write():
        with open(fifo, "wb") as f:
            for i in range(0, len(data), 7):  # in dribbles
                f.write(data[i:i + 7])
                f.flush()
                time.sleep(0.001)
    t = threading.Thread(target=write)
    t.start()
    got = [bytes(r) for r in cv.data.TFRecordDataset(fifo)]
    t.join()
    assert got == records
