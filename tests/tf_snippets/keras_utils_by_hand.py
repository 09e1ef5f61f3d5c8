"""Keras' dataset utilities, and the same loaders written by hand with
tf.data calls (as code that predates them, or avoids Keras, does): images
from class folders with one-hot and integer labels, grayscale and
aspect-preserving loads, timeseries windows with strides and sampling
rates, text files with binary labels. Our own code, the same calls."""
import numpy as np

from tf_snippets._compare import to_numpy


def _image_tree(tf, root, sizes=((9, 13), (12, 7), (16, 16))):
    rng = np.random.default_rng(31)
    for c, name in enumerate(["ants", "bees"]):
        (root / name).mkdir(parents=True)
        for i, (h, w) in enumerate(sizes[:2 + c]):
            image = rng.integers(0, 256, size=(h, w + c, 3)).astype(np.uint8)
            tf.io.write_file(str(root / name / f"p{i}.png"), tf.io.encode_png(image))


def snippet_image_folder_by_hand_one_hot(tf, tmp_path):
    root = tmp_path / "imgs"
    _image_tree(tf, root)
    class_names = sorted(p.name for p in root.iterdir())
    files = sorted(str(p) for p in root.glob("*/*.png"))
    labels = [class_names.index(f.split("/")[-2]) for f in files]

    def load(path, label):
        image = tf.io.decode_png(tf.io.read_file(path), channels=3)
        image = tf.image.resize(image, (8, 8), method="bilinear")
        image.set_shape((8, 8, 3))
        return image, tf.one_hot(label, len(class_names))

    ds = tf.data.Dataset.from_tensor_slices((files, labels)).map(load).batch(2)
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_image_folder_grayscale_crop_to_aspect(tf, tmp_path):
    root = tmp_path / "imgs"
    _image_tree(tf, root)
    files = sorted(str(p) for p in root.glob("*/*.png"))

    def load(path):
        image = tf.io.decode_image(tf.io.read_file(path), channels=1, expand_animations=False)
        image = tf.image.resize_with_crop_or_pad(image, 10, 10)
        image = tf.image.resize(image, (6, 6), preserve_aspect_ratio=True)
        return tf.cast(image, tf.uint8)

    return to_numpy(list(tf.data.Dataset.from_tensor_slices(files).map(load)))


def snippet_image_dataset_from_directory_categorical_grayscale(tf, tmp_path):
    root = tmp_path / "imgs"
    _image_tree(tf, root)
    ds = tf.keras.utils.image_dataset_from_directory(
        str(root), labels="inferred", label_mode="categorical", color_mode="grayscale",
        image_size=(5, 7), batch_size=3, shuffle=False)
    return to_numpy(list(ds)), list(ds.class_names), str(ds.element_spec)


def snippet_image_dataset_from_directory_crop_to_aspect(tf, tmp_path):
    root = tmp_path / "imgs"
    _image_tree(tf, root)
    ds = tf.keras.utils.image_dataset_from_directory(
        str(root), label_mode="binary", image_size=(6, 6), batch_size=None, shuffle=False,
        crop_to_aspect_ratio=True, interpolation="nearest")
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_timeseries_by_hand_stride_and_rate(tf, tmp_path):
    data = np.arange(40, dtype=np.float32).reshape(20, 2)
    targets = np.arange(20, dtype=np.int64) * 10
    sequence_length, sampling_rate, stride = 4, 2, 3
    span = (sequence_length - 1) * sampling_rate + 1
    starts = np.arange(0, len(data) - span + 1, stride)

    def window(start):
        idx = start + tf.range(sequence_length, dtype=tf.int64) * sampling_rate
        return tf.gather(data, idx), tf.gather(targets, start)

    ds = tf.data.Dataset.from_tensor_slices(starts.astype(np.int64)).map(window).batch(2)
    return to_numpy(list(ds))


def snippet_timeseries_dataset_from_array_stride_rate(tf, tmp_path):
    data = np.arange(40, dtype=np.float32).reshape(20, 2)
    ds = tf.keras.utils.timeseries_dataset_from_array(
        data, np.arange(20, dtype=np.int64) * 10, sequence_length=4, sampling_rate=2,
        sequence_stride=3, batch_size=2, start_index=1, end_index=18)
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_timeseries_dataset_no_targets(tf, tmp_path):
    ds = tf.keras.utils.timeseries_dataset_from_array(
        np.arange(12), None, sequence_length=5, batch_size=4)
    return to_numpy(list(ds))


def snippet_text_files_binary_labels_by_hand(tf, tmp_path):
    root = tmp_path / "reviews"
    for label, name in enumerate(["neg", "pos"]):
        (root / name).mkdir(parents=True)
        for i in range(3):
            (root / name / f"{i}.txt").write_text(f"{name} review number {i}<br />ok")
    files = sorted(str(p) for p in root.glob("*/*.txt"))

    def load(path):
        text = tf.io.read_file(path)
        text = tf.strings.regex_replace(text, "<br />", " ")
        label = tf.cast(tf.strings.regex_full_match(path, ".*/pos/.*"), tf.float32)
        return text, tf.expand_dims(label, -1)

    ds = tf.data.Dataset.from_tensor_slices(files).map(load).batch(4)
    return to_numpy(list(ds)), str(ds.element_spec)
