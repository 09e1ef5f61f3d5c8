#!/usr/bin/env python3
"""Shuffle + batch over a cache, conveyor vs tf.data (workload W6 of
shared/reference/perf-anchors.md):

    from_tensor_slices((x, y)).cache().shuffle(10_000, seed=1)
        .batch(256, drop_remainder=True).prefetch(2)            5 epochs

with x float32 [1,000,000 x 32] (128 MB) and y int64 [1,000,000]. Each
library runs in its own fresh process, so its peak RSS (ru_maxrss) is its
own; the figures are samples/s of epoch 1 (which fills the cache) and the
median of epochs 2-5 (which replay it), GB/s of batches delivered, CPU time
per sample in epochs 2-5 (all threads; steadier than wall time on a busy
machine), and peak RSS (VmHWM), with the ratios conveyor / tf.data. A second pair of runs caches to a
file (`cache(filename)`) and compares the epochs that read the file with the
first one, which writes it. A NumPy reference runs the same work by hand
(a fresh permutation of the rows per epoch, then x[idx], y[idx] per batch of
256): the random gather that a shuffle+batch must do, so conveyor / NumPy
is the ratio to the machine's limit for this workload.

    python benchmarks/cache.py             # full size
    python benchmarks/cache.py --quick     # 200,000 samples, 3 epochs
    python benchmarks/cache.py --no-tf

conveyor's runs check every epoch: each sample index comes at most once and
all but the dropped remainder come. Timings are printed, never asserted.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

FEATURES = 32
BATCH = 256
BUFFER = 10_000
GOAL_SAMPLES_PER_S = 5e6


def rss_mb():
    """Peak RSS of this process image (VmHWM; ru_maxrss would include the parent's
    RSS at fork time)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def worker(lib, n, epochs, mode, folder):
    """Run the pipeline in this process; print one JSON line of measurements."""
    import numpy as np
    rng = np.random.default_rng(0)
    x = rng.random((n, FEATURES), dtype=np.float32)
    y = np.arange(n, dtype=np.int64)
    if lib == "numpy":
        numpy_reference(x, y, n, epochs)
        return
    if lib == "tf":
        import tensorflow as mod
    else:
        import conveyor as mod
        mod.data.experimental.cache_progress(False)
    base_rss = rss_mb()
    filename = os.path.join(folder, f"{lib}-cache") if mode == "file" else ""
    t0 = time.perf_counter()
    ds = (mod.data.Dataset.from_tensor_slices((x, y)).cache(filename)
          .shuffle(BUFFER, seed=1, reshuffle_each_iteration=True)
          .batch(BATCH, drop_remainder=True).prefetch(2))
    build_s = time.perf_counter() - t0
    del x  # the pipeline holds its own copy of the data in both libraries
    expected = (n // BATCH) * BATCH
    times, cpu, checks = [], [], []
    for _ in range(epochs):
        seen = np.zeros(n, np.int8) if lib == "conveyor" else None
        count = 0
        t, c = time.perf_counter(), cpu_s()
        for xb, yb in ds:
            count += len(yb)
            if seen is not None:
                seen[yb] += 1
        times.append(time.perf_counter() - t)
        cpu.append(cpu_s() - c)
        if seen is not None:
            checks.append(bool(count == expected and seen.max() == 1 and seen.sum() == expected))
    print(json.dumps({"lib": lib, "mode": mode, "n": n, "epoch_s": times, "epoch_cpu_s": cpu,
                      "build_s": build_s,
                      "samples": expected, "base_rss_mb": base_rss, "peak_rss_mb": rss_mb(),
                      "checks": checks}))


def numpy_reference(x, y, n, epochs):
    """W6 by hand: per epoch a permutation, then each full batch gathered."""
    import numpy as np
    rng = np.random.default_rng(1)
    expected = (n // BATCH) * BATCH
    times, cpu = [], []
    for _ in range(epochs):
        t, c = time.perf_counter(), cpu_s()
        perm = rng.permutation(n)
        for i in range(0, expected, BATCH):
            idx = perm[i:i + BATCH]
            x[idx], y[idx]
        times.append(time.perf_counter() - t)
        cpu.append(cpu_s() - c)
    print(json.dumps({"lib": "numpy", "mode": "memory", "n": n, "epoch_s": times,
                      "epoch_cpu_s": cpu, "build_s": 0.0, "samples": expected,
                      "base_rss_mb": rss_mb(), "peak_rss_mb": rss_mb(), "checks": []}))


def run_worker(lib, args, mode, folder):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", lib, "--mode", mode,
           "--n", str(args.n), "--epochs", str(args.epochs), "--folder", folder]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        print(f"{lib} ({mode}) failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
        return None
    return json.loads(lines[-1])


def figures(r):
    rates = [r["samples"] / t for t in r["epoch_s"]]
    later = rates[1:] or rates
    cpu = r["epoch_cpu_s"][1:] or r["epoch_cpu_s"]
    return {"first": rates[0], "later": statistics.median(later), "later_min": min(later),
            "later_max": max(later), "gbps": statistics.median(later) * (FEATURES * 4 + 8) / 1e9,
            "cpu_ns": statistics.median(cpu) / r["samples"] * 1e9,
            "rss": r["peak_rss_mb"], "base": r["base_rss_mb"]}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-tf", action="store_true")
    p.add_argument("--n", type=int, default=None)
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--json", default=None)
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    p.add_argument("--mode", default="memory", help=argparse.SUPPRESS)
    p.add_argument("--folder", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    args.n = args.n or (200_000 if args.quick else 1_000_000)
    args.epochs = args.epochs or (3 if args.quick else 5)
    if args.worker:
        worker(args.worker, args.n, args.epochs, args.mode, args.folder)
        return 0
    libs = ["conveyor"]
    if not args.no_tf:
        import importlib.util  # not imported here: the workers must not inherit its memory
        if importlib.util.find_spec("tensorflow") is not None:
            libs.append("tf")
        else:
            print("tf.data is not installed: conveyor only")
    results = {}
    with tempfile.TemporaryDirectory(prefix="conveyor-bench-cache-") as folder:
        for mode in ("memory", "file"):
            for lib in libs:
                results[(lib, mode)] = run_worker(lib, args, mode, folder)
        results[("numpy", "memory")] = run_worker("numpy", args, "memory", folder)
    ok = True
    print(f"W6: from_tensor_slices(({args.n:,} x {FEATURES} float32, int64)).cache(...)"
          f".shuffle({BUFFER:,}).batch({BATCH}, drop_remainder=True).prefetch(2), "
          f"{args.epochs} epochs, each library in its own process\n")
    print(f"{'':22}{'epoch 1':>14}{'epochs 2+ median [min-max]':>36}{'GB/s':>7}"
          f"{'CPU ns/sample':>15}{'peak RSS':>11}{'(data+import)':>15}")
    for mode in ("memory", "file"):
        for lib in libs + (["numpy"] if mode == "memory" else []):
            r = results[(lib, mode)]
            if r is None:
                ok = False
                continue
            f = figures(r)
            label = "numpy permute+gather" if lib == "numpy" else (
                lib + " cache(" + ("" if mode == "memory" else "file") + ")")
            print(f"{label:22}"
                  f"{f['first'] / 1e6:>10.2f} M/s"
                  f"{f['later'] / 1e6:>14.2f} M/s [{f['later_min'] / 1e6:.2f}-{f['later_max'] / 1e6:.2f}]"
                  f"{f['gbps']:>10.2f}{f['cpu_ns']:>12.0f}{f['rss']:>12.0f} MB{f['base']:>11.0f} MB")
            if r["checks"] and not all(r["checks"]):
                print(f"  CHECK FAILED: {lib} {mode}: an epoch lost or repeated samples")
                ok = False
    print()
    for mode in ("memory", "file"):
        c, t = results.get(("conveyor", mode)), results.get(("tf", mode))
        if c:
            fc = figures(c)
            note = "meets" if fc["later"] >= GOAL_SAMPLES_PER_S else "below"
            print(f"{mode}: conveyor epochs 2+ {fc['later'] / 1e6:.2f} M samples/s ({note} the "
                  f"{GOAL_SAMPLES_PER_S / 1e6:.0f} M/s goal); replay / first epoch "
                  f"{fc['later'] / fc['first']:.2f}x")
        if c and t:
            fc, ft = figures(c), figures(t)
            print(f"{mode}: conveyor / tf.data: throughput epochs 2+ {fc['later'] / ft['later']:.2f}x, "
                  f"epoch 1 {fc['first'] / ft['first']:.2f}x, CPU per sample "
                  f"{ft['cpu_ns'] / fc['cpu_ns']:.2f}x less, peak RSS {fc['rss'] / ft['rss']:.2f}x "
                  f"({'<=' if fc['rss'] <= ft['rss'] else '>'} tf.data's: goal <=)")
    c, n_ref = results.get(("conveyor", "memory")), results.get(("numpy", "memory"))
    if c and n_ref:
        r = figures(c)["later"] / figures(n_ref)["later"]
        print(f"memory: conveyor / NumPy permute+gather (the limit): {r:.2f}x "
              f"(goal >= 0.5: {'met' if r >= 0.5 else 'missed'})")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({f"{k[0]}-{k[1]}": v for k, v in results.items()}, fh, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
