"""Progress bars (conveyor/framework/progress.py): one switch for the cache's filling,
the pipeline doctor's runs and the TFRecord index tool. A bar shows on stderr
when forced on, nothing is written when off, and results are the same either
way."""
import os
import sys

import numpy as np
import pytest

import conveyor as tf
from conveyor.framework import progress as _progress
from conveyor.data.experimental import diagnose
from conveyor.data.ops import cache_op
from conveyor.tools import index as index_tool

pytest.importorskip("tqdm")


@pytest.fixture(autouse=True)
def _switch_back():
    yield
    _progress.set_enabled(None)


def pipeline():
    ds = tf.data.Dataset.range(120)
    return ds.map(lambda x: x * 2, num_parallel_calls=tf.data.AUTOTUNE).batch(10).prefetch(1)


def verdict(result):
    """What a diagnosis says, less the timings."""
    return ([(c.name, c.detail) for c in result.checks
             if c.name in ("identical output", "determinism")],
            [s.name for s in result.stages], result.pipeline)


def test_switch_rules(monkeypatch):
    assert _progress.enabled() is None
    # auto: off when stderr is not a terminal (pytest captures it)
    assert not _progress.active()
    assert _progress.active(True) and not _progress.active(False)
    tf.data.experimental.progress(True)
    assert _progress.active() and not _progress.active(False)
    tf.data.experimental.cache_progress(False)  # the same switch under its older name
    assert _progress.enabled() is False and not _progress.active() and _progress.active(True)
    tf.data.experimental.progress(None)
    assert _progress.enabled() is None
    silent = _progress.bar(10, "x", override=False)
    assert isinstance(silent, _progress.Silent)
    silent.update(3), silent.set_postfix_str("y"), silent.close()


def test_explicit_bar_needs_tqdm(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    with pytest.raises(ImportError, match="tqdm"):
        tf.data.experimental.progress(True)
    with pytest.raises(ImportError, match="tqdm"):
        diagnose(pipeline(), 4, quiet=True, progress=True)
    assert not _progress.active()  # auto without tqdm: no bar, no error


def test_doctor_bar_when_forced_and_silent_when_off(capsys):
    off = diagnose(pipeline, 5, stage_seconds=0.1, quiet=True, progress=False)
    assert capsys.readouterr().err == ""
    on = diagnose(pipeline, 5, stage_seconds=0.1, quiet=True, progress=True)
    err = capsys.readouterr().err
    # the bar counts the pipeline's own elements, named as the doctor names them
    assert "doctor: " in err and " runs" in err and on.unit in err
    assert "timing" in err  # the stages timed alone
    assert verdict(on) == verdict(off)
    assert off["identical output"].status == "ok" and off["determinism"].status == "ok"


def test_doctor_follows_the_switch(capsys):
    tf.data.experimental.progress(True)
    diagnose(pipeline(), 4, stage_seconds=0.1, quiet=True)
    assert "doctor: " in capsys.readouterr().err
    tf.data.experimental.progress(False)
    diagnose(pipeline(), 4, stage_seconds=0.1, quiet=True)
    assert capsys.readouterr().err == ""


def test_doctor_command_line_progress(tmp_path, capsys):
    script = tmp_path / "make.py"
    script.write_text("import conveyor as tf\n"
                      "def make():\n"
                      "    return tf.data.Dataset.range(40).batch(4)\n")
    from conveyor.data import doctor
    assert doctor.main([f"{script}:make", "--steps", "3", "--progress"]) == 0
    out = capsys.readouterr()
    assert "doctor: " in out.err and "conveyor pipeline doctor" in out.out
    assert doctor.main([f"{script}:make", "--steps", "3", "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


def test_cache_bar_when_forced_and_silent_when_off(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(cache_op, "_CACHE_PROGRESS_DELAY", 0.0)
    tf.data.experimental.progress(True)
    on = [int(x) for x in tf.data.Dataset.range(3000).cache(str(tmp_path / "a"))]
    err = capsys.readouterr().err
    assert "cache" in err and "elements" in err and "MiB" in err
    tf.data.experimental.progress(False)
    off = [int(x) for x in tf.data.Dataset.range(3000).cache(str(tmp_path / "b"))]
    assert capsys.readouterr().err == ""
    assert on == off == list(range(3000))
    assert sorted(os.listdir(tmp_path)) == ["a.cvcache", "b.cvcache"]
    # (the files differ by their header's identity bytes only: read them back)
    assert [int(x) for x in tf.data.Dataset.range(3000).cache(str(tmp_path / "a"))] == \
        [int(x) for x in tf.data.Dataset.range(3000).cache(str(tmp_path / "b"))] == on


def _records(path, n):
    with tf.io.TFRecordWriter(str(path)) as w:
        for i in range(n):
            w.write(np.arange(i % 50, dtype=np.int64).tobytes())
    return str(path)


def test_index_tool_bar_when_forced_and_silent_when_off(tmp_path, capsys):
    a = _records(tmp_path / "a.tfrecord", 300)
    b = _records(tmp_path / "b.tfrecord", 7)
    assert index_tool.main(["--no-progress", a, b]) == 0
    out = capsys.readouterr()
    assert out.err == "" and f"{a}: 300 records" in out.out and f"{b}: 7 records" in out.out
    quiet = [open(index_tool.index_path(p), "rb").read() for p in (a, b)]
    assert index_tool.main(["--progress", a, b]) == 0
    out = capsys.readouterr()
    assert "index" in out.err and "100%" in out.err
    assert f"{a}: 300 records" in out.out and f"{b}: 7 records" in out.out
    assert [open(index_tool.index_path(p), "rb").read() for p in (a, b)] == quiet
    # a file that cannot be indexed is reported under the bar, the others still are
    missing = str(tmp_path / "missing.tfrecord")
    assert index_tool.main(["--progress", missing, a]) == 1
    out = capsys.readouterr()
    assert f"{missing}: not indexed" in out.err and f"{a}: 300 records" in out.out
