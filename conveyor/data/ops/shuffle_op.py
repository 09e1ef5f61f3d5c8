"""``Dataset.shuffle`` (ShuffleDataset); its seeds come from conveyor.framework.random_seed."""
from conveyor import _engine
from conveyor.data.ops.dataset_base import UnaryUnchangedStructureDataset

__all__ = ["ShuffleDataset"]


class ShuffleDataset(UnaryUnchangedStructureDataset):
    # seed, seed2: the op's seed pair (conveyor.framework.random_seed), 0 and 0 when unseeded.
    def __init__(self, input_dataset, buffer_size, seed, seed2, reshuffle):
        super().__init__(input_dataset)
        self._args = {"buffer_size": buffer_size, "seed": seed, "seed2": seed2,
                      "reshuffle_each_iteration": reshuffle}

    def _build(self, ctx, engine_inputs):
        # Built once per build context and cached: iterators share the seed generator.
        return _engine.shuffle(engine_inputs[0], **self._args, memory=ctx.memory)
