"""The pipeline doctor's instruments (package-private; conveyor/data/doctor.py
runs the checks): a run of a build, timed and digested element by element,
and a sampler of the machine (RSS, open descriptors, the engine's buffered
bytes, GPU utilisation through NVML).
"""
import collections
import dataclasses
import hashlib
import os
import resource
import threading
import time

import numpy as np

from conveyor import _engine

_FLAT = lambda: (1, None)  # noqa: E731 - engine iterators yield flat tuples of components


# -- running --------------------------------------------------------------------------


class _Build:
    """A dataset and the context its engine datasets are built under."""

    def __init__(self, dataset, ctx):
        self.dataset, self.ctx = dataset, ctx

    def iterator(self, count, packed=False):
        """An iterator over the first `count` elements. Through take(), so a
        cache() inside sees a preview when it stops there, and neither warns
        nor spends its one warning on the doctor."""
        return _engine.take(self.dataset._engine(self.ctx), count=count).make_iterator(
            self.dataset._packing if packed else _FLAT, cpu_budget=self.ctx.cpu_budget)


@dataclasses.dataclass
class _Run:
    count: int = 0
    wall: float = 0.0      # from the first element to the last
    waiting: float = 0.0   # in next(), after the first element
    stepping: float = 0.0  # in step_fn, after the first element
    digests: list = None
    error: BaseException = None
    stats: dict = None     # the engine's statistics at the end (_engine.Iterator.stats)

    def rate(self, busy_only=False):
        elapsed = self.waiting if busy_only else self.wall
        return (self.count - 1) / elapsed if self.count > 1 and elapsed > 0 else None


def _digest(component):
    h = hashlib.blake2b(digest_size=16)
    if isinstance(component, bytes):
        h.update(b"b" + component)
    else:
        a = np.asarray(component)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        if a.dtype == object:
            for x in a.ravel():
                h.update(repr(x).encode())
        else:
            h.update(np.ascontiguousarray(a).tobytes())
    return h.digest()


def _contained(part, whole):
    """Whether every element of `part` is in `whole` (as many times)."""
    return not (collections.Counter(part) - collections.Counter(whole))


def _element_digest(element):
    return b"".join(_digest(c) for c in element)


def _iterate(build, steps, digest=False, step_fn=None, tick=None):
    """Take up to `steps` elements (`tick(count)` after each, for a progress bar)."""
    run = _Run(digests=[] if digest else None)
    it = build.iterator(steps, packed=step_fn is not None)
    perf = time.perf_counter
    try:
        start = perf()
        while run.count < steps:
            t0 = perf()
            try:
                element = next(it)
            except StopIteration:
                break
            t1 = perf()
            if run.count == 0:
                start = t1  # the first element (threads starting, buffers filling) is warm-up
            else:
                run.waiting += t1 - t0
            run.count += 1
            if digest:
                run.digests.append(_element_digest(element))
            if step_fn is not None:
                step_fn(element)
                if run.count > 1:
                    run.stepping += perf() - t1
            run.wall = perf() - start
            if tick is not None:
                tick(run.count)
    except Exception as e:  # noqa: BLE001 - reported as a check
        run.error = e
    finally:
        it.close()
        run.stats = it.stats()
    return run


# -- the machine: RSS, descriptors, GPU -----------------------------------------------


def _proc_status(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _rss():
    rss = _proc_status("VmRSS")
    if rss is None:  # no /proc: the peak so far (kB on Linux, bytes on macOS)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        rss = peak if os.uname().sysname == "Darwin" else peak * 1024
    return rss


def _open_descriptors():
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(folder)) - 1  # minus the one listdir opened
        except OSError:
            continue
    return None


def _gpu_device_present():
    """Whether this machine shows an NVIDIA GPU through its driver's files (no NVML
    needed): the doctor prints its GPU line only then."""
    try:
        if os.listdir("/proc/driver/nvidia/gpus"):
            return True
    except OSError:
        pass
    try:
        return any(n.startswith("nvidia") and n[6:].isdigit() for n in os.listdir("/dev"))
    except OSError:
        return False


def device_copies(raw):
    """What the device stages of a run's statistics (``_engine.Iterator.stats``) copied,
    for the GPU line: bus rate, batches built in page-locked memory (host copies
    avoided), batches staged; "" when the pipeline has no device stage."""
    parts = []
    for n in (raw or {}).get("nodes", ()):
        if not n.get("ring_slots"):
            continue
        rate = n.get("copy_bytes", 0) / (n["copy_ns"] / 1e9) if n.get("copy_ns") else 0.0
        parts.append(f"prefetch_to_device {rate / 1e9:.2f} GB/s over the bus, "
                     f"{n.get('inplace_batches', 0):,} batches built in page-locked memory "
                     f"({n.get('inplace_bytes', 0) / 1e6:.1f} MB of host copies avoided), "
                     f"{n.get('staged_copies', 0):,} staged "
                     f"({n.get('staged_bytes', 0) / 1e6:.1f} MB copied)")
    return "; ".join(parts)


def _nvml():
    """(pynvml, [handles of this process's GPUs, else all]), or (None, why not) when a GPU
    is there but cannot be sampled, or (None, None) when the machine has no GPU."""
    try:
        import pynvml
    except ImportError:
        if not _gpu_device_present():
            return None, None
        return None, "pynvml is not installed (pip install nvidia-ml-py)"
    try:
        pynvml.nvmlInit()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i)
                   for i in range(pynvml.nvmlDeviceGetCount())]
    except Exception as e:  # noqa: BLE001 - NVMLError: no driver, no device
        if not _gpu_device_present():
            return None, None
        return None, f"the NVIDIA driver did not answer ({e})"
    if not handles:
        return None, None
    mine = []
    for h in handles:
        try:
            if any(p.pid == os.getpid() for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)):
                mine.append(h)
        except Exception:  # noqa: BLE001 - not supported on this device
            pass
    return (pynvml, mine or handles), None


class _Sampler:
    """A thread that samples RSS, open descriptors, the engine's buffered bytes
    and (while `gpu` is set) GPU utilisation, every 20 ms."""

    def __init__(self):
        self.peak_rss = _rss() or 0
        self.hwm_before = _proc_status("VmHWM")
        self.peak_fds = _open_descriptors() or 0
        self.peak_buffered = _engine.memory_in_use()
        self.gpu = None           # (pynvml, handles) while the step run goes
        self.io = None            # an _IoWindow while the timed run goes
        self.gpu_samples = {}     # handle index -> [utilisation 0..1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="conveyor-doctor", daemon=True)
        self._thread.start()

    def _loop(self):
        last_gpu = 0.0
        while not self._stop.wait(0.02):
            self.sample()
            gpu = self.gpu
            if gpu is not None and time.monotonic() - last_gpu >= 0.1:
                last_gpu = time.monotonic()
                nvml, handles = gpu
                for i, h in enumerate(handles):
                    try:
                        busy = nvml.nvmlDeviceGetUtilizationRates(h).gpu / 100.0
                    except Exception:  # noqa: BLE001
                        continue
                    self.gpu_samples.setdefault(i, []).append(busy)

    def sample(self):
        io = self.io
        if io is not None:
            io.sample()
        self.peak_rss = max(self.peak_rss, _rss() or 0)
        self.peak_fds = max(self.peak_fds, _open_descriptors() or 0)
        self.peak_buffered = max(self.peak_buffered, _engine.memory_in_use())

    def stop(self):
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join()
        self.sample()
        hwm = _proc_status("VmHWM")
        if hwm is not None and self.hwm_before is not None and hwm > self.hwm_before:
            self.peak_rss = max(self.peak_rss, hwm)  # a peak between two samples


def _cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class _IoWindow:
    """Remote I/O (gs://, s3://, http(s)://) during one run: the process's
    counters at its start and end, the most requests and bytes in flight (the
    sampler's 20 ms samples), and the CPU time the process used meanwhile."""

    def __init__(self):
        self.start, self.end = _engine.io_stats(), None
        self.peak_requests = self.peak_bytes = 0
        self.samples = self.busy_samples = 0  # samples, and those with a request in flight
        self._t0, self._cpu0 = time.perf_counter(), _cpu_seconds()
        self.seconds = self.cpu = 0.0

    def sample(self):
        now = _engine.io_stats()
        self.peak_requests = max(self.peak_requests, now["requests_in_flight"])
        self.peak_bytes = max(self.peak_bytes, now["bytes_in_flight"])
        self.samples += 1
        self.busy_samples += now["requests_in_flight"] > 0

    def stop(self):
        self.sample()
        self.end = _engine.io_stats()
        self.seconds = time.perf_counter() - self._t0
        self.cpu = _cpu_seconds() - self._cpu0
        return self


# The storage-bound check: below this share of the CPU budget busy, with a
# request in flight most of the time, the pipeline waits on storage. (CPUs that
# other processes take also look idle to us; the requests in flight tell the two
# apart: a pipeline held back by its CPUs leaves the streams' read-ahead full.)
STORAGE_CPU_BUSY = 0.6
STORAGE_IN_FLIGHT = 0.5


def storage_verdict(io, cpus):
    """(waiting, busy, detail, remedy) of the storage-bound check for the
    run `io` watched, or None when it read nothing remote."""
    requests = io.end["requests"] - io.start["requests"]
    if requests <= 0 or io.seconds <= 0:
        return None
    received = io.end["bytes_received"] - io.start["bytes_received"]
    busy = io.cpu / (io.seconds * max(cpus, 1))
    in_flight = io.busy_samples / io.samples if io.samples else 0.0
    budget_requests, budget_bytes = io.end["budget_requests"], io.end["budget_bytes"]
    detail = (f"{received / io.seconds / 1e6:.1f} MB/s from remote storage ({requests} "
              f"requests, first byte {io.end['first_byte_ms']:.0f} ms); at most "
              f"{io.peak_requests} of {budget_requests} requests and "
              f"{io.peak_bytes / 2**20:.1f} of {budget_bytes / 2**20:.0f} MiB in flight, "
              f"a request in flight {in_flight:.0%} of the time; CPUs {busy:.0%} busy")
    if busy >= STORAGE_CPU_BUSY or in_flight < STORAGE_IN_FLIGHT:
        return False, busy, detail + ": not waiting on storage", ""
    if io.peak_requests >= 0.9 * budget_requests or io.peak_bytes >= 0.9 * budget_bytes:
        remedy = (f"raise the I/O budget, if the store and network allow more: "
                  f"tf.data.experimental.set_io_budget(requests={2 * budget_requests}, "
                  f"bytes={2 * budget_bytes})")
    else:
        remedy = ("read more at once: num_parallel_reads=AUTOTUNE on the record readers, a "
                  "larger cycle_length on an interleave with num_parallel_calls=AUTOTUNE, or "
                  "num_parallel_calls=AUTOTUNE on the map that calls read_file")
    return True, busy, detail + ": waiting on storage", remedy
