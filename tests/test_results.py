"""benchmarks/results/run.py --quick: the table has every workload and its
three columns filled (tf.data and the DataLoader say "not installed" where
they are), the output checks passed, and the plot is a PNG."""
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results")
sys.path.insert(0, RESULTS)
import workloads  # noqa: E402

HAVE = {"tf.data": importlib.util.find_spec("tensorflow") is not None,
        # The DataLoader side needs Pillow as well as torch (benchmarks/results/run.py).
        "DataLoader": all(importlib.util.find_spec(m) is not None for m in ("torch", "PIL"))}
FIGURE = re.compile(r"^[\d.]+[kMG]? \[[\d.]+[kMG]?–[\d.]+[kMG]?\]$")


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, os.path.join(RESULTS, "run.py"), "--quick",
                           "--out", str(out)], capture_output=True, text=True, env=env,
                          timeout=600)
    return proc, out


def table_rows(text):
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0] in workloads.TITLES.values():
            rows[cells[0]] = cells
    return rows


@pytest.mark.slow
def test_quick_run_succeeds(quick_run):
    proc, out = quick_run
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    data = json.loads((out / "results.json").read_text())
    assert data["workloads"] == workloads.WORKLOADS
    assert data["rounds"] >= 2
    for w in workloads.WORKLOADS:
        for fw, verdict in data["checks"][w].items():
            assert verdict == "ok", (w, fw, verdict)


@pytest.mark.slow
def test_table_has_every_workload_and_column(quick_run):
    _, out = quick_run
    text = (out / "results.md").read_text()
    rows = table_rows(text)
    assert set(rows) == set(workloads.TITLES.values())
    for title, (_, n, conveyor, tf, torch, vs_tf, vs_torch) in rows.items():
        assert int(n.replace(",", "")) > 0
        assert FIGURE.match(conveyor), (title, conveyor)
        for have, value, ratio in ((HAVE["tf.data"], tf, vs_tf),
                                   (HAVE["DataLoader"], torch, vs_torch)):
            if have:
                assert FIGURE.match(value), (title, value)
                assert re.match(r"^[\d.]+x$", ratio), (title, ratio)
            else:
                assert value.startswith("not installed"), (title, value)
    assert "Machine:" in text and "Date:" in text and "run.py --quick" in text


@pytest.mark.slow
def test_plot_is_a_png(quick_run):
    pytest.importorskip("matplotlib")
    _, out = quick_run
    path = out / "throughput.png"
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pil = pytest.importorskip("PIL.Image")
    with pil.open(path) as im:
        im.verify()
    with pil.open(path) as im:
        assert im.size[0] > 400 and im.size[1] > 200


def test_example_decoder_matches_conveyor():
    """The DataLoader side's pure-Python tf.train.Example decoder reads what
    conveyor's serialize_example writes (fast; no processes)."""
    np = pytest.importorskip("numpy")
    import conveyor as cv
    feats = {"f": np.array([1.5, -2.0], np.float32), "i": np.array([3, -4, 2**40], np.int64),
             "s": [b"ab", b""]}
    ex = workloads.parse_example(cv.io.serialize_example(feats))
    assert ex["f"].tolist() == [1.5, -2.0]
    assert ex["i"].tolist() == [3, -4, 2**40]
    assert ex["s"] == [b"ab", b""]


def test_missing_frameworks_say_not_installed(tmp_path):
    """With tensorflow and torch unimportable, their columns say "not installed"
    and conveyor's is still filled (one small workload)."""
    for name in ("tensorflow", "torch"):
        (tmp_path / "fake" / name).mkdir(parents=True)
        (tmp_path / "fake" / name / "__init__.py").write_text('raise ImportError("hidden")\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "fake"), ROOT]))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, os.path.join(RESULTS, "run.py"), "--quick",
                           "--only", "map_batch", "--out", str(out)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (row,) = table_rows((out / "results.md").read_text()).values()
    assert FIGURE.match(row[2]), row
    assert row[3:7] == ["not installed", "not installed", "–", "–"], row
    if importlib.util.find_spec("matplotlib") is not None:  # the plot needs it
        assert (out / "throughput.png").read_bytes()[:4] == b"\x89PNG"
