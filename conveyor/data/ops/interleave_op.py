"""``Dataset.interleave`` and ``flat_map`` (InterleaveDataset,
ParallelInterleaveDataset, FlatMapDataset): a Python function maps each
element to a dataset, whose elements the engine interleaves."""
from conveyor import _engine
from conveyor import errors as _errors
from conveyor import nest
from conveyor.data.ops.dataset_base import AUTOTUNE, UNKNOWN_CARDINALITY, Cardinality, Dataset
from conveyor.data.ops.structured_function import calling_convention

__all__ = ["InterleaveDataset", "ParallelInterleaveDataset", "FlatMapDataset"]


class InterleaveDataset(Dataset):
    def __init__(self, input_dataset, map_func, cycle_length, block_length, parallelism,
                 deterministic):
        super().__init__([input_dataset])
        self._map_func = map_func
        self._cycle_length = cycle_length
        self._block_length = block_length
        self._parallelism = parallelism
        self._deterministic = deterministic
        self._first_inner = None  # the first inner Dataset map_func returned: the element spec
        # While running, the first one's known spec only, in a tuple: its engine
        # is then its slot's alone, so a cycle through its functions is
        # collected (issue 31). Only when that spec is known statically (it is
        # then the element_spec); otherwise the dataset is kept, as before.
        self._first_run = None

    def first_inner_dataset(self):
        """The first dataset map_func returned (its element spec is this
        dataset's), or None while map_func has not run (``element_spec`` runs
        it on the first input element)."""
        return self._first_inner

    def _inner_dataset(self, result, running=False):
        if not isinstance(result, Dataset):
            raise TypeError("`map_func` must return a `Dataset` object, got "
                            f"{type(result).__name__}.")
        if self._first_inner is None and not running:
            self._first_inner = result
        elif self._first_inner is None and self._first_run is None:
            known = result._known_spec()  # None: keep the dataset (a probe would call user code)
            if known is None:
                self._first_inner = result
            else:
                self._first_run = (known,)
        else:
            first = (self._first_inner._known_spec() if self._first_inner is not None
                     else self._first_run[0])
            spec = result._known_spec()
            if first is not None and spec is not None:
                try:
                    nest.assert_same_structure(first, spec)
                    same = all(a.dtype == b.dtype for a, b in
                               zip(nest.flatten(first), nest.flatten(spec)))
                except (ValueError, TypeError):
                    same = False
                if not same:
                    raise _errors.InvalidArgumentError(
                        f"`map_func` returned datasets of different element types: {first} "
                        f"and then {spec}.")
        return result

    def _resolved(self, ctx):
        """(cycle_length, workers) for this machine, with tf.data's AUTOTUNE rules."""
        cpus = ctx.cpus()
        cycle, parallelism = self._cycle_length, self._parallelism
        if not parallelism:
            return (cpus if cycle == AUTOTUNE else cycle), 0
        if cycle == AUTOTUNE:
            cycle = -(-cpus // 3) if parallelism == AUTOTUNE else min(parallelism, cpus)
        if parallelism == AUTOTUNE:
            workers = cycle + min(2 * cycle, 8)  # the current and the future inner datasets
        else:
            workers = parallelism
        if ctx.max_threads:
            workers = min(workers, ctx.max_threads)
        workers = min(workers, 64)
        # AUTOTUNE: the autotuner may run fewer (the engine's -n form).
        return cycle, -workers if parallelism == AUTOTUNE and workers > 1 else workers

    def _build(self, ctx, engine_inputs):
        call = calling_convention(self._map_func, self._inputs[0])

        def make_inner(*components):
            return self._inner_dataset(call(*components), running=True)._engine(ctx)

        cycle, workers = self._resolved(ctx)
        if ctx.sequential:  # the doctor's baseline: the same order, on the consumer's thread
            workers = 0
        deterministic = ctx.deterministic if self._deterministic is None else self._deterministic
        return _engine.interleave(engine_inputs[0], fn=make_inner, cycle_length=cycle,
                                  block_length=self._block_length, num_parallel_calls=workers,
                                  deterministic=deterministic, name="Dataset.interleave",
                                  memory=ctx.memory)

    def cardinality(self):
        return Cardinality(UNKNOWN_CARDINALITY)

    def _known_spec(self):
        if self._first_inner is not None:
            return self._first_inner._known_spec()
        return None if self._first_run is None else self._first_run[0]

    def _derive_spec(self):
        if self._first_inner is None and self._first_run is not None and \
                self._first_run[0] is not None:
            return self._first_run[0]
        if self._first_inner is None:
            # map_func is Python: its datasets are known once it has run. Run it on the
            # first input element (as tracing would run it once).
            probe = _engine.take(self._inputs[0]._probe_engine(self._context()), count=1)
            # A pool of one: the probe wants one element.
            for components in probe.make_iterator(lambda: (1, None), cpu_budget=1):
                self._inner_dataset(calling_convention(self._map_func, self._inputs[0])(*components))
            if self._first_inner is None:
                raise ValueError("Cannot infer the element_spec of this Dataset.interleave: its "
                                 "input produced no element, and the datasets of a Python "
                                 "`map_func` are known only once it has run.")
        return self._first_inner.element_spec


class ParallelInterleaveDataset(InterleaveDataset):
    """``interleave`` with ``num_parallel_calls``: inner datasets read ahead on workers."""


class FlatMapDataset(InterleaveDataset):
    """``flat_map``: the datasets one after the other (cycle length 1)."""

    def __init__(self, input_dataset, map_func):
        super().__init__(input_dataset, map_func, 1, 1, 0, None)
