#!/usr/bin/env python3
"""TFRecord reading, conveyor vs tf.data (workload W4 of shared/reference/perf-anchors.md).

Files are written once by TensorFlow's TFRecordWriter when it is installed
(else by conveyor's, which writes the same bytes), 8 shards per set:

  small: 200,000 records of 1 KB (~200 MB)      large: 10,000 records of 100 KB (~1 GB)

each uncompressed and GZIP. Every variant reads one epoch through

  list_files(shuffle=False) -> interleave(TFRecordDataset, cycle_length=2,
                                          num_parallel_calls=2) -> batch(256)

with CRCs checked, and prints MB/s and records/s, median [min-max] over rounds
run alternately in one process, beside this machine's limits: CRC32C (the
engine's, SSE4.2 where present), zlib inflate (Python's zlib module, the same
library) and memcpy. A last row reads tf.train.Example records and parses
them (batch(256) -> map(parse_example), the vectorized form).

Both sides hand out one bytes object per record when converting to Python
(conveyor always, tf.data with as_numpy_iterator), so glibc's heap trimming
matters: the limits are measured first, and their 20 MB NumPy arrays raise
glibc's dynamic mmap/trim thresholds as any NumPy program soon does; in a
fresh process that has not, each batch of 100 KB bytes objects faults its
pages in anew and both sides run slower.

    python benchmarks/records.py            # 5 rounds
    python benchmarks/records.py --quick    # small sizes, 2 rounds
    python benchmarks/records.py --no-tf
"""
import argparse
import os
import resource
import sys
import tempfile
import time
import zlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

import conveyor as cv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import fmt_range, import_tf, machine_info, run_rounds, summary  # noqa: E402

SHARDS = 8
GOAL = 1.5  # issue 11: uncompressed TFRecord reading >= 1.5x tf.data at 1 KB and 100 KB


def record_payloads(count, size, seed):
    """Compressible payloads (about 2:1 with zlib): random bytes from a 16-letter alphabet."""
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"abcdefghijklmnop", dtype=np.uint8)
    blob = letters[rng.integers(0, 16, size=count * size, dtype=np.uint8)].tobytes()
    return [blob[i * size:(i + 1) * size] for i in range(count)]


def write_shards(folder, name, payloads, compression, tf):
    os.makedirs(folder, exist_ok=True)
    paths = [os.path.join(folder, f"{name}-{i:02d}.tfrecord") for i in range(SHARDS)]
    if all(os.path.exists(p) for p in paths):
        return paths
    for i, path in enumerate(paths):
        if tf is not None:
            writer = tf.io.TFRecordWriter(path, options=compression or None)
        else:
            writer = cv.io.TFRecordWriter(path, options=compression or None)
        with writer:
            for payload in payloads[i::SHARDS]:
                writer.write(payload)
    return paths


def pipeline(lib, pattern, compression, parse_spec=None):
    files = lib.data.Dataset.list_files(pattern, shuffle=False)
    ds = files.interleave(lambda f: lib.data.TFRecordDataset(f, compression_type=compression),
                          cycle_length=2, num_parallel_calls=2)
    ds = ds.batch(256)
    if parse_spec is not None:
        ds = ds.map(lambda s: lib.io.parse_example(s, parse_spec))
    return ds


def epoch(ds):
    records = 0
    start = time.perf_counter()
    for batch in ds:
        records += len(batch) if not isinstance(batch, dict) else len(next(iter(batch.values())))
    return time.perf_counter() - start, records


def measure_limits(payloads_bytes, gz_blob):
    """CRC32C, inflate and memcpy rates on this machine (best of 3)."""
    data = np.frombuffer(payloads_bytes, dtype=np.uint8)
    out = {}
    crc = getattr(cv._engine, "crc32c", None)
    if crc is not None:
        best = min(_timed(lambda: crc(payloads_bytes)) for _ in range(3))
        out["CRC32C (engine)"] = len(payloads_bytes) / best
    best = min(_timed(lambda: zlib.decompress(gz_blob, 31)) for _ in range(3))
    out["zlib inflate (1 core)"] = len(zlib.decompress(gz_blob, 31)) / best
    dst = np.empty_like(data)
    np.copyto(dst, data)
    best = min(_timed(lambda: np.copyto(dst, data)) for _ in range(3))
    out["memcpy"] = data.nbytes / best
    return out


def _cpu_seconds():
    """CPU time of the whole process (all threads), user + system."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _ratio_range(values):
    s = summary(values)
    return f"{s['median']:.2f}x [{s['min']:.2f}-{s['max']:.2f}]"


def _timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-tf", action="store_true")
    p.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "conveyor-bench-records"))
    args = p.parse_args(argv)
    sets = {"small": (200_000, 1024), "large": (10_000, 100 * 1024)}
    if args.quick:
        sets = {"small": (20_000, 1024), "large": (500, 100 * 1024)}
    rounds = args.rounds or (2 if args.quick else 5)
    tf, tf_note = import_tf(args.no_tf)
    info = machine_info(tf)
    print("TFRecord reading, conveyor vs tf.data")
    print(f"machine: {info['cpus_usable']} CPUs; python {info['python']}, conveyor "
          f"{info['conveyor']}, tensorflow {info['tensorflow'] or '-'}; {rounds} rounds, "
          "alternating; median [min-max]")
    if tf is None:
        print(f"tf.data: {tf_note}")
    libs = [("conveyor", cv)] + ([("tf.data", tf), ("tf.data numpy", tf)] if tf is not None else [])

    folder = os.path.join(args.dir, "quick" if args.quick else "full")
    workloads = {}
    for set_name, (count, size) in sets.items():
        payloads = record_payloads(count, size, seed=1)
        nbytes = count * size
        for compression in ("", "GZIP"):
            name = f"{set_name}: {count:,} x {size // 1024} KB, {compression or 'uncompressed'}"
            paths = write_shards(os.path.join(folder, set_name + (compression or "raw")), set_name,
                                 payloads, compression, tf)
            pattern = os.path.join(os.path.dirname(paths[0]), "*.tfrecord")
            workloads[name] = (pattern, compression, nbytes, count, None)
        if set_name == "small":
            limits = measure_limits(b"".join(payloads[:20_000]),
                                    open(os.path.join(folder, "smallGZIP", "small-00.tfrecord"),
                                         "rb").read())
    # Examples: 10 features (ids, floats, a bytes field), parsed in batches.
    n_examples = 20_000 if args.quick else 100_000
    spec_cv = {f"f{i}": cv.io.FixedLenFeature([4], cv.float32) for i in range(8)}
    spec_cv.update(label=cv.io.FixedLenFeature([], cv.int64), name=cv.io.FixedLenFeature([], cv.string))
    ex_folder = os.path.join(folder, "examples")
    if not os.path.exists(os.path.join(ex_folder, "ex-00.tfrecord")):
        rng = np.random.default_rng(2)
        examples = [cv.io.serialize_example(dict(
            {f"f{j}": rng.random(4, dtype=np.float32) for j in range(8)},
            label=int(i % 1000), name=f"example-{i}".encode())) for i in range(n_examples)]
        write_shards(ex_folder, "ex", examples, "", tf)
    ex_bytes = sum(os.path.getsize(os.path.join(ex_folder, f)) for f in os.listdir(ex_folder))
    workloads[f"examples: {n_examples:,} tf.train.Example, read + parse_example"] = (
        os.path.join(ex_folder, "*.tfrecord"), "", ex_bytes, n_examples, "parse")

    variants = []
    for name, (pattern, compression, nbytes, count, parse) in workloads.items():
        for lib_name, lib in libs:
            spec = None
            if parse:
                spec = spec_cv if lib is cv else {
                    k: lib.io.FixedLenFeature(v.shape, lib.as_dtype(v.dtype.name)) for k, v in
                    spec_cv.items()}

            def run(warmup, lib=lib, pattern=pattern, compression=compression, spec=spec,
                    count=count, numpy=lib_name.endswith("numpy")):
                ds = pipeline(lib, pattern, compression, spec)
                cpu = _cpu_seconds()
                seconds, records = epoch(ds.as_numpy_iterator() if numpy else ds)
                assert records == count, (records, count)
                return {"s": seconds, "cpu": _cpu_seconds() - cpu}
            variants.append(((name, lib_name), run))
    results = run_rounds(variants, rounds)

    print()
    print(f"{'limits on this machine':<58}{'GB/s':>10}")
    for name, rate in limits.items():
        print(f"  {name:<56}{rate / 1e9:>10.2f}")
    print()
    print(f"{'workload':<58}{'conveyor MB/s':>22}{'tf.data MB/s':>22}{'cv/tf':>19}"
          f"{'tf numpy MB/s':>22}{'cv/tfnp':>19}{'cv rec/s':>12}{'cv/limit':>10}{'cv/memcpy':>11}")
    verdicts, cpu_rows = [], []
    for name, (pattern, compression, nbytes, count, parse) in workloads.items():
        c = [nbytes / m["s"] / 1e6 for m in results[(name, "conveyor")]]
        t = [nbytes / m["s"] / 1e6 for m in results[(name, "tf.data")]] if tf is not None else None
        tn = [nbytes / m["s"] / 1e6 for m in results[(name, "tf.data numpy")]] if tf is not None else None
        ratio = [a / b for a, b in zip(c, t)] if t else None
        ratio_np = [a / b for a, b in zip(c, tn)] if tn else None
        limit = limits["zlib inflate (1 core)"] * 2 if compression == "GZIP" else (
            limits.get("CRC32C (engine)", limits["memcpy"]))
        cmed = summary(c)["median"]
        tf_text = fmt_range(t) if t else "-"
        ratio_text = _ratio_range(ratio) if ratio else "-"
        tn_text = fmt_range(tn) if tn else "-"
        ratio_np_text = _ratio_range(ratio_np) if ratio_np else "-"
        memcpy_text = f"{cmed * 1e6 / limits['memcpy']:.2f}" if not compression else "-"
        print(f"{name:<58}{fmt_range(c):>22}{tf_text:>22}{ratio_text:>19}{tn_text:>22}"
              f"{ratio_np_text:>19}{cmed * 1e6 / (nbytes / count):>12,.0f}"
              f"{cmed * 1e6 / limit:>10.2f}{memcpy_text:>11}")
        if t:
            cpu = {k: [m["cpu"] * 1e9 / nbytes for m in results[(name, k)]]
                   for k in ("conveyor", "tf.data", "tf.data numpy")}
            label = f"{name.split(':')[0]}, {name.split(', ')[-1]}"
            cpu_rows.append(f"  {label:<40}"
                            + "".join(f"{summary(cpu[k])['median']:>12.3f}" for k in cpu)
                            + f"{summary(cpu['tf.data'])['median'] / summary(cpu['conveyor'])['median']:>10.2f}x"
                            + f"{summary(cpu['tf.data numpy'])['median'] / summary(cpu['conveyor'])['median']:>10.2f}x")
        if ratio and not compression and not parse:
            worst = min(summary(ratio)["median"], summary(ratio_np)["median"])
            verdicts.append(f"{name.split(':')[0]} {worst:.2f}x "
                            f"{'met' if worst >= GOAL else 'MISSED'}")
    print("(tf.data: iterating the dataset (EagerTensors: strings stay in TensorFlow); tf numpy: "
          "as_numpy_iterator(), bytes objects as conveyor gives; cv/tf, cv/tfnp: paired per-round "
          "ratios of MB/s, median [min-max]; cv/limit: conveyor's MB/s over the CRC32C rate "
          "(uncompressed) or twice the 1-core inflate rate (GZIP, 2 cores); cv/memcpy: over the "
          "memcpy rate (uncompressed))")
    if cpu_rows:
        print()
        print(f"{'CPU seconds per GB (all threads), median':<42}{'conveyor':>12}{'tf.data':>12}"
              f"{'tf numpy':>12}{'tf/cv':>11}{'tfnp/cv':>11}")
        print("\n".join(cpu_rows))
        print("(CPU time is less sensitive than wall time to other load on a shared machine)")
    if verdicts:
        print(f"goal: uncompressed reading >= {GOAL}x tf.data, both ways of iterating (median of "
              f"the paired ratios, the lower of cv/tf and cv/tfnp): " + "; ".join(verdicts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
