#!/usr/bin/env python3
"""conveyor vs tf.data vs PyTorch's DataLoader on every workload: one command
writes the results table (results.md), the figures (results.json) and the plot
(throughput.png).

    python3 benchmarks/results/run.py            # 5 rounds, full sizes (~10-15 min on 2 cores)
    python3 benchmarks/results/run.py --quick    # 3 rounds, small sizes (< 60 s; for the tests)
    python3 benchmarks/results/run.py --out DIR --rounds 7 --only jpeg,csv

The workloads are in workloads.py: the pipelines of the other benchmarks
(images.py, records.py, csv_reading.py, text.py, map_batch.py, shuffle.py) for
conveyor and tf.data, and for the DataLoader a Dataset doing the same work per
element in Python (batch_size as the pipeline's, num_workers = CPUs,
persistent_workers=True). Each framework runs in its own long-lived child
process (conveyor's child, tf.data's child, torch's child; none imports
another's framework except that the conveyor and tf.data children load the
benchmark modules, which import conveyor). For every workload: one untimed
epoch in each child whose output digest (element count, sums, string CRCs) is
checked equal across the three (within float tolerance; JPEG: within 2% of the
mean pixel for the DataLoader, whose PIL resize antialiases); then --rounds
timed epochs, the children taking turns and the order flipping every round, so
load on a shared machine hits all three. Figures: elements/s (images,
records, rows, lines) median [min-max] over the rounds; ratios of medians.

A framework that is not installed gets "not installed" in its column. Timings
are printed and written, never asserted; the exit status is non-zero if an
output check fails or a child fails.
"""
import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import workloads as W  # noqa: E402

FRAMEWORKS = ("conveyor", "tf.data", "DataLoader")


# --------------------------------------------------------------------------- #
# child: one framework, driven over a pipe (one JSON line per request)

def child(framework, spec_path):
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever the libraries print goes to stderr

    def reply(obj):
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    try:
        if framework == "conveyor":
            import conveyor as lib
            version = lib.__version__
        elif framework == "tf.data":
            import tensorflow as lib
            version = lib.__version__
        else:
            # The DataLoader side is torch plus Pillow (its JPEG decode and resize): without
            # either it is "not installed".
            import torch as lib
            import PIL
            lib.set_num_threads(1)
            version = f"{lib.__version__} (Pillow {PIL.__version__})"
    except Exception as e:  # ImportError or a broken install
        reply({"error": f"not installed ({type(e).__name__}: {e})", "missing": True})
        return 0
    with open(spec_path) as f:
        spec = json.load(f)
    reply({"ready": True, "version": version, "cpus": W.cpus()})
    ds, expected = None, None
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if req["cmd"] == "prep":
                ds = None
                s = spec[req["w"]]
                ds = W.torch_loader(req["w"], s) if framework == "DataLoader" else W.tf_like(
                    lib, req["w"], s)
                digest = W.Digest()
                start = time.perf_counter()
                for batch in ds:
                    digest.add(batch)
                expected = digest.d["n"]
                reply({"digest": digest.d, "warmup_s": time.perf_counter() - start})
            elif req["cmd"] == "run":
                n = 0
                start = time.perf_counter()
                for batch in ds:
                    n += W.count(batch)
                seconds = time.perf_counter() - start
                if n != expected:
                    raise AssertionError(f"{n} elements, the checked epoch had {expected}")
                reply({"seconds": seconds, "n": n})
            elif req["cmd"] == "done":
                ds = None  # a DataLoader's persistent workers end here
                import gc
                gc.collect()
                reply({"done": True})
        except Exception as e:
            reply({"error": f"{type(e).__name__}: {e}"})
    return 0


class Child:
    def __init__(self, framework, spec_path, log_dir):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
                   PYTHONPATH=W.REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.framework = framework
        self.log = open(os.path.join(log_dir, framework.replace(".", "") + ".log"), "w+")
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", framework,
                                   "--spec", spec_path], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self.log, text=True, env=env)
        self.hello = None  # read once every child has started: they import side by side

    def _read(self):
        line = self.p.stdout.readline()
        if not line:
            self.log.seek(0)
            tail = self.log.read().strip().splitlines()[-3:]
            return {"error": "child died: " + " | ".join(tail)[-300:]}
        return json.loads(line)

    def ask(self, **req):
        if self.p.poll() is not None:
            return {"error": "child exited"}
        try:
            self.p.stdin.write(json.dumps(req) + "\n")
            self.p.stdin.flush()
        except BrokenPipeError:
            return {"error": "child exited"}
        return self._read()

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=60)
        except Exception:
            self.p.kill()
        self.log.close()


# --------------------------------------------------------------------------- #
# parent

def compact(v):
    unit = ""
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            v, unit = v / div, suffix
            break
    a = abs(v)
    digits = 0 if a >= 99.95 else 1 if a >= 9.995 else 2
    return f"{v:.{digits}f}{unit}"


def summary(rates):
    return {"median": statistics.median(rates), "min": min(rates), "max": max(rates)}


def cell(res):
    if "error" in res:
        return "not installed" if res.get("missing") else "failed"
    s = res["summary"]
    return f"{compact(s['median'])} [{compact(s['min'])}–{compact(s['max'])}]"


def ratio_cell(results, w, other):
    a, b = results[w].get("conveyor", {}), results[w].get(other, {})
    if "summary" not in a or "summary" not in b:
        return "–"
    r = a["summary"]["median"] / b["summary"]["median"]
    return f"{r:.0f}x" if r >= 99.5 else f"{r:.1f}x" if r >= 9.95 else f"{r:.2f}x"


def machine():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")),
                         "")
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(next(ln for ln in f if ln.startswith("MemTotal")).split()[1])
            mem = f", {kb / 2**20:.0f} GB RAM"
    except (OSError, StopIteration):
        pass
    return (f"{model or platform.processor()}, {len(os.sched_getaffinity(0))} usable CPUs "
            f"(os.cpu_count() {os.cpu_count()}){mem}; Python {platform.python_version()}, "
            f"{platform.system()} {platform.release()}")


def write_markdown(path, data):
    lines = [
        "# conveyor vs tf.data vs PyTorch DataLoader",
        "",
        f"Elements/s, median [min–max] over {data['rounds']} timed epochs per framework "
        "(higher is better); ratios are of the medians. Each framework in its own process, "
        "taking turns epoch by epoch; outputs checked equal before timing.",
        "",
        "| workload | elements | conveyor | tf.data | DataLoader | conveyor / tf.data "
        "| conveyor / DataLoader |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for w in data["workloads"]:
        r = data["results"][w]
        lines.append(f"| {W.TITLES[w]} | {data['spec'][w]['n']:,} | {cell(r['conveyor'])} | "
                     f"{cell(r['tf.data'])} | {cell(r['DataLoader'])} | "
                     f"{ratio_cell(data['results'], w, 'tf.data')} | "
                     f"{ratio_cell(data['results'], w, 'DataLoader')} |")
    v = data["versions"]
    lines += [
        "",
        f"Machine: {data['machine']}. Load average {data['load_start']} at the start, "
        f"{data['load_end']} at the end" + (
            f" (above {data['cpus']} before this run began: the machine was shared with other "
            "work, so the figures are depressed and spread)"
            if float(data["load_start"]) > data["cpus"] else "")
        + (f"; {data['note']}" if data["note"] else "") + ".",
        f"Versions: conveyor {v.get('conveyor', '-')}, TensorFlow {v.get('tf.data', '-')}, "
        f"torch {v.get('DataLoader', '-')}; DataLoader num_workers = {data['workers']}, "
        "persistent_workers=True.",
        f"Date: {data['date']}. Command: `{data['command']}` ({data['wall_s']:.0f} s).",
        "",
        "tf.data is iterated as a training loop does (`for batch in ds`, EagerTensors); "
        "conveyor hands out NumPy arrays; the DataLoader gives torch tensors (strings: lists). "
        "DataLoader sides: PIL decode + bilinear resize (JPEG), a struct TFRecord reader "
        "without CRC checks, a pure-Python tf.train.Example decoder, the csv module, "
        "str methods + re (text), per-index __getitem__ (map, and TensorDataset with "
        "shuffle=True: a full permutation where the others use a 10,000 buffer). "
        "Outputs equal: element counts and string CRCs exactly, sums of values within "
        "1e-5; JPEG for the DataLoader within 2% (PIL's bilinear resize antialiases, "
        "TensorFlow's does not). See benchmarks/results/workloads.py.",
    ]
    checks = [f"{w}: {fw} {c}" for w in data["workloads"]
              for fw, c in data["checks"][w].items() if c not in ("ok", "")]
    if checks:
        lines += ["", "Output checks that did not pass: " + "; ".join(checks) + "."]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def plot(path, data):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ws = data["workloads"]
    fig, ax = plt.subplots(figsize=(11, 5.2), dpi=110)
    width = 0.27
    colors = {"conveyor": "#2b6cb0", "tf.data": "#ed8936", "DataLoader": "#c53030"}
    lo_all, hi_all = [], []
    for i, fw in enumerate(FRAMEWORKS):
        xs, med, err = [], [], [[], []]
        for j, w in enumerate(ws):
            r = data["results"][w][fw]
            if "summary" not in r:
                ax.text(j + (i - 1) * width, 0.02, "n/a", ha="center", va="bottom", fontsize=7,
                        rotation=90, transform=ax.get_xaxis_transform())
                continue
            s = r["summary"]
            xs.append(j + (i - 1) * width)
            med.append(s["median"])
            err[0].append(s["median"] - s["min"])
            err[1].append(s["max"] - s["median"])
            lo_all.append(s["min"])
        label = fw + ("" if xs else " (not installed)")
        ax.bar(xs, med, width, yerr=err, capsize=2.5, label=label, color=colors[fw],
               error_kw={"elinewidth": 0.9, "ecolor": "#222"})
        for x, m, up in zip(xs, med, err[1]):
            ax.text(x, (m + up) * 1.12, compact(m), ha="center", va="bottom", fontsize=6.5)
            hi_all.append(m + up)
    ax.set_yscale("log")
    if lo_all:
        ax.set_ylim(min(lo_all) / 3, max(hi_all) * 6)
    ax.set_xticks(range(len(ws)))
    ax.set_xticklabels([w.replace("_", "\n") for w in ws])
    ax.set_ylabel("elements / s (log scale; bars: median, whiskers: min–max)")
    ax.set_title(f"conveyor vs tf.data vs PyTorch DataLoader ({data['workers']} workers), "
                 f"{data['rounds']} epochs each", fontsize=11)
    ax.grid(axis="y", which="major", alpha=0.3)
    ax.legend(loc="upper left", ncol=3, fontsize=9, frameon=False)
    fig.text(0.01, 0.01, data["machine"][:140], fontsize=6.5, color="#555")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, 3 rounds (tests)")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--out", default=HERE, help="folder for results.md/.json, throughput.png")
    ap.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "conveyor-bench-results"))
    ap.add_argument("--only", default="", help="comma-separated workloads")
    ap.add_argument("--note", default="", help="a note for the machine line")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--spec", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child, args.spec)
    t0 = time.perf_counter()
    rounds = args.rounds or (3 if args.quick else 5)
    names = [w for w in (args.only.split(",") if args.only else W.WORKLOADS) if w]
    os.makedirs(args.out, exist_ok=True)
    load_start = "%.1f" % os.getloadavg()[0]
    sys.path.insert(0, W.REPO)
    spec = W.prepare(os.path.join(args.data, "quick" if args.quick else "full"), args.quick)
    work = tempfile.mkdtemp(prefix="conveyor-results-")
    spec_path = os.path.join(work, "spec.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)

    children = {fw: Child(fw, spec_path, work) for fw in FRAMEWORKS}
    for c in children.values():
        c.hello = c._read()
    print(f"children ready after {time.perf_counter() - t0:.1f} s", flush=True)
    versions = {fw: c.hello.get("version") for fw, c in children.items() if "version" in c.hello}
    results = {w: {} for w in names}
    checks = {w: {} for w in names}
    bad = False
    print(f"{len(names)} workloads x {rounds} rounds; " + ", ".join(
        f"{fw}: {c.hello.get('version') or c.hello.get('error')}" for fw, c in children.items()),
        flush=True)
    try:
        for k, w in enumerate(names):
            live = [fw for fw in FRAMEWORKS if "error" not in children[fw].hello]
            for fw in FRAMEWORKS:
                if fw not in live:
                    results[w][fw] = {"error": children[fw].hello["error"],
                                      "missing": children[fw].hello.get("missing", False)}
            digests = {}
            for fw in (live if k % 2 == 0 else live[::-1]):
                r = children[fw].ask(cmd="prep", w=w)
                if "error" in r:
                    results[w][fw] = {"error": r["error"]}
                    checks[w][fw] = "failed: " + r["error"]
                    bad = True
                else:
                    digests[fw] = r["digest"]
            ref = digests.get("conveyor")
            for fw, d in digests.items():
                if fw == "conveyor" or ref is None:
                    checks[w][fw] = "ok" if fw == "conveyor" else "no reference"
                    continue
                tol = W.TOLERANCE.get(w, {}).get(fw, W.DEFAULT_TOLERANCE)
                diff = W.compare(ref, d, tol)
                checks[w][fw] = "ok" if not diff else "differs: " + diff
                bad = bad or bool(diff)
            timed = [fw for fw in live if fw in digests]
            rates = {fw: [] for fw in timed}
            for r in range(rounds):
                for fw in (timed if (r + k) % 2 == 0 else timed[::-1]):
                    if fw not in rates:
                        continue
                    m = children[fw].ask(cmd="run", w=w)
                    if "error" in m:
                        results[w][fw] = {"error": m["error"]}
                        rates.pop(fw)
                        bad = True
                        continue
                    rates[fw].append(m["n"] / m["seconds"])
            for fw in timed:
                children[fw].ask(cmd="done")
                if fw in rates:
                    results[w][fw] = {"rates": rates[fw], "summary": summary(rates[fw])}
            print(f"  {w:<14}" + "  ".join(f"{fw} {cell(results[w][fw]):>22}" for fw in FRAMEWORKS)
                  + ("" if all(c == "ok" for c in checks[w].values()) else f"  checks {checks[w]}"),
                  flush=True)
    finally:
        for c in children.values():
            c.close()
    import conveyor
    versions.setdefault("conveyor", conveyor.__version__)
    data = {
        "workloads": names, "rounds": rounds, "quick": args.quick, "spec": spec,
        "results": results, "checks": checks, "versions": versions,
        "workers": children["DataLoader"].hello.get("cpus", W.cpus()),
        "machine": machine(), "cpus": len(os.sched_getaffinity(0)), "load_start": load_start,
        "load_end": "%.1f" % os.getloadavg()[0], "note": args.note,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python3 benchmarks/results/run.py" + "".join(
            " " + shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])),
        "wall_s": time.perf_counter() - t0,
    }
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(data, f, indent=1)
    write_markdown(os.path.join(args.out, "results.md"), data)
    try:
        plot(os.path.join(args.out, "throughput.png"), data)
    except ImportError as e:
        print(f"no plot: {e}")
    print(f"wrote {args.out}/results.md, results.json, throughput.png "
          f"({data['wall_s']:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
