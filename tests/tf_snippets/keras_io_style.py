"""keras-io-style input pipelines: Keras' dataset utilities, then tf.data
maps (our own code, written in the style of keras-io's examples)."""
import os

import numpy as np

from tf_snippets._compare import to_numpy
from tf_snippets.images_tutorial import _flower_photos, _write_png


def _pets(tmp_path):
    """A small two-class image folder, PNGs of several sizes (no test data needed)."""
    root = os.path.join(tmp_path, "PetImages")
    rng = np.random.default_rng(3)
    for cls in ("Cat", "Dog"):
        os.makedirs(os.path.join(root, cls))
        for i in range(7):
            pixels = rng.integers(0, 256, size=(20 + 5 * i, 31 - 2 * i, 3))
            _write_png(os.path.join(root, cls, f"{i}.png"), pixels)
    return root


def snippet_image_classification_from_scratch(tf, tmp_path):
    data_dir = _pets(tmp_path)
    train_ds, val_ds = tf.keras.utils.image_dataset_from_directory(
        data_dir, validation_split=0.2, subset="both", seed=1337, image_size=(18, 18),
        batch_size=4, verbose=False)
    names = (train_ds.class_names, [os.path.relpath(p, data_dir) for p in val_ds.file_paths])
    train_ds = train_ds.map(lambda img, label: (img / 255.0, label),
                            num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
    return to_numpy((names, list(train_ds), list(val_ds)))


def snippet_flowers_keras_utils(tf, tmp_path):
    data_dir = _flower_photos(tmp_path)
    ds = tf.keras.utils.image_dataset_from_directory(
        data_dir, seed=123, image_size=(32, 24), batch_size=3, label_mode="categorical",
        verbose=False)
    normalization = lambda x, y: (tf.cast(x, tf.float32) / 127.5 - 1.0, y)  # noqa: E731
    return to_numpy((ds.class_names, list(ds.map(normalization))))


def snippet_crop_to_aspect_ratio(tf, tmp_path):
    data_dir = _pets(tmp_path)
    ds = tf.keras.utils.image_dataset_from_directory(
        data_dir, labels=None, shuffle=False, image_size=(10, 16), crop_to_aspect_ratio=True,
        batch_size=None, verbose=False)
    return to_numpy([tf.reduce_mean(x, axis=[0, 1]) for x in ds])


def snippet_text_classification(tf, tmp_path):
    root = os.path.join(tmp_path, "aclImdb", "train")
    for cls in ("neg", "pos"):
        os.makedirs(os.path.join(root, cls))
        for i in range(6):
            with open(os.path.join(root, cls, f"{i}_{i + 3}.txt"), "w") as f:
                f.write(f"A {cls} review<br />number {i}. " * (i + 1))
    raw_train = tf.keras.utils.text_dataset_from_directory(
        root, batch_size=4, validation_split=0.25, subset="training", seed=1337, verbose=False)

    def standardize(text, label):
        text = tf.strings.lower(text)
        return tf.strings.regex_replace(text, "<br />", " "), label
    return to_numpy((raw_train.class_names, list(raw_train.map(standardize))))


def snippet_timeseries_weather_style(tf, tmp_path):
    steps = np.arange(300, dtype=np.float32)
    features = np.stack([np.sin(steps / 7), np.cos(steps / 11), steps / 300], axis=1)
    targets = features[:, 0] * 2
    past, future, step = 24, 6, 2
    ds = tf.keras.utils.timeseries_dataset_from_array(
        features, targets[past + future:], sequence_length=past // step, sampling_rate=step,
        batch_size=16, shuffle=True, seed=7)
    first = next(iter(ds))
    return to_numpy((first, sum(1 for _ in ds)))
