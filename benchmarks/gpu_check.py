#!/usr/bin/env python3
"""prefetch_to_device on a GPU machine: correctness, bandwidth, the JPEG workload.

    python3 benchmarks/gpu_check.py [--quick] [--json out.json] [--device cuda:0]

One run, under 5 minutes (--quick: about 1), every framework optional
(torch, cupy, jax, pynvml): a. the environment (cuda_info, NVML, versions);
b. correctness: pipelines through prefetch_to_device / copy_to_device give
DeviceArrays equal to the host pipeline's arrays, seen through numpy(),
torch.from_dlpack, torch.as_tensor (CUDA array interface), cupy and jax;
stream semantics (a kernel right after next() sees the copy; a freed block
is not rewritten while another stream still reads it); device memory back
to its baseline after every epoch; c. bandwidth: copy_bandwidth (the
page-locked limit), torch's pinned .to() for reference, and the device
stage's rate on 64x224x224x3 float32 batches, min/median/max and / limit
(goal >= 0.8); d. the JPEG workload of benchmarks/images.py with and without
the device stage, feeding a dummy GPU training step: images/s, input-bound
fraction, GPU utilisation sampled every 100 ms; e. batches built in
page-locked memory (gpu_pinned.py): the device stage's rate on them / the
limit (goal >= 0.8), the JPEG loop with a 19 ms step, float32 and uint8
normalised on the device: input-bound and GPU-busy shares (goal busy > 80%);
f. a summary table. See
benchmarks/README.md and docs/device.md.
The frameworks, CUDA runtime and NVML it runs against: benchmarks/gpu_env.py.

`--device host` runs the whole flow on conveyor's "host" device (the device
path on host memory; no GPU needed): bandwidth is then memcpy's, the step a
sleep, and stream checks run without streams.

Exit status: 0 when every correctness check passed (timings are never
asserted); 1 when one failed or the correctness section raised; 2 when CUDA
is not available (it prints "CUDA not available: <reason>"; 0 with
--allow-no-gpu) or --device is not a device. Other sections report their
own failure and the script goes on.
"""
import argparse
import contextlib
import faulthandler
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import traceback
import types
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # jax: no 75% grab

import numpy as np  # noqa: E402

try:
    import conveyor as cv
except ImportError:  # run from a checkout that is not installed
    sys.path.insert(0, ROOT)
    import conveyor as cv
import conveyor.device as cvdev  # noqa: E402
from conveyor.data import experimental as cvx  # noqa: E402

sys.path.insert(0, HERE)
from run import compact  # noqa: E402  (3 significant figures, k/M/G)
from gpu_env import CudaRuntime, Frameworks, Nvml, UtilSampler, rss_bytes  # noqa: E402
import gpu_pinned  # noqa: E402  (section e)

MiB = 1 << 20
GOAL_STAGE_VS_LIMIT = 0.8

# per-mode sizes; section budgets are soft limits in seconds
FULL = dict(budget={"environment": 30, "correctness": 70, "bandwidth": 50, "jpeg": 140},
            bw_bytes=256 * MiB, bw_repeats=10, bw_rounds=5, stage_batches=40, stage_rounds=7,
            big_batch_mib=64, big_batches=12, mem_epochs=5, mem_batches=40, mem_batch_mib=16,
            long_batches=300, files=1024, rounds=5, step_ms=30.0)
FULL["budget"]["pinned"] = 90
QUICK = dict(budget={"environment": 20, "correctness": 20, "bandwidth": 12, "jpeg": 30, "pinned": 30},
             bw_bytes=64 * MiB, bw_repeats=5, bw_rounds=5, stage_batches=10, stage_rounds=5,
             big_batch_mib=16, big_batches=6, mem_epochs=3, mem_batches=12, mem_batch_mib=8,
             long_batches=60, files=256, rounds=5, step_ms=20.0)


# --------------------------------------------------------------------------- helpers

def now():
    return time.perf_counter()


def summary(values):
    values = [float(v) for v in values]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "values": values}


def fmt_summary(s, scale=1.0, unit=""):
    """median [min-max]."""
    if not s:
        return "-"
    return (f"{compact(s['median'] * scale)}{unit} "
            f"[{compact(s['min'] * scale)}-{compact(s['max'] * scale)}]")


def gbps(s):
    return fmt_summary(s, 1e-9, " GB/s")


class Budget:
    """A soft time limit: loops ask `over()` and stop early, and say so."""

    def __init__(self, seconds):
        self.end = now() + seconds
        self.cut = False

    def over(self):
        if now() > self.end:
            self.cut = True
        return self.cut


class Report:
    """Checks and figures of every section, printed as they come."""

    def __init__(self):
        self.checks = []          # dicts: section, name, status (ok/FAIL/skip/warn), detail
        self.figures = {}         # section -> dict
        self.errors = {}          # section -> traceback text
        self.summary_rows = []    # (figure, value, note)

    def _add(self, section, name, status, detail):
        self.checks.append({"section": section, "name": name, "status": status, "detail": detail})
        print(f"  {status:<5} {name}{': ' + detail if detail else ''}", flush=True)

    def check(self, section, name, ok, detail=""):
        self._add(section, name, "ok" if ok else "FAIL", detail)

    def skip(self, section, name, reason):
        self._add(section, name, "skip", reason)

    def warn(self, section, name, detail):  # printed as WARN, counted as warn
        self._add(section, name, "warn", detail)

    def failed(self, section=None):
        return [c for c in self.checks
                if c["status"] == "FAIL" and (section is None or c["section"] == section)]

    def row(self, figure, value, note=""):
        self.summary_rows.append((figure, value, note))


# --------------------------------------------------------------------------- engine statistics

def device_iterator(ds):
    """iter(ds) and raw() -> the device stage's figures from stats() (copies,
    copy_bytes, copy_ns, ring_slots, ring_busy, staging_bytes, device_bytes:
    csrc/core/stats.h, shown by StageStats), or None without a device stage."""
    it = iter(ds)

    def raw():
        for s in it.stats().stages:
            if s.ring_slots:
                return {"copies": s.copies, "copy_bytes": s.copy_bytes,
                        "copy_ns": s.copy_time * 1e9, "ring_slots": s.ring_slots,
                        "ring_busy": s.ring_busy, "staging_bytes": s.staging_bytes,
                        "device_bytes": s.device_bytes}
        return None
    return it, raw


# --------------------------------------------------------------------------- a. environment

def section_environment(ctx, report, budget):
    env = {"python": platform.python_version(), "platform": platform.platform(),
           "numpy": np.__version__, "conveyor": getattr(cv, "__version__", "?"),
           "cpus": os.cpu_count(), "device": ctx.device}
    try:
        env["cpus_usable"] = len(os.sched_getaffinity(0))
    except AttributeError:
        pass
    try:
        env["cuda_info"] = cvdev.cuda_info()
    except Exception as e:
        env["cuda_info"] = None
        env["cuda_unavailable"] = str(e)
    print(f"  python {env['python']}, numpy {env['numpy']}, conveyor {env['conveyor']}, "
          f"{env.get('cpus_usable', env['cpus'])} usable CPUs; {env['platform']}")
    if env["cuda_info"]:
        i = env["cuda_info"]
        print(f"  conveyor.device.cuda_info(): {i['device_count']} device(s), runtime "
              f"{_cuda_version(i['runtime_version'])}, driver {_cuda_version(i['driver_version'])}, "
              f"library {i['library']}")
    else:
        print(f"  conveyor.device.cuda_info(): {env['cuda_unavailable']}")
    nvml = Nvml(ctx.index)
    ctx.nvml = nvml
    try:
        gpu = nvml.info()
    except Exception as e:
        gpu = None
        nvml.note += f"; {type(e).__name__}: {e}"
    env["gpu"] = gpu
    if gpu:
        print(f"  GPU {ctx.index}: {gpu['name']}, {gpu['memory_total_mib'] / 1024:.1f} GiB, "
              f"{gpu['memory_used_mib']:.0f} MiB used, utilisation {gpu['utilization_gpu']}%, "
              f"driver {gpu['driver_version']} (via {gpu['via']})")
    else:
        print(f"  NVML: not available ({nvml.note.strip('; ')})")
    fw = Frameworks(ctx.kind, ctx.index)
    ctx.fw = fw
    env["frameworks"] = dict(fw.versions)
    env["framework_notes"] = dict(fw.notes)
    for name in ("torch", "cupy", "jax"):
        version = fw.versions.get(name)
        used = getattr(fw, name) is not None
        extra = ""
        if name == "torch" and version:
            extra = f" (CUDA {fw.versions.get('torch.version.cuda')})"
        if name == "jax" and used:
            extra = f" ({', '.join(fw.versions.get('jax.devices', []))})"
        state = "used" if used else fw.notes.get(name, "not used")
        print(f"  {name:<6} {version or '-'}{extra}: {state}")
    report.figures["environment"] = env


def _cuda_version(v):
    return f"{v // 1000}.{(v % 1000) // 10}" if v else "?"


# --------------------------------------------------------------------------- b. correctness

def host_leaves(element):
    return [np.array(x, copy=True) if isinstance(x, np.ndarray) else x
            for x in cv.nest.flatten(element)]


def correctness_pipelines(rng):
    """name -> a host pipeline (no device stage), each element small."""
    n = 100
    images = rng.random((n, 32, 32, 3), dtype=np.float32)
    labels = rng.integers(-2**40, 2**40, n, dtype=np.int64)
    names = np.array([f"img-{i:03d}".encode() for i in range(n)], dtype=object)
    D = cv.data.Dataset
    return {
        "float32 images, batch 16 (last batch 4)":
            D.from_tensor_slices(images).batch(16),
        "int64 labels, batch 32 (last batch 4)":
            D.from_tensor_slices(labels).batch(32),
        "(images, labels) tuple, batch 64 (last 36)":
            D.from_tensor_slices((images, labels)).batch(64),
        "dict of uint8/int64/float64/bool/float16, batch 7 (last 2)":
            D.from_tensor_slices({
                "image": (images * 255).astype(np.uint8), "label": labels,
                "weight": rng.random(n), "mask": rng.random((n, 5)) > 0.5,
                "half": rng.random((n, 4)).astype(np.float16)}).batch(7),
        "nested ((x, {'y': y}), z), unbatched scalars and vectors":
            D.from_tensor_slices(((labels, {"y": images[:, 0, 0]}), labels.astype(np.int32))).take(9),
        "strings beside numbers {'name', 'id', 'vec'}, batch 5":
            D.from_tensor_slices({"name": names, "id": np.arange(n, dtype=np.int32),
                                  "vec": images[:, 0, :, 0]}).batch(5),
        "range(10) int64 scalars":
            D.range(10),
    }


def device_variants(device):
    return [("prefetch_to_device(AUTOTUNE)", cvx.prefetch_to_device(device)),
            ("prefetch_to_device(1)", cvx.prefetch_to_device(device, 1)),
            ("copy_to_device", cvx.copy_to_device(device))]


def compare_element(ctx, want, got):
    """'' when the device element matches the host one, else what differs."""
    flat = cv.nest.flatten(got)
    if len(flat) != len(want):
        return f"{len(flat)} leaves, want {len(want)}"
    for k, (w, g) in enumerate(zip(want, flat)):
        if isinstance(w, np.ndarray) and w.dtype != object:
            if not isinstance(g, cvdev.DeviceArray):
                return f"leaf {k}: {type(g).__name__}, want a DeviceArray"
            if g.device != ctx.array_device:
                return f"leaf {k}: on {g.device}, want {ctx.array_device}"
            if tuple(g.shape) != w.shape or g.dtype != w.dtype:
                return f"leaf {k}: {g.shape} {g.dtype}, want {w.shape} {w.dtype}"
            if not np.array_equal(g.numpy(), w):
                return f"leaf {k}: numpy() differs from the host pipeline's values"
        elif isinstance(w, np.ndarray):  # strings: stay on the host
            if not isinstance(g, np.ndarray) or not np.array_equal(g, w):
                return f"leaf {k}: strings {type(g).__name__}, want the host array"
        elif isinstance(w, (bytes, str)):
            if g != w:
                return f"leaf {k}: {g!r}, want {w!r}"
        else:  # a numeric scalar on the host: a rank-0 DeviceArray on the device
            if not isinstance(g, cvdev.DeviceArray) or g.numpy() != w:
                return f"leaf {k}: {g!r}, want {w!r}"
    return ""


def framework_views(ctx, x, want):
    """{framework path: '' or what differs} for one DeviceArray leaf."""
    fw, out = ctx.fw, {}

    def view(path, make, to_numpy, device=None):
        try:
            v = make(x)
            if device is not None and v.device != device:
                out[path] = f"on {v.device}, want {device}"
            else:
                out[path] = "" if np.array_equal(to_numpy(v), want) else "values differ"
        except Exception as e:
            out[path] = f"{type(e).__name__}: {e}"
    if fw.torch is not None:
        torch, dev = fw.torch, fw.torch_device
        view("torch.from_dlpack", torch.from_dlpack, lambda t: t.cpu().numpy(), dev)
        if ctx.kind == cvdev.CUDA:
            view("torch.as_tensor (CUDA array interface)", lambda a: torch.as_tensor(a, device=dev),
                 lambda t: t.cpu().numpy(), dev)
    if fw.cupy is not None:
        view("cupy.asarray", fw.cupy.asarray, fw.cupy.asnumpy)
        view("cupy.from_dlpack", fw.cupy.from_dlpack, fw.cupy.asnumpy)
    if fw.jax is not None and want.dtype in (np.float32, np.int32, np.uint8, np.bool_):
        def jax_view(a):
            try:
                return fw.jax.dlpack.from_dlpack(a)
            except TypeError:  # older jax: a capsule
                return fw.jax.dlpack.from_dlpack(a.__dlpack__())
        view("jax.dlpack.from_dlpack", jax_view, np.asarray)
    return out


def check_values(ctx, report, budget):
    S = "correctness"
    rng = np.random.default_rng(7)
    fw_results = {}
    for name, ds in correctness_pipelines(rng).items():
        want = [host_leaves(e) for e in ds]
        for vname, transform in device_variants(ctx.device):
            if budget.over():
                report.skip(S, f"{name} / {vname}", "the section's time budget is spent")
                continue
            problems = []
            try:
                got = list(ds.apply(transform))
                if len(got) != len(want):
                    problems.append(f"{len(got)} elements, want {len(want)}")
                for i, (w, g) in enumerate(zip(want, got)):
                    diff = compare_element(ctx, w, g)
                    if diff:
                        problems.append(f"element {i}: {diff}")
                        break
                if vname.startswith("prefetch_to_device(AUTOTUNE)"):
                    for w, g in zip(want, got):
                        for wl, gl in zip(w, cv.nest.flatten(g)):
                            if isinstance(gl, cvdev.DeviceArray):
                                for path, err in framework_views(ctx, gl, wl).items():
                                    fw_results.setdefault(path, []).append(err)
                del got
            except Exception as e:
                problems.append(f"{type(e).__name__}: {e}")
            report.check(S, f"{name} / {vname}", not problems, "; ".join(problems))
    for path, errs in sorted(fw_results.items()):
        bad = [e for e in errs if e]
        report.check(S, f"{path} equals the host values ({len(errs)} arrays)", not bad,
                     bad[0] if bad else "")
    for name in ("torch", "cupy", "jax"):
        if getattr(ctx.fw, name) is None:
            report.skip(S, f"{name} views", ctx.fw.notes.get(name, "not used"))


def counting_pipeline(n, mib):
    """n batches of `mib` MiB float32, batch i filled with the value i (so a
    stale or overwritten block shows); natively computed."""
    count = mib * MiB // 4
    zeros = cv.data.Dataset.from_tensors(np.zeros(count, np.float32)).repeat(n)
    return cv.data.Dataset.zip((zeros, cv.data.Dataset.range(n))).map(
        lambda z, i: z + cv.cast(i, cv.float32))


def minmax_per_batch(ctx, ds, view, stream=None):
    """[min, max] of every batch, computed by kernels queued right after
    next() (on `stream`, a torch stream, when given) and read at the end:
    batch i must give [i, i]. `view` makes a torch tensor or a cupy array."""
    fw = ctx.fw
    results = []
    with fw.torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
        for x in ds:
            t = view(x)
            xp = fw.torch if fw.torch is not None and fw.torch.is_tensor(t) else fw.cupy
            results.append(xp.stack([t.min(), t.max()]))
            del t, x  # freed behind the stream the view was taken on
    if stream is not None:
        stream.synchronize()
    fw.torch_sync()
    results = [r.tolist() for r in results]
    return [(i, r) for i, r in enumerate(results) if r != [i, i]], len(results)


def check_streams(ctx, report, budget):
    """Stream semantics, seen by torch and cupy: a kernel queued right after
    next() reads the copied values; a freed block waits for its last reader."""
    S = "correctness"
    fw = ctx.fw
    n, mib = ctx.cfg["big_batches"], ctx.cfg["big_batch_mib"]
    ds = counting_pipeline(n, mib)
    cuda = ctx.kind == cvdev.CUDA
    if fw.torch is None and fw.cupy is None:
        report.skip(S, "stream semantics", "neither torch nor cupy is usable")
        return

    def record(name, result, warn_hint=None):
        bad, count = result
        detail = f"batch {bad[0][0]}: min/max {bad[0][1]}" if bad else f"{count} batches of {mib} MiB"
        if bad and warn_hint:
            report.warn(S, name, f"{len(bad)} of {count} batches read before their copy ended "
                        f"({detail}): {warn_hint}")
        else:
            report.check(S, name, not bad and count == n, detail)

    def copied():
        return ds.apply(cvx.copy_to_device(ctx.device))
    torch = fw.torch
    for vname, transform in (("copy_to_device", cvx.copy_to_device(ctx.device)),
                             ("prefetch_to_device(2)", cvx.prefetch_to_device(ctx.device, 2))):
        if torch is None or budget.over():
            continue
        # from_dlpack made the current stream wait on the copy's event
        record(f"torch kernel on the current stream right after next() / {vname}",
               minmax_per_batch(ctx, ds.apply(transform), torch.from_dlpack))
        if cuda:  # from_dlpack passes the side stream
            record(f"torch kernel on a side stream right after next() / {vname}",
                   minmax_per_batch(ctx, ds.apply(transform), torch.from_dlpack,
                                    torch.cuda.Stream(device=fw.torch_device)))
    if torch is not None and cuda and not budget.over():
        check_lifetime(ctx, report, ds, n)
        # The CUDA array interface names the copy stream; a consumer that
        # does not synchronize on it may read before the copy ends.
        record("torch.as_tensor (CUDA array interface) right after copy_to_device's next()",
               minmax_per_batch(ctx, copied(), lambda x: torch.as_tensor(x, device=fw.torch_device)),
               "this torch ignores the interface's 'stream'; use torch.from_dlpack (docs/device.md)")
    if fw.cupy is not None and not budget.over():
        for name, fn in (("cupy.asarray", fw.cupy.asarray), ("cupy.from_dlpack", fw.cupy.from_dlpack)):
            record(f"{name} right after copy_to_device's next()", minmax_per_batch(ctx, copied(), fn))
    if budget.over():
        report.skip(S, "some stream checks", "time budget spent")


def check_lifetime(ctx, report, ds, n):
    """A block freed while a kernel on a side stream still reads it is not
    written again before that kernel is done: the free records an event on
    the consumer's stream and the copy stream waits on it."""
    S = "correctness"
    torch = ctx.fw.torch
    side = torch.cuda.Stream(device=ctx.torch_device)
    it = iter(ds.apply(cvx.copy_to_device(ctx.device)))
    x = next(it)  # batch 0
    with torch.cuda.stream(side):
        t = torch.from_dlpack(x)  # side waits on the copy; the free will wait on side
        if hasattr(torch.cuda, "_sleep"):
            torch.cuda._sleep(200_000_000)  # ~0.1 s of spinning on the side stream
        else:
            a = torch.randn(4096, 4096, device=ctx.torch_device)
            for _ in range(50):
                a = a @ a / 4096
        late = torch.stack([t.min(), t.max()])  # reads batch 0 after the wait
    del t, x  # the block goes back to the cache behind `side`
    later = [next(it) for _ in range(min(4, n - 1))]  # same size: they reuse that block
    side.synchronize()
    got = late.tolist()
    values = [float(b.numpy().min()) for b in later]
    ok = got == [0.0, 0.0] and values == [float(i + 1) for i in range(len(later))]
    report.check(S, "a block freed behind a busy side stream is not overwritten before it ends",
                 ok, "" if ok else f"the late kernel read {got}, want [0.0, 0.0]; next batches {values}")
    del later, it


def check_memory(ctx, report, budget):
    """Device memory goes back to its baseline once everything is dropped,
    epoch after epoch; conveyor's device_bytes stays bounded within an epoch."""
    S = "correctness"
    fw = ctx.fw
    if ctx.kind == cvdev.CUDA:
        cudart = CudaRuntime(cvdev.cuda_info()["library"], ctx.index)
        measure, what = cudart.used_bytes, "device memory in use (cudaMemGetInfo)"
        tolerance = 32 * MiB
    elif os.environ.get("CV_SANITIZED") == "1":
        measure = None
        report.skip(S, "memory back to baseline", "the host device's memory is RSS, meaningless under ASan")
    else:
        measure, what = rss_bytes, "resident set (host device)"
        tolerance = 96 * MiB
    epochs, batches, mib = ctx.cfg["mem_epochs"], ctx.cfg["mem_batches"], ctx.cfg["mem_batch_mib"]
    ds = counting_pipeline(batches, mib).apply(cvx.prefetch_to_device(ctx.device))

    def epoch():
        it, raw = device_iterator(ds)
        peak = 0
        for x in it:
            if fw.torch is not None:
                t = fw.torch.from_dlpack(x)
                t.view(-1)[:1].mul(2)
                del t
            peak = max(peak, raw()["device_bytes"])
            del x
        del it
        fw.release_caches()
        return peak

    figures = ctx.report.figures.setdefault("correctness", {}).setdefault("memory", {})
    if measure is not None:
        epoch()  # the CUDA context, the frameworks' first allocations
        baseline = measure()
        after, peaks = [], []
        for e in range(epochs):
            if budget.over():
                break
            peaks.append(epoch())
            after.append(measure())
        figures.update({"what": what, "baseline": baseline, "after_each_epoch": after,
                        "device_bytes_peak_each_epoch": peaks, "batch_bytes": mib * MiB})
        if not after:
            report.skip(S, "memory back to baseline", "time budget spent")
            return
        growth = [a - baseline for a in after]
        report.check(S, f"{what} back to baseline after each of {len(after)} epochs",
                     max(growth) <= tolerance,
                     f"baseline {baseline / MiB:.0f} MiB, after epochs "
                     + ", ".join(f"{g / MiB:+.0f}" for g in growth)
                     + f" MiB (tolerance {tolerance // MiB} MiB; device_bytes at most "
                     + f"{max(peaks) / MiB:.0f} MiB during an epoch)")
    # One long epoch: device_bytes (blocks handed out or cached) does not
    # grow with the number of batches: it stays under what the buffer can
    # hold, which a leak of 4 MiB a batch passes within the epoch. (Under
    # AUTOTUNE the buffer may grow when the loop waits: the tuner, not a
    # leak, so the two halves are shown but not compared.)
    n = ctx.cfg["long_batches"]
    for buffer_size, label in ((2, "buffer 2"), (None, "AUTOTUNE")):
        long_ds = counting_pipeline(n, 4).apply(cvx.prefetch_to_device(ctx.device, buffer_size))
        it, raw = device_iterator(long_ds)
        samples = []
        for i, x in enumerate(it):
            del x
            if i % 10 == 0:
                samples.append(raw()["device_bytes"])
        del it
        fw.release_caches()
        half = len(samples) // 2
        first, second = max(samples[:half] or [0]), max(samples[half:] or [0])
        # buffer (AUTOTUNE: at most 16), a ring of 2, the batch in hand and
        # the one being made, doubled for the allocator's size classes.
        bound = ((buffer_size or 16) + 2 + 2) * 4 * MiB * 2
        ok = second <= bound
        report.check(S, f"device_bytes stays bounded over one epoch of {n} batches of 4 MiB ({label})",
                     ok, f"most in the first half {first / MiB:.0f} MiB, in the second "
                     f"{second / MiB:.0f} MiB (at most {bound / MiB:.0f})")
        figures[f"long_epoch_device_bytes ({label})"] = samples


def section_correctness(ctx, report, budget):
    check_values(ctx, report, budget)
    check_streams(ctx, report, budget)
    check_memory(ctx, report, budget)
    check_errors(ctx, report)


def check_errors(ctx, report):
    """The documented refusals (docs/device.md)."""
    S = "correctness"
    ds = cv.data.Dataset.range(4).batch(2).apply(cvx.prefetch_to_device(ctx.device))
    try:
        ds.map(lambda x: x)
        report.check(S, "a transformation after prefetch_to_device is refused", False, "accepted")
    except cv.errors.InvalidArgumentError:
        report.check(S, "a transformation after prefetch_to_device is refused", True)
    x = next(iter(ds))
    if ctx.kind == cvdev.CUDA:
        try:
            x.__dlpack__(copy=True)
            report.check(S, "__dlpack__(copy=True) of a CUDA array is refused", False, "accepted")
        except BufferError:
            report.check(S, "__dlpack__(copy=True) of a CUDA array is refused", True)
        try:
            it = iter(cv.data.Dataset.range(2).apply(cvx.prefetch_to_device(f"cuda:{cvdev.cuda_device_count()}")))
            next(it)
            report.check(S, "a device index past the last device is refused", False, "accepted")
        except cv.errors.InvalidArgumentError as e:
            report.check(S, "a device index past the last device is refused", True, str(e))
    else:
        c = x.__dlpack__(copy=True)
        report.check(S, "__dlpack__(copy=True) of a host array gives a capsule", c is not None)


# --------------------------------------------------------------------------- c. bandwidth

def section_bandwidth(ctx, report, budget):
    S = "bandwidth"
    fig = report.figures.setdefault(S, {})
    cfg = ctx.cfg
    fw = ctx.fw
    limit = [cvdev.copy_bandwidth(ctx.device, cfg["bw_bytes"], cfg["bw_repeats"])
             for _ in range(cfg["bw_rounds"])]
    fig["copy_bandwidth"] = summary(limit)
    fig["copy_bandwidth_bytes"] = cfg["bw_bytes"]
    print(f"  limit: conveyor.device.copy_bandwidth({ctx.device!r}, {cfg['bw_bytes'] // MiB} MiB, "
          f"{cfg['bw_repeats']}) {gbps(fig['copy_bandwidth'])}"
          + ("  (the host device: memcpy)" if ctx.kind != cvdev.CUDA else "  (page-locked H2D)"))
    if fw.torch is not None and ctx.kind == cvdev.CUDA:
        torch = fw.torch
        pinned = torch.ones(cfg["bw_bytes"], dtype=torch.uint8).pin_memory()
        y = [pinned.to(fw.torch_device, non_blocking=True) for _ in range(2)]  # the allocator's 2 blocks
        rates = []
        for _ in range(cfg["bw_rounds"]):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(cfg["bw_repeats"]):
                y = pinned.to(fw.torch_device, non_blocking=True)  # the previous y's block comes back
            end.record()
            end.synchronize()
            rates.append(cfg["bw_bytes"] * cfg["bw_repeats"] / (start.elapsed_time(end) / 1e3))
        del pinned, y
        fw.release_caches()
        fig["torch_pinned_to"] = summary(rates)
        print(f"  reference: torch pinned .to({fw.torch_device}, non_blocking=True) "
              f"{gbps(fig['torch_pinned_to'])}")
    # The stage packs each element into a page-locked slot with one memcpy on one thread.
    shape = (64, 224, 224, 3)
    batch = np.random.default_rng(1).random(shape, dtype=np.float32)
    nbytes = batch.nbytes
    dst = np.empty_like(batch)
    np.copyto(dst, batch)
    rates = []
    for _ in range(5):
        t0 = now()
        for _ in range(3):
            np.copyto(dst, batch)
        rates.append(3 * nbytes / (now() - t0))
    del dst
    fig["memcpy_one_thread"] = summary(rates)
    print(f"  one-thread memcpy of a {nbytes / MiB:.1f} MiB batch (how the stage fills its ring): "
          f"{gbps(fig['memcpy_one_thread'])}")
    ds = cv.data.Dataset.from_tensors(batch).repeat().apply(cvx.prefetch_to_device(ctx.device))
    sync = stage_sync(ctx)
    variants = [("take only", None)]
    if fw.torch is not None:
        variants.append(("torch.from_dlpack + op", "torch"))
    fig["stage"] = {}
    for vname, how in variants:
        if budget.over():
            print(f"  {vname}: skipped (time budget spent)")
            continue
        it, raw = device_iterator(ds)
        for _ in range(3):  # warm-up: the ring, the block cache, AUTOTUNE
            consume(fw, next(it), how)
        sync()
        rates = []
        node0 = raw()
        for r in range(ctx.cfg["stage_rounds"]):
            if r >= 5 and budget.over():
                break
            t0 = now()
            for _ in range(cfg["stage_batches"]):
                consume(fw, next(it), how)
            sync()
            rates.append(cfg["stage_batches"] * nbytes / (now() - t0))
        node = raw()
        del it
        fw.release_caches()
        engine_rate = ((node["copy_bytes"] - node0["copy_bytes"]) / ((node["copy_ns"] - node0["copy_ns"]) / 1e9)
                       if node["copy_ns"] > node0["copy_ns"] else None)
        s = summary(rates)
        ratio = s["median"] / fig["copy_bandwidth"]["median"]
        fig["stage"][vname] = {"rates": s, "ratio_to_limit": ratio,
                               "ratio_min_to_limit": s["min"] / fig["copy_bandwidth"]["median"],
                               "engine_copy_rate": engine_rate, "batch_bytes": nbytes,
                               "ring_slots": node["ring_slots"], "staging_bytes": node["staging_bytes"],
                               "device_bytes": node["device_bytes"], "rounds": len(rates)}
        met = "met" if ratio >= GOAL_STAGE_VS_LIMIT else "MISSED"
        print(f"  prefetch_to_device, {vname}: {gbps(s)} over {len(rates)} rounds of "
              f"{cfg['stage_batches']} x {nbytes / MiB:.1f} MiB; / limit {ratio:.2f} "
              f"(min {s['min'] / fig['copy_bandwidth']['median']:.2f}; goal >= {GOAL_STAGE_VS_LIMIT}: {met}); "
              f"copies timed by the engine {compact(engine_rate) if engine_rate else '-'}B/s")
        report.row(f"device stage GB/s, {vname}", gbps(s), f"/ limit {ratio:.2f} (goal >= 0.8: {met})")
    report.row("copy_bandwidth (the limit)", gbps(fig["copy_bandwidth"]),
               "memcpy (host device)" if ctx.kind != cvdev.CUDA else "page-locked H2D")
    if "torch_pinned_to" in fig:
        report.row("torch pinned .to(device)", gbps(fig["torch_pinned_to"]), "reference")
    report.row("one-thread memcpy", gbps(fig["memcpy_one_thread"]), "the ring's packing copy")


def stage_sync(ctx):
    """Wait for every copy issued so far (the end of a timed window)."""
    if ctx.kind != cvdev.CUDA:
        return lambda: None
    if ctx.fw.torch is not None:
        return ctx.fw.torch_sync
    return CudaRuntime(cvdev.cuda_info()["library"], ctx.index).synchronize


def consume(fw, x, how):
    if how == "torch":
        t = fw.torch.from_dlpack(x)
        t.view(-1)[:1].mul(2)  # a trivial kernel reading the batch


# --------------------------------------------------------------------------- d. JPEG

class Step:
    """The dummy training step: a matmul loop of about `ms` on the GPU (torch,
    else cupy), else a sleep; it reads the batch when it has one."""

    def __init__(self, ctx, ms):
        self.ms = ms
        fw = ctx.fw
        self.kind = "sleep"
        if ctx.kind == cvdev.CUDA and fw.torch is not None:
            self.kind = "torch"
            torch = fw.torch
            self.dev = fw.torch_device
            self.a = torch.randn(4096, 4096, device=self.dev)
            self.out = torch.empty_like(self.a)
            self.sync = fw.torch_sync
            self.mm = lambda: torch.mm(self.a, self.a, out=self.out)
        elif ctx.kind == cvdev.CUDA and fw.cupy is not None:
            self.kind = "cupy"
            cupy = fw.cupy
            self.a = cupy.random.random((4096, 4096), dtype=cupy.float32)
            self.out = cupy.empty_like(self.a)
            self.sync = cupy.cuda.get_current_stream().synchronize
            self.mm = lambda: cupy.matmul(self.a, self.a, out=self.out)
        if self.kind != "sleep":  # calibrate: k matmuls of about `ms`
            self.k = 3
            self(None)
            self.k = 10
            t0 = now()
            self(None)
            self.k = max(1, round(ms / 1e3 / ((now() - t0) / 10)))
            t0 = now()
            self(None)
            self.ms = (now() - t0) * 1e3

    def __call__(self, x):
        if self.kind == "sleep":
            time.sleep(self.ms / 1e3)
            return
        if x is not None:
            x.sum()
        for _ in range(self.k):
            self.mm()
        self.sync()


def section_jpeg(ctx, report, budget):
    S = "jpeg"
    fig = report.figures.setdefault(S, {})
    fw = ctx.fw
    sys.path.insert(0, HERE)
    import images  # benchmarks/images.py: the files and the pipeline
    count = ctx.args.files or ctx.cfg["files"]
    folder = os.path.join(tempfile.gettempdir(), "conveyor-bench-images", str(count))
    t0 = now()
    paths, origin = images.make_files(folder, count)
    pattern = os.path.join(folder, "*.jpg")
    print(f"  {len(paths)} JPEGs in {folder} (from {origin}; {now() - t0:.1f} s)")
    step = Step(ctx, ctx.args.step_ms or ctx.cfg["step_ms"])
    fig["step"] = {"kind": step.kind, "ms": step.ms}
    print(f"  training step: {step.kind}, {step.ms:.1f} ms"
          + (f" ({step.k} matmuls of 4096x4096 float32)" if step.kind != "sleep" else ""))
    host = images.pipeline(cv, pattern, True)
    on_device = host.apply(cvx.prefetch_to_device(ctx.device))
    variants = [("host batches", host, "none")]
    if ctx.kind == cvdev.CUDA and fw.torch is not None:
        variants.append(("host batches + torch .to(device)", host, "torch_to"))
    variants.append((f"prefetch_to_device({ctx.device!r})", on_device,
                     "dlpack" if step.kind != "sleep" else "none"))

    def epoch(ds, how):
        waited = 0.0
        n = 0
        start = now()
        it = iter(ds)
        while True:
            t = now()
            try:
                b = next(it)
            except StopIteration:
                waited += now() - t
                break
            x = None
            if how == "torch_to":
                x = fw.torch.from_numpy(b).to(fw.torch_device)
            elif how == "dlpack":
                x = fw.torch.from_dlpack(b) if step.kind == "torch" else fw.cupy.from_dlpack(b)
            waited += now() - t
            n += b.shape[0]
            step(x)
            del b, x
        elapsed = now() - start
        assert n == len(paths), (n, len(paths))
        return {"seconds": elapsed, "images_per_s": n / elapsed, "waited": waited,
                "input_bound": waited / elapsed}

    sampler = UtilSampler(ctx.nvml) if ctx.nvml is not None else None
    sampling = sampler.start() if sampler is not None else False
    rounds = ctx.args.rounds or ctx.cfg["rounds"]
    results = {name: [] for name, _, _ in variants}
    spans = {name: [] for name, _, _ in variants}
    try:
        for name, ds, how in variants:  # untimed warm-up
            epoch(ds, how)
        for r in range(rounds):
            if budget.over() and r >= 2:
                break
            for name, ds, how in variants:
                gc.collect()
                t = now()
                results[name].append(epoch(ds, how))
                spans[name].append((t, now()))
    finally:
        if sampling:
            sampler.stop()
    fig["files"] = len(paths)
    fig["variants"] = {}
    header = f"  {'variant':<40}{'images/s':>24}{'input-bound':>24}{'GPU util':>12}"
    print(header)
    for name, _, _ in variants:
        rs = results[name]
        if not rs:
            continue
        ips = summary([m["images_per_s"] for m in rs])
        bound = summary([m["input_bound"] for m in rs])
        utils = [sampler.mean(a, b) for a, b in spans[name]] if sampling else []
        utils = [u for u in utils if u is not None]
        util = statistics.mean(utils) if utils else None
        fig["variants"][name] = {"images_per_s": ips, "input_bound": bound, "gpu_util_mean": util,
                                 "gpu_util_per_round": utils, "rounds": rs}
        print(f"  {name:<40}{fmt_summary(ips):>24}{fmt_summary(bound, 100, '%'):>24}"
              f"{(f'{util:.0f}%' if util is not None else 'n/a'):>12}")
        report.row(f"JPEG {name}", f"{fmt_summary(ips)} images/s",
                   f"input-bound {fmt_summary(bound, 100, '%')}, GPU util "
                   + (f"{util:.0f}%" if util is not None else "n/a"))
    if not sampling:
        print(f"  (GPU utilisation: not sampled: {ctx.nvml.note.strip('; ') if ctx.nvml else 'no NVML'})")
    print(f"  ({len(paths)} images per epoch, batch 64; median [min-max] over "
          f"{len(next(iter(results.values())))} rounds; input-bound: the loop's wait for its batch, "
          f"conversion included / the epoch)")


# --------------------------------------------------------------------------- main

SECTIONS = [("environment", "a. environment", section_environment),
            ("correctness", "b. correctness", section_correctness),
            ("bandwidth", "c. bandwidth", section_bandwidth),
            ("jpeg", "d. JPEG workload", section_jpeg),
            ("pinned", "e. batches built in page-locked memory (gpu_pinned.py)",
             lambda ctx, report, budget: gpu_pinned.section_pinned(ctx, report, budget, sys.modules[__name__]))]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda:0",
                    help="'cuda:N' / '/gpu:N' (default cuda:0), or 'host': the device path on host memory")
    ap.add_argument("--quick", action="store_true", help="smaller sizes: about 1 minute")
    ap.add_argument("--json", metavar="PATH", help="write every figure and check here")
    ap.add_argument("--allow-no-gpu", action="store_true",
                    help="exit 0 (not 2) when CUDA is not available")
    ap.add_argument("--only", default="", help="comma-separated sections: " +
                    ",".join(k for k, _, _ in SECTIONS[1:]) + " (the environment always runs)")
    ap.add_argument("--files", type=int, default=0, help="JPEG files (default 1024, --quick 256)")
    ap.add_argument("--rounds", type=int, default=0, help="JPEG rounds (default 5)")
    ap.add_argument("--step-ms", type=float, default=0.0, help="training step (default 30, --quick 20)")
    args = ap.parse_args(argv)
    # TracingWarning, torch's read-only NumPy warning: noise in a report
    warnings.simplefilter("ignore")
    cfg = dict(QUICK if args.quick else FULL)
    total = sum(cfg["budget"].values())
    faulthandler.dump_traceback_later(total * 2 + 120, exit=True)  # never hang a GPU machine

    report = Report()
    ctx = types.SimpleNamespace(args=args, cfg=cfg, device=args.device, fw=None, nvml=None,
                                report=report, torch_device=None)
    try:
        ctx.kind, ctx.index = cvdev.parse_device(args.device)
    except (TypeError, ValueError) as e:
        print(f"--device: {e}")
        return 2
    if ctx.kind == cvdev.CPU:
        print("--device /cpu:0 leaves elements as NumPy arrays (no device path to check): "
              "use 'host' or a CUDA device")
        return 2
    ctx.array_device = f"cuda:{ctx.index}" if ctx.kind == cvdev.CUDA else "cpu:0"
    only = {s for s in args.only.split(",") if s}
    started = now()
    print(f"conveyor gpu_check: device {args.device}{' (quick)' if args.quick else ''}")

    exit_code = 0
    for key, title, fn in SECTIONS:
        if key != "environment" and only and key not in only:
            continue
        print(f"\n{title}", flush=True)
        budget = Budget(cfg["budget"][key])
        t0 = now()
        try:
            fn(ctx, report, budget)
        except Exception:
            text = traceback.format_exc()
            report.errors[key] = text
            print("  " + "\n  ".join(text.rstrip().splitlines()))
            print(f"  {title}: FAILED with the error above"
                  + ("" if key == "correctness" else " (reported; the script goes on)"))
        if budget.cut:
            print(f"  (cut short: the section's {cfg['budget'][key]} s budget was spent)")
        print(f"  [{title}: {now() - t0:.1f} s]", flush=True)
        if key == "environment":
            if ctx.fw is not None:
                ctx.torch_device = getattr(ctx.fw, "torch_device", None)
            if ctx.kind == cvdev.CUDA:
                reason = cuda_unavailable(ctx)
                if reason:
                    print(f"\nCUDA not available: {reason}")
                    exit_code = 0 if args.allow_no_gpu else 2
                    report.figures["cuda_unavailable"] = reason
                    break

    if not report.figures.get("cuda_unavailable"):
        failed = report.failed("correctness")
        if failed or "correctness" in report.errors:
            exit_code = 1
        print_summary(report, now() - started, exit_code)
    if args.json:
        out = {"args": vars(args), "config": cfg, "exit_code": exit_code,
               "seconds": now() - started, "checks": report.checks, "figures": report.figures,
               "summary": [{"figure": f, "value": v, "note": n} for f, v, n in report.summary_rows],
               "errors": report.errors}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=lambda o: o.item() if hasattr(o, "item") else repr(o))
        print(f"wrote {args.json}")
    faulthandler.cancel_dump_traceback_later()
    return exit_code


def cuda_unavailable(ctx):
    """'' when the CUDA device can be used, else why not."""
    try:
        cvdev.load_cuda()
    except cv.errors.UnavailableError as e:
        return str(e).replace("CUDA is not available: ", "", 1)
    count = cvdev.cuda_device_count()
    if ctx.index >= count:
        return f"device cuda:{ctx.index} does not exist: this machine has {count} CUDA device(s)"
    return ""


def print_summary(report, seconds, exit_code):
    print("\nf. summary")
    counts = {}
    for c in report.checks:
        counts[c["status"]] = counts.get(c["status"], 0) + 1
    checks = ", ".join(f"{counts[k]} {k}" for k in ("ok", "FAIL", "warn", "skip") if k in counts)
    rows = [("correctness checks", checks or "none", "")]
    rows += report.summary_rows
    for key, _ in report.errors.items():
        rows.append((f"section {key}", "ERROR", "see its traceback above"))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    for figure, value, note in rows:
        print(f"  {figure:<{w0}}  {value:<{w1}}  {note}")
    for c in report.failed():
        print(f"  FAILED: {c['name']}: {c['detail']}")
    print(f"  {seconds:.0f} s; exit status {exit_code}"
          + (" (a correctness check failed)" if exit_code == 1 else ""))


if __name__ == "__main__":
    sys.exit(main())
