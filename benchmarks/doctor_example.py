"""The worked example of docs/performance.md: the pipeline doctor on an image
pipeline before and after the fixes it suggests.

    python benchmarks/doctor_example.py                 # 256 images, 12 steps of 20 ms
    python benchmarks/doctor_example.py --images 64 --steps 4

The images are synthetic 375x500 JPEGs (smooth noise, encoded here) kept in
a dict that stands for an object store: fetching one costs --latency seconds
(a sleep, as a network round trip would). They are decoded and resized to
224x224, flipped at random and batched by 16; a training step is simulated
by sleeping --step-time seconds. "before" fetches and decodes on one thread
and flips in NumPy with np.random; "after" is what the doctor's remedies
give: parallel maps, conveyor's seeded random_flip_left_right, a prefetch at
the end. conveyor only (this is about conveyor's own tool).
"""
import argparse
import time

import numpy as np

import conveyor as tf
from conveyor.data.experimental import diagnose


def make_jpegs(n, seed=0):
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, size=(n, 24, 32, 3)).astype(np.float32)
    images = tf.image.resize(small, [375, 500]).astype(np.uint8)  # smooth, photo-sized
    return [tf.io.encode_jpeg(img, quality=90).numpy() for img in images]


def pipelines(jpegs, latency):
    store = dict(enumerate(jpegs))

    def fetch(key):
        """A read from an object store: Python, mostly waiting."""
        def get(k):
            time.sleep(latency)
            return np.array(store[int(k)], dtype=object)
        return tf.numpy_function(get, [key], tf.string), key % 10

    def load(jpeg, label):
        image = tf.io.decode_jpeg(jpeg, channels=3)
        return tf.image.resize(image, [224, 224]), label

    def augment_numpy(image, label):
        """A NumPy augmentation: runs in Python, draws from np.random."""
        def flip(img):
            return img[:, ::-1].copy() if np.random.rand() < 0.5 else img
        return tf.numpy_function(flip, [image], tf.float32), label

    def augment(image, label):
        return tf.image.random_flip_left_right(image, seed=2), label

    keys = lambda: tf.data.Dataset.range(len(jpegs)).repeat()  # noqa: E731

    def before():
        return keys().map(fetch).map(load).map(augment_numpy).batch(16)

    def after():
        return (keys().map(fetch, num_parallel_calls=16)
                .map(load, num_parallel_calls=tf.data.AUTOTUNE)
                .map(augment, num_parallel_calls=tf.data.AUTOTUNE)
                .batch(16).prefetch(tf.data.AUTOTUNE))
    return before, after


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=256)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--step-time", type=float, default=0.02)
    parser.add_argument("--latency", type=float, default=0.004)
    args = parser.parse_args()
    before, after = pipelines(make_jpegs(args.images), args.latency)
    step = lambda batch: time.sleep(args.step_time)  # noqa: E731
    for name, factory in (("before", before), ("after", after)):
        print(f"== {name}")
        diagnose(factory, args.steps, step)
        print()


if __name__ == "__main__":
    main()
