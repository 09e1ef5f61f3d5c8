"""The fake CUDA runtime (tests/fake_cuda/fake_cudart.c): build it, read its counters.

``build(folder)`` compiles it with gcc into `folder` and returns the path;
set ``CONVEYOR_CUDART`` to that path in a fresh process and conveyor's CUDA
code path runs on it (the runtime is loaded once per process, so every test
that uses it runs in a subprocess). In that process, ``Fake(path)`` opens
the same loaded object with ctypes and reads what the runtime saw.
"""
import ctypes
import os
import shutil
import subprocess

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_cuda", "fake_cudart.c")

# The stream handles the runtime reserves.
LEGACY_STREAM, PER_THREAD_STREAM = 1, 2


def build(folder, name="libfakecudart.so", devices=None):
    """Compile the fake runtime into folder/name; returns the path (None without gcc).
    devices: how many it sees when FAKE_CUDA_DEVICES is not set (default 1)."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        return None
    out = os.path.join(folder, name)
    defines = [] if devices is None else [f"-DFAKE_DEFAULT_DEVICES={int(devices)}"]
    subprocess.run([gcc, "-shared", "-fPIC", "-pthread", "-O1", "-g", "-Wall", "-Wextra",
                    "-Werror", *defines, "-o", out, SOURCE], check=True, capture_output=True, text=True)
    return out


class Fake:
    """The fake runtime that conveyor loaded in this process (same path, same object)."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.fake_cuda_count_names.restype = ctypes.c_char_p
        self.names = self.lib.fake_cuda_count_names().decode().strip(",").split(",")
        self.lib.cudaStreamCreateWithFlags.argtypes = [ctypes.POINTER(ctypes.c_void_p),
                                                       ctypes.c_uint]
        self.lib.cudaStreamDestroy.argtypes = [ctypes.c_void_p]
        self.lib.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
        self.lib.cudaSetDevice.argtypes = [ctypes.c_int]

    def counts(self):
        """Every counter by name (live allocations, calls, misuse)."""
        values = (ctypes.c_longlong * len(self.names))()
        self.lib.fake_cuda_counts(values, len(self.names))
        return dict(zip(self.names, values))

    def log(self, which):
        """Stream handles of the latest calls: "wait" (cudaStreamWaitEvent) or
        "record" (cudaEventRecord), oldest first."""
        out = (ctypes.c_ulonglong * 4096)()
        n = self.lib.fake_cuda_log({"wait": 0, "record": 1}[which], out, 4096)
        return list(out[:n])

    def clear_logs(self):
        self.lib.fake_cuda_clear_logs()

    def stream(self):
        """A new (non-blocking) stream of the current device, as a consumer makes one."""
        handle = ctypes.c_void_p()
        assert self.lib.cudaStreamCreateWithFlags(ctypes.byref(handle), 1) == 0
        return handle.value

    def current_device(self):
        """The calling thread's current device (cudaGetDevice)."""
        device = ctypes.c_int(-1)
        assert self.lib.cudaGetDevice(ctypes.byref(device)) == 0
        return device.value

    def set_device(self, index):
        assert self.lib.cudaSetDevice(index) == 0

    def destroy_stream(self, handle):
        assert self.lib.cudaStreamDestroy(handle) == 0

    def misuse(self):
        """The counters that must stay 0: any is a wrong call conveyor made."""
        c = self.counts()
        return {k: c[k] for k in ("bad_frees", "bad_copies", "pageable_copies", "bad_handles",
                                  "cross_device", "bad_set_device") if c[k]}

    def live(self):
        """What conveyor holds in the runtime now (all 0 once everything is dropped)."""
        c = self.counts()
        return {k: c[k] for k in ("device_allocs", "device_bytes", "host_allocs", "host_bytes",
                                  "events", "streams")}
