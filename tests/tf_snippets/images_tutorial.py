"""Load images tutorial and image data augmentation tutorial, on the shared test JPEGs."""
import os
import shutil
import struct
import zlib

import numpy as np

from tf_snippets._compare import MissingTestData, to_numpy

_CANDIDATES = [os.environ.get("CONVEYOR_TESTDATA", ""),
               os.path.join(os.path.dirname(__file__), "..", "..", "shared", "testdata"),
               "/work/shared/testdata"]


def _jpeg_dir():
    for base in _CANDIDATES:
        if base and os.path.exists(os.path.join(base, "jpeg", "hopper.jpg")):
            return os.path.join(base, "jpeg")
    raise MissingTestData("shared test JPEGs not found (set CONVEYOR_TESTDATA)")


LAYOUT = {"daisy": ["hopper.jpg", "testorig.jpg"],
          "roses": ["flower.jpg", "testimgint.jpg"],
          "tulips": ["pil_sample_rgb.jpg", "hopper_gray.jpg"]}


def _flower_photos(tmp_path):
    src = _jpeg_dir()
    data_dir = os.path.join(tmp_path, "flower_photos")
    for cls, names in LAYOUT.items():
        os.makedirs(os.path.join(data_dir, cls))
        for name in names:
            shutil.copy(os.path.join(src, name), os.path.join(data_dir, cls, name))
    return data_dir


def _write_png(path, pixels):
    """A minimal 8-bit RGB PNG writer (no PIL needed)."""
    h, w, _ = pixels.shape
    raw = b"".join(b"\x00" + pixels[y].astype(np.uint8).tobytes() for y in range(h))

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def snippet_list_files_no_shuffle(tf, tmp_path):
    data_dir = _flower_photos(tmp_path)
    list_ds = tf.data.Dataset.list_files(str(data_dir + "/*/*"), shuffle=False)
    return to_numpy([os.path.relpath(f.numpy().decode(), data_dir) for f in list_ds])


def snippet_list_files_shuffle_seed(tf, tmp_path):
    data_dir = _flower_photos(tmp_path)
    list_ds = tf.data.Dataset.list_files(str(data_dir + "/*/*"), shuffle=False)
    image_count = len(list(list_ds))
    list_ds = list_ds.shuffle(image_count, reshuffle_each_iteration=False, seed=5)
    return to_numpy([os.path.basename(f) for f in list_ds.as_numpy_iterator()])


def snippet_class_names_and_split(tf, tmp_path):
    data_dir = _flower_photos(tmp_path)
    class_names = np.array(sorted([item for item in os.listdir(data_dir)
                                   if item != "LICENSE.txt"]))
    list_ds = tf.data.Dataset.list_files(str(data_dir + "/*/*"), shuffle=False)
    image_count = len(list_ds)
    val_size = int(image_count * 0.34)
    train_ds = list_ds.skip(val_size)
    val_ds = list_ds.take(val_size)
    return to_numpy((class_names, tf.data.experimental.cardinality(train_ds).numpy(),
                     tf.data.experimental.cardinality(val_ds).numpy()))


def _get_label_fn(tf, class_names):
    def get_label(file_path):
        parts = tf.strings.split(file_path, os.path.sep)
        one_hot = parts[-2] == class_names
        return tf.argmax(one_hot)
    return get_label


def _decode_img_fn(tf, img_height=32, img_width=32):
    def decode_img(img):
        img = tf.io.decode_jpeg(img, channels=3)
        return tf.image.resize(img, [img_height, img_width])
    return decode_img


def snippet_get_label_argmax(tf, tmp_path):
    data_dir = _flower_photos(tmp_path)
    class_names = np.array(sorted(os.listdir(data_dir)))
    list_ds = tf.data.Dataset.list_files(str(data_dir + "/*/*"), shuffle=False)
    get_label = _get_label_fn(tf, class_names)
    return to_numpy([get_label(f).numpy() for f in list_ds])


def snippet_process_path_pipeline(tf, tmp_path):
    data_dir = _flower_photos(tmp_path)
    class_names = np.array(sorted(os.listdir(data_dir)))
    get_label = _get_label_fn(tf, class_names)
    decode_img = _decode_img_fn(tf)

    def process_path(file_path):
        label = get_label(file_path)
        img = tf.io.read_file(file_path)
        img = decode_img(img)
        return img, label

    list_ds = tf.data.Dataset.list_files(str(data_dir + "/*/*"), shuffle=False)
    train_ds = list_ds.map(process_path, num_parallel_calls=tf.data.AUTOTUNE)
    train_ds = train_ds.cache().batch(3).prefetch(buffer_size=tf.data.AUTOTUNE)
    image_batch, label_batch = next(iter(train_ds))
    return to_numpy((image_batch.numpy(), label_batch.numpy()))


def snippet_read_decode_resize_no_labels(tf, tmp_path):
    data_dir = _flower_photos(tmp_path)
    list_ds = tf.data.Dataset.list_files(str(data_dir + "/*/*"), shuffle=False)

    def load(file_path):
        img = tf.io.read_file(file_path)
        img = tf.io.decode_jpeg(img, channels=3)
        img = tf.image.resize(img, [24, 24])
        return img

    ds = list_ds.map(load, num_parallel_calls=tf.data.AUTOTUNE).batch(6)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_decode_jpeg_shapes(tf, tmp_path):
    data_dir = _flower_photos(tmp_path)
    files = sorted(tf.io.gfile.glob(os.path.join(data_dir, "*", "*.jpg")))
    ds = tf.data.Dataset.from_tensor_slices(files)
    ds = ds.map(lambda p: tf.shape(tf.io.decode_jpeg(tf.io.read_file(p))))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_decode_image_expand_animations(tf, tmp_path):
    data_dir = _flower_photos(tmp_path)
    ds = tf.data.Dataset.list_files(os.path.join(data_dir, "daisy", "*.jpg"), shuffle=False)
    ds = ds.map(lambda p: tf.io.decode_image(tf.io.read_file(p), channels=3,
                                              expand_animations=False))
    ds = ds.map(lambda img: tf.image.resize(img, [16, 16], method="nearest"))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_convert_image_dtype_flip(tf, tmp_path):
    data_dir = _flower_photos(tmp_path)
    image = tf.io.decode_jpeg(tf.io.read_file(os.path.join(data_dir, "daisy", "hopper.jpg")))
    image = tf.image.convert_image_dtype(image, tf.float32)
    flipped = tf.image.flip_left_right(image)
    return to_numpy(flipped)


def snippet_augment_grayscale_saturation(tf, tmp_path):
    data_dir = _flower_photos(tmp_path)
    image = tf.io.decode_jpeg(tf.io.read_file(os.path.join(data_dir, "daisy", "hopper.jpg")))
    image = tf.image.convert_image_dtype(image, tf.float32)
    grayscaled = tf.image.rgb_to_grayscale(image)
    saturated = tf.image.adjust_saturation(image, 3)
    return to_numpy((tf.squeeze(grayscaled), saturated))


def snippet_augment_brightness_crop_rotate(tf, tmp_path):
    data_dir = _flower_photos(tmp_path)

    def augment(path):
        image = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
        image = tf.image.convert_image_dtype(image, tf.float32)
        bright = tf.image.adjust_brightness(image, 0.4)
        cropped = tf.image.central_crop(bright, central_fraction=0.5)
        rotated = tf.image.rot90(cropped)
        return tf.image.resize(rotated, [20, 20])

    ds = tf.data.Dataset.list_files(os.path.join(data_dir, "*", "*.jpg"), shuffle=False)
    return to_numpy(list(ds.map(augment).as_numpy_iterator()))


def snippet_stateless_random_augment(tf, tmp_path):
    data_dir = _flower_photos(tmp_path)
    IMG_SIZE = 24

    def resize_and_rescale(image, label):
        image = tf.cast(image, tf.float32)
        image = tf.image.resize(image, [IMG_SIZE, IMG_SIZE])
        image = image / 255.0
        return image, label

    def augment(image_label, seed):
        image, label = image_label
        image, label = resize_and_rescale(image, label)
        image = tf.image.resize_with_crop_or_pad(image, IMG_SIZE + 6, IMG_SIZE + 6)
        new_seed = tf.random.split(seed, num=1)[0, :]
        image = tf.image.stateless_random_crop(image, size=[IMG_SIZE, IMG_SIZE, 3], seed=seed)
        image = tf.image.stateless_random_brightness(image, max_delta=0.5, seed=new_seed)
        image = tf.clip_by_value(image, 0, 1)
        return image, label

    files = sorted(tf.io.gfile.glob(os.path.join(data_dir, "*", "*.jpg")))
    images = tf.data.Dataset.from_tensor_slices(files).map(
        lambda p: tf.io.decode_jpeg(tf.io.read_file(p), channels=3))
    ds = tf.data.Dataset.zip((images, tf.data.Dataset.range(6)))
    counter = tf.data.experimental.Counter()
    train_ds = tf.data.Dataset.zip((ds, (counter, counter)))
    train_ds = train_ds.map(augment).batch(3)
    return to_numpy(list(train_ds.as_numpy_iterator()))


def snippet_stateless_random_flip(tf, tmp_path):
    data_dir = _flower_photos(tmp_path)
    image = tf.io.decode_jpeg(tf.io.read_file(os.path.join(data_dir, "daisy", "hopper.jpg")))
    out = []
    for i in range(3):
        seed = (i, 0)
        out.append(tf.image.stateless_random_flip_left_right(image, seed).numpy())
    return to_numpy(out)


def snippet_resize_with_crop_or_pad(tf, tmp_path):
    data_dir = _flower_photos(tmp_path)
    ds = tf.data.Dataset.list_files(os.path.join(data_dir, "*", "*.jpg"), shuffle=False)
    ds = ds.map(lambda p: tf.image.resize_with_crop_or_pad(
        tf.io.decode_jpeg(tf.io.read_file(p), channels=1), 40, 40))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_per_image_standardization(tf, tmp_path):
    data_dir = _flower_photos(tmp_path)
    ds = tf.data.Dataset.list_files(os.path.join(data_dir, "roses", "*.jpg"), shuffle=False)
    ds = ds.map(lambda p: tf.image.resize(tf.io.decode_jpeg(tf.io.read_file(p), channels=3),
                                          [8, 8]))
    ds = ds.map(tf.image.per_image_standardization)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_decode_png(tf, tmp_path):
    pixels = (np.arange(6 * 5 * 3) * 7 % 256).reshape(6, 5, 3).astype(np.uint8)
    path = os.path.join(tmp_path, "image.png")
    _write_png(path, pixels)
    ds = tf.data.Dataset.from_tensor_slices([path]).map(
        lambda p: tf.io.decode_png(tf.io.read_file(p), channels=3))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_decode_image_png(tf, tmp_path):
    pixels = (np.arange(4 * 4 * 3) * 11 % 256).reshape(4, 4, 3).astype(np.uint8)
    path = os.path.join(tmp_path, "image.png")
    _write_png(path, pixels)
    image = tf.io.decode_image(tf.io.read_file(path))
    return to_numpy(image)


def snippet_encode_jpeg_roundtrip_shape(tf, tmp_path):
    image = np.zeros((16, 16, 3), dtype=np.uint8)
    image[4:12, 4:12] = 200
    data = tf.io.encode_jpeg(image, quality=95)
    decoded = tf.io.decode_jpeg(data)
    return to_numpy((decoded.shape.as_list(), decoded.dtype.name))


def snippet_resize_methods(tf, tmp_path):
    image = np.arange(5 * 7 * 3, dtype=np.float32).reshape(5, 7, 3)
    out = []
    for method in ["bilinear", "nearest", "bicubic", "area"]:
        out.append(tf.image.resize(image, [3, 4], method=method).numpy())
    out.append(tf.image.resize(image, [3, 4], antialias=True).numpy())
    return to_numpy(out)


def snippet_image_scale_cast(tf, tmp_path):
    data_dir = _flower_photos(tmp_path)
    normalization = lambda x: tf.cast(x, tf.float32) * (1. / 255)
    ds = tf.data.Dataset.list_files(os.path.join(data_dir, "tulips", "*.jpg"), shuffle=False)
    ds = ds.map(lambda p: tf.image.resize(tf.io.decode_jpeg(tf.io.read_file(p), channels=3),
                                          [12, 12], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR))
    ds = ds.map(normalization)
    return to_numpy([float(np.min(x)) for x in ds.as_numpy_iterator()] +
                    [float(np.max(x)) for x in ds.as_numpy_iterator()])
