"""``keras.utils.text_dataset_from_directory`` on conveyor: Keras' file
order and split (conveyor/keras/_index.py), each file read (and cut to
`max_length` bytes) by a traced map in the engine."""
from conveyor import io as _io
from conveyor import strings as _strings
from conveyor.data.dataset import AUTOTUNE, Dataset
from conveyor.keras import _index

__all__ = ["text_dataset_from_directory"]


def _paths_to_dataset(paths, labels, label_mode, num_classes, max_length, shuffle, buffer_size,
                      seed):
    def load(path):
        text = _io.read_file(path)
        return text if max_length is None else _strings.substr(text, 0, max_length)

    ds = Dataset.from_tensor_slices(paths)
    if label_mode:
        ds = Dataset.zip((ds, _index.labels_dataset(labels, label_mode, num_classes)))
    if shuffle:
        ds = ds.shuffle(buffer_size=buffer_size or 1024, seed=seed)
    if label_mode:
        return ds.map(lambda x, y: (load(x), y), num_parallel_calls=AUTOTUNE)
    return ds.map(load, num_parallel_calls=AUTOTUNE)


def text_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None,
                                batch_size=32, max_length=None, shuffle=True, seed=None,
                                validation_split=None, subset=None, follow_links=False,
                                format="tf", verbose=True):
    """A dataset of (text, label) batches from the ``.txt`` files of a
    directory (``tf.keras.utils.text_dataset_from_directory``): the same
    arguments, file order, split and values as Keras with TensorFlow. Texts
    are scalar strings (the file's bytes, at most `max_length` of them). The
    dataset (a list of two for ``subset="both"``) has ``class_names``."""
    labels, label_mode = _index.check_labels_args(labels, label_mode, class_names)
    if format != "tf":
        raise ValueError(f"`format` should be \"tf\" (conveyor has no grain output). "
                         f"Received: format={format}")
    _index.check_validation_split_arg(validation_split, subset, shuffle, seed)
    if seed is None:
        seed = _index.new_seed()
    paths, labels, class_names = _index.index_directory(
        directory, labels, formats=(".txt",), class_names=class_names, shuffle=shuffle,
        seed=seed, follow_links=follow_links, verbose=verbose)
    if label_mode == "binary" and len(class_names) != 2:
        raise ValueError(f"When passing `label_mode=\"binary\"`, there must be exactly 2 "
                         f"class_names. Received: class_names={class_names}")
    buffer_size = batch_size * 8 if batch_size is not None else 1024
    num_classes = len(class_names) if class_names else 0

    def make(subset_name, shuffled, what="text files"):
        sub_paths, sub_labels = _index.split(paths, labels, validation_split, subset_name)
        if not sub_paths:
            raise ValueError(f"No {what} found in directory {directory}. Allowed format: .txt")
        return _paths_to_dataset(sub_paths, sub_labels, label_mode, num_classes, max_length,
                                 shuffled, buffer_size, seed)

    if subset == "both":
        train = make("training", shuffle, "training text files")
        val = make("validation", False, "validation text files")
        return [_index.finish(train, batch_size, class_names),
                _index.finish(val, batch_size, class_names)]
    return _index.finish(make(subset, shuffle), batch_size, class_names)
