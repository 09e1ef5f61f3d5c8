"""tf.data's default parallel_batch optimization (``options.
experimental_optimization.parallel_batch``, default on): a batch without
num_parallel_calls copies its rows into batches on worker threads, in order,
so results never change."""
from conveyor import _engine
from conveyor.data.ops.dataset_base import AUTOTUNE

__all__ = ["rewrite"]


def rewrite(batch, ctx, engine_inputs):
    """The Batch engine dataset of BatchDataset `batch` with AUTOTUNE
    parallelism and deterministic order, when `batch` has no
    num_parallel_calls of its own and the options allow it; else None."""
    if batch.arg("num_parallel_calls") or not ctx.parallel_batch:
        return None
    return _engine.batch(engine_inputs[0], batch_size=batch.arg("batch_size"),
                         drop_remainder=batch.arg("drop_remainder"),
                         num_parallel_calls=ctx.parallelism(AUTOTUNE), deterministic=True,
                         memory=ctx.memory)
