"""A pipeline's repr, and the AttributeError of a missing attribute, name the
operation the user wrote with tf.data's class name (``<MapDataset ...>``,
``'TensorSliceDataset' object has no attribute ...``), never an internal class."""
import os
import warnings

import numpy as np
import pytest

import conveyor as cv


@pytest.fixture(scope="module")
def tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return pytest.importorskip("tensorflow")


def _window_element(mod):
    return next(iter(mod.data.Dataset.range(4).window(2)))


# (what the user wrote, how, the class name tf.data gives it without its leading underscore)
CASES = [
    ("from_tensor_slices", lambda m: m.data.Dataset.from_tensor_slices([1, 2, 3]),
     "TensorSliceDataset"),
    ("from_tensors", lambda m: m.data.Dataset.from_tensors(1), "TensorDataset"),
    ("range", lambda m: m.data.Dataset.range(3), "RangeDataset"),
    ("random", lambda m: m.data.Dataset.random(seed=1), "RandomDataset"),
    ("list_files", lambda m: m.data.Dataset.list_files(__file__), "ShuffleDataset"),
    ("map", lambda m: m.data.Dataset.range(3).map(lambda x: x + 1), "MapDataset"),
    ("parallel map", lambda m: m.data.Dataset.range(3).map(lambda x: x + 1, num_parallel_calls=2),
     "ParallelMapDataset"),
    ("filter", lambda m: m.data.Dataset.range(3).filter(lambda x: x > 0), "FilterDataset"),
    ("batch", lambda m: m.data.Dataset.range(6).batch(2), "BatchDataset"),
    ("parallel batch", lambda m: m.data.Dataset.range(6).batch(2, num_parallel_calls=2),
     "ParallelBatchDataset"),
    ("padded_batch", lambda m: m.data.Dataset.range(6).padded_batch(2), "PaddedBatchDataset"),
    ("unbatch", lambda m: m.data.Dataset.range(6).batch(2).unbatch(), "UnbatchDataset"),
    ("rebatch", lambda m: m.data.Dataset.range(6).batch(2).rebatch(3), "RebatchDataset"),
    ("prefetch", lambda m: m.data.Dataset.range(3).prefetch(1), "PrefetchDataset"),
    ("shuffle", lambda m: m.data.Dataset.range(3).shuffle(3, seed=1), "ShuffleDataset"),
    ("take", lambda m: m.data.Dataset.range(3).take(2), "TakeDataset"),
    ("skip", lambda m: m.data.Dataset.range(3).skip(1), "SkipDataset"),
    ("repeat", lambda m: m.data.Dataset.range(3).repeat(2), "RepeatDataset"),
    ("shard", lambda m: m.data.Dataset.range(6).shard(2, 0), "ShardDataset"),
    ("ignore_errors", lambda m: m.data.Dataset.range(3).ignore_errors(), "IgnoreErrorsDataset"),
    ("cache", lambda m: m.data.Dataset.range(3).cache(), "CacheDataset"),
    ("with_options", lambda m: m.data.Dataset.range(3).with_options(m.data.Options()),
     "OptionsDataset"),
    ("zip", lambda m: m.data.Dataset.zip((m.data.Dataset.range(3), m.data.Dataset.range(3))),
     "ZipDataset"),
    ("enumerate", lambda m: m.data.Dataset.range(3).enumerate(), "ZipDataset"),
    ("concatenate", lambda m: m.data.Dataset.range(3).concatenate(m.data.Dataset.range(2)),
     "ConcatenateDataset"),
    ("interleave", lambda m: m.data.Dataset.range(3).interleave(
        lambda x: m.data.Dataset.range(2), cycle_length=2), "InterleaveDataset"),
    ("parallel interleave", lambda m: m.data.Dataset.range(3).interleave(
        lambda x: m.data.Dataset.range(2), cycle_length=2, num_parallel_calls=2),
     "ParallelInterleaveDataset"),
    ("flat_map", lambda m: m.data.Dataset.range(3).flat_map(lambda x: m.data.Dataset.range(2)),
     "FlatMapDataset"),
    ("choose_from_datasets", lambda m: m.data.Dataset.choose_from_datasets(
        [m.data.Dataset.range(3), m.data.Dataset.range(3)], m.data.Dataset.range(2)),
     "DirectedInterleaveDataset"),
    ("sample_from_datasets", lambda m: m.data.Dataset.sample_from_datasets(
        [m.data.Dataset.range(3), m.data.Dataset.range(3)], seed=1),
     "DirectedInterleaveDataset"),
    ("window", lambda m: m.data.Dataset.range(4).window(2), "WindowDataset"),
    ("a window", _window_element, "VariantDataset"),
    ("group_by_window", lambda m: m.data.Dataset.range(6).group_by_window(
        lambda x: x % 2, lambda key, window: window.batch(3), window_size=3),
     "GroupByWindowDataset"),
    ("bucket_by_sequence_length", lambda m: m.data.Dataset.range(1, 5).map(
        lambda x: np.full([x], x)).bucket_by_sequence_length(lambda x: len(x), [3], [2, 2]),
     "GroupByWindowDataset"),
    ("TextLineDataset", lambda m: m.data.TextLineDataset(__file__), "TextLineDataset"),
]
# Built with TensorFlow too, to check the names against tf.data's (a NumPy map
# does not trace in TensorFlow, and conveyor's TextLineDataset is a class of its own).
TF_CASES = [c for c in CASES if c[0] not in ("bucket_by_sequence_length", "TextLineDataset")]


def _build(label, make, mod):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Python maps say so; not what is tested here
        return make(mod)


@pytest.mark.parametrize("label,make,name", CASES, ids=[c[0] for c in CASES])
def test_repr_names_the_operation(label, make, name):
    ds = _build(label, make, cv)
    assert type(ds).__name__ == name
    assert repr(ds).startswith(f"<{name} "), repr(ds)


@pytest.mark.parametrize("label,make,name", CASES, ids=[c[0] for c in CASES])
def test_missing_attribute_names_the_operation(label, make, name):
    ds = _build(label, make, cv)
    with pytest.raises(AttributeError, match=f"^'{name}' object has no attribute 'no_such_op'$"):
        ds.no_such_op


@pytest.mark.parametrize("label,make,name", TF_CASES, ids=[c[0] for c in TF_CASES])
def test_names_are_tensorflows(tf, label, make, name):
    assert type(_build(label, make, tf)).__name__.lstrip("_") == name


def test_repr_of_a_pipeline_names_its_last_operation_and_its_maps():
    ds = cv.data.Dataset.from_tensor_slices(np.arange(8)).map(lambda x: x * 2).batch(4).prefetch(1)
    text = repr(ds)
    assert text.startswith("<PrefetchDataset element_spec=")
    assert "Dataset.map(<lambda>): native" in text
    assert not any(f"<_{c}" in text for c in ("Unary", "TensorSlice", "Map", "Batch"))


def test_from_generator_names_the_generator_source():
    # tf.data builds it from a flat_map over a generator dataset; conveyor's is a source.
    ds = cv.data.Dataset.from_generator(lambda: iter([1, 2]), output_types=cv.int64)
    assert repr(ds).startswith("<GeneratorDataset ")
    with pytest.raises(AttributeError, match="^'GeneratorDataset' object has no attribute"):
        ds.no_such_op
