"""What leaving per-stage statistics on costs (goal: under 2% on every workload).

    python benchmarks/stats_overhead.py               # 7 rounds, ~1-2 min on 2 cores
    python benchmarks/stats_overhead.py --rounds 9 --scale 2
    python benchmarks/stats_overhead.py --json out.json
    python benchmarks/stats_overhead.py --instructions   # under valgrind, ~10 min
    python benchmarks/stats_overhead.py --profile        # perf samples, ~2 min

Every iterator keeps statistics (csrc/core/stats.h) and runs the autotuner
(csrc/core/autotune.h). A private switch, ``dataset._make_iterator(
statistics=False)``, makes one with neither: no statistics registry (no
node per iterator, no measure hooks, no consumer-wait clock reads) and no
autotuner, so AUTOTUNE stages stay at their most. What it cannot switch off
are the counters a parallel stage updates once per turn (a few relaxed
atomic adds, in csrc/core/stage.c) and each iterator's element counter in
next(): those are always there.

Each workload runs three ways, in a rotating order within each round so that
drift on a shared machine hits all three alike:

* ``off``: statistics and autotuner off;
* ``on``: the default (statistics on, the model-based autotuner choosing
  parallelism);
* ``on/fixed``: statistics on, autotuner idle (``autotune_algorithm =
  MAX_PARALLELISM``): every AUTOTUNE stage at its most, as with ``off``, so
  the difference is the statistics alone.

The overhead is computed per round from the runs paired in that round
(time / time of ``off`` - 1) and summarised as min / median / max, for wall
time and for the process's CPU time; "best vs best" compares the fastest run
of each (the least disturbed on a shared machine). Timings are printed,
never asserted.

``--profile`` asks where the CPU goes instead of how long a run takes: each
run goes in its own process under ``perf record -e cpu-clock`` (a software
clock, so no hardware counters are needed), statistics on, and the share of
its samples in the statistics and autotuner code (csrc/core/stats.c,
csrc/core/autotune.c, the kernels' measure hooks) is the cost of leaving
them on; the share of every clock read in the process is added as an upper
bound for the stages' always-on timing. A share of samples barely moves with
the machine's load, where wall time moves by tens of percent.

On a shared machine the spread of wall and CPU time between identical runs
(often +-20%) is ten times the goal. ``--instructions`` counts instead: each
run goes in its own process under valgrind's callgrind, which counts the
instructions that every thread executes (it runs them one at a time, so the
count barely depends on the machine's load); a process that builds the
datasets but iterates nothing is subtracted. What remains varies a little
with how the threads interleave, so it is also given as min / median / max.
"""
import argparse
import gc
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import conveyor as cv  # noqa: E402
from conveyor.data import AUTOTUNE  # noqa: E402
from images import make_files as make_jpegs  # noqa: E402
from records import record_payloads, write_shards  # noqa: E402
from run import machine_info  # noqa: E402

GOAL = 0.02


def _fixed(ds):
    options = cv.data.Options()
    options.autotune.autotune_algorithm = "MAX_PARALLELISM"
    return ds.with_options(options)


def _py_work(x):
    return np.float32(np.sin(np.float32(x)) * 2.0)


def workloads(scale, folder):
    """{name: (a function building the dataset, what one element is)}."""
    n = int(scale * 10**6)
    rows = np.arange(int(scale * 200_000) * 64, dtype=np.float32).reshape(-1, 64)
    payloads = record_payloads(int(scale * 40_000), 1000, seed=1)
    pattern = os.path.join(folder, "overhead-*.tfrecord")
    write_shards(folder, "overhead", payloads, "", None)
    small = os.path.join(folder, "small-*.tfrecord")
    for i in range(400):
        with cv.io.TFRecordWriter(os.path.join(folder, f"small-{i:03d}.tfrecord")) as w:
            for payload in payloads[i::400][:max(1, int(scale * 50))]:
                w.write(payload)
    # made once, as images.py does (encoding them takes a few seconds)
    images_folder = os.path.join(tempfile.gettempdir(), "conveyor-bench-images",
                                 f"overhead-{int(scale * 256)}")
    make_jpegs(images_folder, max(8, int(scale * 256)))
    jpegs = os.path.join(images_folder, "*.jpg")
    return {
        "range(N).prefetch": lambda: cv.data.Dataset.range(n).prefetch(AUTOTUNE),
        "native map AUTOTUNE + batch": lambda: (
            cv.data.Dataset.from_tensor_slices(rows)
            .map(lambda x: x * 2.0 + 1.0, num_parallel_calls=AUTOTUNE)
            .batch(128).prefetch(AUTOTUNE)),
        "Python map x2 + batch": lambda: (
            cv.data.Dataset.range(n // 20)
            .map(lambda x: cv.numpy_function(_py_work, [x], cv.float32), num_parallel_calls=2)
            .batch(64)),
        "TFRecord interleave + batch": lambda: (
            cv.data.Dataset.list_files(pattern, shuffle=False)
            .interleave(cv.data.TFRecordDataset, cycle_length=2, num_parallel_calls=2)
            .batch(256).prefetch(AUTOTUNE)),
        # one inner iterator per file: each is attached to and detached from the statistics
        "interleave of 400 small files": lambda: (
            cv.data.Dataset.list_files(small, shuffle=False)
            .interleave(cv.data.TFRecordDataset, cycle_length=4, num_parallel_calls=AUTOTUNE)
            .batch(64).prefetch(AUTOTUNE)),
        "JPEG decode + resize + batch": lambda: (
            cv.data.Dataset.list_files(jpegs, shuffle=False)
            .map(lambda f: cv.image.resize(cv.io.decode_jpeg(cv.io.read_file(f), channels=3),
                                           [224, 224]) / 255.0, num_parallel_calls=AUTOTUNE)
            .batch(32).prefetch(AUTOTUNE)),
    }


def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def epoch(ds, statistics_on):
    """(wall seconds, CPU seconds of the process, elements) of one pass."""
    it = ds._make_iterator(statistics=statistics_on)
    start, cpu = time.perf_counter(), _cpu()
    count = 0
    for _ in it:
        count += 1
    return time.perf_counter() - start, _cpu() - cpu, count


VARIANTS = {
    "off": lambda make: epoch(make(), False),
    "on": lambda make: epoch(make(), True),
    "on/fixed": lambda make: epoch(_fixed(make()), True),
}


def measure(make, rounds):
    """{variant: [wall seconds]}, {variant: [CPU seconds]} over the rounds."""
    times = {k: [] for k in VARIANTS}
    cpu = {k: [] for k in VARIANTS}
    counts = set()
    for key, run in VARIANTS.items():  # warm-up
        counts.add(run(make)[2])
    order = list(VARIANTS)
    for r in range(rounds):
        for key in order[r % len(order):] + order[:r % len(order)]:
            gc.collect()
            seconds, cpu_seconds, count = VARIANTS[key](make)
            counts.add(count)
            times[key].append(seconds)
            cpu[key].append(cpu_seconds)
    if len(counts) != 1:
        raise SystemExit(f"element counts differ between variants: {counts}")
    return times, cpu


def _perf_control(command):
    """Under --profile: tell perf (through its control FIFOs) to start or
    stop sampling, and wait for its answer."""
    with open(os.environ["CV_PERF_CTL"], "w") as f:
        f.write(command + "\n")
    with open(os.environ["CV_PERF_ACK"]) as f:
        f.readline()


def _child(name, variant, scale):
    """One pass of one workload in this process (run under valgrind or perf);
    variant "build" makes the datasets and iterates nothing. Under perf,
    only the pass is sampled, not the start-up or the files' writing."""
    with tempfile.TemporaryDirectory() as folder:
        make = workloads(scale, folder)[name]
        profiled = "CV_PERF_CTL" in os.environ
        if variant != "build":
            if profiled:
                _perf_control("enable")
            VARIANTS[variant](make)
            if profiled:
                _perf_control("disable")


def _instructions(name, variant, scale):
    """Instructions that valgrind counted in a child running _child()."""
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
           os.path.realpath(sys.executable), os.path.abspath(__file__),
           "--child", name, variant, "--scale", str(scale)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    for line in done.stderr.splitlines():
        if "Collected :" in line:
            return int(line.split(":")[-1])
    raise SystemExit(f"no instruction count from valgrind:\n{done.stderr[-2000:]}")


def count_instructions(rounds, scale):
    """{workload: {variant: [instructions of the pass, build subtracted]}}."""
    with tempfile.TemporaryDirectory() as folder:
        names = list(workloads(0.001, folder))
    results = {}
    for name in names:
        build = statistics.median(_instructions(name, "build", scale) for _ in range(3))
        counts = {k: [] for k in VARIANTS}
        order = list(VARIANTS)
        for r in range(rounds):
            for key in order[r % len(order):] + order[:r % len(order)]:
                counts[key].append(_instructions(name, key, scale) - build)
        results[name] = counts
        off = counts["off"]
        print(f"{name}: off {statistics.median(off) / 1e6:.1f} M instructions "
              f"(build {build / 1e6:.1f} M)", flush=True)
        for key in ("on", "on/fixed"):
            ratio = [c / o - 1.0 for c, o in zip(counts[key], off)]
            print(f"  {key:<9} {min(ratio):+6.2%} / {statistics.median(ratio):+6.2%} / "
                  f"{max(ratio):+6.2%}   median vs median "
                  f"{statistics.median(counts[key]) / statistics.median(off) - 1.0:+6.2%}",
                  flush=True)
    return results


def _median_interval(values, level=0.9, resamples=4000):
    """A bootstrap interval of the median (percentile method, fixed seed): the
    range the median of these rounds would fall in if the rounds were drawn
    again. With noise larger than the goal, it says whether the goal is
    still shown by the median of many rounds."""
    draws = np.random.default_rng(0).choice(values, size=(resamples, len(values)))
    medians = np.median(draws, axis=1)
    tail = (1.0 - level) / 2 * 100
    return float(np.percentile(medians, tail)), float(np.percentile(medians, 100 - tail))


# --profile: the CPU share of the statistics code, from perf's samples.

STATS_SOURCES = ("csrc/core/stats.c", "csrc/core/autotune.c")
DEFINITION = re.compile(r"^(?:static\s+)?(?:inline\s+)?[A-Za-z_][\w\s\*]*?\b(\w+)\(", re.M)


def statistics_symbols():
    """The functions of the statistics and the autotuner (defined in
    STATS_SOURCES; their static helpers inline into them), plus the kernels'
    measure hooks, which only statistics readers and the autotuner call."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    names = set()
    for rel in STATS_SOURCES:
        with open(os.path.join(repo, rel)) as f:
            text = f.read()
        names |= {m.group(1) for m in DEFINITION.finditer(text)
                  if not text[m.end():].split(")", 1)[1].lstrip().startswith(";")}
    for folder, _, files in os.walk(os.path.join(repo, "csrc")):
        for name in files:
            if name.endswith(".c"):
                with open(os.path.join(folder, name)) as f:
                    names |= set(re.findall(r"\.measure = (\w+)", f.read()))
    return names - {"if", "for", "while", "switch", "return", "sizeof"}


def profile_shares(rounds, scale):
    """{workload: [per run: % of the process's CPU samples in statistics
    code]}: each run goes in its own process under `perf record -e cpu-clock`
    (a software clock: no hardware counters needed), statistics on (the
    default). Unlike timings, a share of samples does not move with the
    machine's load."""
    symbols = statistics_symbols()
    with tempfile.TemporaryDirectory() as folder:
        names = list(workloads(0.001, folder))
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        ctl, ack = os.path.join(tmp, "ctl"), os.path.join(tmp, "ack")
        os.mkfifo(ctl)
        os.mkfifo(ack)
        env = dict(os.environ, CV_PERF_CTL=ctl, CV_PERF_ACK=ack)
        for name in names:
            shares, bounds, found = [], [], {}
            for _ in range(rounds):
                # -D -1: start with sampling off; the child turns it on for its pass only
                subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "4999", "-D", "-1",
                                "--control", f"fifo:{ctl},{ack}", "-o", data,
                                os.path.realpath(sys.executable), os.path.abspath(__file__),
                                "--child", name, "on", "--scale", str(scale)],
                               check=True, capture_output=True, env=env)
                report = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children",
                                         "--sort", "dso,sym", "--percent-limit", "0", "-q"],
                                        check=True, capture_output=True, text=True).stdout
                share = clock = 0.0
                for line in report.splitlines():
                    parts = line.split()
                    if len(parts) < 4 or not parts[0].endswith("%"):
                        continue
                    percent = float(parts[0].rstrip("%"))
                    if "_engine" in parts[1] and parts[-1] in symbols:
                        share += percent
                        found[parts[-1]] = found.get(parts[-1], 0.0) + percent
                    elif "clock_gettime" in parts[-1]:
                        clock += percent
                shares.append(share / 100.0)
                bounds.append((share + clock) / 100.0)
            results[name] = {"shares": shares, "with_clock_reads": bounds,
                             "symbols": {k: v / rounds for k, v in found.items()}}
            top = sorted(found.items(), key=lambda kv: -kv[1])[:3]
            print(f"{name}: statistics code {min(shares):.3%} / {statistics.median(shares):.3%} / "
                  f"{max(shares):.3%} of CPU samples (min / median / max of {rounds} runs)"
                  + (f"; most in {', '.join(k for k, _ in top)}" if top else ""), flush=True)
            print(f"  with every clock read of the process (the stages' always-on timing, shared "
                  f"with scheduling): {min(bounds):.3%} / {statistics.median(bounds):.3%} / "
                  f"{max(bounds):.3%}", flush=True)
    return results


def _summary(values):
    low, high = _median_interval(values)
    return {"min": min(values), "median": statistics.median(values), "max": max(values),
            "median_90ci": [low, high], "values": values}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--scale", type=float, default=1.0, help="workload size factor")
    parser.add_argument("--json", default=None, help="write the figures to this file")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under valgrind instead of timing")
    parser.add_argument("--profile", action="store_true",
                        help="the CPU share of statistics code, from perf samples (needs perf)")
    parser.add_argument("--child", nargs=2, metavar=("WORKLOAD", "VARIANT"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args.child[0], args.child[1], args.scale)
    if args.rounds < 5:
        parser.error("--rounds must be >= 5")
    info = machine_info(None)
    print(f"{info['cpus_usable']} CPUs usable ({info['cpu_model']}), Python {info['python']}; "
          f"{args.rounds} rounds; overhead = time / time with statistics off - 1, "
          "per round: min / median / max, and a bootstrap 90% interval of the median")
    if args.profile:
        results = profile_shares(args.rounds, args.scale)
        worst = max(statistics.median(r["shares"]) for r in results.values())
        bound = max(max(r["with_clock_reads"]) for r in results.values())
        print(f"worst median share of statistics code: {worst:.3%}; worst run with every clock "
              f"read counted as statistics: {bound:.3%} (goal: under {GOAL:.0%})")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"machine": info, "rounds": args.rounds, "scale": args.scale,
                           "profile": results}, f, indent=2)
        return
    if args.instructions:
        # Each pass runs ~50x slower under valgrind: a tenth of the workload.
        results = count_instructions(args.rounds, args.scale * 0.1)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"machine": info, "rounds": args.rounds, "scale": args.scale * 0.1,
                           "instructions": results}, f, indent=2)
        return
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, make in workloads(args.scale, folder).items():
            times, cpu = measure(make, args.rounds)
            off = times["off"]
            row = {"off_seconds": _summary(off), "off_cpu_seconds": _summary(cpu["off"])}
            for key in ("on", "on/fixed"):
                row[key] = _summary([t / o - 1.0 for t, o in zip(times[key], off)])
                row[key + "_best"] = min(times[key]) / min(off) - 1.0
                row[key + "_cpu"] = _summary([t / o - 1.0 for t, o in zip(cpu[key], cpu["off"])])
                row[key + "_seconds"] = _summary(times[key])
            results[name] = row
            print(f"{name}: off {row['off_seconds']['median'] * 1e3:.1f} ms "
                  f"(min {row['off_seconds']['min'] * 1e3:.1f})", flush=True)
            for key in ("on", "on/fixed"):
                w, c = row[key], row[key + "_cpu"]
                wl, wh = w["median_90ci"]
                cl, ch = c["median_90ci"]
                print(f"  {key:<9} wall {w['min']:+6.1%} / {w['median']:+6.1%} / {w['max']:+6.1%}"
                      f" (median 90% CI {wl:+.1%}..{wh:+.1%})"
                      f"   best vs best {row[key + '_best']:+6.1%}"
                      f"   CPU {c['min']:+6.1%} / {c['median']:+6.1%} / {c['max']:+6.1%}"
                      f" (CI {cl:+.1%}..{ch:+.1%})",
                      flush=True)
    worst = max(r["on"]["median"] for r in results.values())
    print(f"worst median wall overhead (on vs off): {worst:+.1%} (goal: under {GOAL:.0%})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "rounds": args.rounds, "scale": args.scale,
                       "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
