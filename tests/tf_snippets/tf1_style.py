"""TensorFlow 1 style input code run through ``tf.compat.v1`` (our own code,
written in the style of TF1-era model-garden preprocessing)."""
import numpy as np

from tf_snippets._compare import to_numpy


def _records(tf, path):
    rng = np.random.default_rng(0)
    with tf.io.TFRecordWriter(path) as writer:
        for i in range(5):
            image = rng.integers(0, 256, size=(12 + i, 9 + 2 * i, 3)).astype(np.uint8)
            example = tf.train.Example(features=tf.train.Features(feature={
                "image/encoded": tf.train.Feature(bytes_list=tf.train.BytesList(
                    value=[tf.io.encode_png(image).numpy()])),
                "image/class/label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
            }))
            writer.write(example.SerializeToString())


def snippet_one_shot_iterator_parse_resize_bilinear(tf, tmp_path):
    v1 = tf.compat.v1
    path = str(tmp_path / "train.tfrecord")
    _records(tf, path)
    keys_to_features = {
        "image/encoded": v1.FixedLenFeature((), tf.string, default_value=""),
        "image/class/label": v1.FixedLenFeature([], tf.int64, default_value=-1),
    }

    def parse(serialized):
        parsed = v1.parse_single_example(serialized, keys_to_features)
        image = tf.image.decode_png(parsed["image/encoded"], channels=3)
        image = v1.to_float(image)
        image = v1.image.resize_bilinear(tf.expand_dims(image, 0), [8, 8],
                                         align_corners=False)
        image = tf.squeeze(image, [0])
        label = v1.to_int32(parsed["image/class/label"]) - 1
        return image, label

    dataset = tf.data.TFRecordDataset(path).map(parse).batch(2)
    iterator = v1.data.make_one_shot_iterator(dataset)
    out = []
    while True:
        try:
            out.append(iterator.get_next())
        except tf.errors.OutOfRangeError:
            break
    return to_numpy(out)


def snippet_resize_images_align_corners(tf, tmp_path):
    v1 = tf.compat.v1
    image = np.arange(5 * 7 * 3, dtype=np.float32).reshape(5, 7, 3)
    return to_numpy([v1.image.resize_images(image, [9, 4], align_corners=True),
                     v1.image.resize_images(image, [3, 11],
                                            method=v1.image.ResizeMethod.NEAREST_NEIGHBOR),
                     v1.image.resize_nearest_neighbor(image[None], [6, 6], align_corners=True)])


def snippet_experimental_map_and_batch(tf, tmp_path):
    v1 = tf.compat.v1
    ds = tf.data.Dataset.range(10).apply(v1.data.experimental.shuffle_and_repeat(4, 2, seed=5))
    ds = ds.apply(v1.data.experimental.map_and_batch(lambda x: x * 2, 3, drop_remainder=True))
    return to_numpy(list(ds))
