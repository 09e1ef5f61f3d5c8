"""``Dataset.map`` (MapDataset; ParallelMapDataset with num_parallel_calls).

The function is traced into a native program when it can be (see
structured_function.MapFunction and conveyor/framework/tracing.py), else called per
element in Python."""
from conveyor import _engine
from conveyor import errors
from conveyor.framework import tracing as _tracing
from conveyor.data.ops.dataset_base import Dataset
from conveyor.data.ops.structured_function import MapFunction

__all__ = ["MapDataset", "ParallelMapDataset", "probe_function_spec"]


def probe_function_spec(dataset, stage):
    """The output spec of `dataset`'s function (``dataset._function``): from its
    trace, or, for a Python function, from running the dataset for one element
    (as tracing would run it once)."""
    function = dataset._function
    function.resolve()
    if function.spec is None:
        probe = dataset._probe_engine(dataset._context())
        # A pool of one: the probe wants one element, not the machine.
        try:
            for _ in _engine.take(probe, count=1).make_iterator(lambda: (1, None), cpu_budget=1):
                pass
        except errors.OpError:
            # The function fails on the first element: its structure shows on a
            # later one (a restored iterator converts those before any call).
            quiet = _engine.ignore_errors(probe, log_warning=False)
            for _ in _engine.take(quiet, count=1).make_iterator(
                    lambda: (1, None), cpu_budget=1):
                pass
            if function.spec is None:
                raise
        if function.spec is None:
            raise ValueError(f"Cannot infer the element_spec of this {stage}: its input "
                             "produced no element, and the output structure of a Python "
                             "function is known only once it has run.")
    return function.spec


class MapDataset(Dataset):
    _arg_fields = {"num_parallel_calls": "_parallelism", "deterministic": "_deterministic"}

    def __init__(self, input_dataset, map_func, parallelism, deterministic):
        super().__init__([input_dataset])
        self._function = MapFunction(map_func, input_dataset)
        self._parallelism = parallelism
        self._deterministic = deterministic

    def _build(self, ctx, engine_inputs):
        deterministic = ctx.deterministic if self._deterministic is None else self._deterministic
        fn, with_id = self._function.function_for_engine(
            jpeg_scaled_decode=ctx.jpeg_scaled_decode)
        parallelism = self._engine_parallelism(ctx)
        return _engine.map(engine_inputs[0], fn=fn, out_convert=self._function.convert,
                           num_parallel_calls=parallelism, deterministic=deterministic,
                           name=self._function.name, with_id=with_id, memory=ctx.memory)

    def _engine_parallelism(self, ctx):
        """The engine's num_parallel_calls for this map (0: sequential)."""
        return 0 if _tracing.debug_mode() else ctx.parallelism(self._parallelism)

    def _functions(self):
        return (self._function,)

    def _known_spec(self):
        return self._function.spec

    def _derive_spec(self):
        return probe_function_spec(self, "Dataset.map")

    def __repr__(self):
        # mode: how the function runs: "native" (a compiled program, no GIL) or
        # "python" (per element, under the GIL), with the reason.
        f = self._function
        mode = f.mode or "untraced"
        if f.mode == "python":
            mode += f" ({f.reason})"
        return (f"<{type(self).__name__} mode={mode} "
                f"num_parallel_calls={self._parallelism or None} "
                f"element_spec={self._known_spec()!r}>")


class ParallelMapDataset(MapDataset):
    """``map`` with ``num_parallel_calls``: the calls run on worker threads."""
