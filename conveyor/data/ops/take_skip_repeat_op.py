"""``Dataset.take``, ``skip`` and ``repeat`` (TakeDataset, SkipDataset,
RepeatDataset): one input, one count, the input's element structure."""
from conveyor import _engine
from conveyor.data.ops.dataset_base import UnaryUnchangedStructureDataset

__all__ = ["TakeDataset", "SkipDataset", "RepeatDataset"]


class TakeDataset(UnaryUnchangedStructureDataset):
    def __init__(self, input_dataset, count):
        super().__init__(input_dataset)
        self._count = count

    def _build(self, ctx, engine_inputs):
        return _engine.take(engine_inputs[0], count=self._count)


class SkipDataset(UnaryUnchangedStructureDataset):
    def __init__(self, input_dataset, count):
        super().__init__(input_dataset)
        self._count = count

    def _build(self, ctx, engine_inputs):
        return _engine.skip(engine_inputs[0], count=self._count)


class RepeatDataset(UnaryUnchangedStructureDataset):
    def __init__(self, input_dataset, count):
        super().__init__(input_dataset)
        self._count = count

    def _build(self, ctx, engine_inputs):
        return _engine.repeat(engine_inputs[0], count=self._count)
