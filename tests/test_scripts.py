"""The demo and the benchmark runner run end to end (small sizes, conveyor only)."""
import json
import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT

from conveyor.data import doctor_measure

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # where the scripts live


def run(args, timeout=180):
    # ROOT provides the conveyor under test (a sanitizer build lives elsewhere).
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, os.path.join(REPO, args[0]), *args[1:]], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, env=env)


NEGATIVE = re.compile(r"(?<![\w-])-\d")  # a minus sign before a digit: a negative figure


@pytest.fixture(scope="module")
def demo_quick():
    result = run(["demo.py", "--quick", "--no-tf"], timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _first_table_rows(out):
    table = out.split("images/s")[1].split("spread:")[0]
    return {line[:42].strip() for line in table.splitlines()[1:] if line.strip()}


def test_demo_runs_and_matches_the_naive_loop(demo_quick):
    out = demo_quick
    assert "equal to the naive loop's: yes" in out
    # every figure is explained, the step tables name their bottleneck, the longer
    # step is the step's bottleneck, and the doctor's verdict ends the demo
    assert out.count("how measured:") == 2
    assert "wait ms/batch" in out and "bottleneck" in out
    assert "the step (" in out.split("a longer step")[1]
    assert "the pipeline doctor" in out and "conveyor pipeline doctor:" in out
    assert "identical output" in out and "determinism" in out


def test_demo_prints_the_load_and_the_spread_and_no_negative_figure(demo_quick):
    out = demo_quick
    assert "load average" in out and "CPUs" in out
    assert out.count("spread:") == 3  # the first table and both step tables
    assert "min s" in out and "max s" in out and "median s" in out
    # the batch mean of normalised pixels may be below zero; every other figure is not
    figures = [line for line in out.splitlines() if not line.startswith("first batch:")]
    assert not [line for line in figures if NEGATIVE.search(line)], out


def test_demo_says_only_what_is_true_of_its_run(demo_quick):
    out = demo_quick
    assert "the step you asked for" not in out  # --step-ms was not given
    # the longer step names the row it is derived from, and that row is in the first table
    named = re.search(r'median time per batch of "([^"]+)" in the first table', out).group(1)
    assert named in _first_table_rows(out)
    # the suggested command is marked as a placeholder, not a file that does not exist
    assert "script.py:make_dataset" not in out
    assert "YOUR_SCRIPT.py:YOUR_FACTORY is a placeholder" in out
    # the doctor's GPU line only where a GPU is
    assert ("GPU busy" in out) == doctor_measure._gpu_device_present()


def test_demo_names_the_step_that_was_asked_for():
    result = run(["demo.py", "--no-tf", "--images", "130", "--rounds", "1", "--step-ms", "3",
                  "--doctor-steps", "0"], timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "the step you asked for (--step-ms 3)" in result.stdout
    assert "spread: one round" in result.stdout


@pytest.mark.slow
def test_demo_with_tensorflow_is_quiet_and_measures_it_in_the_same_rounds():
    pytest.importorskip("tensorflow")
    result = run(["demo.py", "--quick", "--doctor-steps", "0", "--step-ms", "0"], timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "tf.data: JPEG files" in _first_table_rows(result.stdout)
    # TensorFlow's C++ and absl logging is silenced
    noise = [line for line in result.stderr.splitlines()
             if re.match(r"^[IWE]\d{4} |^\d{4}-\d\d-\d\d .*(I|W) tensorflow/", line)
             or "oneDNN" in line or "cpu_feature_guard" in line]
    assert not noise, result.stderr


def test_benchmark_runner_quick():
    result = run(["benchmarks/run.py", "--quick", "--no-tf", "--rounds", "1"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "conveyor output checks: all ok" in result.stdout


def test_csv_benchmark_tiny(tmp_path):
    result = run(["benchmarks/csv_reading.py", "--no-tf", "--rows", "3000", "--rounds", "1",
                  "--dir", str(tmp_path)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "rows/s" in result.stdout


def test_image_benchmark_tiny(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TMPDIR=str(tmp_path))
    result = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks/images.py"), "--no-tf",
                             "--files", "16", "--rounds", "1", "--limit-seconds", "0.2"],
                            cwd=ROOT, capture_output=True, text=True, timeout=180, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "decode limit" in result.stdout
    assert "check: first batch equals eager decode+resize: ok" in result.stdout


def test_scaled_decode_benchmark_tiny(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TMPDIR=str(tmp_path))
    result = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks/scaled_decode.py"),
                             "--files", "8", "--rounds", "1"],
                            cwd=ROOT, capture_output=True, text=True, timeout=180, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "fused/exact" in result.stdout and "bicubic antialias" in result.stdout

def test_memory_benchmark_small():
    result = run(["benchmarks/memory.py", "--no-tf", "--n", "200"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "shuffle(200)" in result.stdout and "conveyor" in result.stdout
    assert "failed" not in result.stdout


def test_shuffle_benchmark_small():
    result = run(["benchmarks/shuffle.py", "--no-tf", "--n", "3000", "--buffer", "500",
                  "--epochs", "2"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "conveyor / NumPy permute+gather" in result.stdout
    assert "failed" not in result.stdout and "CHECK FAILED" not in result.stdout


def test_text_benchmark_tiny():
    result = run(["benchmarks/text.py", "--no-tf", "--lines", "2000", "--rounds", "1"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "regex_replace" in result.stdout and "conveyor" in result.stdout


def test_autotune_benchmark_tiny(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TMPDIR=str(tmp_path))
    result = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks/autotune.py"),
                             "--quick", "--rounds", "1"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    for workload in ("jpeg", "rec 1KB", "rec 100KB", "pymap", "two maps", "cache+shuffle+batch",
                     "7 stages"):
        assert workload in result.stdout, workload
    assert "model/fixed" in result.stdout and "changes" in result.stdout


def test_artificial_benchmark_quick():
    # Sleeps only: a couple of seconds. Timings are printed, never asserted.
    result = run(["benchmarks/artificial.py", "--no-tf", "--rounds", "1",
                  "--only", "naive,prefetch,map parallel,cache,vectorized,fast"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "vectorized: batched map" in result.stdout and "/bound" in result.stdout


def test_loaders_benchmark_tiny(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TMPDIR=str(tmp_path))
    result = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks/loaders.py"),
                             "--files", "16", "--epochs", "1", "--repeat", "1", "--limit", "1000",
                             "--only", "conveyor"],
                            cwd=ROOT, capture_output=True, text=True, timeout=180, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "conveyor" in result.stdout and "skipped" not in result.stdout


def test_gpu_check_host_quick(tmp_path):
    # benchmarks/gpu_check.py's whole flow on the "host" device (no GPU needed).
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TMPDIR=str(tmp_path))
    out = tmp_path / "gpu_check.json"
    result = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks/gpu_check.py"),
                             "--device", "host", "--quick", "--files", "64", "--json", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    for title in ("a. environment", "b. correctness", "c. bandwidth", "d. JPEG workload",
                  "e. batches built in page-locked memory", "f. summary"):
        assert title in result.stdout, title
    assert "FAIL" not in result.stdout and "Traceback" not in result.stdout, result.stdout
    report = json.loads(out.read_text())
    assert report["exit_code"] == 0 and not report["errors"], report["errors"]
    assert any(c["status"] == "ok" for c in report["checks"])
    assert report["figures"]["bandwidth"]["stage"]["take only"]["rates"]["median"] > 0
    assert set(report["figures"]["jpeg"]["variants"]) == {"host batches", "prefetch_to_device('host')"}
    pinned = report["figures"]["pinned"]
    assert pinned["stage_in_place"]["staged_copies"] == 0 and pinned["stage_in_place"]["inplace_batches"] > 0
    assert len(pinned["jpeg"]) == 2


def test_gpu_check_quick_on_the_fake_cuda_runtime(tmp_path):
    # The CUDA code path of the whole flow, on tests/fake_cuda (no GPU needed).
    import _fake_cuda
    fake = _fake_cuda.build(str(tmp_path))
    if fake is None:
        pytest.skip("no C compiler to build the fake CUDA runtime")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TMPDIR=str(tmp_path), CONVEYOR_CUDART=fake)
    out = tmp_path / "gpu_check.json"
    result = subprocess.run([sys.executable, os.path.join(REPO, "benchmarks/gpu_check.py"),
                             "--quick", "--files", "64", "--json", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "FAIL" not in result.stdout and "Traceback" not in result.stdout, result.stdout
    report = json.loads(out.read_text())
    assert report["exit_code"] == 0 and not report["errors"], report["errors"]
    assert report["figures"]["pinned"]["stage_in_place"]["staged_copies"] == 0


def test_gpu_check_without_cuda():
    # Where CUDA is missing: "CUDA not available: <reason>", exit 2 (0 with --allow-no-gpu).
    import conveyor.device
    if conveyor.device.cuda_available():
        pytest.skip("CUDA is available here")
    result = run(["benchmarks/gpu_check.py", "--quick"])
    assert result.returncode == 2, result.stdout + result.stderr
    assert "CUDA not available: " in result.stdout
    result = run(["benchmarks/gpu_check.py", "--quick", "--allow-no-gpu"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "CUDA not available: " in result.stdout


def test_no_script_shadows_a_standard_library_module():
    """A script runs with its folder first on sys.path: one named like a
    standard library module (benchmarks/csv.py once) replaces that module for
    every import in the process, conveyor's own included."""
    for folder in ("benchmarks", "benchmarks/results", "examples", "."):
        for name in os.listdir(os.path.join(REPO, folder)):
            stem, ext = os.path.splitext(name)
            if ext == ".py":
                assert stem not in sys.stdlib_module_names, f"{folder}/{name}"


@pytest.mark.parametrize("script", sorted(
    name for name in os.listdir(os.path.join(REPO, "benchmarks")) if name.endswith(".py")))
def test_every_benchmark_script_starts(script):
    """Each benchmark imports what it needs (`--help` runs its imports)."""
    result = run([f"benchmarks/{script}", "--help"], timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
