#!/usr/bin/env python3
"""Peak memory of a shuffle buffer: conveyor vs tf.data.

    python benchmarks/memory.py                # shuffle(10_000) of 224x224x3 uint8 images
    python benchmarks/memory.py --n 2000       # smaller
    python benchmarks/memory.py --no-tf        # conveyor only

The pipeline is ``range(n + 500).map(make_image).shuffle(n, seed=1)``, iterated
to the end: the images are made one by one inside the pipeline (the source
holds nothing), so at its peak the process holds the shuffle buffer, n images
of 150,528 bytes. Each library runs in its own fresh subprocess, which prints
its resident set size before iterating (VmRSS: the interpreter, the library,
the empty pipeline) and its peak (VmHWM) at the end. The report gives the
peak, the peak over the buffer's bytes, what the buffer cost above the
baseline, and conveyor/tf.data ratios. Figures are printed, never asserted.
"""
import argparse
import json
import os
import subprocess
import sys
import time

SIDE = 224
EXTRA = 500  # elements past the buffer: the buffer fills, then streams


def status_bytes(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def child(lib, n):
    if lib == "conveyor":
        import numpy as np
        import conveyor as cv
        ds = cv.data.Dataset.range(n + EXTRA).map(
            lambda x: np.full((SIDE, SIDE, 3), x % 251, np.uint8)).shuffle(n, seed=1)
    else:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow as tf
        ds = tf.data.Dataset.range(n + EXTRA).map(
            lambda x: tf.fill([SIDE, SIDE, 3], tf.cast(x % 251, tf.uint8))).shuffle(n, seed=1)
    baseline = status_bytes("VmRSS:")
    start = time.perf_counter()
    count = 0
    for _ in ds:
        count += 1
    seconds = time.perf_counter() - start
    print(json.dumps({"lib": lib, "count": count, "baseline": baseline,
                      "peak": status_bytes("VmHWM:"), "seconds": seconds}))


def run_child(lib, n):
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", lib, "--n", str(n)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-3:]
        return {"lib": lib, "error": " | ".join(tail) or f"exit status {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=10_000, help="shuffle buffer_size (default 10000)")
    p.add_argument("--no-tf", action="store_true", help="conveyor only")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    p.add_argument("--child", choices=["conveyor", "tf"], help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args.child, args.n)

    buffer = args.n * SIDE * SIDE * 3
    print(f"shuffle({args.n}) of {SIDE}x{SIDE}x3 uint8 images: the buffer holds "
          f"{buffer / 1e9:.3f} GB\n")
    results = [run_child("conveyor", args.n)]
    if not args.no_tf:
        results.append(run_child("tf", args.n))
    gb = 1e9
    print(f"{'':10s} {'baseline GB':>12s} {'peak GB':>9s} {'peak/buffer':>12s} "
          f"{'(peak-baseline)/buffer':>23s} {'seconds':>8s}")
    for r in results:
        if "error" in r:
            print(f"{r['lib']:10s} failed: {r['error']}")
            continue
        print(f"{r['lib']:10s} {r['baseline'] / gb:12.3f} {r['peak'] / gb:9.3f} "
              f"{r['peak'] / buffer:12.3f} {(r['peak'] - r['baseline']) / buffer:23.3f} "
              f"{r['seconds']:8.2f}")
    ok = [r for r in results if "error" not in r]
    if len(ok) == 2:
        cv_, tf_ = ok
        print(f"\nconveyor / tf.data: peak {cv_['peak'] / tf_['peak']:.2f}x, "
              f"above baseline {(cv_['peak'] - cv_['baseline']) / (tf_['peak'] - tf_['baseline']):.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": args.n, "buffer_bytes": buffer, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
