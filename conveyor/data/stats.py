"""What a running pipeline does, per stage: ``iterator.stats()``.

The engine counts per dataset of the pipeline (csrc/core/stats.h) and keeps
the autotuner's choices (csrc/core/autotune.h); this module names the stages
after the Python datasets that built them and presents the figures:
``PipelineStats`` is a plain dataclass with a readable ``str()`` table,
``to_dict()`` and ``to_json()`` for logs.

Reading statistics is safe from any thread while the pipeline runs, and
cheap (counters and a few short locks); they stay readable after the
iterator is exhausted or closed.
"""
import dataclasses
import json

from conveyor import _engine

__all__ = ["PipelineStats", "StageStats", "AutotuneChoice", "IoStats", "AUTOTUNE_ALGORITHMS"]

# options.autotune.autotune_algorithm (tf.data.experimental.AutotuneAlgorithm's
# values) -> the engine's strategy: 0 the model (HILL_CLIMB on tf.data's
# model), 1 the fixed rule (every AUTOTUNE stage at its most).
AUTOTUNE_ALGORITHMS = {None: 0, 0: 0, 1: 0, 2: 0, 3: 1, 4: 0,
                       "DEFAULT": 0, "HILL_CLIMB": 0, "GRADIENT_DESCENT": 0,
                       "MAX_PARALLELISM": 1, "STAGE_BASED": 0, "FIXED": 1, "MODEL": 0}


def algorithm_code(options):
    """The engine's autotune strategy for ``options`` (see AUTOTUNE_ALGORITHMS)."""
    if options.autotune.enabled is False:
        return 1
    value = options.autotune.autotune_algorithm
    key = getattr(value, "name", value)
    if key not in AUTOTUNE_ALGORITHMS:
        raise ValueError(f"options.autotune.autotune_algorithm must be one of "
                         f"tf.data.experimental.AutotuneAlgorithm's values, got {value!r}.")
    return AUTOTUNE_ALGORITHMS[key]


@dataclasses.dataclass(frozen=True)
class StageStats:
    """One stage (one dataset of the pipeline), over all its iterators so far.

    Times are in seconds, summed over the threads that ran the stage.
    ``busy``: processing (a parallel stage's own work); ``input_wait``:
    pulling from its input (the input's work on this thread, and waiting
    for it); ``consumer_wait``: idle with a full buffer, waiting for its
    consumer to take elements; ``starved``: its consumer waiting for this
    stage's results; ``blocked``: its threads inside blocking sections
    (the GIL, Python code, I/O), of which ``contended`` waiting for the GIL
    (the autotuner's measure of the parallelism lost to it). Only parallel
    stages (``parallelism > 0``) measure
    times; every stage counts ``elements``. Gauges, now: ``pulling`` and
    ``processing``, the stage's turns inside its input and inside its own
    work (its function); ``buffered``, its elements in flight or ready;
    ``bytes_held``, what those hold. ``function``: the name of the user's
    function (map_func, predicate), if any.

    A device stage (``prefetch_to_device``) also counts its host-to-device
    ``copies``, their ``copy_bytes`` and ``copy_time`` (seconds the device
    spent copying, timed by CUDA events; on the host, the memcpy time), so
    ``copy_rate`` is bytes per second; gauges: ``ring_slots`` of its
    page-locked staging ring and ``ring_busy``, those with a copy in flight;
    ``staging_bytes``, the ring's page-locked bytes (charged to the RAM
    budget); ``device_bytes``, device memory it holds (elements handed out
    and not yet freed, and its block cache). Of its copies,
    ``inplace_batches`` were batches built in page-locked memory by the
    batch stage before it (``inplace_bytes``: the host copies avoided), and
    ``staged_copies`` were packed into the staging ring first, a host copy
    of ``staged_bytes`` (a transformation between the batch and the device
    stage, strings or ragged parts, or a batch the RAM budget kept out of
    page-locked memory); ``pinned_bytes``, the page-locked batches out now
    (charged to the RAM budget once: by the stages that keep them). ``bus_rate`` is ``copy_rate``.
    """
    name: str
    kernel: str
    index: int
    parent: int
    inner: bool
    elements: int
    errors: int
    parallelism: int
    max_parallelism: int
    autotuned_parallelism: bool
    buffer_size: int
    max_buffer_size: int
    autotuned_buffer: bool
    buffered: int
    bytes_held: int
    busy: float
    input_wait: float
    consumer_wait: float
    starved: float
    blocked: float
    turns: int
    pulling: int = 0
    processing: int = 0
    function: str = ""
    copies: int = 0
    copy_bytes: int = 0
    copy_time: float = 0.0
    ring_slots: int = 0
    ring_busy: int = 0
    staging_bytes: int = 0
    device_bytes: int = 0
    inplace_batches: int = 0
    inplace_bytes: int = 0
    staged_copies: int = 0
    staged_bytes: int = 0
    pinned_bytes: int = 0
    contended: float = 0.0

    @property
    def copy_rate(self):
        """Bytes per second of device time spent copying (0 when none)."""
        return self.copy_bytes / self.copy_time if self.copy_time > 0 else 0.0

    @property
    def bus_rate(self):
        """Bytes per second over the bus as the stage saw them (the same as ``copy_rate``)."""
        return self.copy_rate


@dataclasses.dataclass(frozen=True)
class AutotuneChoice:
    """One change the autotuner made: ``stage``'s parallelism went from
    ``before`` to ``after`` at ``at`` seconds into the run, when ``bottleneck``
    was the slowest stage in its model. ``from_start``: the verdict on a
    stage that started inline (parallelism 0) and timed its first elements:
    ``after`` 0, it stays inline from the start; above 0, it went parallel.
    ``gain``: the gain rule's (docs/performance.md): a trial of one worker
    or of the most (kept unless a later choice takes it back), or the way
    back from a trial that lost."""
    at: float
    stage: str
    before: int
    after: int
    bottleneck: str
    target_interval: float
    modelled_interval: float
    from_start: bool = False
    gain: bool = False


@dataclasses.dataclass(frozen=True)
class IoStats:
    """Remote I/O of the whole process (gs://, s3://, http(s)://), when the
    statistics were taken: ``requests`` answered and ``retries`` since the
    process started, ``bytes_received``; ``requests_in_flight`` and
    ``bytes_in_flight`` (read ahead of their readers) now, against the I/O
    budget (``budget_requests``, ``budget_bytes``; docs/remote.md);
    ``first_byte_latency`` (seconds) and ``throughput`` (bytes/s per stream)
    are moving averages."""
    requests: int = 0
    retries: int = 0
    bytes_received: int = 0
    requests_in_flight: int = 0
    bytes_in_flight: int = 0
    budget_requests: int = 0
    budget_bytes: int = 0
    first_byte_latency: float = 0.0
    throughput: float = 0.0

    @classmethod
    def now(cls):
        r = _engine.io_stats()
        return cls(requests=r["requests"], retries=r["retries"],
                   bytes_received=r["bytes_received"],
                   requests_in_flight=r["requests_in_flight"],
                   bytes_in_flight=r["bytes_in_flight"], budget_requests=r["budget_requests"],
                   budget_bytes=r["budget_bytes"], first_byte_latency=r["first_byte_ms"] / 1e3,
                   throughput=r["mb_per_s"] * 1e6)


@dataclasses.dataclass(frozen=True)
class PipelineStats:
    """Statistics of one pipeline iterator (``iterator.stats()``).

    ``elapsed``: seconds since the iterator was made; ``next_wait``: the
    consumer's time waiting in ``next()``; ``bottleneck``: the autotuner's
    slowest stage in its last model run; ``choices``: its changes
    (:class:`AutotuneChoice`); ``finished``: the iterator is exhausted or closed;
    ``io``: the process's remote I/O (:class:`IoStats`)."""
    stages: list
    cpu_budget: int
    threads: int
    elapsed: float
    next_wait: float
    autotune_algorithm: str
    autotune_runs: int
    bottleneck: str
    choices: list
    finished: bool = False
    io: IoStats = dataclasses.field(default_factory=IoStats)

    @property
    def elements(self):
        """Elements the iterator has returned."""
        return self.stages[0].elements if self.stages else 0

    @property
    def bytes_held(self):
        return sum(s.bytes_held for s in self.stages)

    def stage(self, name):
        """The stage called ``name``."""
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(f"no stage {name!r}; stages: {[s.name for s in self.stages]}")

    def slowest_stage(self, since=None):
        """The parallel stage that keeps its consumer waiting, or the
        autotuner's bottleneck; None when nothing waited. A stage's consumer
        also waits when a stage below it is slow, so among the stages whose
        consumers waited at least half as long as the longest wait, this is
        the one furthest from the root. `since`: an earlier ``stats()`` of
        the same iterator, to look only at the time between."""
        before = {s.index: s.starved for s in since.stages} if since is not None else {}
        waited = [(s.starved - before.get(s.index, 0.0), s) for s in self.stages]
        waited = [(w, s) for w, s in waited if w > 0]
        if waited:
            longest = max(w for w, _ in waited)
            depth = self._depths()
            return max((s for w, s in waited if w >= longest / 2),
                       key=lambda s: depth[s.index]).name
        return self.bottleneck

    def _depths(self):
        """{stage index: its distance from the root}; inner stages (interleave's
        inner datasets) below every other."""
        depth = {}
        for s in self.stages:  # a parent comes before its inputs
            depth[s.index] = len(self.stages) if s.inner else depth.get(s.parent, -1) + 1
        return depth

    def to_dict(self):
        return dataclasses.asdict(self)

    def to_json(self, **kwargs):
        return json.dumps(self.to_dict(), **kwargs)

    def __str__(self):
        rate = self.elements / self.elapsed if self.elapsed > 0 else 0.0
        lines = [f"pipeline: {self.elements} elements in {self.elapsed:.3f} s "
                 f"({rate:,.1f}/s), next() waited {self.next_wait:.3f} s, "
                 f"{self.threads} threads for a CPU budget of {self.cpu_budget}, "
                 f"autotune {self.autotune_algorithm} ({self.autotune_runs} runs, "
                 f"{len(self.choices)} changes, bottleneck {self.bottleneck or '-'})"]
        header = ("stage", "elements", "parallel", "buffer", "held", "busy s", "input s",
                  "full s", "starved s")
        rows = [header]
        for s in self.stages:
            par = "-" if not s.max_parallelism else \
                f"{s.parallelism}/{s.max_parallelism}{'*' if s.autotuned_parallelism else ''}"
            buf = "-" if not s.max_buffer_size else \
                f"{s.buffered}/{s.buffer_size}{'*' if s.autotuned_buffer else ''}"
            timed = s.max_parallelism > 0
            rows.append((("  " if s.inner else "") + s.name, f"{s.elements:,}", par, buf,
                         _bytes(s.bytes_held),
                         *(f"{v:.3f}" if timed else "-"
                           for v in (s.busy, s.input_wait, s.consumer_wait, s.starved))))
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        for r in rows:
            lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                   for i, (c, w) in enumerate(zip(r, widths))))
        lines.append("(* autotuned; parallel: turns at once now / most; buffer: held / size)")
        io = self.io
        if io.requests or io.requests_in_flight:
            lines.append(f"remote I/O (process): {io.requests:,} requests, {io.retries:,} retried, "
                         f"{_bytes(io.bytes_received)} received; in flight "
                         f"{io.requests_in_flight}/{io.budget_requests} requests, "
                         f"{_bytes(io.bytes_in_flight)} of {_bytes(io.budget_bytes)}; first byte "
                         f"{io.first_byte_latency * 1e3:.1f} ms, "
                         f"{io.throughput / 1e6:.1f} MB/s per stream")
        for s in self.stages:
            if s.ring_slots:
                lines.append(f"{s.name}: {s.copies:,} copies, {_bytes(s.copy_bytes)} in "
                             f"{s.copy_time:.3f} s of copy time ({s.copy_rate / 1e9:.2f} GB/s); "
                             f"staging ring {s.ring_busy}/{s.ring_slots} busy, "
                             f"{_bytes(s.staging_bytes)} page-locked; "
                             f"{_bytes(s.device_bytes)} on the device; "
                             f"{s.inplace_batches:,} built in place ({_bytes(s.inplace_bytes)} "
                             f"of host copies avoided, {_bytes(s.pinned_bytes)} page-locked now), "
                             f"{s.staged_copies:,} staged ({_bytes(s.staged_bytes)} copied)")
        return "\n".join(lines)


def _bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def function_name(dataset):
    """The name of the user's function of a Python dataset (map_func,
    predicate, ...), "" when it has none."""
    names = [getattr(f.map_func, "__name__", type(f.map_func).__name__)
             for f in dataset._functions()]
    return ", ".join(names)


def dataset_names(dataset, ctx):
    """{wrapper_id of an engine dataset: (the class name of the Python dataset that
    built it, its function's name)} over dataset's graph, the innermost when
    several share one (with_options() passes its input's on). Taken when the
    iterator starts, so the iterator need not keep the datasets alive for
    its statistics."""
    owner, seen, stack = {}, set(), [(dataset, False)]
    while stack:
        ds, inputs_done = stack.pop()
        if inputs_done:
            handle = ds._cached_engine(ctx)
            if handle is not None and handle.wrapper_id not in owner:
                owner[handle.wrapper_id] = (type(ds).__name__, function_name(ds))
            continue
        if id(ds) in seen:
            continue
        seen.add(id(ds))
        stack.append((ds, True))
        stack.extend((i, False) for i in reversed(ds.inputs()))
    return owner


def _names(owner, nodes):
    """A name per engine node: its Python dataset's class name (see
    dataset_names), with _1, _2, ... for repeats (as tf.data names ops);
    the kernel's name otherwise."""
    names, counts = [], {}
    for node in nodes:
        base = owner.get(node["dataset"], ("", ""))[0] if node["dataset"] is not None else None
        base = base or node["kernel"] + ("Dataset" if not node["inner"] else "")
        if node["inner"]:
            base += " (inner)"
        k = counts.get(base, 0)
        counts[base] = k + 1
        names.append(base if k == 0 else f"{base}_{k}")
    return names


def _credit_fused_maps(nodes):
    """A map fused into the batch after it (MapAndBatch, csrc/kernels/map_batch.c)
    runs no iterator of its own: its node is credited with the rows the fused
    kernel mapped (the elements its input handed out), shows the kernel's
    parallelism and its turns inside the function (the stall watchdog names
    the map), so the statistics read as for the unfused pair; busy and wait
    times stay with the kernel (BatchDataset)."""
    for i, n in enumerate(nodes):
        parent = nodes[n["parent"]] if 0 <= n["parent"] < len(nodes) else None
        if n["kernel"] != "Map" or parent is None or parent["kernel"] != "MapAndBatch" or n["live"]:
            continue
        inputs = [c for c in nodes if c["parent"] == i]
        if n["elements"] == 0 and inputs:
            n["elements"] = inputs[0]["elements"]
        for key in ("parallelism", "max_parallelism", "tuned_parallelism"):
            n[key] = parent[key]
        # The fused kernel's turns run the map's function: a stall there is the map's.
        n["processing"], parent["processing"] = parent["processing"], 0
        parent["pulling"] += n["processing"]  # the batch waits on those rows


def describe(owner, raw):
    """The engine's raw statistics (``_engine.Iterator.stats``) -> PipelineStats;
    owner: dataset_names() of the pipeline."""
    nodes = [dict(n) for n in raw["nodes"]]
    names = _names(owner, nodes)
    _credit_fused_maps(nodes)
    stages = [StageStats(
        name=names[i], kernel=n["kernel"], index=i, parent=n["parent"], inner=n["inner"],
        elements=n["elements"], errors=n["errors"], parallelism=n["parallelism"],
        max_parallelism=n["max_parallelism"], autotuned_parallelism=n["tuned_parallelism"],
        buffer_size=n["buffer"], max_buffer_size=n["max_buffer"],
        autotuned_buffer=n["tuned_buffer"], buffered=n["buffered"], bytes_held=n["bytes"],
        busy=n["busy_ns"] / 1e9, input_wait=n["input_ns"] / 1e9,
        consumer_wait=n["full_ns"] / 1e9, starved=n["wait_ns"] / 1e9,
        blocked=n["blocked_ns"] / 1e9, turns=n["turns"], pulling=n["pulling"],
        processing=n["processing"], copies=n.get("copies", 0),
        copy_bytes=n.get("copy_bytes", 0), copy_time=n.get("copy_ns", 0) / 1e9,
        ring_slots=n.get("ring_slots", 0), ring_busy=n.get("ring_busy", 0),
        staging_bytes=n.get("staging_bytes", 0), device_bytes=n.get("device_bytes", 0),
        inplace_batches=n.get("inplace_batches", 0), inplace_bytes=n.get("inplace_bytes", 0),
        staged_copies=n.get("staged_copies", 0), staged_bytes=n.get("staged_bytes", 0),
        pinned_bytes=n.get("pinned_bytes", 0), contended=n.get("contended_ns", 0) / 1e9,
        function=owner.get(n["dataset"], ("", ""))[1] if n["dataset"] is not None else "")
        for i, n in enumerate(nodes)]
    tune = raw["autotune"]

    def name(i):
        return names[i] if 0 <= i < len(names) else ""
    choices = [AutotuneChoice(at=c["at_ns"] / 1e9, stage=name(c["node"]), before=c["from"],
                              after=c["to"], bottleneck=name(c["bottleneck"]),
                              target_interval=c["target_ns"] / 1e9,
                              modelled_interval=c["interval_ns"] / 1e9,
                              from_start=c.get("probe", False), gain=c.get("gain", False))
               for c in tune["history"]]
    return PipelineStats(stages=stages, cpu_budget=raw["cpu_budget"], threads=raw["threads"],
                         elapsed=raw["elapsed_ns"] / 1e9,
                         next_wait=raw["consumer_wait_ns"] / 1e9,
                         autotune_algorithm=tune["algorithm"], autotune_runs=tune["runs"],
                         bottleneck=name(tune["bottleneck"]) or None, choices=choices,
                         finished=raw.get("finished", False), io=IoStats.now())
