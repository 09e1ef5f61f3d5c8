#!/usr/bin/env python3
"""A tf.strings text pipeline, conveyor vs tf.data.

A text file of generated sentences (mixed case, punctuation, blank and
whitespace-only lines) is written once, then read by

  TextLineDataset -> map(lower -> regex_replace(punctuation, "") -> strip,
                         num_parallel_calls=AUTOTUNE)
                  -> filter(length > 0) -> batch(256)

on each side: conveyor runs the map as a traced native program (no GIL),
tf.data as its graph function. Both sides run alternately in one process,
round by round, after one untimed warm-up each; elements/s are printed as
median [min-max] with the per-round ratio.

    python benchmarks/text.py              # 40,000 lines, 5 rounds (under a minute)
    python benchmarks/text.py --quick      # 10,000 lines, 2 rounds
    python benchmarks/text.py --no-tf
"""
import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

import conveyor as cv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import fmt_range, import_tf, machine_info, run_rounds, summary  # noqa: E402

PUNCTUATION = r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]"
WORDS = ("The quick brown Fox jumps over the lazy Dog. Hello, World! It's a "
         "TEST-case; (really) \"quoted\" words: one/two #tags @users 100% done?").split()


def write_text(path, lines, seed=7):
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        for i in range(lines):
            kind = i % 20
            if kind == 0:
                f.write("\n")
            elif kind == 1:
                f.write("  \t !!! ... \n")  # empty after cleaning
            else:
                n = int(rng.integers(4, 16))
                f.write("  " * (kind % 3) + " ".join(rng.choice(WORDS, n)) + "\n")


def pipeline(lib, path):
    def clean(line):
        line = lib.strings.lower(line)
        line = lib.strings.regex_replace(line, PUNCTUATION, "")
        return lib.strings.strip(line)

    ds = lib.data.TextLineDataset(path)
    ds = ds.map(clean, num_parallel_calls=lib.data.AUTOTUNE)
    ds = ds.filter(lambda line: lib.strings.length(line) > 0)
    return ds.batch(256)


def epoch(ds):
    start, count = time.perf_counter(), 0
    for batch in ds:
        count += len(batch)
    return time.perf_counter() - start, count


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-tf", action="store_true")
    args = parser.parse_args(argv)
    lines = args.lines or (10_000 if args.quick else 40_000)
    rounds = args.rounds or (2 if args.quick else 5)
    tf, why = import_tf(args.no_tf)
    print(machine_info(tf))
    if tf is None:
        print(f"tf.data: {why}")
    folder = os.path.join(tempfile.gettempdir(), "conveyor-bench-text")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"lines-{lines}.txt")
    if not os.path.exists(path):
        write_text(path + ".tmp", lines)
        os.replace(path + ".tmp", path)
    ours = pipeline(cv, path)
    assert "python" not in repr(ours), repr(ours)  # the map and the filter run natively
    expected = None
    if tf is not None:  # both sides give the same lines
        a = np.concatenate(list(ours))
        b = np.concatenate([x for x in pipeline(tf, path).as_numpy_iterator()])
        assert (a == b).all(), "conveyor and tf.data disagree"
        expected = len(a)
    libs = [("conveyor", cv)] + ([("tf.data", tf)] if tf is not None else [])
    variants = []
    for name, lib in libs:
        def run(warmup, lib=lib):
            seconds, count = epoch(pipeline(lib, path))
            assert expected is None or count == expected, (count, expected)
            return {"s": seconds, "n": count}
        variants.append((name, run))
    results = run_rounds(variants, rounds)
    rates = {name: [m["n"] / m["s"] for m in results[name]] for name, _ in libs}
    print(f"\n{lines:,} lines -> lower -> regex_replace -> strip -> filter -> batch(256), "
          f"{rounds} rounds")
    print(f"{'':<12}{'median':>12}{'min':>12}{'max':>12}   elements/s")
    for name, _ in libs:
        s = summary(rates[name])
        print(f"{name:<12}{s['median']:>12,.0f}{s['min']:>12,.0f}{s['max']:>12,.0f}")
    if tf is not None:
        ratio = [a / b for a, b in zip(rates["conveyor"], rates["tf.data"])]
        print(f"conveyor / tf.data (paired per round): {fmt_range(ratio)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
