"""``Dataset.ignore_errors`` (IgnoreErrorsDataset)."""
from conveyor import _engine
from conveyor.data.ops.dataset_base import UnaryUnchangedStructureDataset

__all__ = ["IgnoreErrorsDataset"]


class IgnoreErrorsDataset(UnaryUnchangedStructureDataset):
    def __init__(self, input_dataset, log_warning):
        super().__init__(input_dataset)
        self._log_warning = log_warning

    def _build(self, ctx, engine_inputs):
        return _engine.ignore_errors(engine_inputs[0], log_warning=self._log_warning)
