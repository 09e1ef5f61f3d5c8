"""Augmentation and post-processing ops in the style of tensorflow/models'
AutoAugment/RandAugment helpers and detection heads' input-side code: color
space conversions, gamma and JPEG quality, transposes and patches, top-k and
non-max suppression on boxes, safe divisions. Our own code, the same calls."""
import numpy as np

from tf_snippets._compare import to_numpy


def _images(tf, n=3, seed=5, size=(12, 10)):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n,) + size + (3,)).astype(np.uint8)
    return tf.data.Dataset.from_tensor_slices(images)


def snippet_hsv_round_trip_and_adjustments(tf, tmp_path):
    def augment(image):
        x = tf.image.convert_image_dtype(image, tf.float32)
        hsv = tf.image.rgb_to_hsv(x)
        back = tf.image.hsv_to_rgb(hsv)
        gamma = tf.image.adjust_gamma(x, gamma=0.8, gain=1.1)
        hue = tf.image.adjust_hue(x, 0.1)
        contrast = tf.image.adjust_contrast(x, 1.5)
        return hsv, back, gamma, hue, contrast

    return to_numpy(list(_images(tf).map(augment)))


def snippet_flip_transpose_rot(tf, tmp_path):
    def geo(image):
        return (tf.image.flip_up_down(image), tf.image.transpose(image),
                tf.image.rot90(image, k=3), tf.reverse(image, axis=[0, 1]))

    ds = _images(tf).map(geo).batch(2)
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_solarize_posterize_by_hand(tf, tmp_path):
    def solarize(image, threshold=128):
        return tf.where(image < threshold, image, 255 - image)

    def posterize(image, bits=3):
        shift = 8 - bits
        return tf.bitwise.left_shift(tf.bitwise.right_shift(image, shift), shift)

    def blend(a, b, factor):
        a, b = tf.cast(a, tf.float32), tf.cast(b, tf.float32)
        return tf.cast(tf.clip_by_value(a + factor * (b - a), 0.0, 255.0), tf.uint8)

    def augment(image):
        gray = tf.image.grayscale_to_rgb(tf.image.rgb_to_grayscale(image))
        return solarize(image), posterize(image), blend(gray, image, 1.8)

    return to_numpy(list(_images(tf).map(augment)))


def snippet_adjust_jpeg_quality(tf, tmp_path):
    def degrade(image):
        return tf.image.adjust_jpeg_quality(image, 40)

    return to_numpy(list(_images(tf, size=(16, 16)).map(degrade)))


def snippet_extract_patches(tf, tmp_path):
    def patches(image):
        p = tf.image.extract_patches(tf.expand_dims(image, 0), sizes=[1, 4, 4, 1],
                                     strides=[1, 4, 4, 1], rates=[1, 1, 1, 1], padding="VALID")
        return tf.reshape(p, [-1, 4 * 4 * 3])

    return to_numpy(list(_images(tf).map(patches)))


def _box_dataset(tf):
    rng = np.random.default_rng(9)
    boxes, scores = [], []
    for _ in range(3):
        y, x = rng.uniform(0, 0.7, 8), rng.uniform(0, 0.7, 8)
        b = np.stack([y, x, y + rng.uniform(0.1, 0.3, 8), x + rng.uniform(0.1, 0.3, 8)], 1)
        boxes.append(b.astype(np.float32))
        scores.append(rng.uniform(0, 1, 8).astype(np.float32))
    return tf.data.Dataset.from_tensor_slices((np.stack(boxes), np.stack(scores)))


def snippet_top_k_scores_and_gather(tf, tmp_path):
    def top(boxes, scores):
        values, indices = tf.math.top_k(scores, k=3, sorted=True)
        return values, indices, tf.gather(boxes, indices)

    return to_numpy(list(_box_dataset(tf).map(top)))


def snippet_non_max_suppression_padded_outputs(tf, tmp_path):
    def nms(boxes, scores):
        selected = tf.image.non_max_suppression(boxes, scores, max_output_size=4,
                                                iou_threshold=0.3, score_threshold=0.2)
        kept = tf.gather(boxes, selected)
        pad = 4 - tf.shape(kept)[0]
        return tf.pad(kept, [[0, pad], [0, 0]], constant_values=-1.0), selected

    return to_numpy(list(_box_dataset(tf).map(nms)))


def snippet_box_areas_iou_divide_no_nan(tf, tmp_path):
    def iou_with_first(boxes, scores):
        ymin, xmin, ymax, xmax = tf.split(boxes, 4, axis=1)
        areas = tf.squeeze((ymax - ymin) * (xmax - xmin), 1)
        inter_h = tf.maximum(tf.minimum(ymax, ymax[0]) - tf.maximum(ymin, ymin[0]), 0.0)
        inter_w = tf.maximum(tf.minimum(xmax, xmax[0]) - tf.maximum(xmin, xmin[0]), 0.0)
        inter = tf.squeeze(inter_h * inter_w, 1)
        union = areas + areas[0] - inter
        return tf.math.divide_no_nan(inter, union), tf.math.reduce_max(boxes, axis=0), \
            tf.math.argmax(scores, output_type=tf.int32)

    return to_numpy(list(_box_dataset(tf).map(iou_with_first)))


def snippet_stateless_random_crop_and_jpeg_quality(tf, tmp_path):
    def augment(i, image):
        seed = tf.stack([tf.constant(3, tf.int64), i])
        crop = tf.image.stateless_random_crop(image, [8, 8, 3], seed=seed)
        return tf.image.stateless_random_jpeg_quality(crop, 50, 90, seed=seed)

    return to_numpy(list(_images(tf).enumerate().map(augment)))


def snippet_per_image_standardization_and_total_variation(tf, tmp_path):
    def norm(image):
        x = tf.image.per_image_standardization(image)
        return x, tf.image.total_variation(tf.cast(image, tf.float32))

    return to_numpy(list(_images(tf).map(norm)))
