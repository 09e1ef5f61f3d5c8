"""``Options``, as ``tf.data.Options``: pipeline-wide settings applied with
``Dataset.with_options``. Settings left as ``None`` take the default.

What conveyor honours today: ``deterministic`` (the default for ``map`` and
``batch`` calls whose ``deterministic`` argument is None),
``threading.private_threadpool_size`` (caps every parallel stage's thread
count when > 0), ``autotune.ram_budget`` (bytes the buffering stages of the
pipeline may hold; 0/None: half of the memory the process may use),
``autotune.cpu_budget`` (the worker count of ``num_parallel_calls=AUTOTUNE``)
and ``experimental_optimization.parallel_batch`` (on by default, as in
tf.data: ``batch`` copies on worker threads, in order). The other fields are
accepted so that tf.data code runs unchanged, and are recorded for later
use; see docs/differences.md and the Memory section of docs/guide.md.
"""

__all__ = ["Options", "ThreadingOptions", "AutotuneOptions", "OptimizationOptions",
           "AutoShardPolicy"]


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
    cgroup limit, RLIMIT_AS). ``cpu_budget``: the worker count of
    ``num_parallel_calls=AUTOTUNE`` (None/0: the CPUs the process may use).
    ``enabled``, ``autotune_algorithm``, ``initial_parallelism``, ``min_parallelism``:
    accepted and recorded."""
    _fields = ("enabled", "cpu_budget", "ram_budget", "autotune_algorithm", "initial_parallelism",
               "min_parallelism")


class OptimizationOptions(_OptionsGroup):
    """tf.data's static graph optimizations: accepted; conveyor's engine does not rewrite
    pipelines, and none of these changes results."""
    _fields = ("apply_default_optimizations", "map_parallelization", "parallel_batch",
               "inject_prefetch", "noop_elimination", "shuffle_and_repeat_fusion",
               "map_and_batch_fusion", "map_fusion", "map_and_filter_fusion",
               "filter_fusion", "filter_parallelization")


class DistributeOptions(_OptionsGroup):
    _fields = ("auto_shard_policy", "num_devices")


class AutoShardPolicy:
    OFF, AUTO, FILE, DATA, HINT = -1, 0, 1, 2, 3


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

    def merge(self, options):
        """A new Options with `options`' set fields taking precedence."""
        new = self._copy()
        new._merge(options)
        return new
