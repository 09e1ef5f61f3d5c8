"""The CUDA side of prefetch_to_device / copy_to_device (csrc/device/), without a GPU.

1. The loader's error paths, each in a fresh process (the runtime is loaded
   once per process): a missing library, a library that is not libcudart,
   the real libcudart without a driver (where the toolkit is installed), no
   device, and the order in which candidates are tried.
2. The CUDA code path on a fake runtime (tests/fake_cuda/fake_cudart.c, built
   once per session; subprocesses with CONVEYOR_CUDART pointing at it): values,
   the CUDA array interface, DLPack streams and devices, the block cache and
   its events, device indices and the current device, out of memory, resume,
   and no leak of device blocks, pinned memory, events or streams once
   everything is dropped. The fake checks how the runtime is used;
   benchmarks/gpu_check.py checks a GPU.

The host kind, DeviceArray on the host and TensorFlow: test_device.py.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import conveyor as cv

import _fake_cuda

TESTS = os.path.dirname(os.path.abspath(__file__))
# Subprocesses import the conveyor these tests import (the sanitizer run's build first).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(cv.__file__)))
REAL_CUDART = "/usr/local/cuda/lib64/libcudart.so.13"


# ---------------------------------------------------------------- helpers

def child(code, env=None, timeout=60):
    """Run `code` in a fresh interpreter (numpy as np, conveyor as cv, D and the
    two transformations imported); returns its stdout. Fails on a non-zero exit."""
    prelude = textwrap.dedent("""\
        import gc, json, os, sys, threading, time
        import numpy as np
        import conveyor as cv
        from conveyor import device as cvdevice, errors
        from conveyor.data.experimental import prefetch_to_device, copy_to_device, AUTOTUNE
        D = cv.data.Dataset
        """)
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("CONVEYOR_CUDART", "FAKE_CUDA_"))}
    full_env["PYTHONPATH"] = os.pathsep.join([ROOT, TESTS] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    full_env.update(env or {})
    done = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=full_env)
    assert done.returncode == 0, (f"child exited with {done.returncode}\nstdout:\n{done.stdout[-3000:]}"
                                  f"\nstderr:\n{done.stderr[-5000:]}")
    return done.stdout


def child_json(code, env=None, timeout=60):
    """child(), whose last line of output is JSON."""
    return json.loads(child(code, env, timeout).strip().splitlines()[-1])


# ================================================================ 1. the loader

LOADER_CHILD = """
def outcome(fn):
    try:
        fn()
    except Exception as e:
        return [type(e).__name__, str(e)]
    return None
out = {
    "load": outcome(cvdevice.load_cuda),
    "again": outcome(cvdevice.load_cuda),  # once per process: the same outcome
    "available": cvdevice.cuda_available(),
    "count": cvdevice.cuda_device_count(),
    "info": outcome(cvdevice.cuda_info),
    "bandwidth": outcome(lambda: cvdevice.copy_bandwidth("cuda:0", 1 << 16, 1)),
    "apply": outcome(lambda: D.range(3).apply(prefetch_to_device("/gpu:0"))),
    "apply_copy": outcome(lambda: D.range(3).apply(copy_to_device("cuda:0"))),
    "unavailable_is": issubclass(errors.UnavailableError, errors.OpError),
}
# The host kind needs no CUDA.
out["host"] = [int(x.numpy()) for x in D.range(3).apply(prefetch_to_device("host"))]
print(json.dumps(out))
"""


def loader_outcome(library):
    return child_json(LOADER_CHILD, {"CONVEYOR_CUDART": library})


def check_unavailable(out, message):
    """Every way to reach CUDA raised UnavailableError with `message` (a
    callable predicate or the exact text), and the process goes on."""
    def ok(got):
        return got is not None and got[0] == "UnavailableError" and (
            message(got[1]) if callable(message) else got[1] == message)
    for key in ("load", "again", "info", "bandwidth", "apply", "apply_copy"):
        assert ok(out[key]), (key, out[key])
    assert out["again"] == out["load"] == out["apply"]
    assert out["available"] is False and out["count"] == 0
    assert out["unavailable_is"]
    assert out["host"] == [0, 1, 2]


def test_missing_cudart_names_the_path_tried():
    out = loader_outcome("/nonexistent/libcudart.so")
    prefix = ("CUDA is not available: could not load the CUDA runtime library (tried "
              "/nonexistent/libcudart.so: /nonexistent/libcudart.so: ")
    suffix = ("); install the CUDA runtime (pip install nvidia-cuda-runtime-cu12) or set "
              "CONVEYOR_CUDART to the path of libcudart.so")
    check_unavailable(out, lambda m: m.startswith(prefix) and m.endswith(suffix)
                      and "No such file or directory" in m)


def test_a_library_that_is_not_cudart_names_the_missing_symbol():
    path = libz_path()
    if path is None:
        pytest.skip("no libz.so.1 found")
    out = loader_outcome(path)
    check_unavailable(out, f"CUDA is not available: {path} has no symbol cudaGetDeviceCount: it is "
                           f"not a CUDA runtime library (libcudart) of CUDA 11 or later")


def test_real_cudart_without_a_driver_reports_the_runtime_error():
    if not os.path.exists(REAL_CUDART):
        pytest.skip(f"{REAL_CUDART} is not installed")
    out = loader_outcome(REAL_CUDART)
    if out["load"] is None:
        pytest.skip("this machine has a usable CUDA device")
    prefix = "CUDA is not available: no usable CUDA device (cudaGetDeviceCount: "
    suffix = f"; runtime {REAL_CUDART})"
    check_unavailable(out, lambda m: m.startswith(prefix) and m.endswith(suffix) and (
        m.startswith(prefix + "cudaErrorInsufficientDriver: ")
        or m.startswith(prefix + "cudaErrorNoDevice: ")))


def test_fake_runtime_with_no_device(fake_cudart):
    out = child_json(LOADER_CHILD, {"CONVEYOR_CUDART": fake_cudart, "FAKE_CUDA_DEVICES": "0"})
    check_unavailable(out, f"CUDA is not available: no usable CUDA device (cudaGetDeviceCount: "
                           f"cudaErrorNoDevice: no CUDA-capable device is detected; runtime "
                           f"{fake_cudart})")


CANDIDATES_CHILD = """
try:
    cv._engine.cuda_load(chr(10).join(json.loads(sys.argv[1]) if len(sys.argv) > 1 else CANDIDATES))
    print(json.dumps(["ok", cvdevice.cuda_info()]))
except errors.UnavailableError as e:
    print(json.dumps(["UnavailableError", str(e)]))
"""


def libz_path():
    import ctypes.util
    name = ctypes.util.find_library("z") or "libz.so.1"
    return next((p for p in [os.path.join(d, name) for d in
                             ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64")]
                 if os.path.exists(p)), None)


def test_the_loader_tries_every_candidate_until_one_sees_a_device(fake_cudart, tmp_path):
    libz = libz_path()
    # A runtime that loads but sees no device (as CUDA 13's on a driver for CUDA 12).
    no_device = _fake_cuda.build(str(tmp_path), "libfakecudart-nodevice.so", devices=0)
    broken = ["/nonexistent/libcudart.so"] + ([libz] if libz else []) + [no_device]
    out = child_json(f"CANDIDATES = {json.dumps(broken + [fake_cudart])}\n" + CANDIDATES_CHILD)
    assert out == ["ok", {"library": fake_cudart, "device_count": 1, "runtime_version": 12040,
                          "driver_version": 12050}]
    # None works: the first failure of a library that loaded is the one reported.
    out = child_json(f"CANDIDATES = {json.dumps(broken)}\n" + CANDIDATES_CHILD)
    if libz:
        assert out == ["UnavailableError", f"CUDA is not available: {libz} has no symbol "
                       f"cudaGetDeviceCount: it is not a CUDA runtime library (libcudart) of CUDA 11 or later"]
    out = child_json(f"CANDIDATES = {json.dumps(broken[:1] + broken[-1:])}\n" + CANDIDATES_CHILD)
    assert out == ["UnavailableError", f"CUDA is not available: no usable CUDA device (cudaGetDeviceCount: "
                                       f"cudaErrorNoDevice: no CUDA-capable device is detected; runtime "
                                       f"{no_device})"]
    # A runtime that sees no device without an error.
    out = child_json(f"CANDIDATES = {json.dumps([fake_cudart])}\n" + CANDIDATES_CHILD,
                     {"FAKE_CUDA_DEVICES": "-1"})
    assert out == ["UnavailableError", f"CUDA is not available: no usable CUDA device (no CUDA device "
                                       f"found; runtime {fake_cudart})"]


# ================================================================ 2. a fake CUDA runtime

@pytest.fixture(scope="session")
def fake_cudart(tmp_path_factory):
    """The fake runtime, compiled once per session; its path."""
    try:
        path = _fake_cuda.build(str(tmp_path_factory.mktemp("fake_cuda")))
    except subprocess.CalledProcessError as e:
        pytest.fail(f"the fake CUDA runtime does not compile:\n{e.stderr}")
    if path is None:
        pytest.skip("no C compiler to build the fake CUDA runtime")
    return path


FAKE_PRELUDE = """
from _fake_cuda import Fake, LEGACY_STREAM, PER_THREAD_STREAM
fake = Fake(os.environ["CONVEYOR_CUDART"])

def host_values(element):
    return cv.nest.map_structure(
        lambda x: x.numpy() if isinstance(x, cvdevice.DeviceArray) else x, element)

from checkpoint_helpers import plain

def same(got, expected):
    return plain(host_values(got)) == plain(expected)

def drained():
    # Everything conveyor held in the runtime is back: blocks, pinned memory, events, streams
    # (the pinned staging that ended iterators leave for the next epoch once the cache is emptied).
    gc.collect()
    cvdevice.empty_cache()
    return fake.live()
"""


def fake_child(fake_cudart, code, timeout=60, **env):
    env = {"CONVEYOR_CUDART": fake_cudart, **{k: str(v) for k, v in env.items()}}
    return child_json(FAKE_PRELUDE + textwrap.dedent(code), env, timeout)


ZERO_LIVE = {"device_allocs": 0, "device_bytes": 0, "host_allocs": 0, "host_bytes": 0, "events": 0,
             "streams": 0}


@pytest.mark.parametrize("mode", [{"FAKE_CUDA_DELAY_US": 300}, {"FAKE_CUDA_SYNC": 1}],
                         ids=["async-slow-copies", "synchronous"])
def test_fake_cuda_values_equal_the_host_pipeline(fake_cudart, mode):
    out = fake_child(fake_cudart, """
        rng = np.random.default_rng(1)
        pipelines = {
            "images": lambda: D.from_tensor_slices(rng.random((21, 6, 6, 3), dtype=np.float32)).batch(4),
            "dict_strings": lambda: D.from_tensor_slices(
                {"s": [b"a%d" % i for i in range(9)], "x": np.arange(18, dtype=np.int16).reshape(9, 2),
                 "b": np.arange(9) % 3 == 0}).batch(2),
            "scalars": lambda: D.range(7).map(lambda x: (x, cv.cast(x, cv.float16), b"s")),
            "zero_size": lambda: D.from_tensor_slices(np.zeros((5, 0), np.float64)).batch(2),
            "empty": lambda: D.range(0),
        }
        rng_state = rng.bit_generator.state
        results = {}
        for name, make in pipelines.items():
            rng.bit_generator.state = rng_state
            expected = list(make())
            for size in (0, 1, 3, None):
                rng.bit_generator.state = rng_state
                ds = make().apply(copy_to_device("cuda:0") if size == 0 else prefetch_to_device("/gpu:0", size))
                got = list(ds)
                leaves = [x for e in got for x in cv.nest.flatten(e)]
                results[f"{name}/{size}"] = [
                    len(got) == len(expected) and all(same(g, e) for g, e in zip(got, expected)),
                    all(x.device == "cuda:0" and x.__dlpack_device__() == (2, 0)
                        for x in leaves if isinstance(x, cvdevice.DeviceArray)),
                    sorted({type(x).__name__ for x in leaves}),
                ]
                del got, leaves, ds
        counts = fake.counts()
        print(json.dumps({"results": results, "misuse": fake.misuse(), "live": drained(),
                          "copies": counts["copies_h2d"], "reads": counts["copies_d2h"],
                          "not_ready": counts["event_queries_not_ready"]}))
        """, **mode)
    for key, (equal, on_device, types) in out["results"].items():
        assert equal, key
        assert on_device, key
        if key.startswith(("images", "zero_size")):
            assert types == ["DeviceArray"], key
        elif key.startswith("dict_strings"):
            assert types == ["DeviceArray", "EagerTensor"], key  # strings: object arrays on the host
        elif key.startswith("scalars"):
            assert types == ["DeviceArray", "EagerTensor"], key
    assert out["misuse"] == {}
    assert out["live"] == ZERO_LIVE
    # A batch built in page-locked memory: one host-to-device copy per numeric component
    # (images 6 batches of 1, dict_strings 5 of 2); an element packed into the staging
    # ring (scalars: map, no batch): one per element; none for empty ones.
    assert out["copies"] == 4 * (6 + 5 * 2 + 7)
    assert out["reads"] >= out["copies"]  # numpy() copies back


def test_fake_cuda_array_interfaces_and_streams(fake_cudart):
    out = fake_child(fake_cudart, """
        import _dlpack
        # copy_to_device: no worker copies behind the test's back, the logs are exact.
        ds = D.from_tensor_slices((np.arange(48, dtype=np.float32).reshape(4, 3, 4),
                                   np.array([7, 8, 9, 10], np.uint16), np.array([True, False, True, True]))).apply(
            copy_to_device("cuda:0"))
        it = iter(ds)
        x, u, b = next(it)
        r = {}
        records = fake.log("record")
        fake.clear_logs()
        cai = x.__cuda_array_interface__
        # Consumers that ignore the CAI stream (torch.as_tensor) are on the legacy one: it waits too.
        r["cai_waits"] = fake.log("wait")
        r["cai"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in cai.items()}
        r["cai_u_b"] = [u.__cuda_array_interface__["typestr"], b.__cuda_array_interface__["typestr"],
                        u.__cuda_array_interface__["shape"], b.__cuda_array_interface__["stream"]]
        r["data_ptr"] = x.data_ptr
        # The CAI stream is the copy stream: the copy's events were recorded on it.
        r["stream_records_copies"] = cai["stream"] in records
        r["attrs"] = [list(x.shape), str(x.dtype), x.ndim, x.size, x.nbytes, x.device, len(x), repr(x)]
        r["values"] = [x.numpy().tolist(), np.asarray(u).tolist(), np.asarray(b).tolist(),
                       np.asarray(x, dtype=np.float64).dtype.str]
        r["dlpack_device"] = list(x.__dlpack_device__())

        def raised(fn):
            try:
                fn()
            except Exception as e:
                return [type(e).__name__, str(e)]
            return None

        r["stream0"] = raised(lambda: x.__dlpack__(stream=0))
        r["stream-2"] = raised(lambda: x.__dlpack__(stream=-2))
        r["stream_str"] = raised(lambda: x.__dlpack__(stream="1"))
        r["dl_device_cpu"] = raised(lambda: x.__dlpack__(dl_device=(1, 0)))
        r["dl_device_other_gpu"] = raised(lambda: x.__dlpack__(dl_device=(2, 1)))
        r["copy"] = raised(lambda: x.__dlpack__(copy=True))
        r["positional"] = raised(lambda: x.__dlpack__(1))
        r["numpy_from_dlpack"] = raised(lambda: np.from_dlpack(x))  # NumPy takes CPU memory only
        r["asarray_no_copy"] = (raised(lambda: np.asarray(x, copy=False))
                                if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else "NumPy 1.x")
        r["array_copies"] = [np.array(x).tolist() == x.numpy().tolist(),
                             np.array(x, copy=True).ctypes.data != x.data_ptr]
        # Which stream waits on the copy's event, per stream argument.
        waits = {}
        for arg in (None, 1, 2, -1):
            fake.clear_logs()
            capsule = x.__dlpack__(stream=arg)
            waits[str(arg)] = fake.log("wait")
            del capsule
        r["waits"] = waits
        d_plain = _dlpack.describe(x.__dlpack__(dl_device=(2, 0), copy=False))
        d_versioned = _dlpack.describe(x.__dlpack__(max_version=(1, 0), stream=-1))
        r["capsules"] = [d_plain, d_versioned]
        # A consumer's own stream: it waits on the copy, and the block is
        # freed behind an event recorded on it.
        user = fake.stream()
        fake.clear_logs()
        y, _, _ = next(it)
        held = y.__dlpack__(stream=user)
        r["user_wait"] = fake.log("wait") == [user]
        r["y"] = y.numpy().tolist()
        fake.clear_logs()
        del y, _, held
        gc.collect()
        r["user_free_record"] = fake.log("record") == [user]
        # Without a stream argument the block is freed behind the legacy default
        # stream; the components of one element share one block (one free).
        z = next(it)
        fake.clear_logs()
        del z
        gc.collect()
        r["legacy_free_record"] = fake.log("record")
        # The per-thread default stream of the thread that took it is not the one
        # that frees it: the block is freed behind the legacy stream, which it syncs with.
        w = next(it)
        capsule = w[0].__dlpack__(stream=2)
        fake.clear_logs()
        del w, capsule
        gc.collect()
        r["per_thread_free_record"] = fake.log("record")
        fake.clear_logs()
        del x, u, b  # the last stream x was exported to (stream=None) is the legacy one
        gc.collect()
        r["last_stream_free_record"] = fake.log("record")
        r["end"] = list(it) == []
        del it
        fake.destroy_stream(user)
        r["misuse"] = fake.misuse()
        r["live"] = drained()
        print(json.dumps(r))
        """)
    cai = out["cai"]
    assert cai["shape"] == [3, 4] and cai["typestr"] == "<f4" and cai["version"] == 3
    assert cai["data"] == [out["data_ptr"], False] and cai["strides"] is None
    assert isinstance(cai["stream"], int) and cai["stream"] not in (0, 1, 2)
    assert out["stream_records_copies"]
    assert out["cai_u_b"] == ["<u2", "|b1", [], cai["stream"]]
    assert out["attrs"] == [[3, 4], "float32", 2, 12, 48, "cuda:0", 3,
                            "<conveyor.DeviceArray shape=[3,4] dtype=float32 device=cuda:0>"]
    assert out["values"] == [np.arange(12, dtype=np.float32).reshape(3, 4).tolist(), 7, True, "<f8"]
    assert out["dlpack_device"] == [2, 0]
    assert out["stream0"][0] == "ValueError" and "stream 0 is not valid for CUDA" in out["stream0"][1]
    assert out["stream-2"][0] == "ValueError" and "stream -2 is not valid" in out["stream-2"][1]
    assert out["stream_str"][0] == "TypeError"
    assert out["dl_device_cpu"] == ["BufferError", "__dlpack__: the array is on device (2, 0), not (1, 0); "
                                    "conveyor exports device arrays only where they are (numpy() copies "
                                    "to the host)"]
    assert out["dl_device_other_gpu"][0] == "BufferError"
    assert out["copy"][0] == "BufferError" and "copy=True) is not supported for CUDA" in out["copy"][1]
    assert out["positional"][0] == "TypeError"  # stream is keyword-only
    assert out["numpy_from_dlpack"] is not None
    assert out["asarray_no_copy"] == "NumPy 1.x" or out["asarray_no_copy"] == ["ValueError", "__array__(copy=False): a CUDA array cannot be read "
                                      "from the host without a copy (numpy() copies it)"]
    assert out["array_copies"] == [True, True]
    # None and 1: the legacy default stream; 2: the per-thread one; -1: no synchronization.
    assert out["waits"] == {"None": [1], "1": [1], "2": [2], "-1": []}
    legacy, versioned = out["capsules"]
    assert legacy["name"] == "dltensor" and versioned["name"] == "dltensor_versioned"
    assert versioned["version"] == [1, 0] and versioned["flags"] == 0
    for d in (legacy, versioned):
        assert d["data"] == out["data_ptr"] and d["device"] == [2, 0] and d["ndim"] == 2
        assert d["dtype"] == [2, 32, 1] and d["shape"] == [3, 4] and d["strides"] is None
        assert d["byte_offset"] == 0 and d["deleter"]
    assert out["user_wait"] and out["user_free_record"]
    assert out["y"] == np.arange(12, 24, dtype=np.float32).reshape(3, 4).tolist()
    assert out["legacy_free_record"] == [1]
    assert out["per_thread_free_record"] == [1]
    assert out["cai_waits"] == [1]
    assert out["last_stream_free_record"] == [1]
    assert out["end"]
    assert out["misuse"] == {}
    assert out["live"] == ZERO_LIVE


def test_fake_cuda_the_consumer_thread_keeps_its_current_device(fake_cudart):
    """conveyor makes its device current around its CUDA calls and puts the
    thread's device back: a framework on the same runtime keeps its own."""
    out = fake_child(fake_cudart, """
        seen = {}
        fake.set_device(0)
        ds = D.from_tensor_slices(np.arange(12, dtype=np.float32).reshape(4, 3))
        for name, stage in (("copy", copy_to_device("cuda:1")), ("prefetch", prefetch_to_device("cuda:1", 2))):
            it = iter(ds.apply(stage))
            seen[name + " iter"] = fake.current_device()
            x = next(it)
            seen[name + " next"] = fake.current_device()
            capsule = x.__dlpack__(stream=None)
            seen[name + " __dlpack__"] = fake.current_device()
            x.__cuda_array_interface__
            seen[name + " cai"] = fake.current_device()
            values = x.numpy().tolist()
            seen[name + " numpy"] = fake.current_device()
            state = it.save()
            seen[name + " save"] = fake.current_device()
            del x, capsule
            seen[name + " del"] = fake.current_device()
            del it
            gc.collect()
            seen[name + " del it"] = fake.current_device()
        rate = cvdevice.copy_bandwidth("cuda:1", 1 << 16, 2)
        seen["copy_bandwidth"] = fake.current_device()
        print(json.dumps({"seen": seen, "values": values, "misuse": fake.misuse(), "live": drained()}))
        """, FAKE_CUDA_DEVICES=2, FAKE_CUDA_DELAY_US=100)
    assert set(out["seen"].values()) == {0}, out["seen"]
    assert out["values"] == [0.0, 1.0, 2.0]
    assert out["misuse"] == {} and out["live"] == ZERO_LIVE


def test_fake_cuda_capsules_own_their_buffer(fake_cudart):
    """A capsule keeps the element's block alive after the array, the iterator
    and the dataset are gone; one never consumed frees it when collected."""
    out = fake_child(fake_cudart, """
        import _dlpack
        it = iter(D.from_tensor_slices(np.arange(40, dtype=np.int64).reshape(4, 10)).apply(
            prefetch_to_device("cuda:0")))
        capsules = [x.__dlpack__(max_version=(1, 0) if i % 2 else None) for i, x in enumerate(it)]
        del it
        gc.collect()
        held = fake.live()
        cached = cvdevice.staging_cache_info()
        described = [_dlpack.describe(c) for c in capsules]
        names = [_dlpack.capsule_name(c).decode() for c in capsules]
        del capsules
        print(json.dumps({"held": held, "cached": cached, "names": names,
                          "shapes": [d["shape"] for d in described],
                          "live": drained(), "misuse": fake.misuse()}))
        """)
    # The ring is gone: its pinned slots wait in the staging cache, nothing else.
    assert out["held"]["device_allocs"] == 4
    assert out["held"]["host_allocs"] == out["cached"]["cached_blocks"] >= 1
    assert out["held"]["streams"] == 1  # the copy stream lives while a block does
    assert out["names"] == ["dltensor", "dltensor_versioned"] * 2
    assert out["shapes"] == [[10]] * 4
    assert out["live"] == ZERO_LIVE
    assert out["misuse"] == {}


def test_fake_cuda_a_destroyed_consumer_stream_does_not_leak_the_block(fake_cudart):
    out = fake_child(fake_cudart, """
        it = iter(D.from_tensor_slices(np.ones((3, 1000), np.float32)).apply(prefetch_to_device("cuda:0")))
        user = fake.stream()
        x = next(it)
        capsule = x.__dlpack__(stream=user)
        fake.destroy_stream(user)  # the consumer's stream is gone before the array
        del x, capsule
        rest = [e.numpy().sum() for e in it]
        del it
        print(json.dumps({"rest": [float(v) for v in rest], "live": drained(), "misuse": fake.misuse()}))
        """)
    assert out["rest"] == [1000.0, 1000.0]
    assert out["live"] == ZERO_LIVE
    # The event recorded at the free named a stale stream: the runtime said so, and
    # conveyor freed the block instead of caching it.
    assert out["misuse"] == {"bad_handles": 1}


def test_fake_cuda_device_indices(fake_cudart):
    code = """
        def raised(fn):
            try:
                fn()
            except Exception as e:
                return [type(e).__name__, str(e)]
            return None
        r = {"count": cvdevice.cuda_device_count(), "info": cvdevice.cuda_info()}
        # At the latest when the pipeline is built (iter()), before any element.
        r["cuda:3"] = raised(lambda: iter(D.range(3).apply(prefetch_to_device("cuda:3"))))
        r["copy cuda:3"] = raised(lambda: iter(D.range(3).apply(copy_to_device("/device:GPU:3"))))
        r["bandwidth cuda:3"] = raised(lambda: cvdevice.copy_bandwidth("cuda:3", 1 << 16, 1))
        r["cardinality cuda:3"] = raised(lambda: D.range(3).apply(prefetch_to_device("cuda:3")).cardinality())
        last = r["count"] - 1
        for dev in (f"/gpu:{last}", f"cuda:{last}"):
            got = [(x.device, list(x.__dlpack_device__()), x.numpy().tolist(),
                    x.__cuda_array_interface__["data"][0] == x.data_ptr)
                   for x in D.range(3).map(lambda v: v * 10).apply(prefetch_to_device(dev, 2))]
            r[dev] = got
        r["misuse"] = fake.misuse()
        r["live"] = drained()
        print(json.dumps(r))
        """
    one = fake_child(fake_cudart, code)
    assert one["count"] == 1
    assert one["info"] == {"library": fake_cudart, "device_count": 1, "runtime_version": 12040,
                           "driver_version": 12050}
    message = "device cuda:3 does not exist: this machine has 1 CUDA device (cuda:0)"
    assert one["cuda:3"] == one["copy cuda:3"] == ["InvalidArgumentError", message]
    assert one["bandwidth cuda:3"] == one["cardinality cuda:3"] == ["InvalidArgumentError", message]
    assert one["cuda:0"] == [["cuda:0", [2, 0], v, True] for v in (0, 10, 20)]
    two = fake_child(fake_cudart, code, FAKE_CUDA_DEVICES=2)
    assert two["count"] == 2
    assert two["cuda:3"] == ["InvalidArgumentError",
                             "device cuda:3 does not exist: this machine has 2 CUDA devices (cuda:0 to cuda:1)"]
    # Blocks, events and the copy stream all belong to cuda:1 (the fake counts any
    # event recorded on another device's stream, and copies across devices).
    assert two["cuda:1"] == [["cuda:1", [2, 1], v, True] for v in (0, 10, 20)]
    for out in (one, two):
        assert out["misuse"] == {} and out["live"] == ZERO_LIVE


def test_fake_cuda_out_of_device_memory(fake_cudart):
    out = fake_child(fake_cudart, """
        def make():  # 64 KiB elements
            return D.from_tensor_slices(np.arange(40 * 16384, dtype=np.float32).reshape(40, 16384)).apply(
                prefetch_to_device("cuda:0", 2))
        # Dropping each element as it comes: the block cache reuses a few blocks
        # (those in flight, the consumer's), within the limit.
        total = sum(float(x.numpy()[0]) for x in make())
        reused = fake.counts()["mallocs"]
        first_oom = fake.counts()["oom"]
        # Keeping them: the 17th block does not fit.
        kept, error = [], None
        try:
            for x in make():
                kept.append(x)
        except Exception as e:
            error = [type(e).__name__, str(e)]
        n_kept = len(kept)
        ok = all(float(x.numpy()[0]) == i * 16384 for i, x in enumerate(kept))
        del kept
        # After the failure the memory is back, and a new iterator runs to the end.
        del x
        again = sum(1 for _ in make())
        print(json.dumps({"total": total, "mallocs": reused, "first_oom": first_oom, "error": error, "kept": n_kept, "ok": ok,
                          "again": again, "oom": fake.counts()["oom"], "misuse": fake.misuse(),
                          "live": drained()}))
        """, FAKE_CUDA_MALLOC_LIMIT=16 * 65536)
    assert out["total"] == sum(i * 16384 for i in range(40))
    assert out["mallocs"] <= 16 and out["first_oom"] == 0  # not one per element
    assert out["error"] == ["ResourceExhaustedError",
                            "cudaMalloc on cuda:0 failed: cudaErrorMemoryAllocation: out of memory"]
    assert 4 <= out["kept"] <= 16 and out["ok"]  # the rest: in flight when it failed
    assert out["again"] == 40
    assert out["oom"] >= 1
    assert out["misuse"] == {} and out["live"] == ZERO_LIVE


def test_fake_cuda_exact_resume_reads_elements_in_flight_back(fake_cudart):
    out = fake_child(fake_cudart, """
        from checkpoint_helpers import verify_resume, verify_two_restores, run

        def make(size=4):
            return D.from_tensor_slices({"x": np.arange(60, dtype=np.float32).reshape(20, 3),
                                         "s": [b"%d" % i for i in range(20)]}).batch(3).apply(
                prefetch_to_device("cuda:0", size))
        expected = verify_resume(make, breaks=[0, 1, 3, 7])
        verify_two_restores(make, 2, 5)
        verify_resume(lambda: make(0), breaks=[2])
        # A save while the stage holds elements whose copies may still run (5 ms
        # each here): they are read back from the device after their copies.
        it = iter(make(6))
        head = run(it, 1)
        stage = lambda: next(s for s in it.stats().stages if s.kernel == "PrefetchToDevice")
        deadline = time.monotonic() + 10
        while stage().buffered < 4 and time.monotonic() < deadline:
            time.sleep(0.001)
        in_flight = stage().buffered
        reads = fake.counts()["copies_d2h"]
        state = it.save()
        reads = fake.counts()["copies_d2h"] - reads
        tail_here = run(it)
        restored = iter(make(6))
        restored.restore(state)
        first = next(restored)
        tail = run(iter([first])) + run(restored)
        types = sorted({type(v).__name__ for v in cv.nest.flatten(first)})
        del it, restored, first
        print(json.dumps({"n": len(expected), "same": head + tail == expected and tail == tail_here,
                          "in_flight": in_flight, "reads": reads, "types": types,
                          "misuse": fake.misuse(), "live": drained()}))
        """, FAKE_CUDA_DELAY_US=5000)
    assert out["n"] == 7 and out["same"]
    assert out["in_flight"] >= 4 and out["reads"] >= 1
    assert out["types"] == ["DeviceArray", "EagerTensor"]
    assert out["misuse"] == {} and out["live"] == ZERO_LIVE


def test_fake_cuda_dropping_iterators_with_copies_in_flight(fake_cudart):
    out = fake_child(fake_cudart, """
        big = np.arange(16 * 65536, dtype=np.float32).reshape(16, 65536)  # 256 KiB rows
        ds = D.from_tensor_slices(big).batch(4).repeat().apply(prefetch_to_device("cuda:0"))
        kept, times = [], []
        for round in range(8):
            it = iter(ds)
            for i in range(round % 3 + 1):
                kept.append((i, next(it)))
            start = time.monotonic()
            del it
            gc.collect()
            times.append(time.monotonic() - start)
        # Arrays outlive their iterators, read back on another thread and dropped there.
        result = {}
        def consume():
            result["ok"] = all(np.array_equal(x.numpy(), big[4 * i:4 * i + 4]) for i, x in kept)
            kept.clear()
        t = threading.Thread(target=consume)
        t.start(); t.join()
        print(json.dumps({"ok": result["ok"], "slowest": max(times), "live": drained(),
                          "misuse": fake.misuse(), "iterators": cv._engine.live_iterators()}))
        """, FAKE_CUDA_DELAY_US=3000)
    assert out["ok"]
    assert out["slowest"] < 5.0
    assert out["iterators"] == 0
    assert out["misuse"] == {} and out["live"] == ZERO_LIVE


def test_fake_cuda_arrays_kept_across_epochs_hold_only_their_own_blocks(fake_cudart):
    """Each iterator has a block cache of its own: once the iterator is gone, an
    array kept from it (the last batch of an epoch, for a summary) must hold its
    block, not the whole cache."""
    out = fake_child(fake_cudart, """
        ds = D.from_tensor_slices(np.ones((64, 16384), np.float32)).batch(2).apply(
            prefetch_to_device("cuda:0", 8))
        kept, live = [], []
        for epoch in range(4):
            for x in ds:
                pass
            kept.append(x)
            del x
            gc.collect()
            live.append(fake.live()["device_allocs"])
        values = [float(k.numpy().sum()) for k in kept]
        del kept
        print(json.dumps({"live": live, "values": values, "end": drained(), "misuse": fake.misuse()}))
        """, FAKE_CUDA_DELAY_US=100)
    assert out["live"] == [1, 2, 3, 4]
    assert out["values"] == [2 * 16384.0] * 4
    assert out["end"] == ZERO_LIVE and out["misuse"] == {}


def test_fake_cuda_epochs_reuse_the_pinned_staging(fake_cudart):
    """cudaHostAlloc in the first epoch only: the ring's pinned slots wait in
    the staging cache for the next iterator; empty_cache() frees them."""
    out = fake_child(fake_cudart, """
        data = np.arange(32 * 8192, dtype=np.float32).reshape(32, 8192)
        # Slices of 4 rows, not batches: packed into the ring (a batch is built in place).
        ds = D.from_tensor_slices(data.reshape(8, 4, 8192)).apply(prefetch_to_device("cuda:0", 4))
        pinned, infos, ok = [], [], True
        for epoch in range(3):
            got = [x.numpy() for x in ds]
            ok = ok and all(np.array_equal(g, data[4 * i:4 * i + 4]) for i, g in enumerate(got))
            del got
            gc.collect()
            pinned.append(fake.live()["host_allocs"])
            infos.append(cvdevice.staging_cache_info())
        freed = cvdevice.empty_cache()
        print(json.dumps({"ok": ok, "pinned": pinned, "infos": infos, "freed": freed,
                          "after": fake.live()["host_allocs"], "live": drained(),
                          "misuse": fake.misuse()}))
        """, FAKE_CUDA_DELAY_US=200)
    assert out["ok"]
    first = out["infos"][0]["misses"]
    assert 1 <= first <= 5 and [i["misses"] for i in out["infos"]] == [first] * 3
    assert out["infos"][2]["hits"] >= 2 * first
    assert out["pinned"] == [first] * 3  # held by the cache between epochs, nothing more
    assert out["freed"] == out["infos"][2]["cached_bytes"] > 0 and out["after"] == 0
    assert out["misuse"] == {} and out["live"] == ZERO_LIVE


def test_fake_cuda_exit_with_live_arrays_and_capsules(fake_cudart):
    out = child("""
        from _fake_cuda import Fake
        it = iter(D.range(100).batch(10).apply(prefetch_to_device("cuda:0", 4)))
        keep = [next(it), next(it)]
        capsules = [keep[0].__dlpack__(), keep[1].__dlpack__(max_version=(1, 0))]
        half = iter(D.range(100).batch(10).apply(prefetch_to_device("cuda:0", 4)))
        next(half)
        print("ok")  # the interpreter exits with an iterator mid-epoch, arrays and capsules alive
        """, {"CONVEYOR_CUDART": fake_cudart, "FAKE_CUDA_DELAY_US": "1000"}, timeout=30)
    assert out.strip() == "ok"


def test_fake_cuda_copy_bandwidth(fake_cudart):
    out = fake_child(fake_cudart, """
        rate = cvdevice.copy_bandwidth("cuda:0", nbytes=1 << 20, repeats=3)
        print(json.dumps({"rate": rate, "misuse": fake.misuse(), "live": drained()}))
        """, FAKE_CUDA_DELAY_US=100)
    assert 0 < out["rate"] < 3 * (1 << 20) / 300e-6  # three copies of at least 100 us each
    assert out["misuse"] == {} and out["live"] == ZERO_LIVE
