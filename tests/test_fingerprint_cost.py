"""The pipeline fingerprint (conveyor/data/checkpoint.py) costs nothing
unless a state is saved or restored: iterating, even to the end, reads no
array for it (issue 26). Where it is computed, each array is hashed once
by cv_hash128 (csrc/core/hash128.c) through _engine.hash_buffer."""
import gc
import os
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import conveyor as cv
from conveyor import _engine, errors
from conveyor.data import checkpoint

D = cv.data.Dataset
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def hashed(monkeypatch):
    """The byte counts each call of the array hash was given."""
    calls = []

    def counting(buffer):
        calls.append(memoryview(buffer).nbytes)
        return _engine.hash_buffer(buffer)

    monkeypatch.setattr(checkpoint, "_hash_buffer", counting)
    return calls


def _data(rows=20_000, seed=0):  # x: 20,000 x 100 float32 = 8 MB
    rng = np.random.default_rng(seed)
    return rng.random((rows, 100), dtype=np.float32), rng.integers(0, 10, rows)


def _pipeline(x, y):
    return D.from_tensor_slices((x, y)).batch(128).prefetch(cv.data.AUTOTUNE)


def test_new_datasets_iterated_to_the_end_hash_no_array(hashed):
    x, y = _data()
    for _ in range(3):  # a new dataset per epoch, as training scripts do
        it = iter(_pipeline(x, y))
        assert sum(len(b[0]) for b in it) == len(x)
    ds = _pipeline(x, y)
    for _ in range(2):  # one dataset iterated again
        assert sum(1 for _ in ds) == 157
    assert hashed == []
    state = it.save()  # the finished one: now, and only now, its arrays are hashed
    assert sorted(hashed) == sorted([x.nbytes, y.nbytes])
    assert it.save() == state and len(hashed) == 2  # hashed once


def test_a_finished_state_saves_restores_and_refuses_another_pipeline(hashed):
    x, y = _data()
    it = iter(_pipeline(x, y))
    for _ in it:
        pass
    state = it.save()
    again = iter(_pipeline(x, y))
    again.restore(state)
    assert list(again) == []
    x2 = x.copy()
    x2[-1, -1] += 1  # one value, at the very end
    with pytest.raises(errors.FailedPreconditionError, match="different pipeline"):
        iter(_pipeline(x2, y)).restore(state)


def test_a_changed_array_is_refused_mid_epoch():
    x, y = _data()
    it = iter(_pipeline(x, y))
    next(it), next(it)
    state = it.save()
    for change in ((x.shape[0] // 2, 50), (0, 0), (-1, -1)):
        x2 = x.copy()
        x2[change] = -x2[change] - 1
        with pytest.raises(errors.FailedPreconditionError, match="different pipeline"):
            iter(_pipeline(x2, y)).restore(state)
    it2 = iter(_pipeline(x.copy(), y.copy()))  # equal contents: the same pipeline
    it2.restore(state)
    np.testing.assert_array_equal(next(it2)[0], x[256:384])


def test_the_recipe_of_a_finished_iterator_equals_the_fingerprint():
    x, y = _data(1000)
    scale = np.float32(3)
    ds = D.from_tensor_slices({"x": x, "y": y}).map(lambda e: e["x"] * scale).batch(7)
    recipe = checkpoint.finished_print(ds)
    assert recipe.digest() == checkpoint.fingerprint(ds)
    strided = x[:, ::2]  # not contiguous: hashed in C order, as its copy
    assert (checkpoint.fingerprint(D.from_tensor_slices(strided))
            == checkpoint.fingerprint(D.from_tensor_slices(strided.copy())))


def test_a_finished_iterator_keeps_neither_the_dataset_nor_its_functions():
    class Model:  # an object a map function closes over
        pass

    def make(model):
        return _pipeline(x, y).map(lambda a, b: (a, b) if model else (a, b))

    model = Model()
    x, y = _data(1000)
    ds = make(model)
    alive = weakref.ref(ds), weakref.ref(model)
    it = iter(ds)
    del ds, model
    for _ in it:
        pass
    gc.collect()
    assert alive[0]() is None and alive[1]() is None
    assert len(it.save()) > 0


def test_read_only_arrays_are_hashed_once_across_datasets(hashed):
    x, y = _data(1000)
    x.flags.writeable = False
    y.flags.writeable = False
    prints = {checkpoint.fingerprint(_pipeline(x, y)) for _ in range(3)}
    assert len(prints) == 1 and len(hashed) == 2
    w = np.ones(10)  # writable: it may change between datasets, hashed by each
    for value in (1, 2):
        w[:] = value
        checkpoint.fingerprint(D.from_tensor_slices(w))
    assert len(hashed) == 4


def test_hash_buffer_is_fixed_and_sees_every_byte():
    # A state saved on one machine restores on another: the value is pinned.
    assert _engine.hash_buffer(b"conveyor").hex() == "f6c3841b798efcf8e6747b4744550516"
    assert _engine.hash_buffer(bytes(range(200))).hex() == "956219af40ac6925d50ae4adddcaed6a"
    base = bytes(range(256)) * 5
    seen = {_engine.hash_buffer(base[:n]) for n in range(len(base))}
    assert len(seen) == len(base)  # every length differs, zero tails included
    zeros = bytearray(300)
    digests = {_engine.hash_buffer(bytes(zeros))}
    for i in range(300):
        zeros[i] = 1
        digests.add(_engine.hash_buffer(bytes(zeros)))
        zeros[i] = 0
    assert len(digests) == 301
    with pytest.raises(TypeError):
        _engine.hash_buffer("text")


def test_a_state_restores_in_another_process(tmp_path):
    make = textwrap.dedent("""
        import numpy as np, sys
        import conveyor as cv
        x = np.arange(300_000, dtype=np.float32).reshape(3000, 100)
        y = np.arange(3000) % 7
        ds = cv.data.Dataset.from_tensor_slices((x, y)).batch(128).prefetch(cv.data.AUTOTUNE)
        it = iter(ds)
    """)
    path = tmp_path / "state"
    save = make + f"next(it); next(it); open({str(path)!r}, 'wb').write(it.save())\n"
    restore = make + (f"it.restore(open({str(path)!r}, 'rb').read())\n"
                      "print(float(next(it)[0][0, 0]))\n")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for code in (save, restore):
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=120, cwd=str(tmp_path))
        assert out.returncode == 0, out.stderr
    assert float(out.stdout.split()[-1]) == 256 * 100


def test_a_format_1_state_is_refused_with_a_reason():
    it = iter(D.range(5))
    next(it)
    state = bytearray(it.save())
    state[len(checkpoint._MAGIC)] = 1  # the version field
    body = bytes(state[:-4])
    import struct
    import zlib
    state = body + struct.pack("<I", zlib.crc32(body))
    with pytest.raises(errors.FailedPreconditionError, match="older conveyor"):
        iter(D.range(5)).restore(state)
