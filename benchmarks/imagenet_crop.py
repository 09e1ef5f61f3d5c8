#!/usr/bin/env python3
"""The ImageNet training preprocessing (tensorflow/models' recipe, our code):
conveyor vs tf.data, each in its own process.

Writes --files JPEGs of 375x500 (a quarter portrait; quality 90) once to
$TMPDIR/conveyor-bench-images/<files>-375x500, made from the shared test
photos as benchmarks/images.py makes its files. Each library then runs

  list_files(*.jpg, shuffle=False)
  .map(read_file -> extract_jpeg_shape -> sample_distorted_bounding_box(seed=0)
       -> decode_and_crop_jpeg(channels=3) -> resize 224x224 -> random_flip_left_right,
       num_parallel_calls=AUTOTUNE).batch(64).prefetch(AUTOTUNE)

over all files, one untimed warm-up epoch then --rounds timed epochs, in a
process of its own (so neither library's threads slow the other). Figures
are images/s, median [min-max]; conveyor/tf.data is computed per round.
Nothing is asserted.

    python benchmarks/imagenet_crop.py            # 512 files, 5 rounds
    python benchmarks/imagenet_crop.py --quick    # 128 files, 2 rounds
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))  # this checkout's conveyor


def pipeline(tf, pattern, batch=64):
    bbox = tf.constant([0.0, 0.0, 1.0, 1.0], dtype=tf.float32, shape=[1, 1, 4])

    def preprocess(filename):
        image_buffer = tf.io.read_file(filename)
        begin, size, _ = tf.image.sample_distorted_bounding_box(
            tf.image.extract_jpeg_shape(image_buffer), bounding_boxes=bbox,
            min_object_covered=0.1, aspect_ratio_range=[0.75, 1.33], area_range=[0.05, 1.0],
            max_attempts=100, use_image_if_no_bounding_boxes=True)
        offset_y, offset_x, _ = tf.unstack(begin)
        target_height, target_width, _ = tf.unstack(size)
        window = tf.stack([offset_y, offset_x, target_height, target_width])
        image = tf.image.decode_and_crop_jpeg(image_buffer, window, channels=3)
        image = tf.image.resize(image, [224, 224])
        return tf.image.random_flip_left_right(image)

    ds = tf.data.Dataset.list_files(pattern, shuffle=False)
    ds = ds.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE).batch(batch)
    return ds.prefetch(tf.data.AUTOTUNE)


def worker(lib, pattern, rounds):
    """Runs in its own process: prints {"rates": [...]} (images/s per round)."""
    from run import now
    if lib == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf
    else:
        import conveyor as tf
    ds = pipeline(tf, pattern)
    rates = []
    for r in range(rounds + 1):
        n, start = 0, now()
        for x in ds:
            n += int(x.shape[0])
        if r:  # the first epoch warms up
            rates.append(n / (now() - start))
    print(json.dumps({"rates": rates}))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=512)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--worker", choices=["conveyor", "tf"])
    p.add_argument("--pattern")
    args = p.parse_args()
    if args.worker:
        worker(args.worker, args.pattern, args.rounds)
        return
    if args.quick:
        args.files, args.rounds = 128, 2
    from images import make_files
    from run import fmt_range, paired_ratio
    folder = os.path.join(tempfile.gettempdir(), "conveyor-bench-images",
                          f"{args.files}-375x500")
    _, origin = make_files(folder, args.files)
    pattern = os.path.join(folder, "*.jpg")
    print(f"{args.files} JPEGs 375x500 ({origin}); {args.rounds} rounds; images/s, "
          f"median [min-max]")
    rates = {}
    for lib in ("conveyor", "tf"):
        out = subprocess.run([sys.executable, __file__, "--worker", lib, "--pattern", pattern,
                              "--rounds", str(args.rounds)], capture_output=True, text=True)
        if out.returncode:
            print(f"{lib}: failed ({out.stderr.strip().splitlines()[-1:]})")
            continue
        rates[lib] = json.loads(out.stdout.strip().splitlines()[-1])["rates"]
        print(f"{lib:>9}: {fmt_range(rates[lib])}")
    if len(rates) == 2:
        print(f"conveyor/tf.data: {fmt_range(paired_ratio(rates['conveyor'], rates['tf']))}")


if __name__ == "__main__":
    main()
