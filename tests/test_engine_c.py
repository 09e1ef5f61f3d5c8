"""The engine without Python: tests/c/*.c, built against csrc/ less csrc/python/
and run as programs.

The engine is a plain C11 library (docs/design.md); these programs hold it to
that: they build pipelines from kernels, run them through csrc/core/pipeline.h,
save, restore and stop them, and read their statistics, with no interpreter in
the process. Objects are kept in build/ctest/ between runs and rebuilt when a
source under csrc/ or tests/c/ changes. Under .ci/sanitize (CV_SANITIZED=1) and
.ci/tsan (CV_SANITIZE=thread) the programs are built with the same sanitizer."""
import concurrent.futures
import hashlib
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
PROGRAMS = sorted((ROOT / "tests" / "c").glob("*.c"))
ENGINE_LAYERS = ("core", "io", "kernels", "ops", "device")

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("pkg-config") is None,
                                reason="needs gcc and pkg-config")


def _sanitizer():
    if os.environ.get("CV_SANITIZE") == "thread":
        return "thread"
    if os.environ.get("CV_SANITIZED"):
        return "address"
    return None


def _flags():
    libs = subprocess.run(["pkg-config", "--cflags", "--libs", "zlib", "libjpeg", "libcurl",
                           "libcrypto"], check=True, capture_output=True, text=True).stdout.split()
    sanitizer = _sanitizer()
    # -O0 under a sanitizer, as .ci/sanitize and .ci/tsan build the engine (CV_DEBUG=1).
    cflags = ["-std=c11", "-O0" if sanitizer else "-O1", "-Wall", "-Wextra",
              "-Wno-missing-field-initializers", "-Werror", "-ffp-contract=off", "-pthread",
              "-D_GNU_SOURCE=1", f"-I{CSRC}"]
    cflags += [f for f in libs if f.startswith("-I")]
    ldflags = ["-pthread"] + [f for f in libs if not f.startswith("-I")] + ["-lm", "-ldl"]
    if sanitizer:
        extra = [f"-fsanitize={sanitizer},undefined", "-fno-omit-frame-pointer", "-g",
                 "-fno-sanitize-recover=undefined"]
        cflags += extra
        ldflags += extra
    if sanitizer == "thread":  # clones' resolvers would run before TSan starts (ops/op.h)
        cflags.append("-DCV_NO_TARGET_CLONES")
    return cflags, ldflags


def _compiler_env():
    """The environment without the sanitizer runtime that .ci/sanitize preloads
    (the compiler need not run under it; sanitized programs link their own)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


@pytest.fixture(scope="module")
def engine_objects():
    cflags, ldflags = _flags()
    key = hashlib.sha256(" ".join(cflags).encode()).hexdigest()[:12]
    out = ROOT / "build" / "ctest" / key
    sources = sorted(p for layer in ENGINE_LAYERS for p in (CSRC / layer).rglob("*.c"))
    newest_header = max(p.stat().st_mtime for p in CSRC.rglob("*.h"))
    env = _compiler_env()

    def compile_one(src):
        obj = out / (str(src.relative_to(CSRC)).replace("/", "__") + ".o")
        if obj.exists() and obj.stat().st_mtime > max(src.stat().st_mtime, newest_header):
            return obj
        obj.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(["gcc", *cflags, "-c", str(src), "-o", str(obj)],
                              capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr
        return obj
    with concurrent.futures.ThreadPoolExecutor(max(1, os.cpu_count() or 1)) as pool:
        objects = list(pool.map(compile_one, sources))
    return out, objects, cflags, ldflags, env


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_engine_program(engine_objects, program):
    out, objects, cflags, ldflags, env = engine_objects
    binary = out / program.stem
    proc = subprocess.run(["gcc", *cflags, str(program), *map(str, objects), "-o", str(binary),
                           *ldflags], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    run_env = dict(env)
    run_env.setdefault("TSAN_OPTIONS", f"halt_on_error=1 suppressions={ROOT / '.ci' / 'tsan.supp'}")
    proc = subprocess.run([str(binary)], capture_output=True, text=True, env=run_env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith(", 0 failed"), proc.stdout
