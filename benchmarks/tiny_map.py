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
  heavy  (--heavy) the batch pipeline over a native map of ~50 us per
         element (a reduce_sum over 50,000 values), n / 100 elements: it
         must stay parallel and gain (ratio > 1 on a quiet multi-core machine)
  python (--heavy) the batch pipeline over a Python map that waits 50 us
         without the GIL (as I/O does), n / 100 elements: it stays
         parallel and gains
  python_gil (--heavy) the batch pipeline over a Python map that computes
         (a loop of 200 additions) under the GIL, n / 10 elements: threads
         cannot speed it up; the gain rule runs it inline, with its
         prefetch, within a few ms (csrc/core/autotune.h, "The gain rule")
  --shapes  other tiny shapes, each over n elements: two maps and a batch,
         a map and a filter, a batch then a map, and an interleave of
         4-element inner datasets (docs/performance.md, "Where AUTOTUNE
         still loses")

The sequential pipeline has no parallelism at all: no num_parallel_calls,
no prefetch, and options.experimental_optimization.parallel_batch off (on
by default, it would copy the batches on a worker thread).

Every round runs the sequential and the AUTOTUNE pipeline back to back (a
new dataset and iterator each, as an epoch would), so machine noise hits
both; the ratio (sequential time / AUTOTUNE time: >= 1 means AUTOTUNE is no
slower; the goal is >= 0.95) is computed per round and summarised as min /
median / max, with each pipeline's M elements/s and the process CPU time
of each (all threads: on a shared machine it is steadier than wall time).
The autotuner's choices of the last AUTOTUNE round are printed (after 0:
inline; "start probe": the verdict on a stage that started inline).
Timings are printed, never asserted. --root runs another tree's conveyor
(an older build, for before/after in separate processes).

    python benchmarks/tiny_map.py                   # 7 rounds, n = 200,000
    python benchmarks/tiny_map.py --rounds 9 --n 1000000 --heavy
    python benchmarks/tiny_map.py --root /work/main # the same on main's build
"""
import argparse
import os
import statistics
import sys
import time

def _root(argv):
    """--root's value (read before conveyor is imported), or this tree."""
    args = sys.argv[1:] if argv is None else argv
    for i, a in enumerate(args):
        if a == "--root" and i + 1 < len(args):
            return os.path.abspath(args[i + 1])
        if a.startswith("--root="):
            return os.path.abspath(a.split("=", 1)[1])
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


sys.path.insert(0, _root(None))

import numpy as np  # noqa: E402
import conveyor as cv  # noqa: E402 - the tree's conveyor, not an installed one

D = cv.data.Dataset
AUTOTUNE = cv.data.AUTOTUNE


def double(x):
    return x * 2


def heavy(x):  # traced: a reduce_sum over 50,000 values, natively
    return cv.math.reduce_sum(cv.range(np.int64(50_000))) + x


def python_wait(x):  # not traceable: Python that waits 50 us without the GIL, as I/O does
    time.sleep(50e-6)
    return np.int64(int(x) * 2)


def python_loop(x):  # not traceable: runs in Python under the GIL
    total = 0
    for i in range(200):
        total += i
    return np.int64(int(x) + total)


def no_parallelism(ds):
    options = cv.data.Options()
    options.experimental_optimization.parallel_batch = False
    return ds.with_options(options)


def batched(fn, scale=1):
    return (lambda n: no_parallelism(D.range(n // scale).map(fn).batch(32)),
            lambda n: D.range(n // scale).map(fn, num_parallel_calls=AUTOTUNE).batch(32)
            .prefetch(AUTOTUNE))


PIPELINES = {
    "elem": (lambda n: no_parallelism(D.range(n).map(double)),
             lambda n: D.range(n).map(double, num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE)),
    "batch": batched(double),
}
HEAVY = {"heavy": batched(heavy, 100), "python": batched(python_wait, 100),
         "python_gil": batched(python_loop, 10)}


def plus_one(x):
    return x + 1


def even(x):
    return x % 2 == 0


def repeated(x):  # an inner dataset of 4 elements
    return D.from_tensors(x).repeat(4)


# Other shapes of tiny work (--shapes), each against the same pipeline with
# no parallelism and no prefetch.
SHAPES = {
    "map_map_batch": (
        lambda n: no_parallelism(D.range(n).map(double).map(plus_one).batch(32)),
        lambda n: D.range(n).map(double, num_parallel_calls=AUTOTUNE)
        .map(plus_one, num_parallel_calls=AUTOTUNE).batch(32).prefetch(AUTOTUNE)),
    "map_filter": (
        lambda n: D.range(n).map(double).filter(even),
        lambda n: D.range(n).map(double, num_parallel_calls=AUTOTUNE).filter(even)
        .prefetch(AUTOTUNE)),
    "batch_map": (
        lambda n: no_parallelism(D.range(n).batch(32).map(double)),
        lambda n: D.range(n).batch(32).map(double, num_parallel_calls=AUTOTUNE)
        .prefetch(AUTOTUNE)),
    "interleave": (
        lambda n: D.range(n // 4).interleave(repeated, cycle_length=4),
        lambda n: D.range(n // 4).interleave(repeated, cycle_length=4,
                                             num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE)),
}


def epoch(ds):
    t, c = time.perf_counter(), time.process_time()
    it = iter(ds)
    for _ in it:
        pass
    return time.perf_counter() - t, time.process_time() - c, it


def triple(values, scale=1.0):
    return (f"{min(values) * scale:.2f} / {statistics.median(values) * scale:.2f} / "
            f"{max(values) * scale:.2f}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--n", type=int, default=200_000)
    p.add_argument("--heavy", action="store_true", help="also the heavy native and Python maps")
    p.add_argument("--shapes", action="store_true",
                   help="also two maps, map+filter, batch then map, a tiny interleave")
    p.add_argument("--root", help="the tree whose conveyor to run (default: this one)")
    args = p.parse_args(argv)
    print(f"conveyor {cv.__file__}; n = {args.n}, {args.rounds} rounds; min / median / max; "
          f"load average {os.getloadavg()[0]:.2f}")
    import warnings
    warnings.simplefilter("ignore")  # the Python map's "runs in Python" warning
    pipelines = dict(PIPELINES, **(HEAVY if args.heavy else {}), **(SHAPES if args.shapes else {}))
    for name, (sequential, autotuned) in pipelines.items():
        n = args.n // {"heavy": 100, "python": 100, "python_gil": 10}.get(name, 1)
        epoch(sequential(1000))  # warm-up: tracing, first allocations
        epoch(autotuned(1000))
        seq_t, at_t, seq_c, at_c, ratio, it = [], [], [], [], [], None
        for _ in range(args.rounds):
            s, sc, _ = epoch(sequential(args.n))
            a, ac, it = epoch(autotuned(args.n))
            seq_t.append(s)
            at_t.append(a)
            seq_c.append(sc)
            at_c.append(ac)
            ratio.append(s / a)
        rate = [n / t / 1e6 for t in seq_t], [n / t / 1e6 for t in at_t]
        unit, scale = ("M", 1e6) if n >= 100_000 else ("k", 1e3)
        rate = [[r * 1e6 / scale for r in rates] for rates in rate]
        print(f"{name:10s} sequential {triple(rate[0])} {unit} el/s | AUTOTUNE {triple(rate[1])} {unit} el/s"
              f" | ratio {triple(ratio)} (goal >= 0.95)")
        print(f"           CPU ms sequential {triple(seq_c, 1e3)} | AUTOTUNE {triple(at_c, 1e3)}")
        stats = it.stats()
        chosen = ", ".join(f"{c.stage} {c.before}->{c.after}"
                           f"{' (start probe)' if getattr(c, 'from_start', False) else ''}"
                           f"{' (gain)' if getattr(c, 'gain', False) else ''}"
                           f" at {c.at * 1e3:.1f} ms"
                           for c in stats.choices[:6]) or "none"
        final = ", ".join(f"{s.name}={s.parallelism}" for s in stats.stages
                          if s.max_parallelism)
        print(f"           choices (last round): {chosen}; parallelism at the end: {final}")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
