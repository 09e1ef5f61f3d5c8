"""The pipeline doctor (conveyor.data.experimental.diagnose, python -m conveyor.doctor).

Planted faults the doctor must find (a slow stage, a non-deterministic stage,
a reordering stage, a prefetch over a small RAM budget), its speedup and
identical-output verdicts against comparisons written by hand, the baseline
build, the machine checks, and the command line. No time is asserted: the
slow stages sleep long enough (20-100 ms) that which stage is slowest, and
whether threads help, does not depend on the machine's load.
"""
import json
import os
import re
import subprocess
import sys
import textwrap
import time
import types
import warnings

import numpy as np
import pytest
from conftest import ROOT

import conveyor as tf
from conveyor.framework import random_seed as _seed
from conveyor.data import doctor
from conveyor.data import doctor_measure
from conveyor.data.experimental import diagnose
from conveyor.data.options import DerivedContext


def sleeping(seconds, name, every=1):
    """A map function that sleeps `seconds` on every `every`-th element (a Python
    function through numpy_function, which releases the GIL while it sleeps)."""
    def sleep(v):
        if v % every == 0:
            time.sleep(seconds)
        return v

    def stage(x):
        return tf.numpy_function(sleep, [x], tf.int64)
    stage.__name__ = name
    return stage


def noisy(x):
    return tf.numpy_function(lambda v: v + np.random.randint(1, 1_000_000), [x], tf.int64)


def values(ds):
    return [np.asarray(x).tolist() for x in ds]


def run(ds, **kwargs):
    kwargs.setdefault("stage_seconds", 0.5)
    return diagnose(ds, quiet=True, **kwargs)


# -- the baseline ---------------------------------------------------------------------


def test_the_baseline_is_the_same_pipeline_without_parallelism_or_prefetch():
    ds = (tf.data.Dataset.range(60)
          .interleave(lambda i: tf.data.Dataset.range(i, i + 3), cycle_length=tf.data.AUTOTUNE,
                      num_parallel_calls=tf.data.AUTOTUNE)
          .map(lambda x: x * 2, num_parallel_calls=3).batch(7, num_parallel_calls=2).prefetch(4))
    ctx = ds._context()
    base = DerivedContext(ctx, "t", sequential=True)
    flat = lambda: (1, None)  # noqa: E731
    got = [np.asarray(x[0]).tolist() for x in ds._engine(base).make_iterator(flat)]
    assert got == values(ds)
    assert base != ctx and DerivedContext(ctx, "t") != base
    assert base.parallelism(8) == 0 and DerivedContext(ctx, "t").parallelism(8) == 8
    # prefetch is a pass-through in the baseline
    assert ds._engine(base) is ds._inputs[0]._engine(base)


def test_the_doctor_leaves_the_users_builds_and_seed_alone():
    tf.random.set_seed(5)
    _seed.get_seed(None)  # draw once: the position in the op-seed sequence must survive
    before = _seed.get_state()
    ds = tf.data.Dataset.range(20).map(lambda x: x + 1, num_parallel_calls=2).batch(4)
    list(ds)
    caches = {id(s): dict(s._engine_cache) for s in doctor._stages(ds)}
    result = run(ds, steps=4)
    assert {id(s): dict(s._engine_cache) for s in doctor._stages(ds)} == caches
    assert _seed.get_state() == before
    assert result.ok, str(result)
    tf.random.set_seed(None)


def test_a_cache_inside_sees_previews_and_keeps_its_warning_for_the_user():
    ds = tf.data.Dataset.range(1000).map(lambda x: x * 2).cache().shuffle(10, seed=1).batch(4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run(ds, steps=5, stage_seconds=0.2)["identical output"].status == "ok"
    with pytest.warns(tf.data.experimental.CacheWarning):
        it = iter(ds)
        next(it)
        del it


# -- planted faults -------------------------------------------------------------------


def test_it_names_a_planted_slow_stage():
    ds = (tf.data.Dataset.range(400).map(lambda x: x + 1).map(sleeping(0.02, "slow_stage"))
          .batch(4).map(lambda x: x * 2).prefetch(2))
    result = run(ds, steps=6)
    assert result.bottleneck == "MapDataset(slow_stage)"
    check = result["bottleneck"]
    assert check.status == "warn" and check.measured == "MapDataset(slow_stage)"
    assert "num_parallel_calls=AUTOTUNE" in check.remedy
    slow = [s for s in result.stages if s.name == "MapDataset(slow_stage)"][0]
    assert slow.share > 0.5 and slow.per_output == 4  # 4 elements per batch
    assert result.stages[0].name == "RangeDataset" and result.stages[0].per_output == 4
    assert "<- bottleneck" in str(result)


def test_only_the_bottleneck_is_marked_when_two_stages_share_a_name():
    """Two maps of functions with the same name: the table marks the slow one
    only (by position, not by name)."""
    ds = (tf.data.Dataset.range(200).map(sleeping(0.0, "step")).map(sleeping(0.02, "step"))
          .batch(4).prefetch(2))
    result = run(ds, steps=6)
    marked = [line for line in str(result).splitlines() if line.endswith("<- bottleneck")]
    assert len(marked) == 1, str(result)
    slow = result.stages[result.bottleneck_position]
    assert slow.name == "MapDataset(step)" and slow.share > 0.5
    assert result.stages[slow.position - 1].name == "MapDataset(step)"


def test_it_finds_a_planted_non_deterministic_stage():
    result = run(tf.data.Dataset.range(50).map(lambda x: x * 3).map(noisy).batch(2), steps=5)
    check = result["determinism"]
    assert check.status == "fail"
    assert "MapDataset(noisy)" in check.detail and "also without parallelism" in check.detail
    assert "conveyor.random" in check.remedy
    assert result["identical output"].status == "skipped"
    assert not result.ok


def test_a_reordering_stage_fails_identical_output_as_a_hand_written_comparison_does():
    # element 0 of every 8 sleeps 100 ms: with deterministic=False the others overtake it
    def make():
        return (tf.data.Dataset.range(64)
                .map(sleeping(0.1, "reorder", every=8), num_parallel_calls=4, deterministic=False)
                .batch(2))
    result = run(make(), steps=8)
    check = result["identical output"]
    hand_parallel = values(make().take(8))
    hand_sequential = values(tf.data.Dataset.range(64).map(sleeping(0.1, "reorder", every=8))
                             .batch(2).take(8))
    assert hand_parallel != hand_sequential
    hand_first = next(i for i, (a, b) in enumerate(zip(hand_parallel, hand_sequential)) if a != b)
    assert check.status == "fail" and check.measured == hand_first == 0
    assert "ParallelMapDataset(reorder)" in check.detail and "another order" in check.detail
    assert "deterministic=True" in check.remedy


def test_a_prefetch_over_a_small_ram_budget_fails_the_ram_check():
    options = tf.data.Options()
    options.autotune.ram_budget = 4 << 20
    ds = (tf.data.Dataset.from_tensors(np.zeros((256, 1024), np.float32)).repeat(100)
          .map(lambda x: x + 1.0).prefetch(50).with_options(options))
    result = run(ds, steps=30)
    check = result["peak RAM"]
    assert check.status == "fail"
    assert "Prefetch" in check.detail and "RAM budget exceeded" in check.detail
    assert "a smaller prefetch (buffer_size now 50)" in check.remedy
    assert result["identical output"].status == "skipped"
    assert not result.ok
    # the same pipeline with room passes
    assert run(ds.with_options(tf.data.Options()), steps=4)["peak RAM"].status != "fail"


def test_the_speedup_and_identical_output_agree_with_a_hand_written_comparison():
    def pipeline(parallel):
        ds = tf.data.Dataset.range(200).map(sleeping(0.01, "decode"),
                                             num_parallel_calls=4 if parallel else None)
        return ds.batch(2).prefetch(2) if parallel else ds.batch(2)

    result = run(pipeline(True), steps=16)
    assert result["identical output"].status == "ok"
    assert values(pipeline(True).take(16)) == values(pipeline(False).take(16))

    def rate(ds):
        it = iter(ds.take(17))
        next(it)  # warm-up, as the doctor does
        start = time.perf_counter()
        n = sum(1 for _ in it)
        return n / (time.perf_counter() - start)
    hand = rate(pipeline(True)) / rate(pipeline(False))
    speedup = result["speedup"].measured
    assert result["speedup"].status == "ok"
    # 4 threads over a sleeping function: both see a clear gain, of the same size
    assert speedup > 1.5 and hand > 1.5
    assert 0.4 < speedup / hand < 2.5


# -- seeds --------------------------------------------------------------------------------


def test_unseeded_shuffle_is_reported():
    result = run(tf.data.Dataset.range(100).shuffle(50).batch(4), steps=5)
    assert result["determinism"].status == "fail"
    assert "unseeded randomness" in result["determinism"].detail
    assert "ShuffleDataset" in result["determinism"].detail
    assert "set_seed" in result["determinism"].remedy
    assert result["identical output"].status == "skipped"

    seeded = run(tf.data.Dataset.range(100).shuffle(50, seed=1).batch(4), steps=5)
    assert seeded["determinism"].status == "ok" and seeded["identical output"].status == "ok"


def test_a_factory_is_built_per_run_and_tried_with_a_seed():
    assert _seed.global_seed() is None
    result = run(lambda: tf.data.Dataset.range(100).shuffle(50).batch(4), steps=5, seed=7)
    check = result["determinism"]
    assert check.status == "fail" and "agree with conveyor.random.set_seed(7)" in check.detail
    assert result["identical output"].status == "ok"  # compared with the seed set
    assert _seed.global_seed() is None


# -- the step, the machine --------------------------------------------------------------


def test_input_bound_fraction_with_a_step_fn():
    slow_input = run(tf.data.Dataset.range(100).map(sleeping(0.02, "load")), steps=6,
                     step_fn=lambda x: None)
    assert slow_input["input-bound"].status == "fail"
    assert slow_input["input-bound"].measured > 0.5
    assert "prefetch(AUTOTUNE)" in slow_input["input-bound"].remedy
    fast_input = run(tf.data.Dataset.range(100).prefetch(2), steps=6,
                     step_fn=lambda x: time.sleep(0.02))
    assert fast_input["input-bound"].status == "ok"
    assert fast_input["bottleneck"].status == "ok"
    assert "does not wait on it" in fast_input["bottleneck"].detail


def test_gpu_without_pynvml_says_how_to_install_it_where_a_gpu_is(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setattr(doctor, "_gpu_device_present", lambda: True)
    monkeypatch.setattr(doctor_measure, "_gpu_device_present", lambda: True)
    result = run(tf.data.Dataset.range(10), steps=4, step_fn=lambda x: None)
    assert result["GPU busy"].status == "skipped"
    assert "pynvml is not installed (pip install nvidia-ml-py)" in result["GPU busy"].detail
    assert run(tf.data.Dataset.range(10), steps=4)["GPU busy"].status == "skipped"


@pytest.mark.parametrize("nvml", ["missing", "no driver"])
def test_no_gpu_line_on_a_machine_without_a_gpu(monkeypatch, nvml):
    """No GPU: no "GPU busy" line at all, and no advice to install nvidia-ml-py."""
    def no_driver():
        raise RuntimeError("NVML Shared Library Not Found")
    monkeypatch.setitem(sys.modules, "pynvml",
                        None if nvml == "missing" else types.SimpleNamespace(nvmlInit=no_driver))
    monkeypatch.setattr(doctor, "_gpu_device_present", lambda: False)
    monkeypatch.setattr(doctor_measure, "_gpu_device_present", lambda: False)
    for step_fn in (lambda x: None, None):
        result = run(tf.data.Dataset.range(10), steps=4, step_fn=step_fn)
        assert "GPU busy" not in [c.name for c in result.checks]
        assert "GPU" not in str(result) and "nvidia-ml-py" not in str(result)


@pytest.mark.parametrize("busy,status", [(95, "ok"), (40, "warn")])
def test_gpu_utilisation_from_nvml(monkeypatch, busy, status):
    fake = types.SimpleNamespace(
        nvmlInit=lambda: None, nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: f"gpu{i}",
        nvmlDeviceGetComputeRunningProcesses=lambda h: [types.SimpleNamespace(pid=os.getpid())],
        nvmlDeviceGetUtilizationRates=lambda h: types.SimpleNamespace(gpu=busy))
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    result = run(tf.data.Dataset.range(100), steps=8, step_fn=lambda x: time.sleep(0.05))
    check = result["GPU busy"]
    assert check.status == status and check.measured == pytest.approx(busy / 100)
    assert bool(check.remedy) == (status == "warn")


def test_the_gpu_line_shows_the_device_stages_copies(monkeypatch):
    from conveyor.data.experimental import prefetch_to_device
    fake = types.SimpleNamespace(
        nvmlInit=lambda: None, nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: f"gpu{i}",
        nvmlDeviceGetComputeRunningProcesses=lambda h: [types.SimpleNamespace(pid=os.getpid())],
        nvmlDeviceGetUtilizationRates=lambda h: types.SimpleNamespace(gpu=90))
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    ds = tf.data.Dataset.range(4000).batch(100).apply(prefetch_to_device("host", 2))
    detail = run(ds, steps=8, step_fn=lambda x: time.sleep(0.01))["GPU busy"].detail
    assert "prefetch_to_device" in detail and "GB/s over the bus" in detail, detail
    assert "batches built in page-locked memory" in detail and "0 staged" in detail, detail


def test_a_gpu_whose_driver_does_not_answer_is_skipped_with_the_reason(monkeypatch):
    def no_driver():
        raise RuntimeError("NVML Shared Library Not Found")
    monkeypatch.setitem(sys.modules, "pynvml", types.SimpleNamespace(nvmlInit=no_driver))
    monkeypatch.setattr(doctor_measure, "_gpu_device_present", lambda: True)
    result = run(tf.data.Dataset.range(10), steps=4, step_fn=lambda x: None)
    check = result["GPU busy"]
    assert check.status == "skipped" and "NVML Shared Library Not Found" in check.detail


def test_ram_and_descriptors_against_their_limits(monkeypatch):
    ds = tf.data.Dataset.range(50).interleave(lambda i: tf.data.Dataset.range(3),
                                              cycle_length=4, num_parallel_calls=2).prefetch(3)
    result = run(ds, steps=5)
    assert result["peak RAM"].status == "ok" and result["open descriptors"].status == "ok"
    # a machine with little RAM and a low `ulimit -n`
    fds = doctor._open_descriptors()
    monkeypatch.setattr(doctor.resource, "getrlimit", lambda which: (fds, fds))
    result = run(ds, steps=5, ram_limit=doctor._rss())
    ram, files = result["peak RAM"], result["open descriptors"]
    assert ram.status == "warn" and ram.measured > 0.7
    assert "a smaller prefetch (buffer_size now 3)" in ram.remedy
    assert "a lower cycle_length" in ram.remedy
    assert files.status == "warn" and "ulimit -n" in files.remedy


# -- the result -------------------------------------------------------------------------


def test_the_result_prints_and_serialises():
    result = run(tf.data.Dataset.range(30).map(lambda x: x + 1, num_parallel_calls=2), steps=5)
    text = str(result)
    for name in ("identical output", "speedup", "bottleneck", "input-bound", "peak RAM",
                 "open descriptors", "determinism"):
        assert name in text
    assert ("GPU busy" in text) == doctor._gpu_device_present()
    data = json.loads(result.to_json())
    assert [c["name"] for c in data["checks"]] == [c.name for c in result.checks]
    assert data["steps"] == 5 and data["stages"][0]["name"] == "RangeDataset"
    assert {c["status"] for c in data["checks"]} <= {"ok", "warn", "fail", "skipped"}


def test_it_prints_unless_quiet(capsys):
    diagnose(tf.data.Dataset.range(10), steps=3, stage_seconds=0.2)
    assert "conveyor pipeline doctor" in capsys.readouterr().out


def test_bad_arguments():
    with pytest.raises(TypeError, match="Dataset or a function"):
        diagnose([1, 2, 3], quiet=True)
    with pytest.raises(ValueError, match="steps"):
        diagnose(tf.data.Dataset.range(3), steps=1, quiet=True)
    with pytest.raises(TypeError, match="not a Dataset"):
        diagnose(lambda: [1], quiet=True)


# -- the command line -------------------------------------------------------------------

SCRIPT = """
import time
import numpy as np
import conveyor as tf

def make_dataset():
    return tf.data.Dataset.range(100).map(lambda x: x * 2, num_parallel_calls=2).batch(4)

def make_noisy():
    return tf.data.Dataset.range(100).map(
        lambda x: tf.numpy_function(lambda v: v + np.random.randint(1, 10**6), [x], tf.int64))
"""


def cli(args, cwd):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "conveyor.doctor", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env=env)


def test_command_line_with_a_script(tmp_path):
    (tmp_path / "pipeline.py").write_text(textwrap.dedent(SCRIPT))
    done = cli([str(tmp_path / "pipeline.py") + ":make_dataset", "--steps", "5"], ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "conveyor pipeline doctor" in done.stdout and "BatchDataset" in done.stdout
    assert "RuntimeWarning" not in done.stderr

    done = cli([str(tmp_path / "pipeline.py") + ":make_noisy", "--steps", "4", "--json"], ROOT)
    assert done.returncode == 1, done.stdout + done.stderr  # a check failed
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["determinism"]["status"] == "fail"


def test_command_line_with_a_module_and_a_step_time(tmp_path):
    (tmp_path / "mypipeline.py").write_text(textwrap.dedent(SCRIPT))
    done = cli(["mypipeline:make_dataset", "--steps", "5", "--step-time", "0.01", "--json"],
               tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["input-bound"]["status"] == "ok"
    done = cli(["mypipeline:nothing_here"], tmp_path)
    assert done.returncode == 2 and "no function 'nothing_here'" in done.stderr
    done = cli(["no_colon_here"], tmp_path)
    assert done.returncode == 2


# -- the bottleneck from the engine's statistics --------------------------------------


def _raw(ds, ctx, nodes):
    """Engine statistics for `ds` as _engine.Iterator.stats() gives them: `nodes`
    root first, (stage position in doctor._stages, parent, fields)."""
    stages = doctor._stages(ds)
    out = []
    for pos, parent, fields in nodes:
        node = dict(dataset=id(stages[pos]._engine(ctx)), parent=parent, inner=False,
                    max_parallelism=0, parallelism=0, busy_ns=0, input_ns=0, wait_ns=0)
        node.update(fields)
        out.append(node)
    return {"nodes": out}


def test_the_engine_bottleneck_follows_the_waits_down_and_splits_sequential_stages():
    def f(x):
        return x + 1
    ds = (tf.data.Dataset.range(10).map(f).map(lambda x: x * 2, num_parallel_calls=2)
          .prefetch(1))
    ctx = ds._context()
    rates = [doctor.StageRate(i, doctor.stage_name(s), added=a)
             for i, (s, a) in enumerate(zip(doctor._stages(ds), [0.0, 0.005, 0.001, 0.0]))]
    par = dict(max_parallelism=2, parallelism=2)
    s = 10**9

    def nodes(map_busy):
        return [(3, -1, dict(max_parallelism=1, parallelism=1, input_ns=s, wait_ns=s)),
                (2, 0, dict(par, busy_ns=map_busy, input_ns=int(1.5 * s), wait_ns=int(0.9 * s))),
                (1, 1, {}), (0, 2, {})]
    # the map's turns spend most of their time pulling through the sequential map(f)
    pos, why = doctor.engine_bottleneck(ds, ctx, _raw(ds, ctx, nodes(s // 5)), 1.0, rates)
    assert pos == 1 and "sequential stages" in why and "ParallelMapDataset" in why
    # its own work outweighs its input: the parallel map itself
    pos, why = doctor.engine_bottleneck(ds, ctx, _raw(ds, ctx, nodes(4 * s)), 1.0, rates)
    assert pos == 2 and "its consumer waited" in why
    # no parallel stage: the engine has no times, the prefix timing decides
    seq = [(3, -1, {}), (2, 0, {}), (1, 1, {}), (0, 2, {})]
    assert doctor.engine_bottleneck(ds, ctx, _raw(ds, ctx, seq), 1.0, rates) == (None, "")


def test_a_map_fused_with_its_batch_is_named_as_the_map():
    # map_and_batch_fusion runs the map's work in the batch's engine stage: the
    # engine's statistics point at the batch, the verdict names the map.
    ds = (tf.data.Dataset.range(400).map(sleeping(0.02, "slow_fused"), num_parallel_calls=2)
          .batch(4).prefetch(2))
    result = run(ds, steps=6)
    check = result["bottleneck"]
    assert result.bottleneck == "ParallelMapDataset(slow_fused)", str(result)
    assert "map_and_batch_fusion" in check.detail and "slow_fused" in check.remedy


def test_it_names_a_planted_slow_parallel_stage_from_the_engine_statistics():
    ds = (tf.data.Dataset.range(400).map(sleeping(0.02, "slow_parallel"), num_parallel_calls=2)
          .map(lambda x: x + 1).batch(4).prefetch(2))
    result = run(ds, steps=8)
    check = result["bottleneck"]
    assert result.bottleneck == "ParallelMapDataset(slow_parallel)", str(result)
    assert check.status == "warn" and "engine statistics" in check.detail


# -- figures and advice a newcomer can trust --------------------------------------------


def test_no_stage_time_is_negative_and_an_overlap_says_why():
    """A prefetch over a slow Python stage makes its prefix faster than its input alone:
    the stage adds 0 (never a negative time), and the table says why."""
    ds = (tf.data.Dataset.range(400).map(sleeping(0.01, "load")).batch(4)
          .map(lambda x: x * 2).prefetch(8))
    result = run(ds, steps=8, step_fn=lambda x: time.sleep(0.02))
    for stage in result.stages:
        assert stage.added is None or stage.added >= 0, stage
        assert stage.share is None or stage.share >= 0, stage
        assert stage.overlap >= 0
    text = str(result)
    assert not re.search(r"(?<![\w-])-\d", text), text  # no negative number anywhere
    for stage in result.stages:
        if stage.overlap > 0:
            assert "overlaps work upstream, so it adds none" in text


def test_overlap_is_reported_when_the_prefix_runs_faster(monkeypatch):
    """The clamp itself: a prefix timed faster than its input gives added 0 and overlap."""
    class FakeRun:  # the source's prefix takes 10 ms an element, the map's prefix 4 ms
        def __init__(self, build, *a, **k):
            self.count, self.wall = 5, 1.0
            self.seconds = 0.004 if build.dataset is ds else 0.010

        def rate(self):
            return 1 / self.seconds

    monkeypatch.setattr(doctor, "_iterate", FakeRun)
    ds = tf.data.Dataset.range(100).map(lambda x: x + 1)
    ctx = DerivedContext(ds._context(), object(), False)
    stages = doctor.stage_rates(ds, ctx, steps=4, seconds=0.1)
    assert stages[1].added == 0.0 and stages[1].overlap > 0
    result = doctor.Diagnosis("p", 4, [], stages)
    assert "overlaps work upstream" in str(result)
    assert not re.search(r"(?<![\w-])-\d", str(result))


def test_units_name_batches_for_a_batched_pipeline():
    batched = run(tf.data.Dataset.range(100).map(lambda x: x + 1, num_parallel_calls=2)
                  .batch(4), steps=5)
    assert batched.unit == "batches"
    text = str(batched)
    assert "5 batches per run" in text and "per batch of the pipeline" in text
    assert "batches/s" in batched["speedup"].detail
    assert "batches" in batched["identical output"].detail
    plain = run(tf.data.Dataset.range(100).map(lambda x: x + 1, num_parallel_calls=2), steps=5)
    assert plain.unit == "elements" and "5 elements per run" in str(plain)


def test_no_parallelism_advice_for_a_map_that_has_autotune():
    ds = (tf.data.Dataset.range(200)
          .map(lambda x: x * 2, num_parallel_calls=tf.data.AUTOTUNE).prefetch(2))
    ctx = DerivedContext(ds._context(), object(), False)
    remedy = doctor._stage_remedy(ds.inputs()[0], ctx)
    assert "already has num_parallel_calls=AUTOTUNE" in remedy
    assert "parallelism up" not in remedy
    fixed = tf.data.Dataset.range(10).map(lambda x: x + 1, num_parallel_calls=1)
    assert "num_parallel_calls=AUTOTUNE (now 1" in doctor._stage_remedy(
        fixed, DerivedContext(fixed._context(), object(), False))
