#!/usr/bin/env python3
"""Restore-to-position time vs position on one TFRecord file (issue 13).

One uncompressed TFRecord file of `--records` records of ~100 bytes, indexed
with ``python -m conveyor.tools.index``. For each position p, the time until
the element at p is in hand, four ways:

* ``restore``: conveyor ``it.restore(state)`` of a state saved at p, then
  ``next(it)`` (the state holds the byte offset: a seek);
* ``skip+index``: conveyor ``next(iter(TFRecordDataset(f).skip(p)))`` with
  the index (seeks over the p records);
* ``skip``: the same through a path without an index (reads p records);
* ``tf skip``: tf.data's ``next(iter(TFRecordDataset(f).skip(p)))``
  (reads p records), when TensorFlow is installed.

Position 0 shows each way's fixed cost (building the iterator, the first
read); the growth after it is what the position costs.

Each side runs in its own process (TensorFlow and conveyor never share one),
the positions in turn within each round; min / median / max over
`--rounds` rounds, in milliseconds. The file is in the page cache after its
first read (warm cache: this measures the work, not the disk). Timings are
printed, never asserted.

    python benchmarks/restore_seek.py                # 1M records, 5 rounds, ~1-2 min on 2 cores
    python benchmarks/restore_seek.py --records 100000 --rounds 9
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def positions_for(records):
    """0 (the fixed cost: making the iterator, the first element), then decades."""
    out, p = [0], 1000
    while p < records:
        out.append(p)
        p *= 10
    return out + [records - 1]


def write_file(path, records):
    import conveyor as cv
    payload = bytes(range(256)) * 1
    with cv.io.TFRecordWriter(path) as w:
        for i in range(records):
            w.write(b"%08d" % i + payload[i % 64:i % 64 + 92])


def side_conveyor(path, noindex, positions, rounds):
    import conveyor as cv
    D = cv.data
    states = {}
    it = iter(D.TFRecordDataset(path))
    done = 0
    for p in positions:  # states saved at each position, in one pass
        while done < p:
            next(it)
            done += 1
        states[p] = it.save()
    ways = {
        "restore": lambda p: _restored_next(D.TFRecordDataset(path), states[p]),
        "skip+index": lambda p: next(iter(D.TFRecordDataset(path).skip(p))),
        "skip": lambda p: next(iter(D.TFRecordDataset(noindex).skip(p))),
    }
    want = {p: b"%08d" % p for p in positions}
    times = {w: {p: [] for p in positions} for w in ways}
    for _ in range(rounds):
        for w, fn in ways.items():
            for p in positions:
                t0 = time.perf_counter()
                x = fn(p)
                times[w][p].append(time.perf_counter() - t0)
                assert bytes(x)[:8] == want[p], (w, p)
    return times


def _restored_next(ds, state):
    it = iter(ds)
    it.restore(state)
    return next(it)


def side_tf(path, positions, rounds):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    times = {"tf skip": {p: [] for p in positions}}
    for _ in range(rounds):
        for p in positions:
            t0 = time.perf_counter()
            x = next(iter(tf.data.TFRecordDataset(path).skip(p))).numpy()
            times["tf skip"][p].append(time.perf_counter() - t0)
            assert x[:8] == b"%08d" % p
    return times


def run_side(args, side, path, noindex, positions):
    cmd = [sys.executable, os.path.abspath(__file__), "--side", side, "--path", path,
           "--noindex", noindex, "--rounds", str(args.rounds),
           "--positions", ",".join(map(str, positions))]
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        print(f"{side}: failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return {}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--side", choices=["conveyor", "tf"], help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    ap.add_argument("--noindex", help=argparse.SUPPRESS)
    ap.add_argument("--positions", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.side:
        positions = [int(p) for p in args.positions.split(",")]
        if args.side == "conveyor":
            times = side_conveyor(args.path, args.noindex, positions, args.rounds)
        else:
            times = side_tf(args.path, positions, args.rounds)
        print(json.dumps({w: {str(p): t for p, t in d.items()} for w, d in times.items()}))
        return
    positions = positions_for(args.records)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "data.tfrecord")
        noindex = os.path.join(folder, "noindex.tfrecord")  # a link: same bytes, no sidecar
        t0 = time.perf_counter()
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, %r); "
                        "from restore_seek import write_file; write_file(%r, %d)"
                        % (os.path.dirname(os.path.abspath(__file__)), path, args.records)],
                       check=True, env=env)
        os.symlink(path, noindex)
        t1 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "conveyor.tools.index", "-q", path], check=True,
                       env=env)
        t2 = time.perf_counter()
        size = os.path.getsize(path)
        print(f"{args.records} records, {size / 1e6:.1f} MB; written in {t1 - t0:.1f} s, "
              f"indexed in {t2 - t1:.2f} s (index {os.path.getsize(path + '.cvindex') / 1e6:.1f} "
              f"MB); {args.rounds} rounds, warm page cache")
        results = run_side(args, "conveyor", path, noindex, positions)
        try:
            import importlib.util
            has_tf = importlib.util.find_spec("tensorflow") is not None
        except ValueError:
            has_tf = False
        if has_tf:
            results.update(run_side(args, "tf", path, noindex, positions))
        else:
            print("(TensorFlow is not installed: no tf.data column)")
    print(f"{'way':<12}" + "".join(f"{'p=' + format(p, ','):>28}" for p in positions))
    print(f"{'':<12}" + "".join(f"{'min / median / max ms':>28}" for _ in positions))
    for way, d in results.items():
        cells = []
        for p in positions:
            t = sorted(d[str(p)])
            cells.append(f"{t[0] * 1e3:.2f} / {statistics.median(t) * 1e3:.2f} / "
                         f"{t[-1] * 1e3:.2f}")
        print(f"{way:<12}" + "".join(f"{c:>28}" for c in cells))


if __name__ == "__main__":
    main()
