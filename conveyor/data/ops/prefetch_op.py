"""``Dataset.prefetch`` (PrefetchDataset)."""
from conveyor import _engine
from conveyor.data.ops.dataset_base import UnaryUnchangedStructureDataset

__all__ = ["PrefetchDataset"]


class PrefetchDataset(UnaryUnchangedStructureDataset):
    def __init__(self, input_dataset, buffer_size):
        super().__init__(input_dataset)
        self._buffer_size = buffer_size

    def _build(self, ctx, engine_inputs):
        if ctx.sequential:  # the doctor's baseline: no prefetch
            return engine_inputs[0]
        # It buffers elements: it charges the pipeline's RAM budget.
        return _engine.prefetch(engine_inputs[0], self._buffer_size, ctx.memory)
