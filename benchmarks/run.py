#!/usr/bin/env python3
"""conveyor vs tf.data benchmark runner.

Times the same input pipelines in conveyor and in tf.data, alternately, in one
process (round-robin per round: conveyor, tf, conveyor, tf, ...), so machine
noise hits both sides. Reports the median and min-max over the rounds and a
table of ratios (each ratio is computed per round, from the paired runs of
that round, then summarised as median [min-max]).

    python benchmarks/run.py                 # default: 5 rounds, full sizes
    python benchmarks/run.py --quick         # small and fast (smoke test, < 30 s)
    python benchmarks/run.py --rounds 9 --json results.json
    python benchmarks/run.py --no-tf         # conveyor only

tf.data is optional: if ``import tensorflow`` fails, only conveyor figures
are printed. Timings are reported, never asserted. See benchmarks/README.md.
"""
import argparse
import faulthandler
import gc
import json
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TensorFlow's C++ logging quiet

import numpy as np

import conveyor as cv

# --------------------------------------------------------------------------- #
# configuration

FULL = dict(
    rounds=5,
    a_rows=60_000,        # (a) images
    b_n=10**6,            # (b) conveyor: elements of Dataset.range
    b_tf_n=200_000,       # (b) tf.data: elements (tf's ~20 us/element makes 10**6 x 5 rounds x 4 variants take minutes)
    c_n=10**5,            # (c) elements mapped
    memcpy_reps=3,        # memcpy: best of this many copies per round
)
QUICK = dict(
    rounds=2,
    a_rows=20_000,
    b_n=200_000,
    b_tf_n=20_000,
    c_n=10_000,
    memcpy_reps=3,
)

A_FEATURES = 784
A_BATCH = 128
C_BATCH = 256
C_WIDTH = 64

GOALS = {
    "a_vs_tf": 1.5,      # conveyor throughput >= 1.5x tf.data
    "a_vs_memcpy": 0.5,  # conveyor throughput >= 0.5x memcpy
    "b": 20.0,           # tf ns/element >= 20x conveyor ns/element
}


def c_fn(x):
    """(c)'s map function: a little NumPy work per element."""
    return np.sin(np.full(C_WIDTH, x, np.float32)).sum()


# --------------------------------------------------------------------------- #
# helpers

def now():
    return time.perf_counter()


def summary(values):
    """median, min, max of a list of numbers."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "values": list(values)}


def compact(v):
    """A number with 3 significant figures (k/M/G suffix from 1,000 up)."""
    unit = ""
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            v, unit = v / div, suffix
            break
    a = abs(v)
    digits = 0 if a >= 99.95 else 1 if a >= 9.995 else 2 if a >= 0.9995 or unit else 3
    return f"{v:.{digits}f}{unit}"


def fmt_range(values, scale=1.0):
    """median [min-max], compact."""
    s = summary(values)
    return (f"{compact(s['median'] * scale)} "
            f"[{compact(s['min'] * scale)}-{compact(s['max'] * scale)}]")


def run_rounds(variants, rounds):
    """Round-robin: one untimed warm-up of every variant, then `rounds` rounds,
    each running every variant once in the listed order. A variant is
    (key, fn); fn(warmup) returns a dict of measured seconds."""
    results = {key: [] for key, _ in variants}
    for key, fn in variants:
        gc.collect()
        fn(True)
    for r in range(rounds):
        for key, fn in variants:
            gc.collect()
            results[key].append(fn(False))
    return results


def column(results, key, field):
    return [m[field] for m in results[key]]


def paired_ratio(num, den):
    """Per-round ratios num[i]/den[i]."""
    return [n / d for n, d in zip(num, den)]


def import_tf(disabled):
    if disabled:
        return None, "disabled with --no-tf"
    try:
        import tensorflow as tf  # noqa: F401
    except Exception as e:  # ImportError, or a broken install
        return None, f"not installed (import tensorflow failed: {type(e).__name__}: {e})"
    return tf, None


def machine_info(tf):
    cpu_model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "cpu_model": cpu_model or platform.processor(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "conveyor": cv.__version__,
        "tensorflow": tf.__version__ if tf is not None else None,
    }


class Checks:
    """Correctness checks of conveyor's output (run once, untimed)."""

    def __init__(self):
        self.items = []

    def add(self, name, ok, detail=""):
        self.items.append({"name": name, "ok": bool(ok), "detail": detail})


# --------------------------------------------------------------------------- #
# (a) from_tensor_slices -> batch(128) -> prefetch(AUTOTUNE), one epoch

def workload_a(cfg, tf, checks):
    rows = cfg["a_rows"]
    rng = np.random.default_rng(0)
    images = rng.random((rows, A_FEATURES), dtype=np.float32)
    labels = rng.integers(0, 10, rows, dtype=np.int64)
    nbytes = images.nbytes + labels.nbytes
    nbatches = -(-rows // A_BATCH)

    # correctness, untimed: every batch, kept alive together (catches buffer reuse)
    ds = cv.data.Dataset.from_tensor_slices((images, labels)).batch(A_BATCH).prefetch(
        cv.data.AUTOTUNE)
    batches = list(ds)
    ok = (len(batches) == nbatches
          and np.array_equal(np.concatenate([b[0] for b in batches]), images)
          and np.array_equal(np.concatenate([b[1] for b in batches]), labels))
    checks.add("(a) conveyor batches == source slices", ok,
               f"{len(batches)} batches, first {batches[0][0].shape} {batches[0][0].dtype}")
    del ds, batches

    dst_img = np.empty_like(images)
    dst_lab = np.empty_like(labels)
    dst_img.fill(1)  # touch the pages
    dst_lab.fill(1)

    def memcpy(warmup):
        best = float("inf")
        for _ in range(cfg["memcpy_reps"]):
            t = now()
            np.copyto(dst_img, images)
            np.copyto(dst_lab, labels)
            best = min(best, now() - t)
        return {"epoch_s": best}

    def conveyor(warmup):
        t = now()
        ds = cv.data.Dataset.from_tensor_slices((images, labels)).batch(A_BATCH).prefetch(
            cv.data.AUTOTUNE)
        t1 = now()
        for batch in ds:
            pass
        t2 = now()
        return {"construct_s": t1 - t, "epoch_s": t2 - t1}

    variants = [("memcpy", memcpy), ("conveyor", conveyor)]

    if tf is not None:
        def tf_eager(warmup):
            t = now()
            ds = tf.data.Dataset.from_tensor_slices((images, labels)).batch(A_BATCH).prefetch(
                tf.data.AUTOTUNE)
            t1 = now()
            for batch in ds:
                pass
            t2 = now()
            return {"construct_s": t1 - t, "epoch_s": t2 - t1}

        def tf_numpy(warmup):
            t = now()
            ds = tf.data.Dataset.from_tensor_slices((images, labels)).batch(A_BATCH).prefetch(
                tf.data.AUTOTUNE)
            t1 = now()
            for batch in ds.as_numpy_iterator():
                pass
            t2 = now()
            return {"construct_s": t1 - t, "epoch_s": t2 - t1}

        variants += [("tf_eager", tf_eager), ("tf_numpy", tf_numpy)]

    res = run_rounds(variants, cfg["rounds"])
    return {"rows": rows, "bytes": nbytes, "batches": nbatches, "raw": res}


def report_a(a, tf_note):
    mb = a["bytes"] / 1e6
    rows = a["rows"]
    raw = a["raw"]
    print(f"(a) from_tensor_slices(({rows:,} x {A_FEATURES} float32, {rows:,} int64))"
          f".batch({A_BATCH}).prefetch(AUTOTUNE), one epoch = {a['batches']} batches, {mb:,.1f} MB")
    print(f"    {'variant':<36}{'epoch ms':>22}{'MB/s':>22}{'samples/s':>24}"
          f"{'construct ms':>22}")
    labels = {
        "memcpy": "memcpy (np.copyto, same bytes)",
        "conveyor": "conveyor  (for batch in ds)",
        "tf_eager": "tf.data   (for batch in ds: eager)",
        "tf_numpy": "tf.data   (as_numpy_iterator)",
    }
    for key in raw:
        ep = column(raw, key, "epoch_s")
        cons = (fmt_range(column(raw, key, "construct_s"), 1e3) if key != "memcpy"
                else "-")
        print(f"    {labels[key]:<36}{fmt_range(ep, 1e3):>22}"
              f"{fmt_range([mb / s for s in ep]):>22}"
              f"{fmt_range([rows / s for s in ep]):>24}{cons:>22}")
    if tf_note:
        print(f"    tf.data: {tf_note}")
    print("    (memcpy row: best of several copies per round; construct = building the "
          "Dataset from the NumPy arrays, excluded from the epoch time)")
    print()


# --------------------------------------------------------------------------- #
# (b) per-element overhead: Dataset.range(n), bare and with an identity map

def workload_b(cfg, tf, checks):
    n, tf_n = cfg["b_n"], cfg["b_tf_n"]
    warm_n = min(10_000, tf_n)

    total, count = 0, 0
    for x in cv.data.Dataset.range(1000).map(lambda x: x):
        total += int(x)
        count += 1
    checks.add("(b) conveyor range(1000).map(identity) elements", count == 1000 and
               total == 999 * 1000 // 2, f"count={count} sum={total}")

    def timed(make, size, numpy_iter=False):
        def fn(warmup):
            k = warm_n if warmup else size
            ds = make(k)
            it = ds.as_numpy_iterator() if numpy_iter else ds
            t = now()
            for x in it:
                pass
            return {"elapsed_s": now() - t, "n": k}
        return fn

    variants = [
        ("conveyor_bare", timed(lambda k: cv.data.Dataset.range(k), n)),
        ("conveyor_map", timed(lambda k: cv.data.Dataset.range(k).map(lambda x: x), n)),
    ]
    if tf is not None:
        variants += [
            ("tf_eager_bare", timed(lambda k: tf.data.Dataset.range(k), tf_n)),
            ("tf_eager_map", timed(lambda k: tf.data.Dataset.range(k).map(lambda x: x), tf_n)),
            ("tf_numpy_bare", timed(lambda k: tf.data.Dataset.range(k), tf_n, True)),
            ("tf_numpy_map", timed(lambda k: tf.data.Dataset.range(k).map(lambda x: x), tf_n,
                                   True)),
        ]
    res = run_rounds(variants, cfg["rounds"])
    return {"n": n, "tf_n": tf_n, "raw": res}


def ns_per_element(b, key):
    return [m["elapsed_s"] / m["n"] * 1e9 for m in b["raw"][key]]


def report_b(b, tf_note):
    print(f"(b) per-element overhead of iterating from Python: Dataset.range(n), bare and "
          f".map(lambda x: x)")
    print(f"    {'variant':<50}{'n':>10}{'ns/element':>22}{'elements/s':>24}")
    labels = {
        "conveyor_bare": "conveyor  range(n)            (for x in ds)",
        "conveyor_map": "conveyor  range(n).map(id)    (for x in ds)",
        "tf_eager_bare": "tf.data   range(n)            (eager)",
        "tf_eager_map": "tf.data   range(n).map(id)    (eager)",
        "tf_numpy_bare": "tf.data   range(n)            (as_numpy_iterator)",
        "tf_numpy_map": "tf.data   range(n).map(id)    (as_numpy_iterator)",
    }
    for key in b["raw"]:
        ns = ns_per_element(b, key)
        n = b["raw"][key][0]["n"]
        print(f"    {labels[key]:<50}{n:>10,}{fmt_range(ns):>22}"
              f"{fmt_range([1e9 / v for v in ns]):>24}")
    if tf_note:
        print(f"    tf.data: {tf_note}")
    elif b["tf_n"] != b["n"]:
        print(f"    (tf.data runs n={b['tf_n']:,} instead of {b['n']:,}: its per-element cost is "
              f"flat, and the full size takes minutes; figures are per element)")
    print()


# --------------------------------------------------------------------------- #
# (c) range(n).map(numpy fn, num_parallel_calls=AUTOTUNE).batch(256)

def workload_c(cfg, tf, checks):
    n = cfg["c_n"]
    warm_n = min(2_000, n)

    expected = np.array([c_fn(np.int64(i)) for i in range(2000)], np.float32)
    got = np.concatenate(list(cv.data.Dataset.range(2000).map(
        c_fn, num_parallel_calls=cv.data.AUTOTUNE).batch(C_BATCH)))
    checks.add("(c) conveyor parallel map output == fn(x) in order",
               got.dtype == np.float32 and np.array_equal(got, expected),
               f"{got.shape} {got.dtype}")

    def conveyor(warmup):
        k = warm_n if warmup else n
        ds = cv.data.Dataset.range(k).map(c_fn, num_parallel_calls=cv.data.AUTOTUNE).batch(
            C_BATCH)
        t = now()
        for batch in ds:
            pass
        return {"elapsed_s": now() - t, "n": k}

    variants = [("conveyor", conveyor)]
    if tf is not None:
        def tf_map(x):
            y = tf.numpy_function(c_fn, [x], Tout=tf.float32)
            y.set_shape([])
            return y

        def tf_eager(warmup):
            k = warm_n if warmup else n
            ds = tf.data.Dataset.range(k).map(tf_map, num_parallel_calls=tf.data.AUTOTUNE).batch(
                C_BATCH)
            t = now()
            for batch in ds:
                pass
            return {"elapsed_s": now() - t, "n": k}

        variants.append(("tf_eager", tf_eager))
    res = run_rounds(variants, cfg["rounds"])
    return {"n": n, "raw": res}


def report_c(c, tf_note):
    print(f"(c) range({c['n']:,}).map(lambda x: np.sin(np.full({C_WIDTH}, x, np.float32)).sum(), "
          f"num_parallel_calls=AUTOTUNE).batch({C_BATCH})")
    print(f"    {'variant':<58}{'elements/s':>24}{'ms':>22}")
    labels = {"conveyor": "conveyor  (Python fn; for batch in ds)",
              "tf_eager": "tf.data   (tf.numpy_function(fn); for batch in ds: eager)"}
    for key in c["raw"]:
        el = [m["n"] / m["elapsed_s"] for m in c["raw"][key]]
        print(f"    {labels[key]:<58}{fmt_range(el):>24}"
              f"{fmt_range(column(c['raw'], key, 'elapsed_s'), 1e3):>22}")
    if tf_note:
        print(f"    tf.data: {tf_note}")
    print()


# --------------------------------------------------------------------------- #
# ratios

def ratios(a, b, c, have_tf):
    """Rows: (label, per-round ratios, goal or None)."""
    rows = []
    ep = lambda key: column(a["raw"], key, "epoch_s")
    # throughput ratio conveyor/x == time ratio x/conveyor
    rows.append(("(a) conveyor / memcpy bandwidth", paired_ratio(ep("memcpy"), ep("conveyor")),
                 GOALS["a_vs_memcpy"]))
    if have_tf:
        rows.append(("(a) conveyor / tf.data throughput (eager)",
                     paired_ratio(ep("tf_eager"), ep("conveyor")), GOALS["a_vs_tf"]))
        rows.append(("(a) conveyor / tf.data throughput (as_numpy_iterator)",
                     paired_ratio(ep("tf_numpy"), ep("conveyor")), GOALS["a_vs_tf"]))
        for cvk, tfk, label in [
                ("conveyor_bare", "tf_eager_bare", "bare range, eager"),
                ("conveyor_map", "tf_eager_map", "range.map(id), eager"),
                ("conveyor_bare", "tf_numpy_bare", "bare range, as_numpy_iterator"),
                ("conveyor_map", "tf_numpy_map", "range.map(id), as_numpy_iterator")]:
            rows.append((f"(b) tf.data / conveyor ns per element ({label})",
                         paired_ratio(ns_per_element(b, tfk), ns_per_element(b, cvk)),
                         GOALS["b"]))
        rows.append(("(c) conveyor / tf.data elements/s (tf: numpy_function)",
                     paired_ratio(column(c["raw"], "tf_eager", "elapsed_s"),
                                  column(c["raw"], "conveyor", "elapsed_s")), None))
    return rows


def report_ratios(rows, have_tf, tf_note):
    print("Ratios (per round from the paired runs; median [min-max]; higher = conveyor better)")
    print(f"    {'ratio':<70}{'value':>22}   {'goal':<10}{'met (median)'}")
    for label, vals, goal in rows:
        g = f">= {goal:g}x" if goal is not None else "report"
        met = "-" if goal is None else ("yes" if statistics.median(vals) >= goal else "NO")
        print(f"    {label:<70}{fmt_range(vals) + 'x':>22}   {g:<10}{met}")
    if not have_tf:
        print(f"    tf.data: {tf_note}; only the memcpy ratio can be reported.")
    print()


# --------------------------------------------------------------------------- #

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=None, help="timed rounds (default 5; --quick: 2)")
    p.add_argument("--quick", action="store_true", help="smaller sizes, fewer rounds (smoke test)")
    p.add_argument("--json", metavar="PATH", help="also write all results as JSON to PATH")
    p.add_argument("--no-tf", action="store_true", help="do not import TensorFlow (conveyor only)")
    p.add_argument("--tf-range-n", type=int, default=None,
                   help="(b) elements for tf.data (default 200,000; --quick: 20,000)")
    p.add_argument("--watchdog", type=float, default=1800,
                   help="dump tracebacks and exit if the run takes longer than this many "
                        "seconds (catches hangs; default 1800)")
    args = p.parse_args(argv)

    cfg = dict(QUICK if args.quick else FULL)
    if args.rounds is not None:
        if args.rounds < 1:
            p.error("--rounds must be >= 1")
        cfg["rounds"] = args.rounds
    if args.tf_range_n is not None:
        cfg["b_tf_n"] = args.tf_range_n
    if args.watchdog > 0:
        faulthandler.dump_traceback_later(args.watchdog, exit=True)

    t_start = now()
    t = now()
    tf, tf_note = import_tf(args.no_tf)
    tf_import_s = now() - t
    info = machine_info(tf)

    print("conveyor vs tf.data benchmark" + (" (--quick)" if args.quick else ""))
    print(f"machine: {info['cpu_count']} CPUs ({info['cpus_usable']} usable), {info['cpu_model']}; "
          f"{info['platform']}")
    print(f"versions: python {info['python']}, numpy {info['numpy']}, conveyor {info['conveyor']}, "
          f"tensorflow {info['tensorflow'] or '-'}")
    if tf is None:
        print(f"tf.data: {tf_note}; printing conveyor figures only")
    else:
        print(f"(import tensorflow took {tf_import_s:.1f} s, not counted)")
    print(f"rounds: {cfg['rounds']} timed (+1 untimed warm-up), conveyor and tf.data alternating "
          f"in each round; figures are median [min-max] over rounds")
    print()

    checks = Checks()
    a = workload_a(cfg, tf, checks)
    report_a(a, tf_note)
    b = workload_b(cfg, tf, checks)
    report_b(b, tf_note)
    c = workload_c(cfg, tf, checks)
    report_c(c, tf_note)

    rows = ratios(a, b, c, tf is not None)
    report_ratios(rows, tf is not None, tf_note)

    bad = [ch for ch in checks.items if not ch["ok"]]
    print("conveyor output checks: " + ("all ok" if not bad else "FAILED"))
    for ch in checks.items:
        print(f"    [{'ok' if ch['ok'] else 'FAIL'}] {ch['name']} ({ch['detail']})")
    total_s = now() - t_start
    print(f"total run time {total_s:.1f} s")
    faulthandler.cancel_dump_traceback_later()

    if args.json:
        out = {
            "machine": info, "config": cfg, "quick": args.quick, "tf_available": tf is not None,
            "tf_note": tf_note, "goals": GOALS,
            "a": a, "b": b, "c": c,
            "ratios": [{"name": label, "goal": goal, **summary(vals)}
                       for label, vals, goal in rows],
            "checks": checks.items, "total_s": total_s,
        }
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
        print(f"wrote {args.json}")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
