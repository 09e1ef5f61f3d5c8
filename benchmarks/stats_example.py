"""The statistics example of docs/performance.md: iterator.stats() and the
monitor on the image pipeline of doctor_example.py, with one stage left
sequential, then fixed.

    python benchmarks/stats_example.py                  # 48 steps of 20 ms per pipeline
    python benchmarks/stats_example.py --steps 100 --every 1

"slow": fetch runs on 16 threads and the flip with AUTOTUNE, but `load`
(decode + resize) was left without num_parallel_calls, so it runs on the
turns of the stage above it, one element at a time. "fixed": `load` with
num_parallel_calls=AUTOTUNE. Each runs under monitor(every=..., stall_after=...)
with logging at INFO, then prints iterator.stats() and the autotuner's
choices. conveyor only.
"""
import argparse
import logging
import time

import numpy as np

import conveyor as tf
from conveyor.data.experimental import monitor
from doctor_example import make_jpegs

AUTOTUNE = tf.data.AUTOTUNE


def pipelines(jpegs, latency):
    store = dict(enumerate(jpegs))

    def fetch(key):
        def get(k):
            time.sleep(latency)  # an object store's round trip
            return np.array(store[int(k)], dtype=object)
        return tf.numpy_function(get, [key], tf.string), key % 10

    def load(jpeg, label):
        image = tf.io.decode_jpeg(jpeg, channels=3)
        return tf.image.resize(image, [224, 224]), label

    def augment(image, label):
        return tf.image.random_flip_left_right(image, seed=2), label

    def keys():
        return tf.data.Dataset.range(len(jpegs)).repeat()

    def slow():
        return (keys().map(fetch, num_parallel_calls=16).map(load)
                .map(augment, num_parallel_calls=AUTOTUNE).batch(16).prefetch(AUTOTUNE))

    def fixed():
        return (keys().map(fetch, num_parallel_calls=16).map(load, num_parallel_calls=AUTOTUNE)
                .map(augment, num_parallel_calls=AUTOTUNE).batch(16).prefetch(AUTOTUNE))
    return {"slow": slow, "fixed": fixed}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=256)
    parser.add_argument("--steps", type=int, default=48)
    parser.add_argument("--step-time", type=float, default=0.02)
    parser.add_argument("--latency", type=float, default=0.004)
    parser.add_argument("--every", type=float, default=0.5)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    jpegs = make_jpegs(args.images)
    for name, make in pipelines(jpegs, args.latency).items():
        print(f"== {name}", flush=True)
        it = iter(make())
        start = time.perf_counter()
        with monitor(it, every=args.every, stall_after=5.0):
            for _, batch in zip(range(args.steps), it):
                time.sleep(args.step_time)  # the training step
        seconds = time.perf_counter() - start
        stats = it.stats()
        it.close()
        print(f"{args.steps} steps in {seconds:.2f} s ({args.steps / seconds:.1f} steps/s); "
              f"next() waited {stats.next_wait:.2f} s; slowest stage: {stats.slowest_stage()}")
        print(stats)
        for c in stats.choices:
            print(f"  at {c.at:6.3f} s: {c.stage} {c.before} -> {c.after} "
                  f"(bottleneck {c.bottleneck})")
        print(flush=True)


if __name__ == "__main__":
    main()
