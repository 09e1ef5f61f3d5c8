#!/usr/bin/env python3
"""decode+resize in one pass (options.experimental_optimization.jpeg_scaled_decode):
its speed-up over the exact path, and how far its pixels are from the exact path's.

Writes --files JPEGs of 1000x750 (and 750x1000; quality 90, 4:2:0) once to
$TMPDIR/conveyor-bench-images/<files>-750x1000, made from the shared test
photos as benchmarks/images.py makes its files (random crops, flips, a little
noise; libjpeg-turbo via conveyor.io.encode_jpeg). Then measures, in one
process, alternating rounds of

  list_files(*.jpg, shuffle=False)
  .map(lambda f: resize(decode_jpeg(read_file(f), channels=3), [224, 224], method),
       num_parallel_calls=AUTOTUNE).batch(64).prefetch(AUTOTUNE)

for each method, exact (the option off: TensorFlow's pixels) and fused (the
option on: decoded at 1/2 scale, 375x500, then resized). Figures are images/s,
median [min-max] over --rounds (>= 5 by default); fused/exact is computed per
round, then summarised the same way. Untimed: the mean and the largest
absolute difference between the fused and the exact images over all files
(0..255 scale). Nothing is asserted.

    python benchmarks/scaled_decode.py              # 256 files, 5 rounds
    python benchmarks/scaled_decode.py --quick      # 64 files, 2 rounds
    python benchmarks/scaled_decode.py --threads 1  # one map worker
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np

import conveyor as cv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from images import make_files  # noqa: E402
from run import fmt_range, machine_info, now, paired_ratio, run_rounds, summary  # noqa: E402

SIZE = (750, 1000)  # height, width of the landscape files
TARGET = [224, 224]
METHODS = [("bilinear", False), ("bilinear", True), ("area", False), ("bicubic", True)]


def pipeline(pattern, method, antialias, fused, threads, batch=64):
    fn = lambda f: cv.image.resize(  # noqa: E731
        cv.io.decode_jpeg(cv.io.read_file(f), channels=3), TARGET, method=method,
        antialias=antialias)
    ds = cv.data.Dataset.list_files(pattern, shuffle=False)
    ds = ds.map(fn, num_parallel_calls=threads or cv.data.AUTOTUNE).batch(batch)
    options = cv.data.Options()
    options.experimental_optimization.jpeg_scaled_decode = fused
    return ds.prefetch(cv.data.AUTOTUNE).with_options(options)


def epoch_fn(ds, count):
    def run(warmup):
        n = 0
        start = now()
        for x in ds:
            n += x.shape[0]
        elapsed = now() - start
        assert n == count, (n, count)
        return {"seconds": elapsed, "images_per_s": n / elapsed}
    return run


def differences(pattern, method, antialias):
    """mean and max |fused - exact| over every image, and its shapes/dtypes agree."""
    total, count, largest = 0.0, 0, 0.0
    exact = pipeline(pattern, method, antialias, False, None, batch=16)
    fused = pipeline(pattern, method, antialias, True, None, batch=16)
    for a, b in zip(exact, fused, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
        d = np.abs(a.astype(np.float64) - b)
        total, count, largest = total + d.sum(), count + d.size, max(largest, float(d.max()))
    return total / count, largest


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0, help="map workers (0: AUTOTUNE)")
    ap.add_argument("--quick", action="store_true", help="64 files, 2 rounds")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args(argv)
    if args.quick:
        args.files, args.rounds = 64, 2
    info = machine_info(None)
    folder = os.path.join(tempfile.gettempdir(), "conveyor-bench-images",
                          f"{args.files}-{SIZE[0]}x{SIZE[1]}")
    paths, origin = make_files(folder, args.files, size=SIZE)
    pattern = os.path.join(folder, "*.jpg")
    mean_kb = np.mean([os.path.getsize(p) for p in paths]) / 1024
    print(f"{len(paths)} JPEGs of {SIZE[1]}x{SIZE[0]} in {folder} (from {origin}), mean "
          f"{mean_kb:.0f} KB; -> {TARGET[0]}x{TARGET[1]}, map workers: "
          f"{args.threads or 'AUTOTUNE'}; {info['cpus_usable']} usable cores; {info['cpu_model']}")

    variants = []
    for method, antialias in METHODS:
        for fused in (False, True):
            key = (method, antialias, fused)
            variants.append((key, epoch_fn(pipeline(pattern, method, antialias, fused,
                                                    args.threads), len(paths))))
    results = run_rounds(variants, args.rounds)
    rate = {k: [m["images_per_s"] for m in v] for k, v in results.items()}

    print(f"\n{'images/s':<24}{'exact':>20}{'fused':>20}{'fused/exact':>20}"
          f"{'mean|diff|':>12}{'max|diff|':>11}")
    report = []
    for method, antialias in METHODS:
        exact, fused = rate[(method, antialias, False)], rate[(method, antialias, True)]
        speedup = paired_ratio(fused, exact)
        mean_abs, max_abs = differences(pattern, method, antialias)
        name = method + (" antialias" if antialias else "")
        print(f"{name:<24}{fmt_range(exact):>20}{fmt_range(fused):>20}"
              f"{fmt_range(speedup) + 'x':>20}{mean_abs:>12.2f}{max_abs:>11.1f}")
        report.append({"method": method, "antialias": antialias, "exact": summary(exact),
                       "fused": summary(fused), "speedup": summary(speedup),
                       "mean_abs_diff": mean_abs, "max_abs_diff": max_abs})
    print("\n|diff|: fused vs exact images, 0..255 scale, over every file")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "files": len(paths), "mean_kb": mean_kb,
                       "threads": args.threads, "rows": report}, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
