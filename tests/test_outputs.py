"""Output arrays: zero-copy lifetime, writability, Python types of scalars and strings."""
import gc

import numpy as np
import pytest

import conveyor as tf
from _isolated import assert_isolated_ok

Dataset = tf.data.Dataset



def churn():
    """Allocate and free a lot of engine memory, to reuse freed buffers."""
    for k in range(20):
        d = Dataset.from_tensor_slices(np.full((64, 256), -k, np.float64)).batch(8)
        for _ in d:
            pass


def test_slice_outputs_outlive_dataset_and_iterator():
    src = np.arange(4 * 1000, dtype=np.float64).reshape(4, 1000)
    ds = Dataset.from_tensor_slices(src)
    it = iter(ds)
    rows = [next(it), next(it)]
    del it, ds
    gc.collect()
    churn()
    np.testing.assert_array_equal(rows[0], src[0])
    np.testing.assert_array_equal(rows[1], src[1])


def test_batch_outputs_outlive_pipeline():
    ds = Dataset.range(1000).map(lambda x: np.full((16,), x, np.int64), num_parallel_calls=2)
    ds = ds.batch(50).prefetch(2)
    batches = list(ds)
    del ds
    gc.collect()
    churn()
    for i, b in enumerate(batches):
        np.testing.assert_array_equal(b[:, 0], np.arange(i * 50, i * 50 + 50))


def test_outputs_are_zero_copy_views():
    ds = Dataset.from_tensor_slices(np.arange(12.0).reshape(4, 3))
    a = next(iter(ds))
    assert not a.flags.owndata
    assert a.base is not None
    b = next(iter(ds))
    assert np.shares_memory(a, b)  # both views of the engine's single copy of the source
    for x in Dataset.range(6).batch(3):
        assert not x.flags.owndata and x.base is not None


def test_base_keeps_memory_alive_even_if_view_of_view():
    ds = Dataset.from_tensor_slices(np.arange(20.0).reshape(2, 10))
    row = next(iter(ds))
    view = row[2:5]
    del row, ds
    gc.collect()
    churn()
    np.testing.assert_array_equal(view, [2.0, 3.0, 4.0])


def test_slices_are_read_only():
    row = next(iter(Dataset.from_tensor_slices(np.arange(6).reshape(3, 2))))
    assert not row.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        row[0] = 5
    with pytest.raises(ValueError):
        row.flags.writeable = True


def test_slices_read_only_through_prefetch_take_repeat():
    ds = Dataset.from_tensor_slices(np.arange(6).reshape(3, 2)).repeat(2).take(4).prefetch(2)
    for row in ds:
        assert not row.flags.writeable


def test_from_tensors_output_read_only():
    # the same element is produced again by every iterator/epoch: it must not be writable
    out = list(Dataset.from_tensors(np.arange(3)).repeat(2))
    assert not out[0].flags.writeable and not out[1].flags.writeable


def test_source_unchanged_after_iteration_and_writes_to_copies():
    ds = Dataset.from_tensor_slices(np.arange(6).reshape(3, 2))
    row = next(iter(ds))
    c = row.copy()
    c[:] = -1
    assert next(iter(ds)).tolist() == [0, 1]


def test_batch_outputs_writable():
    b = next(iter(Dataset.from_tensor_slices(np.arange(6).reshape(3, 2)).batch(2)))
    assert b.flags.writeable
    b[0, 0] = 42
    assert b[0, 0] == 42
    # the source is unaffected
    assert next(iter(Dataset.from_tensor_slices(np.arange(6).reshape(3, 2)))).tolist() == [0, 1]


def test_batch_outputs_do_not_alias_each_other():
    ds = Dataset.from_tensor_slices(np.arange(12).reshape(6, 2)).batch(2)
    out = list(ds)
    assert not np.shares_memory(out[0], out[1])


def test_map_outputs_do_not_alias_user_arrays():
    g = np.arange(3)
    out = list(Dataset.range(2).map(lambda x: g))
    assert not np.shares_memory(out[0], g)
    if out[0].flags.writeable:
        out[0][0] = 99
        assert g[0] == 0 and out[1][0] == 0


def test_outputs_c_contiguous_and_aligned():
    for ds in (Dataset.from_tensor_slices(np.arange(24, dtype=np.int16).reshape(4, 2, 3)),
               Dataset.range(10).batch(4),
               Dataset.from_tensor_slices(np.zeros((4, 3), np.float64)).map(lambda x: x * 2)):
        for a in ds:
            assert a.flags.c_contiguous and a.flags.aligned


@pytest.mark.parametrize("make,pytype", [
    (lambda: Dataset.range(2), np.int64),
    (lambda: Dataset.range(2, output_type=tf.float32), np.float32),
    (lambda: Dataset.from_tensor_slices(np.array([1, 2], np.uint8)), np.uint8),
    (lambda: Dataset.from_tensor_slices(np.array([1, 2], np.float16)), np.float16),
    (lambda: Dataset.from_tensor_slices([True, False]), np.bool_),
    (lambda: Dataset.from_tensors(np.float64(2.5)), np.float64),
    (lambda: Dataset.range(2).map(lambda x: x + 1), np.int64),
])
def test_scalars_are_numpy_scalars(make, pytype):
    for v in make().as_numpy_iterator():
        assert type(v) is pytype, type(v)
    for v in make():  # plain iteration: 0-d EagerTensor, numpy() the scalar (as TF)
        assert type(v) is tf.EagerTensor and v.shape == () and type(v.numpy()) is pytype


def test_string_scalars_are_bytes():
    for make in (lambda: Dataset.from_tensor_slices(["a", "bc"]),
                 lambda: Dataset.from_tensors(b"x"),
                 lambda: Dataset.range(2).map(lambda x: "s%d" % x),
                 lambda: Dataset.from_generator(lambda: iter(["g"]),
                                                output_signature=tf.TensorSpec([], tf.string))):
        for v in make().as_numpy_iterator():
            assert type(v) is bytes
        for v in make():
            assert type(v) is tf.EagerTensor and type(v.numpy()) is bytes


def test_string_with_embedded_nul_and_non_ascii():
    out = list(Dataset.from_tensor_slices([b"a\x00b", "ü".encode(), b""]))
    assert out == [b"a\x00b", "ü".encode(), b""]


def test_string_arrays_are_object_arrays_of_bytes():
    assert_isolated_ok("""
        D = tf.data.Dataset
        for arr in (next(iter(D.from_tensors(["a", "b"]))),
                    next(iter(D.from_tensor_slices([["a", "b"], ["c", "d"]]))),
                    next(iter(D.from_tensor_slices(["a", "b", "c"]).batch(2))),
                    next(iter(D.range(1).map(lambda x: np.array([b"p", b"q"], dtype=object))))):
            assert isinstance(arr, np.ndarray) and arr.dtype == object, arr
            assert all(type(v) is bytes for v in arr.reshape(-1).tolist()), arr
    """)


def test_string_batch_values():
    assert_isolated_ok("""
        out = [b.tolist() for b in tf.data.Dataset.from_tensor_slices(["a", "bb", "ccc"]).batch(2)]
        assert out == [[b"a", b"bb"], [b"ccc"]], out
    """)


def test_structure_types_preserved():
    el = next(iter(Dataset.from_tensors({"a": (1, 2), "b": 3})))
    assert type(el) is dict and type(el["a"]) is tuple
    assert el == {"a": (1, 2), "b": 3}


def test_single_component_not_wrapped():
    el = next(iter(Dataset.range(1)))
    assert not isinstance(el, (tuple, list))
