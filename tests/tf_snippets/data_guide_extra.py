"""More of the TensorFlow guide's tf.data page and its neighbours: generators
with arguments and signatures, windows flattened into batches, stateful
scans, grouping and bucketing, resampling, nested zips, ragged batches,
cardinality and options. Our own code, the same calls."""
import numpy as np

from tf_snippets._compare import to_numpy


def snippet_from_generator_args_and_signature(tf, tmp_path):
    def gen(stop, prefix):
        for i in range(int(stop)):
            yield i, prefix.decode() + str(i) if isinstance(prefix, bytes) else str(i)

    ds = tf.data.Dataset.from_generator(
        gen, args=(4, "item-"),
        output_signature=(tf.TensorSpec((), tf.int32), tf.TensorSpec((), tf.string)))
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_from_generator_variable_length_padded(tf, tmp_path):
    def gen():
        for n in [3, 1, 4, 1, 5]:
            yield np.arange(n, dtype=np.int64), float(n) / 2

    ds = tf.data.Dataset.from_generator(
        gen, output_signature=(tf.TensorSpec([None], tf.int64), tf.TensorSpec([], tf.float32)))
    ds = ds.padded_batch(2, padded_shapes=([5], []), padding_values=(np.int64(-1), 0.0))
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_window_flat_map_sliding(tf, tmp_path):
    ds = tf.data.Dataset.range(10).window(4, shift=2, stride=1, drop_remainder=True)
    ds = ds.flat_map(lambda w: w.batch(4))
    return to_numpy(list(ds))


def snippet_window_of_pairs_zip_batches(tf, tmp_path):
    features = tf.data.Dataset.range(8)
    labels = tf.data.Dataset.range(8).map(lambda x: x * 10)
    ds = tf.data.Dataset.zip((features, labels)).window(3, shift=1, drop_remainder=True)
    ds = ds.flat_map(lambda f, l: tf.data.Dataset.zip((f.batch(3), l.batch(3))))
    return to_numpy(list(ds))


def snippet_timeseries_windows_by_hand(tf, tmp_path):
    series = np.sin(np.arange(20, dtype=np.float32) / 3.0)
    input_width, label_width = 5, 1
    total = input_width + label_width

    def split(window):
        return window[:input_width], window[input_width:]

    ds = tf.data.Dataset.from_tensor_slices(series).window(total, shift=2, drop_remainder=True)
    ds = ds.flat_map(lambda w: w.batch(total)).map(split).batch(3)
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_scan_running_mean(tf, tmp_path):
    def step(state, x):
        count, total = state
        count, total = count + 1, total + tf.cast(x, tf.float32)
        return (count, total), total / tf.cast(count, tf.float32)

    ds = tf.data.Dataset.range(1, 8).scan((tf.constant(0, tf.int64), tf.constant(0.0)), step)
    return to_numpy(list(ds))


def snippet_unique_strings(tf, tmp_path):
    ds = tf.data.Dataset.from_tensor_slices(["b", "a", "b", "c", "a", "d"]).unique()
    return to_numpy(list(ds))


def snippet_group_by_window_batches_by_key(tf, tmp_path):
    ds = tf.data.Dataset.range(20).group_by_window(
        key_func=lambda x: x % 3, reduce_func=lambda key, w: w.batch(4), window_size=4)
    return to_numpy(list(ds))


def snippet_bucket_by_sequence_length_padded(tf, tmp_path):
    lengths = [1, 7, 3, 9, 2, 5, 8, 4, 6, 3, 1, 10]

    def gen():
        for i, n in enumerate(lengths):
            yield np.full([n], i, np.int32)

    ds = tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec([None], tf.int32))
    ds = ds.bucket_by_sequence_length(
        element_length_func=lambda x: tf.shape(x)[0], bucket_boundaries=[3, 6],
        bucket_batch_sizes=[2, 2, 2], pad_to_bucket_boundary=False, drop_remainder=False)
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_sample_from_datasets_seeded(tf, tmp_path):
    a = tf.data.Dataset.range(0, 10)
    b = tf.data.Dataset.range(100, 110)
    ds = tf.data.Dataset.sample_from_datasets([a, b], weights=[0.3, 0.7], seed=42,
                                              stop_on_empty_dataset=True)
    return to_numpy(list(ds))


def snippet_choose_from_datasets_round_robin(tf, tmp_path):
    sets = [tf.data.Dataset.from_tensors(s).repeat() for s in ["x", "y", "z"]]
    choice = tf.data.Dataset.range(3).repeat(3)
    return to_numpy(list(tf.data.Dataset.choose_from_datasets(sets, choice)))


def snippet_enumerate_with_start(tf, tmp_path):
    ds = tf.data.Dataset.from_tensor_slices(["a", "b", "c"]).enumerate(start=5)
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_zip_nested_structures(tf, tmp_path):
    a = tf.data.Dataset.range(3)
    b = tf.data.Dataset.from_tensor_slices({"x": [1.0, 2.0, 3.0], "y": [[1, 2], [3, 4], [5, 6]]})
    c = tf.data.Dataset.zip((a, (a.map(lambda v: v * 2), b)))
    ds = c.map(lambda i, rest: {"i": i, "double": rest[0], "x": rest[1]["x"]})
    return to_numpy(list(c)), to_numpy(list(ds)), str(c.element_spec)


def snippet_zip_varargs_and_dict(tf, tmp_path):
    a = tf.data.Dataset.range(4)
    b = tf.data.Dataset.range(10, 14)
    pairs = tf.data.Dataset.zip(a, b)
    named = tf.data.Dataset.zip(datasets={"first": a, "second": b.map(lambda x: x * 2)})
    return (to_numpy(list(pairs)), to_numpy(list(named)), str(pairs.element_spec),
            str(named.element_spec))


def snippet_ragged_batch_of_ranges(tf, tmp_path):
    ds = tf.data.Dataset.range(6).map(lambda n: tf.range(n)).ragged_batch(4)
    out = [x.to_list() for x in ds]
    return out, str(ds.element_spec)


def snippet_range_with_dtype(tf, tmp_path):
    ds = tf.data.Dataset.range(2, 9, 3, output_type=tf.int32)
    f = tf.data.Dataset.range(4, output_type=tf.float32)
    return to_numpy(list(ds)), to_numpy(list(f)), str(ds.element_spec), str(f.element_spec)


def snippet_cardinality_through_transforms(tf, tmp_path):
    ds = tf.data.Dataset.range(42)
    out = [int(ds.cardinality())]
    out.append(int(ds.batch(10).cardinality()))
    out.append(int(ds.batch(10, drop_remainder=True).cardinality()))
    out.append(int(ds.repeat().cardinality()))
    out.append(int(ds.filter(lambda x: x > 3).cardinality()))
    out.append(int(ds.skip(40).take(5).cardinality()))
    out.append(int(ds.shard(4, 1).cardinality()))
    out.append(int(ds.filter(lambda x: True).apply(
        tf.data.experimental.assert_cardinality(42)).cardinality()))
    return out, int(tf.data.INFINITE_CARDINALITY), int(tf.data.UNKNOWN_CARDINALITY)


def snippet_assert_cardinality_fails_when_wrong(tf, tmp_path):
    ds = tf.data.Dataset.range(5).filter(lambda x: x < 3).apply(
        tf.data.experimental.assert_cardinality(5))
    got = []
    try:
        for x in ds:
            got.append(int(x))
    except tf.errors.FailedPreconditionError:
        got.append("FailedPreconditionError")
    return got


def snippet_options_deterministic_and_optimization(tf, tmp_path):
    options = tf.data.Options()
    options.deterministic = False
    options.experimental_optimization.map_parallelization = True
    options.experimental_optimization.parallel_batch = True
    options.experimental_optimization.apply_default_optimizations = True
    options.experimental_slack = True
    options.threading.private_threadpool_size = 2
    ds = tf.data.Dataset.range(20).map(lambda x: x * x, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(5).with_options(options)
    got = sorted(int(v) for b in ds for v in b)
    opts = ds.options()
    return (got, opts.deterministic, opts.experimental_optimization.map_parallelization,
            opts.threading.private_threadpool_size, opts.experimental_slack)


def snippet_options_experimental_deterministic(tf, tmp_path):
    options = tf.data.Options()
    options.experimental_deterministic = False
    ds = tf.data.Dataset.range(8).with_options(options)
    merged = ds.options().merge(tf.data.Options())
    return sorted(int(x) for x in ds), ds.options().experimental_deterministic, \
        merged.experimental_deterministic


def snippet_rejection_resample_balances(tf, tmp_path):
    labels = np.array([0] * 40 + [1] * 8, np.int64)
    ds = tf.data.Dataset.from_tensor_slices(labels)
    resampled = ds.rejection_resample(lambda x: x, target_dist=[0.5, 0.5],
                                      initial_dist=[40 / 48, 8 / 48], seed=3)
    out = [(int(c), int(x)) for c, x in resampled.take(20)]
    return len(out), sorted(set(c for c, _ in out)), str(resampled.element_spec)


def snippet_reduce_and_get_single_element(tf, tmp_path):
    ds = tf.data.Dataset.range(1, 6)
    total = ds.reduce(np.int64(0), lambda s, x: s + x)
    stats = ds.map(lambda x: tf.cast(x, tf.float32)).reduce(
        (0.0, 0.0), lambda s, x: (s[0] + x, s[1] + x * x))
    single = ds.batch(5).get_single_element()
    return to_numpy((total, stats, single))
