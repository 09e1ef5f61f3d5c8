#!/usr/bin/env python3
"""Benchmark (b) of issue 27: TFRecords in object stores behind a proxy that
holds back each answer's first byte (--latency-ms, default 30), read by each
system in its own process; MB/s and the ratio to the server's own limit.

  store     fake-gcs-server (gs://) and, once s3:// is in the tree, SeaweedFS
            (s3://), started on loopback (benchmarks/remote_stores.py), behind
            tests/fault_proxy.py (latency only, no errors)
  limit     N parallel plain ranged GETs of whole objects (urllib, a thread
            pool of N = 8, 16, 32): the best N's median is the server's limit
  conveyor  from_tensor_slices(urls) (list_files(pattern) where it lists the
            store) .interleave(TFRecordDataset, cycle_length=16,
            num_parallel_calls=AUTOTUNE, deterministic=False).batch(32)
            .prefetch(AUTOTUNE); list_files lists the store once, when the
            dataset is made (the proxy counts 2 listings per run: this and
            the check that it lists the files the limit reads)
  conveyor-urls  the same over from_tensor_slices(urls): the files the limit
            reads, known beforehand
  fsspec    gcsfs / s3fs at the proxy: fs.cat(urls) (its own concurrent GETs)
  DataLoader  torch DataLoader(num_workers=W) over a map-style Dataset whose
            item i is object i read with gcsfs / s3fs and parsed into records
  tf.data   the conveyor pipeline in TensorFlow, where TensorFlow can be
            pointed at the endpoint (its GCS file system cannot: it says so)

Every system reads every file once per round: one untimed warm-up round, then
--rounds timed ones; each figure is median [min-max] MB/s of the files' bytes.
Timings are printed, never asserted; the machine may be shared (say so with
the numbers).

    python benchmarks/remote_storage.py                 # 32 files of 64 x 16 KB, 5 rounds
    python benchmarks/remote_storage.py --quick         # smoke run
    python benchmarks/remote_storage.py --stores gcs --systems limit,conveyor
"""
import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SYSTEMS = ("limit", "conveyor", "conveyor-urls", "fsspec", "DataLoader", "tf.data")
GOAL = 0.8  # conveyor / the server's limit


# ---- children: one system, one store ------------------------------------------

def _tfrecord_payloads(blob):
    """Records of a TFRecord file's bytes (lengths only; the CRCs unchecked)."""
    out, i = [], 0
    while i < len(blob):
        (n,) = struct.unpack_from("<Q", blob, i)
        out.append(blob[i + 12:i + 12 + n])
        i += 16 + n
    return out


def child_limit(cfg, rounds):
    import concurrent.futures
    import urllib.request
    urls = cfg["plain_urls"]
    sizes = cfg["sizes"]

    def get(i):
        req = urllib.request.Request(urls[i], headers={"Range": f"bytes=0-{sizes[i] - 1}"})
        with urllib.request.urlopen(req, timeout=60) as r:
            data = r.read()
        assert len(data) == sizes[i], (len(data), sizes[i])
        return len(data)

    by_n = {}
    for n in cfg["limit_threads"]:
        with concurrent.futures.ThreadPoolExecutor(n) as pool:
            times = []
            for r in range(rounds + 1):
                t = time.perf_counter()
                total = sum(pool.map(get, range(len(urls))))
                if r:
                    times.append(time.perf_counter() - t)
        by_n[n] = times
    return {"by_n": by_n, "bytes": total}


def child_conveyor(cfg, rounds, listing=True):
    import conveyor as cv
    urls = cfg["urls"]
    note = "from_tensor_slices(urls)"
    try:
        if not listing:
            raise LookupError("not asked")
        listed = sorted(bytes(x).decode() for x in cv.data.Dataset.list_files(
            cfg["pattern"], shuffle=False).as_numpy_iterator())
        if listed == sorted(urls):
            note = "list_files(pattern)"
    except LookupError:
        pass
    except Exception as e:  # noqa: BLE001 (list_files over the store lands later)
        note += f" (list_files failed: {type(e).__name__})"
    files = (cv.data.Dataset.list_files(cfg["pattern"], shuffle=False) if note.startswith("list")
             else cv.data.Dataset.from_tensor_slices(urls))
    ds = files.interleave(cv.data.TFRecordDataset, cycle_length=16,
                          num_parallel_calls=cv.data.AUTOTUNE, deterministic=False
                          ).batch(32).prefetch(cv.data.AUTOTUNE)
    times = []
    for r in range(rounds + 1):
        t = time.perf_counter()
        n = 0
        for b in ds:
            n += len(b)
        if r:
            times.append(time.perf_counter() - t)
        assert n == cfg["records"], (n, cfg["records"])
    return {"times": times, "note": note}


def _fs(cfg):
    sys.path.insert(0, HERE)
    import remote_stores
    return remote_stores.fs_for(cfg["store"], cfg["endpoint"], cfg["client_env"])


def child_fsspec(cfg, rounds):
    fs = _fs(cfg)
    times = []
    for r in range(rounds + 1):
        fs.invalidate_cache()
        t = time.perf_counter()
        got = fs.cat(cfg["urls"])
        if r:
            times.append(time.perf_counter() - t)
        assert sum(len(v) for v in got.values()) == sum(cfg["sizes"])
    return {"times": times, "note": f"{type(fs).__name__}.cat(urls)"}


def child_dataloader(cfg, rounds):
    import torch
    urls = cfg["urls"]

    class Objects(torch.utils.data.Dataset):
        def __init__(self):
            self.fs = None

        def __len__(self):
            return len(urls)

        def __getitem__(self, i):
            if self.fs is None:  # one client per worker process
                self.fs = _fs(cfg)
            with self.fs.open(urls[i], "rb") as f:
                return _tfrecord_payloads(f.read())

    workers = cfg["workers"]
    loader = torch.utils.data.DataLoader(Objects(), batch_size=None, num_workers=workers,
                                         persistent_workers=True, prefetch_factor=4)
    times = []
    for r in range(rounds + 1):
        t = time.perf_counter()
        n = sum(len(recs) for recs in loader)
        if r:
            times.append(time.perf_counter() - t)
        assert n == cfg["records"]
    return {"times": times, "note": f"num_workers={workers}"}


def child_tf(cfg, rounds):
    if cfg["store"] == "gcs":
        return {"unavailable": "TensorFlow's GCS file system has no endpoint override (it reads "
                "no STORAGE_EMULATOR_HOST: its variables are GCS_*, none an endpoint) and always "
                "asks https://storage.googleapis.com: it cannot reach the emulator"}
    return {"unavailable": "TensorFlow 2.x has no s3:// file system (it moved to tensorflow-io, "
            "not installed)"}


CHILDREN = {"limit": child_limit, "conveyor": child_conveyor,
            "conveyor-urls": lambda cfg, rounds: child_conveyor(cfg, rounds, listing=False),
            "fsspec": child_fsspec,
            "DataLoader": child_dataloader, "tf.data": child_tf}


def run_child(system, cfg_path, rounds, env):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", system,
                          "--config", cfg_path, "--rounds", str(rounds)],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800)
    if out.returncode != 0:
        return {"error": (out.stderr or out.stdout).strip().splitlines()[-1:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---- the parent ------------------------------------------------------------------

def mbps(nbytes, seconds):
    return nbytes / seconds / 1e6


def fmt(values):
    return "%.1f [%.1f-%.1f]" % (statistics.median(values), min(values), max(values))


def make_files(d, files, records, record_kb):
    import conveyor as cv
    paths = []
    rec = bytes(range(256)) * (record_kb * 1024 // 256)
    for i in range(files):
        p = os.path.join(d, f"part-{i:03d}.tfrecord")
        with cv.io.TFRecordWriter(p) as w:
            for j in range(records):
                w.write(b"%d/%d" % (i, j) + rec[:-8])
        paths.append(p)
    return paths


def bench_store(kind, args, paths):
    sys.path.insert(0, HERE)
    import remote_stores
    why = remote_stores.available(kind)
    if why:
        print(f"\n== {kind}: skipped ({why})")
        return
    with remote_stores.open_store(kind, latency_ms=args.latency_ms) as st:
        names = [f"data/{os.path.basename(p)}" for p in paths]
        sizes = []
        for p, n in zip(paths, names):
            data = open(p, "rb").read()
            st.put(n, data)
            sizes.append(len(data))
        cfg = {"store": kind, "endpoint": st.endpoint, "client_env": st.env,
               "urls": [st.url(n) for n in names], "pattern": st.url("data/*.tfrecord"),
               "plain_urls": [st.plain_get_url(n) for n in names], "sizes": sizes,
               "records": len(paths) * args.records, "limit_threads": args.limit_threads,
               "workers": args.workers}
        total = sum(sizes)
        env = dict(os.environ, **st.env)
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(cfg, f)
        print(f"\n== {kind} ({st.url('')}): {len(paths)} files, {total / 1e6:.1f} MB, "
              f"{args.latency_ms} ms first-byte latency at the proxy; {args.rounds} rounds after "
              "a warm-up, each system in its own process")
        results, limit = {}, None
        for system in args.systems:
            res = run_child(system, f.name, args.rounds, env)
            results[system] = res
            if "error" in res:
                print(f"  {system:<11} error: {res['error']}")
            elif "unavailable" in res:
                print(f"  {system:<11} not measured: {res['unavailable']}")
            elif system == "limit":
                best = None
                for n, times in res["by_n"].items():
                    rates = [mbps(total, t) for t in times]
                    print(f"  limit N={n:<4} {fmt(rates)} MB/s (plain ranged GETs, urllib)")
                    if best is None or statistics.median(rates) > statistics.median(best):
                        best = rates
                limit = statistics.median(best)
            else:
                rates = [mbps(total, t) for t in res["times"]]
                ratio = f"  {statistics.median(rates) / limit:.2f} of the limit" if limit else ""
                print(f"  {system:<11} {fmt(rates)} MB/s{ratio}  ({res.get('note', '')})")
                res["mb_per_s"] = rates
        os.unlink(f.name)
        for name in ("conveyor", "conveyor-urls"):
            if limit and "mb_per_s" in results.get(name, {}):
                r = statistics.median(results[name]["mb_per_s"]) / limit
                print(f"  {name} / limit = {r:.2f} (goal >= {GOAL}: "
                      f"{'met' if r >= GOAL else 'NOT met'})")
        print(f"  proxy: {st.proxy.counts}")
        return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=32)
    ap.add_argument("--records", type=int, default=64)
    ap.add_argument("--record-kb", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--latency-ms", type=int, default=30)
    ap.add_argument("--workers", type=int, default=4, help="DataLoader's num_workers")
    ap.add_argument("--stores", default="gcs,s3")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--child")
    ap.add_argument("--config")
    args = ap.parse_args()
    if args.child:
        with open(args.config) as f:
            cfg = json.load(f)
        print(json.dumps(CHILDREN[args.child](cfg, args.rounds)))
        return
    if args.quick:
        args.files, args.records, args.rounds = 8, 16, 2
    args.systems = [s for s in args.systems.split(",") if s]
    args.limit_threads = [8, 16, 32] if not args.quick else [8]
    if "limit" in args.systems:  # first: the others' ratio needs it
        args.systems = ["limit"] + [s for s in args.systems if s != "limit"]
    print(f"remote storage benchmark (b): {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as d:
        paths = make_files(d, args.files, args.records, args.record_kb)
        for kind in args.stores.split(","):
            bench_store(kind, args, paths)


if __name__ == "__main__":
    main()
