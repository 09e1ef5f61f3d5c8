"""conveyor.jax: the same values, dtypes (after JAX's own canonicalization)
and shapes as the NumPy pipeline, DLPack zero-copy on the CPU, global arrays
with a sharding, and the per-process shard."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import conveyor as tf  # noqa: E402
import conveyor.jax as cj  # noqa: E402

from _jpeg_files import GOOD, needs_files  # noqa: E402


def pipelines():
    n = 10
    rng = np.random.default_rng(1)
    names = np.array([b"name-%d" % i for i in range(n)], dtype=object)
    out = {
        "slices_dict": tf.data.Dataset.from_tensor_slices({
            "a": rng.standard_normal((n, 3)).astype(np.float32), "b": np.arange(n),
            "c": np.arange(n) % 2 == 0, "d": np.arange(n, dtype=np.uint8),
            "h": np.arange(n, dtype=np.float16), "e": np.arange(n, dtype=np.float64)}),
        "slices_tuple": tf.data.Dataset.from_tensor_slices(
            (rng.integers(0, 255, (n, 4, 4, 3)).astype(np.uint8), np.arange(n, dtype=np.int32))),
        "map_batch": tf.data.Dataset.range(n).map(
            lambda x: (tf.cast(x, tf.float32) * 2.5, {"sq": x * x}),
            num_parallel_calls=2).batch(4),
        "strings": tf.data.Dataset.from_tensor_slices({"name": names, "v": np.arange(n) * 0.5}),
        "strings_batched": tf.data.Dataset.from_tensor_slices(
            (names, np.arange(n, dtype=np.int16))).batch(3),
    }
    if GOOD:
        out["jpeg"] = tf.data.Dataset.from_tensor_slices(GOOD).map(
            lambda p: (tf.image.resize(tf.io.decode_jpeg(tf.io.read_file(p), channels=3),
                                       [16, 16]), p)).batch(2)
    return out


def assert_same(a, j):
    if isinstance(a, dict):
        assert type(j) is type(a) and sorted(j) == sorted(a)
        for key in a:
            assert_same(a[key], j[key])
    elif isinstance(a, tuple):
        assert type(j) is type(a) and len(j) == len(a)
        for x, y in zip(a, j):
            assert_same(x, y)
    elif isinstance(a, bytes):
        assert j == a
    elif np.asarray(a).dtype == object:
        assert j == np.asarray(a).tolist()
    else:
        a = np.asarray(a)
        assert isinstance(j, jax.Array)
        assert j.shape == a.shape
        # JAX's rule: without jax_enable_x64, 64-bit types are 32-bit.
        assert j.dtype == jax.dtypes.canonicalize_dtype(a.dtype)
        np.testing.assert_array_equal(np.asarray(j), a.astype(j.dtype))


@pytest.mark.parametrize("name", ["slices_dict", "slices_tuple", "map_batch", "strings",
                                  "strings_batched", pytest.param("jpeg", marks=needs_files)])
def test_same_as_numpy(name):
    ds = pipelines()[name]
    want = list(ds.as_numpy_iterator())
    got = list(cj.as_jax_iterator(ds))
    assert len(got) == len(want)
    for a, j in zip(want, got):
        assert_same(a, j)


def test_zero_copy_on_cpu():
    element = next(tf.data.Dataset.from_tensor_slices(np.ones((4, 8), np.float32))
                   .batch(4).as_numpy_iterator())
    out = cj.to_jax(element)
    assert out.unsafe_buffer_pointer() == element.ctypes.data
    strided = cj.to_jax(np.arange(10, dtype=np.float32)[::2])  # DLPack refuses: copied
    np.testing.assert_array_equal(np.asarray(strided), [0, 2, 4, 6, 8])
    scalars = cj.to_jax((np.float32(2), b"x", np.bytes_(b"y")))
    assert scalars[0].shape == () and scalars[1:] == (b"x", b"y")


def test_global_arrays_with_a_sharding():
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("batch",))
    spec = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("batch"))
    ds = tf.data.Dataset.from_tensor_slices((np.arange(8.0, dtype=np.float32), np.arange(8)))
    batches = list(cj.as_jax_iterator(ds.batch(4), sharding=spec))
    assert len(batches) == 2
    x, y = batches[1]
    assert x.sharding == spec and x.shape == (4,)
    np.testing.assert_array_equal(np.asarray(x), [4, 5, 6, 7])


def test_shard_for_process(monkeypatch):
    ds = tf.data.Dataset.range(10)
    assert [int(x) for x in cj.as_jax_iterator(cj.shard_for_process(ds))] == list(range(10))
    monkeypatch.setattr(jax, "process_count", lambda: 3)
    parts = []
    for index in range(3):
        monkeypatch.setattr(jax, "process_index", lambda index=index: index)
        parts.append([(int(x), bool(ok)) for x, ok in
                      cj.as_jax_iterator(cj.shard_for_process(ds, equal="pad"))])
    assert [len(p) for p in parts] == [4, 4, 4]
    assert sorted(x for p in parts for x, ok in p if ok) == list(range(10))
    from conveyor import sharding
    assert sharding.detect_world() == (2, 3, "jax")


def test_import_error_names_the_extra(run_python):
    out = run_python("""
import sys
sys.modules['jax'] = None   # as if JAX were not installed
try:
    import conveyor.jax
except ImportError as e:
    print(e)
""")
    assert "pip install conveyor[jax]" in out.stdout, out.stderr
