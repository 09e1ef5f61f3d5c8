#!/usr/bin/env python3
"""conveyor demo: a tf.data image pipeline without TensorFlow.

    python demo.py            # about a minute on 2 cores
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

Then it runs the JPEG pipelines in a training loop with a simulated
accelerator step per batch, twice: with the step you give (--step-ms) and
with a step 2.5x the slowest pipeline's time per batch, and says for each
row which side is the bottleneck and how much input time prefetch hid. It
ends with the pipeline doctor's verdict on the JPEG pipeline
(conveyor.data.experimental.diagnose; --doctor-steps 0 skips it).
"""
import argparse
import math
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
    # Sensor noise: crops of one noise field at random offsets (drawing fresh
    # noise for every image would take most of the time spent here).
    noise = rng.standard_normal((600, 600, 3), dtype=np.float32) * 6
    paths, labels = [], []
    record_path = os.path.join(folder, "images.tfrecord")
    with cv.io.TFRecordWriter(record_path) as writer:
        for i in range(n):
            h, w = (375, 500) if i % 3 else (500, 375)
            y = np.arange(h, dtype=np.float32)[:, None, None]
            x = np.arange(w, dtype=np.float32)[None, :, None]
            base = rng.uniform(40, 200, 3).astype(np.float32)
            tilt = rng.uniform(-0.3, 0.3, (2, 3)).astype(np.float32)
            image = base + y * tilt[0] + x * tilt[1]
            for _ in range(6):  # a few blobs, each drawn in its bounding box
                cy, cx, r = rng.uniform(0, h), rng.uniform(0, w), rng.uniform(15, 90)
                y0, y1 = max(0, int(cy - r)), min(h, int(cy + r) + 1)
                x0, x1 = max(0, int(cx - r)), min(w, int(cx + r) + 1)
                mask = (y[y0:y1, :, 0] - cy) ** 2 + (x[:, x0:x1, 0] - cx) ** 2 < r * r
                image[y0:y1, x0:x1][mask] = rng.uniform(0, 255, 3)
            oy, ox = rng.integers(0, 600 - h + 1), rng.integers(0, 600 - w + 1)
            image += noise[oy:oy + h, ox:ox + w]
            image = np.clip(image, 0, 255).astype(np.uint8)
            data = cv.io.encode_jpeg(image, quality=90).numpy()
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


def step_table(cases, input_seconds, batches, step, why):
    """One table of a training loop with a simulated accelerator step per batch:
    per pipeline, the epoch time, how much of its input time disappeared behind
    the steps, and which side (input or step) is the bottleneck."""
    t = time.perf_counter()
    for _ in range(5):
        time.sleep(step)
    slept = (time.perf_counter() - t) / 5  # what a sleep really takes here
    device_s = slept * batches
    print(f"with a simulated {step * 1e3:g} ms accelerator step per batch, {why} "
          f"({device_s:.2f} s of device time per epoch; the host waits, as for a GPU):")
    print(f"{'pipeline':<42}{'epoch s':>9}{'input ms/batch':>16}{'input time hidden':>19}"
          f"  bottleneck")
    for name, make in cases:
        seconds, _ = time_epoch(make, 1, step)
        input_s = input_seconds[name]
        per_batch = input_s / batches
        hidden = min(1.0, max(0.0, 1 - max(0.0, seconds - device_s) / input_s))
        if name.startswith("naive"):
            verdict = "none: no prefetch, input and step take turns"
        elif per_batch > slept:
            verdict = f"the pipeline ({per_batch * 1e3:.0f} > {slept * 1e3:.0f} ms step)"
        else:
            verdict = f"the step ({slept * 1e3:.0f} > {per_batch * 1e3:.0f} ms input)"
        print(f"{name:<42}{seconds:>9.3f}{per_batch * 1e3:>16.1f}{hidden:>18.0%}  {verdict}")
    print()


def as_numpy(tf_ds):
    return lambda: tf_ds.as_numpy_iterator()


def main(argv=None):
    p = argparse.ArgumentParser(description="conveyor demo")
    p.add_argument("--no-tf", action="store_true", help="skip the tf.data comparison")
    p.add_argument("--images", type=int, default=N_IMAGES)
    p.add_argument("--epochs", type=int, default=2, help="timed epochs per pipeline (best is kept)")
    p.add_argument("--step-ms", type=float, default=60.0,
                   help="simulated accelerator step per batch for the second table (0: skip)")
    p.add_argument("--doctor-steps", type=int, default=4,
                   help="batches per run of the pipeline doctor at the end (0: skip)")
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
        print(f"how measured: epoch s = wall time of one pass over the {args.images} images as a "
              f"training loop takes them (read, decode, resize, normalise, batch),")
        print(f"  best of {args.epochs} epoch(s) after a 2-batch warm-up; images/s = images / "
              f"epoch s; vs naive = the naive loop's epoch s / this row's;")
        print("  conveyor/this = this row's epoch s / conveyor's on the same input (JPEG files "
              "or TFRecord): > 1 means conveyor is faster.")
        if tf is None:
            print(f"{'tf.data':<42}{tf_note}")
        print()

        if args.step_ms > 0:
            by_name = dict((n, r[0]) for n, r in rows)
            batches = -(-args.images // BATCH)
            cases = [("naive Python loop (conveyor ops, eager)", lambda: naive_batches(paths)),
                     ("conveyor: JPEG files", lambda: iter(ds))]
            if tf is not None:
                cases.append(("tf.data: JPEG files", as_numpy(tds)))
            step_table(cases, by_name, batches, args.step_ms / 1000,
                       "the step you asked for (--step-ms)")
            # A step well over the slowest prefetching pipeline's time per batch: then
            # the step is the bottleneck and prefetch hides all input but the first
            # batch's (the pipeline starts with the epoch, and the step waits for it).
            slowest = max(by_name[n] / batches for n, _ in cases[1:])
            long_ms = max(2 * args.step_ms, 10 * math.ceil(slowest * 2.5 * 100))
            step_table(cases[1:], by_name, batches, long_ms / 1000,
                       "a longer step, 2.5x the slowest pipeline's time per batch")
            print("how measured: device s/epoch = batches x the measured sleep; input "
                  "ms/batch = the pipeline's epoch s above / batches;")
            print("  input time hidden = 1 - (epoch s - device s/epoch) / the pipeline's "
                  "epoch s above (what prefetch overlapped with the steps);")
            print("  bottleneck: the slower side per batch; prefetch hides input only up to "
                  "the step time, so when the pipeline is slower the rest shows;")
            print("  when the step is slower, all but the first batch's input hides (nothing "
                  "runs ahead of an epoch's first batch).")
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
        print(f"  (mean, std: of the batch's normalised pixels, (x / 255 - {MEAN}) / {STD}; "
              "equal: element for element, every value)")

        if args.doctor_steps > 0:
            # The pipeline doctor on the JPEG pipeline: a factory, so each of its runs
            # builds the pipeline anew, as separate training runs would.
            steps = max(2, min(args.doctor_steps, -(-args.images // BATCH)))
            step_fn = None
            if args.step_ms > 0:
                step_fn = lambda batch: time.sleep(args.step_ms / 1000)  # noqa: E731
            print()
            print(f"the pipeline doctor (conveyor.data.experimental.diagnose) on the JPEG "
                  f"pipeline: {steps} batches per run"
                  + (f", each followed by the {args.step_ms:g} ms step" if step_fn else "")
                  + "; it runs the pipeline about 5 times, then each stage alone:")
            t = time.perf_counter()
            result = cv.data.experimental.diagnose(lambda: file_pipeline(cv, folder), steps,
                                                   step_fn, stage_seconds=0.5, quiet=True)
            print(result)
            print(f"(the doctor took {time.perf_counter() - t:.1f} s; the same from a shell: "
                  f"python -m conveyor.doctor script.py:make_dataset --steps {steps}"
                  + (f" --step-time {args.step_ms / 1000:g}" if step_fn else "") + ")")
    return 0 if same and same_records else 1


if __name__ == "__main__":
    sys.exit(main())
