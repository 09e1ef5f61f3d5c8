"""tf.data guide: preprocessing data, time series windowing, resampling."""
import numpy as np

from tf_snippets._compare import to_numpy


def snippet_py_function_upper(tf, tmp_path):
    def upper(s):
        return s.numpy().decode().upper().encode()

    def tf_upper(s):
        [out] = tf.py_function(upper, [s], [tf.string])
        out.set_shape(())
        return out

    ds = tf.data.Dataset.from_tensor_slices(["cat", "dog", "bird"]).map(tf_upper)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_py_function_tout_list(tf, tmp_path):
    def py_len(word):
        w = word.numpy()
        return w, len(w)

    ds = tf.data.Dataset.from_tensor_slices([b"a", b"abc", b"ab"])
    ds = ds.map(lambda w: tf.py_function(py_len, [w], Tout=[tf.string, tf.int64]))
    return to_numpy([(a.numpy(), b.numpy()) for a, b in ds])


def snippet_numpy_function_map(tf, tmp_path):
    def add_noise(x):
        return (x * 2 + 1).astype(np.float32)

    ds = tf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.float32).reshape(3, 2))
    ds = ds.map(lambda x: tf.numpy_function(add_noise, [x], tf.float32))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_time_series_dense_1_step(tf, tmp_path):
    range_ds = tf.data.Dataset.range(100000)
    batches = range_ds.batch(10, drop_remainder=True)

    def dense_1_step(batch):
        return batch[:-1], batch[1:]

    predict_dense_1_step = batches.map(dense_1_step)
    return to_numpy([(f.numpy(), l.numpy()) for f, l in predict_dense_1_step.take(3)])


def snippet_time_series_label_next_5(tf, tmp_path):
    range_ds = tf.data.Dataset.range(100000)
    batches = range_ds.batch(15, drop_remainder=True)

    def label_next_5_steps(batch):
        return (batch[:-5], batch[-5:])

    predict_5_steps = batches.map(label_next_5_steps)
    return to_numpy(list(predict_5_steps.take(3).as_numpy_iterator()))


def snippet_time_series_zip_features_labels(tf, tmp_path):
    range_ds = tf.data.Dataset.range(100000)
    feature_length = 10
    label_length = 3
    features = range_ds.batch(feature_length, drop_remainder=True)
    labels = range_ds.batch(feature_length).skip(1).map(lambda labels: labels[:label_length])
    predicted_steps = tf.data.Dataset.zip((features, labels))
    return to_numpy(list(predicted_steps.take(5).as_numpy_iterator()))


def snippet_window_flat_map_take(tf, tmp_path):
    range_ds = tf.data.Dataset.range(100000)
    window_size = 5
    windows = range_ds.window(window_size, shift=1)
    return to_numpy([x.numpy() for x in windows.flat_map(lambda x: x).take(30)])


def snippet_window_sub_to_batch(tf, tmp_path):
    range_ds = tf.data.Dataset.range(100000)
    windows = range_ds.window(5, shift=1)

    def sub_to_batch(sub):
        return sub.batch(5, drop_remainder=True)

    return to_numpy([example.numpy() for example in windows.flat_map(sub_to_batch).take(5)])


def _make_window_dataset(tf, ds, window_size=5, shift=1, stride=1):
    windows = ds.window(window_size, shift=shift, stride=stride)

    def sub_to_batch(sub):
        return sub.batch(window_size, drop_remainder=True)

    return windows.flat_map(sub_to_batch)


def snippet_window_make_window_dataset(tf, tmp_path):
    range_ds = tf.data.Dataset.range(100000)
    ds = _make_window_dataset(tf, range_ds, window_size=10, shift=5, stride=3)
    return to_numpy(list(ds.take(10).as_numpy_iterator()))


def snippet_window_dense_labels(tf, tmp_path):
    range_ds = tf.data.Dataset.range(100000)
    ds = _make_window_dataset(tf, range_ds, window_size=10, shift=5, stride=3)
    dense_labels_ds = ds.map(lambda batch: (batch[:-1], batch[1:]))
    return to_numpy(list(dense_labels_ds.take(3).as_numpy_iterator()))


def _fraud_like(tf):
    rng = np.random.RandomState(0)
    features = rng.normal(size=(60, 3)).astype(np.float32)
    labels = (rng.uniform(size=60) < 0.15).astype(np.int64)
    return tf.data.Dataset.from_tensor_slices((features, labels))


def snippet_resample_sample_from_datasets(tf, tmp_path):
    creditcard_ds = _fraud_like(tf)
    negative_ds = creditcard_ds.filter(lambda features, label: label == 0).repeat()
    positive_ds = creditcard_ds.filter(lambda features, label: label == 1).repeat()
    balanced_ds = tf.data.Dataset.sample_from_datasets(
        [negative_ds, positive_ds], [0.5, 0.5], seed=11).batch(10)
    return to_numpy([label.numpy() for _, label in balanced_ds.take(5)])


def snippet_resample_class_counts(tf, tmp_path):
    creditcard_ds = _fraud_like(tf).batch(10)

    def count(counts, batch):
        features, labels = batch
        class_1 = labels == 1
        class_1 = tf.cast(class_1, tf.int32)
        class_0 = labels == 0
        class_0 = tf.cast(class_0, tf.int32)
        counts["class_0"] += tf.reduce_sum(class_0)
        counts["class_1"] += tf.reduce_sum(class_1)
        return counts

    counts = creditcard_ds.take(10).reduce(
        initial_state={"class_0": 0, "class_1": 0}, reduce_func=count)
    counts = np.array([counts["class_0"].numpy(), counts["class_1"].numpy()]).astype(np.float32)
    return to_numpy(counts / counts.sum())


def snippet_rejection_resample(tf, tmp_path):
    creditcard_ds = _fraud_like(tf)

    def class_func(features, label):
        return label

    resample_ds = creditcard_ds.rejection_resample(
        class_func, target_dist=[0.5, 0.5], initial_dist=[0.85, 0.15], seed=42)
    balanced_ds = resample_ds.map(lambda extra_label, features_and_label: features_and_label)
    labels = [label.numpy() for _, label in balanced_ds.take(8)]
    return to_numpy(len(labels))


def snippet_unbatch_rows(tf, tmp_path):
    ds = tf.data.Dataset.from_tensor_slices(np.arange(12).reshape(6, 2)).batch(4)
    return to_numpy(list(ds.unbatch().as_numpy_iterator()))


def snippet_filter_lambda(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices([1, 2, 3])
    dataset = dataset.filter(lambda x: x < 3)
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_map_cast_normalize(tf, tmp_path):
    images = np.arange(2 * 4 * 4 * 3, dtype=np.uint8).reshape(2, 4, 4, 3)
    labels = np.array([3, 7], dtype=np.int64)

    def normalize_img(image, label):
        return tf.cast(image, tf.float32) / 255., label

    ds = tf.data.Dataset.from_tensor_slices((images, labels)).map(
        normalize_img, num_parallel_calls=tf.data.AUTOTUNE)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_map_reshape_one_hot(tf, tmp_path):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    y = np.array([0, 2, 1, 2])
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    ds = ds.map(lambda a, b: (tf.reshape(a, [2, 3]), tf.one_hot(b, 3)))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_cardinality_after_filter(tf, tmp_path):
    dataset = tf.data.Dataset.range(42)
    a = dataset.cardinality().numpy()
    b = dataset.repeat().cardinality().numpy()
    c = dataset.filter(lambda x: True).cardinality().numpy()
    return to_numpy((a, b == tf.data.INFINITE_CARDINALITY, c == tf.data.UNKNOWN_CARDINALITY))


def snippet_assert_cardinality(tf, tmp_path):
    dataset = tf.data.Dataset.range(10).filter(lambda x: x % 2 == 0)
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(5))
    return to_numpy((dataset.cardinality().numpy(), list(dataset.as_numpy_iterator())))


def snippet_enumerate_start(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices([b"a", b"b", b"c"])
    return to_numpy([(i.numpy(), x.numpy()) for i, x in dataset.enumerate(start=5)])


def snippet_concatenate_repeat_take(tf, tmp_path):
    a = tf.data.Dataset.range(1, 4)
    b = tf.data.Dataset.range(4, 8)
    ds = a.concatenate(b).repeat(2).skip(3).take(8)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_group_by_window_parity(tf, tmp_path):
    ds = tf.data.Dataset.range(20)
    ds = ds.group_by_window(key_func=lambda x: x % 2,
                            reduce_func=lambda key, window: window.batch(4),
                            window_size=4)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_bucket_by_sequence_length(tf, tmp_path):
    elements = [[0], [1, 2, 3, 4], [5, 6, 7], [7, 8, 9, 10, 11], [13, 14, 15, 16, 19, 20],
                [21, 22]]
    dataset = tf.data.Dataset.from_generator(lambda: elements, tf.int64, output_shapes=[None])
    dataset = dataset.bucket_by_sequence_length(
        element_length_func=lambda elem: tf.shape(elem)[0],
        bucket_boundaries=[3, 5],
        bucket_batch_sizes=[2, 2, 2])
    return to_numpy([elem.numpy() for elem in dataset])
