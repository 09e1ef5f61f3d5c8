"""``keras.utils.image_dataset_from_directory`` on conveyor.

The files are listed and split in Python exactly as Keras does (see
conveyor/keras/_index.py); each element is loaded by a traced map that the
engine runs on its workers: read_file -> decode_image -> resize (or Keras'
centre crop to the target aspect ratio, or resize_with_pad), so the images
equal TensorFlow's.
"""
from conveyor import dtypes as _dtypes
from conveyor import image as _image
from conveyor import io as _io
from conveyor.data.dataset import AUTOTUNE, Dataset
from conveyor.keras import _index
from conveyor.ops.array_ops import shape as _shape
from conveyor.ops.math_ops import cast, maximum, minimum

__all__ = ["image_dataset_from_directory", "ALLOWLIST_FORMATS"]

ALLOWLIST_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
_INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
                   "mitchellcubic")
_CHANNELS = {"rgb": 3, "rgba": 4, "grayscale": 1}


def _crop_to_aspect(img, size, interpolation):
    """Keras' smart_resize: the largest centred window of the target aspect
    ratio (float32 arithmetic, truncated to int32 as Keras does), resized."""
    target_h, target_w = size
    dims = _shape(img)
    height, width = dims[0], dims[1]
    f32, i32 = _dtypes.float32, _dtypes.int32
    crop_h = cast(cast(width * target_h, f32) / target_w, i32)
    crop_h = maximum(minimum(height, crop_h), 1)
    crop_w = cast(cast(height * target_w, f32) / target_h, i32)
    crop_w = maximum(minimum(width, crop_w), 1)
    start_h = cast(cast(height - crop_h, f32) / 2, i32)
    start_w = cast(cast(width - crop_w, f32) / 2, i32)
    img = _image.crop_to_bounding_box(img, start_h, start_w, crop_h, crop_w)
    return _image.resize(img, size, method=interpolation)


def _loader(image_size, channels, interpolation, crop, pad):
    def load(path):
        img = _io.decode_image(_io.read_file(path), channels=channels, expand_animations=False)
        if crop:
            return _crop_to_aspect(img, image_size, interpolation)
        if pad:
            return _image.resize_with_pad(img, image_size[0], image_size[1], method=interpolation)
        return _image.resize(img, image_size, method=interpolation)
    return load


def _paths_to_dataset(paths, labels, label_mode, num_classes, load, shuffle, buffer_size, seed):
    ds = Dataset.from_tensor_slices(paths)
    if label_mode:
        ds = Dataset.zip((ds, _index.labels_dataset(labels, label_mode, num_classes)))
    if shuffle:
        ds = ds.shuffle(buffer_size=buffer_size or 1024, seed=seed)
    if label_mode:
        return ds.map(lambda x, y: (load(x), y), num_parallel_calls=AUTOTUNE)
    return ds.map(load, num_parallel_calls=AUTOTUNE)


def image_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None,
                                 color_mode="rgb", batch_size=32, image_size=(256, 256),
                                 shuffle=True, seed=None, validation_split=None, subset=None,
                                 interpolation="bilinear", follow_links=False,
                                 crop_to_aspect_ratio=False, pad_to_aspect_ratio=False,
                                 data_format=None, format="tf", verbose=True):
    """A dataset of (image, label) batches from image files in a directory
    (``tf.keras.utils.image_dataset_from_directory``): with
    ``labels="inferred"`` one class per subdirectory, sorted by name.

    Same arguments, order, split and values as Keras with the TensorFlow
    backend (channels_last only; `format` "tf" only). Images are float32 of
    shape ``image_size + (channels,)``; labels int32 ("int"), float32 one-hot
    ("categorical") or float32 (1,) ("binary"). The returned dataset (a list
    of two for ``subset="both"``) has Keras' ``class_names`` and
    ``file_paths`` attributes. conveyor decodes JPEG and PNG; a GIF or BMP
    file raises ``UnimplementedError`` when its element is read.
    """
    labels, label_mode = _index.check_labels_args(labels, label_mode, class_names)
    if color_mode not in _CHANNELS:
        raise ValueError(f"`color_mode` must be one of {{\"rgb\", \"rgba\", \"grayscale\"}}. "
                         f"Received: color_mode={color_mode}")
    channels = _CHANNELS[color_mode]
    if isinstance(image_size, int):
        image_size = (image_size, image_size)
    elif not isinstance(image_size, (list, tuple)) or len(image_size) != 2:
        raise ValueError(f"Invalid `image_size` value. Expected a tuple of 2 integers. "
                         f"Received: image_size={image_size}")
    image_size = tuple(image_size)
    interpolation = interpolation.lower()
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"Argument `interpolation` should be one of {_INTERPOLATIONS}. "
                         f"Received: interpolation={interpolation}")
    if format != "tf":
        raise ValueError(f"`format` should be \"tf\" (conveyor has no grain output). "
                         f"Received: format={format}")
    if data_format not in (None, "channels_last"):
        raise NotImplementedError(f"conveyor's image_dataset_from_directory makes channels_last "
                                  f"images only. Received: data_format={data_format}")
    if pad_to_aspect_ratio and crop_to_aspect_ratio:
        raise ValueError("Only one of `pad_to_aspect_ratio`, `crop_to_aspect_ratio` can be "
                         "set to `True`.")
    _index.check_validation_split_arg(validation_split, subset, shuffle, seed)
    if seed is None:
        seed = _index.new_seed()
    paths, labels, class_names = _index.index_directory(
        directory, labels, formats=ALLOWLIST_FORMATS, class_names=class_names, shuffle=shuffle,
        seed=seed, follow_links=follow_links, verbose=verbose)
    if label_mode == "binary" and len(class_names) != 2:
        raise ValueError(f"When passing `label_mode=\"binary\"`, there must be exactly 2 "
                         f"class_names. Received: class_names={class_names}")
    buffer_size = batch_size * 8 if batch_size is not None else 1024
    num_classes = len(class_names) if class_names else 0
    load = _loader(image_size, channels, interpolation, crop_to_aspect_ratio, pad_to_aspect_ratio)

    def make(subset_name, shuffled, what="images"):
        sub_paths, sub_labels = _index.split(paths, labels, validation_split, subset_name)
        if not sub_paths:
            raise ValueError(f"No {what} found in directory {directory}. Allowed formats: "
                             f"{ALLOWLIST_FORMATS}")
        return sub_paths, _paths_to_dataset(sub_paths, sub_labels, label_mode, num_classes, load,
                                            shuffled, buffer_size, seed)

    if subset == "both":
        train_paths, train = make("training", shuffle, "training images")
        val_paths, val = make("validation", False, "validation images")
        return [_index.finish(train, batch_size, class_names, train_paths),
                _index.finish(val, batch_size, class_names, val_paths)]
    sub_paths, ds = make(subset, shuffle)
    return _index.finish(ds, batch_size, class_names, sub_paths)
