#!/usr/bin/env python3
"""Shuffle + batch over a cache (issue 11): conveyor's fused kernel, the same
pipeline unfused, tf.data, and NumPy permuting the rows and gathering batches:

    from_tensor_slices(x).cache().shuffle(100_000, seed=1).batch(256)
    x: float32 [1,000,000 x 32] (128 MB)

Variants, each in its own fresh process (so no library's memory or threads
disturb another's):

  conveyor            the default: shuffle+batch run as one kernel (ShuffleBatch)
  conveyor unfused    options.experimental_optimization.shuffle_and_batch_fusion = False
  conveyor no shuffle from_tensor_slices(x).cache().batch(256): what shuffling adds
  tf.data             the same pipeline
  numpy               perm = rng.permutation(n); x[perm[i:i + 256]] for each batch: a
                      random gather of the same rows, the reference the issue sets
                      (goal: conveyor >= 0.5x of it)

Each process runs --epochs epochs (default 6): the first fills the cache (NumPy:
a warm-up) and is shown apart; the others are the rounds, shown as samples/s
median [min-max] and CPU ns per sample (all threads). Ratios are of medians.
With --repeat k the whole set runs k times, in alternating order. conveyor's
epochs are checked to be permutations of the rows (untimed). Timings are
printed, never asserted.

    python benchmarks/shuffle.py              # full size
    python benchmarks/shuffle.py --quick      # 200,000 rows, buffer 20,000, 4 epochs
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

FEATURES = 32
BATCH = 256
VARIANTS = ("conveyor", "conveyor unfused", "conveyor no shuffle", "tf.data", "numpy")


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def worker(variant, n, buffer_size, epochs):
    """Run one variant in this process; print one JSON line of measurements."""
    import numpy as np
    x = np.random.default_rng(0).random((n, FEATURES), dtype=np.float32)
    times, cpu, checks = [], [], []
    if variant == "numpy":
        rng = np.random.default_rng(1)
        for _ in range(epochs):
            t, c = time.perf_counter(), cpu_s()
            perm = rng.permutation(n)
            for i in range(0, n - BATCH + 1, BATCH):
                x[perm[i:i + BATCH]]
            if n % BATCH:
                x[perm[n - n % BATCH:]]
            times.append(time.perf_counter() - t)
            cpu.append(cpu_s() - c)
    else:
        if variant == "tf.data":
            import tensorflow as mod
        else:
            import conveyor as mod
            mod.data.experimental.cache_progress(False)
        ds = mod.data.Dataset.from_tensor_slices(x).cache()
        if variant != "conveyor no shuffle":
            ds = ds.shuffle(buffer_size, seed=1)
        ds = ds.batch(BATCH)
        if variant == "conveyor unfused":
            options = mod.data.Options()
            options.experimental_optimization.shuffle_and_batch_fusion = False
            ds = ds.with_options(options)
        check = variant.startswith("conveyor")
        first_col = x[:, 0].copy()
        for _ in range(epochs):
            got = [] if check else None
            t, c = time.perf_counter(), cpu_s()
            for b in ds:
                if got is not None:
                    got.append(b[:, 0].copy())  # a few µs per batch, timed in every variant alike
            times.append(time.perf_counter() - t)
            cpu.append(cpu_s() - c)
            if got is not None:
                checks.append(bool(np.array_equal(np.sort(np.concatenate(got)),
                                                  np.sort(first_col))))
    print(json.dumps({"variant": variant, "n": n, "epoch_s": times, "epoch_cpu_s": cpu,
                      "checks": checks}))


def run_worker(variant, args):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", variant, "--n", str(args.n),
           "--buffer", str(args.buffer), "--epochs", str(args.epochs)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        print(f"{variant} failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
        return None
    return json.loads(lines[-1])


def summary(results):
    """Rates (samples/s) of the rounds of all runs of a variant, and the first epochs."""
    rates, first, cpu = [], [], []
    for r in results:
        epoch_rates = [r["n"] / t for t in r["epoch_s"]]
        first.append(epoch_rates[0])
        rates += epoch_rates[1:]
        cpu += [c / r["n"] * 1e9 for c in r["epoch_cpu_s"][1:]]
    return {"median": statistics.median(rates), "min": min(rates), "max": max(rates),
            "rounds": len(rates), "first": statistics.median(first),
            "cpu_ns": statistics.median(cpu)}


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-tf", action="store_true")
    p.add_argument("--n", type=int, default=None)
    p.add_argument("--buffer", type=int, default=None)
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--json", default=None)
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    args.n = args.n or (200_000 if args.quick else 1_000_000)
    args.buffer = args.buffer or (20_000 if args.quick else 100_000)
    args.epochs = max(2, args.epochs or (4 if args.quick else 6))
    if args.worker:
        worker(args.worker, args.n, args.buffer, args.epochs)
        return 0
    variants = list(VARIANTS)
    if args.no_tf:
        variants.remove("tf.data")
    else:
        import importlib.util  # not imported here: the workers must not inherit its memory
        if importlib.util.find_spec("tensorflow") is None:
            print("tf.data is not installed: conveyor and NumPy only")
            variants.remove("tf.data")
    raw = {v: [] for v in variants}
    for k in range(args.repeat):
        for v in (variants if k % 2 == 0 else variants[::-1]):
            r = run_worker(v, args)
            if r is not None:
                raw[v].append(r)
    ok = all(raw[v] for v in variants)
    print(f"from_tensor_slices({args.n:,} x {FEATURES} float32).cache().shuffle({args.buffer:,}, "
          f"seed=1).batch({BATCH}); {args.epochs - 1} rounds (epochs 2-{args.epochs}) per "
          f"process x {args.repeat}, each variant in its own process\n")
    print(f"{'':22}{'epochs 2+: median [min-max]':>34}{'epoch 1':>12}{'CPU ns/sample':>15}")
    sums = {}
    for v in variants:
        if not raw[v]:
            print(f"{v:22}  failed")
            continue
        s = sums[v] = summary(raw[v])
        print(f"{v:22}{s['median'] / 1e6:>10.2f} M/s [{s['min'] / 1e6:.2f}-{s['max'] / 1e6:.2f}]"
              f"{s['first'] / 1e6:>12.2f}{s['cpu_ns']:>15.0f}")
        checks = [c for r in raw[v] for c in r["checks"]]
        if checks and not all(checks):
            print(f"  CHECK FAILED: {v}: an epoch is not a permutation of the rows")
            ok = False
    print()

    def ratio(a, b, what, goal=None):
        if a in sums and b in sums:
            r = sums[a]["median"] / sums[b]["median"]
            lo = sums[a]["min"] / sums[b]["max"]
            hi = sums[a]["max"] / sums[b]["min"]
            note = "" if goal is None else f"  (goal >= {goal}: {'met' if r >= goal else 'missed'})"
            print(f"{what:38}{r:6.2f}x  [worst-best {lo:.2f}-{hi:.2f}]{note}")
            return r
        return None
    ratio("conveyor", "numpy", "conveyor / NumPy permute+gather", goal=0.5)
    ratio("conveyor", "tf.data", "conveyor / tf.data")
    ratio("conveyor", "conveyor unfused", "fused / unfused")
    ratio("conveyor unfused", "numpy", "unfused / NumPy permute+gather")
    ratio("conveyor", "conveyor no shuffle", "with shuffle / without")
    if "conveyor" in sums and "conveyor no shuffle" in sums:
        extra = 1e9 / sums["conveyor"]["median"] - 1e9 / sums["conveyor no shuffle"]["median"]
        print(f"{'shuffling adds':38}{extra:6.0f} ns per sample")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"raw": raw, "summary": sums}, fh, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
