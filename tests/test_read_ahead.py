"""io/read_ahead (asynchronous read-ahead for files whose reads wait), through
tests/c/read_ahead_test.c built against the engine's sources as
tests/test_engine_c.py builds it: on plain files with both backends (io_uring
and I/O threads), and over a FUSE file system whose every read waits
(benchmarks/slow_fs.py): byte-identical reads of many files opened at once,
random offsets, a cancelled read, and which file systems want read-ahead.

Under .ci/sanitize and .ci/tsan, test_engine_c.py builds the same program
with ASan or TSan and runs its self-test there."""
import os
import pathlib
import subprocess
import sys
import zlib

import pytest

from test_engine_c import engine_objects  # noqa: F401 - the fixture

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import slow_fs  # noqa: E402

TIMEOUT = 120
BACKENDS = ("uring", "threads")


@pytest.fixture(scope="module")
def program(engine_objects):  # noqa: F811
    out, objects, cflags, ldflags, env = engine_objects
    binary = out / "read_ahead_test"
    src = ROOT / "tests" / "c" / "read_ahead_test.c"
    proc = subprocess.run(["gcc", *cflags, str(src), *map(str, objects), "-o", str(binary),
                           *ldflags], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return binary


def run(binary, *args, io="uring", extra_env=None):
    env = dict(os.environ, CONVEYOR_READ_AHEAD_IO=io)
    env.pop("CONVEYOR_READ_AHEAD", None)
    env.update(extra_env or {})
    proc = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith(", 0 failed"), proc.stdout + proc.stderr
    return proc.stdout.splitlines()[:-1]


def write_files(folder, count, size):
    folder.mkdir(exist_ok=True)
    paths = []
    for i in range(count):
        p = folder / f"part-{i:03d}"
        p.write_bytes(os.urandom(size + 997 * i))  # sizes that are no multiple of a block
        paths.append(p)
    return paths


def check_cat(lines, sources):
    """`cat` printed 'crc size wanted path' per file: the bytes of `sources`."""
    assert len(lines) == len(sources)
    wanted = []
    for line, src in zip(lines, sources):
        crc, size, want, _ = line.split(" ", 3)
        data = src.read_bytes()
        assert (int(crc), int(size)) == (zlib.crc32(data), len(data)), src
        wanted.append(want == "1")
    return wanted


@pytest.mark.parametrize("io", BACKENDS)
def test_plain_files_self_test(program, io):
    """Sequential reads in 1 B to 8 MiB pieces, random offsets, 64 streams on
    4 threads, truncation while reading, empty files, fork."""
    run(program, io=io)


@pytest.mark.parametrize("io", BACKENDS)
def test_plain_files_forced(program, tmp_path, io):
    paths = write_files(tmp_path / "src", 8, 300_000)
    lines = run(program, "cat", *paths, io=io, extra_env={"CONVEYOR_READ_AHEAD": "always"})
    assert check_cat(lines, paths) == [True] * len(paths)
    run(program, "random", paths[3], 42, io=io)


def test_wanted_on_local_files(program, tmp_path):
    """A local disk (tmpfs, ext4, overlay) does not want read-ahead; the
    environment variable overrides it either way."""
    paths = write_files(tmp_path / "src", 2, 1000)
    assert check_cat(run(program, "cat", *paths), paths) == [False, False]
    assert check_cat(run(program, "cat", *paths, extra_env={"CONVEYOR_READ_AHEAD": "always"}),
                     paths) == [True, True]
    assert check_cat(run(program, "cat", *paths, extra_env={"CONVEYOR_READ_AHEAD": "never"}),
                     paths) == [False, False]


fuse = pytest.mark.skipif(slow_fs.usable() is not None,
                          reason=f"no FUSE here: {slow_fs.usable()}")


@pytest.fixture(scope="module")
def slow_mount(tmp_path_factory):
    if slow_fs.usable():
        pytest.skip(f"no FUSE here: {slow_fs.usable()}")
    src = tmp_path_factory.mktemp("slow-src")
    sources = write_files(src, 40, 600_000)
    with slow_fs.SlowFS(src, latency=0.01) as mount:
        yield pathlib.Path(mount), sources


@fuse
@pytest.mark.parametrize("io", BACKENDS)
def test_slow_fuse_many_files_at_once(program, slow_mount, io):
    """40 files opened at once, read round-robin: every byte as on disk; the
    FUSE file system wants read-ahead."""
    mount, sources = slow_mount
    lines = run(program, "cat", *(mount / p.name for p in sources), io=io)
    assert check_cat(lines, sources) == [True] * len(sources)


@fuse
@pytest.mark.parametrize("io", BACKENDS)
def test_slow_fuse_random_offsets(program, slow_mount, io):
    mount, sources = slow_mount
    run(program, "random", mount / sources[5].name, 7, io=io)


@fuse
@pytest.mark.parametrize("io", BACKENDS)
def test_slow_fuse_cancelled_read(program, tmp_path, io):
    """A read waiting for a block whose storage takes 3 s returns CV_CANCELLED
    when its pool cancels the work (not the block's bytes after 3 s)."""
    paths = write_files(tmp_path / "src", 1, 100_000)
    with slow_fs.SlowFS(tmp_path / "src", latency=3.0) as mount:
        run(program, "cancel", pathlib.Path(mount) / paths[0].name, io=io)


def test_slow_fs_parallel_reads_overlap(tmp_path):
    """The FUSE file system itself: 16 concurrent readers each get their
    file's bytes (the benchmark measures how much their waits overlap)."""
    if slow_fs.usable():
        pytest.skip(f"no FUSE here: {slow_fs.usable()}")
    paths = write_files(tmp_path / "src", 16, 50_000)
    with slow_fs.SlowFS(tmp_path / "src", latency=0.01) as mount:
        procs = [subprocess.Popen(["cat", os.path.join(mount, p.name)], stdout=subprocess.PIPE)
                 for p in paths]
        outs = [p.communicate(timeout=TIMEOUT)[0] for p in procs]
        assert outs == [p.read_bytes() for p in paths]
        assert sorted(os.listdir(mount)) == sorted(p.name for p in paths)
