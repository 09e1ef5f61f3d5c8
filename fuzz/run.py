"""Run every fuzz target for a bounded time against the sanitized engine.

    python3 fuzz/run.py                      # all targets, 100 s in all (what CI runs)
    python3 fuzz/run.py --seconds 600 tfrecord_reader --corpus ~/fuzz-corpus
    python3 fuzz/run.py --no-sanitize ...    # the normal build (faster, sees less)

Builds the engine with AddressSanitizer + UndefinedBehaviorSanitizer (as
.ci/sanitize does, into a temporary folder), relinks it against atheris's
clang sanitizer runtime (see fuzz/README.md for why), checks that this
runtime does catch a planted heap overflow and a planted signed overflow,
writes the seed corpora, then runs each target with atheris. Prints the
executions per target; exits 1 on a finding, after copying the input that
caused it (crash-*, timeout-*, oom-*) to tests/fuzz_regressions/<target>/,
where tests/test_fuzz_regressions.py replays it on every test run.
"""
import argparse
import ast
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REGRESSIONS = os.path.join(ROOT, "tests", "fuzz_regressions")
TARGETS = ["tfrecord_reader", "example_parser", "image_decoders", "cache_reader", "iterator_state",
           "string_ops", "audio_wav"]
MAX_LEN = {"image_decoders": 100_000, "cache_reader": 16_384}
FINDINGS = ("crash-", "timeout-", "oom-", "leak-")

PLANTED = r"""
#include <stdlib.h>
#include <string.h>
int heap_overflow(int n) { char *p = malloc(n); memset(p, 1, n + 1); int r = p[n]; free(p); return r; }
int signed_overflow(int x) { return x + 2147483647; }
"""


def log(*args):
    print(*args, flush=True)


def libs():
    """The link flags of every library in setup.py's LIBRARIES table (read, not imported: importing
    setup.py runs the build), with the same CV_<NAME>_LIBS overrides."""
    with open(os.path.join(ROOT, "setup.py")) as f:
        tree = ast.parse(f.read())
    rows = next(ast.literal_eval(node.value) for node in tree.body
                if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "LIBRARIES")
    out = []
    for name, _, prefix in rows:
        if os.environ.get(prefix + "_LIBS") is not None:
            out += os.environ[prefix + "_LIBS"].split()
        else:
            out += subprocess.check_output(["pkg-config", "--libs", name], text=True).split()
    return out


def build_sanitized(out):
    """The engine compiled with -fsanitize=address,undefined, linked without gcc's runtimes."""
    shutil.copytree(os.path.join(ROOT, "conveyor"), os.path.join(out, "conveyor"),
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    env = dict(os.environ, CV_SANITIZE="address", CV_DEBUG="1")
    subprocess.run([sys.executable, "-W", "ignore", "setup.py", "-q", "build_ext",
                    "--build-lib", out, "--build-temp", os.path.join(out, "tmp")],
                   cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    engine = glob.glob(os.path.join(out, "conveyor", "_engine*.so"))[0]
    objects = sorted(glob.glob(os.path.join(out, "tmp", "**", "*.o"), recursive=True))
    subprocess.run(["gcc", "-shared", "-pthread", *objects, *libs(), "-o", engine], check=True)


def sanitizer_env(build):
    import atheris
    runtime = os.path.join(atheris.path(), "asan_with_fuzzer.so")
    env = dict(os.environ,
               LD_PRELOAD=runtime,
               ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:halt_on_error=1:"
                            "handle_abort=1:symbolize=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
               CV_SANITIZED="1")
    env["PYTHONPATH"] = build + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def self_test(tmp, env):
    """Fail unless the preloaded runtime reports bugs in gcc-instrumented code."""
    src = os.path.join(tmp, "planted.c")
    with open(src, "w") as f:
        f.write(PLANTED)
    obj, lib = os.path.join(tmp, "planted.o"), os.path.join(tmp, "planted.so")
    subprocess.run(["gcc", "-c", "-fPIC", "-O0", "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=undefined", src, "-o", obj], check=True)
    subprocess.run(["gcc", "-shared", obj, "-o", lib], check=True)
    for fn, arg, expect in (("heap_overflow", 8, "heap-buffer-overflow"),
                            ("signed_overflow", 5, "signed integer overflow")):
        code = f"import ctypes; ctypes.CDLL({lib!r}).{fn}({arg})"
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        if r.returncode == 0 or expect not in r.stderr:
            sys.exit(f"fuzz/run.py: the sanitizer runtime did not report a planted {expect} "
                     f"(rc {r.returncode}):\n{r.stderr[-2000:]}")
    log("sanitizer self-test: a planted heap overflow and signed overflow are reported")


def executions(text):
    m = re.search(r"stat::number_of_executed_units:\s*(\d+)", text)
    if m:
        return int(m.group(1))
    runs = re.findall(r"^#(\d+)\s", text, re.M)
    return int(runs[-1]) if runs else 0


def run_target(name, seconds, timeout, corpus, seeds, artifacts, env, extra):
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(artifacts, exist_ok=True)
    dirs = [corpus, os.path.join(seeds, name)]
    if os.path.isdir(os.path.join(REGRESSIONS, name)):
        dirs.append(os.path.join(REGRESSIONS, name))
    cmd = [sys.executable, os.path.join(HERE, name + ".py"), *dirs,
           f"-max_total_time={seconds}", f"-timeout={timeout}", "-rss_limit_mb=4096",
           f"-max_len={MAX_LEN.get(name, 4096)}", f"-artifact_prefix={artifacts}/",
           "-print_final_stats=1", *extra]
    start = time.monotonic()
    r = subprocess.run(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, errors="replace")
    found = sorted(f for f in os.listdir(artifacts) if f.startswith(FINDINGS))
    return r.returncode, r.stdout, found, time.monotonic() - start


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("targets", nargs="*", default=TARGETS, help="default: all")
    p.add_argument("--seconds", type=int, default=None, help="per target")
    p.add_argument("--total", type=int, default=100, help="seconds in all, split over the "
                   "targets (default 100; ignored with --seconds)")
    p.add_argument("--timeout", type=int, default=20, help="seconds per input before it is "
                   "a hang (default 20)")
    p.add_argument("--corpus", help="keep the corpora in CORPUS/<target> (default: temporary)")
    p.add_argument("--no-sanitize", action="store_true", help="fuzz the normal build")
    p.add_argument("--save-to", default=REGRESSIONS, help="where findings are copied, in "
                   "<target>/ folders (default tests/fuzz_regressions)")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args, extra = p.parse_args(argv[:cut]), argv[cut + 1:]  # after --: libFuzzer's
    for name in args.targets:
        if name not in TARGETS:
            p.error(f"no target {name!r}; targets: {', '.join(TARGETS)}")
    seconds = args.seconds or max(5, args.total // len(args.targets))

    tmp = tempfile.mkdtemp(prefix="conveyor-fuzz-run-")
    try:
        if args.no_sanitize:
            env = dict(os.environ)
            env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        else:
            log("building the sanitized engine")
            build = os.path.join(tmp, "build")
            build_sanitized(build)
            env = sanitizer_env(build)
            self_test(tmp, env)
        seeds = os.path.join(tmp, "seeds")
        subprocess.run([sys.executable, os.path.join(HERE, "seeds.py"), seeds], env=env, check=True,
                       stdout=subprocess.DEVNULL)

        results, failed = [], []
        for name in args.targets:
            corpus = os.path.join(args.corpus, name) if args.corpus else os.path.join(tmp, "corpus", name)
            artifacts = os.path.join(tmp, "artifacts", name)
            rc, out, found, wall = run_target(name, seconds, args.timeout, corpus, seeds, artifacts,
                                              env, extra)
            n = executions(out)
            cov = re.findall(r"\bcov: (\d+) ft: (\d+) corp: (\d+)", out)
            cov = cov[-1] if cov else ("?", "?", "?")
            results.append((name, n, wall, cov, found))
            log(f"{name}: {n} executions in {wall:.0f} s, python coverage {cov[0]}, "
                f"features {cov[1]}, corpus {cov[2]}, rc {rc}"
                + (f", FOUND {' '.join(found)}" if found else ""))
            if rc != 0 or found:
                failed.append(name)
                log("---- last output of " + name)
                log(out[-6000:])
                for f in found:
                    dest = os.path.join(args.save_to, name)
                    os.makedirs(dest, exist_ok=True)
                    shutil.copy(os.path.join(artifacts, f), dest)
                    log(f"saved {os.path.join(dest, f)}")
        log("executions: " + ", ".join(f"{n} {k}" for n, k, *_ in results))
        if failed:
            log("FINDINGS in: " + ", ".join(failed))
            return 1
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
