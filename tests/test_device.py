"""prefetch_to_device / copy_to_device and DeviceArray on the host (csrc/device/).

On real threads and real data, in process:

1. Device names and argument checks.
2. The host kind ("host": the device code path on host memory): equivalence
   with the same pipeline without the stage and with "/cpu:0", DLPack on
   kDLCPU, lifetimes, the RAM budget, the final-transformation rule,
   statistics, exact resume.
3. TensorFlow's prefetch_to_device("/cpu:0") on the same pipelines (skipped
   without TensorFlow).

The CUDA loader and the CUDA code path (on a fake runtime): test_device_cuda.py.
"""
import collections
import gc
import os
import threading
import time

import numpy as np
import pytest

import conveyor as cv
from conveyor import device as cvdevice
from conveyor import errors, nest
from conveyor.data.experimental import AUTOTUNE, copy_to_device, prefetch_to_device

import _dlpack
from checkpoint_helpers import plain, run, verify_resume, verify_resume_in_new_process
from checkpoint_helpers import verify_two_restores
from conftest import fork_with_busy_threads

D = cv.data.Dataset
# NumPy 1.x (CI runs the oldest supported one) has no copy= in asarray and
# from_dlpack, and consumes only legacy capsules of non-bool dtypes.
NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
NUMPY_FROM_DLPACK_COPY = np.lib.NumpyVersion(np.__version__) >= "2.1.0"
DeviceArray = cvdevice.DeviceArray


# ---------------------------------------------------------------- helpers

def host_values(element):
    """An element with DeviceArray leaves read back to NumPy (numpy())."""
    return nest.map_structure(lambda x: x.numpy() if isinstance(x, DeviceArray) else x, element)


def device_stage(it):
    return next(s for s in it.stats().stages if s.kernel == "PrefetchToDevice")


def wait_until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


# ---------------------------------------------------------------- device names

@pytest.mark.parametrize("name, expected", [
    ("/gpu:0", ("cuda", 0)), ("/device:GPU:1", ("cuda", 1)), ("gpu", ("cuda", 0)),
    ("cuda", ("cuda", 0)), ("cuda:2", ("cuda", 2)), ("GPU:3", ("cuda", 3)),
    ("/job:localhost/replica:0/task:0/device:GPU:0", ("cuda", 0)),
    ("/job:localhost/replica:0/task:0/device:CPU:0", ("cpu", 0)),
    ("/cpu:0", ("cpu", 0)), ("cpu", ("cpu", 0)), ("/device:CPU:0", ("cpu", 0)),
    ("host", ("host", 0)), (" cuda:1 ", ("cuda", 1)),
])
def test_parse_device_accepts(name, expected):
    assert cvdevice.parse_device(name) == expected


@pytest.mark.parametrize("name", ["tpu:0", "cpu:1", "host:1", "/gpu:", "gpu:-1", "cuda0", "", "/gpu:0/x"])
def test_parse_device_rejects_names(name):
    with pytest.raises(ValueError):
        cvdevice.parse_device(name)


@pytest.mark.parametrize("value", [3, None, b"/gpu:0", ("cuda", 0)])
def test_parse_device_rejects_non_strings(value):
    with pytest.raises(TypeError, match="must be a string"):
        cvdevice.parse_device(value)


def test_bad_arguments_of_the_transformations():
    with pytest.raises(ValueError, match="not a device name"):
        D.range(3).apply(prefetch_to_device("tpu:0"))
    for bad in (-2, 1.5, True, "3"):
        with pytest.raises(ValueError, match="buffer_size must be None, AUTOTUNE or >= 0"):
            prefetch_to_device("host", bad)
    with pytest.raises(ValueError, match="source_device must be the host"):
        copy_to_device("host", source_device="/gpu:0")
    with pytest.raises(TypeError):
        D.range(3).apply(prefetch_to_device(0))


# ================================================================ the host kind

RNG = np.random.default_rng(0)
IMAGES = RNG.random((37, 8, 8, 3), dtype=np.float32)
Point = collections.namedtuple("Point", ["x", "y"])

PIPELINES = {
    "images_uneven_batch": lambda: D.from_tensor_slices(IMAGES).batch(8),
    "images_labels_tuple": lambda: D.from_tensor_slices(
        (IMAGES, np.arange(37, dtype=np.int32))).batch(8, drop_remainder=True),
    "nested_dict": lambda: D.from_tensor_slices(
        {"a": np.arange(20, dtype=np.int16),
         "b": {"c": np.linspace(0, 1, 20), "d": (np.arange(20, dtype=np.uint8), np.arange(20) % 2 == 0)}}
    ).batch(6),
    "namedtuple": lambda: D.from_tensor_slices(
        Point(np.arange(9, dtype=np.uint64), np.arange(9, dtype=np.float16))).batch(4),
    "scalars": lambda: D.range(12),
    "scalar_tuple": lambda: D.from_tensor_slices(
        (np.arange(7, dtype=np.int8), np.arange(7, dtype=np.float64), np.arange(7, dtype=np.uint32) == 3,
         np.arange(7, dtype=np.uint16), np.arange(7, dtype=np.int64))),
    "strings_and_scalars": lambda: D.from_tensor_slices(
        {"name": [b"a", b"bb", b"", b"dddd"], "x": np.arange(4, dtype=np.float32)}),
    "strings_and_batches": lambda: D.from_tensor_slices(
        (np.array([b"x%d" % i for i in range(11)], dtype=object), np.arange(22).reshape(11, 2))).batch(4),
    "strings_only": lambda: D.from_tensor_slices([b"p", b"q", b"r"]).batch(2),
    "empty": lambda: D.range(0),
    "empty_batches": lambda: D.from_tensor_slices(np.zeros((0, 3), np.float32)).batch(2),
    "zero_size_components": lambda: D.from_tensor_slices(np.zeros((5, 0, 3), np.float32)).batch(2),
    "map_batch": lambda: D.range(50).map(lambda x: (x * 2, cv.cast(x, cv.float32) / 4)).batch(7),
    "parallel_map": lambda: D.range(40).map(lambda x: x * x, num_parallel_calls=AUTOTUNE).batch(3),
    "interleave": lambda: D.range(4).interleave(lambda x: D.range(x * 10, x * 10 + 5), cycle_length=2,
                                                block_length=2),
    "repeat": lambda: D.from_tensor_slices(np.arange(6, dtype=np.int32).reshape(3, 2)).repeat(3),
    "seeded_shuffle": lambda: D.range(30).shuffle(10, seed=7).batch(4),
    "many_components": lambda: D.from_tensor_slices(  # more than the 64 offsets kept on the stack
        {f"k{i:02d}": np.arange(6, dtype=np.int32) + i for i in range(70)}).batch(4),
}

# (how the stage is applied, the kind of leaves it yields)
STAGES = {
    "host-0-copy_to_device": (lambda: copy_to_device("host"), "device"),
    "host-0": (lambda: prefetch_to_device("host", 0), "device"),
    "host-1": (lambda: prefetch_to_device("host", 1), "device"),
    "host-3": (lambda: prefetch_to_device("host", 3), "device"),
    "host-AUTOTUNE": (lambda: prefetch_to_device("host", AUTOTUNE), "device"),
    "host-None": (lambda: prefetch_to_device("host"), "device"),
    "host-5000": (lambda: prefetch_to_device("host", 5000), "device"),  # above the stage's cap
    "cpu-None": (lambda: prefetch_to_device("/cpu:0"), "numpy"),
    "cpu-0": (lambda: prefetch_to_device("cpu", 0), "numpy"),
    "cpu-copy_to_device": (lambda: copy_to_device("/cpu:0"), "numpy"),
}


def check_leaves(got, expected, kind):
    """Device leaves where the plain pipeline has numbers; strings as they were."""
    for g, e in zip(nest.flatten(got), nest.flatten(expected)):
        if isinstance(e, bytes) or (isinstance(e, np.ndarray) and e.dtype == object):
            assert type(g) is type(e)
        elif kind == "device":
            assert isinstance(g, DeviceArray), type(g)
            assert g.device == "cpu:0" and g.__dlpack_device__() == (1, 0)
            assert g.shape == np.shape(e) and g.dtype == np.asarray(e).dtype
        else:
            assert type(g) is type(e)


@pytest.mark.parametrize("stage", list(STAGES))
@pytest.mark.parametrize("pipeline", list(PIPELINES))
def test_host_kind_equals_the_pipeline_without_the_stage(pipeline, stage):
    make = PIPELINES[pipeline]
    apply, kind = STAGES[stage]
    expected = list(make())
    ds = make().apply(apply())
    assert ds.element_spec == make().element_spec
    assert ds.cardinality() == make().cardinality()
    got = list(ds)
    assert [plain(e) for e in got] == [plain(e) for e in expected]
    assert [nest.map_structure(lambda _: 0, e) for e in got] == \
        [nest.map_structure(lambda _: 0, e) for e in expected]  # the same structure
    for g, e in zip(got, expected):
        check_leaves(g, e, kind)


def test_host_kind_is_deterministic_across_runs():
    def make():
        return D.range(200).map(lambda x: x * 3, num_parallel_calls=AUTOTUNE).batch(9).apply(
            prefetch_to_device("host", 5))
    runs = [run(iter(make())) for _ in range(4)]
    assert all(r == runs[0] for r in runs)
    assert [e[0][2] for e in runs[0]][:2] == [[0, 3, 6, 9, 12, 15, 18, 21, 24], list(range(27, 54, 3))]


def test_host_kind_repeat_and_infinite_cardinality():
    ds = D.range(3).repeat().apply(prefetch_to_device("host"))
    assert ds.cardinality() == cv.data.INFINITE_CARDINALITY
    it = iter(ds)
    assert [int(next(it).numpy()) for _ in range(10)] == [0, 1, 2] * 3 + [0]


@pytest.mark.filterwarnings("ignore:.*runs in Python per element")  # on purpose
def test_host_kind_errors_arrive_at_their_element_and_the_pipeline_goes_on():
    def fn(x):
        if int(x) == 5:
            raise ValueError("boom at 5")
        return x
    outcomes = {}
    for name, apply in (("plain", None), ("host", prefetch_to_device("host", 3)),
                        ("copy", copy_to_device("host"))):
        ds = D.range(10).map(fn)
        it = iter(ds if apply is None else ds.apply(apply))
        seen = []
        while True:
            try:
                seen.append(int(np.asarray(next(it))))
            except StopIteration:
                break
            except ValueError as e:
                seen.append(str(e))
        outcomes[name] = seen
    assert outcomes["plain"] == [0, 1, 2, 3, 4, "boom at 5", 6, 7, 8, 9]
    assert outcomes["host"] == outcomes["copy"] == outcomes["plain"]


# ---------------------------------------------------------------- DeviceArray on the host

def first_array(shape=(2, 3, 4), dtype=np.float32, size=None):
    data = np.arange(int(np.prod(shape)) * 2).astype(dtype).reshape((2,) + shape)
    it = iter(D.from_tensor_slices(data).apply(prefetch_to_device("host", size)))
    return next(it), it, data[0]


def test_device_array_attributes():
    x, it, expected = first_array()
    assert isinstance(x, DeviceArray) and type(x).__name__ == "DeviceArray"
    assert x.shape == (2, 3, 4) and x.dtype == np.float32 and x.ndim == 3
    assert x.size == 24 and x.nbytes == 96 and len(x) == 2 and x.device == "cpu:0"
    assert repr(x) == "<conveyor.DeviceArray shape=[2,3,4] dtype=float32 device=cpu:0>"
    assert isinstance(x.data_ptr, int) and x.data_ptr % 256 == 0  # staged at 256-byte offsets
    assert not hasattr(x, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match="on the host"):
        x.__cuda_array_interface__
    np.testing.assert_array_equal(x.numpy(), expected)
    np.testing.assert_array_equal(np.asarray(x), expected)
    assert np.asarray(x, dtype=np.int64).dtype == np.int64
    scalar = next(iter(D.range(1).apply(prefetch_to_device("host"))))
    assert scalar.shape == () and scalar.ndim == 0 and scalar.size == 1 and scalar.nbytes == 8
    with pytest.raises(TypeError, match="0-d"):
        len(scalar)
    with pytest.raises(TypeError):
        DeviceArray()
    assert cvdevice.DeviceArray is cv._engine.DeviceArray


def test_numpy_is_a_view_that_keeps_the_array_alive():
    x, it, expected = first_array()
    view = x.numpy()
    assert view.ctypes.data == x.data_ptr
    del x, it
    gc.collect()
    np.testing.assert_array_equal(view, expected)


def test_the_numpy_array_protocol_copies_when_asked():
    """np.array copies (its copy=True default), np.asarray does not (a view of
    the host kind's memory), copy=False refuses a cast (NumPy 2's protocol)."""
    x, it, expected = first_array(dtype=np.int32)
    for a in (np.array(x), np.array(x, copy=True), np.array(x, dtype=np.int32)):
        assert a.ctypes.data != x.data_ptr
        np.testing.assert_array_equal(a, expected)
        a[...] = -1
    np.testing.assert_array_equal(x.numpy(), expected)  # the element's memory is untouched
    assert np.asarray(x).ctypes.data == x.data_ptr
    if not NUMPY2:
        return
    for a in (np.asarray(x), np.asarray(x, copy=False), np.asarray(x, dtype=np.int32, copy=False)):
        assert a.ctypes.data == x.data_ptr
    cast = np.asarray(x, dtype=np.float64)
    assert cast.dtype == np.float64 and cast.ctypes.data != x.data_ptr
    np.testing.assert_array_equal(cast, expected)
    with pytest.raises(ValueError, match="a cast to another dtype needs a copy"):
        np.asarray(x, dtype=np.float64, copy=False)
    with pytest.raises(TypeError):
        np.asarray(x, dtype="not a dtype")


def test_components_of_one_element_share_one_block():
    it = iter(D.from_tensor_slices((np.ones((2, 10), np.float32), np.ones((2, 3), np.int8))).apply(
        prefetch_to_device("host")))
    a, b = next(it)
    assert b.data_ptr - a.data_ptr == 256  # 40 bytes, aligned up to 256


def test_np_from_dlpack_is_zero_copy():
    x, it, expected = first_array()
    a = np.from_dlpack(x)
    assert a.ctypes.data == x.data_ptr
    np.testing.assert_array_equal(a, expected)
    # The consumer's array outlives the DeviceArray, the iterator and the dataset.
    del x, it
    gc.collect()
    np.testing.assert_array_equal(a, expected)


def test_dlpack_capsule_names_and_contents():
    x, it, _ = first_array(shape=(3, 5), dtype=np.int16)
    legacy = x.__dlpack__()
    assert _dlpack.capsule_name(legacy) == b"dltensor" and _dlpack.is_valid(legacy, b"dltensor")
    versioned = x.__dlpack__(max_version=(1, 0))
    assert _dlpack.capsule_name(versioned) == b"dltensor_versioned"
    newer = x.__dlpack__(max_version=(1, 3))
    assert _dlpack.capsule_name(newer) == b"dltensor_versioned"
    older = x.__dlpack__(max_version=(0, 8))  # a consumer of DLPack 0.x gets the legacy struct
    assert _dlpack.capsule_name(older) == b"dltensor"
    copied = x.__dlpack__(max_version=(1, 0), copy=True)
    d_legacy, d_versioned, d_copied = (_dlpack.describe(c) for c in (legacy, versioned, copied))
    for d in (d_legacy, d_versioned):
        assert d["data"] == x.data_ptr
    for d in (d_legacy, d_versioned, d_copied):
        assert d["device"] == (1, 0) and d["ndim"] == 2 and d["shape"] == (3, 5)
        assert d["dtype"] == (0, 16, 1) and d["strides"] is None and d["byte_offset"] == 0
        assert d["deleter"]
    assert d_versioned["version"] == (1, 0) and d_versioned["flags"] == 0
    assert d_copied["flags"] == _dlpack.FLAG_IS_COPIED and d_copied["data"] != x.data_ptr


DTYPES = [(np.bool_, (6, 8)), (np.int8, (0, 8)), (np.int16, (0, 16)), (np.int32, (0, 32)),
          (np.int64, (0, 64)), (np.uint8, (1, 8)), (np.uint16, (1, 16)), (np.uint32, (1, 32)),
          (np.uint64, (1, 64)), (np.float16, (2, 16)), (np.float32, (2, 32)), (np.float64, (2, 64))]


@pytest.mark.parametrize("dtype, code_bits", DTYPES, ids=[np.dtype(d).name for d, _ in DTYPES])
def test_every_dtype_through_dlpack(dtype, code_bits):
    data = (np.arange(30) % 7).astype(dtype).reshape(5, 6)
    x = next(iter(D.from_tensor_slices(data[None]).apply(prefetch_to_device("host"))))
    assert x.dtype == np.dtype(dtype) and x.shape == (5, 6)
    for max_version in (None, (1, 0)):
        assert _dlpack.describe(x.__dlpack__(max_version=max_version))["dtype"] == code_bits + (1,)
    if dtype is np.bool_ and not NUMPY2:
        return  # NumPy 1.x does not take kDLBool
    a = np.from_dlpack(x)
    assert a.dtype == np.dtype(dtype) and a.ctypes.data == x.data_ptr
    np.testing.assert_array_equal(a, data)


@pytest.mark.parametrize("max_version", [None, pytest.param((1, 0), marks=pytest.mark.skipif(
    not NUMPY2, reason="NumPy 1.x consumes legacy capsules only"))])
def test_a_capsule_is_consumed_once(max_version):
    x, it, expected = first_array()
    capsule = x.__dlpack__(max_version=max_version)
    name = _dlpack.capsule_name(capsule)
    a = np.from_dlpack(_dlpack.Capsule(capsule))
    assert _dlpack.capsule_name(capsule) == b"used_" + name
    np.testing.assert_array_equal(a, expected)
    assert a.ctypes.data == x.data_ptr
    with pytest.raises(Exception):
        np.from_dlpack(_dlpack.Capsule(capsule))
    del capsule, x, it
    gc.collect()
    np.testing.assert_array_equal(a, expected)  # the consumer owns the reference now


def test_dlpack_arguments_on_the_host():
    x, it, expected = first_array()
    for stream in (0, 1, 2, -1):
        with pytest.raises(ValueError, match="stream must be None for a CPU array"):
            x.__dlpack__(stream=stream)
    with pytest.raises(BufferError, match=r"on device \(1, 0\), not \(2, 0\)"):
        x.__dlpack__(dl_device=(2, 0))
    with pytest.raises(TypeError, match="dl_device must be"):
        x.__dlpack__(dl_device=1)
    with pytest.raises(TypeError, match="max_version must be"):
        x.__dlpack__(max_version=1)
    with pytest.raises(TypeError):
        x.__dlpack__(None)  # keyword-only
    assert _dlpack.describe(x.__dlpack__(dl_device=(1, 0), copy=False))["data"] == x.data_ptr
    # copy=True: memory of its own.
    c = np.from_dlpack(_dlpack.Capsule(x.__dlpack__(copy=True)))
    assert c.ctypes.data != x.data_ptr
    np.testing.assert_array_equal(c, expected)
    assert np.from_dlpack(_dlpack.Capsule(x.__dlpack__(copy=False))).ctypes.data == x.data_ptr
    if NUMPY_FROM_DLPACK_COPY:
        assert np.from_dlpack(x, copy=True).ctypes.data != x.data_ptr
        assert np.from_dlpack(x, copy=False).ctypes.data == x.data_ptr


EXPORTS = {
    "array": lambda x: None,
    "legacy_capsule": lambda x: x.__dlpack__(),
    "versioned_capsule": lambda x: x.__dlpack__(max_version=(1, 0)),
    "copied_capsule": lambda x: x.__dlpack__(max_version=(1, 0), copy=True),
    "consumed_capsule": lambda x: np.from_dlpack(_dlpack.Capsule(x.__dlpack__())),
    "np_from_dlpack": lambda x: np.from_dlpack(x),
    "numpy_view": lambda x: x.numpy(),
}


@pytest.mark.parametrize("export", list(EXPORTS))
def test_what_a_consumer_drops_gives_the_block_back(export):
    """The block cache hands a freed block to the next element: when whatever
    was exported (capsules consumed or not, views) is dropped before the next
    copy, every element lands at the same address. Kept, each has its own."""
    def addresses(keep):
        it = iter(D.from_tensor_slices(np.ones((30, 5000), np.float32)).apply(copy_to_device("host")))
        seen, kept = set(), []
        for x in it:
            seen.add(x.data_ptr)
            held = EXPORTS[export](x)
            if keep:
                kept.append(held if held is not None else x)
            del x, held
        return seen
    assert len(addresses(keep=False)) == 1
    kept = addresses(keep=True)
    assert len(kept) == (1 if export == "copied_capsule" else 30)


def test_torch_from_dlpack_is_zero_copy():
    torch = pytest.importorskip("torch")
    x, it, expected = first_array()
    t = torch.from_dlpack(x)
    assert t.data_ptr() == x.data_ptr and t.device.type == "cpu"
    assert t.dtype == torch.float32 and tuple(t.shape) == (2, 3, 4)
    np.testing.assert_array_equal(t.numpy(), expected)
    del x, it
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), expected)


# ---------------------------------------------------------------- lifetimes

def test_arrays_outlive_the_iterator_and_the_dataset():
    data = RNG.random((40, 50), dtype=np.float32)
    ds = D.from_tensor_slices(data).batch(8).apply(prefetch_to_device("host", 3))
    it = iter(ds)
    kept = [next(it) for _ in range(3)]
    del it, ds
    gc.collect()
    for i, x in enumerate(kept):
        np.testing.assert_array_equal(x.numpy(), data[8 * i:8 * i + 8])


def test_dropping_iterators_mid_epoch_with_copies_in_flight():
    data = np.arange(64 * 65536, dtype=np.float32).reshape(64, 65536)  # 256 KiB rows
    ds = D.from_tensor_slices(data).batch(8).repeat().apply(prefetch_to_device("host", 8))
    baseline = cv._engine.live_iterators()
    before = cv._engine.memory_in_use()
    start = time.monotonic()
    kept = []
    for i in range(20):
        it = iter(ds)
        for _ in range(i % 4):
            kept.append(next(it))
        if i % 2:
            wait_until(lambda it=it: device_stage(it).buffered >= 2, timeout=2)
        del it
        if i % 5 == 0:
            gc.collect()
    gc.collect()
    assert time.monotonic() - start < 20
    assert cv._engine.live_iterators() == baseline
    assert cv._engine.memory_in_use() == before
    for x in kept[:6]:
        assert x.shape == (8, 65536)
    np.testing.assert_array_equal(kept[0].numpy(), data[:8])


def test_iterating_and_freeing_on_other_threads():
    data = np.arange(30 * 100, dtype=np.int32).reshape(30, 100)
    ds = D.from_tensor_slices(data).batch(3).apply(prefetch_to_device("host"))
    results, errors_seen = {}, []

    def consume(k):
        try:
            results[k] = [x for x in ds]
        except Exception as e:  # pragma: no cover - reported below
            errors_seen.append(e)
    threads = [threading.Thread(target=consume, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors_seen
    for k in range(3):
        assert [x.numpy().tolist() for x in results[k]] == [data[i:i + 3].tolist() for i in range(0, 30, 3)]
    # The last references drop on a thread that did not make them.
    dropper = threading.Thread(target=results.clear)
    dropper.start()
    dropper.join()


def test_exit_with_live_host_arrays(run_python):
    done = run_python("""
        import numpy as np, conveyor as cv
        from conveyor.data.experimental import prefetch_to_device
        it = iter(cv.data.Dataset.range(100).batch(10).apply(prefetch_to_device("host", 4)))
        keep = [next(it), next(it)]
        capsule = keep[0].__dlpack__()
        view = np.from_dlpack(keep[1])
        print("ok")
        """, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


# ---------------------------------------------------------------- the RAM budget

def with_budget(ds, budget):
    options = cv.data.Options()
    options.autotune.ram_budget = budget
    return ds.with_options(options)


def test_the_staging_ring_is_charged_to_the_ram_budget():
    before = cv._engine.memory_in_use()
    # copy_to_device: one packing turn, on the consumer's thread; on the host
    # every copy is complete at once, so the turn keeps reusing one slot.
    ds = D.from_tensor_slices(np.ones((10, 1000), np.float32)).apply(copy_to_device("host"))
    it = iter(with_budget(ds, 64 << 20))
    next(it)
    assert cv._engine.memory_in_use() - before == 1 << 20  # slots grow in 1 MiB steps
    for _ in range(5):
        next(it)
    stage = device_stage(it)
    assert stage.name == "CopyToDeviceDataset" and stage.ring_slots == 2
    assert stage.staging_bytes == 1 << 20 == cv._engine.memory_in_use() - before
    # Elements of 1.5 MiB: slots of 2 MiB, as many as turns pack at once.
    ds2 = D.from_tensor_slices(np.ones((12, 393216), np.float32)).apply(prefetch_to_device("host", 2))
    it2 = iter(with_budget(ds2, 64 << 20))
    x = [next(it2) for _ in range(6)]
    # Read once the stage is still: a turn also holds the input element it packs.
    assert wait_until(lambda: (lambda st: st.buffered >= 2 and not st.pulling and not st.processing)(
        device_stage(it2)))
    stage2 = device_stage(it2)
    assert stage2.staging_bytes % (2 << 20) == 0
    assert 2 << 20 <= stage2.staging_bytes <= stage2.ring_slots * (2 << 20)
    # memory_in_use() sums every budget: the RAM budget's ring, and the device
    # budget of the elements waiting in the stage (bytes_held, not RAM).
    assert stage2.bytes_held == stage2.buffered * x[0].nbytes
    # Waiting elements are device memory: counted by the stage, not as RAM.
    assert cv._engine.memory_in_use() - before == (1 << 20) + stage2.staging_bytes
    del it, it2
    gc.collect()
    assert cv._engine.memory_in_use() == before
    del x  # the elements are not RAM (device memory, here the host's)
    assert cv._engine.memory_in_use() == before


# ---------------------------------------------------------------- the staging cache

def test_the_next_epoch_takes_the_last_epochs_staging():
    cvdevice.empty_cache()
    before = cvdevice.staging_cache_info()
    # Slices, not batches: they are packed into the staging ring (a batch is built in place).
    ds = D.from_tensor_slices(np.arange(48 * 40000, dtype=np.float32).reshape(6, 8, 40000))
    staged = ds.apply(prefetch_to_device("host", 2))
    expected = [b.sum() for b in ds]
    charged, infos = [], []
    for epoch in range(3):
        it = iter(staged)
        sums = [x.numpy().sum() for x in it]
        assert sums == expected
        charged.append(device_stage(it).staging_bytes)
        del it
        gc.collect()
        infos.append(cvdevice.staging_cache_info())
    # Epoch 1 pins its slots; epochs 2 and 3 take them back (one slot per
    # packing turn, at most CV_DEVICE_MAX_WORKERS + 1), charged the same.
    new = [i["misses"] - before["misses"] for i in infos]
    assert 1 <= new[0] <= 5 and new[1] == new[0] and new[2] == new[0]
    assert infos[2]["hits"] - before["hits"] >= 2 * new[0]
    assert infos[0]["cached_blocks"] == infos[2]["cached_blocks"] == new[0]
    assert infos[2]["cached_bytes"] == charged[0] == charged[2]
    # Two iterators at once never share a slot: the second pins its own.
    a, b = iter(staged), iter(staged)
    assert [(x.numpy().sum(), y.numpy().sum()) for x, y in zip(a, b)] == list(zip(expected, expected))
    del a, b
    gc.collect()
    assert cvdevice.staging_cache_info()["cached_blocks"] >= 2
    freed = cvdevice.empty_cache()
    assert freed >= infos[2]["cached_bytes"]
    assert cvdevice.staging_cache_info()["cached_bytes"] == 0 and cvdevice.empty_cache() == 0


def test_the_staging_cache_is_bounded_oldest_out():
    cvdevice.empty_cache()
    mib = 1 << 20
    for megabytes in (300, 250):  # 550 MiB: past the 512 MiB bound
        big = D.from_tensors(np.ones(megabytes * mib, np.uint8)).apply(copy_to_device("host"))
        assert [x.nbytes for x in big] == [megabytes * mib]
        gc.collect()
        info = cvdevice.staging_cache_info()
        assert info["cached_bytes"] == megabytes * mib and info["cached_blocks"] == 1, info
    assert cvdevice.empty_cache() == 250 * mib


@fork_with_busy_threads  # the stage's threads may still be winding down at fork()
def test_a_fork_child_starts_with_an_empty_staging_cache(run_python):
    done = run_python("""
        import gc, os, numpy as np, conveyor as cv
        from conveyor import device
        from conveyor.data.experimental import prefetch_to_device
        ds = cv.data.Dataset.range(100).batch(10).apply(prefetch_to_device("host", 2))
        assert sum(int(x.numpy().sum()) for x in ds) == 4950
        gc.collect()
        assert device.staging_cache_info()["cached_blocks"] >= 1
        pid = os.fork()
        if pid == 0:
            ok = device.staging_cache_info()["cached_blocks"] == 0
            ok = ok and sum(int(x.numpy().sum()) for x in ds) == 4950
            ok = ok and device.staging_cache_info()["cached_blocks"] >= 1 and device.empty_cache() > 0
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), device.staging_cache_info()["cached_blocks"] >= 1)
        """, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "True"]


@pytest.mark.parametrize("apply", [lambda: prefetch_to_device("host", 2), lambda: copy_to_device("host")],
                         ids=["prefetch_to_device", "copy_to_device"])
def test_a_tiny_ram_budget_fails_naming_the_stage(apply):
    before = cv._engine.memory_in_use()
    # Slices of 4 rows: packed into the staging ring, whose 1 MiB slot does not fit.
    ds = with_budget(D.from_tensor_slices(np.ones((2, 4, 1000), np.float32)).apply(apply()), 100_000)
    it = iter(ds)
    with pytest.raises(errors.ResourceExhaustedError) as info:
        next(it)
    message = str(info.value)
    assert message.startswith("PrefetchToDevice: RAM budget exceeded: this stage holds 0 bytes and "
                              "needs 1.0 MiB more"), message
    assert "options.autotune.ram_budget" in message and "lower the batch size" in message
    del it
    gc.collect()
    assert cv._engine.memory_in_use() == before


# ---------------------------------------------------------------- the final transformation

@pytest.mark.parametrize("follow", [
    lambda d: d.map(lambda x: x), lambda d: d.batch(2), lambda d: d.prefetch(1), lambda d: d.take(1),
    lambda d: d.skip(1), lambda d: d.repeat(2), lambda d: d.filter(lambda x: True),
    lambda d: d.shuffle(4), lambda d: d.cache(), lambda d: d.concatenate(D.range(3)),
    lambda d: D.zip((d, D.range(3))), lambda d: D.range(3).concatenate(d),
    lambda d: d.apply(prefetch_to_device("host")), lambda d: d.apply(copy_to_device("host")),
    lambda d: d.with_options(cv.data.Options()).map(lambda x: x),
], ids=["map", "batch", "prefetch", "take", "skip", "repeat", "filter", "shuffle", "cache",
        "concatenate", "zip", "concatenated_onto", "prefetch_to_device", "copy_to_device",
        "map_after_with_options"])
@pytest.mark.parametrize("stage", [lambda: prefetch_to_device("host"), lambda: copy_to_device("host"),
                                   lambda: prefetch_to_device("/cpu:0")],
                         ids=["prefetch_to_device", "copy_to_device", "cpu"])
def test_nothing_but_with_options_may_follow(stage, follow):
    ds = D.range(3).apply(stage())
    with pytest.raises(errors.InvalidArgumentError, match="must be the final transformation"):
        follow(ds)


def test_with_options_may_follow():
    options = cv.data.Options()
    options.deterministic = True
    ds = D.range(5).apply(prefetch_to_device("host")).with_options(options).with_options(cv.data.Options())
    assert [int(x.numpy()) for x in ds] == list(range(5))


# ---------------------------------------------------------------- statistics

def test_statistics_name_the_stage():
    it = iter(D.range(20).batch(4).apply(prefetch_to_device("host", 3)))
    list(it)
    stage = it.stats().stages[0]  # the last dataset of the pipeline
    assert stage.kernel == "PrefetchToDevice" and stage.name == "PrefetchToDeviceDataset"
    assert stage.elements == 5 and stage.errors == 0


def test_statistics_of_the_copies():
    it = iter(D.from_tensor_slices((np.ones((6, 1000), np.float32), [b"s"] * 6)).apply(
        prefetch_to_device("host", 2)))
    got = [next(it) for _ in range(4)]
    stage = device_stage(it)
    assert stage.copies >= 4 and stage.copy_bytes == stage.copies * 4096  # 4000 bytes, 256-aligned
    assert stage.copy_time > 0 and stage.copy_rate == stage.copy_bytes / stage.copy_time
    workers = max(1, min(4, cv._engine.cpu_count() // 2))
    assert stage.ring_slots == workers + 1 and stage.ring_busy == 0  # host copies end at once
    assert stage.staging_bytes % (1 << 20) == 0 and 1 << 20 <= stage.staging_bytes <= stage.ring_slots << 20
    assert stage.device_bytes >= 4 * 4096  # blocks in 4 KiB steps
    assert "copies" in str(it.stats()) and "page-locked" in str(it.stats())
    plain_stage = it.stats().stages[1]
    assert plain_stage.copies == 0 and plain_stage.ring_slots == 0
    del got


# ---------------------------------------------------------------- as_numpy_iterator

def test_as_numpy_iterator_gives_numpy():
    ds = D.from_tensor_slices({"x": np.arange(6).reshape(3, 2), "s": [b"a", b"b", b"c"]}).apply(
        prefetch_to_device("host"))
    got = list(ds.as_numpy_iterator())
    if any(isinstance(v, DeviceArray) for e in got for v in nest.flatten(e)):
        pytest.skip("as_numpy_iterator() does not convert device arrays yet")
    assert [plain(e) for e in got] == [plain(e) for e in D.from_tensor_slices(
        {"x": np.arange(6).reshape(3, 2), "s": [b"a", b"b", b"c"]}).as_numpy_iterator()]
    assert all(isinstance(e["x"], np.ndarray) for e in got)


# ---------------------------------------------------------------- exact resume

def resumable(size):
    return lambda: D.from_tensor_slices(
        {"x": np.arange(120, dtype=np.float32).reshape(40, 3), "s": [b"%d" % i for i in range(40)]}
    ).map(lambda d: {"x": d["x"] * 2, "s": d["s"]}).batch(3).apply(
        copy_to_device("host") if size == "copy" else prefetch_to_device("host", size))


@pytest.mark.parametrize("size", ["copy", 0, 1, 3, None])
def test_exact_resume(size):
    expected = verify_resume(resumable(size))
    assert len(expected) == 14
    verify_two_restores(resumable(size), 3, 9)


def test_resume_of_a_save_taken_with_elements_in_flight():
    make = resumable(8)
    expected = run(iter(make()))
    it = iter(make())
    head = run(it, 2)
    assert wait_until(lambda: device_stage(it).buffered >= 6)
    state = it.save()
    tail_here = run(it)
    restored = iter(make())
    restored.restore(state)
    first = next(restored)
    assert isinstance(first["x"], DeviceArray) and isinstance(first["s"], np.ndarray)
    tail = [plain(first)] + run(restored)
    assert tail == tail_here and head + tail == expected
    # A state saved from the device stage restores into the same pipeline without it.
    it = iter(make())
    run(it, 5)
    state = it.save()
    assert run(iter(make())) == expected and state


def test_resume_in_a_new_process():
    code = """
        import numpy as np
        import conveyor as cv
        from conveyor.data.experimental import prefetch_to_device
        def make():
            return cv.data.Dataset.range(30).map(lambda x: (x, cv.cast(x, cv.float32) * 0.5)).batch(4).apply(
                prefetch_to_device("host", 3))
        """
    expected = verify_resume_in_new_process(code, breaks=[3])
    assert len(expected) == 8


# ================================================================ TensorFlow

@pytest.fixture(scope="module")
def tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return pytest.importorskip("tensorflow")


TF_PIPELINES = {
    "images": lambda m: m.data.Dataset.from_tensor_slices(IMAGES).batch(8),
    "dict_strings": lambda m: m.data.Dataset.from_tensor_slices(
        {"s": [b"a", b"bb", b"", b"dddd", b"e"], "x": np.arange(10, dtype=np.int32).reshape(5, 2),
         "f": np.linspace(0, 1, 5).astype(np.float16)}).batch(2),
    "scalars": lambda m: m.data.Dataset.range(6).map(lambda x: (x, m.cast(x, m.float32) * 0.5)),
}


@pytest.mark.parametrize("pipeline", list(TF_PIPELINES))
def test_tensorflow_prefetch_to_device_cpu_gives_the_same_elements(tf, pipeline):
    make = TF_PIPELINES[pipeline]
    tf_prefetch = [plain(e) for e in make(tf).apply(
        tf.data.experimental.prefetch_to_device("/cpu:0")).as_numpy_iterator()]
    tf_copy = [plain(e) for e in make(tf).apply(
        tf.data.experimental.copy_to_device("/cpu:0")).as_numpy_iterator()]
    assert tf_copy == tf_prefetch and tf_prefetch
    cpu = list(make(cv).apply(prefetch_to_device("/cpu:0")))
    host = list(make(cv).apply(prefetch_to_device("host")))
    copied = list(make(cv).apply(copy_to_device("host")))
    assert [plain(e) for e in cpu] == tf_prefetch
    assert [plain(host_values(e)) for e in host] == tf_prefetch
    assert [plain(host_values(e)) for e in copied] == tf_prefetch
    tf_spec = make(tf).apply(tf.data.experimental.prefetch_to_device("/cpu:0")).element_spec
    cv_spec = make(cv).apply(prefetch_to_device("host")).element_spec
    assert nest.map_structure(lambda s: (tuple(s.shape), s.dtype.name), cv_spec) == \
        nest.map_structure(lambda s: (tuple(s.shape), s.dtype.name), tf_spec)
