"""Watch a running pipeline through ``logging``: a periodic one-line summary
and a stall watchdog (``conveyor.data.experimental.monitor``).

A daemon thread reads ``iterator.stats()`` (safe from any thread) every few
hundred milliseconds. It holds the iterator by a weak reference, so it never
keeps a pipeline alive, and it stops by itself when the iterator is
exhausted, closed or collected, or at interpreter exit.

tf.data has no such API (its view inside a pipeline is the TensorBoard
profiler); the summary's fields are those of ``iterator.stats()``.
"""
import atexit
import logging
import math
import os
import threading
import time
import weakref

__all__ = ["monitor", "Monitor"]

LOGGER_NAME = "conveyor.data"
ENV_EVERY = "CONVEYOR_LOG_STATS_EVERY"
ENV_STALL = "CONVEYOR_STALL_AFTER"
DEFAULT_EVERY = 10.0

_live = weakref.WeakSet()
_live_lock = threading.Lock()
_registered = False  # _stop_all registered with atexit


def monitor(iterator, every=None, stall_after=None, logger=None):
    """Log what a running pipeline does, from a daemon thread.

    `iterator`: an iterator of a conveyor Dataset (``iter(dataset)``).
    `every`: seconds between one-line summaries, logged at INFO: elements per
    second over the interval, the slowest stage (the parallel stage whose
    consumer waited longest in the interval, else the autotuner's
    bottleneck), the share of the interval the consumer spent waiting in
    ``next()``, the bytes the pipeline's buffers hold and the process's RSS.
    `stall_after`: seconds without an element reaching the consumer before a
    WARNING that says which stage waits on what (the gauges ``pulling``,
    ``processing`` and ``buffered`` of ``iterator.stats()``); repeated after
    2x, 4x, ... that time while the stall lasts, and an INFO line when
    elements flow again. With neither given, a summary every 10 seconds.
    `logger`: a ``logging.Logger`` or a logger's name (default
    ``"conveyor.data"``); configure logging (``logging.basicConfig(level=
    logging.INFO)``) to see the INFO lines.

    Returns a :class:`Monitor`: ``stop()`` it, or use it as a context manager.
    It stops by itself when the iterator is exhausted, closed or garbage
    collected; it never keeps the iterator alive. For example::

        it = iter(dataset)
        with conveyor.data.experimental.monitor(it, every=30, stall_after=60):
            for batch in it:
                train_step(batch)

    Setting the environment variables ``CONVEYOR_LOG_STATS_EVERY=SECONDS``
    and/or ``CONVEYOR_STALL_AFTER=SECONDS`` monitors every iterator made
    afterwards, with no change to the code.
    """
    return Monitor(iterator, every, stall_after, logger)


def _seconds(value, name):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 \
            or math.isinf(value):
        raise ValueError(f"{name} must be a positive number of seconds or None, got {value!r}.")
    return float(value)


class Monitor:
    """A running :func:`monitor`: ``stop()``, ``running``, context manager."""

    def __init__(self, iterator, every=None, stall_after=None, logger=None):
        stats = getattr(iterator, "stats", None)
        if stats is None:
            raise TypeError(f"monitor() needs an iterator of a conveyor Dataset, "
                            f"got {type(iterator).__name__}.")
        self.every = _seconds(every, "every")
        self.stall_after = _seconds(stall_after, "stall_after")
        if self.every is None and self.stall_after is None:
            self.every = DEFAULT_EVERY
        if logger is None or isinstance(logger, str):
            logger = logging.getLogger(logger or LOGGER_NAME)
        self.logger = logger
        first = iterator.stats()  # raises when the iterator has no statistics
        self._ref = weakref.ref(iterator)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(first,), daemon=True,
                                        name="conveyor-monitor")
        global _registered
        with _live_lock:
            _live.add(self)
            if not _registered:
                atexit.register(_stop_all)
                _registered = True
        self._thread.start()

    @property
    def running(self):
        return self._thread.is_alive()

    def stop(self, timeout=5.0):
        """Stop monitoring (idempotent); waits for the thread to end."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def _stats(self):
        it = self._ref()
        if it is None:
            return None
        try:
            return it.stats()
        except Exception:  # noqa: BLE001 - after fork(), or at interpreter exit
            return None
        finally:
            del it  # never hold the iterator while waiting

    def _run(self, first):
        poll = min(x for x in (self.every, self.stall_after and self.stall_after / 5, 0.5)
                   if x is not None)
        poll = max(poll, 0.01)
        now = time.monotonic()
        last, last_at = first, now                      # the last summary
        moved_at, count = now, first.elements           # the last element seen
        warned_after = None                             # stall warnings: next threshold
        while not self._stop.wait(poll):
            stats = self._stats()
            if stats is None:
                return
            now = time.monotonic()
            if stats.elements != count:
                if warned_after is not None:
                    self._log(logging.INFO, "elements flow again after %.1f s", now - moved_at)
                moved_at, count, warned_after = now, stats.elements, None
            elif self.stall_after is not None and not stats.finished:
                threshold = warned_after or self.stall_after
                if now - moved_at >= threshold:
                    self._log(logging.WARNING, "%s", stall_report(stats, now - moved_at))
                    warned_after = 2 * threshold
            if self.every is not None and now - last_at >= self.every:
                self._log(logging.INFO, "%s", summary(stats, last, now - last_at))
                last, last_at = stats, now
            if stats.finished:
                if self.every is not None and stats.elements != last.elements:
                    self._log(logging.INFO, "%s (the end)", summary(stats, last, now - last_at))
                return

    def _log(self, level, msg, *args):
        try:
            self.logger.log(level, msg, *args)
        except Exception:  # noqa: BLE001 - logging torn down at exit
            self._stop.set()


def summary(stats, before, seconds):
    """The one-line summary of `stats` since `before` (an earlier stats() of
    the same iterator), `seconds` apart."""
    n = stats.elements - before.elements
    rate = n / seconds if seconds > 0 else 0.0
    waited = stats.next_wait - before.next_wait
    slowest = stats.slowest_stage(since=before)
    parts = [f"pipeline: {rate:,.1f} elements/s ({n:,} in {seconds:.1f} s, "
             f"{stats.elements:,} in all)",
             # a wait counts when next() returns: none shown for an interval without elements
             f"next() waited {min(waited / seconds, 1.0):.0%}" if seconds > 0 and n else None,
             f"slowest {_named(stats, slowest)}" if slowest else None,
             f"buffers hold {_bytes(stats.bytes_held)}"]
    rss = _rss()
    if rss is not None:
        parts.append(f"RSS {_bytes(rss)}")
    return ", ".join(p for p in parts if p)


def _named(stats, name):
    try:
        stage = stats.stage(name)
    except KeyError:
        return name
    return f"{name} ({stage.function})" if stage.function else name


def stall_report(stats, seconds):
    """Which stage waits on what, from the gauges of `stats` (a stall of
    `seconds` without an element reaching the consumer)."""
    head = f"no element for {seconds:.1f} s"
    stages = stats.stages
    if not stages:
        return head
    depth = stats._depths()
    parallel = [s for s in stages if s.max_parallelism > 0]
    busy = [s for s in parallel if s.processing > 0]
    pulling = [s for s in parallel if s.pulling > 0]
    root = stages[0]
    if busy:
        s = max(busy, key=lambda s: depth[s.index])
        where = f"inside its function ({s.function})" if s.function else "processing"
        msg = (f"{head}: {s.name} has {_turns(s.processing)} {where} and "
               f"{_held(s)}")
        above = _above(stages, s)
        if above:
            msg += f"; {' and '.join(above)} wait{'s' if len(above) == 1 else ''} on it"
        return msg
    if pulling:
        s = max(pulling, key=lambda s: depth[s.index])
        below = [_named(stats, c.name) for c in _chain_below(stages, s)]
        inner = f" ({' <- '.join(below)}, run on its turns)" if below else ""
        return (f"{head}: {s.name} has {_turns(s.pulling)} inside its input{inner} and "
                f"{_held(s)}; nothing below it is running")
    if root.max_parallelism > 0 and root.buffer_size and root.buffered >= root.buffer_size:
        return (f"{head}: the pipeline is not stuck: {root.name} holds {root.buffered} "
                "elements; the consumer is not calling next() (a slow step?)")
    if not parallel:
        return (f"{head}: every stage runs on the consumer's thread (no parallel stage), "
                f"so the consumer is inside next() of {root.name} or not calling it")
    return (f"{head}: no stage is running a turn; the consumer is not calling next(), or "
            "the pool's threads are all blocked elsewhere")


def _turns(n):
    return f"{n} turn{'s' if n != 1 else ''}"


def _held(s):
    if s.buffered <= 0:
        return "nothing buffered"
    return f"{s.buffered} element{'s' if s.buffered != 1 else ''} in flight or buffered"


def _above(stages, stage):
    """The stages between the root and `stage` that wait on it (pulling, or
    run on the consumer's thread)."""
    by_index = {s.index: s for s in stages}
    out, p = [], stage.parent
    while p >= 0 and p in by_index:
        s = by_index[p]
        if s.max_parallelism == 0 or s.pulling > 0:
            out.append(s.name)
        else:
            break
        p = s.parent
    out.reverse()
    return ["everything above"] if len(out) > 2 else out


def _chain_below(stages, stage):
    """The sequential stages a parallel stage pulls through, down to the next
    parallel one (included)."""
    out, p = [], stage.index
    while True:
        kids = [s for s in stages if s.parent == p and not s.inner]
        if len(kids) != 1:
            return out
        out.append(kids[0])
        if kids[0].max_parallelism > 0:
            return out
        p = kids[0].index


def _rss():
    """Resident bytes of this process (/proc/self/statm), None elsewhere."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def from_environment(iterator):
    """monitor(iterator, ...) when CONVEYOR_LOG_STATS_EVERY or
    CONVEYOR_STALL_AFTER is set (iter(dataset) calls this)."""
    every, stall = os.environ.get(ENV_EVERY), os.environ.get(ENV_STALL)
    if not every and not stall:
        return None
    try:
        return Monitor(iterator, float(every) if every else None,
                       float(stall) if stall else None)
    except (ValueError, TypeError, RuntimeError) as e:
        logging.getLogger(LOGGER_NAME).warning("%s / %s ignored: %s", ENV_EVERY, ENV_STALL, e)
        return None


def _stop_all():
    """At interpreter exit, before conveyor's own shutdown hook (registered
    when conveyor was imported, so run later): no monitor reads a pipeline
    being torn down, and none logs once logging has shut down."""
    with _live_lock:
        monitors = list(_live)
    for m in monitors:
        m._stop.set()
    for m in monitors:
        m.stop(timeout=1.0)
