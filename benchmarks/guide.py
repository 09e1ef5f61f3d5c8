#!/usr/bin/env python3
"""TensorFlow's data-performance guide, side by side: the ArtificialDataset
suite (workload W2 of shared/reference/perf-anchors.md) and parallel
interleave over sources with slow opens (W7).

Every latency is a sleep (opening a file, reading a record, a training step,
a slow map function), so the analytic lower bound of each variant is known:
a perfect runtime adds nothing to it. The table prints conveyor and tf.data
beside that bound, as median [min-max] over rounds run alternately in one
process.

    python benchmarks/guide.py            # 5 rounds
    python benchmarks/guide.py --quick    # 2 rounds, W7 scaled down
    python benchmarks/guide.py --no-tf
"""
import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

import conveyor as cv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import fmt_range, import_tf, machine_info, run_rounds, summary  # noqa: E402


# -- the guide's harness, written once for either library ---------------------


def artificial_dataset(lib, num_samples=3):
    """The guide's ArtificialDataset: 30 ms to open, 15 ms per record."""
    def gen():
        time.sleep(0.030)  # opening the file
        for i in range(num_samples):
            time.sleep(0.015)  # reading a record
            yield (i,)
    return lib.data.Dataset.from_generator(
        gen, output_signature=lib.TensorSpec(shape=(1,), dtype=lib.int64))


def mapped_function(lib):
    """30 ms of per-element work that releases the GIL (the guide's tf.py_function sleep)."""
    if lib is cv:
        def fn(s):
            time.sleep(0.030)
            return s
        return fn

    def tf_fn(s):
        lib.py_function(lambda: time.sleep(0.030), [], ())
        return s
    return tf_fn


def training_loop(ds, num_epochs=2, step=0.010):
    start = time.perf_counter()
    for _ in range(num_epochs):
        for _ in ds:
            time.sleep(step)  # a training step
    return time.perf_counter() - start


def fast_loop(ds, num_epochs=2):
    start = time.perf_counter()
    for _ in range(num_epochs):
        for _ in ds:
            pass
    return time.perf_counter() - start


AUTOTUNE = -1

# name, lower bound (s, None: pure overhead), builder(lib) -> (dataset, timing function)
VARIANTS = [
    ("1 naive", 0.210, lambda lib: (artificial_dataset(lib), training_loop)),
    ("2 prefetch(AUTOTUNE)", 0.170,
     lambda lib: (artificial_dataset(lib).prefetch(AUTOTUNE), training_loop)),
    ("3 sequential interleave", 0.420,
     lambda lib: (lib.data.Dataset.range(2).interleave(lambda _: artificial_dataset(lib)),
                  training_loop)),
    ("4 parallel interleave", 0.210,
     lambda lib: (lib.data.Dataset.range(2).interleave(lambda _: artificial_dataset(lib),
                                                      num_parallel_calls=AUTOTUNE),
                  training_loop)),
    # The default cycle_length follows the CPU count (ceil(CPUs / 3): 1 on 2 CPUs), and the
    # guide's bound assumes both sources read at once: the same with cycle_length=2.
    ("4b parallel interleave, cycle_length=2", 0.210,
     lambda lib: (lib.data.Dataset.range(2).interleave(lambda _: artificial_dataset(lib),
                                                      cycle_length=2, num_parallel_calls=AUTOTUNE),
                  training_loop)),
    ("5 sequential map", 0.390,
     lambda lib: (artificial_dataset(lib).map(mapped_function(lib)), training_loop)),
    ("6 parallel map", 0.230,
     lambda lib: (artificial_dataset(lib).map(mapped_function(lib), num_parallel_calls=AUTOTUNE),
                  training_loop)),
    ("8 scalar map: range(10000).map(+1).batch(256)", None,
     lambda lib: (lib.data.Dataset.range(10000).map(lambda x: x + 1).batch(256), fast_loop)),
    ("9 vectorized: range(10000).batch(256).map(+1)", None,
     lambda lib: (lib.data.Dataset.range(10000).batch(256).map(lambda x: x + 1), fast_loop)),
]


def slow_source(lib, records, open_s, read_s):
    """W7: a source that takes `open_s` to open and `read_s` per record (I/O: the GIL is free)."""
    def gen():
        time.sleep(open_s)
        for i in range(records):
            time.sleep(read_s)
            yield i
    return lib.data.Dataset.from_generator(
        gen, output_signature=lib.TensorSpec(shape=(), dtype=lib.int64))


def w7(lib, cfg, deterministic):
    ds = lib.data.Dataset.range(cfg["w7_sources"]).interleave(
        lambda _: slow_source(lib, cfg["w7_records"], 0.020, cfg["w7_read"]),
        cycle_length=4, num_parallel_calls=AUTOTUNE, deterministic=deterministic).batch(64)
    return ds, lambda d: fast_loop(d, num_epochs=1)


def timed(lib, build):
    def run(warmup):
        ds, loop = build(lib)
        return {"s": loop(ds)}  # one-epoch W7 loops are lambdas over fast_loop
    return run


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-tf", action="store_true")
    args = p.parse_args(argv)
    cfg = dict(rounds=2, w7_sources=8, w7_records=100, w7_read=0.001) if args.quick else \
        dict(rounds=5, w7_sources=16, w7_records=1000, w7_read=0.001)
    rounds = args.rounds or cfg["rounds"]
    tf, tf_note = import_tf(args.no_tf)
    info = machine_info(tf)
    print("TensorFlow data-performance guide, conveyor vs tf.data")
    print(f"machine: {info['cpus_usable']} CPUs; python {info['python']}, conveyor "
          f"{info['conveyor']}, tensorflow {info['tensorflow'] or '-'}; {rounds} rounds, "
          "alternating; median [min-max] seconds")
    if tf is None:
        print(f"tf.data: {tf_note}")
    libs = [("conveyor", cv)] + ([("tf.data", tf)] if tf is not None else [])

    variants = []
    for name, _, build in VARIANTS:
        for lib_name, lib in libs:
            variants.append(((name, lib_name), timed(lib, build)))
    # What the sleeps really take here (time.sleep overshoots by tens of microseconds).
    start = time.perf_counter()
    for _ in range(200):
        time.sleep(cfg["w7_read"])
    read_s = (time.perf_counter() - start) / 200
    w7_bound = cfg["w7_sources"] * (0.020 + cfg["w7_records"] * read_s) / 4
    w7_rows = []
    for det in (True, False):
        name = f"W7 interleave {cfg['w7_sources']} slow sources, cycle 4, deterministic={det}"
        w7_rows.append((name, w7_bound))
        for lib_name, lib in libs:
            variants.append(((name, lib_name), timed(lib, lambda l, d=det: w7(l, cfg, d))))
    results = run_rounds(variants, rounds)

    print()
    print(f"{'variant':<62}{'bound':>7}{'conveyor':>22}{'tf.data':>22}{'cv/bound':>10}{'tf/cv':>8}")
    rows = [(name, bound) for name, bound, _ in VARIANTS] + w7_rows
    for name, bound in rows:
        c = [m["s"] for m in results[(name, "conveyor")]]
        t = [m["s"] for m in results[(name, "tf.data")]] if tf is not None else None
        cmed = summary(c)["median"]
        bound_s = f"{bound:.3f}" if bound else "-"
        over = f"{cmed / bound:.3f}x" if bound else "-"
        tf_s = fmt_range(t) if t else "-"
        ratio = f"{summary(t)['median'] / cmed:.2f}x" if t else "-"
        print(f"{name:<62}{bound_s:>7}{fmt_range(c):>22}{tf_s:>22}{over:>10}{ratio:>8}")
    print("(bound: the analytic lower bound of the sleeps; cv/bound: conveyor's median over it, "
          "goal <= 1.05x; tf/cv: tf.data's median time over conveyor's, > 1 = conveyor faster)")
    print(f"(row 7 of the guide, cache(), needs Dataset.cache; the W7 bound uses the measured "
          f"sleep of {read_s * 1e3:.3f} ms per read)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
