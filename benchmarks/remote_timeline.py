#!/usr/bin/env python3
"""The timeline of an epoch of benchmark (b) (benchmarks/remote_storage.py):
where the time goes between `iter()` and the last batch, for conveyor and for
the limit (32 plain urllib GETs at once), each in its own process.

  conveyor  per GET: queued, started on the I/O thread, first byte, last byte,
            bytes and pauses (the engine's I/O trace: CONVEYOR_IO_TRACE names
            a file, one line per finished transfer, written by the cv-io
            thread); per batch: when the consumer has it; iter() and the end
  limit     per GET: started, headers in (first byte), body read (last byte)

Every figure is ms from the epoch's start (`iter()`, or the limit's first
submit), median [min-max] over --rounds epochs after a warm-up one; the
process's CPU, context switches and page faults per epoch go beside it.
Timings are printed, never asserted; the machine may be shared.

    python benchmarks/remote_timeline.py                      # gs://, 20 epochs
    python benchmarks/remote_timeline.py --store s3 --detail 100   # every GET of epochs over 100 ms
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return (time.process_time(), r.ru_nvcsw, r.ru_nivcsw, r.ru_minflt)


def _per_epoch(u0, u1, rounds):
    d = [(b - a) / rounds for a, b in zip(u0, u1)]
    return {"cpu_ms": d[0] * 1000, "voluntary_switches": d[1], "involuntary_switches": d[2],
            "minor_faults": d[3]}


def child_conveyor(cfg, rounds):
    import conveyor as cv
    files = (cv.data.Dataset.list_files(cfg["pattern"], shuffle=False) if cfg["listing"]
             else cv.data.Dataset.from_tensor_slices(cfg["urls"]))
    ds = files.interleave(cv.data.TFRecordDataset, cycle_length=16,
                          num_parallel_calls=cv.data.AUTOTUNE, deterministic=False
                          ).batch(32).prefetch(cv.data.AUTOTUNE)
    epochs, u0 = [], None
    for r in range(rounds + 1):
        if r == 1:
            u0 = _usage()
        t0 = time.monotonic_ns()
        it = iter(ds)
        t1 = time.monotonic_ns()
        batches, n = [], 0
        for b in it:
            batches.append(time.monotonic_ns())
            n += len(b)
        del it
        assert n == cfg["records"], (n, cfg["records"])
        epochs.append({"start": t0, "iter": t1, "batches": batches, "end": batches[-1]})
    return {"epochs": epochs[1:], "usage": _per_epoch(u0, _usage(), rounds)}


def child_limit(cfg, rounds):
    import concurrent.futures
    import urllib.request
    urls, sizes = cfg["plain_urls"], cfg["sizes"]

    def get(i):
        s = time.monotonic_ns()
        req = urllib.request.Request(urls[i], headers={"Range": f"bytes=0-{sizes[i] - 1}"})
        with urllib.request.urlopen(req, timeout=60) as r:
            f = time.monotonic_ns()
            data = r.read()
        d = time.monotonic_ns()
        assert len(data) == sizes[i]
        return (s, s, f, d, len(data), 0)

    epochs, u0 = [], None
    with concurrent.futures.ThreadPoolExecutor(len(urls)) as pool:
        for r in range(rounds + 1):
            if r == 1:
                u0 = _usage()
            t0 = time.monotonic_ns()
            gets = list(pool.map(get, range(len(urls))))
            epochs.append({"start": t0, "end": time.monotonic_ns(), "gets": gets})
    return {"epochs": epochs[1:], "usage": _per_epoch(u0, _usage(), rounds)}


def ms(a, b):
    return (b - a) / 1e6


def summarize(name, res, trace, detail):
    """The table of one system; GETs of the I/O trace go to the epoch they were queued in."""
    rows = []
    for e in res["epochs"]:
        t0, end = e["start"], e["end"]
        gets = e.get("gets") or [g for g in trace if t0 <= g[0] <= end and g[4] > 65536]
        if not gets:
            print(f"-- {name}: no GETs traced (an engine without CONVEYOR_IO_TRACE?)")
            return
        gets.sort(key=lambda g: g[1])
        last = max(g[3] for g in gets)
        row = {"epoch": ms(t0, end)}
        if "iter" in e:
            row["iter() returns"] = ms(t0, e["iter"])
        row.update({
            "first GET queued": ms(t0, gets[0][0]),
            "first GET started": ms(t0, gets[0][1]),
            "last GET started": ms(t0, gets[-1][1]),
            "first first byte": ms(t0, min(g[2] for g in gets)),
            "median first byte": statistics.median(ms(t0, g[2]) for g in gets),
            "median last byte": statistics.median(ms(t0, g[3]) for g in gets),
            "last byte": ms(t0, last),
            "end after last byte": ms(last, end),
            "GETs": len(gets),
            "GETs that paused": sum(1 for g in gets if g[5])})
        if "batches" in e:
            b = e["batches"]
            row["first batch"] = ms(t0, b[0])
            row["median batch"] = ms(t0, b[len(b) // 2])
            row["batches after last byte"] = sum(1 for t in b if t > last)
        rows.append(row)
        if detail is not None and row["epoch"] > detail:
            print(f"   epoch of {row['epoch']:.1f} ms:")
            for g in gets:
                print("     GET queued %6.1f started %6.1f first byte %6.1f last byte %6.1f, "
                      "%d bytes, %d pauses" % (ms(t0, g[0]), ms(t0, g[1]), ms(t0, g[2]),
                                               ms(t0, g[3]), g[4], g[5]))
            if "batches" in e:
                print("     batches at", " ".join("%.0f" % ms(t0, t) for t in e["batches"]))
    print(f"-- {name}: ms from the epoch's start, median [min-max] of {len(rows)} epochs")
    for k in rows[0]:
        vals = [r[k] for r in rows]
        print(f"  {k:<24} {statistics.median(vals):7.1f} [{min(vals):.1f}-{max(vals):.1f}]")
    u = res["usage"]
    print("  per epoch: %.1f ms of the process's CPU, %d voluntary and %d involuntary context "
          "switches, %d minor page faults" % (u["cpu_ms"], u["voluntary_switches"],
                                             u["involuntary_switches"], u["minor_faults"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--store", default="gcs", choices=("gcs", "s3"))
    ap.add_argument("--latency-ms", type=int, default=30)
    ap.add_argument("--systems", default="limit,conveyor,conveyor-urls")
    ap.add_argument("--detail", type=float, help="print every GET of the epochs over this many ms")
    ap.add_argument("--child")
    ap.add_argument("--config")
    args = ap.parse_args()
    if args.child:
        with open(args.config) as f:
            cfg = json.load(f)
        cfg["listing"] = args.child == "conveyor"
        fn = child_limit if args.child == "limit" else child_conveyor
        print(json.dumps(fn(cfg, args.rounds)))
        return
    sys.path.insert(0, HERE)
    import remote_storage
    import remote_stores
    why = remote_stores.available(args.store)
    if why:
        print(f"{args.store}: skipped ({why})")
        return
    with tempfile.TemporaryDirectory() as d:
        paths = remote_storage.make_files(d, 32, 64, 16)
        with remote_stores.open_store(args.store, latency_ms=args.latency_ms) as st:
            names = [f"data/{os.path.basename(p)}" for p in paths]
            sizes = []
            for p, n in zip(paths, names):
                with open(p, "rb") as f:
                    data = f.read()
                st.put(n, data)
                sizes.append(len(data))
            cfg = {"urls": [st.url(n) for n in names], "pattern": st.url("data/*.tfrecord"),
                   "plain_urls": [st.plain_get_url(n) for n in names], "sizes": sizes,
                   "records": len(paths) * 64}
            cfg_path = os.path.join(d, "cfg.json")
            with open(cfg_path, "w") as f:
                json.dump(cfg, f)
            print(f"timeline of benchmark (b) on {args.store} ({os.cpu_count()} CPUs, load "
                  f"{os.getloadavg()[0]:.2f}), {args.latency_ms} ms first-byte latency")
            for system in args.systems.split(","):
                trace_path = os.path.join(d, f"trace-{system}")
                env = dict(os.environ, **st.env, CONVEYOR_IO_TRACE=trace_path)
                env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
                out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", system,
                                      "--config", cfg_path, "--rounds", str(args.rounds)],
                                     capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
                if out.returncode:
                    print(f"-- {system}: failed: {out.stderr.strip()[-2000:]}")
                    continue
                trace = []
                if os.path.exists(trace_path):
                    with open(trace_path) as f:
                        trace = [tuple(int(v) for v in line.split()) for line in f if line.strip()]
                summarize(system, json.loads(out.stdout.strip().splitlines()[-1]), trace,
                          args.detail)


if __name__ == "__main__":
    main()
