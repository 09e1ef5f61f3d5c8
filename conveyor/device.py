"""Devices for ``prefetch_to_device``: names, the CUDA runtime, device arrays.

conveyor never links against CUDA. The first pipeline that targets a CUDA
device loads the CUDA runtime library (libcudart) with ``dlopen``, once per
process; where it is missing, or there is no driver or device, building
that pipeline raises :class:`conveyor.errors.UnavailableError` saying which.
The library is looked for, in order, at ``$CONVEYOR_CUDART`` (a path; when
set, nothing else is tried), under the names ``libcudart.so``,
``libcudart.so.13``, ``.12`` and ``.11.0`` on the loader's path, in
``$CUDA_HOME/lib64``, ``$CUDA_PATH/lib64`` and ``/usr/local/cuda/lib64``,
and in the ``nvidia-cuda-runtime-cu1x`` wheels that PyTorch and JAX install.

Device names (``parse_device``), as TensorFlow writes them or as PyTorch
does: ``"/gpu:0"``, ``"/device:GPU:1"``, ``"gpu"``, ``"cuda"``, ``"cuda:1"``;
``"/cpu:0"``, ``"cpu"``; and conveyor's ``"host"``: the device path (staging
ring, device buffers, DLPack) on host memory, to test it without a GPU.
"""
import array as _array
import glob
import math
import operator
import os
import re
import sys

import numpy as np

from conveyor import _engine
from conveyor import dtypes as _dtypes
from conveyor import errors

__all__ = ["DeviceArray", "parse_device", "cuda_available", "cuda_device_count", "cuda_info",
           "load_cuda", "copy_bandwidth", "staging_cache_info", "empty_cache", "CPU", "CUDA",
           "HOST"]

CPU, CUDA, HOST = "cpu", "cuda", "host"
_KIND_CODE = {HOST: 0, CUDA: 1}  # csrc/device/device.h: CvDeviceKind
_NAMES = ["libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"]

_DLPACK_CPU, _DLPACK_CUDA = 1, 2  # DLPack's device types (csrc/device/device.h)
_DLPACK_MAJOR = 1  # the versioned capsule's DLPack major version (csrc/device/dlpack.h)


class DeviceArray(_engine.DeviceArrayBase):
    """An array in device memory, from prefetch_to_device / copy_to_device.

    Hand it to a framework without a copy: ``torch.from_dlpack(x)``,
    ``jax.dlpack.from_dlpack(x)``, ``cupy.asarray(x)`` (or ``cupy.from_dlpack``);
    ``numpy()`` copies it to the host. The engine makes it (csrc/python/device.c:
    the buffer, the DLPack export, the stream sync and the copy to the host);
    the protocols' argument checks and the plain attributes are here."""
    __slots__ = ()

    shape = property(lambda self: tuple(_array.array("q", self._meta[2])),
                     doc="The shape, a tuple of ints.")
    ndim = property(lambda self: len(self._meta[2]) // 8, doc="The rank.")
    size = property(lambda self: math.prod(self.shape), doc="The number of values.")
    nbytes = property(lambda self: self._meta[4], doc="Bytes of the values.")
    dtype = property(lambda self: np.dtype(_dtypes.as_dtype(self._meta[3]).as_numpy_dtype),
                     doc="The NumPy dtype.")
    data_ptr = property(lambda self: self._meta[5],
                        doc="The address of the first value (device memory).")

    @property
    def device(self):
        """Where the memory is, ``'cuda:N'`` or ``'cpu:0'``."""
        kind, index = self._meta[:2]
        return f"{'cuda' if kind == _DLPACK_CUDA else 'cpu'}:{index}"

    def __len__(self):
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d device array")
        return shape[0]

    def __repr__(self):
        shape, dtype = self.shape, self._meta[3]
        return f"<conveyor.DeviceArray shape=[{','.join(map(str, shape))}] dtype={dtype} device={self.device}>"

    def __dlpack_device__(self):
        """``(device_type, device_id)``: ``(2, N)`` for cuda:N, ``(1, 0)`` for the host."""
        return self._meta[:2]

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule over the array's memory (no copy). For CUDA, `stream` is the
        consumer's stream (None or 1: legacy default, 2: per-thread default, a handle, -1:
        no sync): it waits on the copy's event. max_version >= (1, 0) gives a versioned
        capsule."""
        kind, index = self._meta[:2]
        if kind != _DLPACK_CUDA:
            if stream is not None:
                raise ValueError("__dlpack__: stream must be None for a CPU array")
            handle = 0
        else:
            handle = 1 if stream is None else operator.index(stream)
            if handle == 0 or handle < -1:
                raise ValueError(
                    f"__dlpack__: stream {handle} is not valid for CUDA (None or 1: the legacy "
                    f"default stream, 2: the per-thread default stream, -1: no synchronization, "
                    f"or a stream handle)")
        if dl_device is not None:
            if not isinstance(dl_device, tuple) or len(dl_device) != 2:
                raise TypeError("__dlpack__: dl_device must be a (device_type, device_id) tuple")
            want = (operator.index(dl_device[0]), operator.index(dl_device[1]))
            if want != (kind, index):
                raise BufferError(
                    f"__dlpack__: the array is on device ({kind}, {index}), not ({want[0]}, "
                    f"{want[1]}); conveyor exports device arrays only where they are (numpy() "
                    f"copies to the host)")
        copy = copy is not None and bool(copy)
        if copy and kind != _DLPACK_CPU:
            raise BufferError("__dlpack__(copy=True) is not supported for CUDA arrays; the "
                              "consumer gets the array itself (every element has memory of its own)")
        versioned = False
        if max_version is not None:
            if not isinstance(max_version, tuple) or len(max_version) < 1:
                raise TypeError("__dlpack__: max_version must be a (major, minor) tuple")
            versioned = operator.index(max_version[0]) >= _DLPACK_MAJOR
        return self._dlpack(handle, versioned, copy)

    @property
    def __cuda_array_interface__(self):
        """CUDA Array Interface v3 (CUDA arrays only)."""
        if self._meta[0] != _DLPACK_CUDA:
            raise AttributeError("__cuda_array_interface__: the array is on the host (cpu), "
                                 "not on a CUDA device")
        typestr, stream = self._cuda_sync()
        return {"shape": self.shape, "typestr": typestr, "data": (self.data_ptr, False),
                "version": 3, "strides": None, "stream": stream}

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(array)``: as numpy(). NumPy 2's protocol: copy=True always gives
        memory of its own (np.array's default), False never copies (ValueError where one
        is needed: a CUDA array, a cast), None copies only where needed (a view on the
        host)."""
        host = self._meta[0] == _DLPACK_CPU
        cast = dtype is not None and np.dtype(dtype) != self.dtype
        if copy is not None and not copy and (cast or not host):
            raise ValueError("__array__(copy=False): a cast to another dtype needs a copy" if host
                             else "__array__(copy=False): a CUDA array cannot be read from the "
                                  "host without a copy (numpy() copies it)")
        array = self.numpy()  # host: a view; CUDA: a copy
        if cast:
            return array.astype(dtype)
        return array.copy() if copy and host else array


_engine.set_device_array_type(DeviceArray)

_DEVICE = re.compile(
    r"^(?:/job:[^/]+)?(?:/replica:\d+)?(?:/task:\d+)?/?(?:device:)?"
    r"(?P<kind>cpu|gpu|cuda|host)(?::(?P<index>\d+))?$", re.IGNORECASE)


def parse_device(device):
    """``(kind, index)`` for a device name: kind is ``"cpu"``, ``"cuda"`` or ``"host"``.

    Raises ``ValueError`` for a name that is not a device, ``TypeError`` for
    a value that is not a string.
    """
    if not isinstance(device, str):
        raise TypeError(f"A device must be a string such as '/gpu:0' or 'cuda:0', got {device!r}.")
    match = _DEVICE.match(device.strip())
    if not match:
        raise ValueError(f"{device!r} is not a device name: use '/gpu:N' or 'cuda:N' for a CUDA "
                         f"device, '/cpu:0' for the host, or 'host' for the device path on host "
                         f"memory.")
    kind = match.group("kind").lower()
    kind = CUDA if kind == "gpu" else kind
    index = int(match.group("index") or 0)
    if kind != CUDA and index != 0:
        raise ValueError(f"{device!r}: the host is device 0 ('{kind}:0').")
    return kind, index


def _candidates():
    path = os.environ.get("CONVEYOR_CUDART")
    if path:
        return [path]
    folders = [os.path.join(os.environ[v], "lib64") for v in ("CUDA_HOME", "CUDA_PATH")
               if os.environ.get(v)]
    folders.append("/usr/local/cuda/lib64")
    for entry in sys.path:  # the nvidia-cuda-runtime-cu1x wheels (PyTorch's, JAX's)
        folders.extend(sorted(glob.glob(os.path.join(entry, "nvidia", "cuda_runtime", "lib"))))
    found = list(_NAMES)
    for folder in folders:
        for name in _NAMES[1:] + _NAMES[:1]:
            candidate = os.path.join(folder, name)
            if os.path.exists(candidate) and candidate not in found:
                found.append(candidate)
    return found[:16]


def load_cuda():
    """Load the CUDA runtime now (once per process; later calls repeat the first
    outcome). Raises ``UnavailableError`` naming what is missing."""
    _engine.cuda_load("\n".join(_candidates()))


def check_cuda_device(index):
    """Load CUDA and check that device `index` exists: ``UnavailableError`` or
    ``InvalidArgumentError`` (the engine's messages) otherwise."""
    load_cuda()
    count = _engine.cuda_info()["device_count"]
    if not 0 <= index < count:
        last = f" to cuda:{count - 1}" if count > 1 else ""
        raise errors.InvalidArgumentError(
            None, None, f"device cuda:{index} does not exist: this machine has {count} CUDA "
                        f"device{'' if count == 1 else 's'} (cuda:0{last})")


def cuda_available():
    """Whether a CUDA device can be used (the runtime loads and sees a device)."""
    try:
        load_cuda()
    except errors.UnavailableError:
        return False
    return True


def cuda_device_count():
    """CUDA devices visible to this process (0 when CUDA is not available)."""
    return _engine.cuda_info()["device_count"] if cuda_available() else 0


def cuda_info():
    """What was loaded: ``library``, ``device_count``, ``runtime_version``,
    ``driver_version`` (CUDA's integers, 12040 for 12.4); raises
    ``UnavailableError`` when CUDA is not available."""
    load_cuda()
    return dict(_engine.cuda_info())


def copy_bandwidth(device="cuda:0", nbytes=256 << 20, repeats=10):
    """Host-to-device bytes per second from page-locked memory, measured the way
    ``prefetch_to_device`` copies (its copy stream, timed by events): the
    machine's limit for the device stage's throughput."""
    kind, index = parse_device(device)
    if kind == CPU:
        kind = HOST
    if kind == CUDA:
        load_cuda()
    if int(nbytes) <= 0 or int(repeats) <= 0:
        raise ValueError("copy_rate: nbytes and repeats must be > 0")
    return _engine.copy_rate(_KIND_CODE[kind], index, int(nbytes), int(repeats))


def staging_cache_info():
    """The page-locked staging cache of ``prefetch_to_device``: a dict of
    ``hits`` and ``misses`` (staging slots taken from the cache / newly
    allocated, since the process started), ``cached_bytes`` and
    ``cached_blocks`` (held now, for the next iterator).

    Pinning host memory is slow (a 38.5 MB batch slot took 19 ms to
    allocate and 6 ms to free on an H200 machine), so the slots of an
    iterator that ends wait, up to 512 MiB, for the next epoch's iterator
    instead of being freed. Device memory is not cached between iterators."""
    return _engine.staging_cache_info()


def empty_cache():
    """Free the page-locked staging memory that ended ``prefetch_to_device``
    iterators left for reuse (see :func:`staging_cache_info`), as
    ``torch.cuda.empty_cache()`` does for PyTorch's caches; returns the
    bytes freed. Slots of running iterators are not touched."""
    return _engine.staging_cache_empty()


def engine_kind(kind):
    """The engine's code for a device kind (csrc/device/device.h)."""
    return _KIND_CODE[kind]
