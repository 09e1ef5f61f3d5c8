"""tf.data guide (tensorflow.org/guide/data): basic mechanics and reading input data."""
import os

import numpy as np

from tf_snippets._compare import to_numpy


def snippet_iterate_for_loop(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices([8, 3, 0, 8, 2, 1])
    out = []
    for elem in dataset:
        out.append(elem.numpy())
    return to_numpy(out)


def snippet_iter_next(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices([8, 3, 0, 8, 2, 1])
    it = iter(dataset)
    return to_numpy(next(it).numpy())


def snippet_reduce_sum(tf, tmp_path):
    dataset = tf.data.Dataset.from_tensor_slices([8, 3, 0, 8, 2, 1])
    return to_numpy(dataset.reduce(0, lambda state, value: state + value).numpy())


def snippet_element_spec_matrix(tf, tmp_path):
    dataset1 = tf.data.Dataset.from_tensor_slices(tf.random.uniform([4, 10]))
    return to_numpy(repr(dataset1.element_spec))


def snippet_element_spec_tuple(tf, tmp_path):
    dataset2 = tf.data.Dataset.from_tensor_slices(
        (tf.random.uniform([4]),
         tf.random.uniform([4, 100], maxval=100, dtype=tf.int32)))
    return to_numpy(str(dataset2.element_spec))


def snippet_zip_nested_spec(tf, tmp_path):
    dataset1 = tf.data.Dataset.from_tensor_slices(np.arange(40, dtype=np.float32).reshape(4, 10))
    dataset2 = tf.data.Dataset.from_tensor_slices((np.arange(4, dtype=np.float32),
                                                   np.arange(400, dtype=np.int32).reshape(4, 100)))
    dataset3 = tf.data.Dataset.zip((dataset1, dataset2))
    shapes = [(a.shape, b.shape, c.shape) for a, (b, c) in dataset3]
    return to_numpy([[list(s) for s in t] for t in shapes])


def snippet_zip_nested_values(tf, tmp_path):
    dataset1 = tf.data.Dataset.from_tensor_slices(np.arange(12, dtype=np.float32).reshape(4, 3))
    dataset2 = tf.data.Dataset.from_tensor_slices((np.arange(4, dtype=np.float32),
                                                   np.arange(8, dtype=np.int32).reshape(4, 2)))
    dataset3 = tf.data.Dataset.zip((dataset1, dataset2))
    return to_numpy(list(dataset3.as_numpy_iterator()))


def snippet_numpy_arrays_images_labels(tf, tmp_path):
    rng = np.random.RandomState(0)
    images = rng.randint(0, 255, size=(10, 4, 4)).astype(np.uint8)
    labels = rng.randint(0, 10, size=(10,)).astype(np.uint8)
    images = images / 255
    dataset = tf.data.Dataset.from_tensor_slices((images, labels))
    return to_numpy(list(dataset.take(3).as_numpy_iterator()))


def snippet_numpy_arrays_spec(tf, tmp_path):
    images = np.zeros((10, 28, 28), dtype=np.float64)
    labels = np.zeros((10,), dtype=np.uint8)
    dataset = tf.data.Dataset.from_tensor_slices((images, labels))
    return to_numpy(str(dataset))


def snippet_from_generator_count(tf, tmp_path):
    def count(stop):
        i = 0
        while i < stop:
            yield i
            i += 1

    ds_counter = tf.data.Dataset.from_generator(count, args=[25], output_types=tf.int32,
                                                output_shapes=())
    out = []
    for count_batch in ds_counter.repeat().batch(10).take(10):
        out.append(count_batch.numpy())
    return to_numpy(out)


def snippet_from_generator_series_padded(tf, tmp_path):
    def gen_series():
        rng = np.random.RandomState(1)
        i = 0
        while i < 12:
            size = rng.randint(0, 6)
            yield i, rng.normal(size=(size,))
            i += 1

    ds_series = tf.data.Dataset.from_generator(
        gen_series,
        output_signature=(tf.TensorSpec(shape=(), dtype=tf.int32),
                          tf.TensorSpec(shape=(None,), dtype=tf.float32)))
    ds_series_batch = ds_series.shuffle(20, seed=3).padded_batch(4)
    ids, sequence_batch = next(iter(ds_series_batch))
    return to_numpy((ids.numpy(), sequence_batch.numpy()))


def snippet_from_generator_series_no_shuffle(tf, tmp_path):
    def gen_series():
        rng = np.random.RandomState(1)
        for i in range(9):
            yield i, rng.normal(size=(rng.randint(0, 5),))

    ds_series = tf.data.Dataset.from_generator(
        gen_series,
        output_signature=(tf.TensorSpec(shape=(), dtype=tf.int32),
                          tf.TensorSpec(shape=(None,), dtype=tf.float32)))
    return to_numpy(list(ds_series.padded_batch(3).as_numpy_iterator()))


def _write_lines(path, lines):
    with open(path, "w") as f:
        for line in lines:
            f.write(line + "\n")


def snippet_textline_interleave_files(tf, tmp_path):
    file_paths = []
    for name, n in (("cowper", 4), ("derby", 3), ("butler", 5)):
        path = os.path.join(tmp_path, name + ".txt")
        _write_lines(path, [f"{name} line {i}" for i in range(n)])
        file_paths.append(path)
    files_ds = tf.data.Dataset.from_tensor_slices(file_paths)
    lines_ds = files_ds.interleave(tf.data.TextLineDataset, cycle_length=3)
    return to_numpy([line.numpy() for line in lines_ds.take(10)])


def snippet_textline_skip_header_filter(tf, tmp_path):
    path = os.path.join(tmp_path, "train.csv")
    _write_lines(path, ["survived,sex,age", "0,male,22.0", "1,female,38.0", "1,female,26.0",
                        "1,female,35.0", "0,male,28.0"])
    titanic_lines = tf.data.TextLineDataset(path)

    def survived(line):
        return tf.not_equal(tf.strings.substr(line, 0, 1), "0")

    survivors = titanic_lines.skip(1).filter(survived)
    return to_numpy([line.numpy() for line in survivors.take(10)])


def snippet_textline_first_lines(tf, tmp_path):
    path = os.path.join(tmp_path, "cowper.txt")
    _write_lines(path, ["\ufeffAchilles sing, O Goddess!", "Peleus' son;", "", "His wrath pernicious"])
    dataset = tf.data.TextLineDataset(path)
    return to_numpy([line.numpy() for line in dataset.take(5)])


def snippet_batch_zip_inc_dec(tf, tmp_path):
    inc_dataset = tf.data.Dataset.range(100)
    dec_dataset = tf.data.Dataset.range(0, -100, -1)
    dataset = tf.data.Dataset.zip((inc_dataset, dec_dataset))
    batched_dataset = dataset.batch(4)
    return to_numpy([batch for batch in batched_dataset.take(4).as_numpy_iterator()])


def snippet_batch_unknown_dim_spec(tf, tmp_path):
    inc_dataset = tf.data.Dataset.range(100)
    dec_dataset = tf.data.Dataset.range(0, -100, -1)
    batched_dataset = tf.data.Dataset.zip((inc_dataset, dec_dataset)).batch(7)
    return to_numpy(repr(batched_dataset))


def snippet_batch_drop_remainder_shapes(tf, tmp_path):
    batched = tf.data.Dataset.range(100).batch(7, drop_remainder=True)
    spec = batched.element_spec
    return to_numpy((list(spec.shape), spec.dtype.name, len(list(batched))))


def snippet_padded_batch_fill(tf, tmp_path):
    dataset = tf.data.Dataset.range(100)
    dataset = dataset.map(lambda x: tf.fill([tf.cast(x, tf.int32)], x))
    dataset = dataset.padded_batch(4, padded_shapes=(None,))
    return to_numpy([batch.numpy() for batch in dataset.take(2)])


def snippet_repeat_then_batch(tf, tmp_path):
    titanic = tf.data.Dataset.range(13)
    sizes = [len(b) for b in titanic.repeat(3).batch(8).as_numpy_iterator()]
    return to_numpy(sizes)


def snippet_batch_then_repeat(tf, tmp_path):
    titanic = tf.data.Dataset.range(13)
    sizes = [b.shape[0] for b in titanic.batch(8).repeat(3)]
    return to_numpy(sizes)


def snippet_repeat_epoch_loop(tf, tmp_path):
    dataset = tf.data.Dataset.range(7).batch(3)
    out = []
    for epoch in range(3):
        for batch in dataset:
            out.append(batch.numpy().sum())
        out.append(-epoch)
    return to_numpy(out)


def snippet_shuffle_enumerate_lines(tf, tmp_path):
    lines = tf.data.Dataset.from_tensor_slices([f"line {i}" for i in range(30)])
    counter = tf.data.experimental.Counter()
    dataset = tf.data.Dataset.zip((counter, lines))
    dataset = dataset.shuffle(buffer_size=10, seed=42)
    dataset = dataset.repeat(2)
    dataset = dataset.batch(20)
    n, line_batch = next(iter(dataset))
    return to_numpy(n.numpy())


def snippet_shuffle_seed_list(tf, tmp_path):
    dataset = tf.data.Dataset.range(20).shuffle(buffer_size=8, seed=7)
    return to_numpy(list(dataset.as_numpy_iterator()))


def snippet_checkpoint_iterator(tf, tmp_path):
    range_ds = tf.data.Dataset.range(20)
    iterator = iter(range_ds)
    ckpt = tf.train.Checkpoint(step=tf.Variable(0), iterator=iterator)
    manager = tf.train.CheckpointManager(ckpt, os.path.join(tmp_path, "my_ckpt"), max_to_keep=3)
    first = [next(iterator).numpy() for _ in range(5)]
    manager.save()
    second = [next(iterator).numpy() for _ in range(5)]
    ckpt.restore(manager.latest_checkpoint)
    third = [next(iterator).numpy() for _ in range(5)]
    return to_numpy((first, second, third))


def snippet_checkpoint_save_restore(tf, tmp_path):
    dataset = tf.data.Dataset.range(10).map(lambda x: x * 3)
    iterator = iter(dataset)
    ckpt = tf.train.Checkpoint(iterator=iterator)
    a = [next(iterator).numpy() for _ in range(3)]
    path = ckpt.save(os.path.join(tmp_path, "ckpt"))
    b = [next(iterator).numpy() for _ in range(2)]
    ckpt.restore(path)
    c = [x.numpy() for x in iterator]
    return to_numpy((a, b, c))


def snippet_from_tensors_vs_slices(tf, tmp_path):
    t = np.array([[1, 2], [3, 4]], dtype=np.int32)
    whole = list(tf.data.Dataset.from_tensors(t).as_numpy_iterator())
    rows = list(tf.data.Dataset.from_tensor_slices(t).as_numpy_iterator())
    return to_numpy((whole, rows))


def snippet_dict_features_slices(tf, tmp_path):
    features = {"age": np.array([22.0, 38.0, 26.0]), "sex": np.array(["male", "female", "female"]),
                "fare": np.array([7.25, 71.28, 7.92], dtype=np.float32)}
    labels = np.array([0, 1, 1])
    ds = tf.data.Dataset.from_tensor_slices((features, labels))
    out = []
    for feature_batch, label_batch in ds.batch(2).take(1):
        for key, value in feature_batch.items():
            out.append((key, value.numpy()))
        out.append(("label", label_batch.numpy()))
    return to_numpy(out)
