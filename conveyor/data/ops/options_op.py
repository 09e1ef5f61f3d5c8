"""``Dataset.with_options`` (OptionsDataset): options merged over its
input's, and the engine RAM budget that ``options.autotune.ram_budget`` sets.
How options reach the engine datasets: ``BuildContext`` in
conveyor/data/options.py, made by ``Dataset._context``."""
from conveyor import _engine
from conveyor.data.ops.dataset_base import UnaryUnchangedStructureDataset
from conveyor.data.options import UNSET, check_budget

__all__ = ["OptionsDataset"]


class OptionsDataset(UnaryUnchangedStructureDataset):
    _may_follow_device = True

    @property
    def _on_device(self):
        return self._inputs[0]._on_device

    def __init__(self, input_dataset, options):
        super().__init__(input_dataset)
        self._options = options
        # One engine RAM budget per with_options() call that sets one: every
        # stage under it (and every iterator open over it) charges it.
        ram_budget = options.autotune.ram_budget
        if ram_budget is None:
            self._memory = UNSET
        else:
            ram_budget = check_budget(ram_budget, "ram_budget")
            self._memory = _engine.memory_budget(ram_budget) if ram_budget else None
        check_budget(options.autotune.cpu_budget, "cpu_budget")

    def _ram_budget(self):
        return super()._ram_budget() if self._memory is UNSET else self._memory

    def _build(self, ctx, engine_inputs):
        return engine_inputs[0]

    def options(self):
        return super().options().merge(self._options)
