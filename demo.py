#!/usr/bin/env python3
"""conveyor demo: a tf.data-style input pipeline without TensorFlow.

    python demo.py            # ~20 s on 2 cores
    python demo.py --no-tf    # skip the tf.data comparison

It makes 60,000 synthetic 28x28 uint8 "images" with int64 labels, then runs
one epoch of the same input pipeline three ways:

  * a naive Python loop: normalise each sample, np.stack every 128 into a batch;
  * conveyor: from_tensor_slices -> map(normalise, AUTOTUNE) -> batch(128) -> prefetch;
  * tf.data (if TensorFlow is installed): the same pipeline, with the same
    Python function through tf.numpy_function, and also with native TF ops.

and prints samples/s and ratios. Each is timed as the best of two epochs
after a short warm-up.
"""
import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # quiet TensorFlow's C++ logging

import numpy as np

import conveyor as cv
# conveyor speaks the tf.data API, so existing input code runs unchanged with
#     import conveyor as tf
#     ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(128).prefetch(tf.data.AUTOTUNE)

N_SAMPLES = 60_000
BATCH = 128
MEAN, STD = 0.1307, 0.3081  # MNIST's pixel mean and std


def make_data(n, seed=0):
    """Synthetic MNIST-shaped data: uint8 images (n, 28, 28), int64 labels (n,)."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n, dtype=np.int64)
    return images, labels


def normalise(image, label):
    """Per-sample preprocessing, in plain NumPy: uint8 [0, 255] -> standardised float32."""
    image = (image.astype(np.float32) * np.float32(1 / 255) - np.float32(MEAN)) / np.float32(STD)
    return image, label


# --- the three ways to produce batches ---------------------------------------

def naive_batches(images, labels):
    """What you would write without a data library."""
    for start in range(0, len(images), BATCH):
        xs, ys = [], []
        for i in range(start, min(start + BATCH, len(images))):
            x, y = normalise(images[i], labels[i])
            xs.append(x)
            ys.append(y)
        yield np.stack(xs), np.stack(ys)


def conveyor_dataset(images, labels):
    ds = cv.data.Dataset.from_tensor_slices((images, labels))
    ds = ds.map(normalise, num_parallel_calls=cv.data.AUTOTUNE)
    ds = ds.batch(BATCH)
    ds = ds.prefetch(cv.data.AUTOTUNE)
    return ds


def tf_dataset(tf, images, labels, native):
    if native:
        def fn(image, label):  # the TensorFlow way: traced TF ops
            image = (tf.cast(image, tf.float32) * (1 / 255) - MEAN) / STD
            return image, label
    else:
        def fn(image, label):  # the same Python function as conveyor runs
            image, label = tf.numpy_function(normalise, [image, label], (tf.float32, tf.int64))
            image.set_shape((28, 28))
            label.set_shape(())
            return image, label
    ds = tf.data.Dataset.from_tensor_slices((images, labels))
    ds = ds.map(fn, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(BATCH)
    ds = ds.prefetch(tf.data.AUTOTUNE)
    return ds


def time_epoch(make_batches, epochs, step_s=0.0):
    """Best-of-`epochs` wall time for one pass, iterating as a training loop would.
    `step_s` simulates an accelerator step per batch: the host thread waits
    (time.sleep) as it waits for a GPU, so a pipeline that works ahead hides
    behind it."""
    it = make_batches()
    for _, _ in zip(range(20), it):  # warm-up: a few batches, untimed
        pass
    best, count = float("inf"), 0
    for _ in range(epochs):
        count = 0
        t = time.perf_counter()
        for x, y in make_batches():
            count += y.shape[0]
            if step_s:
                time.sleep(step_s)
        best = min(best, time.perf_counter() - t)
    return best, count


def main(argv=None):
    p = argparse.ArgumentParser(description="conveyor demo")
    p.add_argument("--no-tf", action="store_true", help="skip the tf.data comparison")
    p.add_argument("--samples", type=int, default=N_SAMPLES)
    p.add_argument("--epochs", type=int, default=2, help="timed epochs per pipeline (best is kept)")
    p.add_argument("--step-ms", type=float, default=2.0,
                   help="simulated accelerator step per batch for the second table (0: skip)")
    args = p.parse_args(argv)

    tf, tf_note = None, "skipped (--no-tf)"
    if not args.no_tf:
        try:
            import tensorflow as tf
        except Exception:
            tf, tf_note = None, "not installed"

    images, labels = make_data(args.samples)
    print(f"conveyor {cv.__version__} demo: {args.samples:,} synthetic 28x28 uint8 images + "
          f"int64 labels, {os.cpu_count()} CPUs")
    print(f"pipeline: from_tensor_slices -> map(normalise, num_parallel_calls=AUTOTUNE) -> "
          f"batch({BATCH}) -> prefetch(AUTOTUNE); one epoch, best of {args.epochs}")
    print()

    ds = conveyor_dataset(images, labels)
    rows = [("naive Python loop + np.stack", time_epoch(lambda: naive_batches(images, labels),
                                                        args.epochs))]
    rows.append(("conveyor (import conveyor as cv)", time_epoch(lambda: iter(ds), args.epochs)))
    if tf is not None:
        tds = tf_dataset(tf, images, labels, native=False)
        rows.append(("tf.data, same fn via tf.numpy_function", time_epoch(lambda: iter(tds),
                                                                           args.epochs)))
        tds_native = tf_dataset(tf, images, labels, native=True)
        rows.append(("tf.data, native TF ops (traced)", time_epoch(lambda: iter(tds_native),
                                                                   args.epochs)))

    naive_s = rows[0][1][0]
    conveyor_s = rows[1][1][0]
    print(f"{'pipeline':<42}{'epoch s':>9}{'samples/s':>12}{'vs naive':>10}"
          f"{'conveyor/this':>15}")
    for name, (seconds, count) in rows:
        assert count == args.samples, (name, count)
        speedup = "-" if name.startswith("conveyor") else f"{seconds / conveyor_s:.2f}x"
        print(f"{name:<42}{seconds:>9.3f}{count / seconds:>12,.0f}{naive_s / seconds:>9.2f}x"
              f"{speedup:>15}")
    print("(vs naive: speed relative to the naive loop; conveyor/this: conveyor's speed "
          "relative to that row; > 1 means conveyor is faster)")
    if tf is None:
        print(f"{'tf.data':<42}{tf_note}")
    print()

    if args.step_ms > 0:
        step = args.step_ms / 1000
        t = time.perf_counter()
        for _ in range(50):
            time.sleep(step)
        slept = (time.perf_counter() - t) / 50  # what a sleep really takes here
        device_s = slept * -(-args.samples // BATCH)
        print(f"with a simulated {args.step_ms:g} ms accelerator step per batch "
              f"({device_s:.2f} s of device time per epoch; the host waits, as for a GPU):")
        steps = [("naive Python loop + np.stack", lambda: naive_batches(images, labels)),
                 ("conveyor", lambda: iter(ds))]
        if tf is not None:
            steps.append(("tf.data, native TF ops (traced)", lambda: iter(tds_native)))
        print(f"{'pipeline':<42}{'epoch s':>9}{'input time hidden':>19}")
        for name, make in steps:
            seconds, _ = time_epoch(make, 1, step)
            input_s = dict((n, r[0]) for n, r in rows).get(
                name if name != "conveyor" else "conveyor (import conveyor as cv)")
            hidden = min(1.0, max(0.0, 1 - max(0.0, seconds - device_s) / input_s))
            print(f"{name:<42}{seconds:>9.3f}{hidden:>18.0%}")
        print("(input time hidden: how much of the pipeline's own epoch time disappeared "
              "behind the device steps)")
        print()

    # What the model sees, and a check that conveyor computes what the naive loop computes.
    x, y = next(iter(ds))
    nx, ny = next(naive_batches(images, labels))
    same = np.array_equal(x, nx) and np.array_equal(y, ny)
    print(f"first batch: images {type(x).__name__} {x.dtype} {x.shape} "
          f"(mean {x.mean():+.3f}, std {x.std():.3f}), labels {y.dtype} {y.shape} "
          f"{y[:8].tolist()}...; equal to the naive loop's: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
