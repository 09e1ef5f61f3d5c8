"""The doctor's storage-bound check (issue 27): a pipeline that reads remote
objects through a store whose every request waits is named as waiting on
storage, with the knob that helps; one that reads nothing remote has no such
line. The store is fake-gcs-server on loopback behind tests/fault_proxy.py
(40 ms before every answer). The verdict rests on the process's CPU time
against the run's wall time, not on any timing of ours."""
import os

import numpy as np
import pytest

from fault_proxy import FaultProxy
from gcs_servers import FakeGcs, running

import conveyor as tf


@pytest.fixture(scope="module")
def bucket_files():
    with running(FakeGcs) as server:
        bucket = server.bucket("doctor-storage")
        records = [os.urandom(2048) for _ in range(8)]
        local = []
        for i in range(24):
            path = f"shard-{i:02d}.tfrecord"
            with tf.io.TFRecordWriter(os.path.join("/tmp", f"cv-doctor-{os.getpid()}-{path}")) as w:
                for r in records:
                    w.write(r)
            with open(os.path.join("/tmp", f"cv-doctor-{os.getpid()}-{path}"), "rb") as f:
                server.put(bucket, path, f.read())
            local.append(os.path.join("/tmp", f"cv-doctor-{os.getpid()}-{path}"))
        try:
            yield server, bucket, local
        finally:
            for p in local:
                os.remove(p)


@pytest.fixture
def slow_store(bucket_files, monkeypatch):
    server, bucket, local = bucket_files
    with FaultProxy(upstream=server.url, latency_ms=40) as proxy:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", proxy.url.split("://", 1)[1])
        monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
        yield [f"gs://{bucket}/shard-{i:02d}.tfrecord" for i in range(24)], local


def _report(dataset):
    return tf.data.experimental.diagnose(dataset, steps=40, stage_seconds=0.2)


def test_reading_one_object_at_a_time_is_storage_bound(slow_store):
    urls, _ = slow_store
    ds = tf.data.TFRecordDataset(urls).map(tf.strings.length)  # one file after another
    report = _report(ds)
    check = report["storage-bound"]
    assert check.status == "warn", str(report)
    assert "waiting on storage" in check.detail and "from remote storage" in check.detail
    assert "num_parallel_reads=AUTOTUNE" in check.remedy
    assert "storage-bound" in str(report)


def test_at_the_io_budget_the_remedy_is_the_budget(slow_store):
    urls, _ = slow_store
    tf.data.experimental.set_io_budget(requests=2)
    try:
        ds = tf.data.Dataset.from_tensor_slices(urls).interleave(
            tf.data.TFRecordDataset, cycle_length=8, num_parallel_calls=tf.data.AUTOTUNE)
        check = _report(ds)["storage-bound"]
    finally:
        tf.data.experimental.set_io_budget(requests=64)
    assert check.status == "warn", check
    assert "set_io_budget(requests=4" in check.remedy
    assert "at most 2 of 2 requests" in check.detail


def test_a_local_pipeline_has_no_storage_line(slow_store):
    _, local = slow_store
    report = _report(tf.data.TFRecordDataset(local).map(tf.strings.length))
    with pytest.raises(KeyError):
        report["storage-bound"]
    assert "storage-bound" not in str(report)


def test_remote_data_is_the_same_through_the_doctor_runs(slow_store):
    urls, local = slow_store
    remote = [r for r in tf.data.TFRecordDataset(urls[:3]).as_numpy_iterator()]
    assert remote == [r for r in tf.data.TFRecordDataset(local[:3]).as_numpy_iterator()]
    assert len(remote) == 24 and all(isinstance(r, bytes) for r in remote)
    assert np.all([len(r) == 2048 for r in remote])


def test_a_pipeline_slowed_by_its_own_map_is_not_storage_bound(bucket_files, monkeypatch):
    """The objects arrive at once (no proxy); then a map that sleeps 10 ms an
    element sets the pace. Idle CPUs, but no request waits most of the time:
    not storage-bound."""
    import time
    server, bucket, _ = bucket_files
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", server.url.split("://", 1)[1])
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    urls = [f"gs://{bucket}/shard-{i:02d}.tfrecord" for i in range(2)]

    def slow(record):
        time.sleep(0.01)
        return record
    ds = tf.data.TFRecordDataset(urls).map(
        lambda r: tf.numpy_function(slow, [r], tf.string, stateful=False))
    report = _report(ds)
    check = report["storage-bound"]
    assert check.status == "ok", str(report)
    assert "not waiting on storage" in check.detail
