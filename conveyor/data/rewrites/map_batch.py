"""map + batch as one kernel (``options.experimental_optimization.
map_and_batch_fusion``, default on as in tf.data's MapAndBatch):
csrc/kernels/map_batch.c."""
from conveyor import _engine
from conveyor.data.ops.map_op import MapDataset

__all__ = ["rewrite"]


def rewrite(batch, ctx, engine_inputs):
    """The MapAndBatch engine dataset for BatchDataset `batch` over a map that
    runs in parallel, built on the map's engine dataset (`engine_inputs[0]`),
    whose input, function and epochs it uses; None when the pattern or the
    options say no.

    Not with deterministic=False: the fused kernel keeps the input's order.
    Rows are written straight into the batch, and the results are the
    pair's (errors included: see csrc/kernels/map_batch.c)."""
    map_input = batch.inputs()[0]
    if not (ctx.map_batch_fusion and isinstance(map_input, MapDataset)):
        return None
    deterministic = map_input.arg("deterministic")
    if (map_input._engine_parallelism(ctx) != 0
            and (ctx.deterministic if deterministic is None else deterministic)
            and engine_inputs[0].kernel == "Map"):
        return _engine.map_batch(engine_inputs[0], batch_size=batch.arg("batch_size"),
                                 drop_remainder=batch.arg("drop_remainder"), memory=ctx.memory)
    return None
