"""Dataset.batch: stacking, remainder, element_spec, parallel copying, shape errors."""
import os
import warnings

import numpy as np
import pytest

import conveyor as tf
from _isolated import assert_isolated_ok

Dataset = tf.data.Dataset
AUTOTUNE = tf.data.AUTOTUNE
PARALLEL = [None, 1, 2, 4, AUTOTUNE]


@pytest.mark.parametrize("npc", PARALLEL)
def test_range_batch_with_remainder(npc):
    out = [b.tolist() for b in Dataset.range(8).batch(3, num_parallel_calls=npc)]
    assert out == [[0, 1, 2], [3, 4, 5], [6, 7]]


@pytest.mark.parametrize("npc", PARALLEL)
def test_drop_remainder(npc):
    out = [b.tolist() for b in Dataset.range(8).batch(3, drop_remainder=True,
                                                       num_parallel_calls=npc)]
    assert out == [[0, 1, 2], [3, 4, 5]]


def test_batch_dtype_and_type():
    b = next(iter(Dataset.range(4).batch(2)))
    assert isinstance(b, np.ndarray) and b.dtype == np.int64 and b.shape == (2,)


def test_batch_of_matrices():
    src = np.arange(30, dtype=np.float32).reshape(5, 2, 3)
    out = list(Dataset.from_tensor_slices(src).batch(2))
    assert [b.shape for b in out] == [(2, 2, 3), (2, 2, 3), (1, 2, 3)]
    np.testing.assert_array_equal(np.concatenate(out), src)


def test_batch_structure():
    ds = Dataset.from_tensor_slices({"a": np.arange(5), "b": (np.arange(5) * 1.5,
                                                              np.arange(10).reshape(5, 2))})
    out = list(ds.batch(2))
    assert len(out) == 3
    assert out[0]["a"].tolist() == [0, 1]
    assert out[2]["b"][0].tolist() == [6.0]
    assert out[1]["b"][1].tolist() == [[4, 5], [6, 7]]


def test_batch_tuple_kept():
    out = list(Dataset.from_tensor_slices(([1, 2, 3], [4, 5, 6])).batch(2))
    assert type(out[0]) is tuple
    assert out[0][0].tolist() == [1, 2] and out[0][1].tolist() == [4, 5]


def test_batch_size_larger_than_dataset():
    out = list(Dataset.range(3).batch(10))
    assert len(out) == 1 and out[0].tolist() == [0, 1, 2]
    assert list(Dataset.range(3).batch(10, drop_remainder=True)) == []


def test_batch_of_empty_dataset():
    assert list(Dataset.range(0).batch(2)) == []


def test_nested_batches():
    out = list(Dataset.range(8).batch(2).batch(2))
    assert [b.shape for b in out] == [(2, 2), (2, 2)]
    assert out[1].tolist() == [[4, 5], [6, 7]]


def test_scalar_string_batch_is_object_array():
    assert_isolated_ok("""
        b = next(iter(tf.data.Dataset.from_tensor_slices(["x", "yy", "zzz"]).batch(2)))
        assert b.dtype == object and b.tolist() == [b"x", b"yy"], b
    """)


def test_element_spec_unknown_batch_dim():
    ds = Dataset.from_tensor_slices(np.zeros((5, 3), np.float32)).batch(2)
    assert ds.element_spec == tf.TensorSpec([None, 3], tf.float32)


def test_element_spec_static_batch_dim_with_drop_remainder():
    ds = Dataset.range(5).batch(2, drop_remainder=True)
    assert ds.element_spec == tf.TensorSpec([2], tf.int64)


@pytest.mark.parametrize("n,bs,drop,expected", [(8, 3, False, 3), (8, 3, True, 2), (9, 3, False, 3),
                                                (9, 3, True, 3), (0, 3, False, 0), (2, 3, True, 0),
                                                (2, 3, False, 1)])
def test_cardinality(n, bs, drop, expected):
    ds = Dataset.range(n).batch(bs, drop_remainder=drop)
    assert ds.cardinality() == expected
    assert len(list(ds)) == expected


def test_cardinality_infinite_and_unknown_propagate():
    assert Dataset.range(3).repeat().batch(2).cardinality() == tf.data.INFINITE_CARDINALITY
    gen = Dataset.from_generator(lambda: iter([1]), output_signature=tf.TensorSpec([], tf.int64))
    assert gen.batch(2).cardinality() == tf.data.UNKNOWN_CARDINALITY


def test_infinite_batches():
    it = iter(Dataset.range(3).repeat().batch(2))
    assert [next(it).tolist() for _ in range(4)] == [[0, 1], [2, 0], [1, 2], [0, 1]]


@pytest.mark.parametrize("npc", [None, 2])
def test_different_shapes_in_batch_error(npc):
    def gen():
        yield np.zeros(3)
        yield np.zeros(3)
        yield np.zeros(4)
    ds = Dataset.from_generator(gen, output_signature=tf.TensorSpec([None], tf.float64))
    it = iter(ds.batch(3, num_parallel_calls=npc))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Cannot batch tensors with different shapes in component 0\. "
                             r"First element had shape \[3\] and element 2 had shape \[4\]\."):
        next(it)


def test_different_shapes_error_names_component():
    ds = Dataset.range(4).map(lambda x: (x, np.zeros(1 if x < 3 else 2)))
    it = iter(ds.batch(2))
    first = next(it)  # elements 0, 1 -> both shape [1]
    assert first[1].shape == (2, 1)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"component 1\. First element had shape \[1\] and element 1 had "
                             r"shape \[2\]"):
        next(it)  # elements 2, 3 -> shapes [1] and [2]


def test_iteration_continues_after_batch_shape_error():
    ds = Dataset.range(6).map(lambda x: np.zeros(2 if x == 2 else 1))
    it = iter(ds.batch(2))
    assert next(it).shape == (2, 1)
    with pytest.raises(tf.errors.InvalidArgumentError):
        next(it)
    assert next(it).shape == (2, 1)
    with pytest.raises(StopIteration):
        next(it)


@pytest.mark.parametrize("npc", PARALLEL)
def test_batch_outputs_are_writable_and_independent(npc):
    out = list(Dataset.range(6).batch(2, num_parallel_calls=npc))
    out[0][0] = 100
    assert out[1].tolist() == [2, 3]
    assert out[0].flags.writeable


def test_deterministic_without_parallelism_warns():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        Dataset.range(3).batch(2, deterministic=False)
    assert any("deterministic" in str(x.message) for x in w)


def test_large_parallel_batch():
    ds = Dataset.from_tensor_slices(np.arange(4000, dtype=np.float32).reshape(1000, 4))
    out = list(ds.batch(64, num_parallel_calls=4))
    np.testing.assert_array_equal(np.concatenate(out), np.arange(4000, dtype=np.float32).reshape(1000, 4))


def test_end_is_sticky():
    it = iter(Dataset.range(3).batch(2, num_parallel_calls=2))
    assert len(list(it)) == 2
    for _ in range(3):
        with pytest.raises(StopIteration):
            next(it)


def test_huge_batch_size_over_a_short_input():
    """The batch grows with the rows that arrive, not with batch_size."""
    out = list(Dataset.range(5).batch(10**9))
    assert len(out) == 1 and out[0].tolist() == [0, 1, 2, 3, 4]
    pairs = list(Dataset.from_tensor_slices((np.arange(3), np.arange(3))).batch(2**31))
    assert [p.tolist() for p in pairs[0]] == [[0, 1, 2], [0, 1, 2]]


def test_cardinality_near_int64_max():
    # (range(0, 2**63 - 1) itself is infinite, as in tf.data: enumerate's convention.)
    assert Dataset.range(0, 2**63 - 3).batch(2).cardinality() == 2**62 - 1
    assert Dataset.range(0, 2**63 - 3).batch(2, drop_remainder=True).cardinality() == 2**62 - 2


def test_parallel_batch_optimization_never_changes_results():
    """Batches are copied on worker threads by default (tf.data's parallel_batch
    optimization); switching it off gives the same batches."""
    opts = tf.data.Options()
    opts.experimental_optimization.parallel_batch = False
    x = np.arange(1000 * 3, dtype=np.float32).reshape(1000, 3)
    on = [b.tolist() for b in Dataset.from_tensor_slices(x).batch(64)]
    off = [b.tolist() for b in Dataset.from_tensor_slices(x).batch(64).with_options(opts)]
    assert on == off == [x[i:i + 64].tolist() for i in range(0, 1000, 64)]


def test_batch_buffers_are_reused_across_steps():
    # 64 rows of 600 KB are released together after each batch is stacked;
    # then the consumer drops the 38 MB batch. The buffer pool must keep the
    # batch buffer for the next step (rows that filled the pool once turned
    # it away: each batch then mapped and faulted in 38 MB of fresh pages).
    # Asserted on the pool's own record, not on page faults: whether fresh
    # memory faults per 4 KiB or per 2 MiB page depends on the kernel's
    # transparent huge page settings.
    from conveyor import _engine

    row = 150_000  # float32: 600 KB
    batch_bytes = 64 * row * 4
    ds = tf.data.Dataset.range(64 * 8).map(lambda i: tf.fill([row], tf.cast(i, tf.float32))).batch(64)
    for _ in range(2):  # warm-up: the pool fills
        for _ in ds:
            pass
    before = _engine.buffer_pool_stats()
    batches = 0
    for epoch in range(3):
        for b in ds:
            batches += 1
            assert b.shape == (64, row)
        del b
    after = _engine.buffer_pool_stats()
    fresh = after["missed_bytes"] - before["missed_bytes"]
    # Turned away, every step takes a fresh batch buffer (24 of them). A few
    # buffers (rows or batches) may still be fresh where this epoch keeps
    # more in flight at once than the warm-up did (timing), never most.
    assert after["hits"] - before["hits"] >= batches * 64 * 9 // 10, (before, after)
    assert fresh <= batches * batch_bytes // 3, (fresh / batch_bytes, batches, before, after)


def _records(path, n, size):
    with tf.io.TFRecordWriter(path) as w:
        for i in range(n):
            w.write(bytes([i % 256]) * size)
    return tf.data.TFRecordDataset(path)


@pytest.mark.skipif(bool(os.environ.get("CV_SANITIZED")),
                    reason="built with AddressSanitizer, mid-sized buffers are plain malloc")
def test_record_buffers_are_reused_across_epochs(tmp_path):
    # Records of 16 KB (below the large buffers' 64 KiB) are read on pool
    # threads and freed with their batch on the consumer's: each epoch took
    # fresh memory from malloc for every record, and faulted its pages in
    # again. The pool's mid-sized classes must serve them once warm.
    # Asserted on the pool's own record, not on page faults.
    _assert_records_reused(_records(str(tmp_path / "r.tfrecord"), 256, 16384).batch(32))


@pytest.mark.skipif(bool(os.environ.get("CV_SANITIZED")),
                    reason="built with AddressSanitizer, mid-sized buffers are plain malloc")
def test_buffers_an_earlier_workload_left_give_way(tmp_path):
    # An earlier workload (1,200 records of 40 KB at once) filled the
    # classes' bound with buffers of its size: they give way to the records
    # read now. In a new process, whose classes hold nothing else.
    assert_isolated_ok(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        import test_batch
        earlier = test_batch._records({str(tmp_path / "earlier.tfrecord")!r}, 1200, 40000)
        for _ in earlier.batch(1200):
            pass
        test_batch._assert_records_reused(
            test_batch._records({str(tmp_path / "r.tfrecord")!r}, 256, 16384).batch(32))
    """)


def _assert_records_reused(ds):
    from conveyor import _engine
    for _ in range(3):  # warm-up: the class fills
        for _ in ds:
            pass
    before = _engine.buffer_pool_stats()
    records = 0
    for epoch in range(3):
        for b in ds:
            records += len(b)
        del b
    after = _engine.buffer_pool_stats()
    assert records == 3 * 256
    # A record's buffer comes from the pool, or (a new peak of records in
    # flight: the read-ahead grew on a busy machine) joins it for the next
    # epoch; before the classes, each came from malloc and went back to it.
    grown = max(0, after["pooled_buffers"] - before["pooled_buffers"])
    assert after["hits"] - before["hits"] + grown >= records * 9 // 10, (before, after)
    missed = after["missed_bytes"] - before["missed_bytes"]
    assert missed <= (records // 10 + grown) * 16384, (before, after)
