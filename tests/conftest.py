import os
import subprocess
import sys
import textwrap

import pytest

import conveyor

# Subprocesses import the same conveyor build as the tests (the sanitizer run
# puts its own build first on PYTHONPATH).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(conveyor.__file__)))
# The source checkout (docs/, examples/, benchmarks/): not ROOT, which under the
# sanitizer run is a temporary folder holding only the package.
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# GCC 12's AddressSanitizer runtime does not take its allocator's locks
# around fork(): when a parent thread is inside malloc at that moment, the
# child's first malloc waits forever on a lock nobody there holds (seen in
# .ci/sanitize: a child's new thread stuck in SizeClassAllocator64's region
# lock, 1 run in 10). glibc's malloc does take them, so these tests run
# everywhere else, ThreadSanitizer included.
fork_with_busy_threads = pytest.mark.skipif(
    os.environ.get("CV_SANITIZED") == "1",
    reason="fork() while engine threads allocate: ASan's allocator is not fork-safe (GCC 12)")


def thread_count():
    """Threads of this process, from /proc (includes threads Python does not know)."""
    return len(os.listdir("/proc/self/task"))


@pytest.fixture
def run_python():
    """Run a Python snippet in a fresh interpreter; returns CompletedProcess."""
    def run(code, timeout=60, **kwargs):
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                              text=True, timeout=timeout, env=env, **kwargs)
    return run


@pytest.fixture(autouse=True)
def _no_global_seed_leaks():
    """A test that sets the global seed (conveyor's, or TensorFlow's for a
    comparison) must not change what later tests draw: reset both after each."""
    yield
    conveyor.random.set_seed(None)
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        tf.random.set_seed(None)
