#!/usr/bin/env python3
"""What saving an iterator's position costs while the pipeline runs (issue 13).

A training loop that checkpoints every `--every` steps calls ``it.save()``
between two ``next()`` calls. Goal: no measurable throughput loss at one save
per 1,000 steps. Each workload runs `--steps` steps two ways, alternating
within each round (so drift on a shared machine hits both alike):

* ``plain``: ``for _ in range(steps): next(it)``;
* ``saving``: the same, plus ``it.save()`` every `--every` steps.

Printed per workload: the throughput ratio saving / plain per round (min /
median / max), the time of one save (median, microseconds) and the size of
the state (bytes). Timings are printed, never asserted.

    python benchmarks/save_cost.py                  # 5 rounds, ~1 min on 2 cores
    python benchmarks/save_cost.py --rounds 9 --every 100
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import conveyor as cv  # noqa: E402
from conveyor.data import AUTOTUNE  # noqa: E402
from records import record_payloads, write_shards  # noqa: E402

D = cv.data.Dataset


def workloads(folder):
    """{name: a function building the dataset}: repeated, so steps never run out."""
    rows = np.random.default_rng(0).standard_normal((20_000, 64)).astype(np.float32)
    write_shards(folder, "save", record_payloads(8_000, 1000, seed=1), "", None)
    pattern = os.path.join(folder, "save-*.tfrecord")
    return {
        "range.map.batch.prefetch": lambda: (
            D.range(10**12).map(lambda x: x * 2, num_parallel_calls=AUTOTUNE)
            .batch(64).prefetch(AUTOTUNE)),
        "slices.map.batch.prefetch": lambda: (
            D.from_tensor_slices(rows).repeat().map(lambda x: x * 2.0 + 1.0,
                                                    num_parallel_calls=AUTOTUNE)
            .batch(128).prefetch(AUTOTUNE)),
        "tfrecord interleave.batch.prefetch": lambda: (
            D.list_files(pattern, shuffle=False).repeat()
            .interleave(cv.data.TFRecordDataset, cycle_length=2, num_parallel_calls=2)
            .batch(64).prefetch(AUTOTUNE)),
    }


def run(make, steps, every):
    """(seconds, [save seconds], last state size) of one pass of `steps` steps."""
    it = iter(make())
    next(it)  # start-up is not what is measured
    saves, size = [], 0
    start = time.perf_counter()
    for step in range(1, steps + 1):
        next(it)
        if every and step % every == 0:
            t = time.perf_counter()
            size = len(it.save())
            saves.append(time.perf_counter() - t)
    seconds = time.perf_counter() - start
    it.close()
    return seconds, saves, size


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5_000)
    parser.add_argument("--every", type=int, default=1_000)
    args = parser.parse_args(argv)
    print(f"{os.cpu_count()} CPUs, {args.rounds} rounds of {args.steps} steps, a save every "
          f"{args.every} steps; ratio = throughput saving / plain (per round)")
    with tempfile.TemporaryDirectory() as folder:
        for name, make in workloads(folder).items():
            try:
                run(make, 10, 5)
            except cv.errors.OpError as e:
                print(f"{name}: cannot save yet ({e.message.splitlines()[0]})")
                continue
            ratios, save_times, size = [], [], 0
            for r in range(args.rounds):
                order = [0, args.every] if r % 2 == 0 else [args.every, 0]
                took = {}
                for every in order:
                    seconds, saves, s = run(make, args.steps, every)
                    took[every] = seconds
                    if every:
                        save_times += saves
                        size = s
                ratios.append(took[0] / took[args.every])
            print(f"{name}: ratio {min(ratios):.3f} / {statistics.median(ratios):.3f} / "
                  f"{max(ratios):.3f}; one save {statistics.median(save_times) * 1e6:.0f} us "
                  f"(max {max(save_times) * 1e6:.0f}); state {size} bytes", flush=True)


if __name__ == "__main__":
    main()
