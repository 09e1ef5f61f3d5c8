"""The documentation site builds with warnings as errors (as in CI).

The full build (every page and the API reference from the docstrings,
nitpicky) takes about 25 s; a docstring that is not valid reStructuredText,
a broken link or a page in no toctree fails it. The conf.py helpers that let
the site pick up pages other work adds are checked without a build.
"""
import importlib.util
import os
import subprocess
import sys

import pytest
from conftest import REPO, ROOT

DOCS = os.path.join(REPO, "docs")

pytest.importorskip("sphinx")
pytest.importorskip("myst_parser")


def _conf():
    spec = importlib.util.spec_from_file_location("_conveyor_docs_conf", os.path.join(DOCS, "conf.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("CV_SANITIZED") == "1",
                    reason="the site documents the Python layer; the sanitizer run tests the engine")
def test_site_builds_without_warnings(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-E", "-b", "html",
         "-d", str(tmp_path / "doctrees"), DOCS, str(tmp_path / "html")],
        cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    html = tmp_path / "html"
    for page in ["index", "guide", "migrating", "performance", "differences", "device", "resume",
                 "design", "development", "api/index", "api/dataset"]:
        assert (html / f"{page}.html").exists(), page
    assert not (html / "scheduler-plan.html").exists()  # an internal plan, not a user page
    dataset = (html / "api" / "dataset.html").read_text()
    for method in ["from_tensor_slices", "map", "batch", "shuffle", "prefetch", "interleave"]:
        assert f'id="conveyor.data.Dataset.{method}"' in dataset, method


def test_unlisted_pages_join_the_user_guide():
    conf = _conf()
    index = open(os.path.join(DOCS, "index.md"), encoding="utf-8").read()
    listed = conf._toctree_entries(index)
    assert {"guide", "migrating", "performance", "design", "api/index"} <= listed
    # Every page of docs/ is in a toctree once the marker is replaced.
    pages = {f[:-3] for f in os.listdir(DOCS) if f.endswith(".md")} - {"index"} - set(
        conf.INTERNAL_PAGES)
    assert pages <= listed | set(conf._unlisted_pages(index))
    source = [index]
    conf._add_unlisted_pages(None, "index", source)
    assert conf.UNLISTED_MARKER not in source[0]
    assert pages <= conf._toctree_entries(source[0])


def test_unlisted_pages_order(tmp_path, monkeypatch):
    conf = _conf()
    for name in ["index", "guide", "zeta", "ray", "frameworks", "examples"]:
        (tmp_path / f"{name}.md").write_text("# x\n")
    monkeypatch.setattr(conf, "HERE", str(tmp_path))
    index = "```{toctree}\n:caption: User guide\n\nguide\n_unlisted_pages_\n```\n"
    assert conf._unlisted_pages(index) == ["frameworks", "ray", "examples", "zeta"]


def test_links_to_the_readme_and_examples_go_to_their_pages():
    conf = _conf()
    text = ("[r](../README.md) [e](../examples/README.md#run) [d](../examples/) "
            "[g](guide.md) [w](https://example.com/a.md) [s](../setup.py)")
    fixed = conf._site_links(text, DOCS)
    assert fixed == ("[r](index.md) [e](examples.md#run) [d](examples.md) "
                     "[g](guide.md) [w](https://example.com/a.md) [s](../setup.py)")
    # From examples/README.md: links relative to examples/ become relative to docs/.
    fixed = conf._site_links("[s](../setup.py) [g](../docs/guide.md) [m](missing.py)",
                             conf.EXAMPLES_DIR)
    assert fixed == "[s](../setup.py) [g](guide.md) [m](missing.py)"
