"""``Dataset.prefetch`` (PrefetchDataset)."""
from conveyor import _engine
from conveyor.data.ops.dataset_base import UnaryUnchangedStructureDataset

__all__ = ["PrefetchDataset", "PrefetchToDeviceDataset", "CopyToDeviceDataset"]


class PrefetchDataset(UnaryUnchangedStructureDataset):
    def __init__(self, input_dataset, buffer_size):
        super().__init__(input_dataset)
        self._buffer_size = buffer_size

    def _build(self, ctx, engine_inputs):
        if ctx.sequential:  # the doctor's baseline: no prefetch
            return engine_inputs[0]
        # It buffers elements: it charges the pipeline's RAM budget.
        return _engine.prefetch(engine_inputs[0], buffer_size=self._buffer_size, memory=ctx.memory)


class _DeviceDataset(UnaryUnchangedStructureDataset):
    """Elements copied to a device; nothing but ``with_options`` may follow
    (``Dataset.__init__`` checks ``_on_device``)."""

    _on_device = True

    def __init__(self, input_dataset, device, buffer_size):
        from conveyor import device as _device
        super().__init__(input_dataset)
        self._device_name = device
        self._kind, self._index = _device.parse_device(device)
        self._buffer_size = buffer_size
        if self._kind == _device.CUDA:  # fail here, not at the first element
            _device.check_cuda_device(self._index)

    def _build(self, ctx, engine_inputs):
        from conveyor import device as _device
        if self._kind == _device.CPU:  # tf.data's "/cpu:0": the elements stay as they are
            if self._buffer_size == 0 or ctx.sequential:
                return engine_inputs[0]
            return _engine.prefetch(engine_inputs[0], buffer_size=self._buffer_size,
                                    memory=ctx.memory)
        buffer_size = 0 if ctx.sequential else self._buffer_size
        return _engine.prefetch_to_device(engine_inputs[0], kind=_device.engine_kind(self._kind),
                                          index=self._index, buffer_size=buffer_size,
                                          memory=ctx.memory)


class PrefetchToDeviceDataset(_DeviceDataset):
    """``tf.data.experimental.prefetch_to_device(device, buffer_size)``."""


class CopyToDeviceDataset(_DeviceDataset):
    """``tf.data.experimental.copy_to_device(target_device)``: copied in ``next()``."""

    def __init__(self, input_dataset, device):
        super().__init__(input_dataset, device, 0)
