"""``conveyor.config`` (``tf.config``): the device and threading settings
input pipelines set before they start.

What each means in conveyor:

- Devices: conveyor runs pipelines on the CPU and touches a GPU only where a
  pipeline asks for one (``prefetch_to_device``). ``list_physical_devices``
  lists the CPU and the CUDA devices this process can use (none when the
  CUDA runtime cannot be loaded). ``set_visible_devices`` records which
  devices the program wants; ``get_visible_devices`` and
  ``list_logical_devices`` report it. JAX and PyTorch programs hide the GPU
  from TensorFlow with ``set_visible_devices([], "GPU")`` so that
  TensorFlow does not take its memory: conveyor never takes GPU memory
  unless a pipeline copies to a device, so this call is accepted and
  recorded, and changes nothing else.
- ``experimental.set_memory_growth``: recorded and reported by
  ``get_memory_growth`` (conveyor reserves no GPU memory up front).
- ``threading.set_intra_op_parallelism_threads(n)``: the default CPU budget
  of pipelines (``options.autotune.cpu_budget`` when that is not set): the
  turns their worker pools run at once. 0 (the default) leaves the budget
  to the CPUs this process may use. ``set_inter_op_parallelism_threads`` is
  recorded and reported by its getter; conveyor has no inter-op pool.

Settings are process-wide, as TensorFlow's; a pipeline reads them when it
starts iterating.
"""
import threading as _threading_lock
import typing as _typing

from conveyor import device as _device

__all__ = ["PhysicalDevice", "LogicalDevice", "list_physical_devices", "list_logical_devices",
           "get_visible_devices", "set_visible_devices", "experimental", "threading"]

_lock = _threading_lock.Lock()
_state = {"visible": None, "memory_growth": {}, "intra_op": 0, "inter_op": 0}


class PhysicalDevice(_typing.NamedTuple):
    """A device of the machine: ``name`` ('/physical_device:CPU:0') and
    ``device_type`` ('CPU' or 'GPU'), as ``tf.config.PhysicalDevice``."""
    name: str
    device_type: str


class LogicalDevice(_typing.NamedTuple):
    """A visible device ('/device:CPU:0'), as ``tf.config.LogicalDevice``."""
    name: str
    device_type: str


def _physical():
    gpus = _device.cuda_device_count()
    return ([PhysicalDevice("/physical_device:CPU:0", "CPU")] +
            [PhysicalDevice(f"/physical_device:GPU:{i}", "GPU") for i in range(gpus)])


def _of_type(devices, device_type):
    if device_type is None:
        return list(devices)
    return [d for d in devices if d.device_type == str(device_type).upper()]


def list_physical_devices(device_type=None):
    """The CPU and the CUDA GPUs this process can use, optionally only those
    of `device_type` ('CPU', 'GPU')."""
    return _of_type(_physical(), device_type)


def get_visible_devices(device_type=None):
    """The devices ``set_visible_devices`` left visible (all by default)."""
    with _lock:
        visible = _state["visible"]
    return _of_type(_physical() if visible is None else visible, device_type)


def set_visible_devices(devices, device_type=None):
    """Record the devices of `device_type` (all types when None) that the
    program uses: a PhysicalDevice or a list of them (``[]`` hides every
    device of that type). The CPU cannot be hidden (ValueError), as in
    TensorFlow. conveyor touches a GPU only through ``prefetch_to_device``;
    hiding GPUs here does not stop that."""
    if isinstance(devices, PhysicalDevice):
        devices = [devices]
    devices = list(devices)
    physical = _physical()
    for d in devices:
        if d not in physical:
            raise ValueError(f"Unrecognized device: {d!r}")
        if device_type is not None and d.device_type != str(device_type).upper():
            raise ValueError(f"Device {d.name} is not of type {device_type}")
    with _lock:
        current = physical if _state["visible"] is None else _state["visible"]
        if device_type is None:
            kept = devices
        else:
            kept = [d for d in current if d.device_type != str(device_type).upper()] + devices
        if not any(d.device_type == "CPU" for d in kept):
            raise ValueError("CPU must be visible: set_visible_devices cannot hide the CPU")
        _state["visible"] = [d for d in physical if d in kept]


def list_logical_devices(device_type=None):
    """The visible devices as LogicalDevice ('/device:GPU:0')."""
    return [LogicalDevice(d.name.replace("/physical_device:", "/device:"), d.device_type)
            for d in get_visible_devices(device_type)]


def _gpu(device, what):
    if not isinstance(device, PhysicalDevice) or device not in _physical():
        raise ValueError(f"Unrecognized device: {device!r}")
    if device.device_type != "GPU":
        raise ValueError(f"Cannot {what} memory growth on non-GPU devices")
    return device


class experimental:  # noqa: N801 - tf.config.experimental, a namespace
    """``tf.config.experimental``: the device calls above, and memory growth."""
    list_physical_devices = staticmethod(list_physical_devices)
    list_logical_devices = staticmethod(list_logical_devices)
    get_visible_devices = staticmethod(get_visible_devices)
    set_visible_devices = staticmethod(set_visible_devices)

    @staticmethod
    def set_memory_growth(device, enable):
        """Record memory growth for a GPU (ValueError for another device);
        conveyor reserves no GPU memory up front, so there is nothing to grow."""
        with _lock:
            _state["memory_growth"][_gpu(device, "set").name] = bool(enable)

    @staticmethod
    def get_memory_growth(device):
        """What ``set_memory_growth`` recorded for a GPU (False by default)."""
        with _lock:
            return _state["memory_growth"].get(_gpu(device, "get").name, False)


def _threads(value, what):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be an int >= 0 (0: the system picks), got {value!r}")
    return value


class threading:  # noqa: N801 - tf.config.threading, a namespace
    """``tf.config.threading``: thread counts (see the module's docstring)."""

    @staticmethod
    def set_intra_op_parallelism_threads(num_threads):
        """The default CPU budget of pipelines (``options.autotune.cpu_budget``
        wins where set); 0 restores the CPUs this process may use."""
        with _lock:
            _state["intra_op"] = _threads(num_threads, "intra_op_parallelism_threads")

    @staticmethod
    def get_intra_op_parallelism_threads():
        """What ``set_intra_op_parallelism_threads`` set (0 by default)."""
        with _lock:
            return _state["intra_op"]

    @staticmethod
    def set_inter_op_parallelism_threads(num_threads):
        """Recorded and reported by the getter; conveyor has no inter-op pool."""
        with _lock:
            _state["inter_op"] = _threads(num_threads, "inter_op_parallelism_threads")

    @staticmethod
    def get_inter_op_parallelism_threads():
        """What ``set_inter_op_parallelism_threads`` set (0 by default)."""
        with _lock:
            return _state["inter_op"]


def default_cpu_budget():
    """The CPU budget of a pipeline whose options set none (0: the CPUs this
    process may use): the intra-op thread count."""
    with _lock:
        return _state["intra_op"]
