"""``keras.utils.timeseries_dataset_from_array`` on conveyor: Keras' start
positions (shuffled with ``numpy.random.RandomState(seed)`` as Keras does),
each window gathered by a traced map in the engine."""
import numpy as np

from conveyor.data.dataset import AUTOTUNE, Dataset
from conveyor.ops.array_ops import gather
from conveyor.ops.math_ops import range as _range

__all__ = ["timeseries_dataset_from_array"]


def _check(data, start_index, end_index, sequence_stride, sampling_rate):
    n = len(data)
    if start_index:
        if start_index < 0:
            raise ValueError(f"`start_index` must be 0 or greater. Received: "
                             f"start_index={start_index}")
        if start_index >= n:
            raise ValueError(f"`start_index` must be lower than the length of the data. "
                             f"Received: start_index={start_index}, for data of length {n}")
    if end_index:
        if start_index and end_index <= start_index:
            raise ValueError(f"`end_index` must be higher than `start_index`. Received: "
                             f"start_index={start_index}, and end_index={end_index} ")
        if end_index >= n:
            raise ValueError(f"`end_index` must be lower than the length of the data. "
                             f"Received: end_index={end_index}, for data of length {n}")
        if end_index <= 0:
            raise ValueError(f"`end_index` must be higher than 0. Received: "
                             f"end_index={end_index}")
    if sampling_rate <= 0:
        raise ValueError(f"`sampling_rate` must be higher than 0. Received: "
                         f"sampling_rate={sampling_rate}")
    if sampling_rate >= n:
        raise ValueError(f"`sampling_rate` must be lower than the length of the data. "
                         f"Received: sampling_rate={sampling_rate}, for data of length {n}")
    if sequence_stride <= 0:
        raise ValueError(f"`sequence_stride` must be higher than 0. Received: "
                         f"sequence_stride={sequence_stride}")
    if sequence_stride >= n:
        raise ValueError(f"`sequence_stride` must be lower than the length of the data. "
                         f"Received: sequence_stride={sequence_stride}, for data of length {n}")


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1,
                                  sampling_rate=1, batch_size=128, shuffle=False, seed=None,
                                  start_index=None, end_index=None, format="tf"):
    """Batches of sliding windows over `data`'s first axis
    (``tf.keras.utils.timeseries_dataset_from_array``): window i holds
    ``data[p_i], data[p_i + sampling_rate], ...`` (`sequence_length` steps)
    with ``p_i = i * sequence_stride`` counted from `start_index`, and, with
    `targets`, the target ``targets[p_i]``. Same order (for a `seed`),
    values and dtypes as Keras with TensorFlow."""
    _check(data, start_index, end_index, sequence_stride, sampling_rate)
    if format != "tf":
        raise ValueError(f"`format` should be \"tf\" (conveyor has no grain output). "
                         f"Received: format={format}")
    start_index = 0 if start_index is None else start_index
    end_index = len(data) if end_index is None else end_index
    num_seqs = end_index - start_index - (sequence_length - 1) * sampling_rate
    if targets is not None:
        num_seqs = min(num_seqs, len(targets))
    index_dtype = np.int32 if num_seqs < 2147483647 else np.int64
    starts = np.arange(0, num_seqs, sequence_stride, dtype=index_dtype)
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        np.random.RandomState(seed).shuffle(starts)
    steps = np.asarray(data)[start_index:end_index]
    span = sequence_length * sampling_rate
    positions = Dataset.from_tensor_slices(starts)

    def window(p):  # a range of traced bounds, as Keras: the window's length is not static
        return gather(steps, _range(p, p + span, sampling_rate))

    if targets is None:
        ds = positions.map(window, num_parallel_calls=AUTOTUNE)
    else:
        goals = np.asarray(targets)[start_index:end_index]
        ds = positions.map(lambda p: (window(p), gather(goals, p)), num_parallel_calls=AUTOTUNE)
    ds = ds.prefetch(AUTOTUNE)
    if batch_size is not None:
        if shuffle:
            ds = ds.shuffle(buffer_size=batch_size * 8, seed=seed)
        return ds.batch(batch_size)
    if shuffle:
        ds = ds.shuffle(buffer_size=1024, seed=seed)
    return ds
