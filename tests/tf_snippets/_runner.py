"""Collecting the snippets and running one under a given ``tf`` module."""
import importlib
import re
import os
import shutil
import traceback
import warnings

from tf_snippets import MODULES
from tf_snippets._compare import MissingTestData, compare

PREFIX = "snippet_"


def collect():
    """{"module.name": function} for every snippet, in module order."""
    out = {}
    for mod_name in MODULES:
        mod = importlib.import_module(f"tf_snippets.{mod_name}")
        for attr, fn in vars(mod).items():
            if attr.startswith(PREFIX) and callable(fn):
                out[f"{mod_name}.{attr[len(PREFIX):]}"] = fn
    return out


class Outcome:
    def __init__(self, value=None, error=None, tb=None):
        self.value, self.error, self.tb = value, error, tb

    @property
    def ok(self):
        return self.error is None

    def error_line(self):
        msg = str(self.error).strip().splitlines()
        return f"{type(self.error).__name__}: {msg[0] if msg else ''}"[:300]


def run_one(fn, tf, workdir):
    """Run ``fn(tf, workdir)`` in a fresh ``workdir`` (same path for both runs)."""
    if os.path.exists(workdir):
        shutil.rmtree(workdir)
    os.makedirs(workdir)
    import pathlib
    try:
        tf.random.set_seed(None)  # no global seed left over from an earlier snippet
    except Exception:  # noqa: BLE001
        pass
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return Outcome(value=fn(tf, pathlib.Path(workdir)))
    except Exception as exc:  # noqa: BLE001 - every failure is an outcome
        return Outcome(error=exc, tb=traceback.format_exc())


def run_both(fn, tf_module, cv_module, base):
    """(classification, detail, tf_outcome, conveyor_outcome).

    classification: "identical", "differs", "conveyor-error", "tf-error", or "no-data"
    (the shared test data is missing).
    Both runs see the same path (``base/work``): TensorFlow's files are moved
    aside before conveyor runs.
    """
    work = os.path.join(str(base), "work")
    tf_out = run_one(fn, tf_module, work)
    if os.path.exists(work):
        shutil.move(work, os.path.join(str(base), "work-tf"))
    cv_out = run_one(fn, cv_module, work)
    if isinstance(tf_out.error, MissingTestData):
        return "no-data", tf_out.error_line(), tf_out, cv_out
    if not tf_out.ok:
        return "tf-error", tf_out.error_line(), tf_out, cv_out
    if not cv_out.ok:
        return "conveyor-error", cv_out.error_line(), tf_out, cv_out
    msg = compare(tf_out.value, cv_out.value)
    if msg:
        return "differs", msg, tf_out, cv_out
    return "identical", "", tf_out, cv_out


def feature_of(reason):
    """The blocking feature a KNOWN_DIFFERENCES reason names (the text before ': ')."""
    return reason.split(": ", 1)[0].strip()


_MODULES = {"conveyor": "tf", "conveyor.data": "tf.data", "conveyor.data.experimental": "tf.data.experimental",
            "conveyor.io": "tf.io", "conveyor.image": "tf.image", "conveyor.train": "tf.train",
            "conveyor.math": "tf.math", "conveyor.random": "tf.random"}


def suggest_reason(kind, detail):
    """A draft KNOWN_DIFFERENCES reason, "FEATURE: detail", from an outcome (report.py --known)."""
    m = re.match(r"AttributeError: '(?:numpy\.\w+|bytes|bool|int|tuple)' object has no attribute 'numpy'",
                 detail)
    if m:
        return f".numpy() on elements/values: {detail}"
    m = re.match(r"AttributeError: module '([\w.]+)' has no attribute '(\w+)'", detail)
    if m:
        return f"{_MODULES.get(m.group(1), m.group(1))}.{m.group(2)}: {detail}"
    m = re.match(r"AttributeError: (?:'\w*Dataset' object|type object 'Dataset') has no attribute '(\w+)'",
                 detail)
    if m:
        return f"Dataset.{m.group(1)}: {detail}"
    if kind == "differs" and "dtype=conveyor." in detail:
        return f"repr of specs says conveyor.<dtype>: {detail}"
    return ("differs: " if kind == "differs" else "") + detail
