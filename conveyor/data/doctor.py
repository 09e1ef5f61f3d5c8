"""The pipeline doctor: the checks the field runs on an input pipeline before
a training run, as one call (``conveyor.data.experimental.diagnose``) or one
command (``python -m conveyor.doctor script.py:make_dataset``).

It runs the pipeline a few times for `steps` elements and prints a verdict
table: identical output and speedup against a *baseline* (the same pipeline
with every parallel stage sequential and every prefetch a pass-through, built
by ``DerivedContext(..., sequential=True)`` in data/options.py), the stage
that costs the most, the input-bound fraction of a training step, whether
a pipeline that reads remote objects waits on storage (only then), peak RSS
against the machine's or cgroup's RAM, open descriptors against ``ulimit -n``,
determinism across two fresh builds, and GPU utilisation (NVML) when a GPU is
there. Every check that does not pass says what to change.

Every run uses engine datasets of its own (a fresh ``DerivedContext``), never
the user's, and the doctor drops them when it is done. Given a factory instead
of a Dataset, the doctor builds the pipeline anew for each run (with the
global seed state it found), so "two runs" means two builds as two training
processes would make them, and it can check whether a seed makes them agree.

The bottleneck comes from the engine's per-stage statistics of the timed
run (:func:`engine_bottleneck`: which parallel stage kept its consumer
waiting, and whether the time went into its own work or into the sequential
stages it runs). The engine does not time sequential stages one by one (that
would cost a clock read per element), so each prefix of the pipeline is also
timed alone (the classic tf.data method, :func:`stage_rates`): that fills
the per-stage table, picks the stage among sequential ones, and is the
answer when no stage is parallel.

How a run is timed and digested, and how the machine is sampled while it
goes: conveyor/data/doctor_measure.py.
"""
import argparse
import collections
import dataclasses
import importlib
import importlib.util
import json
import math
import os
import resource
import sys
import textwrap
import time

import numpy as np

from conveyor import _engine
from conveyor.framework import progress as _progress
from conveyor.framework import random_seed as _seed
from conveyor import errors as _errors
from conveyor.data.ops.dataset_base import Dataset
from conveyor.data.options import DerivedContext
from conveyor.data.doctor_measure import (_Build, _contained, _gpu_device_present,  # noqa: F401
                                          _iterate, _IoWindow, _nvml, _open_descriptors,
                                          _rss, _Sampler, STORAGE_CPU_BUSY, storage_verdict,
                                          device_copies)

__all__ = ["diagnose", "Diagnosis", "Check", "StageRate", "stage_rates", "engine_bottleneck"]

OK, WARN, FAIL, SKIPPED = "ok", "warn", "fail", "skipped"

# The field's thresholds.
RAM_WARN = 0.70          # peak RSS / RAM limit
FD_WARN = 0.70           # open descriptors / ulimit -n
INPUT_BOUND_OK = 0.10    # time in next() / step time: healthy under 10%
INPUT_BOUND_FAIL = 0.50  # the step waits on input more than it computes
GPU_BUSY = 0.80          # NVML utilisation
SPEEDUP_WARN = 0.9       # parallel pipeline slower than its sequential form

# Sources whose output differs between builds unless seeded.
_RANDOM_SOURCES = ("ShuffleDataset", "RandomDataset", "SampleChoiceDataset")
_ORDER = ("identical output", "speedup", "bottleneck", "input-bound", "storage-bound",
          "peak RAM", "open descriptors", "determinism", "GPU busy")
_DETAIL_WIDTH = 64  # the verdict table's "measured" column wraps here


# -- the result -------------------------------------------------------------------


@dataclasses.dataclass
class Check:
    """One line of the verdict: `status` is "ok", "warn", "fail" or "skipped";
    `measured` the number (or name) measured, `threshold` what passes,
    `detail` the sentence shown, `remedy` what to change (empty when ok)."""
    name: str
    status: str
    measured: object = None
    threshold: str = ""
    detail: str = ""
    remedy: str = ""


@dataclasses.dataclass
class StageRate:
    """One stage of the pipeline, measured alone (its prefix: the stage and
    everything upstream). `rate`: its own elements per second; `per_output`:
    its elements per element of the whole pipeline (batch sizes and the like;
    `approximate` when a filter or interleave makes it unknown);
    `seconds_per_output`: the prefix's time per pipeline element; `added`:
    what this stage adds to that, never negative; `overlap`: when the prefix ran
    faster than its input alone (a prefetch or parallel stage overlapping work
    upstream, or timing noise), by how much; `added` is then 0; `share`: its
    part of all stages' added time."""
    position: int
    name: str
    rate: float = None
    per_output: float = 1.0
    seconds_per_output: float = None
    added: float = None
    share: float = None
    approximate: bool = False
    overlap: float = 0.0


@dataclasses.dataclass
class Diagnosis:
    """What :func:`diagnose` found: ``str()`` is the verdict table, ``to_dict()``
    and ``to_json()`` are for logs, ``diagnosis["speedup"]`` is one check."""
    pipeline: str
    steps: int
    checks: list
    stages: list
    bottleneck: str = None
    #: the bottleneck's position in ``stages`` (two stages may share a name)
    bottleneck_position: int = None
    #: "batches" when each element of the pipeline groups several of its source's (batch,
    #: window), else "elements"; the table's figures are per one of these
    unit: str = "elements"

    def __getitem__(self, name):
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    @property
    def ok(self):
        """No check failed (warnings and skipped checks allowed)."""
        return all(c.status != FAIL for c in self.checks)

    def to_dict(self):
        return dataclasses.asdict(self)

    def to_json(self, **kwargs):
        return json.dumps(self.to_dict(), default=_jsonable, **kwargs)

    def __str__(self):
        heads = ("check", "status", "measured", "passes when")
        rows = [(c.name, c.status.upper() if c.status in (WARN, FAIL) else c.status,
                 textwrap.wrap(c.detail, _DETAIL_WIDTH) or [""], c.threshold)
                for c in self.checks]
        w0 = max(len(r[0]) for r in rows + [heads])
        w2 = max([len(x) for r in rows for x in r[2]] + [len(heads[2])])
        line = lambda a, b, c, d: f"{a:<{w0}}  {b:<7}  {c:<{w2}}  {d}".rstrip()  # noqa: E731
        out = [f"conveyor pipeline doctor: {self.pipeline}",
               f"{self.steps} {self.unit} per run; baseline: the same pipeline with "
               "parallelism and prefetch removed", "", line(*heads),
               line("-" * w0, "-" * 7, "-" * w2, "-" * 11)]
        for name, status, detail, threshold in rows:
            out.append(line(name, status, detail[0], threshold))
            out += [line("", "", more, "") for more in detail[1:]]
        if self.stages:
            out += ["", f"stages, source first (time each adds per {_one(self.unit)} of the "
                        "pipeline):"]
            for s in self.stages:
                if s.added is None:
                    out.append(f"  {s.position:2d} {s.name}: not measured")
                    continue
                mark = "  <- bottleneck" if s.position == self.bottleneck_position else ""
                approx = " (approx.)" if s.approximate else ""
                out.append(f"  {s.position:2d} {s.name:<40} {_ms(s.added):>10} "
                           f"{s.share:4.0%}{approx}{mark}")
                if s.overlap > 0:
                    out.append(f"  {'':2} {'':<40} (0: with it the pipeline ran "
                               f"{_ms(s.overlap)} faster than without it; it overlaps work "
                               "upstream, so it adds none)")
        fixes = [c for c in self.checks if c.remedy]
        if fixes:
            out += ["", "what to change:"]
            out += [f"  {c.name}: {c.remedy}" for c in fixes]
        return "\n".join(out)


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    return str(x)


def _one(unit):
    """'batches' -> 'batch', 'elements' -> 'element'."""
    return {"batches": "batch"}.get(unit, unit[:-1])


def _unit(dataset, ctx):
    """What an element of `dataset` is, in words: "batches" when each holds several of its
    source's elements (batch, padded_batch, window), else "elements"."""
    factor = _per_output(_stages(dataset), ctx)
    return "batches" if max(f for f, _ in factor.values()) > 1 else "elements"


def _ms(seconds):
    ms = seconds * 1e3
    if abs(seconds) >= 1:
        return f"{seconds:.2f} s"
    return f"{ms:.3f} ms" if abs(ms) < 1 else f"{ms:.1f} ms"


def _rate(per_second):
    return f"{per_second:,.0f}" if per_second >= 100 else f"{per_second:.3g}"


def _mib(n):
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


# -- the pipeline graph -------------------------------------------------------------


def _stages(dataset):
    """Every dataset of the pipeline, inputs before the datasets that read them."""
    order, seen = [], set()

    def visit(ds):
        if id(ds) in seen:
            return
        seen.add(id(ds))
        for i in ds.inputs():
            visit(i)
        order.append(ds)
    visit(dataset)
    return order


def _func_name(f):
    return getattr(f, "__name__", type(f).__name__)


def stage_name(ds):
    """A stage as the repr names it: TensorFlow's class name and the user's function."""
    names = [_func_name(f.map_func) for f in ds._functions()]
    if not names and getattr(ds, "_map_func", None) is not None:
        names = [_func_name(ds._map_func)]
    return f"{type(ds).__name__}({', '.join(names)})" if names else type(ds).__name__


def _class_names(ds):
    return {c.__name__ for c in type(ds).__mro__}


def _inputs_per_output(ds, ctx):
    """(input elements per element of `ds`, exact?) for a one-input stage."""
    size = getattr(ds, "_batch_size", None)  # batch, padded_batch
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool) and size > 0:
        return float(size), True
    names = _class_names(ds)
    if "ShardDataset" in names:
        return float(ds.arg("num_shards")), True
    if names & {"FilterDataset", "UnbatchDataset", "RebatchDataset", "WindowDataset",
                "GroupByWindowDataset", "InterleaveDataset"}:
        try:
            out = int(ds._engine(ctx).cardinality())
            inp = int(ds.inputs()[0]._engine(ctx).cardinality())
        except Exception:  # noqa: BLE001 - a guess only
            return 1.0, False
        if out > 0 and inp > 0:
            return inp / out, True
        return 1.0, False
    return 1.0, True


def _per_output(stages, ctx):
    """{id(stage): (its elements per pipeline element, exact?)}."""
    factor = {id(stages[-1]): (1.0, True)}
    for ds in reversed(stages):
        f, exact = factor[id(ds)]
        ratio, known = (_inputs_per_output(ds, ctx) if len(ds.inputs()) == 1 else (1.0, True))
        for i in ds.inputs():
            old = factor.get(id(i), (0.0, True))
            factor[id(i)] = (max(old[0], f * ratio), old[1] and exact and known)
    return factor


def _is_parallel(ds, ctx):
    names = _class_names(ds)
    return bool(getattr(ds, "_parallelism", None)) or "PrefetchDataset" in names or (
        "BatchDataset" in names and ctx.parallel_batch)


def _deterministic_false(ds, ctx):
    own = getattr(ds, "_deterministic", None)
    return bool(getattr(ds, "_parallelism", None)) and (
        own is False or (own is None and not ctx.deterministic))


# -- per-stage rates ------------------------------------------------------------------


def stage_rates(dataset, ctx, steps, seconds=1.0, on_stage=None):
    """[StageRate] for every stage of `dataset` built under `ctx`, source first.

    The classic tf.data method: each prefix of the pipeline (a stage and what
    feeds it) runs alone for as many elements as `steps` elements of the whole
    pipeline need (batch sizes multiply), or about `seconds`; a stage's cost is the
    time its prefix takes per pipeline element minus its inputs' (the slowest
    input, for zip). The engine's per-stage statistics can replace this.
    `on_stage(name)`: called before each stage is timed (a progress bar).
    """
    stages = _stages(dataset)
    factor = _per_output(stages, ctx)
    results, by_id = [], {}
    for pos, ds in enumerate(stages):
        per_output, exact = factor[id(ds)]
        if on_stage is not None:
            on_stage(stage_name(ds))
        r = StageRate(pos, stage_name(ds), per_output=per_output, approximate=not exact)
        inputs = [by_id[id(i)] for i in ds.inputs()]
        if len(ds.inputs()) == 1 and ds._engine(ctx) is ds.inputs()[0]._engine(ctx):
            r.rate = inputs[0].rate  # a pass-through (with_options): nothing of its own
            r.seconds_per_output = inputs[0].seconds_per_output
        else:
            n = max(3, int(math.ceil(steps * per_output)))
            probe = _iterate(_Build(ds, ctx), min(n, 5))  # about how long one takes
            if probe.count > 1 and probe.wall > 0:
                n = min(n, max(3, int(seconds * (probe.count - 1) / probe.wall)))
            run = _iterate(_Build(ds, ctx), n)
            r.rate = run.rate()
            if r.rate:
                r.seconds_per_output = per_output / r.rate
        if r.seconds_per_output is not None:
            upstream = [i.seconds_per_output for i in inputs if i.seconds_per_output is not None]
            added = r.seconds_per_output - max(upstream, default=0.0)
            # A prefix can run faster than its input alone (a prefetch or parallel stage
            # overlaps the work upstream): the stage adds nothing, and the table says why.
            r.added, r.overlap = max(0.0, added), max(0.0, -added)  # 0.0 first: never -0.0
        results.append(r)
        by_id[id(ds)] = r
    total = sum(r.added for r in results if r.added is not None)
    for r in results:
        if r.added is not None:
            r.share = r.added / total if total > 0 else 0.0
    return results


# -- the bottleneck from the engine's statistics -----------------------------------------


def engine_bottleneck(dataset, ctx, raw, next_seconds, rates):
    """(position of the bottleneck stage in ``_stages(dataset)``, evidence) from
    the engine's statistics `raw` of a run of `dataset` built under `ctx`, in
    which the consumer spent `next_seconds` in next(); (None, "") when no stage
    is parallel (the engine times parallel stages only). `rates`: stage_rates()
    of the same pipeline, to choose among sequential stages.

    From the consumer down: a parallel stage's turns spend their time in its
    own work (busy, shared by its parallel turns), in the sequential stages
    below it (run on its turns: its pulling time less its waits), or waiting
    for a parallel stage below (that stage's ``starved`` time). The largest
    share decides: its own work names it, the sequential stages name the
    one of them whose prefix adds the most, and a wait moves down to the
    stage waited for.
    """
    nodes = raw["nodes"]
    stages = _stages(dataset)
    position = {}
    for pos, ds in enumerate(stages):  # a pass-through shares its input's handle: the input
        position.setdefault(id(ds._engine(ctx)), pos)
    pos_of = [position.get(n["dataset"]) for n in nodes]
    kids = collections.defaultdict(list)
    for i, n in enumerate(nodes):
        if n["parent"] >= 0 and not n["inner"]:
            kids[n["parent"]].append(i)

    def below(i):
        """Sequential nodes run on i's turns, and the parallel nodes they pull from."""
        chain, parallel, todo = [], [], list(kids[i])
        while todo:
            j = todo.pop()
            if nodes[j]["max_parallelism"] > 0:
                parallel.append(j)
            else:
                chain.append(j)
                todo.extend(kids[j])
        return chain, parallel

    if not any(n["max_parallelism"] > 0 for n in nodes):
        return None, ""

    def chosen(chain, why):
        """The sequential stage of `chain` whose prefix adds the most."""
        measured = [(rates[pos_of[j]].added, pos_of[j]) for j in chain
                    if pos_of[j] is not None and rates[pos_of[j]].added is not None]
        return (max(measured)[1], why) if measured else (None, "")

    # The consumer's thread first: the sequential stages at the top, then
    # one parallel stage at a time, down the longest waits.
    i, own, pulled, evidence = None, 0.0, next_seconds, ""
    if nodes[0]["max_parallelism"] > 0:
        chain, parallel = [], [0]
    else:
        chain, parallel = below(0)
        chain.append(0)
    while True:
        waited = max(parallel, key=lambda j: nodes[j]["wait_ns"], default=None)
        wait = nodes[waited]["wait_ns"] / 1e9 if waited is not None else 0.0
        serial = max(pulled - wait, 0.0)  # in the sequential stages run on these turns
        if waited is not None and wait > 0 and wait >= max(own, serial):
            i, n = waited, nodes[waited]
            own, pulled = n["busy_ns"] / 1e9 / max(1, n["parallelism"]), n["input_ns"] / 1e9
            evidence = f"its consumer waited {_ms(wait)} for it in the run"
            chain, parallel = below(i)
            continue
        if i is None:  # the time went into the stages on the consumer's own thread
            return chosen(chain, "engine statistics: the consumer's next() spent "
                                 f"{_ms(serial)} in the sequential stages above every parallel "
                                 "one; this one adds the most of them, timed alone")
        if own >= serial or not chain:
            return pos_of[i], "engine statistics: " + (
                evidence or f"its own work ({_ms(own)}: busy time / parallelism) outweighed "
                            "its input in the run")
        return chosen(chain, f"engine statistics: the turns of {_names_of(stages, pos_of, i)} "
                             f"spent {_ms(serial)} in the sequential stages they run; this one "
                             "adds the most of them, timed alone")


def _names_of(stages, pos_of, i):
    pos = pos_of[i]
    return stage_name(stages[pos]) if pos is not None else "a stage"


# -- the doctor -------------------------------------------------------------------------


class _Doctor:
    def __init__(self, target, steps, step_fn, seed, ram_limit, stage_seconds, progress=None):
        if isinstance(target, Dataset):
            self.factory, self.dataset = None, target
        elif callable(target):
            self.factory, self.dataset = target, None
        else:
            raise TypeError(f"diagnose() needs a Dataset or a function returning one, "
                            f"got {type(target).__name__}.")
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 2:
            raise ValueError(f"steps must be an int >= 2, got {steps!r}.")
        self.steps, self.step_fn, self.seed = int(steps), step_fn, seed
        self.ram_limit = ram_limit or _engine.process_memory_limit()
        self.stage_seconds = stage_seconds
        self.progress = progress  # the bar's switch for this call (None: conveyor's switch)
        self.bar = _progress.Silent()  # until run()
        self.seed_state = _seed.get_state()
        self.built = []  # (dataset, ctx) of every build, dropped at the end
        self.errors = []  # raised by the runs
        self.unit = "elements"  # or "batches", once the first build shows which

    # builds

    def build(self, sequential=False, seeded=False, like=None):
        """A fresh build: the user's dataset under a new context, or a new
        dataset from the factory (with the global seed state the doctor found,
        or the doctor's seed). `like`: another context of the same dataset."""
        if like is not None:
            ds = like.dataset
        elif self.factory is None:
            ds = self.dataset
        else:
            if seeded:
                _seed.set_seed(self.seed)
            else:
                _seed.set_state(self.seed_state)
            try:
                ds = self.factory()
            finally:
                _seed.set_state(self.seed_state)
            if not isinstance(ds, Dataset):
                raise TypeError(f"the factory returned {type(ds).__name__}, not a Dataset.")
        ctx = DerivedContext(ds._context(), object(), sequential)
        self.built.append((ds, ctx))
        return _Build(ds, ctx)

    def forget(self):
        """Drop the doctor's engine datasets from the build caches."""
        for ds, ctx in self.built:
            for stage in _stages(ds):
                stage._forget_engine(ctx)
        self.built.clear()
        _seed.set_state(self.seed_state)

    def first_difference(self, a, b):
        """The first stage (source first) whose output differs between builds
        `a` and `b`: (stage, order_only), or (None, False)."""
        stages_a, stages_b = _stages(a.dataset), _stages(b.dataset)
        if [type(s) for s in stages_a] != [type(s) for s in stages_b]:
            return None, False
        factor = _per_output(stages_a, a.ctx)
        for sa, sb in zip(stages_a, stages_b):
            n = min(max(2, int(math.ceil(self.steps * factor[id(sa)][0]))), 50_000)
            # Twice as many, to tell a reordering stage: the first n elements of
            # one run are among the first 2n of the other (a stage that completes
            # out of order delays elements, it does not bring far ones forward).
            ra = _iterate(_Build(sa, a.ctx), 2 * n, digest=True).digests
            rb = _iterate(_Build(sb, b.ctx), 2 * n, digest=True).digests
            if ra[:n] != rb[:n]:
                return sa, _contained(ra[:n], rb) or _contained(rb[:n], ra)
        return None, False

    def iterate(self, build, steps, phase="run", **kwargs):
        """_iterate, keeping the first error of each kind for the RAM and
        descriptor checks; one unit of the progress bar."""
        bar, tick = self.bar, None
        if not isinstance(bar, _progress.Silent):
            if bar.n >= bar.total:  # a run the plan did not count (determinism's)
                bar.total = bar.n + 1
            bar.set_description_str(f"doctor: {phase}", refresh=False)
            last = [0.0]

            def tick(count):  # at most 5 redraws a second, so timing stays the pipeline's
                now = time.monotonic()
                if now - last[0] >= 0.2 or count == steps:
                    last[0] = now
                    bar.set_postfix_str(f"{count}/{steps} {self.unit}")
        run = _iterate(build, steps, tick=tick, **kwargs)
        bar.update(1)
        if run.error is not None:
            self.errors.append(run.error)
        return run

    def error(self, kind):
        return next((e for e in self.errors if kind(e)), None)

    # the checklist

    def run(self):
        sampler = _Sampler()
        # The bar counts runs of the whole pipeline (4, 5 with a step_fn, more when
        # determinism looks closer) and then the stages timed one by one.
        plan = 4 + (self.step_fn is not None)
        self.bar = _progress.bar(plan, "doctor", " runs", self.progress, leave=False)
        try:
            return self._run(sampler)
        finally:
            self.bar.close()
            self.bar = _progress.Silent()
            sampler.stop()

    def _run(self, sampler):
        steps = self.steps
        a = self.build()
        self.pipeline = repr(a.dataset)
        self.unit = _unit(a.dataset, a.ctx)
        run_a = self.iterate(a, steps, "first build", digest=True)
        checks = {}
        if run_a.error is not None:
            return self._failed(run_a, sampler)
        # Determinism: two fresh builds, as two runs of a training script.
        b = self.build()
        run_b = self.iterate(b, steps, "second build (determinism)", digest=True)
        s = self.build(sequential=True, like=a)
        run_s = self.iterate(s, steps, "baseline (sequential)", digest=True)
        checks["determinism"], compare = self.check_determinism(a, run_a, b, run_b, s, run_s)
        checks["identical output"] = self.check_identical(*(compare or ()))
        # Throughput: the pipeline (its own threads overlap the loop) vs the baseline.
        t = self.build(like=a)
        sampler.io = _IoWindow()
        run_t = self.iterate(t, steps, "timed run (speedup)")
        storage, sampler.io = storage_verdict(sampler.io.stop(), t.ctx.cpus()), None
        if storage is not None:  # the line only where the run read remote objects
            waiting, busy, detail, remedy = storage
            checks["storage-bound"] = Check("storage-bound", WARN if waiting else OK, busy,
                                            f"CPUs >= {STORAGE_CPU_BUSY:.0%} busy", detail, remedy)
        checks["speedup"] = self.check_speedup(t, run_t, run_s)
        # The GPU line only where a GPU is (_nvml() says (None, None) on a machine without).
        if self.step_fn is not None:
            gpu, why = _nvml()
            sampler.gpu = gpu
            try:
                run_f = self.iterate(self.build(like=a), steps, "with step_fn (input-bound)",
                                     step_fn=self.step_fn)
            finally:
                sampler.gpu = None
            checks["input-bound"] = self.check_input_bound(run_f, t)
            if gpu is not None or why is not None:
                checks["GPU busy"] = self.check_gpu(gpu, why, sampler, device_copies(run_f.stats))
        else:
            checks["input-bound"] = Check("input-bound", SKIPPED, threshold="< 10% of a step",
                                          detail="no step_fn (or --step-time) given")
            if _gpu_device_present():
                checks["GPU busy"] = Check("GPU busy", SKIPPED, threshold=">= 80%",
                                           detail="no step_fn: nothing runs on the GPU")
        if not isinstance(self.bar, _progress.Silent):
            self.bar.total = self.bar.n + len(_stages(t.dataset))
        self._stages_started = 0
        stages = stage_rates(t.dataset, t.ctx, steps, self.stage_seconds, self._on_stage)
        self.bar.update(1 if self._stages_started else 0)
        found = engine_bottleneck(t.dataset, t.ctx, run_t.stats, run_t.waiting, stages) \
            if run_t.stats is not None and run_t.error is None else (None, "")
        checks["bottleneck"], bottleneck = self.check_bottleneck(t, stages, checks["input-bound"],
                                                                 found)
        sampler.stop()
        checks["peak RAM"] = self.check_ram(sampler, t)
        checks["open descriptors"] = self.check_fds(sampler, t)
        return Diagnosis(self.pipeline, steps, [checks[k] for k in _ORDER if k in checks],
                         stages, bottleneck and bottleneck.name,
                         bottleneck and bottleneck.position, self.unit)

    def _on_stage(self, name):
        """stage_rates() starts timing a stage: the previous one is done."""
        if self._stages_started:
            self.bar.update(1)
        self._stages_started += 1
        self.bar.set_postfix_str("", refresh=False)
        self.bar.set_description_str(f"doctor: timing {name} alone")

    def _failed(self, run, sampler):
        """The pipeline raised before `steps` elements: the check it belongs to
        fails, the others cannot run."""
        sampler.stop()
        e = run.error
        why = f"the pipeline raised {type(e).__name__} at {_one(self.unit)} {run.count}"
        a = _Build(self.built[0][0], self.built[0][1])
        checks = {n: Check(n, SKIPPED, detail=why) for n in _ORDER
                  if n != "GPU busy" or _gpu_device_present()}
        checks["peak RAM"] = self.check_ram(sampler, a)
        checks["open descriptors"] = self.check_fds(sampler, a)
        checks = [checks[n] for n in _ORDER if n in checks]
        if all(c.status != FAIL for c in checks):
            checks.insert(0, Check("pipeline runs", FAIL, False, "no error", f"{why}: {e}",
                                   "fix the error (the message names the stage)"))
        return Diagnosis(self.pipeline, self.steps, checks, [], unit=self.unit)

    # the checks

    def check_determinism(self, a, run_a, b, run_b, s, run_s):
        """(Check, (baseline comparison args)): two fresh builds must agree."""
        threshold = "2 runs equal"
        n = run_a.count
        if run_a.digests == run_b.digests:
            return (Check("determinism", OK, True, threshold, f"2 runs equal ({n} {self.unit})"),
                    (a, run_a, s, run_s))
        stage, _ = self.first_difference(a, b)
        where = stage_name(stage) if stage is not None else "a stage"
        # Does the baseline differ between builds too? Then it is not parallelism.
        s2 = self.build(sequential=True, like=b)
        run_s2 = self.iterate(s2, self.steps, digest=True)
        if run_s.digests == run_s2.digests:
            return (Check("determinism", FAIL, False, threshold,
                          f"2 runs differ from {where} on (its parallel order)",
                          f"deterministic=True on {where} (or options.deterministic=True)"),
                    (a, run_a, s, run_s))
        if self.factory is not None:
            a2, b2 = self.build(seeded=True), self.build(seeded=True)
            run_a2 = self.iterate(a2, self.steps, digest=True)
            run_b2 = self.iterate(b2, self.steps, digest=True)
            s3 = self.build(sequential=True, like=a2)
            compare = (a2, run_a2, s3, self.iterate(s3, self.steps, digest=True))
            if run_a2.digests == run_b2.digests:
                return (Check("determinism", FAIL, False, threshold,
                              f"unseeded randomness: 2 runs differ from {where} on, and agree "
                              f"with conveyor.random.set_seed({self.seed})",
                              _SEED_REMEDY), compare)
        elif stage is not None and _class_names(stage) & set(_RANDOM_SOURCES):
            return (Check("determinism", FAIL, False, threshold,
                          f"unseeded randomness: 2 runs differ from {where} on", _SEED_REMEDY),
                    None)
        return (Check("determinism", FAIL, False, threshold,
                      f"2 runs differ from {where} on, also without parallelism",
                      _noise_remedy(stage, where)), None)

    def check_identical(self, a=None, run_a=None, s=None, run_s=None):
        name, threshold = "identical output", "equal to the baseline"
        if a is None:
            return Check(name, SKIPPED, threshold=threshold,
                         detail="the pipeline differs from run to run (see determinism), so "
                                "no baseline can match it")
        if run_s.error is not None:
            return Check(name, FAIL, False, threshold,
                         f"the baseline raised {type(run_s.error).__name__} at element "
                         f"{run_s.count}: {run_s.error}", "fix the error")
        n = min(len(run_a.digests), len(run_s.digests))
        same = sum(x == y for x, y in zip(run_a.digests, run_s.digests))
        if run_a.digests == run_s.digests:
            return Check(name, OK, True, threshold, f"{same} of {n} {self.unit} equal")
        if len(run_a.digests) != len(run_s.digests):
            return Check(name, FAIL, False, threshold,
                         f"{len(run_a.digests)} {self.unit} vs {len(run_s.digests)} in the baseline",
                         "report it: parallel and sequential stages must give the same elements")
        stage, order_only = self.first_difference(a, s)
        where = stage_name(stage) if stage is not None else "a stage"
        first = next(i for i, (x, y) in enumerate(zip(run_a.digests, run_s.digests)) if x != y)
        unordered = stage is not None and _deterministic_false(stage, a.ctx)
        what = "another order" if order_only or unordered else "other values"
        note = " (deterministic=False)" if unordered else ""
        if unordered:
            remedy = f"deterministic=True on {where} (or options.deterministic=True)"
        else:
            remedy = (f"{where} gives {what} on threads: its function must not depend on "
                      "call order or shared state")
        return Check(name, FAIL, first, threshold,
                     f"{what} from {where}{note} on; first difference at {_one(self.unit)} {first}",
                     remedy)

    def check_speedup(self, t, run_t, run_s):
        name, threshold = "speedup", f">= {SPEEDUP_WARN}x the baseline"
        fast, slow = run_t.rate(), run_s.rate(busy_only=True)
        if not fast or not slow:
            return Check(name, SKIPPED, threshold=threshold,
                         detail=f"too few {self.unit} to time (raise steps)")
        speedup = fast / slow
        detail = f"{speedup:.2f}x ({_rate(fast)} vs {_rate(slow)} {self.unit}/s)"
        if not any(_is_parallel(ds, t.ctx) for ds in _stages(t.dataset)):
            return Check(name, OK, speedup, threshold,
                         detail + ": no parallel stage or prefetch to remove")
        if speedup < SPEEDUP_WARN:
            return Check(name, WARN, speedup, threshold, detail,
                         "parallelism down: its threads cost more than they save here (fewer "
                         "num_parallel_calls on cheap stages, one prefetch at the end)")
        return Check(name, OK, speedup, threshold, detail)

    def check_input_bound(self, run_f, t):
        name, threshold = "input-bound", f"< {INPUT_BOUND_OK:.0%} of a step"
        if run_f.error is not None:
            return Check(name, FAIL, None, threshold,
                         f"{type(run_f.error).__name__}: {run_f.error}", "fix the error")
        total = run_f.waiting + run_f.stepping
        if run_f.count < 2 or total <= 0:
            return Check(name, SKIPPED, threshold=threshold, detail="too few steps")
        fraction = run_f.waiting / total
        detail = (f"{fraction:.0%} of each step in next() "
                  f"({_ms(run_f.waiting / (run_f.count - 1))} of "
                  f"{_ms(total / (run_f.count - 1))})")
        if fraction < INPUT_BOUND_OK:
            return Check(name, OK, fraction, threshold, detail)
        remedy = "speed up the bottleneck stage (see bottleneck)"
        top = t.dataset
        if "PrefetchDataset" not in _class_names(top):
            remedy += "; prefetch(AUTOTUNE) at the end, so input overlaps the step"
        return Check(name, FAIL if fraction >= INPUT_BOUND_FAIL else WARN, fraction, threshold,
                     detail, remedy)

    def check_gpu(self, gpu, why, sampler, copies=""):
        """copies: device_copies() of the run with step_fn, appended to the detail."""
        name, threshold = "GPU busy", f">= {GPU_BUSY:.0%}"
        if gpu is None:
            return Check(name, SKIPPED, threshold=threshold, detail="; ".join(filter(None, [why, copies])))
        means = [sum(v) / len(v) for v in sampler.gpu_samples.values() if v]
        if not means:
            return Check(name, SKIPPED, threshold=threshold, detail="no NVML sample (run longer)")
        busy = max(means)
        detail = "; ".join(filter(None, [f"{busy:.0%} busy during the steps", copies]))
        if busy >= GPU_BUSY:
            return Check(name, OK, busy, threshold, detail)
        return Check(name, WARN, busy, threshold, detail,
                     "if input-bound is high, the pipeline starves the GPU (fix the bottleneck); "
                     "otherwise the step itself leaves it idle (small batches, host work)")

    def check_bottleneck(self, t, stages, input_bound, found=(None, "")):
        """found: engine_bottleneck()'s (position, evidence); else the stage
        whose prefix adds the most time."""
        name = "bottleneck"
        measured = [s for s in stages if s.added is not None]
        position, evidence = found
        if position is not None:
            top = stages[position]
        elif measured:
            top = max(measured, key=lambda s: s.added)
        else:
            return Check(name, SKIPPED, detail="no stage produced enough elements"), None
        all_stages = _stages(t.dataset)
        ds, fused = all_stages[top.position], ""
        if ("BatchDataset" in _class_names(ds) and len(ds.inputs()) == 1
                and getattr(ds._engine(t.ctx), "kernel", "") == "MapAndBatch"):
            # map_and_batch_fusion: the batch's engine stage does the map's work too,
            # so the engine's view names the batch; the map is what to change.
            pos = next(i for i, x in enumerate(all_stages) if x is ds.inputs()[0])
            if stages[pos].added is not None:
                top, ds = stages[pos], all_stages[pos]
                fused = ", run as one stage with the batch after it (map_and_batch_fusion)"
        if top.added is not None:
            detail = (f"{top.name}: {top.share:.0%} of the time "
                      f"({_ms(top.added)} per {_one(self.unit)}){fused}")
        else:
            detail = top.name
        if evidence:
            detail += f"; {evidence}"
        remedy = _stage_remedy(ds, t.ctx)
        if input_bound.status == OK:
            return Check(name, OK, top.name, "", detail + "; the step does not wait on it"), top
        # the engine's view is of the real run: it needs no majority of the prefix times
        status = WARN if remedy and (evidence or (top.share or 0) >= 0.5) else OK
        return Check(name, status, top.name, "", detail, remedy if status == WARN else ""), top

    def check_ram(self, sampler, build):
        name = "peak RAM"
        threshold = f"<= {RAM_WARN:.0%} of {_mib(self.ram_limit)}"
        remedy = _ram_remedy(build)
        error = self.error(lambda e: isinstance(e, _errors.ResourceExhaustedError))
        if error is not None:
            return Check(name, FAIL, None, threshold, str(error), remedy)
        fraction = sampler.peak_rss / self.ram_limit
        detail = (f"{_mib(sampler.peak_rss)} RSS ({fraction:.0%}); pipeline buffers "
                  f"{_mib(sampler.peak_buffered)}")
        if fraction > RAM_WARN:
            return Check(name, WARN, fraction, threshold, detail, remedy)
        return Check(name, OK, fraction, threshold, detail)

    def check_fds(self, sampler, build):
        name = "open descriptors"
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        limit = None if soft == resource.RLIM_INFINITY else soft
        threshold = f"<= {FD_WARN:.0%} of ulimit -n ({limit or 'unlimited'})"
        remedy = _fd_remedy(build)
        error = self.error(lambda e: "Too many open files" in str(e))
        if error is not None:
            return Check(name, FAIL, None, threshold, str(error), remedy)
        fds = sampler.peak_fds
        if limit is None:
            return Check(name, OK, fds, threshold, f"{fds} open")
        fraction = fds / limit
        detail = f"{fds} of {limit} ({fraction:.0%})"
        if fraction > FD_WARN:
            return Check(name, WARN, fds, threshold, detail, remedy)
        return Check(name, OK, fds, threshold, detail)


# -- remedies -------------------------------------------------------------------------

_SEED_REMEDY = ("seed it: seed= on shuffle/list_files/random ops, or "
                "conveyor.random.set_seed(...) before building the pipeline")


def _noise_remedy(stage, where):
    if stage is not None and stage._functions():
        return (f"{where}'s function gives other values each run (np.random, random, time or "
                "shared state): draw randomness from conveyor.random ops, seeded per element")
    return f"{where} is not reproducible: check its inputs (files changing, unseeded randomness)"


def _stage_remedy(ds, ctx):
    names, where = _class_names(ds), stage_name(ds)
    fns = ds._functions()
    python = any(f.mode == "python" for f in fns)
    if "MapDataset" in names:
        n = getattr(ds, "_parallelism", None)
        if not n:
            tip = "map(..., num_parallel_calls=AUTOTUNE): run it on worker threads"
            if python:
                tip += (" (its function runs in Python: threads help while it releases the "
                        "GIL, as NumPy, I/O and sleep do; a function of conveyor ops runs "
                        "natively)")
            return f"parallelism up: {tip}"
        if python:
            return (f"{where} runs Python under the GIL ({fns[0].reason}): write it with "
                    "conveyor ops so it compiles, or cache() after it if its output fits in RAM")
        cache = "cache() right after it if its output is the same every epoch and fits"
        if n == -1 or n >= ctx.cpus():  # AUTOTUNE (-1) or every CPU already: no knob left
            now = "AUTOTUNE" if n == -1 else n
            return (f"{where} already has num_parallel_calls={now} on {ctx.cpus()} CPUs: "
                    f"make its function cheaper, or {cache}")
        return (f"parallelism up: num_parallel_calls=AUTOTUNE (now {n}, {ctx.cpus()} CPUs) "
                f"if CPUs are idle, or {cache}")
    if "FilterDataset" in names and python:
        return ("filter runs its Python predicate on one thread: compute it in a parallel map "
                "and filter on the result")
    if "InterleaveDataset" in names and not getattr(ds, "_parallelism", None):
        return ("parallelism up: interleave(..., num_parallel_calls=AUTOTUNE) reads files "
                "in parallel")
    if "GeneratorDataset" in names:
        return ("from_generator runs Python on one thread: move per-element work into a "
                "parallel map, or read record files with num_parallel_reads")
    if ds.inputs() and names & {"TFRecordDataset", "TextLineDataset",
                                                 "FixedLengthRecordDataset"}:
        return "num_parallel_reads=AUTOTUNE reads several files at once"
    return ""


def _knobs(build):
    """What in this pipeline holds RAM or descriptors: (prefetches, shuffles,
    interleaves, caches in memory, parallel stages)."""
    found = {"prefetch": [], "shuffle": [], "interleave": [], "cache": [], "parallel": []}
    for ds in _stages(build.dataset):
        names = _class_names(ds)
        if "PrefetchDataset" in names:
            found["prefetch"].append(ds._buffer_size)
        elif "ShuffleDataset" in names:
            found["shuffle"].append(ds.arg("buffer_size"))
        elif "InterleaveDataset" in names:
            found["interleave"].append(ds._cycle_length)
        elif "CacheDataset" in names and not getattr(ds, "_filename", ""):
            found["cache"].append(ds)
        if getattr(ds, "_parallelism", None):
            found["parallel"].append(stage_name(ds))
    return found


def _ram_remedy(build):
    k = _knobs(build)
    tips = []
    if k["prefetch"]:
        tips.append(f"a smaller prefetch (buffer_size now {', '.join(map(str, k['prefetch']))})")
    if k["shuffle"]:
        tips.append(f"a smaller shuffle buffer (now {', '.join(map(str, k['shuffle']))})")
    if k["interleave"]:
        tips.append("a lower cycle_length")
    if k["parallel"]:
        tips.append("fewer num_parallel_calls (each keeps 2 results per worker)")
    if k["cache"]:
        tips.append("cache placement: cache(filename) to a file, or cache before the map that "
                    "enlarges elements")
    tips.append("or a larger options.autotune.ram_budget if the machine has room")
    return "; ".join(tips)


def _fd_remedy(build):
    k = _knobs(build)
    tip = "a lower cycle_length / num_parallel_reads; " if k["interleave"] else ""
    return tip + "or raise the limit (ulimit -n, resource.setrlimit(RLIMIT_NOFILE))"


# -- the entry point --------------------------------------------------------------------


def diagnose(dataset, steps=100, step_fn=None, *, seed=0, ram_limit=None, stage_seconds=1.0,
             quiet=False, progress=None):
    """Run the field's checks on a pipeline before training; print and return
    a :class:`Diagnosis`.

    `dataset`: a Dataset, or a function that builds one (then each run builds
    it anew, as separate training runs would, and unseeded randomness shows).
    `steps`: elements taken per run (the pipeline runs about 5 times, plus
    each stage alone). `step_fn(element)`: your training step, to measure
    the input-bound fraction and, with pynvml, GPU utilisation. `seed`: the
    global seed tried when a factory's runs differ. `ram_limit`: bytes to
    compare peak RSS with (default: the machine's or cgroup's limit).
    `stage_seconds`: the longest time spent timing one stage. `progress`:
    a progress bar (tqdm) on stderr over the runs and stages: True, False,
    or None for ``conveyor.data.experimental.progress``'s switch (by default:
    when tqdm is installed and stderr is a terminal).
    """
    doctor = _Doctor(dataset, steps, step_fn, seed, ram_limit, stage_seconds, progress)
    try:
        result = doctor.run()
    finally:
        doctor.forget()
    if not quiet:
        print(result)
    return result


def main(argv=None):
    """``python -m conveyor.doctor MODULE_OR_SCRIPT:FACTORY [--steps N] [--step-time S]
    [--json]``: the exit status is 1 when a check fails."""
    parser = argparse.ArgumentParser(
        prog="python -m conveyor.doctor",
        description="Run the pipeline doctor's checks on a dataset factory.")
    parser.add_argument("target", help="path/to/script.py:factory or package.module:factory "
                                       "(a function of no arguments returning a Dataset)")
    parser.add_argument("--steps", type=int, default=100, help="elements per run (100)")
    parser.add_argument("--step-time", type=float, default=None, metavar="SECONDS",
                        help="simulate a training step of this many seconds")
    parser.add_argument("--seed", type=int, default=0, help="the seed tried on unseeded runs")
    parser.add_argument("--ram-limit", type=int, default=None, metavar="BYTES",
                        help="compare peak RSS with this (default: the machine's or cgroup's)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="a progress bar on stderr (default: when tqdm is installed and "
                             "stderr is a terminal)")
    args = parser.parse_args(argv)

    where, sep, name = args.target.rpartition(":")
    if not sep or not where or not name:
        parser.error(f"expected MODULE_OR_SCRIPT:FACTORY, got {args.target!r}")
    if where.endswith(".py") or os.sep in where:
        path = os.path.abspath(where)
        if not os.path.isfile(path):
            parser.error(f"no such script: {where}")
        sys.path.insert(0, os.path.dirname(path))
        spec = importlib.util.spec_from_file_location(
            os.path.splitext(os.path.basename(path))[0], path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        sys.path.insert(0, os.getcwd())
        module = importlib.import_module(where)
    factory = getattr(module, name, None)
    if not callable(factory):
        parser.error(f"{where} has no function {name!r}")
    step_fn = None
    if args.step_time is not None:
        step_fn = lambda element: time.sleep(args.step_time)  # noqa: E731
    result = diagnose(factory, args.steps, step_fn, seed=args.seed, ram_limit=args.ram_limit,
                      quiet=True, progress=args.progress)
    print(result.to_json(indent=2) if args.json else result)
    return 0 if result.ok else 1
