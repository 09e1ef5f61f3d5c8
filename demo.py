#!/usr/bin/env python3
"""conveyor demo: a tf.data image pipeline without TensorFlow.

    python demo.py            # about half a minute on 2 cores
    python demo.py --no-tf    # skip the tf.data comparison

It writes a folder of JPEG photos-like images (about 500x375, as ImageNet's)
and a TFRecord file of the same images inside tf.train.Example records, then
runs one epoch of the classic input pipeline

    list_files -> map(read_file, decode_jpeg, resize to 224x224, normalise)
               -> batch(64) -> prefetch(AUTOTUNE)

(and the TFRecord variant: TFRecordDataset -> map(parse_single_example, ...))
four ways: a naive Python loop, conveyor, and tf.data (if TensorFlow is
installed), and prints images/s and ratios. conveyor traces the map function
into a native program that runs on all cores without the GIL. Each is timed
as the best of two epochs after a short warm-up.
"""
import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # quiet TensorFlow's C++ logging

import numpy as np

import conveyor as cv
# conveyor speaks the tf.data API: the pipeline functions below take the library
# as `tf`, and run unchanged on conveyor (`import conveyor as tf`) and TensorFlow.

N_IMAGES = 512
BATCH = 64
SIZE = 224
MEAN, STD = 0.45, 0.25


def make_images(folder, n, seed=0):
    """n photo-like JPEGs (smooth shading, shapes, sensor noise) of about 500x375,
    plus a TFRecord file of tf.train.Example {image: JPEG bytes, label: int64}.
    Encoded with conveyor's own libjpeg-turbo op, so no imaging library is needed."""
    rng = np.random.default_rng(seed)
    paths, labels = [], []
    record_path = os.path.join(folder, "images.tfrecord")
    with cv.io.TFRecordWriter(record_path) as writer:
        for i in range(n):
            h, w = (375, 500) if i % 3 else (500, 375)
            y, x = np.mgrid[0:h, 0:w].astype(np.float32)
            base = rng.uniform(40, 200, 3).astype(np.float32)
            tilt = rng.uniform(-0.3, 0.3, (2, 3)).astype(np.float32)
            image = base + y[..., None] * tilt[0] + x[..., None] * tilt[1]
            for _ in range(6):  # a few blobs
                cy, cx, r = rng.uniform(0, h), rng.uniform(0, w), rng.uniform(15, 90)
                mask = (y - cy) ** 2 + (x - cx) ** 2 < r * r
                image[mask] = rng.uniform(0, 255, 3)
            image += rng.normal(0, 6, image.shape).astype(np.float32)
            image = np.clip(image, 0, 255).astype(np.uint8)
            data = cv.io.encode_jpeg(image, quality=90)
            label = int(rng.integers(0, 1000))
            path = os.path.join(folder, f"img_{i:05d}.jpg")
            with open(path, "wb") as f:
                f.write(data)
            writer.write(cv.io.serialize_example({"image": data, "label": np.int64(label)}))
            paths.append(path)
            labels.append(label)
    return paths, labels, record_path


def decode(tf, data):
    """JPEG bytes -> normalised float32 224x224x3 (conveyor and tf.data alike)."""
    image = tf.image.resize(tf.io.decode_jpeg(data, channels=3), [SIZE, SIZE])
    return (image / 255.0 - MEAN) / STD


def preprocess(tf, path):
    """The map function of the file pipeline."""
    return decode(tf, tf.io.read_file(path))


def file_pipeline(tf, folder):
    ds = tf.data.Dataset.list_files(os.path.join(folder, "*.jpg"), shuffle=False)
    ds = ds.map(lambda p: preprocess(tf, p), num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def record_pipeline(tf, record_path):
    features = {"image": tf.io.FixedLenFeature([], tf.string),
                "label": tf.io.FixedLenFeature([], tf.int64)}

    def parse(record):
        example = tf.io.parse_single_example(record, features)
        return decode(tf, example["image"]), example["label"]
    ds = tf.data.TFRecordDataset(record_path)
    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def naive_batches(paths):
    """What you would write without a data library: one image after the other."""
    for start in range(0, len(paths), BATCH):
        batch = []
        for path in paths[start:start + BATCH]:
            with open(path, "rb") as f:
                batch.append(decode(cv, f.read()))
        yield np.stack(batch)


def time_epoch(make_batches, epochs, step_s=0.0):
    """Best-of-`epochs` wall time for one pass, iterating as a training loop would.
    `step_s` simulates an accelerator step per batch: the host thread waits
    (time.sleep) as it waits for a GPU, so a pipeline that works ahead hides
    behind it."""
    for _ in zip(range(2), make_batches()):  # warm-up, untimed
        pass
    best, count = float("inf"), 0
    for _ in range(epochs):
        count = 0
        t = time.perf_counter()
        for batch in make_batches():
            count += len(batch[0]) if isinstance(batch, tuple) else len(batch)
            if step_s:
                time.sleep(step_s)
        best = min(best, time.perf_counter() - t)
    return best, count


def as_numpy(tf_ds):
    return lambda: tf_ds.as_numpy_iterator()


def main(argv=None):
    p = argparse.ArgumentParser(description="conveyor demo")
    p.add_argument("--no-tf", action="store_true", help="skip the tf.data comparison")
    p.add_argument("--images", type=int, default=N_IMAGES)
    p.add_argument("--epochs", type=int, default=2, help="timed epochs per pipeline (best is kept)")
    p.add_argument("--step-ms", type=float, default=60.0,
                   help="simulated accelerator step per batch for the second table (0: skip)")
    args = p.parse_args(argv)

    tf, tf_note = None, "skipped (--no-tf)"
    if not args.no_tf:
        try:
            import tensorflow as tf
        except Exception:
            tf, tf_note = None, "not installed"

    with tempfile.TemporaryDirectory(prefix="conveyor-demo-") as folder:
        t = time.perf_counter()
        paths, labels, record_path = make_images(folder, args.images)
        print(f"conveyor {cv.__version__} demo: wrote {args.images} JPEGs (~500x375) and a "
              f"TFRecord file of them in {time.perf_counter() - t:.1f} s; {os.cpu_count()} CPUs")
        print(f"pipeline: list_files -> map(read_file, decode_jpeg, resize {SIZE}x{SIZE}, "
              f"normalise; AUTOTUNE) -> batch({BATCH}) -> prefetch; one epoch, best of "
              f"{args.epochs}")
        ds = file_pipeline(cv, folder)
        print(f"conveyor's pipeline: {ds!r}")
        print()

        rows = [("naive Python loop (conveyor ops, eager)",
                 time_epoch(lambda: naive_batches(paths), args.epochs))]
        rows.append(("conveyor: JPEG files", time_epoch(lambda: iter(ds), args.epochs)))
        rds = record_pipeline(cv, record_path)
        rows.append(("conveyor: TFRecord of Examples", time_epoch(lambda: iter(rds), args.epochs)))
        if tf is not None:
            tds = file_pipeline(tf, folder)
            rows.append(("tf.data: JPEG files", time_epoch(as_numpy(tds), args.epochs)))
            trds = record_pipeline(tf, record_path)
            rows.append(("tf.data: TFRecord of Examples", time_epoch(as_numpy(trds), args.epochs)))

        naive_s, conveyor_s = rows[0][1][0], rows[1][1][0]
        print(f"{'pipeline':<42}{'epoch s':>9}{'images/s':>10}{'vs naive':>10}"
              f"{'conveyor/this':>15}")
        for name, (seconds, count) in rows:
            assert count == args.images, (name, count)
            same_kind = rows[2][1][0] if "TFRecord" in name else conveyor_s
            speedup = "-" if name.startswith("conveyor") else f"{seconds / same_kind:.2f}x"
            print(f"{name:<42}{seconds:>9.3f}{count / seconds:>10,.0f}{naive_s / seconds:>9.2f}x"
                  f"{speedup:>15}")
        print("(vs naive: speed relative to the naive loop; conveyor/this: conveyor's speed on "
              "the same input relative to that row; > 1 means conveyor is faster)")
        if tf is None:
            print(f"{'tf.data':<42}{tf_note}")
        print()

        if args.step_ms > 0:
            step = args.step_ms / 1000
            t = time.perf_counter()
            for _ in range(10):
                time.sleep(step)
            slept = (time.perf_counter() - t) / 10  # what a sleep really takes here
            device_s = slept * -(-args.images // BATCH)
            print(f"with a simulated {args.step_ms:g} ms accelerator step per batch "
                  f"({device_s:.2f} s of device time per epoch; the host waits, as for a GPU):")
            steps = [("naive Python loop (conveyor ops, eager)", lambda: naive_batches(paths)),
                     ("conveyor: JPEG files", lambda: iter(ds))]
            if tf is not None:
                steps.append(("tf.data: JPEG files", as_numpy(tds)))
            print(f"{'pipeline':<42}{'epoch s':>9}{'input time hidden':>19}")
            for name, make in steps:
                seconds, _ = time_epoch(make, 1, step)
                input_s = dict((n, r[0]) for n, r in rows)[name]
                hidden = min(1.0, max(0.0, 1 - max(0.0, seconds - device_s) / input_s))
                print(f"{name:<42}{seconds:>9.3f}{hidden:>18.0%}")
            print("(input time hidden: how much of the pipeline's own epoch time disappeared "
                  "behind the device steps)")
            print()

        # What the model sees, and a check that the pipeline computes what the loop computes.
        x = next(iter(ds))
        nx = next(naive_batches(sorted(paths)))
        same = np.array_equal(x, nx)
        rx, ry = next(iter(rds))
        same_records = np.array_equal(rx, nx) and ry.tolist() == labels[:BATCH]
        print(f"first batch: {type(x).__name__} {x.dtype} {x.shape} (mean {x.mean():+.3f}, "
              f"std {x.std():.3f}); equal to the naive loop's: {'yes' if same else 'NO'}; "
              f"TFRecord pipeline's images and labels equal: {'yes' if same_records else 'NO'}")
    return 0 if same and same_records else 1


if __name__ == "__main__":
    sys.exit(main())
