"""What benchmarks/gpu_check.py runs against (a helper module, not a
benchmark: gpu_check.py imports it): the optional frameworks (torch, cupy,
jax), the CUDA runtime conveyor loaded (through ctypes), the GPU's name,
memory and utilisation from NVML (pynvml, else nvidia-smi) and a sampler of
its utilisation every 100 ms.
"""
import argparse
import ctypes
import gc
import os
import shutil
import subprocess
import threading
from time import perf_counter as now  # gpu_check.py's now()

import conveyor.device as cvdev

MiB = 1 << 20


# --------------------------------------------------------------------------- frameworks

class Frameworks:
    """torch, cupy and jax where they import; each optional."""

    def __init__(self, kind, index):
        self.kind, self.index = kind, index
        self.torch = self.cupy = self.jax = None
        self.notes = {}
        self.versions = {}
        self._import_torch()
        self._import_cupy()
        self._import_jax()

    def _import_torch(self):
        try:
            import torch
        except Exception as e:  # ImportError, or a broken install
            self.notes["torch"] = f"not importable ({type(e).__name__}: {e})"
            return
        self.versions["torch"] = torch.__version__
        self.versions["torch.version.cuda"] = getattr(torch.version, "cuda", None)
        if self.kind == cvdev.CUDA and not torch.cuda.is_available():
            self.notes["torch"] = "torch.cuda.is_available() is False"
            return
        self.torch = torch
        self.torch_device = torch.device(f"cuda:{self.index}" if self.kind == cvdev.CUDA else "cpu")

    def _import_cupy(self):
        if self.kind != cvdev.CUDA:
            self.notes["cupy"] = "CUDA only"
            return
        try:
            import cupy
            cupy.cuda.Device(self.index).use()
            cupy.cuda.runtime.getDeviceCount()
        except Exception as e:
            self.notes["cupy"] = f"not usable ({type(e).__name__}: {e})"
            return
        self.versions["cupy"] = cupy.__version__
        self.cupy = cupy

    def _import_jax(self):
        try:
            import jax
            import jax.dlpack  # noqa: F401
        except Exception as e:
            self.notes["jax"] = f"not importable ({type(e).__name__}: {e})"
            return
        self.versions["jax"] = jax.__version__
        try:
            platform_name = "gpu" if self.kind == cvdev.CUDA else "cpu"
            devices = jax.devices(platform_name)
        except Exception as e:
            self.notes["jax"] = f"{jax.__version__}: no {platform_name} backend ({type(e).__name__}: {e})"
            return
        self.versions["jax.devices"] = [str(d) for d in devices]
        self.jax = jax

    def torch_sync(self):
        if self.torch is not None and self.kind == cvdev.CUDA:
            self.torch.cuda.synchronize(self.torch_device)

    def release_caches(self):
        """Give framework pools back, so device memory in use is conveyor's."""
        gc.collect()
        if self.torch is not None and self.kind == cvdev.CUDA:
            self.torch.cuda.synchronize(self.torch_device)
            self.torch.cuda.empty_cache()
        if self.cupy is not None:
            self.cupy.cuda.Device(self.index).synchronize()
            self.cupy.get_default_memory_pool().free_all_blocks()
            self.cupy.get_default_pinned_memory_pool().free_all_blocks()


class CudaRuntime:
    """The CUDA runtime conveyor loaded, through ctypes: cudaMemGetInfo and
    cudaDeviceSynchronize without any framework."""

    def __init__(self, library, index):
        self.lib = ctypes.CDLL(library)  # already loaded by conveyor: the same handle
        self.index = index
        for name in ("cudaMemGetInfo", "cudaDeviceSynchronize", "cudaSetDevice"):
            getattr(self.lib, name).restype = ctypes.c_int

    def _call(self, name, *args):
        self.lib.cudaSetDevice(self.index)
        err = getattr(self.lib, name)(*args)
        if err:
            raise RuntimeError(f"{name} returned CUDA error {err}")

    def used_bytes(self):
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        self._call("cudaMemGetInfo", ctypes.byref(free), ctypes.byref(total))
        return total.value - free.value

    def synchronize(self):
        self._call("cudaDeviceSynchronize")


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# --------------------------------------------------------------------------- NVML

class Nvml:
    """GPU name, memory and utilisation: pynvml if it imports, else nvidia-smi."""

    QUERY = "name,memory.total,memory.used,utilization.gpu,driver_version"

    def __init__(self, index):
        self.index = index
        self.backend = None
        self.note = ""
        try:
            import pynvml
            pynvml.nvmlInit()
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self.pynvml = pynvml
            self.backend = "pynvml"
            return
        except Exception as e:
            self.note = f"pynvml: {type(e).__name__}: {e}"
        self.smi = shutil.which("nvidia-smi")
        if self.smi:
            self.backend = "nvidia-smi"
        else:
            self.note += "; nvidia-smi not found"

    def info(self):
        if self.backend == "pynvml":
            p, h = self.pynvml, self.handle
            name = p.nvmlDeviceGetName(h)
            mem = p.nvmlDeviceGetMemoryInfo(h)
            driver = p.nvmlSystemGetDriverVersion()
            return {"name": name.decode() if isinstance(name, bytes) else name,
                    "memory_total_mib": mem.total / MiB, "memory_used_mib": mem.used / MiB,
                    "utilization_gpu": p.nvmlDeviceGetUtilizationRates(h).gpu, "via": "pynvml",
                    "driver_version": driver.decode() if isinstance(driver, bytes) else driver}
        if self.backend == "nvidia-smi":
            out = subprocess.run([self.smi, f"--query-gpu={self.QUERY}", "--format=csv,noheader,nounits",
                                  "-i", str(self.index)], capture_output=True, text=True, timeout=20)
            if out.returncode != 0:
                raise RuntimeError(f"nvidia-smi: {out.stderr.strip() or out.stdout.strip()}")
            name, total, used, util, driver = [x.strip() for x in out.stdout.strip().split(",")]
            return {"name": name, "memory_total_mib": float(total), "memory_used_mib": float(used),
                    "utilization_gpu": _number(util), "driver_version": driver, "via": "nvidia-smi"}
        return None


def _number(text):
    try:
        return float(text)
    except ValueError:
        return None


class UtilSampler:
    """GPU utilisation (%) every 100 ms on a background thread: pynvml, or one
    `nvidia-smi -lms 100` process streaming its lines."""

    def __init__(self, nvml):
        self.nvml = nvml
        self.samples = []  # (perf_counter, percent)
        self.stop_flag = threading.Event()
        self.proc = None
        self.thread = None

    def start(self):
        if self.nvml.backend is None:
            return False
        if self.nvml.backend == "nvidia-smi":
            self.proc = subprocess.Popen([self.nvml.smi, "--query-gpu=utilization.gpu",
                                          "--format=csv,noheader,nounits", "-i",
                                          str(self.nvml.index), "-lms", "100"],
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._run, daemon=True, name="gpu-util-sampler")
        self.thread.start()
        return True

    def _run(self):
        if self.proc is not None:
            for line in self.proc.stdout:
                value = _number(line.strip())
                if value is not None:
                    self.samples.append((now(), value))
                if self.stop_flag.is_set():
                    break
            return
        p, h = self.nvml.pynvml, self.nvml.handle
        while not self.stop_flag.wait(0.1):
            try:
                self.samples.append((now(), float(p.nvmlDeviceGetUtilizationRates(h).gpu)))
            except Exception:
                return

    def stop(self):
        self.stop_flag.set()
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if self.thread is not None:
            self.thread.join(timeout=5)

    def mean(self, start, end):
        values = [v for t, v in self.samples if start <= t <= end]
        return sum(values) / len(values) if values else None


if __name__ == "__main__":  # --help, as every benchmark script answers it
    argparse.ArgumentParser(description=__doc__).parse_args()
