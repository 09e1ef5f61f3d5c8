"""ImageNet input pipelines in the style of tensorflow/models' ResNet recipes
(our own code, the same calls): the training crop (extract_jpeg_shape ->
sample_distorted_bounding_box -> the crop window stacked -> decode_and_crop_jpeg
-> resize to 224 -> random flip) and the evaluation center crop, on the
shared test photos."""
import glob
import os

from tf_snippets._compare import MissingTestData, to_numpy

_CANDIDATES = [os.environ.get("CONVEYOR_TESTDATA", ""),
               os.path.join(os.path.dirname(__file__), "..", "..", "shared", "testdata"),
               "/work/shared/testdata"]

IMAGE_SIZE = 224
CROP_PADDING = 32


def photos():
    """The shared test photos' bytes (the truncated one left out)."""
    for base in _CANDIDATES:
        paths = sorted(glob.glob(os.path.join(base, "jpeg", "*.jpg"))) if base else []
        if paths:
            out = []
            for p in paths:
                if "truncated" not in p:
                    with open(p, "rb") as f:
                        out.append(f.read())
            return out
    raise MissingTestData("shared test JPEGs not found (set CONVEYOR_TESTDATA)")


def _random_crop_window(tf, image_buffer, seed, max_attempts=100, area_range=(0.05, 1.0)):
    bbox = tf.constant([0.0, 0.0, 1.0, 1.0], dtype=tf.float32, shape=[1, 1, 4])
    begin, size, _ = tf.image.sample_distorted_bounding_box(
        tf.image.extract_jpeg_shape(image_buffer),
        bounding_boxes=bbox,
        seed=seed,
        min_object_covered=0.1,
        aspect_ratio_range=[0.75, 1.33],
        area_range=area_range,
        max_attempts=max_attempts,
        use_image_if_no_bounding_boxes=True)
    offset_y, offset_x, _ = tf.unstack(begin)
    target_height, target_width, _ = tf.unstack(size)
    return tf.stack([offset_y, offset_x, target_height, target_width])


def imagenet_train_map(tf, seed=42, flip="stateless"):
    """The training map function: a random crop of the JPEG, 224 x 224, flipped."""
    def preprocess(image_buffer, index):
        crop_window = _random_crop_window(tf, image_buffer, seed)
        image = tf.image.decode_and_crop_jpeg(image_buffer, crop_window, channels=3)
        image = tf.image.resize(image, [IMAGE_SIZE, IMAGE_SIZE],
                                method=tf.image.ResizeMethod.BILINEAR)
        if flip == "stateless":
            image = tf.image.stateless_random_flip_left_right(image, seed=tf.stack([index, 7]))
        else:
            image = tf.image.random_flip_left_right(image, seed=seed)
        return image
    return preprocess


def imagenet_train_dataset(tf, flip="stateless"):
    data = photos()
    ds = tf.data.Dataset.from_tensor_slices((data, tf.range(len(data))))
    return ds.map(imagenet_train_map(tf, flip=flip))


def snippet_train_crop_resize_stateless_flip(tf, tmp_path):
    return to_numpy(list(imagenet_train_dataset(tf)))


def snippet_train_crop_windows(tf, tmp_path):
    """The crop windows alone, 10 attempts and area 0.08 (the other recipe's)."""
    ds = tf.data.Dataset.from_tensor_slices(photos()).repeat(3)
    ds = ds.map(lambda b: _random_crop_window(tf, b, seed=7, max_attempts=10,
                                              area_range=(0.08, 1.0)))
    return to_numpy(list(ds))


def snippet_train_crop_random_flip(tf, tmp_path):
    """The recipe as written, with the stateful random_flip_left_right."""
    return to_numpy(list(imagenet_train_dataset(tf, flip="stateful")))


def snippet_eval_center_crop(tf, tmp_path):
    """The evaluation crop: the center, padded by 32/(224+32), decoded alone."""
    def preprocess(image_buffer):
        shape = tf.image.extract_jpeg_shape(image_buffer)
        image_height, image_width = shape[0], shape[1]
        padded_center_crop_size = tf.cast(
            ((IMAGE_SIZE / (IMAGE_SIZE + CROP_PADDING)) *
             tf.cast(tf.minimum(image_height, image_width), tf.float32)), tf.int32)
        offset_height = ((image_height - padded_center_crop_size) + 1) // 2
        offset_width = ((image_width - padded_center_crop_size) + 1) // 2
        crop_window = tf.stack([offset_height, offset_width, padded_center_crop_size,
                                padded_center_crop_size])
        image = tf.image.decode_and_crop_jpeg(image_buffer, crop_window, channels=3)
        return tf.image.resize(image, [IMAGE_SIZE, IMAGE_SIZE])
    ds = tf.data.Dataset.from_tensor_slices(photos()).map(preprocess)
    return to_numpy(list(ds.batch(4)))
