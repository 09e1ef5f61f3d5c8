#!/usr/bin/env python3
"""Per-image cost of conveyor.image.resize vs tf.image.resize (one core).

Resizes one 375x500x3 uint8 image (the image benchmark's typical decoded
photo) to 224x224 with every method, with and without antialias, and prints
milliseconds per call: wall time, the best of --rounds batches of --calls
calls (the best batch is the one other load on a shared machine disturbed
least); each method is timed in conveyor, then in TensorFlow. The last column is the largest absolute
difference between the two results.

    python benchmarks/resize.py             # conveyor and TensorFlow
    python benchmarks/resize.py --no-tf
"""
import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np

import conveyor as cv

METHODS = ["bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
           "mitchellcubic"]


def best_ms(fn, calls, rounds):
    fn()
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t) / calls)
    return best * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-tf", action="store_true")
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--size", type=int, nargs=2, default=[224, 224])
    args = ap.parse_args()
    tf = None
    if not args.no_tf:
        try:
            import tensorflow as tf
        except ImportError:
            print("TensorFlow is not installed: conveyor only")
    x = np.random.default_rng(0).integers(0, 256, (375, 500, 3)).astype(np.uint8)
    size = tuple(args.size)
    print(f"375x500x3 uint8 -> {size[0]}x{size[1]}, ms per image (best of {args.rounds} x "
          f"{args.calls} calls, wall time)")
    header = f"{'method':>14} {'antialias':>9} {'conveyor':>9}"
    print(header + (f" {'tf':>9} {'tf/cv':>7} {'max|diff|':>10}" if tf else ""))
    xt = tf.constant(x) if tf else None
    for method in METHODS:
        for antialias in (False, True):
            def cv_call():
                return cv.image.resize(x, size, method=method, antialias=antialias)
            c_ms = best_ms(cv_call, args.calls, args.rounds)
            line = f"{method:>14} {antialias!s:>9} {c_ms:9.3f}"
            if tf:
                def tf_call():
                    return tf.image.resize(xt, size, method=method, antialias=antialias)
                t_ms = best_ms(tf_call, args.calls, args.rounds)
                diff = np.max(np.abs(cv_call().astype(np.float64) -
                                     tf_call().numpy().astype(np.float64)))
                line += f" {t_ms:9.3f} {t_ms / c_ms:6.1f}x {diff:10.2g}"
            print(line)


if __name__ == "__main__":
    main()
