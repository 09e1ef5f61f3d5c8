"""The programs in examples/ run end to end with small arguments and learn / round-trip.

Each example runs as a subprocess, as a user would run it, with the conveyor
under test first on PYTHONPATH. The PyTorch and JAX ones are skipped when
those libraries are not installed.
"""
import ast
import csv
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from conftest import REPO, ROOT

import conveyor

EXAMPLES = os.path.join(REPO, "examples")


def run(script, *args, timeout=240):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, script), *map(str, args)],
                            cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def numbers(pattern, text):
    return [float(m) for m in re.findall(pattern, text)]


def test_every_example_is_listed_and_documented():
    with open(os.path.join(EXAMPLES, "README.md")) as f:
        readme = f.read()
    scripts = sorted(n for n in os.listdir(EXAMPLES) if n.endswith(".py"))
    assert len(scripts) >= 4
    assert "<" not in readme  # plain markdown (MyST), no raw HTML
    for name in scripts:
        assert f"`{name}`" in readme, name
        with open(os.path.join(EXAMPLES, name)) as f:
            doc = ast.get_docstring(ast.parse(f.read()))
        assert doc and "Run it" in doc and f"python examples/{name}" in doc, name


def test_torch_resnet18_on_generated_jpegs():
    pytest.importorskip("torch")
    out = run("torch_resnet18_jpeg.py", "--steps", 20, "--batch-size", 16, "--image-size", 16,
              "--width", 8, "--log-every", 5, "--torch-threads", 1)
    assert "classes: ['circle', 'square', 'stripes']" in out
    losses = numbers(r"step +\d+  loss (\S+)", out)
    assert len(losses) == 5 and all(np.isfinite(losses)), out
    first, last = map(float, re.search(r"first 5 steps (\S+), of the last 5 steps (\S+)",
                                       out).groups())
    assert last < first, out  # seeded: the same flips, order and weights in every run
    assert numbers(r"images/s: (\S+)", out)[0] > 0
    assert 0 <= numbers(r"input wait: (\S+)%", out)[0] <= 100


def test_torch_resnet18_on_a_user_folder(tmp_path):
    pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    for k, name in enumerate(["ant", "bee"]):
        (tmp_path / name).mkdir()
        for i in range(4):
            image = np.full((24, 20, 3), 60 + 120 * k, np.uint8) + rng.integers(0, 30, (24, 20, 3),
                                                                                 dtype=np.uint8)
            ext = "jpg" if i % 2 else "jpeg"
            (tmp_path / name / f"{i}.{ext}").write_bytes(conveyor.io.encode_jpeg(image).numpy())
    out = run("torch_resnet18_jpeg.py", "--data", tmp_path, "--steps", 2, "--batch-size", 8,
              "--image-size", 16, "--width", 8, "--torch-threads", 1)
    assert "classes: ['ant', 'bee']" in out and "batch 8 of 16x16" in out
    assert "input wait:" in out


def test_jax_mlp_learns():
    pytest.importorskip("jax")
    out = run("jax_mlp.py", "--epochs", 2, "--samples", 2000, "--batch-size", 64, "--dlpack")
    accuracy = numbers(r"test accuracy (\S+)", out)
    losses = numbers(r"loss (\S+)", out)
    assert len(accuracy) == 3 and len(losses) == 2, out
    assert accuracy[-1] > 0.5 > accuracy[0], out  # chance is 1/8
    assert losses[1] < losses[0], out


def test_numpy_mnist_accuracy_goes_up(tmp_path):
    out = run("numpy_mnist.py", "--train", 2000, "--test", 500, "--epochs", 3,
              "--dir", tmp_path)
    accuracy = numbers(r"test accuracy (\S+)", out)
    losses = numbers(r"loss (\S+)", out)
    assert len(accuracy) == 4 and len(losses) == 3, out
    assert accuracy[0] < 0.3 and accuracy[-1] > 0.7, out  # chance is 0.1
    assert accuracy[-1] > accuracy[1] - 0.05 and losses[-1] < losses[0], out
    assert sorted(os.listdir(tmp_path)) == ["test.tfrecord", "train.tfrecord"]


def test_tfrecord_write_read_generated():
    out = run("tfrecord_write_read.py", "--rows", 500, "--shards", 3, "--batch-size", 32)
    assert "wrote 500 records to 3 GZIP shards" in out
    assert "rows: written 500, read 500" in out
    assert "counts equal: ok" in out


def test_tfrecord_write_read_user_csv(tmp_path):
    path = tmp_path / "items.csv"
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["id", "name", "price", "rating_1", "rating_2", "rating_3", "tags",
                      "discount"])
        out.writerow([7, "a", "1.5", "1", "2", "3", "x;y", ""])
        out.writerow([8, "b, with comma", "2.5", "0", "0", "0", "", "0.25"])
        out.writerow([9, "c", "3", "4", "4", "4", "z", "0"])
    out = run("tfrecord_write_read.py", "--csv", path, "--shards", 2, "--out", tmp_path / "rec")
    assert "id_sum: written 24, read 24" in out
    assert "tags: written 3, read 3" in out
    assert "discounted: written 1, read 1" in out
    assert "counts equal: ok" in out
    shards = sorted(os.listdir(tmp_path / "rec"))
    assert shards == ["data-00000-of-00002.tfrecord.gz", "data-00001-of-00002.tfrecord.gz"]
    with open(tmp_path / "rec" / shards[0], "rb") as f:
        assert f.read(2) == b"\x1f\x8b"  # GZIP
