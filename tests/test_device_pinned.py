"""Batches built in page-locked memory for the device stage (csrc/device/pinned.c).

When prefetch_to_device / copy_to_device follows a batch-kind stage (batch,
map+batch, shuffle+batch, padded_batch; a prefetch between them passes it
on), the batch's numeric components are built in pinned buffers and copied
to the device from there, one asynchronous copy per component, with no
memcpy into a staging slot. Checked on the host kind (in this process) and
on the fake CUDA runtime (tests/fake_cuda, subprocesses): values equal to
the host pipeline's (sequential and AUTOTUNE), the counters in it.stats(),
no host memcpy of a batch into pinned memory (the fake, preloaded, counts
them), the fallback for a map after the batch, strings and ragged batches,
pinned buffers reused across epochs, returned when an iterator is dropped
mid-epoch, and charged to the RAM budget once (by the stages that keep the
batches; the pool adds only its blocks' slack), with a budget that refuses a
block sending that batch down the staging path.
"""
import gc
import os
import textwrap
import time
import warnings

import numpy as np
import pytest

import conveyor as cv
from conveyor.data.experimental import AUTOTUNE, copy_to_device, prefetch_to_device

from test_device_cuda import ZERO_LIVE, fake_child, fake_cudart  # noqa: F401 (a fixture)

D = cv.data.Dataset
SANITIZED = bool(os.environ.get("CV_SANITIZED"))  # the sanitizer's memcpy is the process's there


def device_stage(it):
    return next(s for s in it.stats().stages if s.kernel == "PrefetchToDevice")


def host(x):
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


# ---------------------------------------------------------------- the host kind

X = np.arange(64 * 256, dtype=np.float32).reshape(64, 256)
Y = np.arange(64, dtype=np.int64)

KINDS = {
    "batch": ("Batch", lambda par: D.from_tensor_slices((X, Y)).batch(8, num_parallel_calls=par)),
    "map_batch": ("MapAndBatch", lambda par: D.from_tensor_slices((X, Y)).map(
        lambda a, b: (a * 2.0, b + 1), num_parallel_calls=par or 2).batch(8)),
    "shuffle_batch": ("ShuffleBatch", lambda par: D.from_tensor_slices((X, Y)).shuffle(
        16, seed=3).batch(8, num_parallel_calls=par)),
    "padded_batch": ("PaddedBatch", lambda par: D.from_tensor_slices((X, Y)).padded_batch(
        8, padded_shapes=([300], []), padding_values=(-1.0, np.int64(7)))),
}


@pytest.mark.parametrize("par", [None, AUTOTUNE], ids=["sequential", "autotune"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_host_kind_batches_are_built_in_place(kind, par):
    kernel, make = KINDS[kind]
    expected = [tuple(np.asarray(v) for v in e) for e in make(par)]
    apply = prefetch_to_device("host", AUTOTUNE) if par else copy_to_device("host")
    it = iter(make(par).apply(apply))
    got = [tuple(host(v) for v in e) for e in it]
    assert len(got) == len(expected) == 8
    assert all(np.array_equal(g, e) for ge, ee in zip(got, expected) for g, e in zip(ge, ee))
    stages = it.stats().stages
    assert [s.kernel for s in stages][:2] == ["PrefetchToDevice", kernel]
    st = stages[0]
    assert (st.inplace_batches, st.staged_copies, st.staged_bytes) == (8, 0, 0)
    assert st.inplace_bytes == sum(g.nbytes for e in got for g in e)
    assert st.bus_rate == st.copy_rate


def test_host_kind_a_prefetch_between_passes_the_pool_on():
    it = iter(D.from_tensor_slices(X).batch(8).prefetch(2).apply(prefetch_to_device("host", 2)))
    assert np.array_equal(np.concatenate([host(x) for x in it]), X)
    st = device_stage(it)
    assert (st.inplace_batches, st.staged_copies) == (8, 0)


@pytest.mark.parametrize("between, staged", [
    (lambda d: d.batch(8).map(lambda a: a + 1.0), 8),           # a transformation after the batch
    (lambda d: d.map(lambda a: a[:3]).unbatch().batch(8), 0),  # unbatch then batch: in place again
    (lambda d: d.take(64), 64),                                 # no batch at all: slices
], ids=["map_after_batch", "rebatched", "no_batch"])
def test_host_kind_fallback_is_counted(between, staged):
    it = iter(between(D.from_tensor_slices(X)).apply(prefetch_to_device("host", 2)))
    n = sum(1 for _ in it)
    st = device_stage(it)
    assert st.staged_copies == staged and st.inplace_batches == n - staged
    assert (st.staged_bytes > 0) == (staged > 0)


def test_host_kind_strings_stay_and_ragged_batches_are_staged():
    names = [b"n%d" % i for i in range(64)]
    it = iter(D.from_tensor_slices((X, names)).batch(8).apply(prefetch_to_device("host", 2)))
    got = list(it)
    assert [list(e[1].numpy()) for e in got] == [names[i:i + 8] for i in range(0, 64, 8)]
    assert np.array_equal(np.concatenate([host(e[0]) for e in got]), X)
    st = device_stage(it)
    assert (st.inplace_batches, st.staged_copies) == (8, 0)  # the numbers in place; strings stay
    with warnings.catch_warnings():  # a map in Python: this is about its batches
        warnings.simplefilter("ignore")
        ragged = D.range(10).map(lambda x: cv.fill(cv.reshape(x % 3 + 1, [1]), x)).ragged_batch(4)
    expected = [e.to_list() for e in ragged]
    it = iter(ragged.apply(prefetch_to_device("host", 2)))
    assert [e.to_list() for e in it] == expected
    st = device_stage(it)
    assert st.staged_copies == 3 and st.inplace_batches == 0


def _memory_settled():
    """Memory in use once the pipelines of earlier tests are gone (one torn
    down on its own thread still releases what it held meanwhile)."""
    gc.collect()
    deadline = time.monotonic() + 10
    while cv._engine.live_iterators() and time.monotonic() < deadline:
        time.sleep(0.01)
    return cv._engine.memory_in_use()


def test_host_kind_pinned_batches_are_charged_and_returned_mid_epoch():
    before = _memory_settled()
    options = cv.data.Options()
    options.autotune.ram_budget = 256 << 20
    options.experimental_optimization.parallel_batch = False  # the prefetch alone keeps batches
    big = np.ones((64, 64 << 10), np.uint8)  # 64 KiB rows, 512 KiB batches
    # The prefetch holds batches in page-locked memory until the device stage copies them.
    ds = D.from_tensor_slices(big).batch(8).prefetch(3).apply(prefetch_to_device("host", 1))
    it = iter(ds.with_options(options))
    next(it)
    deadline = time.monotonic() + 10
    while device_stage(it).pinned_bytes < 2 * 8 * (64 << 10) and time.monotonic() < deadline:
        time.sleep(0.001)
    st = device_stage(it)
    assert st.pinned_bytes >= 8 * (64 << 10)
    # Charged once: by the prefetch that keeps them, as ordinary batches (whole 4 KiB
    # steps: no slack for the pool to add); not again by the pool.
    charged = cv._engine.memory_in_use() - before
    assert 8 * (64 << 10) <= charged <= 3 * 8 * (64 << 10)
    del it, st
    gc.collect()
    assert cv._engine.memory_in_use() == before


# ---------------------------------------------------------------- the fake CUDA runtime

def pinned_child(fake_cudart, code, **env):
    """fake_child with the fake preloaded, counting memcpys of >= 4 KiB into pinned memory
    (not under a sanitizer, whose runtime keeps its own memcpy)."""
    if not SANITIZED:
        env = {"LD_PRELOAD": fake_cudart, "FAKE_CUDA_COUNT_MEMCPY": 4096, **env}
    return fake_child(fake_cudart, PIPELINES + textwrap.dedent(code), **env)


PIPELINES = """
X = np.arange(64 * 256, dtype=np.float32).reshape(64, 256)   # rows of 1 KiB, batches of 8 KiB
Y = np.arange(64, dtype=np.int64)
KINDS = {
    "batch": lambda par: D.from_tensor_slices((X, Y)).batch(8, num_parallel_calls=par),
    "map_batch": lambda par: D.from_tensor_slices((X, Y)).map(
        lambda a, b: (a * 2.0, b + 1), num_parallel_calls=par or 2).batch(8),
    "shuffle_batch": lambda par: D.from_tensor_slices((X, Y)).shuffle(16, seed=3).batch(
        8, num_parallel_calls=par),
    "padded_batch": lambda par: D.from_tensor_slices((X, Y)).padded_batch(
        8, padded_shapes=([300], []), padding_values=(-1.0, np.int64(7))),
}
stage = lambda it: next(s for s in it.stats().stages if s.kernel == "PrefetchToDevice")
pinned_memcpys = lambda: fake.counts()["host_memcpys_pinned"]
"""


@pytest.mark.parametrize("mode", [{"FAKE_CUDA_DELAY_US": 300}, {"FAKE_CUDA_SYNC": 1}],
                         ids=["async-slow-copies", "synchronous"])
def test_fake_cuda_batches_go_to_the_device_with_no_staging_copy(fake_cudart, mode):
    out = pinned_child(fake_cudart, """
        results = {}
        for name, make in KINDS.items():
            for par in (None, AUTOTUNE):
                expected = list(make(par))
                memcpys, copies = pinned_memcpys(), fake.counts()["copies_h2d"]
                apply = prefetch_to_device("cuda:0", AUTOTUNE) if par else copy_to_device("cuda:0")
                it = iter(make(par).apply(apply))
                got = list(it)
                st = stage(it)
                results[f"{name}/{par}"] = {
                    "equal": len(got) == len(expected) and all(same(g, e) for g, e in zip(got, expected)),
                    "kernel": [s.kernel for s in it.stats().stages][1],
                    "counters": [st.inplace_batches, st.staged_copies, st.staged_bytes],
                    "inplace_bytes": st.inplace_bytes,
                    "bytes": sum(np.asarray(x.numpy()).nbytes for e in got for x in e),
                    "memcpys": pinned_memcpys() - memcpys,
                    "copies": fake.counts()["copies_h2d"] - copies,
                }
                del it, got, st
        # The same batches with a map between the batch and the device stage: packed.
        memcpys = pinned_memcpys()
        it = iter(D.from_tensor_slices(X).batch(8).map(lambda a: a + 1.0).apply(
            prefetch_to_device("cuda:0", 2)))
        ok = all(np.array_equal(x.numpy(), X[8 * i:8 * i + 8] + 1) for i, x in enumerate(it))
        st = stage(it)
        fallback = {"ok": ok, "counters": [st.inplace_batches, st.staged_copies, st.staged_bytes],
                    "memcpys": pinned_memcpys() - memcpys}
        del it, st
        print(json.dumps({"results": results, "fallback": fallback, "misuse": fake.misuse(),
                          "live": drained()}))
        """, **mode)
    kernels = {"batch": "Batch", "map_batch": "MapAndBatch", "shuffle_batch": "ShuffleBatch",
               "padded_batch": "PaddedBatch"}
    for key, r in out["results"].items():
        assert r["equal"], key
        assert r["kernel"] == kernels[key.split("/")[0]], key
        assert r["counters"] == [8, 0, 0], key
        assert r["inplace_bytes"] == r["bytes"], key
        assert r["copies"] == 8 * 2, key  # one asynchronous copy per component
        if not SANITIZED:
            assert r["memcpys"] == 0, key  # no batch-sized memcpy into pinned memory
    assert out["fallback"]["ok"]
    assert out["fallback"]["counters"] == [0, 8, 8 * 8 * 256 * 4]
    if not SANITIZED:
        assert out["fallback"]["memcpys"] == 8  # each batch packed into the ring once
    assert out["misuse"] == {} and out["live"] == ZERO_LIVE


def test_fake_cuda_pinned_batches_are_reused_across_epochs(fake_cudart):
    out = pinned_child(fake_cudart, """
        calls, ok = [], True
        seq = D.from_tensor_slices((X, Y)).batch(8).apply(copy_to_device("cuda:0"))
        for epoch in range(4):
            ok = ok and all(np.array_equal(x.numpy(), X[8 * i:8 * i + 8])
                            for i, (x, y) in enumerate(seq))
            gc.collect()
            calls.append(fake.counts()["host_alloc_calls"])
        ahead = D.from_tensor_slices((X, Y)).map(lambda a, b: (a, b), num_parallel_calls=2).batch(
            8).apply(prefetch_to_device("cuda:0", 2))
        ahead_calls = []
        for epoch in range(4):
            ok = ok and sum(1 for _ in ahead) == 8
            gc.collect()
            ahead_calls.append(fake.counts()["host_alloc_calls"])
        info = cvdevice.staging_cache_info()
        print(json.dumps({"ok": ok, "calls": calls, "ahead": ahead_calls, "info": info,
                          "live_host": fake.live()["host_allocs"], "misuse": fake.misuse(),
                          "live": drained()}))
        """, FAKE_CUDA_DELAY_US=200)
    assert out["ok"]
    calls = out["calls"]
    # Epoch 1 pins; later epochs reuse. The batch is an AUTOTUNE stage: a later
    # epoch with one more batch in flight (a new peak; seen under ThreadSanitizer,
    # 14 then 16) pins that one, but without reuse each epoch would pin 16 more.
    assert calls[0] >= 2 and calls == sorted(calls) and calls[3] - calls[0] < 8, calls
    ahead = out["ahead"]
    # Ahead of the consumer, how many blocks are out at once depends on timing (one more
    # in flight in a later epoch pins one more), but blocks come back: four epochs of 8
    # batches of 2 components never pin more than one epoch's 16.
    assert ahead[3] - calls[3] <= 2 * 8, (calls, ahead)
    assert out["info"]["hits"] >= 3 * 8
    assert out["live_host"] == out["info"]["cached_blocks"]  # every block back in the cache
    assert out["misuse"] == {} and out["live"] == ZERO_LIVE


def test_fake_cuda_an_iterator_dropped_mid_epoch_returns_its_pinned_batches(fake_cudart):
    out = pinned_child(fake_cudart, """
        before_memory = cv._engine.memory_in_use()
        options = cv.data.Options()
        options.autotune.ram_budget = 256 << 20
        big = np.ones((256, 64 << 10), np.uint8)  # 512 KiB batches
        ds = D.from_tensor_slices(big).batch(8, num_parallel_calls=AUTOTUNE).apply(
            prefetch_to_device("cuda:0", 4)).with_options(options)
        it = iter(ds)
        head = [next(it) for _ in range(3)]
        deadline = time.monotonic() + 10
        while stage(it).buffered < 2 and time.monotonic() < deadline:
            time.sleep(0.001)
        st = stage(it)
        mid = {"pinned": st.pinned_bytes, "charged": cv._engine.memory_in_use() - before_memory,
               "inplace": st.inplace_batches, "staged": st.staged_copies}
        del it, st, head
        gc.collect()
        info = cvdevice.staging_cache_info()
        print(json.dumps({"mid": mid, "memory_back": cv._engine.memory_in_use() == before_memory,
                          "cached": info["cached_blocks"], "live_host": fake.live()["host_allocs"],
                          "misuse": fake.misuse(), "live": drained()}))
        """, FAKE_CUDA_DELAY_US=2000)
    mid = out["mid"]
    # The batch stage's results are charged by it (the pool adds no slack: 512 KiB
    # blocks); those on their way to the device are charged by no stage.
    assert mid["pinned"] >= 512 << 10 and 0 <= mid["charged"] <= 256 << 20
    assert mid["inplace"] >= 3 and mid["staged"] == 0
    assert out["memory_back"]
    assert out["live_host"] == out["cached"] >= 1  # all in the staging cache, none held
    assert out["misuse"] == {} and out["live"] == ZERO_LIVE


# ---------------------------------------------------------------- the RAM budget: each byte once

def test_fake_cuda_a_tight_budget_the_host_pipeline_fits_fits_in_place(fake_cudart):
    """A pinned batch is charged by the stages that keep it, as an ordinary batch
    is; the pool adds only its blocks' slack (pinned.h). So a budget of exactly
    the prefetch's two batches, which the host pipeline fits, fits with the
    batches built in page-locked memory: no error, none staged. Batches of a
    size that is not a whole number of 4 KiB steps leave some slack: a few KiB
    more suffice. Dropped mid-epoch, the budget's charge is back to zero."""
    out = pinned_child(fake_cudart, """
        whole = np.ones((64, 64 << 10), np.uint8)      # 512 KiB batches: no slack
        odd = np.ones((64, 8000), np.float32)          # 256,000-byte batches: 2 KiB of slack each
        def run(rows, budget, device, stop=None):
            options = cv.data.Options()
            options.autotune.ram_budget = budget
            options.experimental_optimization.parallel_batch = False  # the prefetch alone keeps batches
            ds = D.from_tensor_slices(rows).batch(8).prefetch(2)
            if device:
                ds = ds.apply(device)
            ds = ds.with_options(options)
            memory = ds._ram_budget()
            it = iter(ds)
            try:
                got = [np.asarray(x.numpy() if hasattr(x, "numpy") else x)
                       for _, x in zip(range(stop or 8), it)]
                error = None
            except Exception as e:
                got, error = [], f"{type(e).__name__}: {e}"
            st = stage(it) if device else None
            r = {"error": error, "n": len(got),
                 "equal": all(np.array_equal(g, rows[8 * i:8 * i + 8]) for i, g in enumerate(got)),
                 "counters": [st.inplace_batches, st.staged_copies] if st else None,
                 "peak": cv._engine.memory_budget_peak(memory)}
            del it, st, got
            gc.collect()
            r["charged_after"] = cv._engine.memory_budget_usage(memory)[0]
            return r
        results = {}
        for name, rows, budget in (("whole", whole, 2 * 8 * (64 << 10)),
                                   ("odd", odd, 2 * 8 * 8000 * 4 + (16 << 10))):
            for dev in ("host", "copy", "prefetch"):
                device = {"host": None, "copy": copy_to_device("cuda:0"),
                          "prefetch": prefetch_to_device("cuda:0", 2)}[dev]
                results[f"{name}/{dev}"] = run(rows, budget, device)
            results[f"{name}/dropped"] = run(rows, budget, prefetch_to_device("cuda:0", 2), stop=3)
        print(json.dumps({"results": results, "misuse": fake.misuse(), "live": drained()}))
        """, FAKE_CUDA_DELAY_US=200)
    for key, r in out["results"].items():
        name, dev = key.split("/")
        budget = 2 * 8 * (64 << 10) if name == "whole" else 2 * 8 * 8000 * 4 + (16 << 10)
        assert r["error"] is None, (key, r["error"])
        assert r["equal"] and r["n"] == (3 if dev == "dropped" else 8), key
        assert r["peak"] <= budget, key
        assert r["charged_after"] == 0, key  # every charge given back, mid-epoch too
        if dev != "host":
            assert r["counters"][1] == 0, key  # none staged: all built in place
            assert r["counters"][0] >= (3 if dev == "dropped" else 8), key
    assert out["misuse"] == {} and out["live"] == ZERO_LIVE


def test_fake_cuda_a_batch_the_budget_refuses_is_built_in_ordinary_memory_and_staged(fake_cudart):
    """The pool hands out a block only when the budget has room for all of it.
    Another pipeline on the same budget (a shuffle's buffer) fills it while the
    third batch is built: that batch alone is built in ordinary memory, charged
    by the prefetch as any batch, staged and counted; the shuffle gone, the
    batches after it are built in place again."""
    out = pinned_child(fake_cudart, """
        row = 32768 + 128                                # 128.5 KiB rows of float32
        X = np.arange(64 * row, dtype=np.float32).reshape(64, row)
        n = 8 * row * 4                                  # 1 MiB + 4 KiB batches: 2 MiB blocks
        budget = 8 << 20
        options = cv.data.Options()
        options.autotune.ram_budget = budget
        options.experimental_optimization.parallel_batch = False  # batches built on demand
        base = D.from_tensor_slices(X).with_options(options)
        ds = base.batch(8).prefetch(1).apply(copy_to_device("cuda:0"))
        memory = ds._ram_budget()
        used = lambda: cv._engine.memory_budget_usage(memory)[0]
        prefetch = lambda it: next(s for s in it.stats().stages if s.kernel == "Prefetch")
        def wait_buffered(it):
            deadline = time.monotonic() + 20
            while prefetch(it).buffered < 1 and time.monotonic() < deadline:
                time.sleep(0.001)
            return prefetch(it).buffered
        it = iter(ds)
        got = [next(it).numpy()]
        steps = {"second_ready": wait_buffered(it)}      # the prefetch holds batch 2: its worker waits
        room = budget - used()
        hog = iter(base.shuffle(room // (row * 4)))     # fills the budget but for less than a row
        next(hog)
        steps["filled"] = [used(), budget]
        got.append(next(it).numpy())                     # batch 3 is built now, and refused
        steps["third_ready"] = wait_buffered(it)
        del hog
        gc.collect()
        got += [x.numpy() for x in it]
        st = stage(it)
        r = {"steps": steps, "n": len(got),
             "equal": all(np.array_equal(g, X[8 * i:8 * i + 8]) for i, g in enumerate(got)),
             "counters": [st.inplace_batches, st.staged_copies, st.staged_bytes]}
        del it, st
        gc.collect()
        r["charged_after"] = used()
        print(json.dumps({"r": r, "misuse": fake.misuse(), "live": drained()}))
        """, FAKE_CUDA_SYNC=1)
    r = out["r"]
    assert r["steps"]["second_ready"] == 1 and r["steps"]["third_ready"] == 1
    used, budget = r["steps"]["filled"]
    assert budget - 2 * 128 * 1024 < used <= budget
    assert r["equal"] and r["n"] == 8
    assert r["counters"] == [7, 1, 8 * (32768 + 128) * 4]  # batch 3 staged, counted
    assert r["charged_after"] == 0
    assert out["misuse"] == {} and out["live"] == ZERO_LIVE
