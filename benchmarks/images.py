#!/usr/bin/env python3
"""JPEG input pipeline, conveyor vs tf.data vs the machine's decode limit (issue 4).

Writes --files JPEGs at ImageNet-like sizes (500x375 and 375x500, quality
90, 4:2:0) once to $TMPDIR/conveyor-bench-images, made from the shared test
photos (random crops, flips and a little noise, so files are not copies;
encoded with conveyor.io.encode_jpeg, which is libjpeg-turbo). Then measures,
in one process, alternating rounds:

  pipeline   list_files(*.jpg, shuffle=False)
             .map(lambda f: resize(decode_jpeg(read_file(f), channels=3), [224, 224]) / 255,
                  num_parallel_calls=AUTOTUNE).batch(64).prefetch(AUTOTUNE)
  decode     list_files(...).map(lambda f: decode_jpeg(read_file(f), channels=3),
                                 num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE)

each in conveyor and in tf.data (iterated as `for x in ds: pass`), and the
decode limit: benchmarks/jpeg_decode_limit.c (compiled here with gcc -O2
against the same libjpeg-turbo) decoding the same files from memory with
TensorFlow's defaults, on 1 thread and on every usable core.

Figures are images/s, median [min-max] over --rounds. Ratios: conveyor /
tf.data (goal >= 1.3x for the pipeline) and conveyor / the decode limit on
all cores (goal >= 0.8 for decoding; the full pipeline also resizes, so its
ratio is lower by the resize's share). Nothing is asserted.

    python benchmarks/images.py               # 1024 files, 5 rounds
    python benchmarks/images.py --quick       # 256 files, 2 rounds
    python benchmarks/images.py --no-tf
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np

import conveyor as cv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import fmt_range, import_tf, machine_info, now, paired_ratio, run_rounds, summary  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GOALS = {"pipeline_vs_tf": 1.3, "decode_vs_limit": 0.8}


def source_photos():
    """The shared test photos (color, not truncated), or synthetic ones."""
    root = os.path.dirname(HERE)
    for base in (os.environ.get("CONVEYOR_TESTDATA", ""), os.path.join(root, "shared", "testdata"),
                 os.path.join(os.path.dirname(root), "shared", "testdata"),
                 "/work/shared/testdata"):
        paths = sorted(glob.glob(os.path.join(base, "jpeg", "*.jpg"))) if base else []
        photos = []
        for p in paths:
            if "truncated" in p:
                continue
            with open(p, "rb") as f:
                img = cv.io.decode_jpeg(f.read(), channels=3)
            if min(img.shape[:2]) >= 100:
                photos.append(img)
        if photos:
            return photos, base
    y, x = np.mgrid[0:360, 0:480]
    synthetic = np.stack([x % 256, y % 256, (x * y) % 256], -1).astype(np.uint8)
    return [synthetic], "synthetic gradients"


def make_files(folder, count, seed=0, size=(375, 500)):
    """`count` JPEGs of `size` (height, width; a quarter of them turned to
    portrait) in `folder`, made once."""
    os.makedirs(folder, exist_ok=True)
    paths = [os.path.join(folder, f"img{i:05d}.jpg") for i in range(count)]
    if all(os.path.exists(p) for p in paths):
        return paths, "cached"
    photos, origin = source_photos()
    rng = np.random.default_rng(seed)
    for i, path in enumerate(paths):
        src = photos[i % len(photos)]
        h, w = src.shape[:2]
        ch, cw = int(h * rng.uniform(0.6, 1.0)), int(w * rng.uniform(0.6, 1.0))
        y0, x0 = rng.integers(0, h - ch + 1), rng.integers(0, w - cw + 1)
        crop = src[y0:y0 + ch, x0:x0 + cw]
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
        shape = list(size) if rng.random() < 0.75 else list(size[::-1])
        img = cv.image.resize(np.ascontiguousarray(crop), shape, antialias=True)
        img = np.clip(img + rng.normal(0, 6, img.shape), 0, 255).astype(np.uint8)
        with open(path + ".tmp", "wb") as f:
            f.write(cv.io.encode_jpeg(img, quality=90).numpy())
        os.replace(path + ".tmp", path)
    return paths, origin


def build_limit_tool(workdir):
    exe = os.path.join(workdir, "jpeg_decode_limit")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libjpeg"], capture_output=True,
                           text=True).stdout.split() or ["-ljpeg"]
    subprocess.run(["gcc", "-O2", "-pthread", os.path.join(HERE, "jpeg_decode_limit.c"), "-o",
                    exe] + flags, check=True)
    return exe


def decode_limit(exe, paths, threads, seconds, cpus=None):
    """images/s of `threads` decoding threads, run on `cpus` (a set) when given."""
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    out = subprocess.run([exe, str(seconds), str(threads)] + paths, capture_output=True,
                         text=True, check=True, preexec_fn=pin).stdout.split()
    return float(out[out.index("images_per_s") + 1])


def pipeline(lib, pattern, full):
    ds = lib.data.Dataset.list_files(pattern, shuffle=False)
    if full:
        fn = lambda f: lib.image.resize(  # noqa: E731
            lib.io.decode_jpeg(lib.io.read_file(f), channels=3), [224, 224]) / 255.0
        ds = ds.map(fn, num_parallel_calls=lib.data.AUTOTUNE).batch(64)
    else:
        fn = lambda f: lib.io.decode_jpeg(lib.io.read_file(f), channels=3)  # noqa: E731
        ds = ds.map(fn, num_parallel_calls=lib.data.AUTOTUNE)
    return ds.prefetch(lib.data.AUTOTUNE)


def epoch_fn(ds, count, full):
    def run(warmup):
        n = 0
        start = now()
        for x in ds:
            n += x.shape[0] if full else 1
        elapsed = now() - start
        assert n == count, (n, count)
        return {"seconds": elapsed, "images_per_s": n / elapsed}
    return run


def check_outputs(pattern, paths, tf):
    """Untimed: conveyor's first batch equals the images decoded eagerly (and
    tf.data's, within float32 rounding of resize)."""
    first = next(iter(pipeline(cv, pattern, True)))
    want = np.stack([cv.image.resize(cv.io.decode_jpeg(cv.io.read_file(p), channels=3),
                                     [224, 224]) / 255.0 for p in paths[:64]])
    ok = first.shape == want.shape and np.array_equal(first, want)
    detail = ""
    if tf is not None:
        tfb = next(iter(pipeline(tf, pattern, True))).numpy()
        diff = float(np.abs(tfb - first).max())
        ok = ok and diff < 1e-5
        detail = f"max |conveyor - tf.data| = {diff:.2g}"
    return ok, detail


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--limit-seconds", type=float, default=2.0)
    ap.add_argument("--quick", action="store_true", help="256 files, 2 rounds")
    ap.add_argument("--no-tf", action="store_true")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args(argv)
    if args.quick:
        args.files, args.rounds, args.limit_seconds = 256, 2, 1.0
    tf, tf_note = import_tf(args.no_tf)
    info = machine_info(tf)
    cores = info["cpus_usable"]
    folder = os.path.join(tempfile.gettempdir(), "conveyor-bench-images", str(args.files))
    paths, origin = make_files(folder, args.files)
    pattern = os.path.join(folder, "*.jpg")
    mean_kb = np.mean([os.path.getsize(p) for p in paths]) / 1024
    print(f"{len(paths)} JPEGs in {folder} (from {origin}), mean {mean_kb:.0f} KB; "
          f"{cores} usable cores; {info['cpu_model']}")

    workdir = tempfile.mkdtemp(prefix="conveyor-jpeg-limit-")
    try:
        exe = build_limit_tool(workdir)
        limits = {1: [], cores: []}
        for _ in range(max(2, args.rounds // 2)):
            for t in limits:
                limits[t].append(decode_limit(exe, paths, t, args.limit_seconds))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    variants = [("cv_pipeline", epoch_fn(pipeline(cv, pattern, True), len(paths), True)),
                ("cv_decode", epoch_fn(pipeline(cv, pattern, False), len(paths), False))]
    if tf is not None:
        variants += [("tf_pipeline", epoch_fn(pipeline(tf, pattern, True), len(paths), True)),
                     ("tf_decode", epoch_fn(pipeline(tf, pattern, False), len(paths), False))]
        variants = [variants[0], variants[2], variants[1], variants[3]]  # alternate libraries
    results = run_rounds(variants, args.rounds)
    rate = {k: [m["images_per_s"] for m in v] for k, v in results.items()}

    limit_all = summary(limits[cores])["median"]
    print(f"\ndecode limit (libjpeg-turbo alone, TF's defaults), images/s:")
    print(f"  1 thread      {fmt_range(limits[1])}")
    print(f"  {cores} threads     {fmt_range(limits[cores])}   "
          f"(1 thread x {cores} = {summary(limits[1])['median'] * cores:.0f})")
    print(f"\n{'images/s':<28}{'conveyor':>22}{'tf.data':>22}{'conveyor/tf':>18}"
          f"{'conveyor/limit':>16}")
    ratios = {}
    for key, name in (("pipeline", "decode+resize+batch(64)"), ("decode", "read+decode only")):
        cvr = rate[f"cv_{key}"]
        line = f"{name:<28}{fmt_range(cvr):>22}"
        if tf is not None:
            tfr = rate[f"tf_{key}"]
            vs_tf = paired_ratio(cvr, tfr)
            ratios[f"{key}_vs_tf"] = summary(vs_tf)
            line += f"{fmt_range(tfr):>22}{fmt_range(vs_tf) + 'x':>18}"
        else:
            line += f"{'-':>22}{'-':>18}"
        vs_limit = [r / limit_all for r in cvr]
        ratios[f"{key}_vs_limit"] = summary(vs_limit)
        print(line + f"{fmt_range(vs_limit):>16}")
    if tf is None:
        print(f"\ntf.data: {tf_note}")
    print("\ngoals: pipeline >= 1.3x tf.data; decode >= 0.8x the decode limit on all cores")
    for goal, target in GOALS.items():
        if goal in ratios:
            got = ratios[goal]["median"]
            print(f"  {goal:<18} {got:.2f} (goal {target}) {'met' if got >= target else 'NOT met'}")
    ok, detail = check_outputs(pattern, paths, tf)
    print(f"\ncheck: first batch equals eager decode+resize: {'ok' if ok else 'FAILED'} {detail}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "files": len(paths), "mean_kb": mean_kb,
                       "limit": limits, "rates": rate, "ratios": ratios, "check": ok}, f,
                      indent=1, default=str)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
