"""Run every snippet under TensorFlow and conveyor and print the counts.

    PYTHONPATH=$PWD python3 tests/tf_snippets/report.py [-v] [--known] [-k SUBSTRING]

Prints total / identical / percentage, the missing features ranked by how many
snippets they block (each snippet's first blocker, from known.py's reasons),
the TensorFlow APIs conveyor lacks ranked by how many non-identical snippets
use them (all of them, from a static scan of the snippets' source), and with --known a fresh KNOWN_DIFFERENCES body to
compare with known.py. -v prints every snippet's outcome.
"""
import argparse
import collections
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from tf_snippets._runner import collect, feature_of, run_both, suggest_reason  # noqa: E402
from tf_snippets.known import KNOWN_DIFFERENCES  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-v", action="store_true")
    p.add_argument("--known", action="store_true")
    p.add_argument("-k", default="")
    args = p.parse_args()
    t0 = time.time()
    import tensorflow as tf_module
    import conveyor as cv_module
    snippets = {n: f for n, f in collect().items() if args.k in n}
    results = {}
    with tempfile.TemporaryDirectory(prefix="tf-snippets-") as base:
        for i, (name, fn) in enumerate(snippets.items()):
            d = os.path.join(base, str(i))
            os.makedirs(d)
            kind, detail, tf_out, cv_out = run_both(fn, tf_module, cv_module, d)
            results[name] = (kind, detail)
            if args.v:
                print(f"{kind:15s} {name}: {detail}")
    by_kind = collections.Counter(k for k, _ in results.values())
    total = len(results)
    same = by_kind["identical"]
    print(f"\nsnippets: {total}  identical: {same}  ({100.0 * same / max(total, 1):.1f}%)  "
          + "  ".join(f"{k}: {v}" for k, v in sorted(by_kind.items()) if k != "identical"))
    for name, (kind, detail) in results.items():
        if kind == "tf-error":
            print(f"  TF ERROR (snippet bug) {name}: {detail}")
    # Sync with known.py.
    stale = [n for n, (k, _) in results.items() if k == "identical" and n in KNOWN_DIFFERENCES]
    missing = [n for n, (k, _) in results.items() if k in ("differs", "conveyor-error")
               and n not in KNOWN_DIFFERENCES]
    if stale:
        print("identical now but listed in known.py:", ", ".join(stale))
    if missing:
        print("not identical and missing from known.py:", ", ".join(missing))
    ranking = collections.Counter(feature_of(KNOWN_DIFFERENCES[n]) for n in results
                                  if n in KNOWN_DIFFERENCES and results[n][0] != "identical")
    print("\nmissing features by snippets blocked (known.py):")
    for feature, count in ranking.most_common():
        print(f"  {count:4d}  {feature}")
    from tf_snippets._apis import missing_apis
    uses = collections.Counter()
    for name, (kind, _) in results.items():
        if kind != "identical":
            uses.update(missing_apis(snippets[name], tf_module, cv_module))
    print("\nTensorFlow APIs conveyor lacks, by non-identical snippets using them (every use):")
    for api, count in uses.most_common():
        print(f"  {count:4d}  {api}")
    if args.known:
        print("\nKNOWN_DIFFERENCES = {")
        for name, (kind, detail) in results.items():
            if kind in ("differs", "conveyor-error"):
                reason = KNOWN_DIFFERENCES.get(name) or suggest_reason(kind, detail)
                print(f"    {name!r}: {reason!r},")
        print("}")
    print(f"\n{time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
