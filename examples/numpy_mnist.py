#!/usr/bin/env python3
"""MNIST-style softmax regression in NumPy, fed from TFRecord files by conveyor.

What it shows: the TFRecord round trip of the classic MNIST tutorials, with
``import conveyor as tf`` and no TensorFlow:

1. write 28x28 digit images as ``tf.train.Example`` records
   (``image_raw``: the 784 pixel bytes, ``label``: int64) with
   ``tf.io.TFRecordWriter``;
2. read them back with

       TFRecordDataset -> map(parse_single_example, decode_raw, reshape, cast)
                       -> shuffle -> batch -> prefetch(AUTOTUNE)

3. train softmax regression (a linear layer and cross-entropy, gradients by
   hand) in NumPy, printing the test accuracy after each epoch.

No download: the digits are drawn procedurally (seven-segment strokes with a
random size, slant, stroke width, jitter and noise), so they look MNIST-like
but are not MNIST.

Run it:

    python examples/numpy_mnist.py
    python examples/numpy_mnist.py --train 2000 --test 500 --epochs 2
    python examples/numpy_mnist.py --dir /tmp/digits   # keep the TFRecord files
"""
import argparse
import os
import tempfile
import time

# One OpenBLAS thread for the model's small matrix products: OpenBLAS's own threads
# busy-wait for work and, beside the engine's workers on a few cores, made whole runs 10-50x
# slower at random (docs/performance.md, "BLAS threads beside the engine's"). It must be set
# before NumPy is imported; a value you set yourself wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import conveyor as tf  # noqa: E402

SIDE = 28
# seven-segment strokes in a 1x2 box (x right, y down): a top, b/c right,
# d bottom, e/f left, g middle
POINTS = {"tl": (0, 0), "tr": (1, 0), "ml": (0, 1), "mr": (1, 1), "bl": (0, 2), "br": (1, 2)}
SEGMENTS = {"a": ("tl", "tr"), "b": ("tr", "mr"), "c": ("mr", "br"), "d": ("bl", "br"),
            "e": ("ml", "bl"), "f": ("tl", "ml"), "g": ("ml", "mr")}
DIGITS = ["abcdef", "bc", "abged", "abgcd", "fgbc", "afgcd", "afgedc", "abc", "abcdefg", "abcdfg"]


def draw_digits(labels, rng):
    """uint8 images [n, 28, 28] of the given digits, white strokes on black."""
    n = len(labels)
    names = list(SEGMENTS)
    starts = np.array([POINTS[SEGMENTS[s][0]] for s in names], np.float32)  # [7, 2]
    ends = np.array([POINTS[SEGMENTS[s][1]] for s in names], np.float32)
    on = np.array([[s in DIGITS[d] for s in names] for d in range(10)])[labels]  # [n, 7]
    # per image: jitter each stroke end, then scale, slant and place the box
    p0 = starts + rng.normal(0, 0.06, (n, 7, 2))
    p1 = ends + rng.normal(0, 0.06, (n, 7, 2))
    height = rng.uniform(7, 9, (n, 1, 1))  # pixels per box unit
    width = height * rng.uniform(0.55, 0.8, (n, 1, 1))
    slant = rng.uniform(-0.25, 0.25, (n, 1, 1))
    centre = SIDE / 2 + rng.normal(0, 1.0, (n, 1, 2))

    def place(p):
        x = (p[..., 0:1] - 0.5) * width - (p[..., 1:2] - 1) * slant * height
        y = (p[..., 1:2] - 1) * height
        return np.concatenate([x, y], -1) + centre
    a, b = place(p0).astype(np.float32), place(p1).astype(np.float32)  # [n, 7, 2]
    yy, xx = np.mgrid[0:SIDE, 0:SIDE].astype(np.float32).reshape(2, 1, -1) + 0.5  # [1, 784]
    # squared distance from every pixel to the nearest stroke of its digit
    dist2 = np.full((n, SIDE * SIDE), np.inf, np.float32)
    for s in range(len(names)):
        ax, ay = a[:, s, 0:1], a[:, s, 1:2]
        dx, dy = b[:, s, 0:1] - ax, b[:, s, 1:2] - ay
        t = ((xx - ax) * dx + (yy - ay) * dy) / np.maximum(dx * dx + dy * dy, 1e-6)
        t = np.clip(t, 0, 1)
        d2 = (xx - ax - t * dx) ** 2 + (yy - ay - t * dy) ** 2
        dist2 = np.where(on[:, s:s + 1], np.minimum(dist2, d2), dist2)
    thickness = rng.uniform(0.7, 1.3, (n, 1))
    ink = np.clip(1 - (np.sqrt(dist2) - thickness), 0, 1)  # one pixel of anti-aliasing
    ink = ink * rng.uniform(0.8, 1.0, (n, 1)) + rng.normal(0, 0.05, ink.shape)
    return (np.clip(ink, 0, 1) * 255).astype(np.uint8).reshape(n, SIDE, SIDE)


def write_records(path, n, seed):
    """n digit images as tf.train.Example records in one TFRecord file."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n)
    with tf.io.TFRecordWriter(path) as writer:
        for start in range(0, n, 1000):
            images = draw_digits(labels[start:start + 1000], rng)
            for image, label in zip(images, labels[start:start + 1000]):
                example = tf.train.Example(features=tf.train.Features(feature={
                    "image_raw": tf.train.Feature(
                        bytes_list=tf.train.BytesList(value=[image.tobytes()])),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                }))
                writer.write(example.SerializeToString())


FEATURES = {"image_raw": tf.io.FixedLenFeature([], tf.string),
            "label": tf.io.FixedLenFeature([], tf.int64)}


def parse(record):
    example = tf.io.parse_single_example(record, FEATURES)
    image = tf.io.decode_raw(example["image_raw"], tf.uint8)
    image = tf.cast(tf.reshape(image, [SIDE * SIDE]), tf.float32) / 255.0
    return image, tf.cast(example["label"], tf.int32)


def dataset(path, batch_size, training):
    ds = tf.data.TFRecordDataset(path)
    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    if training:
        ds = ds.shuffle(10000, seed=0)
    return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def softmax(logits):
    e = np.exp(logits - logits.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def accuracy(w, b, ds):
    correct = total = 0
    for x, y in ds:
        correct += int(np.sum(np.argmax(x @ w + b, 1) == y))
        total += len(y)
    return correct / total


def train(folder, n_train, n_test, epochs, batch_size, lr):
    train_path = os.path.join(folder, "train.tfrecord")
    test_path = os.path.join(folder, "test.tfrecord")
    t = time.perf_counter()
    write_records(train_path, n_train, seed=0)
    write_records(test_path, n_test, seed=1)
    print(f"wrote {n_train} + {n_test} digit images as tf.train.Example records "
          f"in {time.perf_counter() - t:.1f} s")

    train_ds, test_ds = dataset(train_path, batch_size, True), dataset(test_path, 1000, False)
    w = np.zeros((SIDE * SIDE, 10), np.float32)
    b = np.zeros(10, np.float32)
    print(f"epoch 0  test accuracy {accuracy(w, b, test_ds):.3f}")
    for epoch in range(1, epochs + 1):
        t, losses, seen = time.perf_counter(), [], 0
        for x, y in train_ds:  # x: float32 [batch, 784], y: int32 [batch]
            p = softmax(x @ w + b)
            losses.append(-np.mean(np.log(p[np.arange(len(y)), y] + 1e-9)))
            p[np.arange(len(y)), y] -= 1  # d(cross-entropy)/d(logits)
            w -= lr * (x.T @ p) / len(y)
            b -= lr * p.mean(0)
            seen += len(y)
        rate = seen / (time.perf_counter() - t)
        print(f"epoch {epoch}  loss {np.mean(losses):.4f}  test accuracy "
              f"{accuracy(w, b, test_ds):.3f}  ({rate:.0f} images/s)")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--train", type=int, default=10000, help="training images")
    p.add_argument("--test", type=int, default=1000, help="test images")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=100)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--dir", help="write the TFRecord files here (default: a temporary folder)")
    args = p.parse_args(argv)
    if args.dir:
        os.makedirs(args.dir, exist_ok=True)
        train(args.dir, args.train, args.test, args.epochs, args.batch_size, args.lr)
        return
    with tempfile.TemporaryDirectory() as folder:
        train(folder, args.train, args.test, args.epochs, args.batch_size, args.lr)


if __name__ == "__main__":
    main()
