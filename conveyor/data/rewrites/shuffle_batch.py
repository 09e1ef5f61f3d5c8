"""shuffle + batch as one kernel (``options.experimental_optimization.
shuffle_and_batch_fusion``, default on): csrc/kernels/shuffle_batch.c."""
import numpy as np

from conveyor import _engine
from conveyor import dtypes as _dtypes
from conveyor import nest
from conveyor.data.ops.shuffle_op import ShuffleDataset
from conveyor.tensor_spec import TensorSpec

__all__ = ["rewrite"]

# The engine's CV_ARENA_MAX_ROW_BYTES: elements up to this size are "small".
_ARENA_MAX_ROW_BYTES = 4096


def arena_rows(input_dataset):
    """Whether batch over `input_dataset` fuses with it: a shuffle whose elements
    are, by their static spec, small rows of numbers of fully known shapes. (The
    engine kernel stays exact for elements that break the spec; this only picks
    where the fused kernel is faster.)"""
    if not isinstance(input_dataset, ShuffleDataset):
        return False
    spec = input_dataset._known_spec()
    if spec is None:
        return False
    flat = nest.flatten(spec)
    row = 0
    for s in flat:
        if not isinstance(s, TensorSpec) or s.dtype == _dtypes.string:
            return False
        if not s.shape.is_fully_defined() or s.shape.rank >= 16:
            return False
        row += int(np.prod(s.shape.as_list(), dtype=np.int64)) * s.dtype.size
    return bool(flat) and row <= _ARENA_MAX_ROW_BYTES


def rewrite(batch, ctx, engine_inputs):
    """The ShuffleBatch engine dataset for BatchDataset `batch` over a shuffle
    of small rows, built on the shuffle's engine dataset (`engine_inputs[0]`),
    whose input and seed generator it uses, so the results are the pair's;
    None when the pattern or the options say no.

    Its rows are drawn and copied in order, so the parallel_batch
    optimization has nothing to spread over workers; an explicit
    num_parallel_calls runs the assembly on one worker ahead of the consumer."""
    if not (ctx.shuffle_batch_fusion and arena_rows(batch.inputs()[0])):
        return None
    deterministic = batch.arg("deterministic")
    deterministic = ctx.deterministic if deterministic is None else deterministic
    return _engine.shuffle_batch(engine_inputs[0], batch_size=batch.arg("batch_size"),
                                 drop_remainder=batch.arg("drop_remainder"),
                                 num_parallel_calls=ctx.parallelism(
                                     batch.arg("num_parallel_calls") or 0),
                                 deterministic=deterministic, memory=ctx.memory)
