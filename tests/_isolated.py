"""Run a snippet in a fresh interpreter, for behaviour that may crash the process.

A segfault in the engine must fail one test, not take the whole pytest run down.
"""
import subprocess
import sys
import textwrap


def run_isolated(code, timeout=60):
    """Run `code` with ``import conveyor as tf`` and numpy as np pre-imported.

    Returns (returncode, stdout, stderr). A crash shows as a negative returncode.
    """
    prelude = "import numpy as np\nimport conveyor as tf\n"
    proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def assert_isolated_ok(code, timeout=60):
    rc, out, err = run_isolated(code, timeout)
    assert rc == 0, f"snippet exited with {rc}\nstdout:\n{out}\nstderr:\n{err[-3000:]}"
    return out
