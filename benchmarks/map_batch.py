#!/usr/bin/env python3
"""map + batch (issue 11, item 3): conveyor's fused MapAndBatch kernel against the
same pipeline unfused (options.experimental_optimization.map_and_batch_fusion =
False), on these workloads (map with num_parallel_calls=AUTOTUNE):

  small scalar   range(N).map(x -> float(x) * 2 + 1).batch(256)
  small vector   from_tensor_slices(float32 [N x 32]).map(v -> v * 2 + 1).batch(256)
  image          from_tensor_slices(uint8 [32 x 224 x 224 x 3]).repeat().take(N)
                 .map(im -> float(im) / 255).batch(64)      (602 KB per row)
  python         range(N).map(a Python function).batch(64)  (per element under the GIL)

The variants run alternately in one process (the order flips every round), each
for --rounds rounds (default 7) of one full pass; printed: rows/s median
[min - max] per variant and the fused/unfused ratio of the medians, min and max.
Results are checked equal once (untimed). Timings are printed, never asserted.

    python benchmarks/map_batch.py            # full size
    python benchmarks/map_batch.py --quick    # smaller N, 5 rounds
"""
import argparse
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 2)[0])
import conveyor as cv  # noqa: E402

D = cv.data.Dataset
AUTOTUNE = cv.data.AUTOTUNE


def opts(fusion):
    o = cv.data.Options()
    o.experimental_optimization.map_and_batch_fusion = fusion
    return o


def workloads(quick):
    scale = 4 if quick else 1
    vec = np.random.default_rng(0).random((400_000 // scale, 32), dtype=np.float32)
    images = np.random.default_rng(1).integers(0, 256, (32, 224, 224, 3), dtype=np.uint8)

    def py(x):
        return np.full([4], int(x), np.int64)
    return {
        "small scalar": (lambda: D.range(1_000_000 // scale)
                         .map(lambda x: cv.cast(x, cv.float32) * 2.0 + 1.0,
                              num_parallel_calls=AUTOTUNE).batch(256), 1_000_000 // scale),
        "small vector": (lambda: D.from_tensor_slices(vec)
                         .map(lambda v: v * 2.0 + 1.0, num_parallel_calls=AUTOTUNE).batch(256),
                         len(vec)),
        "image": (lambda: D.from_tensor_slices(images).repeat().take(1024 // scale)
                  .map(lambda im: cv.cast(im, cv.float32) / 255.0, num_parallel_calls=AUTOTUNE)
                  .batch(64), 1024 // scale),
        "python": (lambda: D.range(100_000 // scale).map(py, num_parallel_calls=AUTOTUNE)
                   .batch(64), 100_000 // scale),
    }


def one_pass(ds):
    t = time.perf_counter()
    for _ in ds:
        pass
    return time.perf_counter() - t


def check(ds_on, ds_off):
    for a, b in zip(ds_on, ds_off):
        assert np.array_equal(np.asarray(a), np.asarray(b))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--only", default=None, help="one workload by name")
    args = ap.parse_args()
    rounds = args.rounds or (5 if args.quick else 7)
    print(f"conveyor map+batch fusion, {cv._engine.cpu_count()} CPUs, {rounds} rounds "
          "(rows/s median [min - max])")
    for name, (build, rows) in workloads(args.quick).items():
        if args.only and name != args.only:
            continue
        on, off = build().with_options(opts(True)), build().with_options(opts(False))
        check(on, off)
        one_pass(on), one_pass(off)  # warm up
        times = {"fused": [], "unfused": []}
        for r in range(rounds):
            order = [("fused", on), ("unfused", off)]
            for label, ds in (order if r % 2 == 0 else order[::-1]):
                times[label].append(one_pass(ds))
        rates = {k: [rows / t for t in v] for k, v in times.items()}
        med = {k: statistics.median(v) for k, v in rates.items()}
        ratios = sorted(f / u for f, u in zip(rates["fused"], rates["unfused"]))
        print(f"{name:13s}", "  ".join(
            f"{k} {med[k]:>11,.0f} [{min(v):,.0f} - {max(v):,.0f}]" for k, v in rates.items()),
            f"  speedup {med['fused'] / med['unfused']:.2f}x "
            f"(per-round min {ratios[0]:.2f} median {statistics.median(ratios):.2f} "
            f"max {ratios[-1]:.2f})", flush=True)


if __name__ == "__main__":
    main()
