"""What every fuzz target shares: the rule for acceptable outcomes, a crude
coverage signal from the C engine, and the atheris entry point.

A target module defines ``one_input(data: bytes)`` and ends with::

    if __name__ == "__main__":
        _harness.main(one_input)

``one_input`` returns normally when conveyor either produced a result that
passed the target's checks or raised one of ``conveyor.errors.*`` (an
``OpError``). Anything else propagates and is a finding: another exception
type (SystemError, TypeError, MemoryError...), a failed check
(``Finding``), and outside Python a crash under AddressSanitizer or
UndefinedBehaviorSanitizer, a timeout (``-timeout``) or an out-of-memory
(``-rss_limit_mb`` / ``-malloc_limit_mb``).

Only the target's own functions and the signal tree below carry atheris's
Python coverage instrumentation: conveyor's Python layer is glue (options,
tracing) whose coverage says nothing about the parsers in C and, instrumented,
cut the executions per second several times. The regression test imports the
targets without atheris installed.
"""
import os
import re
import sys
import tempfile
import warnings
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
# The checkout's conveyor unless PYTHONPATH names another build (fuzz/run puts
# the sanitized one there); last, so that an editable install elsewhere loses.
sys.path.append(os.path.dirname(HERE))
_main = os.path.abspath(getattr(sys.modules.get("__main__"), "__file__", None) or "/")
FUZZING = os.path.dirname(_main) == HERE and os.path.basename(_main) not in ("run.py", "seeds.py")

if FUZZING:
    import atheris

import conveyor as cv  # noqa: E402
from conveyor import errors  # noqa: E402


class Finding(AssertionError):
    """A result conveyor returned that the target's checks reject."""


def check(condition, what):
    if not condition:
        raise Finding(what)


def workdir():
    """A private folder for the files a target writes (tmpfs when there is one)."""
    global _WORKDIR
    if _WORKDIR is None:
        base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        _WORKDIR = tempfile.mkdtemp(prefix="conveyor-fuzz-", dir=base)
        import atexit
        import shutil
        atexit.register(shutil.rmtree, _WORKDIR, True)
    return _WORKDIR


_WORKDIR = None


def outcome(fn):
    """(value, None) or (None, exception) for `fn()`; only conveyor's errors are caught.

    Warnings (torn records, cache notices) are silenced: they are not findings.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(), None
        except errors.OpError as e:
            signal(type(e).__name__ + ":" + str(e))
            return None, e


# --- a coverage signal from the C side -----------------------------------
#
# atheris sees only Python coverage: the engine is compiled by gcc without
# coverage instrumentation. To let the fuzzer still tell engine paths apart,
# `signal(text)` hashes a description of what the engine did (the error
# class and message with numbers and paths removed, the shapes it returned)
# into one of 1024 leaves of instrumented binary trees of branches, so a
# new kind of error message or result is new Python coverage and the input
# that produced it is kept in the corpus.

_NUMBERS = re.compile(r"\d+")
_PATHS = re.compile(r"/[^\s:'\"]*")


def _tree(depth):
    lines = ["def _leaf(b):"]

    def emit(level, indent, prefix):
        pad = "    " * indent
        if level == depth:
            lines.append(f"{pad}return {prefix}")
            return
        lines.append(f"{pad}if b & {1 << level}:")
        emit(level + 1, indent + 1, prefix | (1 << level))
        lines.append(f"{pad}else:")
        emit(level + 1, indent + 1, prefix)
    emit(0, 1, 0)
    namespace = {}
    exec(compile("\n".join(lines), "<fuzz-signal>", "exec"), namespace)
    return namespace["_leaf"]


# Four trees of 256 leaves: atheris instruments a function in time quadratic
# in its size (one tree of 1024 leaves took 11 s at every start).
_TREES = [_tree(8) for _ in range(4)]
if FUZZING:
    for _t in _TREES:
        atheris.instrument_func(_t)


def signal(text):
    text = _NUMBERS.sub("#", _PATHS.sub("<path>", text))
    h = zlib.crc32(text.encode("utf-8", "replace"))
    _TREES[h >> 30](h & 255)


def main(one_input):
    """Run `one_input` under atheris with the libFuzzer flags in sys.argv."""
    module = sys.modules[one_input.__module__]
    for value in list(vars(module).values()):
        if callable(value) and getattr(value, "__module__", None) == module.__name__ \
                and hasattr(value, "__code__"):
            atheris.instrument_func(value)
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
