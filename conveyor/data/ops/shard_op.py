"""``Dataset.shard`` (ShardDataset)."""
from conveyor import _engine
from conveyor.data.ops.dataset_base import UnaryUnchangedStructureDataset

__all__ = ["ShardDataset"]


class ShardDataset(UnaryUnchangedStructureDataset):
    _arg_names = ("num_shards", "index")

    def __init__(self, input_dataset, num_shards, index):
        super().__init__(input_dataset)
        self._args = (num_shards, index)

    def _build(self, ctx, engine_inputs):
        return _engine.shard(engine_inputs[0], num_shards=self._args[0], index=self._args[1])
