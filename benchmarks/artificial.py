#!/usr/bin/env python3
"""The ArtificialDataset variants of TensorFlow's data-performance guide
(tensorflow.org/guide/data_performance), each against its analytic bound.

The guide's harness, written once for conveyor and for tf.data:

  ArtificialDataset(n=3)  from_generator(gen): gen sleeps o = 0.030 s ("opening the
                          file"), then r = 0.015 s before each of its n records
  mapped_function(s)      sleeps m = 0.030 s (tf.py_function in tf.data; a Python
                          function in conveyor, which sleeps without the GIL) and
                          returns s
  benchmark(ds, epochs=2) for each epoch: for each element: sleep t = 0.010 s (the
                          training step); each epoch makes a new iterator

Bounds (E epochs; everything a perfect runtime cannot hide; a fresh iterator per
epoch, so nothing overlaps across epochs):

  naive                     E * (o + n * (r + t))                       = 0.210
  prefetch(AUTOTUNE)        E * (o + r + (n - 1) * max(r, t) + t)       = 0.170
      the reader runs ahead of the step: the first record after o + r, then one
      per max(r, t), then the last step
  interleave, sequential    E * (2 * (o + n * r) + 2 * n * t)           = 0.420
      range(2).interleave(ArtificialDataset): two sources, one after another
  interleave, parallel      E * (o + r + 2 * n * t)                     = 0.210
      num_parallel_calls=AUTOTUNE, cycle_length >= 2: both sources open and read
      at once; with r <= 2 t the consumer's steps are the limit after the first
      record. The default cycle_length is ceil(CPUs / 3) (tf.data's rule, which
      conveyor follows): 1 on up to 3 CPUs. With 1 the second source is opened and
      read ahead while the first is consumed:
                            E * (o + n * r + (n + 1) * t)               = 0.230
  map, sequential           E * (o + n * (r + m + t))                   = 0.390
  map, parallel             E * (o + n * r + m + t)                     = 0.230
      map(mapped_function, num_parallel_calls=AUTOTUNE): maps overlap the reads
      and the steps (ceil(m / r) = 2 maps at once); record k is ready at
      o + k r + m, and since r >= t the consumer keeps up: the last record is
      read at o + n r, mapped by + m, stepped by + t
  cache (5 epochs)          (o + n * (r + m + t)) + (5 - 1) * n * t     = 0.315
      map(mapped_function).cache(): the first epoch as the sequential map, the
      others replay the cache and only step
  vectorized, scalar map    E * (o + N * (r + m) + (N / B) * t)         = 0.640
      ArtificialDataset(N=6).map(mapped_function).batch(B=3): one map per record
  vectorized, batched map   E * (o + N * r + (N / B) * (m + t))         = 0.400
      ArtificialDataset(N=6).batch(3).map(mapped_function): one map per batch
      These two assume a synchronous batch (tf.data's). conveyor's batch() is a
      parallel, autotuned stage that runs ahead of its consumer, so the step of
      one batch overlaps the making of the next; its bounds are lower:
      scalar map            E * (o + N * (r + m) + t)                   = 0.620
      batched map           E * (o + N * r + m + t)                     = 0.320
      (the second batch is read while the first is mapped and stepped)
  fast scalar / vectorized  range(10000).map(x + 1).batch(256) vs
                            range(10000).batch(256).map(x + 1), 2 epochs, no sleeps:
                            no bound; the ratio scalar / vectorized is shown

(time.sleep overshoots by tens of microseconds: the bounds are computed from the
sleeps as measured here, median of 20 each; the nominal values are above.)

Every figure is seconds, median [min-max] over --rounds; conveyor and tf.data
(when importable) alternate variant by variant in one process, after one untimed
warm-up of each. --own-process runs each library's whole set again in a fresh
child process. measured/bound is the median over the bound (goal <= 1.05). For
a conveyor variant that misses, --explain prints iterator.stats() of its last epoch.

    python benchmarks/artificial.py                 # 5 rounds
    python benchmarks/artificial.py --quick         # 2 rounds
    python benchmarks/artificial.py --no-tf --explain
    python benchmarks/artificial.py --own-process

Timings are printed, never asserted.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.filterwarnings("ignore", message=".*runs in Python per element.*")

import conveyor as cv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import fmt_range, import_tf, machine_info, run_rounds, summary  # noqa: E402

AUTOTUNE = -1
O, R, T, M = 0.030, 0.015, 0.010, 0.030  # open, read, step, map
N = 3


def artificial_dataset(lib, num_samples=N):
    def gen():
        time.sleep(O)  # opening the file
        for i in range(num_samples):
            time.sleep(R)  # reading a record
            yield (i,)
    return lib.data.Dataset.from_generator(
        gen, output_signature=lib.TensorSpec(shape=(1,), dtype=lib.int64))


def mapped_function(lib):
    if lib is cv:
        def fn(s):
            time.sleep(M)
            return s
        return fn

    def tf_fn(s):
        lib.py_function(lambda: time.sleep(M), [], ())
        return s
    return tf_fn


class Loop:
    """The guide's benchmark(): `epochs` epochs, a `step` sleep per element.
    Keeps the last iterator (for its statistics)."""

    def __init__(self, epochs=2, step=T):
        self.epochs, self.step, self.last = epochs, step, None

    def __call__(self, ds):
        start = time.perf_counter()
        for _ in range(self.epochs):
            it = iter(ds)
            for _ in it:
                if self.step:
                    time.sleep(self.step)
            self.last = it
        return time.perf_counter() - start


def default_cycle(cpus):
    """interleave's cycle_length when num_parallel_calls=AUTOTUNE leaves it unset: tf.data's
    rule (and conveyor's): ceil(CPUs / 3), each cycle element with two future ones opening."""
    return -(-cpus // 3)


def bounds(o, r, t, m, cpus, async_batch, n=N, e=2):
    """name -> the analytic bound (seconds) from the sleeps o, r, t, m (see the docstring).
    async_batch: batch() runs ahead of its consumer (conveyor: an AUTOTUNE parallel batch),
    so the step of one batch overlaps the making of the next."""
    big_n, b = 6, 3
    two = e * (o + r + 2 * n * t)  # both sources read at once
    # cycle_length 1: one source after the other, the second opened and read ahead
    one = e * (o + n * r + (n + 1) * t)
    if async_batch:
        scalar = e * (o + big_n * (r + m) + t)
        batched = e * (o + big_n * r + m + t)
    else:
        scalar = e * (o + big_n * (r + m) + big_n // b * t)
        batched = e * (o + big_n * r + big_n // b * (m + t))
    return {
        "naive": e * (o + n * (r + t)),
        "prefetch": e * (o + r + (n - 1) * max(r, t) + t),
        "interleave sequential": e * (2 * (o + n * r) + 2 * n * t),
        "interleave parallel": two if default_cycle(cpus) >= 2 else one,
        "interleave parallel, cycle_length=2": two,
        "map sequential": e * (o + n * (r + m + t)),
        "map parallel": e * (o + n * r + m + t),
        "cache (5 epochs)": (o + n * (r + m + t)) + 4 * n * t,
        "vectorized: scalar map": scalar,
        "vectorized: batched map": batched,
        "fast: scalar map": None,
        "fast: vectorized map": None,
    }


def variants():
    """name -> build(lib) -> (dataset, loop)."""
    return {
        "naive": lambda lib: (artificial_dataset(lib), Loop()),
        "prefetch": lambda lib: (artificial_dataset(lib).prefetch(AUTOTUNE), Loop()),
        "interleave sequential": lambda lib: (
            lib.data.Dataset.range(2).interleave(lambda _: artificial_dataset(lib)), Loop()),
        "interleave parallel": lambda lib: (
            lib.data.Dataset.range(2).interleave(lambda _: artificial_dataset(lib),
                                                 num_parallel_calls=AUTOTUNE), Loop()),
        "interleave parallel, cycle_length=2": lambda lib: (
            lib.data.Dataset.range(2).interleave(lambda _: artificial_dataset(lib), cycle_length=2,
                                                 num_parallel_calls=AUTOTUNE), Loop()),
        "map sequential": lambda lib: (artificial_dataset(lib).map(mapped_function(lib)), Loop()),
        "map parallel": lambda lib: (
            artificial_dataset(lib).map(mapped_function(lib), num_parallel_calls=AUTOTUNE), Loop()),
        "cache (5 epochs)": lambda lib: (
            artificial_dataset(lib).map(mapped_function(lib)).cache(), Loop(epochs=5)),
        "vectorized: scalar map": lambda lib: (
            artificial_dataset(lib, 6).map(mapped_function(lib)).batch(3), Loop()),
        "vectorized: batched map": lambda lib: (
            artificial_dataset(lib, 6).batch(3).map(mapped_function(lib)), Loop()),
        "fast: scalar map": lambda lib: (
            lib.data.Dataset.range(10000).map(lambda x: x + 1).batch(256), Loop(step=0)),
        "fast: vectorized map": lambda lib: (
            lib.data.Dataset.range(10000).batch(256).map(lambda x: x + 1), Loop(step=0)),
    }


def measured_sleeps():
    """What time.sleep(x) takes here, median of 20, for each of the guide's sleeps."""
    out = {}
    for name, x in (("o", O), ("r", R), ("t", T), ("m", M)):
        d = []
        for _ in range(20):
            s = time.perf_counter()
            time.sleep(x)
            d.append(time.perf_counter() - s)
        out[name] = statistics.median(d)
    return out


def measure(libs, rounds, names):
    """{(variant, lib name): [seconds]}, libraries alternated; and the last loops."""
    vs = variants()
    loops = {}
    entries = []
    for name in names:
        for lib_name, lib in libs:
            def run(warmup, name=name, lib=lib, lib_name=lib_name):
                ds, loop = vs[name](lib)
                s = loop(ds)
                loops[(name, lib_name)] = loop
                return {"s": s}
            entries.append(((name, lib_name), run))
    results = run_rounds(entries, rounds)
    return {k: [m["s"] for m in v] for k, v in results.items()}, loops


def child(lib_name, rounds, names):
    if lib_name == "tf.data":
        import tensorflow as tf
        lib = tf
    else:
        lib = cv
    res, _ = measure([(lib_name, lib)], rounds, names)
    print(json.dumps({f"{k[0]}|{k[1]}": v for k, v in res.items()}))


def print_table(title, names, res, bnd, lib_names):
    print(f"\n{title}")
    head = f"{'variant':<38}"
    for ln in lib_names:
        head += f"{'bound':>7}{ln:>22}{'/bound':>8}{'min/b':>7}"
    if len(lib_names) > 1:
        head += f"{'tf/cv':>7}"
    print(head)
    misses = []
    for name in names:
        line = f"{name:<38}"
        for ln in lib_names:
            b = bnd[ln][name]
            line += f"{(f'{b:.3f}' if b else '-'):>7}"
            v = res[(name, ln)]
            med = summary(v)["median"]
            over = med / b if b else None
            low = min(v) / b if b else None
            line += (f"{fmt_range(v):>22}{(f'{over:.3f}' if over else '-'):>8}"
                     f"{(f'{low:.3f}' if low else '-'):>7}")
            if over and over > 1.05 and ln == "conveyor":
                misses.append((name, over))
        if len(lib_names) > 1:
            line += f"{summary(res[(name, lib_names[1])])['median'] / summary(res[(name, 'conveyor')])['median']:>7.2f}"
        print(line)
    fast = [n for n in names if n.startswith("fast:")]
    if len(fast) == 2:
        for ln in lib_names:
            a, b = (summary(res[(n, ln)])["median"] for n in fast)
            print(f"  {ln}: fast scalar / vectorized = {a / b:.1f}x")
    return misses


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-tf", action="store_true")
    p.add_argument("--own-process", action="store_true")
    p.add_argument("--explain", action="store_true",
                   help="print iterator.stats() of each conveyor variant that misses its bound")
    p.add_argument("--only", default="", help="comma-separated prefixes of variant names")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 5)
    names = [n for n in variants() if not args.only or any(n.startswith(o)
                                                             for o in args.only.split(","))]
    if args.child:
        child(args.child, rounds, names)
        return 0
    tf, tf_note = import_tf(args.no_tf)
    info = machine_info(tf)
    sl = measured_sleeps()
    cpus = info["cpus_usable"]
    bnd = {"conveyor": bounds(sl["o"], sl["r"], sl["t"], sl["m"], cpus, True),
           "tf.data": bounds(sl["o"], sl["r"], sl["t"], sl["m"], cpus, False)}
    print("TF data-performance guide, ArtificialDataset variants vs their analytic bounds")
    print(f"machine: {info['cpus_usable']} CPUs; python {info['python']}, conveyor "
          f"{info['conveyor']}, tensorflow {info['tensorflow'] or '-'}; {rounds} rounds; "
          "median [min-max] seconds")
    print("sleeps as measured here (ms): " + ", ".join(
        f"{k} {v * 1e3:.3f}" for k, v in sl.items()) + " (nominal 30, 15, 10, 30)")
    if tf is None:
        print(f"tf.data: {tf_note}")
    libs = [("conveyor", cv)] + ([("tf.data", tf)] if tf is not None else [])
    lib_names = [n for n, _ in libs]
    res, loops = measure(libs, rounds, names)
    misses = print_table("one process, libraries alternated", names, res, bnd, lib_names)
    print(f"(bound: from the measured sleeps, for each library's semantics (interleave's default "
          f"cycle_length here: {default_cycle(cpus)}); /bound: median over it, goal <= 1.05; min/b: the fastest round over it; "
          "tf/cv: tf.data's median over conveyor's)")
    if misses:
        print("conveyor misses the 5% goal: " + ", ".join(f"{n} ({o:.3f})" for n, o in misses))
        if args.explain:
            for n, _ in misses:
                it = loops[(n, "conveyor")].last
                print(f"\n--- {n}: iterator.stats() of the last epoch\n{it.stats()}")
    else:
        print("conveyor: every variant within 5% of its bound")
    if args.own_process:
        own = {}
        for ln in lib_names:
            cmd = [sys.executable, os.path.abspath(__file__), "--child", ln, "--rounds", str(rounds)]
            if args.only:
                cmd += ["--only", args.only]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            lines = [x for x in proc.stdout.splitlines() if x.startswith("{")]
            if proc.returncode != 0 or not lines:
                print(f"{ln} child failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
                return 1
            own.update({tuple(k.split("|")): v for k, v in json.loads(lines[-1]).items()})
        print_table("each library in its own process", names, own, bnd, lib_names)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "sleeps": sl, "bounds": bnd,
                       "one_process": {f"{k[0]}|{k[1]}": v for k, v in res.items()},
                       "own_process": {f"{k[0]}|{k[1]}": v for k, v in own.items()}
                       if args.own_process else {}}, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
