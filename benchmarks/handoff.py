#!/usr/bin/env python3
"""Hand-off cost: what an asynchronous stage adds per element, from Python.

Issue 11, part 4 ("cheap hand-offs"): `range(n).prefetch(64)` should cost no
more than 2x `range(n)` per element when iterated from Python. Cases, each
`for x in ds: pass` over n elements, reported in ns per element:

    range        Dataset.range(n)                                   (the synchronous path)
    prefetch64   Dataset.range(n).prefetch(64)
    prefetchAT   Dataset.range(n).prefetch(AUTOTUNE)
    map          Dataset.range(n).map(lambda x: x + 1, num_parallel_calls=AUTOTUNE)
    map_batch    ...map(as above).batch(256).prefetch(AUTOTUNE)     (per element, not per batch)

Every implementation runs in its own long-lived child process (conveyor from
this tree; optionally an older conveyor build with --before PATH, e.g. a
build of main; tf.data), driven over a pipe. One untimed warm-up of every
case, then `--rounds` rounds; in each round every case runs once in every
child, children alternating (conveyor, before, tf, conveyor, ...), so noise
on a shared machine hits all of them. Figures are median [min-max] over the
rounds; a ratio is computed from the runs paired in one round, then
summarised the same way. Besides wall time each child reports CPU time per
element (user + system, all threads: steadier on a busy machine) and
context switches per element (voluntary + involuntary, all threads).

The limit for an asynchronous stage is the synchronous path: `range(n)`
already does the producing and the converting, on one thread, with no
hand-off. The goal: prefetch64 / range <= 2.0.

    python benchmarks/handoff.py                       # 5 rounds
    python benchmarks/handoff.py --before /path/to/old/tree --rounds 7
    python benchmarks/handoff.py --no-tf --n 200000

tf.data runs n / 10 elements (--tf-n): at ~20 us/element the full size takes
minutes, and its per-element cost does not depend on n. Timings are printed,
never asserted; the exit status is non-zero only if an output check fails.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CASES = ["range", "prefetch64", "prefetchAT", "map", "map_batch"]
LABELS = {
    "range": "range(n)",
    "prefetch64": "range(n).prefetch(64)",
    "prefetchAT": "range(n).prefetch(AUTOTUNE)",
    "map": "range(n).map(x+1, AUTOTUNE)",
    "map_batch": "...map(x+1, AUTOTUNE).batch(256).prefetch(AUTOTUNE)",
}
GOAL = 2.0  # prefetch64 / range


# --------------------------------------------------------------------------- #
# child: builds and times one case per request


def child(lib):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import gc
    import resource
    import time

    if lib == "tf":
        import tensorflow as tf

        D, AT = tf.data.Dataset, tf.data.AUTOTUNE
    else:
        import conveyor as cv

        D, AT = cv.data.Dataset, cv.data.AUTOTUNE

    def build(case, n):
        if case == "range":
            return D.range(n)
        if case == "prefetch64":
            return D.range(n).prefetch(64)
        if case == "prefetchAT":
            return D.range(n).prefetch(AT)
        mapped = D.range(n).map(lambda x: x + 1, num_parallel_calls=AT)
        if case == "map":
            return mapped
        return mapped.batch(256).prefetch(AT)

    def check(case, n):
        """The elements, in order: a hand-off must not change them."""
        import numpy as np

        got = []
        for x in build(case, n):
            got.extend(int(v) for v in np.ravel(x.numpy() if hasattr(x, "numpy") else x))
        want = list(range(n)) if case.startswith(("range", "prefetch")) else list(range(1, n + 1))
        return got == want

    def usage():
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime, r.ru_nvcsw + r.ru_nivcsw

    out = sys.stdout
    out.write(json.dumps({"ready": lib, "file": getattr(sys.modules.get("conveyor"), "__file__", None)})
              + "\n")
    out.flush()
    for line in sys.stdin:
        req = json.loads(line)
        case, n = req["case"], req["n"]
        if req.get("check"):
            out.write(json.dumps({"ok": check(case, n)}) + "\n")
            out.flush()
            continue
        ds = build(case, n)
        gc.collect()
        cpu0, cs0 = usage()
        t0 = time.perf_counter()
        for x in ds:
            pass
        wall = time.perf_counter() - t0
        cpu1, cs1 = usage()
        del ds, x
        out.write(json.dumps({"wall_ns": wall / n * 1e9, "cpu_ns": (cpu1 - cpu0) / n * 1e9,
                              "cs": (cs1 - cs0) / n}) + "\n")
        out.flush()


# --------------------------------------------------------------------------- #
# parent


class Child:
    def __init__(self, name, lib, path):
        env = dict(os.environ)
        if path:
            env["PYTHONPATH"] = path + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.name = name
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", lib],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env, cwd=path or ROOT)
        self.hello = json.loads(self.proc.stdout.readline())

    def ask(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name}: child exited")
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def summary(values):
    s = sorted(values)
    return statistics.median(s), s[0], s[-1]


def fmt(values, digits=0):
    med, lo, hi = summary(values)
    return f"{med:,.{digits}f} [{lo:,.{digits}f}-{hi:,.{digits}f}]"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=300_000, help="elements per conveyor run")
    ap.add_argument("--tf-n", type=int, default=0, help="elements per tf.data run (default n/10)")
    ap.add_argument("--before", help="a conveyor source tree with a built engine, to compare against")
    ap.add_argument("--no-tf", action="store_true")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--json", help="write the raw measurements here")
    args = ap.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    cases = args.cases.split(",")
    tf_n = args.tf_n or max(1000, args.n // 10)

    children = [Child("conveyor", "conveyor", ROOT)]
    if args.before:
        children.append(Child("before", "conveyor", os.path.abspath(args.before)))
    tf_note = None
    if not args.no_tf:
        try:
            children.append(Child("tf.data", "tf", None))
        except Exception as e:  # no TensorFlow: conveyor only
            tf_note = f"tf.data not available ({e})"
    size = {c.name: (tf_n if c.name == "tf.data" else args.n) for c in children}
    for c in children:
        print(f"# {c.name}: {c.hello.get('file') or 'tensorflow'}, n={size[c.name]:,}")
    try:
        print(f"# machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} at start")
    except OSError:
        pass

    failed = []
    for c in children:
        for case in cases:
            if not c.ask(case=case, n=1000, check=True)["ok"]:
                failed.append(f"{c.name} {case}")
            c.ask(case=case, n=min(size[c.name], 20_000))  # warm-up, untimed
    raw = {c.name: {case: [] for case in cases} for c in children}
    for r in range(args.rounds):
        for case in cases:
            for c in children:
                raw[c.name][case].append(c.ask(case=case, n=size[c.name]))
    for c in children:
        c.close()

    def col(name, case, key="wall_ns"):
        return [m[key] for m in raw[name][case]]

    print(f"\nns per element from Python ({args.rounds} rounds, median [min-max]); "
          f"cpu = CPU ns per element, all threads; cs = context switches per element")
    print(f"{'case':<54}{'impl':<10}{'wall ns':>26}{'cpu ns':>24}{'cs':>8}")
    for case in cases:
        for c in children:
            cs = statistics.median(col(c.name, case, "cs"))
            print(f"{LABELS[case]:<54}{c.name:<10}{fmt(col(c.name, case)):>26}"
                  f"{fmt(col(c.name, case, 'cpu_ns')):>24}{cs:>8.3f}")

    print("\nratios, paired per round, median [min-max]")
    names = [c.name for c in children]
    for case in cases:
        if case != "range" and "range" in cases:
            for name in names:
                rat = [a / b for a, b in zip(col(name, case), col(name, "range"))]
                goal = f"   goal <= {GOAL:.1f}: {'met' if summary(rat)[0] <= GOAL else 'missed'}" \
                    if case == "prefetch64" and name == "conveyor" else ""
                print(f"  {name:<9}{LABELS[case] + ' / range(n)':<70}{fmt(rat, 2):>22}{goal}")
        if "tf.data" in names:
            rat = [t / v for t, v in zip(col("tf.data", case), col("conveyor", case))]
            print(f"  {'tf/conv':<9}{LABELS[case] + ': tf.data ns / conveyor ns':<70}{fmt(rat, 1):>22}")
        if "before" in names:
            rat = [b / v for b, v in zip(col("before", case), col("conveyor", case))]
            print(f"  {'speedup':<9}{LABELS[case] + ': before ns / conveyor ns':<70}{fmt(rat, 2):>22}")
    if tf_note:
        print(f"\n{tf_note}")
    if failed:
        print("\nOUTPUT CHECK FAILED: " + ", ".join(failed))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": args.n, "tf_n": tf_n, "rounds": args.rounds, "raw": raw,
                       "failed": failed}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
