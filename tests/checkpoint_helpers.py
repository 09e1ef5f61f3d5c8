"""The checkpoint test pattern of tf.data's own suite, for conveyor iterators.

``verify_resume(make, breaks)``: for each break k, run k elements, save,
drop the iterator, build the pipeline again (``make()``), restore, run the
rest; the concatenation must equal one straight run. ``verify_two_restores``
saves and restores twice within one epoch. ``verify_resume_in_new_process``
does the same with the restore in a fresh interpreter: ``code`` defines
``make()`` (self-contained: imports and paths inside).

Elements are compared as plain Python values (nested lists of numbers and
bytes, with dtypes and shapes), so that order, values, dtypes and shapes all
count.
"""
import json
import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np

from conveyor import nest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def plain(element):
    """An element as comparable plain values: (dtype, shape, values) leaves."""
    out = []
    for leaf in nest.flatten(element):
        if isinstance(leaf, bytes):
            out.append(("bytes", leaf))
        else:
            a = np.asarray(leaf)
            out.append((a.dtype.str, a.shape, a.tolist()))
    return out


def run(it, n=None):
    """Up to n (all when None) elements of it, as plain values."""
    out = []
    while n is None or len(out) < n:
        try:
            out.append(plain(next(it)))
        except StopIteration:
            break
    return out


def straight(make):
    return run(iter(make()))


def verify_resume(make, breaks=None, expected=None, restore_fn=None):
    """Break at each k of breaks (default: every position, the end included)."""
    expected = straight(make) if expected is None else expected
    breaks = range(len(expected) + 1) if breaks is None else breaks
    for k in breaks:
        it = iter(make())
        head = run(it, k)
        state = it.save()
        del it
        it = iter(make())
        (restore_fn or (lambda i, s: i.restore(s)))(it, state)
        tail = run(it)
        assert head + tail == expected, (
            f"break at {k}: {len(head)} + {len(tail)} elements; first difference at "
            f"{_first_difference(head + tail, expected)}")
    return expected


def verify_two_restores(make, first, second, expected=None):
    """Save at `first`, restore, go on to `second` (counted from the start),
    save and restore again, run the rest."""
    expected = straight(make) if expected is None else expected
    it = iter(make())
    got = run(it, first)
    state = it.save()
    it = iter(make())
    it.restore(state)
    got += run(it, second - first)
    state = it.save()
    it = iter(make())
    it.restore(state)
    got += run(it)
    assert got == expected, f"two restores at {first}, {second}: first difference at " \
                            f"{_first_difference(got, expected)}"


_CHILD = """
import base64, json, sys
sys.path.insert(0, {root!r})
sys.path.insert(0, {tests!r})
from checkpoint_helpers import run
{code}
mode, k, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
it = iter(make())
if mode == "save":  # out: the first k, then what this process goes on with
    head = run(it, k)
    with open(path, "wb") as f:
        f.write(it.save())
    out = [head, run(it)]
else:
    with open(path, "rb") as f:
        it.restore(f.read())
    out = run(it)
print(json.dumps([[list(leaf) for leaf in e] for e in out],
                 default=lambda b: base64.b64encode(b).decode()))  # bytes leaves and strings
"""


def _in_child(code, mode, k, path, timeout):
    script = _CHILD.format(root=ROOT, tests=os.path.join(ROOT, "tests"),
                           code=textwrap.dedent(code))
    done = subprocess.run([sys.executable, "-c", script, mode, str(k), path],
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def verify_resume_in_new_process(code, breaks, timeout=120, seeded=True):
    """For each k: a process runs k elements, saves to a file and goes on to
    the end; another, fresh, restores and runs the rest, which must equal
    what the first went on with. seeded: the pipeline gives the same order
    in every process, so head + tail must also equal a straight run (an
    unseeded shuffle does not: only the continuation is compared)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "state")
        expected = _in_child(code, "save", 1 << 62, path, timeout)[0]
        for k in breaks:
            head, rest = _in_child(code, "save", k, path, timeout)
            tail = _in_child(code, "restore", 0, path, timeout)
            assert tail == rest, (f"break at {k} (new process): the restored process goes on "
                                  f"otherwise; first difference at {_first_difference(tail, rest)}")
            if seeded:
                assert head + tail == expected, (
                    f"break at {k} (new process): first difference at "
                    f"{_first_difference(head + tail, expected)}")
    return expected


def _first_difference(got, expected):
    for i, (a, b) in enumerate(zip(got, expected)):
        if a != b:
            return f"element {i}: {a!r} != {b!r}"
    return f"lengths {len(got)} != {len(expected)}"
