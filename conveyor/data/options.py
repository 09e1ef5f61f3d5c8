"""``Options``, as ``tf.data.Options``: pipeline-wide settings applied with
``Dataset.with_options``. Settings left as ``None`` take the default.

What conveyor honours today: ``deterministic`` (the default for ``map`` and
``batch`` calls whose ``deterministic`` argument is None),
``threading.private_threadpool_size`` (caps every parallel stage's thread
count when > 0), ``autotune.ram_budget`` (bytes the buffering stages of the
pipeline may hold; 0/None: half of the memory the process may use),
``autotune.cpu_budget`` (the pipeline's CPU budget: ``num_parallel_calls=AUTOTUNE``
runs up to the budget plus one at once),
``experimental_optimization.parallel_batch`` (on by default, as in
tf.data: ``batch`` copies on worker threads, in order),
``experimental_optimization.map_and_batch_fusion`` (on by default, as in
tf.data: a parallel ``map(...).batch(...)`` runs as one kernel, same results) and
``experimental_optimization.shuffle_and_batch_fusion`` (conveyor's own, on by
default: ``shuffle(...).batch(...)`` over small fixed-shape numeric elements
runs as one kernel that keeps the buffer as rows of one arena; the results
are the same) and ``experimental_optimization.jpeg_scaled_decode`` (conveyor's
own, off by default because it changes pixels: a JPEG decode that only feeds a
resize to under half its size decodes at a reduced scale). The other fields are
accepted so that tf.data code runs unchanged, and are recorded for later
use; see docs/differences.md and the Memory section of docs/guide.md.

``BuildContext`` (at the end) is what the engine datasets are built from
besides their arguments: the options that matter to the engine, once merged.
"""

import collections
import enum
import operator
import typing

import numpy as np

from conveyor import _engine

__all__ = ["Options", "ThreadingOptions", "AutotuneOptions", "OptimizationOptions",
           "AutoShardPolicy"]

AUTOTUNE = -1


class _OptionsGroup:
    _fields = ()

    def __init__(self):
        for f in self._fields:
            object.__setattr__(self, f, None)

    def __setattr__(self, name, value):
        if name not in self._fields:
            raise AttributeError(f"{type(self).__name__} has no option {name!r}")
        object.__setattr__(self, name, value)

    def _merge(self, other):
        for f in self._fields:
            mine, theirs = getattr(self, f), getattr(other, f)
            if isinstance(mine, _OptionsGroup):
                mine._merge(theirs)
            elif theirs is not None:
                object.__setattr__(self, f, theirs)

    def _copy(self):
        new = type(self)()
        new._merge(self)
        return new

    def __eq__(self, other):
        return type(self) is type(other) and all(
            getattr(self, f) == getattr(other, f) for f in self._fields)

    def __repr__(self):
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields
                          if getattr(self, f) is not None)
        return f"{type(self).__name__}({inner})"


class ThreadingOptions(_OptionsGroup):
    """``private_threadpool_size``: max threads of any one stage (0/None: CPU count).
    ``max_intra_op_parallelism``: accepted; conveyor's element ops use one thread each."""
    _fields = ("private_threadpool_size", "max_intra_op_parallelism")


class AutotuneOptions(_OptionsGroup):
    """``ram_budget``: bytes that the pipeline's buffers (shuffle, prefetch, parallel map
    and batch, interleave read-ahead) may hold; going over raises ResourceExhaustedError
    naming the stage. None/0: half of the memory the process may use (physical RAM,
    cgroup limit, RLIMIT_AS). ``cpu_budget``: the turns the pipeline's pool runs at
    once (None/0: the CPUs the process may use); ``num_parallel_calls=AUTOTUNE`` runs
    up to the budget plus one.
    ``enabled``, ``autotune_algorithm``, ``initial_parallelism``, ``min_parallelism``:
    accepted and recorded."""
    _fields = ("enabled", "cpu_budget", "ram_budget", "autotune_algorithm", "initial_parallelism",
               "min_parallelism")


class OptimizationOptions(_OptionsGroup):
    """tf.data's static graph optimizations: accepted; none of them changes results.
    conveyor honours ``parallel_batch`` and its own ``shuffle_and_batch_fusion`` (None ->
    True): ``shuffle`` directly followed by ``batch`` over elements whose components all
    have a fully known shape, a numeric dtype and together at most 4 KiB per element
    runs as one kernel (ShuffleBatch) that keeps the shuffle buffer as rows of one arena
    and copies drawn rows straight into the batch: the same elements, order, errors and
    RAM-budget charges as the pair, several times faster. The pipeline's repr still
    shows ShuffleDataset and BatchDataset.

    ``jpeg_scaled_decode`` (conveyor's own, None -> False): decode and resize in one
    pass. In a map function that runs natively, a ``decode_jpeg`` (with ``ratio=1``) or
    ``decode_image`` whose image is used only by one ``tf.image.resize`` to a fixed
    size (any method but ``nearest``, no ``preserve_aspect_ratio``) reads the JPEG
    header and, when the size is under half the image's in both dimensions, decodes
    at libjpeg's smallest 1/8, 1/4 or 1/2 scale that still covers it, then resizes
    that smaller image to the size with the same method. Element shapes, dtypes and
    errors are unchanged, and 1.2-1.6x faster for 1000x750 photos resized to
    224x224, but the pixels are not TensorFlow's: the scaled decode averages pixels
    that the resize would have sampled (mean absolute difference 0.5 on 0..255 with
    antialias or ``area``, 1.7 for plain ``bilinear``, more for larger reductions;
    see docs/guide.md). Images that fail or are truncated are decoded again at full
    size, so they give the exact path's error or pixels. Opt-in for that reason; it
    is not a tf.data option.

    ``map_and_batch_fusion`` (None -> True, as in tf.data): a ``map`` with
    ``num_parallel_calls`` directly followed by ``batch`` runs as one kernel
    (MapAndBatch) whose turns write mapped rows straight into the batch: the same
    batches, errors and batch boundaries as the pair (an error in the function fails
    the batch it falls in and the next batch starts after it, as unfused; tf.data's
    fused op would fail the whole batch). The repr still shows both datasets.
    The other fields are recorded only."""
    _fields = ("apply_default_optimizations", "map_parallelization", "parallel_batch",
               "inject_prefetch", "noop_elimination", "shuffle_and_repeat_fusion",
               "map_and_batch_fusion", "map_fusion", "map_and_filter_fusion",
               "filter_fusion", "filter_parallelization", "shuffle_and_batch_fusion",
               "jpeg_scaled_decode")


class DistributeOptions(_OptionsGroup):
    _fields = ("auto_shard_policy", "num_devices")


class AutoShardPolicy(enum.IntEnum):
    """How ``tf.distribute`` would shard the dataset (recorded; see ``Dataset.shard``)."""
    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


class Options(_OptionsGroup):
    """Pipeline options. ``deterministic`` (None -> True) is the default order policy of
    ``map``/``batch`` with ``num_parallel_calls``."""
    _fields = ("deterministic", "threading", "autotune", "experimental_optimization",
               "experimental_distribute", "experimental_slack", "experimental_warm_start",
               "experimental_external_state_policy", "experimental_symbolic_checkpoint")

    def __init__(self):
        super().__init__()
        object.__setattr__(self, "threading", ThreadingOptions())
        object.__setattr__(self, "autotune", AutotuneOptions())
        object.__setattr__(self, "experimental_optimization", OptimizationOptions())
        object.__setattr__(self, "experimental_distribute", DistributeOptions())

    # TF 1.x's name for ``deterministic``, still accepted by tf.data.
    experimental_deterministic = property(
        operator.attrgetter("deterministic"),
        lambda self, value: object.__setattr__(self, "deterministic", value))

    def __setattr__(self, name, value):
        if name == "experimental_deterministic":
            name = "deterministic"
        super().__setattr__(name, value)

    def merge(self, options):
        """A new Options with `options`' set fields taking precedence."""
        new = self._copy()
        new._merge(options)
        return new


# -- how options reach the engine -------------------------------------------------
# Dataset._context (conveyor/data/ops/dataset_base.py) turns a dataset's merged
# Options into a BuildContext; engine datasets are built once per context.

UNSET = object()  # no with_options() below a dataset sets autotune.ram_budget


def check_budget(value, what):
    """An options.autotune budget: None or 0 (the default) or a positive int."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"options.autotune.{what} must be an int, got {value!r} "
                        f"({type(value).__name__}).")
    if value < 0:
        raise ValueError(f"options.autotune.{what} must be >= 0 (0: the default), got {value}.")
    return int(value)


class BuildContext(typing.NamedTuple):
    """What engine datasets depend on beyond their arguments (from Options).
    A tuple: hashable, engine datasets are cached per context."""

    deterministic: bool
    max_threads: int
    parallel_batch: bool
    # The engine RAM budget (a capsule) that buffering stages charge; None: the
    # process-wide default. Hashed by identity: one per with_options() call.
    memory: object = None
    # options.autotune.cpu_budget; 0: the CPUs this process may use.
    cpu_budget: int = 0
    # options.experimental_optimization.shuffle_and_batch_fusion (None -> True).
    shuffle_batch_fusion: bool = True
    # options.experimental_optimization.jpeg_scaled_decode (None -> False): maps
    # compile their programs with conveyor/data/rewrites/scaled_decode.py.
    jpeg_scaled_decode: bool = False
    # options.experimental_optimization.map_and_batch_fusion (None -> True): a
    # parallel map directly followed by batch runs as one kernel (MapAndBatch).
    map_batch_fusion: bool = True
    # True in the doctor's baseline (DerivedContext): parallel stages run
    # sequentially, prefetch passes elements through.
    sequential = False

    def cpus(self):
        """CPUs that AUTOTUNE decisions may assume: the pipeline's CPU budget."""
        return _engine.cpu_budget(self.cpu_budget)

    def parallelism(self, value):
        """num_parallel_calls -> the engine's parallelism: 0 (sequential), n > 0
        (n turns at once on the pipeline's pool) or, for AUTOTUNE, -n: at most n,
        as many as the autotuner picks.

        AUTOTUNE's most is the engine's ceiling for the pipeline's CPU budget
        (csrc/core/pipeline.h: one per CPU plus one, whether the budget is
        options.autotune.cpu_budget or the CPUs this process may use)."""
        tuned = value == AUTOTUNE
        if tuned:
            value = _engine.autotune_ceiling(self.cpus())
        if self.max_threads and value > self.max_threads:
            value = self.max_threads
        return -value if tuned and value > 1 else value


# BuildContext's fields, then the derived context's own.
_DerivedFields = collections.namedtuple("_DerivedFields", BuildContext._fields + ("tag", "sequential"))


class DerivedContext(_DerivedFields):
    """`ctx` with engine datasets of its own: the extra fields (`tag`, `sequential`)
    keep them apart in the build caches, so a pipeline can be built afresh (new
    shuffle seed generators) without touching the user's builds. With
    `sequential`, every parallel stage runs sequentially, in order, and prefetch
    passes elements through: the baseline of the pipeline doctor
    (conveyor/data/doctor.py). Only ops that read `sequential` need to know."""

    __slots__ = ()

    def __new__(cls, ctx, tag, sequential=False):
        return super().__new__(cls, *ctx, tag=tag, sequential=bool(sequential))

    cpus = BuildContext.cpus

    def parallelism(self, value):
        return 0 if self.sequential else BuildContext.parallelism(self, value)
