"""Examples in the style of the tf.data.experimental docstrings (TensorFlow 2.21)."""
import os

import numpy as np

from tf_snippets._compare import to_numpy


def snippet_exp_counter(tf, tmp_path):
    dataset = tf.data.experimental.Counter().take(5)
    a = list(dataset.as_numpy_iterator())
    b = list(tf.data.experimental.Counter(start=2, step=5).take(4).as_numpy_iterator())
    return to_numpy((a, b))


def snippet_exp_enumerate_dataset(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices([1, 2, 3])
    dataset = dataset.apply(tf.data.experimental.enumerate_dataset(start=5))
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_exp_get_single_element(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensors({"a": [1, 2], "b": "x"})
    return to_numpy(tf.data.experimental.get_single_element(dataset))


def snippet_exp_group_by_reducer(tf, tmp_path):
    reducer = tf.data.experimental.Reducer(
        init_func=lambda _: np.int64(0),
        reduce_func=lambda x, y: x + y,
        finalize_func=lambda x: x)
    dataset = tf.data.Dataset.range(10)
    dataset = dataset.apply(tf.data.experimental.group_by_reducer(
        key_func=lambda x: x % 2, reducer=reducer))
    return to_numpy(sorted(dataset.as_numpy_iterator()))


def snippet_exp_group_by_window(tf, tmp_path):
    dataset = tf.data.Dataset.range(12)
    dataset = dataset.apply(tf.data.experimental.group_by_window(
        key_func=lambda x: x % 3, reduce_func=lambda k, w: w.batch(2), window_size=2))
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_exp_scan(tf, tmp_path):
    dataset = tf.data.Dataset.range(6)
    dataset = dataset.apply(tf.data.experimental.scan(
        np.int64(1), lambda state, x: (state * 2, state + x)))
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_exp_unique(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices([1, 37, 2, 37, 2, 1])
    dataset = dataset.apply(tf.data.experimental.unique())
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_exp_take_while(tf, tmp_path):
    dataset = tf.data.Dataset.range(10)
    dataset = dataset.apply(tf.data.experimental.take_while(lambda x: x < 4))
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_exp_sample_from_datasets(tf, tmp_path):
    a = tf.data.Dataset.range(5)
    b = tf.data.Dataset.range(10, 15)
    ds = tf.data.experimental.sample_from_datasets([a, b], weights=[0.25, 0.75], seed=7)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_exp_choose_from_datasets(tf, tmp_path):
    datasets = [tf.data.Dataset.from_tensors("foo").repeat(),
                tf.data.Dataset.from_tensors("bar").repeat()]
    choice_dataset = tf.data.Dataset.from_tensor_slices(np.array([0, 1, 1, 0], dtype=np.int64))
    result = tf.data.experimental.choose_from_datasets(datasets, choice_dataset)
    return to_numpy(list(result.as_numpy_iterator()))


def snippet_exp_cardinality_constants(tf, tmp_path):
    dataset = tf.data.Dataset.range(42)
    a = tf.data.experimental.cardinality(dataset).numpy()
    dataset = dataset.repeat()
    b = (tf.data.experimental.cardinality(dataset) ==
         tf.data.experimental.INFINITE_CARDINALITY).numpy()
    dataset = dataset.filter(lambda x: True)
    c = (tf.data.experimental.cardinality(dataset) ==
         tf.data.experimental.UNKNOWN_CARDINALITY).numpy()
    return to_numpy((a, b, c))


def snippet_exp_assert_cardinality_error(tf, tmp_path):
    dataset = tf.data.Dataset.range(3).filter(lambda x: True)
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(5))
    try:
        list(dataset.as_numpy_iterator())
        return to_numpy("no error")
    except tf.errors.FailedPreconditionError:
        return to_numpy("FailedPreconditionError")


def snippet_exp_ignore_errors(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices([1., 2., 0., 4.])
    dataset = dataset.map(lambda x: tf.debugging.check_numerics(1. / x, "error"))
    dataset = dataset.apply(tf.data.experimental.ignore_errors())
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_exp_dense_to_ragged_batch(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices(np.arange(6))
    dataset = dataset.map(lambda x: tf.range(x))
    batch = dataset.apply(tf.data.experimental.dense_to_ragged_batch(batch_size=2))
    return to_numpy([b for b in batch])


def snippet_exp_dense_to_sparse_batch(tf, tmp_path):
    a = tf.data.Dataset.from_tensor_slices([1, 3, 2])
    a = a.map(lambda x: tf.fill([x], x))
    b = a.apply(tf.data.experimental.dense_to_sparse_batch(batch_size=2, row_shape=[3]))
    return to_numpy([e for e in b])


def snippet_exp_bucket_by_sequence_length(tf, tmp_path):
    elements = [[0], [1, 2, 3, 4], [5, 6, 7], [7, 8, 9, 10, 11], [13, 14, 15, 16, 19, 20],
                [21, 22]]
    dataset = tf.data.Dataset.from_generator(lambda: elements, tf.int64, output_shapes=[None])
    dataset = dataset.apply(tf.data.experimental.bucket_by_sequence_length(
        element_length_func=lambda elem: tf.shape(elem)[0],
        bucket_boundaries=[3, 7], bucket_batch_sizes=[2, 2, 2],
        pad_to_bucket_boundary=True, drop_remainder=False, padding_values=np.int64(-1)))
    return to_numpy([e.numpy() for e in dataset])


def snippet_exp_parallel_interleave(tf, tmp_path):
    ds = tf.data.Dataset.range(3).apply(tf.data.experimental.parallel_interleave(
        lambda x: tf.data.Dataset.range(x * 10, x * 10 + 3), cycle_length=2))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_exp_map_and_batch(tf, tmp_path):
    ds = tf.data.Dataset.range(10).apply(tf.data.experimental.map_and_batch(
        lambda x: x * 3, batch_size=4, drop_remainder=True))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_exp_shuffle_and_repeat(tf, tmp_path):
    ds = tf.data.Dataset.range(5).apply(tf.data.experimental.shuffle_and_repeat(
        buffer_size=5, count=2, seed=3))
    return to_numpy(sorted(ds.as_numpy_iterator()))


def snippet_exp_from_list(tf, tmp_path):
    dataset = tf.data.experimental.from_list([(1, "a"), (2, "b"), (3, "c")])
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_exp_rejection_resample_apply(tf, tmp_path):
    ds = tf.data.Dataset.from_tensor_slices(np.array([0] * 18 + [1] * 6, dtype=np.int64))
    ds = ds.apply(tf.data.experimental.rejection_resample(
        class_func=lambda x: x, target_dist=[0.5, 0.5], initial_dist=[0.75, 0.25], seed=5))
    return to_numpy(repr(ds.element_spec))


def snippet_exp_random_dataset(tf, tmp_path):
    ds = tf.data.experimental.RandomDataset(seed=7).take(3)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_exp_autotune_constants(tf, tmp_path):
    return to_numpy((tf.data.experimental.AUTOTUNE, tf.data.AUTOTUNE,
                     tf.data.INFINITE_CARDINALITY, tf.data.UNKNOWN_CARDINALITY))


def snippet_exp_index_table_from_dataset(tf, tmp_path):
    ds = tf.data.Dataset.range(100).map(lambda x: tf.strings.as_string(x * 2))
    table = tf.data.experimental.index_table_from_dataset(ds, key_dtype=tf.string)
    return to_numpy(table.lookup(tf.constant(["0", "2", "4", "5"])))


def snippet_exp_csv_dataset_buffer(tf, tmp_path):
    path = os.path.join(tmp_path, "data.csv")
    with open(path, "w") as f:
        f.write("4,Robert\n5,Sarah\n6,Kim\n")
    ds = tf.data.experimental.CsvDataset(path, [tf.int32, tf.string], buffer_size=1024)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_exp_make_batched_features_dataset(tf, tmp_path):
    path = os.path.join(tmp_path, "ex.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for i in range(6):
            ex = tf.train.Example(features=tf.train.Features(feature={
                "age": tf.train.Feature(int64_list=tf.train.Int64List(value=[20 + i]))}))
            w.write(ex.SerializeToString())
    ds = tf.data.experimental.make_batched_features_dataset(
        path, batch_size=4, features={"age": tf.io.FixedLenFeature([], tf.int64)},
        num_epochs=1, shuffle=False)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_exp_options_repr_fields(tf, tmp_path):
    options = tf.data.Options()
    options.experimental_deterministic = False
    options.autotune.enabled = True
    options.autotune.cpu_budget = 2
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    ds = tf.data.Dataset.range(4).with_options(options)
    got = ds.options()
    return to_numpy((got.deterministic, got.autotune.cpu_budget,
                     got.experimental_distribute.auto_shard_policy.name,
                     list(ds.as_numpy_iterator())))


def snippet_exp_tensor_spec_of_dataset(tf, tmp_path):
    ds = tf.data.Dataset.from_tensor_slices({"x": np.zeros((3, 2), np.float32),
                                             "y": np.array([b"a", b"b", b"c"])})
    spec = ds.element_spec
    return to_numpy({k: (v.shape.as_list(), v.dtype.name) for k, v in spec.items()})
