"""docs/performance.md shows the pipeline doctor's output from a real run: the reports there
must have the shape the doctor prints today (its checks, units, stage table, advice), so a
user reading them sees what they will see, and never a negative figure."""
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO, ROOT

DOC = os.path.join(REPO, "docs", "performance.md")
CHECK = re.compile(r"^([a-z][a-zA-Z ]+?)\s{2,}(ok|WARN|FAIL|skipped)\s")
STAGE = re.compile(r"^\s+\d+ (\S+)\s+(-?[\d.]+) ms")


def doc_blocks(kind):
    with open(DOC) as f:
        return re.findall(rf"```{kind}\n(.*?)```", f.read(), re.S)


def doc_reports():
    return [b for b in doc_blocks("text") if b.startswith("conveyor pipeline doctor:")]


def shape(report):
    """What does not depend on timing: the unit line with its numbers out, the checks in
    order (GPU busy only where a GPU is, so left out), the stages in order."""
    lines = report.splitlines()
    return {"unit": re.sub(r"\d+", "N", lines[1]),
            "checks": [m.group(1) for m in map(CHECK.match, lines)
                       if m and m.group(1) != "GPU busy"],
            "stages": [m.group(1) for m in map(STAGE.match, lines) if m],
            "table": next(line for line in lines if line.startswith("stages, "))}


def test_the_docs_show_two_doctor_reports_without_a_negative_figure():
    reports = doc_reports()
    assert len(reports) == 2
    for report in reports:
        assert not re.search(r"(?<![\w.])-\d", report), report
        assert all(float(m.group(2)) >= 0 for m in map(STAGE.match, report.splitlines()) if m)


@pytest.mark.slow
def test_the_docs_doctor_reports_have_the_shape_the_doctor_prints(tmp_path):
    code = "\n".join(b for b in doc_blocks("python")
                     if "def make_dataset()" in b or "def make_dataset_fixed()" in b)
    (tmp_path / "pipeline.py").write_text(code)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for factory, documented in zip(["make_dataset", "make_dataset_fixed"], doc_reports()):
        # The documented command, with fewer steps: the shape does not depend on the count.
        result = subprocess.run(
            [sys.executable, "-m", "conveyor.doctor", f"pipeline.py:{factory}", "--steps", "10",
             "--step-time", "0.01", "--no-progress"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        # Exit status 1 means a check failed, and nothing else: the first pipeline sits near
        # the input-bound line (43% documented, 50% fails), so on a loaded machine it may fail.
        failed = any(m and m.group(2) == "FAIL"
                     for m in map(CHECK.match, result.stdout.splitlines()))
        assert result.returncode == int(failed), result.stdout + result.stderr
        now, doc = shape(result.stdout), shape(documented)
        # Statuses and figures depend on the machine's speed; names, units and order do not.
        assert now == doc, (factory, result.stdout)
