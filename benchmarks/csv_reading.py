#!/usr/bin/env python3
"""CSV reading, conveyor vs tf.data: make_csv_dataset over one generated file.

The file has a header and 10 columns of mixed types (int, float, string,
some quoted with embedded commas, some empty), 100,000 rows by default. Both
sides run the same call,

  make_csv_dataset(file, batch_size=256, num_epochs=1, shuffle=False)

(column types inferred from the first 100 rows, batches of OrderedDicts),
and iterate it to the end converting to NumPy. Each side runs in its own
long-lived child process, alternated round by round, so one library's
threads and heap never slow the other. Prints rows/s median [min-max] per
side and the per-round ratio conveyor / tf.data.

    python benchmarks/csv_reading.py               # 100,000 rows, 5 rounds (about half a minute)
    python benchmarks/csv_reading.py --rows 20000 --rounds 2
    python benchmarks/csv_reading.py --no-tf
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import fmt_range, summary  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, os, sys, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
lib_name, path, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
if lib_name == "tf":
    import tensorflow as lib
else:
    import conveyor as lib
for line in sys.stdin:
    t = time.perf_counter()
    ds = lib.data.experimental.make_csv_dataset(path, batch, num_epochs=1, shuffle=False)
    rows = 0
    for feats in (ds.as_numpy_iterator() if lib_name == "tf" else ds):
        rows += len(feats["id"])
    print(json.dumps({"seconds": time.perf_counter() - t, "rows": rows}), flush=True)
"""


def write_file(path, rows, seed=1):
    rng = np.random.default_rng(seed)
    words = ["alpha", "beta", "gamma", "delta", '"quoted, with comma"', '"say ""hi"""', ""]
    ids = np.arange(rows)
    a = rng.integers(-1000, 1000, rows)
    b = rng.random(rows) * 100
    c = rng.integers(0, 7, rows)
    d = rng.normal(size=rows)
    e = rng.integers(0, 2**40, rows)
    with open(path, "w") as f:
        f.write("id,a,b,word,d,e,f,g,h,tag\n")
        for i in range(rows):
            f.write(f"{ids[i]},{a[i]},{b[i]:.4f},{words[c[i]]},{d[i]:.6g},{e[i]},"
                    f"{'' if i % 11 == 0 else i % 97},{b[i] * 3:.2f},{c[i]},t{c[i]}\n")


class Child:
    def __init__(self, lib, path, batch):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
                   PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.p = subprocess.Popen([sys.executable, "-c", CHILD, lib, path, str(batch)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=env)

    def run(self):
        self.p.stdin.write("go\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("benchmark child died")
        return json.loads(line)

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--no-tf", action="store_true")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "conveyor-bench-csv"))
    args = ap.parse_args(argv)
    os.makedirs(args.dir, exist_ok=True)
    path = os.path.join(args.dir, f"mixed-{args.rows}.csv")
    if not os.path.exists(path):
        write_file(path + ".tmp", args.rows)
        os.replace(path + ".tmp", path)
    libs = ["conveyor"]
    if not args.no_tf:
        if importlib.util.find_spec("tensorflow") is not None:
            libs.append("tf")
    print(f"make_csv_dataset over {args.rows:,} rows x 10 mixed columns "
          f"({os.path.getsize(path) / 1e6:.1f} MB), batch {args.batch}, {args.rounds} rounds, "
          "alternating child processes; rows/s median [min-max]")
    children = {lib: Child(lib, path, args.batch) for lib in libs}
    rates = {lib: [] for lib in libs}
    try:
        for lib in libs:  # warm-up
            children[lib].run()
        for _ in range(args.rounds):
            for lib in libs:
                r = children[lib].run()
                assert r["rows"] == args.rows, r
                rates[lib].append(r["rows"] / r["seconds"])
    finally:
        for c in children.values():
            c.close()
    for lib in libs:
        print(f"  {'conveyor' if lib == 'conveyor' else 'tf.data':9s} {fmt_range(rates[lib])} rows/s")
    if "tf" in rates:
        ratios = [a / b for a, b in zip(rates["conveyor"], rates["tf"])]
        s = summary(ratios)
        print(f"  ratio conveyor / tf.data: {s['median']:.2f}x [{s['min']:.2f}-{s['max']:.2f}]")
    return rates


if __name__ == "__main__":
    main()
