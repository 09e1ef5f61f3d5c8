#!/usr/bin/env python3
"""Benchmark (a) of issue 27: TFRecord files on slow storage, a FUSE file system
whose every read waits --latency (benchmarks/slow_fs.py, 10 ms, direct_io: no
page cache, every round waits again).

  sequential      conveyor TFRecordDataset(files), one file after the other: the unit
  plain 1 thread  one thread reading whole files with read(): the storage's
                  sequential rate without any read-ahead
  storage limit   N threads reading whole files with read() at once, N = 4..32:
                  how far the storage itself scales
  interleave C    from_tensor_slices(files).interleave(TFRecordDataset,
                  cycle_length=C, num_parallel_calls=AUTOTUNE, deterministic=False)
                  .batch(32).prefetch(AUTOTUNE), C = 4..32, in conveyor (read-ahead
                  on: what the FUSE mount gets by default), conveyor with
                  CONVEYOR_READ_AHEAD=never (every read blocks a pool thread, as
                  before read-ahead), and tf.data

Each system runs in its own child process: one untimed warm-up epoch, then
--rounds timed epochs. Figures: MB/s of record bytes, median [min-max]; the
speedup over the sequential rate; speedup / (0.8 x C) (the issue's goal: >=
1); rate / the storage limit at N = C; and the most threads seen during the
timed epochs (a sampler reads /proc/self/task/*/comm every 10 ms): the
engine's (names starting "cv": cvN-pool, cv-uring, cv-io, ...), io_uring's
kernel workers (iou-wrk-*), and all of the process's.

    python benchmarks/slow_storage.py                       # 64 files, 5 rounds
    python benchmarks/slow_storage.py --quick               # smoke run
    python benchmarks/slow_storage.py --no-tf --cycles 4,32

Needs /dev/fuse and fusermount3 (root, or a user allowed to mount FUSE).
Timings are printed, never asserted."""
import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE]  # this checkout's conveyor, whatever is installed
import slow_fs  # noqa: E402

SYSTEMS = ("conveyor", "conveyor, read-ahead off", "tf.data")


# --------------------------------------------------------------------------- #
# the files

def write_files(folder, files, records, record_size):
    """TFRecord files of `records` random records each, written by conveyor's
    TFRecordWriter (the same bytes TensorFlow writes)."""
    import numpy as np
    import conveyor as cv
    rng = np.random.default_rng(0)
    paths = []
    for i in range(files):
        path = os.path.join(folder, f"part-{i:04d}.tfrecord")
        with cv.io.TFRecordWriter(path) as w:
            for _ in range(records):
                w.write(rng.integers(0, 256, record_size, dtype=np.uint8).tobytes())
        paths.append(path)
    return paths


# --------------------------------------------------------------------------- #
# children

class ThreadSampler:
    """The most threads of each kind alive at once while running."""

    def __init__(self, period=0.01):
        self.period = period
        self.most = {"engine": 0, "iou-wrk": 0, "all": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self):
        names = []
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/comm") as f:
                    names.append(f.read().strip())
            except OSError:
                pass  # the thread ended meanwhile
        now = {"engine": sum(n.startswith("cv") for n in names),
               "iou-wrk": sum(n.startswith("iou-wrk") for n in names), "all": len(names)}
        for k, v in now.items():
            self.most[k] = max(self.most[k], v)

    def _run(self):
        while not self._stop.wait(self.period):
            self._sample()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def plain_reads(files, n):
    """n threads reading whole files with read(), sharing one list."""
    lock = threading.Lock()
    todo = list(files)
    total = [0]

    def work():
        while True:
            with lock:
                if not todo:
                    return
                path = todo.pop()
            with open(path, "rb", buffering=0) as f:
                k = len(f.read())
            with lock:
                total[0] += k
    threads = [threading.Thread(target=work) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return total[0]


def pipeline(lib, files, cycle):
    data = lib.data
    if cycle == 0:
        return data.TFRecordDataset(files)
    return (data.Dataset.from_tensor_slices(files)
            .interleave(data.TFRecordDataset, cycle_length=cycle,
                        num_parallel_calls=data.AUTOTUNE, deterministic=False)
            .batch(32).prefetch(data.AUTOTUNE))


def epoch(ds, numpy_iter):
    """Record bytes in one epoch (batches of bytes objects, or single ones)."""
    it = ds.as_numpy_iterator() if numpy_iter else ds
    total = 0
    for b in it:
        if isinstance(b, bytes):
            total += len(b)
        else:
            b = b if numpy_iter else b.numpy()
            total += len(b) if isinstance(b, bytes) else sum(len(x) for x in b)
    return total


def child(args):
    spec = json.loads(args.child)
    system, mode, n = spec["system"], spec["mode"], spec["n"]
    files = spec["files"]
    if system == "plain":
        run = lambda: plain_reads(files, n)  # noqa: E731
    else:
        if system == "tf.data":
            import tensorflow as lib
        else:
            import conveyor as lib
        ds = pipeline(lib, files, n if mode == "interleave" else 0)
        run = lambda: epoch(ds, system == "tf.data")  # noqa: E731
    expected = run()  # warm-up: the pools start, the imports settle
    times = []
    with ThreadSampler() as sampler:
        for _ in range(spec["rounds"]):
            t = time.perf_counter()
            got = run()
            times.append(time.perf_counter() - t)
            if got != expected:
                raise SystemExit(f"an epoch read {got} bytes, the first {expected}")
    print(json.dumps({"bytes": expected, "times": times, "threads": sampler.most}))


def run_child(spec, env_extra, timeout):
    env = dict(os.environ, **env_extra)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout,
                              cwd=ROOT)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"exit {proc.returncode}: {tail}"
    return json.loads(proc.stdout.strip().splitlines()[-1]), None


# --------------------------------------------------------------------------- #
# the report

def rates(result):
    return [result["bytes"] / t / 1e6 for t in result["times"]]


def fmt(values):
    med = statistics.median(values)
    return f"{med:7.1f} [{min(values):.1f}-{max(values):.1f}]"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=64)
    p.add_argument("--records", type=int, default=64, help="records per file (default 64)")
    p.add_argument("--record-size", type=int, default=16 * 1024)
    p.add_argument("--latency", type=float, default=0.01, help="seconds per read (default 0.01)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--cycles", default="4,8,16,32")
    p.add_argument("--no-tf", action="store_true", help="conveyor only")
    p.add_argument("--quick", action="store_true", help="16 files, 2 rounds, cycles 4,16")
    p.add_argument("--json", help="write every figure here")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(args)
    if args.quick:
        args.files, args.rounds, args.cycles = 16, 2, "4,16"
    cycles = [int(c) for c in args.cycles.split(",")]
    why = slow_fs.usable()
    if why:
        print(f"slow_storage: skipped: {why}")
        return 0
    systems = [s for s in SYSTEMS if not (args.no_tf and s == "tf.data")]
    timeout = 600
    with tempfile.TemporaryDirectory(prefix="conveyor-slow-") as src:
        paths = write_files(src, args.files, args.records, args.record_size)
        with slow_fs.SlowFS(src, latency=args.latency) as mount:
            files = [os.path.join(mount, os.path.basename(p)) for p in paths]
            spec = dict(files=files, rounds=args.rounds)
            results, skipped = {}, {}

            def measure(key, system, mode, n, env=None):
                res, why = run_child(dict(spec, system=system, mode=mode, n=n), env or {},
                                     timeout)
                if res is None:
                    skipped[key] = why
                else:
                    results[key] = res
                print(f"  {key[0]:<26} {key[1]:>3}: " +
                      (fmt(rates(res)) + " MB/s" if res else f"skipped: {why}"), flush=True)

            mb = args.files * args.records * args.record_size / 1e6
            print(f"{args.files} files x {args.records} records x {args.record_size} B "
                  f"({mb:.1f} MB) on a FUSE mount, {args.latency * 1e3:g} ms per read, "
                  f"{os.cpu_count()} CPUs; {args.rounds} rounds per figure")
            measure(("sequential (conveyor)", 1), "conveyor", "sequential", 1,
                    {"CONVEYOR_READ_AHEAD": "never"})
            measure(("sequential, read-ahead", 1), "conveyor", "sequential", 1)
            for n in [1] + cycles:
                measure(("plain read() threads", n), "plain", "parallel", n)
            for c in cycles:
                for system in systems:
                    env = {"CONVEYOR_READ_AHEAD": "never"} if "off" in system else {}
                    measure((system, c), "conveyor" if "conveyor" in system else "tf.data",
                            "interleave", c, env)

    seq = results.get(("sequential (conveyor)", 1))
    if not seq:
        print(f"no sequential rate: {skipped}")
        return 1
    unit = statistics.median(rates(seq))
    print(f"\nMB/s median [min-max]; speedup = median / the sequential read "
          f"({unit:.1f} MB/s, conveyor TFRecordDataset without read-ahead); "
          "limit = N plain read() threads at N = C; threads: the most at once "
          "(engine cv* / iou-wrk / all)")
    head = (f"  {'system':<26} {'C':>3} {'MB/s':>22} {'speedup':>8} {'/0.8C':>6} "
            f"{'/limit':>7}   threads")
    print(head)
    print("  " + "-" * (len(head) - 2))
    order = ([("sequential (conveyor)", 1), ("sequential, read-ahead", 1)] +
             [("plain read() threads", n) for n in [1] + cycles] +
             [(s, c) for c in cycles for s in systems])
    for key in order:
        res = results.get(key)
        if res is None:
            print(f"  {key[0]:<26} {key[1]:>3} skipped: {skipped.get(key, 'not run')}")
            continue
        med = statistics.median(rates(res))
        speed = med / unit
        is_pipe = key[0] in SYSTEMS
        goal = f"{speed / (0.8 * key[1]):6.2f}" if is_pipe else f"{'':>6}"
        lim = results.get(("plain read() threads", key[1]))
        limit = (f"{med / statistics.median(rates(lim)):7.2f}" if is_pipe and lim
                 else f"{'':>7}")
        th = res["threads"]
        print(f"  {key[0]:<26} {key[1]:>3} {fmt(rates(res)):>22} {speed:7.2f}x {goal} "
              f"{limit}   {th['engine']:>3} / {th['iou-wrk']:>3} / {th['all']:>3}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "unit_mb_s": unit,
                       "results": [{"system": k[0], "n": k[1], **v} for k, v in results.items()],
                       "skipped": {f"{k[0]} {k[1]}": v for k, v in skipped.items()}}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
