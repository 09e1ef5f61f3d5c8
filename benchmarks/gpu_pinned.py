"""gpu_check.py's section e: batches built in page-locked memory (issue 30).

1. The device stage's rate on batches the batch stage builds in page-locked
   memory (``from_tensor_slices(rows).repeat().batch(n, AUTOTUNE)`` into
   ``prefetch_to_device``: one asynchronous copy per batch, no staging
   memcpy), against ``conveyor.device.copy_bandwidth`` (goal >= 0.8), with
   the stage's counters (batches built in place, staged copies).
2. The JPEG loop of benchmarks/images.py through ``prefetch_to_device`` with
   a training step of 19 ms: images/s, the input-bound share (the loop's
   wait for its batch / the epoch) and the GPU-busy share (NVML utilisation
   while the epoch ran; without NVML, the steps' share of the epoch), goal
   busy > 80%; float32 batches normalised on the host, and uint8 batches
   (4x fewer bytes over the bus) normalised on the device.

Run by gpu_check.py (``--only pinned``); `g` is that module: its Step,
summary and printing helpers.
"""
import gc
import os
import statistics
import sys
import tempfile

import numpy as np

import conveyor as cv
import conveyor.device as cvdev
from conveyor.data import experimental as cvx

MiB = 1 << 20
GOAL_STAGE_VS_LIMIT = 0.8
GOAL_GPU_BUSY = 0.8
STEP_MS = 19.0


def stage_figures(it):
    for s in it.stats().stages:
        if s.kernel == "PrefetchToDevice":
            return s
    return None


def in_place_rate(ctx, report, budget, g, fig):
    cfg = ctx.cfg
    limit = report.figures.get("bandwidth", {}).get("copy_bandwidth")
    if limit is None:
        limit = g.summary([cvdev.copy_bandwidth(ctx.device, cfg["bw_bytes"], cfg["bw_repeats"])
                           for _ in range(cfg["bw_rounds"])])
    rows = 64 if not ctx.args.quick else 16
    data = np.random.default_rng(2).random((rows, 224, 224, 3), dtype=np.float32)
    nbytes = data.nbytes
    ds = (cv.data.Dataset.from_tensor_slices(data).repeat().batch(rows, num_parallel_calls=cv.data.AUTOTUNE)
          .apply(cvx.prefetch_to_device(ctx.device)))
    sync = g.stage_sync(ctx)
    it = iter(ds)
    for _ in range(3):  # warm-up: the pinned pool, the block cache, AUTOTUNE
        next(it)
    sync()
    first = stage_figures(it)
    rates = []
    for r in range(cfg["stage_rounds"]):
        if r >= 5 and budget.over():
            break
        t0 = g.now()
        for _ in range(cfg["stage_batches"]):
            next(it)
        sync()
        rates.append(cfg["stage_batches"] * nbytes / (g.now() - t0))
    st = stage_figures(it)
    del it
    gc.collect()
    s = g.summary(rates)
    ratio = s["median"] / limit["median"]
    engine = ((st.copy_bytes - first.copy_bytes) / (st.copy_time - first.copy_time)
              if st.copy_time > first.copy_time else None)
    fig["stage_in_place"] = {
        "rates": s, "limit": limit, "ratio_to_limit": ratio, "ratio_min_to_limit": s["min"] / limit["median"],
        "engine_copy_rate": engine, "batch_bytes": nbytes, "rounds": len(rates),
        "inplace_batches": st.inplace_batches, "inplace_bytes": st.inplace_bytes,
        "staged_copies": st.staged_copies, "staged_bytes": st.staged_bytes}
    met = "met" if ratio >= GOAL_STAGE_VS_LIMIT else "MISSED"
    print(f"  prefetch_to_device, batches built in page-locked memory: {g.gbps(s)} over {len(rates)} "
          f"rounds of {cfg['stage_batches']} x {nbytes / MiB:.1f} MiB; / limit {ratio:.2f} "
          f"(goal >= {GOAL_STAGE_VS_LIMIT}: {met}); copies timed by the engine "
          f"{g.compact(engine) if engine else '-'}B/s; {st.inplace_batches:,} batches in place "
          f"({st.inplace_bytes / 1e9:.2f} GB of host copies avoided), {st.staged_copies:,} staged")
    report.row("device stage GB/s, in-place batches", g.gbps(s), f"/ limit {ratio:.2f} (goal >= 0.8: {met})")
    report.check("pinned", "in-place batches: no staging copy", st.staged_copies == 0 and st.inplace_batches > 0,
                 f"{st.inplace_batches} in place, {st.staged_copies} staged")


def jpeg_pipeline(pattern, uint8):
    def fn(f):
        image = cv.image.resize(cv.io.decode_jpeg(cv.io.read_file(f), channels=3), [224, 224])
        return cv.cast(image, cv.uint8) if uint8 else image / 255.0
    ds = cv.data.Dataset.list_files(pattern, shuffle=False)
    return ds.map(fn, num_parallel_calls=cv.data.AUTOTUNE).batch(64).prefetch(cv.data.AUTOTUNE)


def normaliser(ctx, step, uint8):
    """What the loop does with a batch before the step: take it (DLPack) and, for
    uint8, normalise it on the device (torch / CuPy; on the host kind, NumPy)."""
    fw = ctx.fw
    if step.kind == "torch":
        torch = fw.torch
        return (lambda b: torch.from_dlpack(b).float().div_(255.0)) if uint8 else torch.from_dlpack
    if step.kind == "cupy":
        cupy = fw.cupy
        return (lambda b: cupy.from_dlpack(b).astype(cupy.float32) / 255.0) if uint8 else cupy.from_dlpack
    if uint8 and ctx.kind != cvdev.CUDA:  # the host kind: the "device" is the host
        return lambda b: np.from_dlpack(b).astype(np.float32) / 255.0
    return lambda b: None  # no framework to take it (a fake runtime, or none usable)


def jpeg_loop(ctx, report, budget, g, fig):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import images  # benchmarks/images.py: the files
    count = ctx.args.files or ctx.cfg["files"]
    folder = os.path.join(tempfile.gettempdir(), "conveyor-bench-images", str(count))
    paths, _ = images.make_files(folder, count)
    pattern = os.path.join(folder, "*.jpg")
    step = g.Step(ctx, STEP_MS)
    fig["step"] = {"kind": step.kind, "ms": step.ms}
    print(f"  training step: {step.kind}, {step.ms:.1f} ms")
    variants = [(f"float32 batches, {ctx.device}", False), (f"uint8 batches, normalised on {ctx.device}", True)]

    def epoch(ds, prepare):
        waited = stepping = 0.0
        n = 0
        start = g.now()
        it = iter(ds)
        while True:
            t = g.now()
            try:
                b = next(it)
            except StopIteration:
                waited += g.now() - t
                break
            x = prepare(b)
            t1 = g.now()
            waited += t1 - t
            n += b.shape[0]
            step(x)
            stepping += g.now() - t1
            del b, x
        st = stage_figures(it)
        elapsed = g.now() - start
        assert n == len(paths), (n, len(paths))
        return {"seconds": elapsed, "images_per_s": n / elapsed, "input_bound": waited / elapsed,
                "step_share": stepping / elapsed, "copy_bytes": st.copy_bytes,
                "inplace_batches": st.inplace_batches, "staged_copies": st.staged_copies}

    sampler = g.UtilSampler(ctx.nvml) if ctx.nvml is not None else None
    sampling = sampler.start() if sampler is not None else False
    datasets = [(name, jpeg_pipeline(pattern, u8).apply(cvx.prefetch_to_device(ctx.device)),
                 normaliser(ctx, step, u8)) for name, u8 in variants]
    results = {name: [] for name, _, _ in datasets}
    spans = {name: [] for name, _, _ in datasets}
    try:
        for _, ds, prepare in datasets:  # untimed warm-up
            epoch(ds, prepare)
        for r in range(ctx.args.rounds or ctx.cfg["rounds"]):
            if budget.over() and r >= 2:
                break
            for name, ds, prepare in datasets:
                gc.collect()
                t = g.now()
                results[name].append(epoch(ds, prepare))
                spans[name].append((t, g.now()))
    finally:
        if sampling:
            sampler.stop()
    fig["jpeg"] = {}
    for name, _, _ in datasets:
        rs = results[name]
        ips = g.summary([m["images_per_s"] for m in rs])
        bound = g.summary([m["input_bound"] for m in rs])
        utils = [u for u in ([sampler.mean(a, b) for a, b in spans[name]] if sampling else []) if u is not None]
        busy = statistics.mean(utils) / 100.0 if utils else statistics.median(m["step_share"] for m in rs)
        how = "NVML utilisation" if utils else "steps' share of the epoch (no NVML)"
        met = "met" if busy > GOAL_GPU_BUSY else "MISSED"
        fig["jpeg"][name] = {"images_per_s": ips, "input_bound": bound, "gpu_busy": busy,
                             "gpu_busy_from": how, "rounds": rs}
        print(f"  {name}: {g.fmt_summary(ips)} images/s, input-bound {g.fmt_summary(bound, 100, '%')}, "
              f"GPU busy {busy:.0%} ({how}; goal > {GOAL_GPU_BUSY:.0%}: {met}); "
              f"{rs[-1]['copy_bytes'] / 1e6:.0f} MB over the bus per epoch, "
              f"{rs[-1]['inplace_batches']} batches in place, {rs[-1]['staged_copies']} staged")
        report.row(f"JPEG {STEP_MS:.0f} ms step, {name}", f"{g.fmt_summary(ips)} images/s",
                   f"input-bound {g.fmt_summary(bound, 100, '%')}, GPU busy {busy:.0%} (goal > 80%: {met})")


def section_pinned(ctx, report, budget, g):
    fig = report.figures.setdefault("pinned", {})
    in_place_rate(ctx, report, budget, g, fig)
    if budget.over():
        print("  JPEG loop: skipped (time budget spent)")
        return
    jpeg_loop(ctx, report, budget, g, fig)
