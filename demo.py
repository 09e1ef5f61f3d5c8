#!/usr/bin/env python3
"""conveyor demo: a tf.data image pipeline without TensorFlow.

    python demo.py            # 20-32 s on 2 cores at load 7-12 (a shared machine)
    python demo.py --no-tf    # skip the tf.data comparison
    python demo.py --quick    # a small run

It writes a folder of JPEG photos-like images (about 500x375, as ImageNet's)
and a TFRecord file of the same images inside tf.train.Example records, then
runs one epoch of the classic input pipeline

    list_files -> map(read_file, decode_jpeg, resize to 224x224, normalise)
               -> batch(32) -> prefetch(AUTOTUNE)

(and the TFRecord variant: TFRecordDataset -> map(parse_single_example, ...))
with a naive Python loop, conveyor, and tf.data (if TensorFlow is installed),
and prints images/s and ratios. conveyor traces the map function into a
native program that runs on all cores without the GIL.

A shared machine's load changes from one second to the next, so the demo
prints the load average and CPU count, measures every pipeline in the same
rounds (each round runs each once, in turn), and shows each row's median,
min and max, calling out a wide spread.

Then it runs the JPEG pipelines of conveyor and tf.data in a training loop with a simulated
accelerator step per batch (--step-ms, 10 ms by default), and again with a
step 2.5x the slowest of their times per batch in the first table; each row
says, from its own runs, how long the loop waited for input and which side
is the bottleneck.
It ends with the pipeline doctor's verdict on the JPEG pipeline
(conveyor.data.experimental.diagnose; --doctor-steps 0 skips it).
--quick makes a small run.
"""
import argparse
import math
import os
import statistics
import sys
import tempfile
import time

# TensorFlow's C++ logging off (3: errors too; this must precede any import of TensorFlow).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np

import conveyor as cv
# conveyor speaks the tf.data API: the pipeline functions below take the library
# as `tf`, and run unchanged on conveyor (`import conveyor as tf`) and TensorFlow.

N_IMAGES = 256  # 8 batches: enough for a steady state, small enough for a short demo
DISTINCT = 32  # distinct images drawn; the files repeat them (make_images)
BATCH = 32
SIZE = 224
MEAN, STD = 0.45, 0.25
DEFAULT_STEP_MS = 10.0
WIDE_SPREAD = 0.25  # (max - min) / median of a row's epochs above this is called out
NAIVE = "naive Python loop (conveyor ops, eager)"


def make_images(folder, n, seed=0):
    """n photo-like JPEG files (smooth shading, shapes, sensor noise) of about 500x375,
    plus a TFRecord file of tf.train.Example {image: JPEG bytes, label: int64}.
    Encoded with conveyor's own libjpeg-turbo op, so no imaging library is needed.
    At most DISTINCT images are drawn and encoded; the files repeat them in turn (each file
    is still read and decoded on its own, so the work measured is the same): drawing and
    encoding every image took most of a short demo's time."""
    rng = np.random.default_rng(seed)
    # Sensor noise: crops of one noise field at random offsets (drawing fresh
    # noise for every image would take most of the time spent here).
    noise = rng.standard_normal((600, 600, 3), dtype=np.float32) * 6
    encoded = []
    for i in range(min(n, DISTINCT)):
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
        encoded.append(cv.io.encode_jpeg(image, quality=90).numpy())
    paths, labels = [], []
    record_path = os.path.join(folder, "images.tfrecord")
    with cv.io.TFRecordWriter(record_path) as writer:
        for i in range(n):
            data = encoded[i % len(encoded)]
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


def one_epoch(make_batches, step_s=0.0):
    """One pass as a training loop takes it: (epoch seconds, images, seconds spent waiting
    in next() after the first batch, which nothing can run ahead of). `step_s` simulates an
    accelerator step per batch: the host thread waits (time.sleep) as it waits for a GPU,
    so a pipeline that works ahead hides behind it."""
    count, waited, first = 0, 0.0, True
    t = time.perf_counter()
    it = make_batches()
    while True:
        w = time.perf_counter()
        try:
            batch = next(it)
        except StopIteration:
            break
        if not first:
            waited += time.perf_counter() - w
        first = False
        count += len(batch[0]) if isinstance(batch, tuple) else len(batch)
        if step_s:
            time.sleep(step_s)
    return time.perf_counter() - t, count, waited


def alternated(cases, rounds, step_s=0.0, firsts=None):
    """{name: [one_epoch() per round]}: every round runs each case once, in turn (the
    order reversed every other round), so a change in the machine's load falls on all of
    them alike; a 2-batch warm-up of each first, untimed, whose first batch goes into
    `firsts` ({name: batch}) when given (the demo checks those batches, instead of
    computing them once more)."""
    for name, make in cases:
        for i, batch in zip(range(2), make()):
            if i == 0 and firsts is not None:
                firsts[name] = batch
    runs = {name: [] for name, _ in cases}
    for r in range(rounds):
        for name, make in (cases if r % 2 == 0 else cases[::-1]):
            runs[name].append(one_epoch(make, step_s))
    return runs


def spread(seconds):
    """(max - min) / median of a row's epoch times."""
    return (max(seconds) - min(seconds)) / statistics.median(seconds)


def wide_rows(runs):
    return [(n, spread([r[0] for r in rs])) for n, rs in runs.items()
            if len(rs) > 1 and spread([r[0] for r in rs]) > WIDE_SPREAD]


def print_spread(runs, rounds):
    wide = wide_rows(runs)
    if rounds < 2:
        print("spread: one round, so none to show (--rounds 3 or more to see how the figures "
              "vary)")
    elif wide:
        names = ", ".join(f"{n} {s:.0%}" for n, s in wide)
        print(f"spread: WIDE. (max - min) / median over the {rounds} rounds is above "
              f"{WIDE_SPREAD:.0%} for {names}: the machine's load changed during the run "
              f"(load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs). Compare "
              "the medians, which come from the same rounds, or rerun on an idle machine.")
    else:
        print(f"spread: every row within {WIDE_SPREAD:.0%} of its median over the {rounds} "
              "rounds.")


def step_table(cases, rounds, batches, step, why):
    """One table of a training loop with a simulated accelerator step per batch. Every figure
    of a row comes from that row's own runs with the step: the epoch time, how long the loop
    waited in next() per batch, and so which side (input or step) is the bottleneck."""
    t = time.perf_counter()
    for _ in range(5):
        time.sleep(step)
    slept = (time.perf_counter() - t) / 5  # what a sleep really takes here
    print(f"with a simulated {step * 1e3:g} ms accelerator step per batch, {why}; "
          f"{batches} batches, so {slept * batches:.2f} s of device time per epoch (the host "
          "waits, as for a GPU):")
    print(f"{'pipeline':<42}{'median s':>9}{'min s':>8}{'max s':>8}{'wait ms/batch':>15}"
          "  bottleneck")
    runs = alternated(cases, rounds, step)
    for name, _ in cases:
        seconds = [r[0] for r in runs[name]]
        wait = statistics.median(r[2] for r in runs[name]) / max(1, batches - 1)
        if name.startswith("naive"):
            verdict = "none: no prefetch, input and step take turns"
        elif wait > 0.1 * slept:
            verdict = f"the pipeline (the step waited {wait * 1e3:.1f} ms per batch for input)"
        else:
            verdict = f"the step (input was ready: {wait * 1e3:.1f} ms waited per batch)"
        print(f"{name:<42}{statistics.median(seconds):>9.3f}{min(seconds):>8.3f}"
              f"{max(seconds):>8.3f}{wait * 1e3:>15.1f}  {verdict}")
    print_spread(runs, rounds)
    print()
    return runs


def as_numpy(tf_ds):
    return lambda: tf_ds.as_numpy_iterator()


def import_tensorflow():
    """TensorFlow with its logging quiet, or None when it is not installed.
    TF_CPP_MIN_LOG_LEVEL (set at the top of this file, before any import of it) quiets its C++
    logging, absl's verbosity its Python logging; the lines some builds write to stderr while
    their shared libraries load, before either applies (oneDNN's notice, twice), are dropped by
    pointing file descriptor 2 elsewhere for the import alone."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            try:
                import tensorflow as tf
            except Exception:  # noqa: BLE001 - not installed, or a broken install
                return None
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
    finally:
        os.close(saved)
    tf.get_logger().setLevel("ERROR")
    try:
        from absl import logging as absl_logging
        absl_logging.set_verbosity(absl_logging.ERROR)
    except ImportError:
        pass
    return tf


def main(argv=None):
    p = argparse.ArgumentParser(description="conveyor demo")
    p.add_argument("--no-tf", action="store_true", help="skip the tf.data comparison")
    p.add_argument("--quick", action="store_true",
                   help="a small run (160 images, 2 rounds, a 5 ms step) for a smoke test")
    p.add_argument("--images", type=int, default=None, help=f"images written ({N_IMAGES})")
    p.add_argument("--rounds", "--epochs", dest="rounds", type=int, default=None,
                   help="timed epochs per pipeline, taken in alternated rounds (3)")
    p.add_argument("--step-ms", type=float, default=None,
                   help=f"simulated accelerator step per batch for the step tables "
                        f"({DEFAULT_STEP_MS:g}; 0: skip them)")
    p.add_argument("--doctor-steps", type=int, default=4,
                   help="batches per run of the pipeline doctor at the end (0: skip)")
    args = p.parse_args(argv)
    images = args.images or (160 if args.quick else N_IMAGES)
    rounds = args.rounds or (2 if args.quick else 3)
    step_asked = args.step_ms is not None
    step_ms = args.step_ms if step_asked else (5.0 if args.quick else DEFAULT_STEP_MS)
    doctor_steps = min(args.doctor_steps, 2) if args.quick else args.doctor_steps

    tf, tf_note = None, "skipped (--no-tf)"
    if not args.no_tf:
        tf = import_tensorflow()
        tf_note = "not installed" if tf is None else ""

    with tempfile.TemporaryDirectory(prefix="conveyor-demo-") as folder:
        t = time.perf_counter()
        paths, labels, record_path = make_images(folder, images)
        load = os.getloadavg()
        cpus, usable = os.cpu_count(), len(os.sched_getaffinity(0))
        print(f"conveyor {cv.__version__} demo: wrote {images} JPEG files (~500x375; "
              f"{min(images, DISTINCT)} distinct images, repeated) and a TFRecord file of them "
              f"in {time.perf_counter() - t:.1f} s")
        print(f"machine: {cpus} CPUs" + (f" ({usable} usable by this process)"
                                         if usable != cpus else "")
              + f"; load average {load[0]:.1f} (1 min), {load[1]:.1f} (5 min), "
                f"{load[2]:.1f} (15 min)")
        if load[0] > usable:
            print(f"  busy: more runnable threads than CPUs ({load[0]:.1f} > {usable}); the "
                  "figures below are lower than on an idle machine and vary between rounds")
        print(f"pipeline: list_files -> map(read_file, decode_jpeg, resize {SIZE}x{SIZE}, "
              f"normalise; AUTOTUNE) -> batch({BATCH}) -> prefetch; {rounds} rounds of one "
              "epoch each, the pipelines taking turns within a round")
        ds = file_pipeline(cv, folder)
        print(f"conveyor's pipeline: {ds!r}")
        print()

        rds = record_pipeline(cv, record_path)
        cases = [(NAIVE, lambda: naive_batches(paths)),
                 ("conveyor: JPEG files", lambda: iter(ds)),
                 ("conveyor: TFRecord of Examples", lambda: iter(rds))]
        if tf is not None:
            tds, trds = file_pipeline(tf, folder), record_pipeline(tf, record_path)
            cases += [("tf.data: JPEG files", as_numpy(tds)),
                      ("tf.data: TFRecord of Examples", as_numpy(trds))]
        firsts = {}
        runs = alternated(cases, rounds, firsts=firsts)
        median = {n: statistics.median(r[0] for r in rs) for n, rs in runs.items()}
        print(f"{'pipeline':<42}{'median s':>9}{'min s':>8}{'max s':>8}{'images/s':>10}"
              f"{'vs naive':>10}{'conveyor/this':>15}")
        for name, _ in cases:
            assert all(r[1] == images for r in runs[name]), (name, runs[name])
            seconds = [r[0] for r in runs[name]]
            mine = median["conveyor: TFRecord of Examples" if "TFRecord" in name
                          else "conveyor: JPEG files"]
            versus = "-" if name.startswith("conveyor") else f"{median[name] / mine:.2f}x"
            print(f"{name:<42}{median[name]:>9.3f}{min(seconds):>8.3f}{max(seconds):>8.3f}"
                  f"{images / median[name]:>10,.0f}{median[NAIVE] / median[name]:>9.2f}x"
                  f"{versus:>15}")
        if tf is None:
            print(f"{'tf.data':<42}{tf_note}")
        print_spread(runs, rounds)
        print(f"how measured: one epoch = one pass over the {images} images as a training loop "
              "takes them (read, decode, resize, normalise, batch); each row's median, min and "
              f"max are of its {rounds} epochs;")
        print("  images/s = images / median s; vs naive = the naive loop's median s / this "
              "row's; conveyor/this = this row's median s / conveyor's on the same input")
        print("  (JPEG files or TFRecord): > 1 means conveyor is faster.")
        print()

        if step_ms > 0:
            batches = -(-images // BATCH)
            # The prefetching JPEG pipelines only: the naive loop, which cannot run ahead of
            # the step, would take most of the demo's time here.
            step_cases = [c for c in cases[1:] if "JPEG" in c[0]]
            if step_asked:
                why = f"the step you asked for (--step-ms {step_ms:g})"
            elif args.quick:
                why = "--quick's step (--step-ms sets another)"
            else:
                why = "the default step (--step-ms sets another)"
            step_table(step_cases, rounds, batches, step_ms / 1000, why)
            # A step well over the slowest prefetching pipeline's time per batch: then the
            # step is the bottleneck and prefetch hides all input but the first batch's.
            piped = [n for n, _ in step_cases]
            slowest = max(piped, key=lambda n: median[n])
            per_batch = median[slowest] / batches
            long_ms = max(2 * step_ms, 10 * math.ceil(per_batch * 2.5 * 100))
            step_table(step_cases, rounds, batches, long_ms / 1000,
                       f"a longer step: about 2.5x the median time per batch of "
                       f"\"{slowest}\" in the first table ({per_batch * 1e3:.1f} ms)")
            print("how measured: each row's figures come from its own epochs with the step, in "
                  "alternated rounds; wait ms/batch = time the loop spent in next() per batch")
            print("  after the first (nothing runs ahead of an epoch's first batch), median over "
                  "the rounds; bottleneck: the pipeline when the loop waited")
            print("  for input more than 10% of a step, else the step.")
            print()

        # What the model sees, and a check that the pipeline computes what the loop computes.
        # (the first batches of the first table's warm-up: paths are in list_files' order)
        x, nx = firsts["conveyor: JPEG files"], firsts[NAIVE]
        same = np.array_equal(x, nx)
        rx, ry = firsts["conveyor: TFRecord of Examples"]
        same_records = np.array_equal(rx, nx) and ry.tolist() == labels[:BATCH]
        print(f"first batch: {type(x).__name__} {x.dtype} {x.shape} (mean {x.mean():+.3f}, "
              f"std {x.std():.3f}); equal to the naive loop's: {'yes' if same else 'NO'}; "
              f"TFRecord pipeline's images and labels equal: {'yes' if same_records else 'NO'}")
        print(f"  (mean, std: of the batch's normalised pixels, (x / 255 - {MEAN}) / {STD}; "
              "equal: element for element, every value)")

        if doctor_steps > 0:
            # The pipeline doctor on the JPEG pipeline: a factory, so each of its runs
            # builds the pipeline anew, as separate training runs would.
            steps = max(2, min(doctor_steps, -(-images // BATCH)))
            step_fn = None
            if step_ms > 0:
                step_fn = lambda batch: time.sleep(step_ms / 1000)  # noqa: E731
            print()
            print(f"the pipeline doctor (conveyor.data.experimental.diagnose) on the JPEG "
                  f"pipeline: {steps} batches per run"
                  + (f", each followed by the {step_ms:g} ms step" if step_fn else "")
                  + "; it runs the pipeline about 5 times, then each stage alone:")
            t = time.perf_counter()
            result = cv.data.experimental.diagnose(lambda: file_pipeline(cv, folder), steps,
                                                   step_fn, stage_seconds=0.5, quiet=True)
            print(result)
            print(f"(the doctor took {time.perf_counter() - t:.1f} s. For your own pipeline, "
                  f"from a shell: python -m conveyor.doctor YOUR_SCRIPT.py:YOUR_FACTORY "
                  f"--steps {steps}" + (f" --step-time {step_ms / 1000:g}" if step_fn else "")
                  + "\n where YOUR_SCRIPT.py:YOUR_FACTORY is a placeholder: your file and a "
                  "function in it that takes no arguments and returns the Dataset.)")
    return 0 if same and same_records else 1


if __name__ == "__main__":
    sys.exit(main())
