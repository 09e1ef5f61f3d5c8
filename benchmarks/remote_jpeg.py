#!/usr/bin/env python3
"""Benchmark (c) of issue 27: the JPEG workload with the images in a bucket
behind a proxy that holds back each answer's first byte (--latency-ms,
default 30), beside the same images read locally; each system in its own
process.

  pipeline   list_files(pattern, shuffle=False) (from_tensor_slices(urls)
             where list_files cannot list the store yet)
             .map(lambda f: resize(decode_jpeg(read_file(f), channels=3),
                  [224, 224]), num_parallel_calls=AUTOTUNE)
             .batch(32).prefetch(AUTOTUNE)
  images     benchmarks/images.py's make_files: --files JPEGs of 375x500
             made from /work/shared/testdata's photos (cached in $TMPDIR)
  systems    conveyor local, conveyor gs:// (s3:// once it is in the tree),
             tf.data local, and tf.data on the store where TensorFlow can be
             pointed at the endpoint (it cannot: it says so)

One untimed warm-up epoch, then --rounds timed epochs; images/s median
[min-max]; the remote / local ratio. Timings are printed, never asserted;
the machine may be shared (say so with the numbers).

    python benchmarks/remote_jpeg.py                  # 512 images, 5 rounds
    python benchmarks/remote_jpeg.py --quick
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def pipeline(lib, files, use_list_files):
    if use_list_files:
        ds = lib.data.Dataset.list_files(files, shuffle=False)
    else:
        ds = lib.data.Dataset.from_tensor_slices(files)
    fn = lambda f: lib.image.resize(  # noqa: E731
        lib.io.decode_jpeg(lib.io.read_file(f), channels=3), [224, 224])
    return ds.map(fn, num_parallel_calls=lib.data.AUTOTUNE).batch(32).prefetch(lib.data.AUTOTUNE)


def child(system, cfg, rounds):
    lib_name, where = system.split()
    if lib_name == "tf.data" and where != "local":
        if cfg["store"] == "gcs":
            return {"unavailable": "TensorFlow's GCS file system has no endpoint override (no "
                    "STORAGE_EMULATOR_HOST; it always asks https://storage.googleapis.com): it "
                    "cannot reach the emulator"}
        return {"unavailable": "TensorFlow 2.x has no s3:// file system (it moved to "
                "tensorflow-io, not installed)"}
    if lib_name == "tf.data":
        import tensorflow as lib
    else:
        import conveyor as lib
    pattern, urls = cfg[where]["pattern"], cfg[where]["urls"]
    note = "list_files(pattern)"
    try:
        listed = sorted(bytes(x).decode() if isinstance(x, bytes) else x.decode()
                        for x in lib.data.Dataset.list_files(pattern, shuffle=False)
                        .as_numpy_iterator())
        if listed != sorted(urls):
            raise RuntimeError("list_files listed other files")
        ds = pipeline(lib, pattern, True)
    except Exception as e:  # noqa: BLE001 (list_files over a store lands later)
        note = f"from_tensor_slices(urls); list_files failed: {type(e).__name__}"
        ds = pipeline(lib, urls, False)
    times = []
    for r in range(rounds + 1):
        t = time.perf_counter()
        n = 0
        for b in ds:
            n += int(b.shape[0])
        if r:
            times.append(time.perf_counter() - t)
        assert n == len(urls), (n, len(urls))
    return {"images_per_s": [len(urls) / t for t in times], "note": note}


def run_child(system, cfg_path, rounds, env):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", system,
                          "--config", cfg_path, "--rounds", str(rounds)],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800)
    if out.returncode != 0:
        return {"error": (out.stderr or out.stdout).strip().splitlines()[-1:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def fmt(values):
    return "%.0f [%.0f-%.0f]" % (statistics.median(values), min(values), max(values))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--latency-ms", type=int, default=30)
    ap.add_argument("--stores", default="gcs,s3")
    ap.add_argument("--no-tf", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--child")
    ap.add_argument("--config")
    args = ap.parse_args()
    if args.child:
        with open(args.config) as f:
            cfg = json.load(f)
        print(json.dumps(child(args.child, cfg, args.rounds)))
        return
    if args.quick:
        args.files, args.rounds = 64, 2
    sys.path.insert(0, HERE)
    import images
    import remote_stores
    folder = os.path.join(tempfile.gettempdir(), "conveyor-bench-images", str(args.files))
    paths, origin = images.make_files(folder, args.files)
    print(f"remote JPEG benchmark (c): {os.cpu_count()} CPUs, {args.files} JPEGs 375x500 "
          f"({origin}), batch 32, {args.latency_ms} ms first-byte latency at the proxy, "
          f"{args.rounds} rounds after a warm-up, each system in its own process")
    base_env = dict(os.environ)
    base_env["PYTHONPATH"] = ROOT + os.pathsep + base_env.get("PYTHONPATH", "")
    base_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    local = {"pattern": os.path.join(folder, "*.jpg"), "urls": sorted(paths)}
    results = {}
    for kind in args.stores.split(","):
        why = remote_stores.available(kind)
        if why:
            print(f"\n== {kind}: skipped ({why})")
            continue
        with remote_stores.open_store(kind, latency_ms=args.latency_ms) as st:
            names = [f"jpeg/{os.path.basename(p)}" for p in sorted(paths)]
            for p, n in zip(sorted(paths), names):
                with open(p, "rb") as f:
                    st.put(n, f.read())
            cfg = {"store": kind, "local": local,
                   "remote": {"pattern": st.url("jpeg/*.jpg"), "urls": [st.url(n) for n in names]}}
            env = dict(base_env, **st.env)
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump(cfg, f)
            systems = ["conveyor local", "conveyor remote"]
            if not args.no_tf:
                systems += ["tf.data local", "tf.data remote"]
            print(f"\n== {kind} ({st.url('jpeg/')})")
            for system in systems:
                res = run_child(system, f.name, args.rounds, env)
                results[(kind, system)] = res
                label = system.replace("remote", st.scheme + "://")
                if "error" in res:
                    print(f"  {label:<16} error: {res['error']}")
                elif "unavailable" in res:
                    print(f"  {label:<16} not measured: {res['unavailable']}")
                else:
                    print(f"  {label:<16} {fmt(res['images_per_s'])} images/s  ({res['note']})")
            os.unlink(f.name)
            loc, rem = results[(kind, "conveyor local")], results[(kind, "conveyor remote")]
            if "images_per_s" in loc and "images_per_s" in rem:
                r = statistics.median(rem["images_per_s"]) / statistics.median(loc["images_per_s"])
                print(f"  conveyor {st.scheme}:// / local = {r:.2f}")
            print(f"  proxy: {st.proxy.counts}")


if __name__ == "__main__":
    main()
