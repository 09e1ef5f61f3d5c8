#!/usr/bin/env python3
"""A new dataset per epoch against one dataset iterated again (issue 26).

Training scripts often build the pipeline in a function called once per
epoch:

    def make():
        return tf.data.Dataset.from_tensor_slices((x, y)).batch(128).prefetch(AUTOTUNE)

so whatever a dataset costs to create, to start iterating or to finish an
epoch is paid every epoch. For x of 1 MB, 100 MB (and, with --big, 1 GB) of
float32 rows of 784 values and y int64 labels, this times, over --rounds
rounds (min/median/max):

  first   iter(ds) up to the first batch
  epoch   a whole epoch (iter to StopIteration)
  new:    make() in every round (creation included)
  again:  one dataset made once, iterated in every round

conveyor beside tf.data when `import tensorflow` works.
"""
import argparse
import statistics
import time

import numpy as np

SIZES = {"1MB": 1 << 20, "100MB": 100 << 20, "1GB": 1 << 30}


def data(nbytes):
    rows = max(1, nbytes // (784 * 4))
    rng = np.random.default_rng(0)
    return rng.random((rows, 784), dtype=np.float32), rng.integers(0, 10, rows)


def make_factory(lib, x, y):
    def make():
        return lib.data.Dataset.from_tensor_slices((x, y)).batch(128).prefetch(
            lib.data.AUTOTUNE)
    return make


def time_first(make_ds, fresh, rounds):
    ds, out = make_ds(), []
    for _ in range(rounds):
        t = time.perf_counter()
        d = make_ds() if fresh else ds
        it = iter(d)
        next(it)
        out.append(time.perf_counter() - t)
        del it
    return out


def time_epoch(make_ds, fresh, rounds):
    ds, out = make_ds(), []
    for _ in range(rounds):
        t = time.perf_counter()
        d = make_ds() if fresh else ds
        for _ in d:
            pass
        out.append(time.perf_counter() - t)
    return out


def fmt(times):
    ms = [t * 1e3 for t in times]
    return f"{statistics.median(ms):8.2f} [{min(ms):.2f}-{max(ms):.2f}] ms"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--big", action="store_true", help="also 1 GB")
    parser.add_argument("--no-tf", action="store_true", help="conveyor only")
    args = parser.parse_args()
    libs = []
    import conveyor
    libs.append(("conveyor", conveyor))
    if not args.no_tf:
        try:
            import tensorflow as tf
            libs.append(("tf.data", tf))
        except ImportError:
            pass
    sizes = ["1MB", "100MB"] + (["1GB"] if args.big else [])
    print(f"median [min-max] over {args.rounds} rounds")
    for size in sizes:
        x, y = data(SIZES[size])
        print(f"\n{size}: x {x.shape} float32 ({x.nbytes / 1e6:.1f} MB), batch 128")
        for name, lib in libs:
            make = make_factory(lib, x, y)
            for fresh in (True, False):
                kind = "new dataset" if fresh else "same dataset"
                first = time_first(make, fresh, args.rounds)
                epoch = time_epoch(make, fresh, args.rounds)
                print(f"  {name:9s} {kind:13s} first {fmt(first)}   epoch {fmt(epoch)}")


if __name__ == "__main__":
    main()
