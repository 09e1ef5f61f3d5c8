"""What Keras' dataset utilities share: listing a directory into file paths
and labels in Keras' order, the training/validation split, and the label
datasets (``keras.utils``'s ``dataset_utils``, reimplemented from its
documented behaviour).

The order is Keras' so that the same `seed` gives the same files in the same
order as ``tf.keras.utils.image_dataset_from_directory``: class directories
sorted by name (or `class_names`' order), each walked top-down with
directories sorted by path and files sorted by name, then all paths shuffled
with ``numpy.random.RandomState(seed).shuffle`` and the labels with a second
RandomState of the same seed.
"""
import os

import numpy as np

from conveyor import dtypes as _dtypes
from conveyor.data.dataset import AUTOTUNE, Dataset
from conveyor.ops.array_ops import expand_dims, one_hot
from conveyor.ops.math_ops import cast

__all__ = ["check_validation_split_arg", "check_labels_args", "index_directory", "split",
           "labels_dataset", "finish", "new_seed"]


def new_seed():
    """A seed when the caller gave none, drawn as Keras draws it."""
    return np.random.randint(1e6)


def check_labels_args(labels, label_mode, class_names):
    """Keras' checks of `labels`/`label_mode`/`class_names`; returns the
    (labels, label_mode) pair to use (both None when either is)."""
    if labels not in ("inferred", None):
        if not isinstance(labels, (list, tuple)):
            raise ValueError("`labels` argument should be a list/tuple of integer labels, of "
                             "the same size as the number of files in the target directory. "
                             "If you wish to infer the labels from the subdirectory names in "
                             "the target directory, pass `labels=\"inferred\"`. If you wish to "
                             "get a dataset that only contains the files (no labels), pass "
                             f"`labels=None`. Received: labels={labels}")
        if class_names:
            raise ValueError(f"You can only pass `class_names` if `labels=\"inferred\"`. "
                             f"Received: labels={labels}, and class_names={class_names}")
    if label_mode not in {"int", "categorical", "binary", None}:
        raise ValueError(f"`label_mode` argument must be one of \"int\", \"categorical\", "
                         f"\"binary\", or None. Received: label_mode={label_mode}")
    if labels is None or label_mode is None:
        return None, None
    return labels, label_mode


def check_validation_split_arg(validation_split, subset, shuffle, seed):
    if validation_split and not 0 < validation_split < 1:
        raise ValueError(f"`validation_split` must be between 0 and 1, received: "
                         f"{validation_split}")
    if (validation_split or subset) and not (validation_split and subset):
        raise ValueError("If `subset` is set, `validation_split` must be set, and inversely.")
    if subset not in ("training", "validation", "both", None):
        raise ValueError(f"`subset` must be either \"training\", \"validation\" or \"both\", "
                         f"received: {subset}")
    if validation_split and shuffle and seed is None:
        raise ValueError("If using `validation_split` and shuffling the data, you must provide "
                         "a `seed` argument, to make sure that there is no overlap between the "
                         "training and validation subset.")


def _files(directory, follow_links, formats):
    """(root, name) of the files under `directory` whose names end with one
    of `formats` (any case): roots sorted by path, names sorted within one."""
    walk = sorted(os.walk(directory, followlinks=follow_links), key=lambda entry: entry[0])
    for root, _, names in walk:
        for name in sorted(names):
            if name.lower().endswith(formats):
                yield root, name


def index_directory(directory, labels, formats, class_names=None, shuffle=True, seed=None,
                    follow_links=False, verbose=True):
    """(file paths, labels, class names) of the files under `directory`, in
    Keras' order (see the module's docstring). `labels` is "inferred" (one
    class per subdirectory), None, or one label per file in that order."""
    if labels == "inferred":
        subdirs = [d.rstrip("/") for d in sorted(os.listdir(directory))
                   if os.path.isdir(os.path.join(directory, d)) and not d.startswith(".")]
        if class_names is not None:
            if not set(class_names).issubset(set(subdirs)):
                raise ValueError(f"The `class_names` passed did not match the names of the "
                                 f"subdirectories of the target directory. Expected: {subdirs} "
                                 f"(or a subset of it), but received: class_names={class_names}")
            subdirs = list(class_names)
    else:
        subdirs = [""]
        if class_names is not None:
            if labels is None:
                raise ValueError("When `labels=None` (no labels), argument `class_names` cannot "
                                 "be specified.")
            raise ValueError("When argument `labels` is specified, argument `class_names` "
                             "cannot be specified (the `class_names` will be the sorted list "
                             "of labels).")
    class_names = subdirs
    names, found = [], []
    for index, subdir in enumerate(subdirs):
        top = os.path.join(directory, subdir)
        base = os.path.basename(top)
        for root, name in _files(top, follow_links, formats):
            names.append(os.path.join(base, os.path.relpath(os.path.join(root, name), top)))
            found.append(index)
    if labels == "inferred":
        labels = np.array(found, dtype=np.int32)
    elif labels is None:
        class_names = None
    else:
        if len(labels) != len(names):
            raise ValueError(f"Expected the lengths of `labels` to match the number of files in "
                             f"the target directory. len(labels) is {len(labels)} while we "
                             f"found {len(names)} files in directory {directory}.")
        labels = list(labels)  # Keras shuffles the caller's list; a copy here
        class_names = [str(label) for label in sorted(set(labels))]
    if verbose:
        if labels is None:
            print(f"Found {len(names)} files.")
        else:
            print(f"Found {len(names)} files belonging to {len(class_names)} classes.")
    paths = [os.path.join(directory, name) for name in names]
    if shuffle:
        if seed is None:
            seed = new_seed()
        np.random.RandomState(seed).shuffle(paths)
        if labels is not None:
            np.random.RandomState(seed).shuffle(labels)
    return paths, labels, class_names


def split(samples, labels, validation_split, subset):
    """The `subset` ("training" or "validation") part: validation takes the
    last ``int(validation_split * n)`` samples, training the rest."""
    if not validation_split:
        return samples, labels
    num_val = int(validation_split * len(samples))
    if subset == "training":
        print(f"Using {len(samples) - num_val} files for training.")
        samples = samples[:-num_val]
        labels = None if labels is None else labels[:-num_val]
    elif subset == "validation":
        print(f"Using {num_val} files for validation.")
        samples = samples[-num_val:]
        labels = None if labels is None else labels[-num_val:]
    else:
        raise ValueError(f"`subset` must be either \"training\" or \"validation\", received: "
                         f"{subset}")
    return samples, labels


def _binary(x):
    return expand_dims(cast(x, _dtypes.float32), axis=-1)


def labels_dataset(labels, label_mode, num_classes):
    """A dataset of the labels as `label_mode` wants them: int32 ("int"),
    float32 one-hot ("categorical"), float32 of shape (1,) ("binary")."""
    ds = Dataset.from_tensor_slices(labels)
    if label_mode == "binary":
        ds = ds.map(_binary, num_parallel_calls=AUTOTUNE)
    elif label_mode == "categorical":
        ds = ds.map(lambda x: one_hot(x, num_classes), num_parallel_calls=AUTOTUNE)
    return ds


def finish(ds, batch_size, class_names, file_paths=None):
    """Batch (unless `batch_size` is None) and prefetch `ds`, and set the
    attributes Keras sets."""
    if batch_size is not None:
        ds = ds.batch(batch_size)
    ds = ds.prefetch(AUTOTUNE)
    ds.class_names = class_names
    if file_paths is not None:
        ds.file_paths = file_paths
    return ds
