"""Examples in the style of the tf.data.Dataset method docstrings (TensorFlow 2.21)."""
import os

import numpy as np

from tf_snippets._compare import to_numpy


def snippet_as_numpy_iterator_nested(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices({"a": ([1, 2], [3, 4]), "b": [5, 6]})
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_batch_drop_remainder(tf, tmp_path):
    dataset = tf.data.Dataset.range(8)
    return to_numpy((list(dataset.batch(3).as_numpy_iterator()),
                     list(dataset.batch(3, drop_remainder=True).as_numpy_iterator())))


def snippet_batch_num_parallel_calls_deterministic(tf, tmp_path):
    dataset = tf.data.Dataset.range(8).batch(3, num_parallel_calls=tf.data.AUTOTUNE,
                                             deterministic=True)
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_cache_memory_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.range(5)
    dataset = dataset.map(lambda x: x ** 2)
    dataset = dataset.cache()
    return to_numpy((list(dataset.as_numpy_iterator()), list(dataset.as_numpy_iterator())))


def snippet_cache_file_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.range(5)
    dataset = dataset.cache(os.path.join(tmp_path, "cache"))
    first = list(dataset.as_numpy_iterator())
    dataset = tf.data.Dataset.range(10)
    dataset = dataset.cache(os.path.join(tmp_path, "cache"))
    return to_numpy((first, list(dataset.as_numpy_iterator())))


def snippet_cardinality_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.range(42)
    a = dataset.cardinality().numpy()
    dataset = dataset.repeat()
    b = (dataset.cardinality() == tf.data.INFINITE_CARDINALITY).numpy()
    dataset = dataset.filter(lambda x: True)
    c = (dataset.cardinality() == tf.data.UNKNOWN_CARDINALITY).numpy()
    return to_numpy((a, b, c))


def snippet_len_of_dataset(tf, tmp_path):
    dataset = tf.data.Dataset.range(12).batch(5)
    return to_numpy(len(dataset))


def snippet_choose_from_datasets_docstring(tf, tmp_path):
    datasets = [tf.data.Dataset.from_tensors("foo").repeat(),
                tf.data.Dataset.from_tensors("bar").repeat(),
                tf.data.Dataset.from_tensors("baz").repeat()]
    choice_dataset = tf.data.Dataset.range(3).repeat(3)
    result = tf.data.Dataset.choose_from_datasets(datasets, choice_dataset)
    return to_numpy(list(result.as_numpy_iterator()))


def snippet_concatenate_docstring(tf, tmp_path):
    a = tf.data.Dataset.range(1, 4)
    b = tf.data.Dataset.range(4, 8)
    ds = a.concatenate(b)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_counter_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.counter().take(5)
    a = list(dataset.as_numpy_iterator())
    spec = dataset.element_spec.dtype.name
    dataset = tf.data.Dataset.counter(dtype=tf.int32)
    b = dataset.element_spec.dtype.name
    dataset = tf.data.Dataset.counter(start=2).take(5)
    c = list(dataset.as_numpy_iterator())
    dataset = tf.data.Dataset.counter(start=2, step=5).take(5)
    d = list(dataset.as_numpy_iterator())
    dataset = tf.data.Dataset.counter(start=10, step=-1).take(5)
    e = list(dataset.as_numpy_iterator())
    return to_numpy((a, spec, b, c, d, e))


def snippet_enumerate_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices([1, 2, 3])
    dataset = dataset.enumerate(start=5)
    a = [element for element in dataset.as_numpy_iterator()]
    dataset = tf.data.Dataset.from_tensor_slices([(7, 8), (9, 10)])
    dataset = dataset.enumerate()
    b = [element for element in dataset.as_numpy_iterator()]
    return to_numpy((a, b))


def snippet_filter_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices([1, 2, 3])
    a = list(dataset.filter(lambda x: x < 3).as_numpy_iterator())

    def filter_fn(x):
        return tf.math.equal(x, 1)

    b = list(dataset.filter(filter_fn).as_numpy_iterator())
    return to_numpy((a, b))


def snippet_flat_map_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    dataset = dataset.flat_map(tf.data.Dataset.from_tensor_slices)
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_from_generator_docstring(tf, tmp_path):
    def gen():
        ragged_tensor = tf.ragged.constant([[1, 2], [3]])
        yield 42, ragged_tensor

    dataset = tf.data.Dataset.from_generator(
        gen,
        output_signature=(tf.TensorSpec(shape=(), dtype=tf.int32),
                          tf.RaggedTensorSpec(shape=(2, None), dtype=tf.int32)))
    return to_numpy(list(dataset.take(1)))


def snippet_from_generator_plain(tf, tmp_path):
    import itertools

    def gen():
        for i in itertools.count(1):
            yield (i, [1] * i)

    dataset = tf.data.Dataset.from_generator(
        gen, output_signature=(tf.TensorSpec(shape=(), dtype=tf.int64),
                               tf.TensorSpec(shape=(None,), dtype=tf.int64)))
    return to_numpy(list(dataset.take(3).as_numpy_iterator()))


def snippet_from_tensor_slices_docstring(tf, tmp_path):
    a = list(tf.data.Dataset.from_tensor_slices([1, 2, 3]).as_numpy_iterator())
    b = list(tf.data.Dataset.from_tensor_slices([[1, 2], [3, 4]]).as_numpy_iterator())
    c = list(tf.data.Dataset.from_tensor_slices(([1, 2], [3, 4], [5, 6])).as_numpy_iterator())
    d = list(tf.data.Dataset.from_tensor_slices(([1, 2], [[3, 4], [5, 6]])).as_numpy_iterator())
    e = list(tf.data.Dataset.from_tensor_slices({"a": [1, 2], "b": [3, 4]}).as_numpy_iterator())
    return to_numpy((a, b, c, d, e))


def snippet_from_tensor_slices_features_labels(tf, tmp_path):
    features = tf.constant([[1, 3], [2, 1], [3, 3]])
    labels = tf.constant(["A", "B", "A"])
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    features_dataset = tf.data.Dataset.from_tensor_slices(features)
    labels_dataset = tf.data.Dataset.from_tensor_slices(labels)
    zipped = tf.data.Dataset.zip((features_dataset, labels_dataset))
    batched_features = tf.constant([[[1, 3], [2, 3]], [[2, 1], [1, 2]], [[3, 3], [3, 2]]],
                                   shape=(3, 2, 2))
    batched_labels = tf.constant([["A", "A"], ["B", "B"], ["A", "B"]], shape=(3, 2, 1))
    batched = tf.data.Dataset.from_tensor_slices((batched_features, batched_labels))
    return to_numpy((list(dataset.as_numpy_iterator()), list(zipped.as_numpy_iterator()),
                     list(batched.as_numpy_iterator())))


def snippet_from_tensors_docstring(tf, tmp_path):
    a = list(tf.data.Dataset.from_tensors([1, 2, 3]).as_numpy_iterator())
    b = list(tf.data.Dataset.from_tensors(([1, 2, 3], "A")).as_numpy_iterator())
    example = tf.constant([1, 2, 3])
    c = list(tf.data.Dataset.from_tensors(example).repeat(2).as_numpy_iterator())
    return to_numpy((a, b, c))


def snippet_get_single_element_docstring(tf, tmp_path):
    def preprocessing_fn(raw_feature):
        return raw_feature * 2

    raw_feature = [1, 2, 3]
    dataset = tf.data.Dataset.from_tensor_slices(raw_feature).map(preprocessing_fn).batch(3)
    return to_numpy(dataset.get_single_element())


def snippet_group_by_window_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.range(10)
    window_size = 5
    key_func = lambda x: x % 2
    reduce_func = lambda key, dataset: dataset.batch(window_size)
    dataset = dataset.group_by_window(key_func=key_func, reduce_func=reduce_func,
                                      window_size=window_size)
    return to_numpy([elem.numpy() for elem in dataset])


def snippet_interleave_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.range(1, 6)
    dataset = dataset.interleave(
        lambda x: tf.data.Dataset.from_tensors(x).repeat(6), cycle_length=2, block_length=4)
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_interleave_parallel_files(tf, tmp_path):
    filenames = []
    for i in range(4):
        path = os.path.join(tmp_path, f"file{i}.txt")
        with open(path, "w") as f:
            f.write("".join(f"{i}:{j}\n" for j in range(3)))
        filenames.append(path)
    dataset = tf.data.Dataset.from_tensor_slices(filenames)

    dataset = dataset.interleave(lambda x: tf.data.TextLineDataset(x).map(lambda l: l),
                                 cycle_length=4, num_parallel_calls=tf.data.AUTOTUNE)
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_list_files_docstring(tf, tmp_path):
    for name in ["a.py", "b.py", "c.py", "notes.txt"]:
        with open(os.path.join(tmp_path, name), "w") as f:
            f.write("x")
    dataset = tf.data.Dataset.list_files(os.path.join(tmp_path, "*.py"), shuffle=True, seed=3)
    got = sorted(os.path.basename(p) for p in dataset.as_numpy_iterator())
    return to_numpy((got, tf.data.Dataset.list_files(os.path.join(tmp_path, "*.py")).cardinality().numpy()))


def snippet_map_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.range(1, 6)
    a = list(dataset.map(lambda x: x + 1).as_numpy_iterator())
    elements = [(1, "foo"), (2, "bar"), (3, "baz")]
    dataset = tf.data.Dataset.from_generator(lambda: elements, (tf.int32, tf.string))
    b = list(dataset.map(lambda x, y: x).as_numpy_iterator())
    elements = [{"a": 1, "b": "foo"}, {"a": 2, "b": "bar"}, {"a": 3, "b": "baz"}]
    dataset = tf.data.Dataset.from_generator(lambda: elements, {"a": tf.int32, "b": tf.string})
    c = list(dataset.map(lambda d: d["a"]).as_numpy_iterator())
    return to_numpy((a, b, c))


def snippet_map_return_structures(tf, tmp_path):
    d = tf.data.Dataset.range(3)
    a = list(d.map(lambda x: {"x": x, "y": tf.cast(x, tf.float32)}).as_numpy_iterator())
    b = list(d.map(lambda x: (x, (x, x))).as_numpy_iterator())
    return to_numpy((a, b))


def snippet_map_py_function_docstring(tf, tmp_path):
    d = tf.data.Dataset.from_tensor_slices(["hello", "world"])

    def upper_case_fn(t):
        return t.numpy().decode("utf-8").upper()

    d = d.map(lambda x: tf.py_function(func=upper_case_fn, inp=[x], Tout=tf.string))
    return to_numpy(list(d.as_numpy_iterator()))


def snippet_padded_batch_docstring(tf, tmp_path):
    A = (tf.data.Dataset.range(1, 5, output_type=tf.int32)
         .map(lambda x: tf.fill([x], x)))
    a = [e.numpy() for e in A.padded_batch(2)]
    b = [e.numpy() for e in A.padded_batch(2, padded_shapes=5)]
    c = [e.numpy() for e in A.padded_batch(2, padded_shapes=(None,), padding_values=-1)]
    elements = [([1, 2, 3], [10]), ([4, 5], [11, 12])]
    dataset = tf.data.Dataset.from_generator(lambda: iter(elements), (tf.int32, tf.int32),
                                             output_shapes=([None], [None]))
    d = list(dataset.padded_batch(2, padding_values=(-1, 100)).as_numpy_iterator())
    return to_numpy((a, b, c, d))


def snippet_prefetch_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.range(3)
    dataset = dataset.prefetch(2)
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_ragged_batch_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.range(6)
    dataset = dataset.map(lambda x: tf.range(x))
    dataset = dataset.ragged_batch(5)
    return to_numpy([x for x in dataset])


def snippet_random_seed(tf, tmp_path):
    ds1 = tf.data.Dataset.random(seed=4).take(5)
    return to_numpy(list(ds1.as_numpy_iterator()))


def snippet_range_docstring(tf, tmp_path):
    a = list(tf.data.Dataset.range(5).as_numpy_iterator())
    b = list(tf.data.Dataset.range(2, 5).as_numpy_iterator())
    c = list(tf.data.Dataset.range(1, 5, 2).as_numpy_iterator())
    d = list(tf.data.Dataset.range(1, 5, -2).as_numpy_iterator())
    e = list(tf.data.Dataset.range(5, 1).as_numpy_iterator())
    f = list(tf.data.Dataset.range(5, 1, -2).as_numpy_iterator())
    g = list(tf.data.Dataset.range(2, 5, output_type=tf.int32).as_numpy_iterator())
    h = list(tf.data.Dataset.range(1, 5, 2, output_type=tf.float32).as_numpy_iterator())
    return to_numpy((a, b, c, d, e, f, g, h))


def snippet_rebatch_docstring(tf, tmp_path):
    ds = tf.data.Dataset.range(8)
    ds = ds.batch(4)
    a = list(ds.rebatch(batch_size=2).as_numpy_iterator())
    b = list(tf.data.Dataset.range(8).batch(4).rebatch(batch_size=[2, 1, 1]).as_numpy_iterator())
    return to_numpy((a, b))


def snippet_reduce_docstring(tf, tmp_path):
    a = tf.data.Dataset.range(5).reduce(np.int64(0), lambda x, _: x + 1).numpy()
    b = tf.data.Dataset.range(5).reduce(np.int64(0), lambda x, y: x + y).numpy()
    return to_numpy((a, b))


def snippet_rejection_resample_docstring(tf, tmp_path):
    initial_dist = [0.6, 0.4]
    n = 40
    classes = np.random.RandomState(0).choice(2, size=n, p=initial_dist)
    dataset = tf.data.Dataset.from_tensor_slices(classes)
    resampler = dataset.rejection_resample(class_func=lambda x: x, target_dist=[0.5, 0.5],
                                           initial_dist=initial_dist, seed=123)
    resampled = resampler.map(lambda class_func_result, data: data)
    return to_numpy(resampled.element_spec.dtype.name)


def snippet_repeat_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices([1, 2, 3])
    dataset = dataset.repeat(3)
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_sample_from_datasets_docstring(tf, tmp_path):
    dataset1 = tf.data.Dataset.range(0, 3)
    dataset2 = tf.data.Dataset.range(100, 103)
    sample_dataset = tf.data.Dataset.sample_from_datasets([dataset1, dataset2],
                                                          weights=[0.5, 0.5], seed=1)
    a = sorted(sample_dataset.as_numpy_iterator())
    sample_dataset = tf.data.Dataset.sample_from_datasets(
        [dataset1, dataset2], weights=[1.0, 0.0], seed=1, stop_on_empty_dataset=True)
    b = list(sample_dataset.as_numpy_iterator())
    return to_numpy((a, b))


def snippet_sample_from_datasets_seeded_order(tf, tmp_path):
    dataset1 = tf.data.Dataset.range(0, 10)
    dataset2 = tf.data.Dataset.range(100, 110)
    ds = tf.data.Dataset.sample_from_datasets([dataset1, dataset2], weights=[0.3, 0.7], seed=42)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_scan_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.range(10)
    initial_state = tf.constant(0, dtype=tf.int64)
    scan_func = lambda state, i: (state + i, state + i)
    dataset = dataset.scan(initial_state=initial_state, scan_func=scan_func)
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_shard_docstring(tf, tmp_path):
    A = tf.data.Dataset.range(10)
    B = A.shard(num_shards=3, index=0)
    return to_numpy(list(B.as_numpy_iterator()))


def snippet_shuffle_reshuffle_each_iteration(tf, tmp_path):
    dataset = tf.data.Dataset.range(3)
    dataset = dataset.shuffle(3, reshuffle_each_iteration=False, seed=9)
    dataset = dataset.repeat(2)
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_shuffle_reshuffle_true_seeded(tf, tmp_path):
    dataset = tf.data.Dataset.range(6)
    dataset = dataset.shuffle(6, reshuffle_each_iteration=True, seed=9)
    dataset = dataset.repeat(2)
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_shuffle_global_seed(tf, tmp_path):
    tf.random.set_seed(1234)
    dataset = tf.data.Dataset.range(10).shuffle(5)
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_skip_take_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.range(10)
    return to_numpy((list(dataset.skip(7).as_numpy_iterator()),
                     list(dataset.take(3).as_numpy_iterator())))


def snippet_take_while_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.range(10)
    dataset = dataset.take_while(lambda x: x < 5)
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_unbatch_docstring(tf, tmp_path):
    elements = [[1, 2, 3], [1, 2], [1, 2, 3, 4]]
    dataset = tf.data.Dataset.from_generator(lambda: elements, tf.int64)
    dataset = dataset.unbatch()
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_unique_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices([1, 37, 2, 37, 2, 1])
    dataset = dataset.unique()
    a = sorted(list(dataset.as_numpy_iterator()))
    dataset = tf.data.Dataset.from_tensor_slices(["b", "a", "b"]).unique()
    return to_numpy((a, list(dataset.as_numpy_iterator())))


def snippet_window_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.range(7).window(3)
    a = [list(window.as_numpy_iterator()) for window in dataset]
    dataset = tf.data.Dataset.range(7).window(3, drop_remainder=True)
    b = [list(window.as_numpy_iterator()) for window in dataset]
    dataset = tf.data.Dataset.range(7).window(3, 2, 1, True)
    c = [list(window.as_numpy_iterator()) for window in dataset]
    dataset = tf.data.Dataset.range(7).window(3, 1, 2, True)
    d = [list(window.as_numpy_iterator()) for window in dataset]
    return to_numpy((a, b, c, d))


def snippet_window_nested_dict(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices((range(4), range(4, 8)))
    dataset = dataset.window(2)
    a = [tuple(list(w.as_numpy_iterator()) for w in ws) for ws in dataset]
    dataset = tf.data.Dataset.from_tensor_slices({"a": range(4)}).window(2)
    b = [list(w["a"].as_numpy_iterator()) for w in dataset]
    return to_numpy((a, b))


def snippet_zip_docstring(tf, tmp_path):
    a = tf.data.Dataset.range(1, 4)
    b = tf.data.Dataset.range(4, 7)
    ds = tf.data.Dataset.zip(a, b)
    x = list(ds.as_numpy_iterator())
    ds = tf.data.Dataset.zip(b, a)
    y = list(ds.as_numpy_iterator())
    c = tf.data.Dataset.range(7, 13).batch(2)
    ds = tf.data.Dataset.zip(a, b, c)
    z = [e for e in ds.as_numpy_iterator()]
    d = tf.data.Dataset.range(13, 15)
    ds = tf.data.Dataset.zip(a, d)
    w = list(ds.as_numpy_iterator())
    return to_numpy((x, y, z, w))


def snippet_apply_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.range(100)

    def dataset_fn(ds):
        return ds.filter(lambda x: x < 5)

    dataset = dataset.apply(dataset_fn)
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_element_spec_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices([1, 2, 3])
    return to_numpy(repr(dataset.element_spec))


def snippet_ignore_errors_check_numerics(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices([1., 2., 0., 4.])
    dataset = dataset.map(lambda x: tf.debugging.check_numerics(1. / x, "error"))
    dataset = dataset.ignore_errors()
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_save_load_docstring(tf, tmp_path):
    path = os.path.join(tmp_path, "saved_data")
    dataset = tf.data.Dataset.range(2)
    dataset.save(path)
    new_dataset = tf.data.Dataset.load(path)
    return to_numpy(list(new_dataset.as_numpy_iterator()))


def snippet_sparse_batch_docstring(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices([1, 2, 3])
    dataset = dataset.map(lambda x: tf.fill([x], x))
    dataset = dataset.sparse_batch(batch_size=2, row_shape=[4])
    return to_numpy([tf.sparse.to_dense(e) for e in dataset])


def snippet_fixed_length_record_dataset(tf, tmp_path):
    path = os.path.join(tmp_path, "data.bin")
    with open(path, "wb") as f:
        f.write(b"HEAD")
        for i in range(4):
            f.write(bytes([i]) + np.arange(3, dtype=np.uint8).tobytes())
    ds = tf.data.FixedLengthRecordDataset(path, record_bytes=4, header_bytes=4)
    ds = ds.map(lambda r: tf.io.decode_raw(r, tf.uint8))
    ds = ds.map(lambda v: (v[0], v[1:]))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_dataset_of_strings_decode(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices([b"1", b"22", b"333"])
    return to_numpy([x.decode() for x in dataset.as_numpy_iterator()])
