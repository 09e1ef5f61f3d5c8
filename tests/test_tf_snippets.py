"""Issue 16's measuring stick: real-style tf.data snippets under TensorFlow and conveyor.

Every snippet in tests/tf_snippets/ runs once with TensorFlow and once with
conveyor (the same function, given the module as ``tf``, in the same
directory); values, dtypes, shapes and structure are compared (floats to
1e-6). Snippets listed in tests/tf_snippets/known.py are not identical yet
and are xfail(strict=True): a snippet that becomes identical must leave the
list. A TensorFlow error is a bug in the snippet and always fails. Without
TensorFlow every test is skipped. The module ends by printing the counts
(tests/tf_snippets/report.py prints them with the missing features ranked).
"""
import collections
import contextlib
import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from tf_snippets._runner import collect, feature_of, run_both  # noqa: E402
from tf_snippets.known import KNOWN_DIFFERENCES, UNSTABLE  # noqa: E402

SNIPPETS = collect()
_OUTCOMES = {}


class SnippetMismatch(AssertionError):
    """conveyor's result differs from TensorFlow's, or conveyor raised."""


def test_known_differences_name_existing_snippets():
    stale = sorted(set(KNOWN_DIFFERENCES) - set(SNIPPETS))
    assert not stale, f"known.py names snippets that do not exist: {stale}"


def _params():
    for name in SNIPPETS:
        marks = []
        if name in KNOWN_DIFFERENCES:
            # UNSTABLE: TensorFlow's own result changes between processes.
            marks.append(pytest.mark.xfail(strict=name not in UNSTABLE, raises=SnippetMismatch,
                                           reason=KNOWN_DIFFERENCES[name]))
        yield pytest.param(name, marks=marks, id=name)


@pytest.fixture(scope="module")
def tf_module(request):
    tf = pytest.importorskip("tensorflow")
    yield tf
    _print_summary(request.config)


@pytest.fixture(scope="module")
def cv_module():
    import conveyor
    return conveyor


@pytest.mark.parametrize("name", list(_params()))
def test_snippet(name, tf_module, cv_module, tmp_path):
    kind, detail, tf_out, cv_out = run_both(SNIPPETS[name], tf_module, cv_module, tmp_path)
    if kind == "no-data":
        pytest.skip(detail)
    _OUTCOMES[name] = (kind, detail)
    if kind == "tf-error":
        pytest.fail(f"the snippet fails under TensorFlow (a snippet bug): {detail}\n{tf_out.tb}")
    if kind == "conveyor-error":
        raise SnippetMismatch(f"conveyor-error: {detail}\n{cv_out.tb}")
    if kind == "differs":
        raise SnippetMismatch(f"differs: {detail}")


def _print_summary(config):
    if not _OUTCOMES:
        return
    kinds = collections.Counter(k for k, _ in _OUTCOMES.values())
    total, same = len(_OUTCOMES), kinds["identical"]
    lines = [f"tf snippets: {total} run, {same} identical ({100.0 * same / total:.1f}%), "
             + ", ".join(f"{v} {k}" for k, v in sorted(kinds.items()) if k != "identical")]
    blocked = collections.Counter(feature_of(KNOWN_DIFFERENCES[n]) for n, (k, _) in _OUTCOMES.items()
                                  if k != "identical" and n in KNOWN_DIFFERENCES)
    if blocked:
        lines.append("top missing features (snippets blocked): " + "; ".join(
            f"{f} ({c})" for f, c in blocked.most_common(10)))
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        if reporter is not None:
            reporter.write("\n")
        for line in lines:
            if reporter is not None:
                reporter.write_line(line)
            else:
                print(line)
