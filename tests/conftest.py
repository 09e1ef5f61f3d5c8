import faulthandler
import os
import subprocess
import sys
import textwrap
import time

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


def wait_for_child(pid, timeout=60):
    """The exit code of forked child `pid`; a child still running after
    `timeout` seconds is killed and the test fails (a hang must not stop the
    suite)."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail(f"forked child {pid} still running after {timeout} s: killed")
        time.sleep(0.01)


# A test still running after this many seconds dumps every thread's stack to the
# terminal and ends the run with exit status 1: a hang fails loudly, naming the
# test in the dump, rather than using up CI's time. CV_TEST_TIMEOUT changes it.
TEST_TIMEOUT = float(os.environ.get("CV_TEST_TIMEOUT", "600"))


def pytest_configure(config):
    # The terminal's stderr, taken while pytest's capture is suspended: during a
    # test file descriptor 2 goes to the capture file, which the exit would drop.
    config._cv_stderr_fd = os.dup(2)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    fd = item.config._cv_stderr_fd
    faulthandler.dump_traceback_later(TEST_TIMEOUT, exit=True, file=fd)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


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
