"""Detection and segmentation parsers in the style of tensorflow/models'
official/vision (RetinaNet and Mask R-CNN input code): boxes in normalized and
absolute coordinates, random scale jitter with a size computed per element,
crops and pads to bounding boxes, box clipping and filtering, seeded random
image ops. Our own code, the same calls."""
import numpy as np

from tf_snippets._compare import to_numpy


def _images_and_boxes(n=4, seed=3):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        h, w = 20 + 6 * i, 28 - 2 * i
        image = rng.integers(0, 256, size=(h, w, 3)).astype(np.uint8)
        k = 1 + i % 3
        y0, x0 = rng.uniform(0, 0.6, k), rng.uniform(0, 0.6, k)
        boxes = np.stack([y0, x0, y0 + rng.uniform(0.05, 0.5, k), x0 + rng.uniform(0.05, 0.5, k)],
                         axis=1).astype(np.float32)
        classes = rng.integers(1, 5, k).astype(np.int64)
        out.append((image, boxes, classes))
    return out


def _dataset(tf, n=4, seed=3):
    items = _images_and_boxes(n, seed)

    def gen():
        for image, boxes, classes in items:
            yield {"image": image, "boxes": boxes, "classes": classes}

    return tf.data.Dataset.from_generator(gen, output_signature={
        "image": tf.TensorSpec([None, None, 3], tf.uint8),
        "boxes": tf.TensorSpec([None, 4], tf.float32),
        "classes": tf.TensorSpec([None], tf.int64)})


def _denormalize(tf, boxes, image_shape):
    height = tf.cast(image_shape[0], tf.float32)
    width = tf.cast(image_shape[1], tf.float32)
    ymin, xmin, ymax, xmax = tf.split(boxes, 4, axis=-1)
    return tf.concat([ymin * height, xmin * width, ymax * height, xmax * width], axis=-1)


def _clip_boxes(tf, boxes, image_shape):
    h = tf.cast(image_shape[0], tf.float32)
    w = tf.cast(image_shape[1], tf.float32)
    max_length = tf.stack([h, w, h, w])
    return tf.math.maximum(tf.math.minimum(boxes, max_length - 1.0), 0.0)


def snippet_scale_jitter_per_element_size(tf, tmp_path):
    def parse(data):
        image = tf.image.convert_image_dtype(data["image"], tf.float32)
        image_size = tf.cast(tf.shape(image)[:2], tf.float32)
        scaled_size = tf.cast(image_size * 1.25, tf.int32)
        image = tf.image.resize(image, scaled_size)
        boxes = _denormalize(tf, data["boxes"], tf.shape(image)[:2])
        return image, _clip_boxes(tf, boxes, tf.shape(image)[:2])

    ds = _dataset(tf).map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_resize_preserve_aspect_ratio_then_pad(tf, tmp_path):
    output_size = [32, 32]

    def parse(data):
        image = tf.image.convert_image_dtype(data["image"], tf.float32)
        image = tf.image.resize(image, output_size, preserve_aspect_ratio=True)
        image = tf.image.pad_to_bounding_box(image, 0, 0, output_size[0], output_size[1])
        return image, tf.shape(image)

    ds = _dataset(tf).map(parse).batch(2)
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_nearest_resize_of_masks_per_element(tf, tmp_path):
    def parse(data):
        mask = tf.cast(data["image"][:, :, :1] > 128, tf.uint8)
        size = tf.cast(tf.cast(tf.shape(mask)[:2], tf.float32) * 0.5, tf.int32)
        small = tf.image.resize(mask, size, method="nearest")
        area = tf.image.resize(tf.cast(mask, tf.float32), size, method=tf.image.ResizeMethod.AREA)
        return small, area

    return to_numpy(list(_dataset(tf).map(parse)))


def snippet_crop_to_bounding_box_of_first_box(tf, tmp_path):
    def crop(data):
        image = data["image"]
        shape = tf.shape(image)
        box = tf.cast(_denormalize(tf, data["boxes"][:1], shape[:2])[0], tf.int32)
        box = tf.clip_by_value(box, 0, tf.stack([shape[0], shape[1], shape[0], shape[1]]) - 1)
        height = tf.maximum(box[2] - box[0], 1)
        width = tf.maximum(box[3] - box[1], 1)
        return tf.image.crop_to_bounding_box(image, box[0], box[1], height, width)

    return to_numpy(list(_dataset(tf).map(crop)))


def snippet_static_crop_and_pad_to_bounding_box(tf, tmp_path):
    def parse(data):
        image = tf.image.crop_to_bounding_box(data["image"], 2, 3, 16, 16)
        image = tf.image.pad_to_bounding_box(image, 4, 1, 24, 20)
        return image

    ds = _dataset(tf).map(parse).batch(4)
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_sample_distorted_bounding_box_with_boxes(tf, tmp_path):
    def crop(data):
        image = data["image"]
        bbox = tf.expand_dims(data["boxes"], 0)
        begin, size, window = tf.image.sample_distorted_bounding_box(
            tf.shape(image), bounding_boxes=bbox, seed=7, min_object_covered=0.3,
            aspect_ratio_range=(0.75, 1.33), area_range=(0.1, 1.0), max_attempts=50,
            use_image_if_no_bounding_boxes=True)
        cropped = tf.slice(image, begin, size)
        return cropped, window

    tf.random.set_seed(11)
    return to_numpy(list(_dataset(tf).map(crop)))


def snippet_stateless_sample_distorted_bounding_box(tf, tmp_path):
    def crop(i, data):
        begin, size, window = tf.image.stateless_sample_distorted_bounding_box(
            tf.shape(data["image"]), bounding_boxes=tf.expand_dims(data["boxes"], 0),
            seed=tf.stack([i, tf.constant(5, tf.int64)]), min_object_covered=0.1)
        return begin, size, window

    return to_numpy(list(_dataset(tf).enumerate().map(crop)))


def snippet_filter_boxes_boolean_mask_and_gather(tf, tmp_path):
    def filter_boxes(data):
        boxes = _denormalize(tf, data["boxes"], tf.shape(data["image"])[:2])
        heights = boxes[:, 2] - boxes[:, 0]
        widths = boxes[:, 3] - boxes[:, 1]
        valid = tf.logical_and(tf.greater(heights, 4.0), tf.greater(widths, 4.0))
        indices = tf.where(valid)[:, 0]
        kept = tf.gather(boxes, indices)
        classes = tf.boolean_mask(data["classes"], valid)
        areas = tf.math.multiply(heights, widths)
        return kept, classes, tf.where(valid, areas, tf.zeros_like(areas))

    return to_numpy(list(_dataset(tf).map(filter_boxes)))


def snippet_flip_boxes_horizontally(tf, tmp_path):
    def flip(data):
        image = tf.image.flip_left_right(data["image"])
        ymin, xmin, ymax, xmax = tf.unstack(data["boxes"], axis=1)
        boxes = tf.stack([ymin, 1.0 - xmax, ymax, 1.0 - xmin], axis=1)
        return image, boxes

    return to_numpy(list(_dataset(tf).map(flip)))


def snippet_tensor_scatter_nd_update_labels(tf, tmp_path):
    def assign(data):
        num = tf.shape(data["classes"])[0]
        labels = tf.fill([6], tf.constant(-1, tf.int64))
        indices = tf.expand_dims(tf.range(num), 1)
        labels = tf.tensor_scatter_nd_update(labels, indices, data["classes"])
        weights = tf.tensor_scatter_nd_add(tf.zeros([6]), indices, tf.ones([num]))
        return labels, weights

    return to_numpy(list(_dataset(tf).map(assign)))


def snippet_box_math_on_centers(tf, tmp_path):
    def encode(data):
        boxes = data["boxes"]
        centers = (boxes[:, :2] + boxes[:, 2:]) / 2.0
        sizes = tf.math.abs(boxes[:, 2:] - boxes[:, :2])
        log_sizes = tf.math.log(tf.math.maximum(sizes, 1e-6))
        iou_like = tf.math.reduce_prod(sizes, axis=1) / tf.math.reduce_max(
            tf.math.reduce_prod(sizes, axis=1))
        return tf.concat([centers, log_sizes], axis=1), tf.math.sqrt(iou_like), tf.math.floor(
            boxes * 10.0)

    return to_numpy(list(_dataset(tf).map(encode)))


def snippet_random_color_ops_with_seeds(tf, tmp_path):
    def augment(data):
        image = tf.image.convert_image_dtype(data["image"], tf.float32)
        image = tf.image.random_brightness(image, max_delta=0.2, seed=1)
        image = tf.image.random_contrast(image, 0.8, 1.2, seed=2)
        image = tf.image.random_saturation(image, 0.7, 1.3, seed=3)
        image = tf.image.random_hue(image, 0.05, seed=4)
        return tf.clip_by_value(image, 0.0, 1.0)

    tf.random.set_seed(123)
    return to_numpy(list(_dataset(tf).map(augment)))


def snippet_stateless_random_color_ops(tf, tmp_path):
    def augment(i, data):
        seed = tf.stack([tf.constant(0, tf.int64), i])
        image = tf.image.convert_image_dtype(data["image"], tf.float32)
        image = tf.image.stateless_random_brightness(image, 0.2, seed)
        image = tf.image.stateless_random_contrast(image, 0.8, 1.2, seed)
        image = tf.image.stateless_random_saturation(image, 0.7, 1.3, seed)
        image = tf.image.stateless_random_hue(image, 0.05, seed)
        image = tf.image.stateless_random_flip_up_down(image, seed)
        return tf.clip_by_value(image, 0.0, 1.0)

    return to_numpy(list(_dataset(tf).enumerate().map(augment)))


def snippet_random_crop_with_seed(tf, tmp_path):
    def crop(data):
        return tf.image.random_crop(data["image"], [12, 12, 3], seed=9)

    tf.random.set_seed(4)
    return to_numpy(list(_dataset(tf).map(crop)))


def snippet_convert_image_dtype_round_trip(tf, tmp_path):
    def convert(data):
        f = tf.image.convert_image_dtype(data["image"], tf.float32)
        back = tf.image.convert_image_dtype(f * 0.5, tf.uint8, saturate=True)
        as16 = tf.image.convert_image_dtype(data["image"], tf.uint16)
        half = tf.image.convert_image_dtype(as16, tf.float16)
        return back, as16, half

    return to_numpy(list(_dataset(tf).map(convert)))
