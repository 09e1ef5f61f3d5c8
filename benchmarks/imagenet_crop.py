#!/usr/bin/env python3
"""The ImageNet preprocessing (tensorflow/models' recipe, our code): conveyor,
tf.data, PyTorch's DataLoader, DALI on CPU and SPDL, each in its own process.

Writes --files JPEGs of 375x500 (a quarter portrait; quality 90) once to
$TMPDIR/conveyor-bench-images/<files>-375x500, made from the shared test
photos as benchmarks/images.py makes its files. Then, over all files, batches
of 64 float32 224x224x3 images, normalized with ImageNet's mean and stddev:

  conveyor, tf.data  the same code (`tf` is conveyor or TensorFlow), written
                     after tensorflow/models' official/legacy/image_classification
                     preprocessing: list_files(shuffle=False).map(read_file ->
                     train: extract_jpeg_shape -> sample_distorted_bounding_box
                            -> decode_and_crop_jpeg -> random_flip_left_right
                     eval:  extract_jpeg_shape -> center window of 224/256 of the
                            short side -> decode_and_crop_jpeg
                     -> compat.v1 resize 224 bilinear -> - mean -> / stddev,
                     num_parallel_calls=AUTOTUNE).batch(64).prefetch(AUTOTUNE)
  torch              DataLoader(num_workers=CPUs, persistent_workers=True) over
                     PIL: train RandomResizedCrop(224) + RandomHorizontalFlip,
                     eval Resize(256) + CenterCrop(224); ToTensor + Normalize
  dali               device_id=None: readers.file -> train decoders.image_random_crop
                     -> resize 224; eval decoders.image -> resize_shorter 256;
                     crop_mirror_normalize 224 (train: random mirror); CPUs threads
  spdl               PipelineBuilder: demux_image -> decode_packets with an FFmpeg
                     filter (train: the RandomResizedCrop window, scale 224
                     bilinear, random hflip; eval: shorter side 256, center crop
                     224) -> normalize in NumPy; CPUs threads, aggregate(64)

Every system runs in a process of its own, started once: it builds its
loader and runs one untimed warm-up epoch, then the rounds alternate between
the processes (one epoch each, the order rotated each round) so that the
shared machine's load falls on all of them alike; an idle process does no
work (DALI runs exactly the epoch's batches). Reported per system: images/s
and images/s per core, median [min-max]; CPU ms per image (the process's CPU
time over the epoch, its child processes included: DataLoader's workers),
which the other jobs on a shared machine disturb less; and per round conveyor
/ tf.data and conveyor / the best other system. A system that cannot be
imported is skipped and said so. Nothing is asserted.

    python benchmarks/imagenet_crop.py                # train recipe, 512 files, 5 rounds
    python benchmarks/imagenet_crop.py --eval         # eval recipe
    python benchmarks/imagenet_crop.py --quick        # 128 files, 2 rounds
    python benchmarks/imagenet_crop.py --systems conveyor,dali --json out.json

torchvision, DALI (nvidia-dali-cuda120) and SPDL are not dependencies: run
with a Python that has them (benchmarks/README.md says how SPDL finds FFmpeg).
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))  # this checkout's conveyor

SYSTEMS = ("conveyor", "tf", "torch", "dali", "spdl")
IMAGE_SIZE, CROP_PADDING, BATCH = 224, 32, 64
MEAN_RGB = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STDDEV_RGB = [0.229 * 255, 0.224 * 255, 0.225 * 255]


# --- conveyor and tf.data: one piece of code ------------------------------

def decode_crop_and_flip(tf, image_bytes):
    shape = tf.image.extract_jpeg_shape(image_bytes)
    bbox = tf.constant([0.0, 0.0, 1.0, 1.0], dtype=tf.float32, shape=[1, 1, 4])
    begin, size, _ = tf.image.sample_distorted_bounding_box(
        shape, bounding_boxes=bbox, min_object_covered=0.1, aspect_ratio_range=[0.75, 1.33],
        area_range=[0.05, 1.0], max_attempts=100, use_image_if_no_bounding_boxes=True)
    offset_y, offset_x, _ = tf.unstack(begin)
    target_height, target_width, _ = tf.unstack(size)
    crop_window = tf.stack([offset_y, offset_x, target_height, target_width])
    cropped = tf.image.decode_and_crop_jpeg(image_bytes, crop_window, channels=3)
    return tf.image.random_flip_left_right(cropped)


def decode_and_center_crop(tf, image_bytes, image_size=IMAGE_SIZE, crop_padding=CROP_PADDING):
    shape = tf.image.extract_jpeg_shape(image_bytes)
    image_height, image_width = shape[0], shape[1]
    padded_center_crop_size = tf.cast(
        ((image_size / (image_size + crop_padding))
         * tf.cast(tf.minimum(image_height, image_width), tf.float32)), tf.int32)
    offset_height = ((image_height - padded_center_crop_size) + 1) // 2
    offset_width = ((image_width - padded_center_crop_size) + 1) // 2
    crop_window = tf.stack([offset_height, offset_width,
                            padded_center_crop_size, padded_center_crop_size])
    return tf.image.decode_and_crop_jpeg(image_bytes, crop_window, channels=3)


def tf_pipeline(tf, pattern, train):
    def preprocess(filename):
        image_bytes = tf.io.read_file(filename)
        if train:
            image = decode_crop_and_flip(tf, image_bytes)
        else:
            image = decode_and_center_crop(tf, image_bytes)
        image = tf.compat.v1.image.resize(image, [IMAGE_SIZE, IMAGE_SIZE],
                                          method=tf.image.ResizeMethod.BILINEAR,
                                          align_corners=False)
        image = image - tf.broadcast_to(MEAN_RGB, tf.shape(image))
        image = image / tf.broadcast_to(STDDEV_RGB, tf.shape(image))
        image.set_shape([IMAGE_SIZE, IMAGE_SIZE, 3])
        return tf.image.convert_image_dtype(image, tf.float32)

    ds = tf.data.Dataset.list_files(pattern, shuffle=False)
    ds = ds.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE).batch(BATCH)
    return ds.prefetch(tf.data.AUTOTUNE)


def conveyor_or_tf_loader(lib, files, train):
    if lib == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf
    else:
        import conveyor as tf
    ds = tf_pipeline(tf, os.path.join(os.path.dirname(files[0]), "*.jpg"), train)
    return lambda: (int(x.shape[0]) for x in ds)


# --- PyTorch DataLoader over PIL -------------------------------------------

def import_torchvision_transforms():
    """torchvision.transforms. PyPI's Linux torchvision wheels link CUDA
    builds of torch: next to a CPU torch their C ops (detection ops, unused
    by these PIL transforms) do not load, and registering those ops' fake
    kernels fails at import; that module is then left out."""
    import types
    try:
        from torchvision import transforms
    except RuntimeError as e:
        if "torchvision::" not in str(e):
            raise
        for name in [m for m in sys.modules if m.startswith("torchvision")]:
            del sys.modules[name]
        sys.modules["torchvision._meta_registrations"] = types.ModuleType("stub")
        from torchvision import transforms
    return transforms


def torch_loader(files, train):
    import torch
    from PIL import Image
    T = import_torchvision_transforms()

    crop = ([T.RandomResizedCrop(IMAGE_SIZE), T.RandomHorizontalFlip()] if train
            else [T.Resize(256), T.CenterCrop(IMAGE_SIZE)])
    transform = T.Compose(crop + [T.ToTensor(), T.Normalize([m / 255 for m in MEAN_RGB],
                                                            [s / 255 for s in STDDEV_RGB])])

    class Files(torch.utils.data.Dataset):
        def __len__(self):
            return len(files)

        def __getitem__(self, i):
            with open(files[i], "rb") as f:
                return transform(Image.open(f).convert("RGB"))

    loader = torch.utils.data.DataLoader(Files(), batch_size=BATCH, shuffle=False,
                                         num_workers=os.cpu_count(), persistent_workers=True)
    return lambda: (int(x.shape[0]) for x in loader)


# --- DALI on CPU -------------------------------------------------------------

def dali_loader(files, train):
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=BATCH, num_threads=os.cpu_count(), device_id=None, seed=0)
    def pipe():
        jpegs, _ = fn.readers.file(files=files, random_shuffle=False, name="Reader")
        if train:
            images = fn.decoders.image_random_crop(
                jpegs, device="cpu", output_type=types.RGB, random_aspect_ratio=[0.75, 1.33],
                random_area=[0.05, 1.0], num_attempts=100)
            images = fn.resize(images, resize_x=IMAGE_SIZE, resize_y=IMAGE_SIZE)
            mirror = fn.random.coin_flip()
        else:
            images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
            images = fn.resize(images, resize_shorter=256)
            mirror = False
        return fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="HWC",
                                        crop=(IMAGE_SIZE, IMAGE_SIZE), mean=list(MEAN_RGB),
                                        std=list(STDDEV_RGB), mirror=mirror)

    p = pipe(prefetch_queue_depth=2)
    p.build()
    batches = len(files) // BATCH  # --files is a multiple of 64

    def epoch():
        # Schedules exactly the epoch's batches, two ahead, so that the
        # pipeline does no work while another system's round runs.
        for _ in range(min(2, batches)):
            p.schedule_run()
        for i in range(batches):
            out, = p.outputs()
            if i + 2 < batches:
                p.schedule_run()
            yield len(out)
    return epoch


# --- SPDL --------------------------------------------------------------------

def random_resized_crop_window(rng, height, width, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """torchvision's RandomResizedCrop window, as its documentation states it:
    10 tries of a uniform area fraction and a log-uniform aspect ratio, then
    the whole image clamped to the ratio range, centered."""
    area = height * width
    for _ in range(10):
        target = area * rng.uniform(*scale)
        aspect = math.exp(rng.uniform(math.log(ratio[0]), math.log(ratio[1])))
        w = int(round(math.sqrt(target * aspect)))
        h = int(round(math.sqrt(target / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return rng.randint(0, height - h), rng.randint(0, width - w), h, w
    if width / height < ratio[0]:
        w, h = width, int(round(width / ratio[0]))
    elif width / height > ratio[1]:
        h, w = height, int(round(height * ratio[1]))
    else:
        h, w = height, width
    return (height - h) // 2, (width - w) // 2, h, w


def spdl_loader(files, train):
    import numpy as np
    import spdl.io
    from spdl.pipeline import PipelineBuilder

    mean = np.array(MEAN_RGB, np.float32)
    inv_std = np.array([1 / s for s in STDDEV_RGB], np.float32)
    rng = random.Random(0)

    def load(path):
        packets = spdl.io.demux_image(path)
        h, w = packets.height, packets.width
        if train:
            y, x, ch, cw = random_resized_crop_window(rng, h, w)
            flip = ",hflip" if rng.random() < 0.5 else ""
            desc = (f"crop={cw}:{ch}:{x}:{y},scale={IMAGE_SIZE}:{IMAGE_SIZE}:flags=bilinear"
                    f"{flip},format=rgb24")
        else:
            sw, sh = (256, -1) if w <= h else (-1, 256)
            desc = f"scale={sw}:{sh}:flags=bilinear,crop={IMAGE_SIZE}:{IMAGE_SIZE},format=rgb24"
        frames = spdl.io.decode_packets(packets, filter_desc=desc)
        image = spdl.io.to_numpy(spdl.io.convert_frames(frames))
        return (image.astype(np.float32) - mean) * inv_std

    threads = os.cpu_count()

    def epoch():
        pipeline = (PipelineBuilder().add_source(files).pipe(load, concurrency=threads)
                    .aggregate(BATCH).pipe(np.stack).add_sink(3).build(num_threads=threads))
        with pipeline.auto_stop():
            for batch in pipeline:
                yield int(batch.shape[0])
    return epoch


# --- the worker process and the parent ------------------------------------

def tree_cpu_seconds():
    """CPU seconds of this process and of every process below it (from /proc;
    DataLoader's workers are child processes)."""
    tick = os.sysconf("SC_CLK_TCK")
    children, total = {}, time.process_time()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(
            (int(pid), (int(fields[11]) + int(fields[12])) / tick))
    todo = [os.getpid()]
    while todo:
        for pid, cpu in children.get(todo.pop(), []):
            total += cpu
            todo.append(pid)
    return total


def worker(lib, folder, count, train):
    files = [os.path.join(folder, f"img{i:05d}.jpg") for i in range(count)]
    if lib in ("conveyor", "tf"):
        epoch = conveyor_or_tf_loader(lib, files, train)
    else:
        epoch = {"torch": torch_loader, "dali": dali_loader, "spdl": spdl_loader}[lib](files, train)
    sum(epoch())  # the warm-up epoch
    print(json.dumps({"ready": lib}), flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        cpu, start = tree_cpu_seconds(), time.perf_counter()
        n = sum(epoch())
        wall, cpu = time.perf_counter() - start, tree_cpu_seconds() - cpu
        print(json.dumps({"n": n, "wall": wall, "cpu": cpu}), flush=True)


def start(lib, folder, count, train):
    cmd = [sys.executable, __file__, "--worker", lib, "--folder", folder, "--files", str(count)]
    proc = subprocess.Popen(cmd + ([] if train else ["--eval"]), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith('{"ready"'):
        proc.kill()
        err = proc.communicate(timeout=60)[1].strip().splitlines()
        return None, (err[-1] if err else f"exit status {proc.returncode}")
    return proc, None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=512, help="a multiple of 64")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--eval", action="store_true", help="the eval recipe (center crop)")
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--json")
    p.add_argument("--worker", choices=SYSTEMS)
    p.add_argument("--folder")
    args = p.parse_args()
    if args.worker:
        worker(args.worker, args.folder, args.files, not args.eval)
        return
    if args.quick:
        args.files, args.rounds = 128, 2
    from images import make_files
    from run import fmt_range, summary
    folder = os.path.join(tempfile.gettempdir(), "conveyor-bench-images", f"{args.files}-375x500")
    _, origin = make_files(folder, args.files)
    cpus = os.cpu_count()
    print(f"{'eval' if args.eval else 'train'} recipe; {args.files} JPEGs 375x500 ({origin}); "
          f"{args.rounds} rounds; {cpus} CPUs; median [min-max]")
    procs, skipped = {}, {}
    for lib in args.systems.split(","):
        proc, why = start(lib, folder, args.files, not args.eval)
        if proc:
            procs[lib] = proc
        else:
            skipped[lib] = why
            print(f"{lib}: skipped ({why})")
    order = list(procs)
    res = {lib: {"rate": [], "cpu_ms": []} for lib in order}
    loads = []
    for r in range(args.rounds):
        loads.append(os.getloadavg()[0])
        for lib in order[r % len(order):] + order[:r % len(order)]:
            procs[lib].stdin.write("run\n")
            procs[lib].stdin.flush()
            m = json.loads(procs[lib].stdout.readline())
            res[lib]["rate"].append(m["n"] / m["wall"])
            res[lib]["cpu_ms"].append(1e3 * m["cpu"] / m["n"])
    loads.append(os.getloadavg()[0])
    for proc in procs.values():
        proc.communicate("quit\n", timeout=120)
    print(f"load average (1 min) {min(loads):.2f}-{max(loads):.2f}")
    for lib in order:
        print(f"{lib:>9}: {fmt_range(res[lib]['rate'])} images/s, "
              f"{fmt_range(res[lib]['rate'], 1 / cpus)} per core, "
              f"{fmt_range(res[lib]['cpu_ms'])} CPU ms/image")
    out = {"recipe": "eval" if args.eval else "train", "files": args.files, "cpus": cpus,
           "load": loads, "skipped": skipped,
           "systems": {lib: {k: summary(v) for k, v in m.items()} for lib, m in res.items()}}
    peers = [lib for lib in order if lib != "conveyor"]
    if "conveyor" in res and peers:
        for name, key, better in (("images/s", "rate", max), ("CPU per image", "cpu_ms", min)):
            best = [better(res[lib][key][r] for lib in peers) for r in range(args.rounds)]
            who = [better(peers, key=lambda lib: res[lib][key][r]) for r in range(args.rounds)]
            ratio = [(c / b if key == "rate" else b / c) for c, b in zip(res["conveyor"][key], best)]
            print(f"conveyor / best other ({name}): {fmt_range(ratio)} "
                  f"(best: {', '.join(sorted(set(who)))})")
            out[f"conveyor_vs_best_{key}"] = summary(ratio)
        if "tf" in res:
            ratio = [c / t for c, t in zip(res["conveyor"]["rate"], res["tf"]["rate"])]
            print(f"conveyor / tf.data (images/s): {fmt_range(ratio)}")
            out["conveyor_vs_tf_rate"] = summary(ratio)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
