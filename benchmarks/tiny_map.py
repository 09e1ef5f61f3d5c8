#!/usr/bin/env python3
"""AUTOTUNE against the sequential pipeline on tiny work (issue 26).

A map whose function costs nanoseconds costs more in hand-offs than it gains
from threads; the autotuner runs such an AUTOTUNE stage inline, on its
consumer's thread (csrc/core/autotune.h, "Inline"). Pipelines, each timed
over --n elements of Dataset.range, per element and batched:

  elem   range(n).map(lambda x: x * 2, AUTOTUNE).prefetch(AUTOTUNE)
         vs range(n).map(lambda x: x * 2)
  batch  range(n).map(lambda x: x * 2, AUTOTUNE).batch(32).prefetch(AUTOTUNE)
         vs range(n).map(lambda x: x * 2).batch(32)

Every round runs the sequential and the AUTOTUNE pipeline back to back (a
new iterator each, as an epoch would), so machine noise hits both; the
ratio (sequential time / AUTOTUNE time: >= 1 means AUTOTUNE is no slower;
the goal is >= 0.95) is computed per round and summarised as min / median /
max, with each pipeline's M elements/s. The autotuner's choices of the last
AUTOTUNE round are printed (after 0: inline). Timings are printed, never
asserted.

    python benchmarks/tiny_map.py                   # 7 rounds, n = 200,000
    python benchmarks/tiny_map.py --rounds 9 --n 1000000
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import conveyor as cv  # noqa: E402 - this tree's conveyor, not an installed one

D = cv.data.Dataset
AUTOTUNE = cv.data.AUTOTUNE


def double(x):
    return x * 2


PIPELINES = {
    "elem": (lambda n: D.range(n).map(double),
             lambda n: D.range(n).map(double, num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE)),
    "batch": (lambda n: D.range(n).map(double).batch(32),
              lambda n: D.range(n).map(double, num_parallel_calls=AUTOTUNE).batch(32)
              .prefetch(AUTOTUNE)),
}


def epoch(ds):
    t = time.perf_counter()
    it = iter(ds)
    for _ in it:
        pass
    return time.perf_counter() - t, it


def triple(values, scale=1.0):
    return (f"{min(values) * scale:.2f} / {statistics.median(values) * scale:.2f} / "
            f"{max(values) * scale:.2f}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--n", type=int, default=200_000)
    args = p.parse_args(argv)
    print(f"conveyor {cv.__file__}; n = {args.n}, {args.rounds} rounds; min / median / max")
    for name, (sequential, autotuned) in PIPELINES.items():
        epoch(sequential(1000))  # warm-up: tracing, first allocations
        epoch(autotuned(1000))
        seq_t, at_t, ratio, it = [], [], [], None
        for _ in range(args.rounds):
            s, _ = epoch(sequential(args.n))
            a, it = epoch(autotuned(args.n))
            seq_t.append(s)
            at_t.append(a)
            ratio.append(s / a)
        rate = [args.n / t / 1e6 for t in seq_t], [args.n / t / 1e6 for t in at_t]
        print(f"{name:5s} sequential {triple(rate[0])} M el/s | AUTOTUNE {triple(rate[1])} M el/s"
              f" | ratio {triple(ratio)} (goal >= 0.95)")
        stats = it.stats()
        chosen = ", ".join(f"{c.stage} {c.before}->{c.after} at {c.at * 1e3:.1f} ms"
                           for c in stats.choices) or "none"
        final = ", ".join(f"{s.name}={s.parallelism}" for s in stats.stages
                          if s.max_parallelism)
        print(f"      choices (last round): {chosen}; parallelism at the end: {final}")


if __name__ == "__main__":
    main()
