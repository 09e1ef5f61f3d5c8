"""More of the TensorFlow guide's tf.data and data_performance pages
(interleave over files, cache then shuffle, snapshot, window + flat_map,
group_by_window, rejection_resample, sample_from_datasets and
choose_from_datasets with seeds), and TF1-style iterators and parsing
(make_one_shot_iterator, get_output_shapes/types, get_structure,
parse_single_example, decode_raw): our own code, the same calls."""
import numpy as np

from tf_snippets._compare import to_numpy


def _shards(tf, tmp_path, n=3):
    paths = []
    for i in range(n):
        path = str(tmp_path / f"part-{i}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for j in range(4 + i):
                writer.write(f"shard{i}-record{j}".encode())
        paths.append(path)
    return paths


def snippet_interleave_files_cycle_block(tf, tmp_path):
    files = tf.data.Dataset.from_tensor_slices(_shards(tf, tmp_path))
    ds = files.interleave(lambda f: tf.data.TFRecordDataset(f), cycle_length=2, block_length=2,
                          num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_cache_file_then_shuffle_seeded(tf, tmp_path):
    ds = tf.data.Dataset.from_tensor_slices(_shards(tf, tmp_path)).flat_map(
        tf.data.TFRecordDataset)
    ds = ds.map(lambda r: tf.strings.length(r)).cache(str(tmp_path / "cache"))
    first = list(ds.as_numpy_iterator())
    second = list(ds.as_numpy_iterator())  # read back from the cache files
    counts = sorted(np.unique(np.array(first), return_counts=True)[1].tolist())
    return to_numpy(first), to_numpy(second), counts


def snippet_snapshot_reads_back(tf, tmp_path):
    ds = tf.data.Dataset.range(10).map(lambda x: x * x)
    ds = ds.snapshot(str(tmp_path / "snap"))
    return to_numpy(list(ds.as_numpy_iterator())), to_numpy(list(ds.as_numpy_iterator()))


def snippet_window_flat_map_sequences(tf, tmp_path):
    ds = tf.data.Dataset.range(11).window(4, shift=2, stride=1, drop_remainder=True)
    ds = ds.flat_map(lambda w: w.batch(4))
    features_labels = ds.map(lambda s: (s[:-1], s[-1]))
    return to_numpy(list(features_labels))


def snippet_group_by_window_key_mod(tf, tmp_path):
    ds = tf.data.Dataset.range(20)
    ds = ds.group_by_window(key_func=lambda x: x % 3,
                            reduce_func=lambda key, w: w.batch(4),
                            window_size=4)
    return to_numpy(list(ds))


def snippet_rejection_resample_balanced(tf, tmp_path):
    labels = np.array([0] * 40 + [1] * 8 + [2] * 4, np.int64)
    ds = tf.data.Dataset.from_tensor_slices(labels).shuffle(52, seed=3).repeat()
    resampled = ds.rejection_resample(lambda x: x, target_dist=[1 / 3, 1 / 3, 1 / 3],
                                      initial_dist=[40 / 52, 8 / 52, 4 / 52], seed=5)
    out = list(resampled.map(lambda klass, x: x).take(30).as_numpy_iterator())
    return to_numpy(len(out)), sorted(set(int(v) for v in out)), str(resampled.element_spec)


def snippet_sample_from_datasets_seeded(tf, tmp_path):
    a = tf.data.Dataset.range(0, 10)
    b = tf.data.Dataset.range(100, 106)
    c = tf.data.Dataset.range(1000, 1003)
    ds = tf.data.Dataset.sample_from_datasets([a, b, c], weights=[0.5, 0.3, 0.2], seed=11,
                                              stop_on_empty_dataset=False)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_choose_from_datasets_round_robin(tf, tmp_path):
    datasets = [tf.data.Dataset.from_tensors(tf.constant(name)).repeat()
                for name in ["foo", "bar", "baz"]]
    choice = tf.data.Dataset.range(3).repeat(3)
    ds = tf.data.Dataset.choose_from_datasets(datasets, choice)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_tf1_one_shot_iterator_structure(tf, tmp_path):
    v1 = tf.compat.v1
    ds = tf.data.Dataset.range(5).map(lambda x: {"id": x, "sq": tf.cast(x * x, tf.float32)})
    it = v1.data.make_one_shot_iterator(ds)
    out = [it.get_next(), it.get_next()]
    return (to_numpy(out), str(v1.data.get_output_shapes(ds)), str(v1.data.get_output_types(ds)),
            str(tf.data.experimental.get_structure(it)))


def snippet_tf1_parse_single_example_decode_raw(tf, tmp_path):
    v1 = tf.compat.v1
    path = str(tmp_path / "raw.tfrecord")
    rng = np.random.default_rng(2)
    with tf.io.TFRecordWriter(path) as writer:
        for i in range(4):
            pixels = rng.integers(0, 256, size=(3, 4, 1)).astype(np.uint8)
            example = tf.train.Example(features=tf.train.Features(feature={
                "image_raw": tf.train.Feature(bytes_list=tf.train.BytesList(
                    value=[pixels.tobytes()])),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 2])),
                "weights": tf.train.Feature(float_list=tf.train.FloatList(value=[0.5, i])),
            }))
            writer.write(example.SerializeToString())

    def parser(record):
        features = v1.parse_single_example(record, features={
            "image_raw": v1.FixedLenFeature([], tf.string),
            "label": v1.FixedLenFeature([], tf.int64),
            "weights": v1.FixedLenFeature([2], tf.float32),
        })
        image = v1.decode_raw(features["image_raw"], tf.uint8)
        image = tf.reshape(image, [3, 4, 1])
        image = v1.to_float(image) * (1.0 / 255) - 0.5
        return image, v1.to_int32(features["label"]), features["weights"]

    ds = tf.data.TFRecordDataset(path).map(parser).batch(2)
    iterator = v1.data.make_one_shot_iterator(ds)
    out = []
    while True:
        try:
            out.append(iterator.get_next())
        except tf.errors.OutOfRangeError:
            break
    return to_numpy(out), str(v1.data.get_output_shapes(ds))
