"""tf.data performance guide (tensorflow.org/guide/data_performance), with the sleeps shortened."""
import os
import time

import numpy as np

from tf_snippets._compare import to_numpy


def _artificial_dataset(tf, num_samples=3):
    class ArtificialDataset(tf.data.Dataset):
        def _generator(num_samples):
            # Opening the file
            time.sleep(0.001)
            for sample_idx in range(num_samples):
                # Reading data (line, record) from the file
                time.sleep(0.0005)
                yield (sample_idx,)

        def __new__(cls, num_samples=3):
            return tf.data.Dataset.from_generator(
                cls._generator,
                output_signature=tf.TensorSpec(shape=(1,), dtype=tf.int64),
                args=(num_samples,))

    return ArtificialDataset(num_samples)


def _benchmark(dataset, num_epochs=2):
    seen = []
    for epoch_num in range(num_epochs):
        for sample in dataset:
            # Performing a training step
            seen.append(sample.numpy())
    return seen


def snippet_artificial_dataset_naive(tf, tmp_path):
    return to_numpy(_benchmark(_artificial_dataset(tf)))


def snippet_artificial_dataset_prefetch(tf, tmp_path):
    return to_numpy(_benchmark(_artificial_dataset(tf).prefetch(tf.data.AUTOTUNE)))


def snippet_sequential_interleave(tf, tmp_path):
    ds = tf.data.Dataset.range(2).interleave(lambda _: _artificial_dataset(tf))
    return to_numpy(_benchmark(ds))


def snippet_parallel_interleave(tf, tmp_path):
    ds = tf.data.Dataset.range(2).interleave(lambda _: _artificial_dataset(tf),
                                             num_parallel_calls=tf.data.AUTOTUNE)
    return to_numpy(_benchmark(ds))


def _mapped_function(tf):
    def mapped_function(s):
        # Do some hard pre-processing
        tf.py_function(lambda: time.sleep(0.0005), [], ())
        return s
    return mapped_function


def snippet_sequential_map_py_function(tf, tmp_path):
    ds = _artificial_dataset(tf).map(_mapped_function(tf))
    return to_numpy(_benchmark(ds))


def snippet_parallel_map_py_function(tf, tmp_path):
    ds = _artificial_dataset(tf).map(_mapped_function(tf), num_parallel_calls=tf.data.AUTOTUNE)
    return to_numpy(_benchmark(ds))


def snippet_cache_after_map(tf, tmp_path):
    calls = []

    def slow(x):
        calls.append(1)
        return x

    ds = _artificial_dataset(tf).map(lambda x: tf.py_function(slow, [x], tf.int64)).cache()
    seen = _benchmark(ds, num_epochs=3)
    return to_numpy((seen, len(calls)))


def snippet_vectorized_map_then_batch(tf, tmp_path):
    fast_dataset = tf.data.Dataset.range(1000)

    def increment(x):
        return x + 1

    return to_numpy([b.numpy().sum() for b in fast_dataset.map(increment).batch(256)])


def snippet_vectorized_batch_then_map(tf, tmp_path):
    fast_dataset = tf.data.Dataset.range(1000)

    def increment(x):
        return x + 1

    out = [b.numpy() for b in fast_dataset.batch(256).map(increment)]
    return to_numpy([(b.shape, b[:3]) for b in out])


def snippet_options_deterministic_false(tf, tmp_path):
    options = tf.data.Options()
    options.deterministic = False
    ds = tf.data.Dataset.range(50).map(lambda x: x * x, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.with_options(options)
    return to_numpy(sorted(ds.as_numpy_iterator()))


def snippet_map_deterministic_kwarg(tf, tmp_path):
    ds = tf.data.Dataset.range(40).map(lambda x: x + 100, num_parallel_calls=4,
                                       deterministic=False)
    return to_numpy(sorted(int(x) for x in ds.as_numpy_iterator()))


def snippet_interleave_deterministic_false(tf, tmp_path):
    ds = tf.data.Dataset.range(4).interleave(
        lambda x: tf.data.Dataset.range(x * 10, x * 10 + 5),
        cycle_length=2, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
    return to_numpy(sorted(ds.as_numpy_iterator()))


def snippet_options_threading(tf, tmp_path):
    options = tf.data.Options()
    options.threading.private_threadpool_size = 2
    options.threading.max_intra_op_parallelism = 1
    options.experimental_optimization.map_parallelization = True
    ds = tf.data.Dataset.range(10).map(lambda x: x * 2).with_options(options)
    got = ds.options()
    return to_numpy((list(ds.as_numpy_iterator()), got.threading.private_threadpool_size,
                     got.threading.max_intra_op_parallelism))


def snippet_options_default_values(tf, tmp_path):
    options = tf.data.Dataset.range(3).options()
    return to_numpy((options.deterministic is None,
                     options.experimental_optimization.map_parallelization is None,
                     options.threading.private_threadpool_size is None))


def snippet_best_practice_cache_order(tf, tmp_path):
    def time_consuming_mapping(x):
        return tf.cast(x, tf.float32) * 0.5

    def memory_consuming_mapping(x):
        return tf.stack([x, x + 1.0, x + 2.0])

    dataset = tf.data.Dataset.range(6)
    dataset = dataset.map(time_consuming_mapping).cache().map(memory_consuming_mapping)
    return to_numpy([list(dataset.as_numpy_iterator()) for _ in range(2)])


def snippet_cache_to_file(tf, tmp_path):
    filename = os.path.join(tmp_path, "cache_file")
    dataset = tf.data.Dataset.range(5).map(lambda x: x * 10).cache(filename)
    first = list(dataset.as_numpy_iterator())
    second = list(dataset.as_numpy_iterator())
    return to_numpy((first, second))


def snippet_full_input_pipeline(tf, tmp_path):
    rng = np.random.RandomState(0)
    x = rng.uniform(size=(32, 4)).astype(np.float32)
    y = rng.randint(0, 2, size=(32,))
    AUTOTUNE = tf.data.AUTOTUNE
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    ds = ds.map(lambda a, b: (a * 2.0, b), num_parallel_calls=AUTOTUNE)
    ds = ds.cache()
    ds = ds.batch(8)
    ds = ds.prefetch(buffer_size=AUTOTUNE)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_prefetch_experimental_autotune(tf, tmp_path):
    ds = tf.data.Dataset.range(10).batch(3).prefetch(tf.data.experimental.AUTOTUNE)
    return to_numpy([b.numpy() for b in ds])


def snippet_map_and_batch_fused(tf, tmp_path):
    ds = tf.data.Dataset.range(25)
    ds = ds.map(lambda x: (x, tf.cast(x, tf.float32) / 2), num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(10, num_parallel_calls=tf.data.AUTOTUNE)
    return to_numpy(list(ds.as_numpy_iterator()))
