#!/usr/bin/env python3
"""Autotune strategies side by side (issue 11): the fixed rule against the model.

Every workload runs under two values of ``options.autotune.autotune_algorithm``:

  fixed   "MAX_PARALLELISM": every AUTOTUNE stage at its most (the rule before
          the model; csrc/core/autotune.h CV_AUTOTUNE_FIXED)
  model   "DEFAULT": the model-based hill climb (CV_AUTOTUNE_MODEL)

with the default CPU budget (the CPUs this process may use; --budget sets
options.autotune.cpu_budget). Workloads:

  jpeg       list_files -> map(read_file, decode_jpeg, resize 224, /255, AUTOTUNE)
             -> batch(64) -> prefetch(AUTOTUNE)  (benchmarks/images.py's files)
  rec 1KB    list_files -> interleave(TFRecordDataset, cycle_length=2, AUTOTUNE)
  rec 100KB  -> batch(256) -> prefetch(AUTOTUNE)  (benchmarks/records.py's payloads)
  pymap      range(n).map(pure-Python loop, ~40 us, holds the GIL, AUTOTUNE)
             -> batch(64) -> prefetch(AUTOTUNE)
  two maps   range(n).map(NumPy sin of 16k floats, AUTOTUNE)
             -> map(NumPy sin of 4k floats, AUTOTUNE) -> batch(64)
             -> prefetch(AUTOTUNE): two stages of 4:1 cost that release the GIL
  shuffle    from_tensor_slices(x[n x 32] float32).cache().shuffle(buffer, seed=1)
             -> batch(256) -> prefetch(AUTOTUNE)  (benchmarks/shuffle.py; the cache is
             filled in the warm-up, the rounds replay it)
  7 stages   range(8).interleave(range(i * n/8, (i + 1) * n/8), cycle_length=4, AUTOTUNE)
             -> map(NumPy: a row of 4096 float32, AUTOTUNE) -> shuffle(256) -> map(traced x * 2, AUTOTUNE)
             -> batch(32) -> map(traced b + 1, AUTOTUNE) -> prefetch(AUTOTUNE)

Per workload and strategy: elements/s (images, records, samples) as median
[min-max] over --rounds (one untimed warm-up of each, then the strategies
alternate round by round in one process); the per-round ratio model/fixed;
threads (the most engine threads ``iterator.stats().threads`` reported and
the most OS threads above the process's baseline, sampled every 20 ms while
iterating); and each parallel stage's parallelism at the end of the last
round (``iterator.stats()``: parallelism now / most, and buffer sizes),
with the number of changes the model recorded (``stats.choices``).

--own-process runs each strategy of each workload again in a fresh child
process (--rounds rounds there after one warm-up), so one strategy's pages
and threads never touch the other's: a second table.

    python benchmarks/autotune.py                 # 5 rounds, full sizes (~4 min on 2 cores)
    python benchmarks/autotune.py --quick         # small sizes, 2 rounds
    python benchmarks/autotune.py --only jpeg,pymap --own-process
    python benchmarks/autotune.py --stats         # also print the stats table of each last round

Timings are printed, never asserted.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

warnings.filterwarnings("ignore", message=".*runs in Python per element.*")

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np

import conveyor as cv
from conveyor.data import AUTOTUNE

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import images  # noqa: E402
import records  # noqa: E402
from run import fmt_range, machine_info, paired_ratio, run_rounds, summary  # noqa: E402

STRATEGIES = {"fixed": "MAX_PARALLELISM", "model": "DEFAULT"}

FULL = dict(rounds=5, jpeg_files=1024, rec_small=(400_000, 1024), rec_large=(8_000, 100 * 1024),
            pymap_n=20_000, twomaps_n=30_000, shuffle_n=1_000_000, shuffle_buffer=100_000,
            seven_n=24_000)
QUICK = dict(rounds=2, jpeg_files=64, rec_small=(5_000, 1024), rec_large=(100, 100 * 1024),
             pymap_n=300, twomaps_n=300, shuffle_n=20_000, shuffle_buffer=2_000, seven_n=400)


def _os_threads():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


def _options(strategy, budget):
    o = cv.data.Options()
    o.autotune.autotune_algorithm = STRATEGIES[strategy]
    if budget:
        o.autotune.cpu_budget = budget
    return o


def _py_loop(x):
    v, s = int(x), 0  # int(x) needs the value: never traced, runs in Python
    for i in range(1000):  # ~40 us of bytecode: the GIL is held throughout
        s += i * v
    return x + (s & 1)


def _heavy(x):
    return np.sin(np.full(16384, x, np.float32)).sum()  # NumPy releases the GIL in sin


def _light(v):
    return v + np.sin(np.full(4096, v, np.float32)).sum()


_ROW = np.arange(4096, dtype=np.float32)


def _numpy_row(x):
    return np.sqrt(np.abs(np.sin(_ROW * np.float32(x)))).astype(np.float32)


def workloads(cfg, tmp):
    """name -> (unit, build(strategy, budget) -> dataset, count(element) -> units).
    The files are made once."""
    out = {}
    folder = os.path.join(tmp, "conveyor-bench-images", str(cfg["jpeg_files"]))
    paths, _ = images.make_files(folder, cfg["jpeg_files"])
    pattern = os.path.join(folder, "*.jpg")
    out["jpeg decode+resize"] = (
        "images", lambda s, b: images.pipeline(cv, pattern, True).with_options(_options(s, b)),
        lambda e: e.shape[0])

    rec_dir = os.path.join(tmp, "conveyor-bench-records", "autotune")
    for label, (count, size) in (("rec 1KB", cfg["rec_small"]), ("rec 100KB", cfg["rec_large"])):
        name = f"{label}-{count}"
        rec_paths = os.path.join(rec_dir, name)
        if not os.path.exists(os.path.join(rec_paths, f"{name}-{records.SHARDS - 1:02d}.tfrecord")):
            records.write_shards(rec_paths, name, records.record_payloads(count, size, seed=1), "",
                                 None)
        rpattern = os.path.join(rec_paths, "*.tfrecord")

        def build(s, b, rpattern=rpattern):
            files = cv.data.Dataset.list_files(rpattern, shuffle=False)
            ds = files.interleave(cv.data.TFRecordDataset, cycle_length=2,
                                  num_parallel_calls=AUTOTUNE)
            return ds.batch(256).prefetch(AUTOTUNE).with_options(_options(s, b))
        out[f"{label} TFRecord x {count:,}"] = ("records", build, len)

    n = cfg["pymap_n"]
    out["pymap (GIL-bound Python)"] = (
        "elements", lambda s, b: cv.data.Dataset.range(n).map(_py_loop, num_parallel_calls=AUTOTUNE)
        .batch(64).prefetch(AUTOTUNE).with_options(_options(s, b)), len)

    n2 = cfg["twomaps_n"]
    out["two maps 4:1 (NumPy)"] = (
        "elements", lambda s, b: cv.data.Dataset.range(n2).map(_heavy, num_parallel_calls=AUTOTUNE)
        .map(_light, num_parallel_calls=AUTOTUNE).batch(64).prefetch(AUTOTUNE)
        .with_options(_options(s, b)), len)

    x = np.random.default_rng(0).random((cfg["shuffle_n"], 32), dtype=np.float32)
    cv.data.experimental.cache_progress(False)
    cached = {}

    def shuffle_build(s, b):
        if s not in cached:  # one cache per strategy, filled by the warm-up epoch
            cached[s] = (cv.data.Dataset.from_tensor_slices(x).cache()
                         .shuffle(cfg["shuffle_buffer"], seed=1).batch(256).prefetch(AUTOTUNE)
                         .with_options(_options(s, b)))
        return cached[s]
    out["cache+shuffle+batch"] = ("samples", shuffle_build, len)

    n7 = cfg["seven_n"]
    m7 = n7 // 8

    def seven(s, b):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds = cv.data.Dataset.range(8).interleave(
                lambda i: cv.data.Dataset.range(i * m7, (i + 1) * m7),
                cycle_length=4, num_parallel_calls=AUTOTUNE)
            ds = ds.map(_numpy_row, num_parallel_calls=AUTOTUNE)
            ds = ds.shuffle(256, seed=7)
            ds = ds.map(lambda r: r * 2, num_parallel_calls=AUTOTUNE)
            ds = ds.batch(32)
            ds = ds.map(lambda r: r + 1, num_parallel_calls=AUTOTUNE)
            ds = ds.prefetch(AUTOTUNE)
        return ds.with_options(_options(s, b))
    out["7 stages"] = ("elements", seven, len)
    return out


def epoch(ds, count):
    """Iterate once; sample the thread counts every 20 ms. Returns (measurements, stats)."""
    base = _os_threads()
    most_os, most_engine = 0, 0
    units = 0
    it = iter(ds)
    start = time.perf_counter()
    next_sample = start + 0.02
    for e in it:
        units += count(e)
        t = time.perf_counter()
        if t >= next_sample:
            most_os = max(most_os, _os_threads() - base)
            most_engine = max(most_engine, it.stats().threads)
            next_sample = t + 0.02
    elapsed = time.perf_counter() - start
    stats = it.stats()
    return {"s": elapsed, "rate": units / elapsed, "units": units, "os_threads": most_os,
            "engine_threads": max(most_engine, stats.threads)}, stats


def chosen(stats):
    """Each parallel stage's parallelism (now/most) and buffer, shortly named."""
    parts = []
    for s in stats.stages:
        if s.max_parallelism:
            name = s.name.replace("Dataset", "").replace("Parallel", "P")
            par = f"{s.parallelism}/{s.max_parallelism}"
            if s.max_buffer_size:
                par += f" b{s.buffer_size}"
            parts.append(f"{name} {par}")
    return ", ".join(parts)


def measure(wl, names, strategies, rounds, budget, show_stats):
    """In one process, strategies alternated; returns {(workload, strategy): [measurements]}."""
    last = {}
    variants = []
    for name in names:
        unit, build, count = wl[name]
        for s in strategies:
            def run(warmup, build=build, count=count, s=s, name=name):
                m, stats = epoch(build(s, budget), count)
                last[(name, s)] = stats
                return m
            variants.append(((name, s), run))
    results = run_rounds(variants, rounds)
    for key, stats in last.items():
        results[key][-1]["chosen"] = chosen(stats)
        results[key][-1]["changes"] = len(stats.choices)
        results[key][-1]["runs"] = stats.autotune_runs
        results[key][-1]["budget"] = stats.cpu_budget
        if show_stats:
            results[key][-1]["table"] = str(stats)
    return results


def print_table(title, wl, names, results, strategies):
    print(f"\n{title}")
    print(f"{'workload':<30}{'unit/s':>9}{'fixed':>24}{'model':>24}{'model/fixed':>22}"
          f"{'threads f/m':>14}")
    for name in names:
        unit = wl[name][0]
        cols = []
        for s in strategies:
            cols.append([m["rate"] for m in results[(name, s)]])
        ratio = paired_ratio(cols[1], cols[0])
        thr = "/".join(f"{max(m['engine_threads'] for m in results[(name, s)])}"
                       f"({max(m['os_threads'] for m in results[(name, s)])})" for s in strategies)
        rs = summary(ratio)
        print(f"{name:<30}{unit:>9}{fmt_range(cols[0]):>24}{fmt_range(cols[1]):>24}"
              f"{rs['median']:>10.2f} [{rs['min']:.2f}-{rs['max']:.2f}]{thr:>14}")
    print("(threads: the most engine threads (OS threads above the baseline) seen in any round, "
          "fixed/model)")
    print("\nparallelism at the end of the last round (stage now/most, b: buffer size), "
          "model changes recorded:")
    for name in names:
        for s in strategies:
            m = results[(name, s)][-1]
            extra = f"  [{m['changes']} changes, {m['runs']} model runs]" if s == "model" else ""
            print(f"  {name:<28}{s:<7}{m.get('chosen', '?')}{extra}")


def child_main(args):
    """--child WORKLOAD STRATEGY: one strategy, one workload, this process."""
    cfg = QUICK if args.quick else FULL
    wl = workloads(cfg, tempfile.gettempdir())
    results = measure(wl, [args.child[0]], [args.child[1]], args.rounds or cfg["rounds"],
                      args.budget, False)
    print(json.dumps({"results": results[(args.child[0], args.child[1])]}))
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--budget", type=int, default=0, help="options.autotune.cpu_budget (0: default)")
    p.add_argument("--only", default="", help="comma-separated prefixes of workload names")
    p.add_argument("--own-process", action="store_true",
                   help="also run each strategy of each workload in its own process")
    p.add_argument("--stats", action="store_true", help="print the stats of each last round")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child_main(args)
    cfg = QUICK if args.quick else FULL
    rounds = args.rounds or cfg["rounds"]
    info = machine_info(None)
    wl = workloads(cfg, tempfile.gettempdir())
    names = [n for n in wl if not args.only or any(n.startswith(o) for o in args.only.split(","))]
    strategies = list(STRATEGIES)
    print("autotune strategies: fixed (MAX_PARALLELISM) vs model (DEFAULT)")
    print(f"machine: {info['cpus_usable']} CPUs ({info['cpu_model']}); python {info['python']}, "
          f"conveyor {info['conveyor']}; cpu_budget {args.budget or 'default'}; {rounds} rounds; "
          "median [min-max]")
    results = measure(wl, names, strategies, rounds, args.budget, args.stats)
    print_table("one process, strategies alternated round by round", wl, names, results, strategies)
    if args.stats:
        for name in names:
            for s in strategies:
                print(f"\n--- {name}, {s}, last round:\n{results[(name, s)][-1]['table']}")
    own = {}
    if args.own_process:
        for name in names:
            for s in strategies:
                cmd = [sys.executable, os.path.abspath(__file__), "--child", name, s,
                       "--rounds", str(rounds), "--budget", str(args.budget)]
                if args.quick:
                    cmd.append("--quick")
                proc = subprocess.run(cmd, capture_output=True, text=True)
                lines = [x for x in proc.stdout.splitlines() if x.startswith("{")]
                if proc.returncode != 0 or not lines:
                    print(f"{name} / {s} failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
                    return 1
                own[(name, s)] = json.loads(lines[-1])["results"]
        print_table("each strategy in its own process (ratio: of round i in each)", wl, names, own,
                    strategies)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "rounds": rounds,
                       "one_process": {f"{k[0]}|{k[1]}": v for k, v in results.items()},
                       "own_process": {f"{k[0]}|{k[1]}": v for k, v in own.items()}},
                      f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
