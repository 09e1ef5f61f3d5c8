"""Pipelines in the style of detection input code (RoI crops with
crop_and_resize, boxes drawn for a look at the data), the audio tutorial
(decode_wav to a fixed length), TPU-style bfloat16 inputs and a
TensorArray-built feature: our own code, the same calls."""
import numpy as np

from tf_snippets._compare import to_numpy


def _images(n=4, h=24, w=32):
    rng = np.random.default_rng(3)
    return rng.integers(0, 256, size=(n, h, w, 3)).astype(np.uint8)


def _boxes(n=4, k=3):
    rng = np.random.default_rng(4)
    yx = np.sort(rng.uniform(0, 1, size=(n, k, 2, 2)), axis=2)
    return np.stack([yx[..., 0, 0], yx[..., 0, 1], yx[..., 1, 0], yx[..., 1, 1]],
                    -1).astype(np.float32)


def snippet_roi_crops_crop_and_resize(tf, tmp_path):
    def roi_crops(image, boxes):
        image = tf.image.convert_image_dtype(image, tf.float32)
        crops = tf.image.crop_and_resize(tf.expand_dims(image, 0), boxes, [0, 0, 0],
                                         [14, 14])
        return crops, tf.shape(crops)

    ds = tf.data.Dataset.from_tensor_slices((_images(), _boxes())).map(roi_crops)
    return to_numpy(list(ds))


def snippet_roi_crops_nearest_extrapolate(tf, tmp_path):
    boxes = _boxes() * 1.4 - 0.2  # partly outside the image

    def roi_crops(image, boxes):
        return tf.image.crop_and_resize(image[tf.newaxis], boxes, [0, 0, 0], [5, 7],
                                        method="nearest", extrapolation_value=-1.0)

    ds = tf.data.Dataset.from_tensor_slices((_images(), boxes)).map(roi_crops).batch(2)
    return to_numpy(list(ds))


def snippet_draw_bounding_boxes_batch(tf, tmp_path):
    colors = np.array([[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 1.0]], np.float32)

    def show(images, boxes):
        images = tf.image.convert_image_dtype(images, tf.float32)
        return tf.image.draw_bounding_boxes(images, boxes, colors)

    ds = tf.data.Dataset.from_tensor_slices((_images(), _boxes())).batch(2).map(show)
    return to_numpy(list(ds))


def _wav_files(tf, tmp_path):
    rng = np.random.default_rng(5)
    paths = []
    for i, n in enumerate((9000, 16000, 20000)):
        audio = rng.uniform(-0.9, 0.9, size=(n, 1 + i % 2)).astype(np.float32)
        path = str(tmp_path / f"clip{i}.wav")
        tf.io.write_file(path, tf.audio.encode_wav(audio, 16000))
        paths.append(path)
    return paths


def snippet_audio_decode_wav_pad_to_second(tf, tmp_path):
    def get_waveform(path):
        audio_binary = tf.io.read_file(path)
        audio, rate = tf.audio.decode_wav(audio_binary, desired_channels=1,
                                          desired_samples=16000)
        return tf.squeeze(audio, axis=-1), rate

    ds = tf.data.Dataset.from_tensor_slices(_wav_files(tf, tmp_path)).map(get_waveform)
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_tpu_bfloat16_images(tf, tmp_path):
    use_bfloat16 = True

    def preprocess(image, label):
        image = tf.image.convert_image_dtype(
            image, dtype=tf.bfloat16 if use_bfloat16 else tf.float32)
        image = tf.image.flip_left_right(image)
        return image, tf.cast(label, tf.int32)

    ds = tf.data.Dataset.from_tensor_slices((_images(), np.arange(4))).map(preprocess).batch(2)
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_tensor_array_features(tf, tmp_path):
    def features(x):
        x = tf.cast(x, tf.float32)
        ta = tf.TensorArray(tf.float32, size=4, element_shape=[3])
        for i in range(4):
            ta = ta.write(i, tf.stack([x, x * i, x + i]))
        return ta.stack(), ta.size()

    ds = tf.data.Dataset.range(5).map(features)
    return to_numpy(list(ds)), str(ds.element_spec)
