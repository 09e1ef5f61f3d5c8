"""iterator.stats(): per-stage statistics of a running pipeline (conveyor/data/stats.py,
csrc/core/stats.h)."""
import json
import threading
import time
import warnings

import numpy as np
import pytest

import conveyor as cv
from conveyor.data import AUTOTUNE, Dataset
from conveyor.data.stats import PipelineStats, StageStats


def _seven(n=4000, batch=16):
    """range -> map -> shuffle -> map -> batch -> map -> prefetch (7 stages)."""
    return (Dataset.range(n)
            .map(lambda x: x * 2, num_parallel_calls=AUTOTUNE)
            .shuffle(100, seed=3)
            .map(lambda x: x + 1, num_parallel_calls=AUTOTUNE)
            .batch(batch)
            .map(lambda b: b * 1, num_parallel_calls=AUTOTUNE)
            .prefetch(AUTOTUNE))


@pytest.mark.parametrize("fusion", [True, False])
def test_every_stage_is_named_and_counts_exactly_what_it_produced(fusion):
    # With map_and_batch_fusion (the default) the map before batch runs inside
    # BatchDataset's kernel; its node is credited with the rows it mapped.
    options = cv.data.Options()
    options.experimental_optimization.map_and_batch_fusion = fusion
    it = iter(_seven().with_options(options))
    batches = list(it)
    assert len(batches) == 250
    stats = it.stats()
    assert isinstance(stats, PipelineStats)
    assert [s.name for s in stats.stages] == [
        "PrefetchDataset", "ParallelMapDataset", "BatchDataset", "ParallelMapDataset_1",
        "ShuffleDataset", "ParallelMapDataset_2", "RangeDataset"]
    counts = {s.name: s.elements for s in stats.stages}
    assert counts == {"PrefetchDataset": 250, "ParallelMapDataset": 250, "BatchDataset": 250,
                      "ParallelMapDataset_1": 4000, "ShuffleDataset": 4000,
                      "ParallelMapDataset_2": 4000, "RangeDataset": 4000}
    assert stats.elements == 250
    assert all(s.errors == 0 for s in stats.stages)
    # Parallel stages measure their work; the maps were AUTOTUNE.
    for name in ("ParallelMapDataset", "ParallelMapDataset_1", "ParallelMapDataset_2"):
        s = stats.stage(name)
        assert s.max_parallelism >= 1 and s.autotuned_parallelism
        fused = fusion and name == "ParallelMapDataset_1"  # its turns are BatchDataset's
        assert s.turns > 0 or fused
        assert s.busy >= 0 and s.input_wait >= 0
    assert stats.stage("PrefetchDataset").autotuned_buffer
    assert stats.stage("RangeDataset").max_parallelism == 0


def test_bytes_held_return_to_zero_at_the_end():
    ds = Dataset.from_tensor_slices(np.ones((2000, 64), np.float32)).map(
        lambda x: x * 2.0, num_parallel_calls=4).prefetch(8)
    it = iter(ds)
    for _ in range(50):
        next(it)
    running = it.stats()
    assert running.bytes_held > 0
    assert sum(s.buffered for s in running.stages) > 0
    list(it)
    done = it.stats()
    assert done.bytes_held == 0
    assert all(s.buffered == 0 and s.bytes_held == 0 for s in done.stages)
    assert done.stages[0].elements == 2000


def test_closing_early_also_returns_the_bytes():
    it = iter(Dataset.range(10**6).map(lambda x: x + 1, num_parallel_calls=3).prefetch(16))
    for _ in range(100):
        next(it)
    it.close()
    stats = it.stats()
    assert stats.bytes_held == 0 and stats.stages[0].elements == 100


def test_counts_cover_every_epoch_and_interleaves_inner_datasets():
    ds = Dataset.range(3).interleave(lambda i: Dataset.range(10).map(lambda x: x + i),
                                     cycle_length=2, num_parallel_calls=2).repeat(2)
    it = iter(ds)
    assert len(list(it)) == 60
    stats = it.stats()
    interleave = next(s for s in stats.stages if s.kernel == "Interleave")
    assert interleave.elements == 60
    inner = [s for s in stats.stages if s.inner]
    assert {s.kernel for s in inner} >= {"Map", "Range"}
    assert next(s for s in inner if s.kernel == "Map").elements == 60


def test_errors_are_counted_where_they_are_handed_out():
    def bad(x):
        if x % 5 == 0:
            raise ValueError("planted")
        return x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = Dataset.range(20).map(bad, num_parallel_calls=2)
    it = iter(ds)
    good = errors = 0
    while True:
        try:
            next(it)
            good += 1
        except StopIteration:
            break
        except Exception:  # noqa: BLE001 - the planted error, at its element
            errors += 1
    stats = it.stats()
    assert (good, errors) == (16, 4)
    assert (stats.stages[0].elements, stats.stages[0].errors) == (16, 4)


def test_reading_stats_from_another_thread_while_it_runs():
    ds = _seven(20000, 8).repeat(2)
    it = iter(ds)
    seen, stop, failures = [[], []], threading.Event(), []

    def reader(mine):
        try:
            while not stop.is_set():
                s = it.stats()
                mine.append(s.elements)
                json.loads(s.to_json())
                str(s)
        except Exception as e:  # noqa: BLE001 - reported below
            failures.append(e)
    threads = [threading.Thread(target=reader, args=(mine,)) for mine in seen]
    for t in threads:
        t.start()
    total = sum(1 for _ in it)
    stop.set()
    for t in threads:
        t.join()
    assert not failures
    assert total == 5000 and all(seen)
    assert all(mine == sorted(mine) for mine in seen)  # counts only grow
    assert it.stats().elements == 5000


def test_str_table_and_json():
    it = iter(_seven(800))
    list(it)
    stats = it.stats()
    text = str(stats)
    assert "ParallelMapDataset_2" in text and "RangeDataset" in text and "800" in text
    data = json.loads(stats.to_json())
    assert data["stages"][0]["name"] == "PrefetchDataset"
    assert data["cpu_budget"] == stats.cpu_budget
    assert isinstance(stats.stages[0], StageStats)


def test_stats_do_not_keep_the_pipeline_alive():
    import gc
    import weakref
    ds = Dataset.range(10).map(lambda x: x + 1, num_parallel_calls=2)
    ref = weakref.ref(ds)
    it = iter(ds)
    list(it)
    del ds
    gc.collect()
    assert ref() is None
    assert it.stats().elements == 10


def test_stats_of_a_sequential_pipeline():
    it = iter(Dataset.range(7).batch(2))
    assert [np.asarray(b).tolist() for b in it] == [[0, 1], [2, 3], [4, 5], [6]]
    stats = it.stats()
    assert [(s.name, s.elements) for s in stats.stages] == [("BatchDataset", 4),
                                                             ("RangeDataset", 7)]
    assert stats.threads == 0
