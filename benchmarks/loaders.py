#!/usr/bin/env python3
"""The JPEG workload with each loader in its own process: conveyor, tf.data and
PyTorch's DataLoader (issue 11: >= 1.3x tf.data and DataLoader, >= 0.8x the limit).

  conveyor, tf.data  benchmarks/images.py's pipeline: list_files -> map(read_file,
                     decode_jpeg(channels=3), resize 224x224, / 255, AUTOTUNE)
                     -> batch(64) -> prefetch(AUTOTUNE)
  DataLoader         torch.utils.data.DataLoader(batch_size=64, num_workers=CPUs,
                     persistent_workers=True) over a map-style Dataset whose
                     __getitem__ is PIL.Image.open(path).convert("RGB") ->
                     torchvision Resize((224, 224)) (bilinear, antialiased) -> ToTensor
                     (/ 255, CHW float32): the usual PIL recipe

The same --files JPEGs as images.py ($TMPDIR/conveyor-bench-images/<files>). Each
loader runs in a fresh child process: one untimed warm-up epoch (DataLoader: its
workers start there), then --epochs timed epochs; the set of children runs
--repeat times, in alternating order. Figures: images/s, median [min-max] over
all timed epochs; conveyor / each other loader (ratio of medians); conveyor /
the decode limit (--limit: images/s; default: the limit measured by
jpeg_decode_limit.c on all cores, as images.py does; decode only, so the full
pipeline's ratio is lower by the resize's share); and conveyor / the issue's
same-work limit: the CPUs times the rate of "one thread", the same pipeline
without parallelism or prefetch in a child pinned to one CPU. A loader that is
not installed is skipped and said so.

    python benchmarks/loaders.py                  # 1024 files, 5 epochs, 2 repeats
    python benchmarks/loaders.py --files 256 --epochs 3 --repeat 1
    python benchmarks/loaders.py --cpus 1,2,4,8,16 --repeat 1   # the scaling table

--cpus runs the comparison once per core count N on the first N usable CPUs:
every child pinned to them before its framework starts, conveyor with
cpu_budget = N, DataLoader with N workers, tf.data sizing its pools from the
same affinity; the decode limit runs N threads on those N CPUs. A table of
every N follows (benchmarks/README.md: the scaling table on the GPU machine).

Timings are printed, never asserted.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

HERE = os.path.dirname(os.path.abspath(__file__))
LOADERS = ("conveyor", "tf.data", "DataLoader")
ONE_THREAD = "one thread"  # conveyor's pipeline, sequential, on one CPU: the limit's unit


def one_thread_pipeline(lib, pattern):
    """images.py's pipeline with its parallelism and prefetch removed: the
    same work per image (read, decode, resize, / 255, batch 64) done by the
    consumer's thread alone."""
    fn = lambda f: lib.image.resize(  # noqa: E731
        lib.io.decode_jpeg(lib.io.read_file(f), channels=3), [224, 224]) / 255.0
    return lib.data.Dataset.list_files(pattern, shuffle=False).map(fn).batch(64)


def torch_loader(paths, batch_size):
    """The DataLoader side: a map-style Dataset doing the usual PIL recipe per
    file (open -> RGB -> Resize((224, 224)) bilinear -> ToTensor: / 255, CHW
    float32; torchvision's transforms written out, without torchvision),
    batch_size images per batch, one worker per usable CPU, persistent workers."""
    import numpy as np
    import torch
    from PIL import Image

    def tfm(im):  # torchvision's Resize((224, 224)) + ToTensor(), without torchvision
        a = np.asarray(im.resize((224, 224), Image.BILINEAR), dtype=np.float32) / 255.0
        return torch.from_numpy(a.transpose(2, 0, 1).copy())

    class Files(torch.utils.data.Dataset):
        def __len__(self):
            return len(paths)

        def __getitem__(self, i):
            with Image.open(paths[i]) as im:
                return tfm(im.convert("RGB"))
    return torch.utils.data.DataLoader(Files(), batch_size=batch_size,
                                       num_workers=len(os.sched_getaffinity(0)),
                                       persistent_workers=True)


def child(loader, folder, epochs, budget, cpus):
    """One loader in this (fresh) process: pinned to `cpus` first, before any
    framework starts its threads; conveyor's cpu_budget is `budget` when set."""
    if cpus:
        os.sched_setaffinity(0, cpus)
    import glob
    pattern = os.path.join(folder, "*.jpg")
    count = len(glob.glob(pattern))
    if loader == "DataLoader":
        import torch
        torch.set_num_threads(1)
        ds = torch_loader(sorted(glob.glob(pattern)), 64)
    else:
        sys.path.insert(0, HERE)
        import images
        if loader == "tf.data":
            import tensorflow as lib
        else:
            import conveyor as lib
        if loader == ONE_THREAD:
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
            ds = one_thread_pipeline(lib, pattern)
        else:
            ds = images.pipeline(lib, pattern, True)
        if loader == "conveyor" and budget:
            o = lib.data.Options()
            o.autotune.cpu_budget = budget
            ds = ds.with_options(o)
    rates = []
    for e in range(epochs + 1):
        n = 0
        start = time.perf_counter()
        for b in ds:
            n += b.shape[0]
        elapsed = time.perf_counter() - start
        assert n == count, (n, count)
        if e:
            rates.append(n / elapsed)
    print(json.dumps({"loader": loader, "rates": rates}))


def run_children(args, folder, loaders, cpus, budget):
    """Each loader in its own process on `cpus`, --repeat times in alternating
    order -> ({loader: rates}, {loader: why it was skipped})."""
    results, skipped = {x: [] for x in loaders}, {}
    for rep in range(args.repeat):
        order = loaders if rep % 2 == 0 else loaders[::-1]
        for loader in order:
            if loader in skipped:
                continue
            cmd = [sys.executable, os.path.abspath(__file__), "--child", loader, "--folder", folder,
                   "--epochs", str(args.epochs), "--budget", str(budget),
                   "--pin", ",".join(map(str, sorted(cpus)))]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True,
                                      timeout=args.child_timeout or None)
            except subprocess.TimeoutExpired:
                skipped[loader] = f"no result within --child-timeout {args.child_timeout} s"
                continue
            lines = [x for x in proc.stdout.splitlines() if x.startswith("{")]
            if proc.returncode != 0 or not lines:
                tail = proc.stderr.strip().splitlines()[-1:] or ["?"]
                skipped[loader] = tail[0][:160]
                continue
            results[loader] += json.loads(lines[-1])["rates"]
    return results, skipped


def report(ncpu, limit, results, skipped, one_thread):
    """Prints one core count's figures; returns its row for the scaling table."""
    print(f"decode limit (libjpeg-turbo alone, {ncpu} threads on {ncpu} CPUs): {limit:.0f} images/s")
    work_limit = ncpu * one_thread if one_thread else None
    if work_limit:
        print(f"same-work limit: {ncpu} CPUs x {one_thread:.0f} images/s (the pipeline on one thread, "
              f"one CPU) = {work_limit:.0f} images/s")
    row = {"cpus": ncpu, "decode_limit": limit, "same_work_limit": work_limit, "loaders": {}}
    med = {}
    for loader, r in results.items():
        if loader in skipped or not r:
            print(f"  {loader:<11} skipped: {skipped.get(loader, 'no result')}")
            continue
        med[loader] = statistics.median(r)
        row["loaders"][loader] = {"median": med[loader], "min": min(r), "max": max(r)}
        line = (f"  {loader:<11} {med[loader]:8.0f} [{min(r):.0f}-{max(r):.0f}]   "
                f"/decode limit {med[loader] / limit:.2f} (min {min(r) / limit:.2f})")
        if work_limit and loader != ONE_THREAD:
            line += (f"   /same-work limit {med[loader] / work_limit:.2f} "
                     f"[{min(r) / work_limit:.2f}-{max(r) / work_limit:.2f}]")
        print(line)
    if "conveyor" in med:
        if work_limit:
            r = results["conveyor"]
            print(f"  conveyor / same-work limit: {med['conveyor'] / work_limit:.2f} "
                  f"(goal >= 0.8); min / median {min(r) / med['conveyor']:.2f} (goal >= 0.85)")
        for other in ("tf.data", "DataLoader"):
            if other in med:
                print(f"  conveyor / {other}: {med['conveyor'] / med[other]:.2f}x (goal >= 1.3)")
    return row


def fmt_cell(cell):
    return f"{cell['median']:.0f} [{cell['min']:.0f}-{cell['max']:.0f}]" if cell else "-"


def scaling_table(rows):
    """The figures of every core count side by side (--cpus with several)."""
    names = ("conveyor", "tf.data", "DataLoader")
    print("\nscaling: images/s median [min-max]; ratios of medians")
    head = (f"  {'CPUs':>4}  " + "".join(f"{n:>20}" for n in names)
            + f"{'conv/tf.data':>14}{'conv/DL':>9}{'conv/limit':>12}{'min/med':>9}{'decode lim':>12}")
    print(head)
    for row in rows:
        cells = row["loaders"]
        conv = cells.get("conveyor")

        def ratio(other):
            return f"{conv['median'] / cells[other]['median']:.2f}x" if conv and other in cells else "-"
        vs_limit = (f"{conv['median'] / row['same_work_limit']:.2f}"
                    if conv and row["same_work_limit"] else "-")
        spread = f"{conv['min'] / conv['median']:.2f}" if conv else "-"
        print(f"  {row['cpus']:>4}  " + "".join(f"{fmt_cell(cells.get(n)):>20}" for n in names)
              + f"{ratio('tf.data'):>14}{ratio('DataLoader'):>9}{vs_limit:>12}{spread:>9}"
              + f"{row['decode_limit']:>12.0f}")
    print("  conv/limit: conveyor / (CPUs x the one-thread rate of the same work); "
          "min/med: conveyor's slowest epoch / its median")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=1024)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--limit", type=float, default=0.0, help="images/s; 0: measure it")
    p.add_argument("--budget", type=int, default=0)
    p.add_argument("--cpus", default="",
                   help="comma-separated core counts (e.g. 1,2,4,8,16): the whole comparison on the "
                        "first N usable CPUs each (processes pinned, conveyor's cpu_budget = N, "
                        "DataLoader's num_workers = N), then a scaling table; default: all usable")
    p.add_argument("--limit-exe", help="a built jpeg_decode_limit (default: compile it here)")
    p.add_argument("--child-timeout", type=float, default=0, help="seconds; 0: none")
    p.add_argument("--only", default=",".join(LOADERS + (ONE_THREAD,)))
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--folder", help=argparse.SUPPRESS)
    p.add_argument("--pin", default="", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        cpus = {int(c) for c in args.pin.split(",") if c}
        child(args.child, args.folder, args.epochs, args.budget, cpus)
        return 0
    sys.path.insert(0, HERE)
    import images
    import shutil
    folder = os.path.join(tempfile.gettempdir(), "conveyor-bench-images", str(args.files))
    paths, _ = images.make_files(folder, args.files)
    usable = sorted(os.sched_getaffinity(0))
    counts = [int(c) for c in args.cpus.split(",") if c] or [len(usable)]
    if max(counts) > len(usable):
        p.error(f"--cpus {max(counts)}: this process may use {len(usable)} CPUs")
    loaders = [x for x in args.only.split(",") if x]
    work = tempfile.mkdtemp(prefix="conveyor-jpeg-limit-")
    try:
        exe = args.limit_exe or (None if args.limit else images.build_limit_tool(work))
        # The limit is the CPUs times the one-thread rate of the same work:
        # measured once, on one CPU.
        one_thread = None
        if ONE_THREAD in loaders:
            r, why = run_children(args, folder, [ONE_THREAD], set(usable), 0)
            if r[ONE_THREAD]:
                one_thread = statistics.median(r[ONE_THREAD])
            else:
                print(f"one thread: skipped: {why.get(ONE_THREAD, 'no result')}")
        rows = []
        for n in counts:
            cpus = set(usable[:n])
            limit = args.limit or statistics.median(
                images.decode_limit(exe, paths, n, 1.0, cpus) for _ in range(3))
            others = [x for x in loaders if x != ONE_THREAD]
            budget = args.budget or (n if args.cpus else 0)
            results, skipped = run_children(args, folder, others, cpus, budget)
            if one_thread:
                results[ONE_THREAD] = r[ONE_THREAD]
            print(f"\nJPEG workload, each loader in its own process: {len(paths)} files, {n} CPUs"
                  f"{f' (pinned; cpu_budget {budget})' if args.cpus else ''}, "
                  f"{args.epochs} epochs x {args.repeat} repeats; images/s median [min-max]")
            rows.append(report(n, limit, results, skipped, one_thread))
            rows[-1]["rates"], rows[-1]["skipped"] = results, skipped
            sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if len(rows) > 1:
        scaling_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"files": len(paths), "epochs": args.epochs, "repeat": args.repeat,
                       "one_thread": one_thread, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
