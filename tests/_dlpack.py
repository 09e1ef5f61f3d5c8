"""DLPack capsules seen from ctypes: their names and the structs inside (dlpack.h v1.0).

Used by test_device.py in the test process and in its subprocesses (the fake
CUDA runtime's), to check what conveyor's ``__dlpack__`` hands a consumer.
"""
import ctypes

_api = ctypes.PyDLL(None)  # our own handle: argtypes set here do not touch ctypes.pythonapi
_get_name = _api.PyCapsule_GetName
_get_name.argtypes = [ctypes.py_object]
_get_name.restype = ctypes.c_char_p
_is_valid = _api.PyCapsule_IsValid
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_is_valid.restype = ctypes.c_int
_get_pointer = _api.PyCapsule_GetPointer
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_pointer.restype = ctypes.c_void_p


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", DLTensor)]


FLAG_READ_ONLY, FLAG_IS_COPIED = 1, 2


def capsule_name(capsule):
    """b"dltensor", b"dltensor_versioned", or b"used_..." once a consumer took it."""
    return _get_name(capsule)


def is_valid(capsule, name):
    return bool(_is_valid(capsule, name))


def describe(capsule):
    """What an unconsumed capsule holds, as a dict (the capsule stays unconsumed)."""
    name = capsule_name(capsule)
    out = {"name": name.decode()}
    if name == b"dltensor_versioned":
        m = DLManagedTensorVersioned.from_address(_get_pointer(capsule, name))
        out.update(version=(m.version.major, m.version.minor), flags=m.flags)
    elif name == b"dltensor":
        m = DLManagedTensor.from_address(_get_pointer(capsule, name))
    else:
        raise ValueError(f"not an unconsumed DLPack capsule: {name!r}")
    t = m.dl_tensor
    out.update(data=t.data or 0, device=(t.device.device_type, t.device.device_id), ndim=t.ndim,
               dtype=(t.dtype.code, t.dtype.bits, t.dtype.lanes),
               shape=tuple(t.shape[i] for i in range(t.ndim)),
               strides=None if not t.strides else tuple(t.strides[i] for i in range(t.ndim)),
               byte_offset=t.byte_offset, deleter=bool(m.deleter))
    return out


class Capsule:
    """An object whose __dlpack__ returns one given capsule (to consume it with
    np.from_dlpack, as a framework would)."""

    def __init__(self, capsule, device=(1, 0)):
        self.capsule, self.device = capsule, device

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.device
