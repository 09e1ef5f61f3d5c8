"""conveyor.data.experimental.monitor: the periodic summary and the stall watchdog
(conveyor/data/monitor.py). No time is asserted beyond generous bounds: the planted
stall sleeps 2 s against a watchdog of 0.5 s."""
import gc
import logging
import os
import re
import subprocess
import sys
import time
import weakref

import numpy as np
import pytest
from conftest import ROOT

import conveyor as tf
from conveyor.data.experimental import Monitor, monitor

LOGGER = "conveyor.data"


def sleeping(seconds, name, when=lambda v: True):
    """A map function (through numpy_function, which releases the GIL) that
    sleeps `seconds` on the elements `when` picks."""
    def sleep(v):
        if when(v):
            time.sleep(seconds)
        return v

    def stage(x):
        return tf.numpy_function(sleep, [x], tf.int64)
    stage.__name__ = name
    return stage


def wait_until(predicate, seconds=20.0):
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def messages(caplog, level):
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == level]


def test_the_watchdog_names_the_stage_of_a_planted_stall(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    ds = (tf.data.Dataset.range(40)
          .map(sleeping(2.0, "stuck_here", when=lambda v: v == 10), num_parallel_calls=2)
          .batch(2).prefetch(2))
    it = iter(ds)
    with monitor(it, stall_after=0.5) as m:
        got = [np.asarray(b).tolist() for b in it]
        assert wait_until(lambda: not m.running)
    assert len(got) == 20
    warnings = messages(caplog, logging.WARNING)
    assert warnings, caplog.text
    first = warnings[0]
    assert first.startswith("no element for ")
    assert re.search(r"ParallelMapDataset has \d turns? inside its function \(stuck_here\)",
                     first), first
    assert "wait on it" in first  # the batch and the prefetch above it
    assert any("elements flow again" in m for m in messages(caplog, logging.INFO))


def test_a_stall_in_a_sequential_stage_names_the_parallel_stage_that_runs_it(caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    ds = tf.data.Dataset.range(4).map(sleeping(1.5, "decode", when=lambda v: v == 1)).prefetch(1)
    it = iter(ds)
    with monitor(it, stall_after=0.3):
        list(it)
    text = " ".join(messages(caplog, logging.WARNING))
    assert "PrefetchDataset has 1 turn inside its input (MapDataset (decode)" in text


def test_a_slow_consumer_is_not_a_stalled_pipeline(caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    it = iter(tf.data.Dataset.range(100).prefetch(2))
    with monitor(it, stall_after=0.2):
        next(it)
        assert wait_until(lambda: messages(caplog, logging.WARNING))
    assert "the consumer is not calling next()" in messages(caplog, logging.WARNING)[0]


def test_the_periodic_summary(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    ds = tf.data.Dataset.range(10**6).map(sleeping(0.001, "work"), num_parallel_calls=2).prefetch(4)
    it = iter(ds)
    with monitor(it, every=0.2):
        assert wait_until(lambda: (next(it) is not None
                                   and len(messages(caplog, logging.INFO)) >= 2))
    lines = messages(caplog, logging.INFO)
    assert lines[0].startswith("pipeline: ") and "elements/s" in lines[0]
    assert "buffers hold" in lines[0]
    for line in lines:  # which stage is slowest depends on the machine's load
        if "slowest " in line:
            assert re.search(r"slowest (ParallelMapDataset \(work\)|PrefetchDataset),", line)
    if os.path.exists("/proc/self/statm"):
        assert "RSS" in lines[0]
    it.close()


def test_a_named_logger_and_a_logger_object(caplog):
    caplog.set_level(logging.INFO)
    it = iter(tf.data.Dataset.range(10**6).prefetch(2))
    with monitor(it, every=0.05, logger="my.pipeline"):
        assert wait_until(lambda: next(it) is not None and any(
            r.name == "my.pipeline" for r in caplog.records))
    mine = logging.getLogger("mine")
    with monitor(it, every=0.05, logger=mine):
        assert wait_until(lambda: next(it) is not None and any(
            r.name == "mine" for r in caplog.records))
    it.close()


def test_it_stops_when_the_iterator_ends_or_closes():
    it = iter(tf.data.Dataset.range(1000).prefetch(2))
    m = monitor(it, every=0.05, stall_after=0.05)
    assert m.running
    list(it)
    assert wait_until(lambda: not m.running)

    it = iter(tf.data.Dataset.range(10**6).prefetch(2))
    m = monitor(it, every=0.05)
    next(it)
    it.close()
    assert wait_until(lambda: not m.running)
    m.stop()  # idempotent


def test_it_does_not_keep_the_iterator_alive():
    it = iter(tf.data.Dataset.range(10**6).map(lambda x: x + 1, num_parallel_calls=2).prefetch(2))
    next(it)
    ref = weakref.ref(it)
    m = monitor(it, every=0.05, stall_after=0.05)
    del it
    gc.collect()
    assert ref() is None
    assert wait_until(lambda: not m.running)


def test_stop_and_the_context_manager():
    it = iter(tf.data.Dataset.range(10**6).prefetch(2))
    with monitor(it, stall_after=30) as m:
        assert isinstance(m, Monitor) and m.running
    assert not m.running
    it.close()


def test_bad_arguments():
    it = iter(tf.data.Dataset.range(3))
    with pytest.raises(ValueError, match="every"):
        monitor(it, every=0)
    with pytest.raises(ValueError, match="stall_after"):
        monitor(it, stall_after=-1)
    with pytest.raises(TypeError, match="conveyor Dataset"):
        monitor(iter([1, 2, 3]))
    off = tf.data.Dataset.range(3)._make_iterator(statistics=False)
    with pytest.raises(RuntimeError, match="statistics off"):
        monitor(off)
    m = monitor(it)  # neither: a summary every 10 s
    assert m.every == 10.0 and m.stall_after is None
    m.stop()


SCRIPT = """
import logging, time
import conveyor as tf
logging.basicConfig(level=logging.INFO)
def slow(x):
    return tf.numpy_function(lambda v: (time.sleep(0.01), v)[1], [x], tf.int64)
it = iter(tf.data.Dataset.range(10**6).map(slow, num_parallel_calls=2).prefetch(2))
for _ in range(30):
    next(it)
print("done", flush=True)
"""


def test_the_environment_variables_and_interpreter_exit():
    # the iterator and its monitor are alive at exit: the process must end cleanly
    env = dict(os.environ, PYTHONPATH=ROOT, CONVEYOR_LOG_STATS_EVERY="0.05",
               CONVEYOR_STALL_AFTER="10")
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert "done" in done.stdout
    assert "INFO:conveyor.data:pipeline: " in done.stderr
    assert "Traceback" not in done.stderr


def _stage(index, name, parent, parallel=0, **gauges):
    from conveyor.data.stats import StageStats
    fields = dict(name=name, kernel=name, index=index, parent=parent, inner=False, elements=0,
                  errors=0, parallelism=parallel, max_parallelism=parallel,
                  autotuned_parallelism=False, buffer_size=2 * parallel,
                  max_buffer_size=2 * parallel, autotuned_buffer=False, buffered=0,
                  bytes_held=0, busy=0.0, input_wait=0.0, consumer_wait=0.0, starved=0.0,
                  blocked=0.0, turns=0)
    fields.update(gauges)
    return StageStats(**fields)


def _pipeline(*stages, **fields):
    from conveyor.data.stats import PipelineStats
    base = dict(stages=list(stages), cpu_budget=2, threads=2, elapsed=1.0, next_wait=0.0,
                autotune_algorithm="model", autotune_runs=0, bottleneck=None, choices=[])
    base.update(fields)
    return PipelineStats(**base)


def test_stall_reports_from_the_gauges():
    from conveyor.data.monitor import stall_report, summary
    stuck = _pipeline(_stage(0, "PrefetchDataset", -1, 1, pulling=1),
                      _stage(1, "BatchDataset", 0),
                      _stage(2, "ParallelMapDataset", 1, 4, processing=4, function="map_func"),
                      _stage(3, "RangeDataset", 2))
    assert stall_report(stuck, 5.0) == (
        "no element for 5.0 s: ParallelMapDataset has 4 turns inside its function (map_func) "
        "and nothing buffered; PrefetchDataset and BatchDataset wait on it")
    full = _pipeline(_stage(0, "PrefetchDataset", -1, 1, buffered=2, buffer_size=2),
                     _stage(1, "RangeDataset", 0))
    assert "the consumer is not calling next()" in stall_report(full, 1.0)
    # the summary of an interval: 50 elements in 2 s, the map kept its consumer waiting
    before = _pipeline(_stage(0, "PrefetchDataset", -1, 1, elements=10),
                       _stage(1, "ParallelMapDataset", 0, 2, function="f"))
    after = _pipeline(_stage(0, "PrefetchDataset", -1, 1, elements=60, starved=0.5),
                      _stage(1, "ParallelMapDataset", 0, 2, function="f", starved=0.4,
                             bytes_held=2048), next_wait=0.5)
    line = summary(after, before, 2.0)
    assert line.startswith("pipeline: 25.0 elements/s (50 in 2.0 s, 60 in all), "
                           "next() waited 25%, slowest ParallelMapDataset (f), "
                           "buffers hold 2.0 KiB")
