"""Detection input code in the style of tensorflow/models' vision dataloaders
(a TF Example decoder of image/object/bbox features with VarLenFeature and
sparse.to_dense, a parser that flips boxes with the image, resizes with
padding to a fixed size and pads the instances): our own code, the same calls."""
import numpy as np

from tf_snippets._compare import to_numpy


def _detection_records(tf, path, n=5):
    rng = np.random.default_rng(21)
    with tf.io.TFRecordWriter(path) as writer:
        for i in range(n):
            h, w = 18 + 5 * i, 30 - 3 * i
            image = rng.integers(0, 256, size=(h, w, 3)).astype(np.uint8)
            k = i % 4  # the first image has no objects
            ymin, xmin = rng.uniform(0, 0.5, k), rng.uniform(0, 0.5, k)
            ymax, xmax = ymin + rng.uniform(0.1, 0.5, k), xmin + rng.uniform(0.1, 0.5, k)

            def floats(v):
                return tf.train.Feature(float_list=tf.train.FloatList(value=list(v)))

            def ints(v):
                return tf.train.Feature(int64_list=tf.train.Int64List(value=list(v)))

            def byte(v):
                return tf.train.Feature(bytes_list=tf.train.BytesList(value=[v]))
            feature = {
                "image/encoded": byte(tf.io.encode_png(image).numpy()),
                "image/source_id": byte(str(1000 + i).encode()),
                "image/height": ints([h]),
                "image/width": ints([w]),
                "image/object/bbox/ymin": floats(ymin),
                "image/object/bbox/xmin": floats(xmin),
                "image/object/bbox/ymax": floats(ymax),
                "image/object/bbox/xmax": floats(xmax),
                "image/object/class/label": ints(rng.integers(1, 9, k)),
            }
            if i % 2:  # only some records carry is_crowd and area
                feature["image/object/is_crowd"] = ints(rng.integers(0, 2, k))
                feature["image/object/area"] = floats(rng.uniform(10, 50, k))
            writer.write(tf.train.Example(features=tf.train.Features(
                feature=feature)).SerializeToString())


_KEYS = ["image/object/bbox/ymin", "image/object/bbox/xmin", "image/object/bbox/ymax",
         "image/object/bbox/xmax"]


def _decoder(tf):
    keys_to_features = {
        "image/encoded": tf.io.FixedLenFeature((), tf.string),
        "image/source_id": tf.io.FixedLenFeature((), tf.string),
        "image/height": tf.io.FixedLenFeature((), tf.int64),
        "image/width": tf.io.FixedLenFeature((), tf.int64),
        "image/object/class/label": tf.io.VarLenFeature(tf.int64),
        "image/object/area": tf.io.VarLenFeature(tf.float32),
        "image/object/is_crowd": tf.io.VarLenFeature(tf.int64),
    }
    for key in _KEYS:
        keys_to_features[key] = tf.io.VarLenFeature(tf.float32)

    def decode_boxes(parsed):
        ymin, xmin, ymax, xmax = (parsed[k] for k in _KEYS)
        return tf.stack([ymin, xmin, ymax, xmax], axis=-1)

    def decode(serialized_example):
        parsed = tf.io.parse_single_example(serialized_example, keys_to_features)
        for k in parsed:
            if isinstance(parsed[k], tf.SparseTensor):
                if parsed[k].dtype == tf.string:
                    parsed[k] = tf.sparse.to_dense(parsed[k], default_value="")
                else:
                    parsed[k] = tf.sparse.to_dense(parsed[k], default_value=0)
        image = tf.io.decode_image(parsed["image/encoded"], channels=3)
        image.set_shape([None, None, 3])
        boxes = decode_boxes(parsed)
        classes = parsed["image/object/class/label"]
        is_crowds = tf.cond(
            tf.greater(tf.shape(classes)[0], 0) & tf.greater(
                tf.shape(parsed["image/object/is_crowd"])[0], 0),
            lambda: tf.cast(parsed["image/object/is_crowd"], dtype=tf.bool),
            lambda: tf.zeros_like(classes, dtype=tf.bool))
        height = tf.cast(parsed["image/height"], tf.float32)
        width = tf.cast(parsed["image/width"], tf.float32)
        areas = tf.cond(
            tf.greater(tf.shape(parsed["image/object/area"])[0], 0),
            lambda: parsed["image/object/area"],
            lambda: (boxes[:, 3] - boxes[:, 1]) * (boxes[:, 2] - boxes[:, 0]) * height * width)
        return {
            "source_id": parsed["image/source_id"],
            "image": image,
            "height": parsed["image/height"],
            "width": parsed["image/width"],
            "groundtruth_classes": classes,
            "groundtruth_is_crowd": is_crowds,
            "groundtruth_area": areas,
            "groundtruth_boxes": boxes,
        }
    return decode


def snippet_tf_example_decoder(tf, tmp_path):
    path = str(tmp_path / "det.tfrecord")
    _detection_records(tf, path)
    ds = tf.data.TFRecordDataset(path).map(_decoder(tf))
    return to_numpy(list(ds)), str(ds.element_spec["groundtruth_boxes"])


def _horizontal_flip_boxes(tf, normalized_boxes):
    ymin, xmin, ymax, xmax = tf.split(value=normalized_boxes, num_or_size_splits=4, axis=-1)
    flipped_xmin = tf.subtract(1.0, xmax)
    flipped_xmax = tf.subtract(1.0, xmin)
    return tf.concat([ymin, flipped_xmin, ymax, flipped_xmax], axis=-1)


def snippet_random_horizontal_flip_boxes(tf, tmp_path):
    path = str(tmp_path / "det.tfrecord")
    _detection_records(tf, path)

    def random_horizontal_flip(image, boxes, seed):
        do_flip = tf.greater(tf.random.stateless_uniform([], seed=seed), 0.5)
        image = tf.cond(do_flip, lambda: tf.image.flip_left_right(image), lambda: image)
        boxes = tf.cond(do_flip, lambda: _horizontal_flip_boxes(tf, boxes), lambda: boxes)
        return image, boxes

    def parse(index, data):
        image = tf.image.convert_image_dtype(data["image"], tf.float32)
        seed = tf.stack([tf.cast(index, tf.int32), 7])
        image, boxes = random_horizontal_flip(image, data["groundtruth_boxes"], seed)
        return image, boxes

    ds = tf.data.TFRecordDataset(path).map(_decoder(tf)).enumerate().map(parse)
    return to_numpy(list(ds))


def _resize_and_crop_image(tf, image, desired_size, padded_size):
    with tf.name_scope("resize_and_crop_image"):
        image_size = tf.cast(tf.shape(image)[0:2], tf.float32)
        scaled_size = tf.cast(desired_size, tf.float32)
        scale = tf.minimum(scaled_size[0] / image_size[0], scaled_size[1] / image_size[1])
        scaled_size = tf.round(image_size * scale)
        image_scale = scaled_size / image_size
        scaled_image = tf.image.resize(image, tf.cast(scaled_size, tf.int32), method="bilinear")
        output_image = tf.image.pad_to_bounding_box(scaled_image, 0, 0, padded_size[0],
                                                    padded_size[1])
        image_info = tf.stack([image_size, tf.constant(desired_size, dtype=tf.float32),
                               image_scale, tf.zeros([2], tf.float32)])
        return output_image, image_info


def _pad_to_fixed_size(tf, input_tensor, size, constant_values=0):
    input_shape = input_tensor.get_shape().as_list()
    padding_shape = []
    input_length = tf.shape(input_tensor)[0]
    input_length = tf.clip_by_value(input_length, 0, size)
    input_tensor = input_tensor[:input_length]
    padding_length = tf.maximum(0, size - input_length)
    padding_shape.append(padding_length)
    for i in range(1, len(input_shape)):
        padding_shape.append(tf.shape(input_tensor)[i])
    paddings = tf.cast(constant_values * tf.ones(padding_shape), input_tensor.dtype)
    padded_tensor = tf.concat([input_tensor, paddings], axis=0)
    output_shape = input_shape
    output_shape[0] = size
    padded_tensor.set_shape(output_shape)
    return padded_tensor


def snippet_resize_and_crop_pad_instances(tf, tmp_path):
    path = str(tmp_path / "det.tfrecord")
    _detection_records(tf, path)
    max_instances = 4

    def parse(data):
        image = tf.image.convert_image_dtype(data["image"], tf.float32)
        image, image_info = _resize_and_crop_image(tf, image, [24, 32], [32, 32])
        image_scale = image_info[2, :]
        boxes = data["groundtruth_boxes"] * tf.tile(tf.expand_dims(image_info[0, :], 0), [1, 2])
        boxes = boxes * tf.tile(tf.expand_dims(image_scale, 0), [1, 2])
        boxes = tf.clip_by_value(boxes, 0.0, 32.0)
        labels = {
            "boxes": _pad_to_fixed_size(tf, boxes, max_instances, -1),
            "classes": _pad_to_fixed_size(tf, data["groundtruth_classes"], max_instances, -1),
            "image_info": image_info,
        }
        return image, labels

    ds = tf.data.TFRecordDataset(path).map(_decoder(tf)).map(parse).batch(2, drop_remainder=True)
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_gather_top_boxes_batch_dims(tf, tmp_path):
    rng = np.random.default_rng(8)
    boxes = rng.uniform(0, 1, (6, 5, 4)).astype(np.float32)
    scores = rng.uniform(0, 1, (6, 5)).astype(np.float32)

    def top_boxes(boxes, scores):
        order = tf.argsort(scores, axis=-1, direction="DESCENDING", stable=True)[:, :3]
        return tf.gather_nd(boxes, tf.expand_dims(order, -1), batch_dims=1), order

    ds = tf.data.Dataset.from_tensor_slices((boxes, scores)).batch(3)
    return to_numpy(list(ds.map(top_boxes)))


def snippet_get_structure_of_iterator(tf, tmp_path):
    path = str(tmp_path / "det.tfrecord")
    _detection_records(tf, path, n=2)
    ds = tf.data.TFRecordDataset(path).map(_decoder(tf))
    it = iter(ds)
    spec = tf.data.experimental.get_structure(it)
    first = next(it)
    return str(spec), to_numpy(first["groundtruth_boxes"])


def snippet_skip_crowd_and_small_boxes(tf, tmp_path):
    path = str(tmp_path / "det.tfrecord")
    _detection_records(tf, path, n=6)

    def parse(data):
        is_crowd = data["groundtruth_is_crowd"]
        indices = tf.where(tf.logical_not(is_crowd))
        classes = tf.gather_nd(data["groundtruth_classes"], indices)
        boxes = tf.gather_nd(data["groundtruth_boxes"], indices)
        height = boxes[:, 2] - boxes[:, 0]
        width = boxes[:, 3] - boxes[:, 1]
        keep = tf.greater(height * width, 0.05)
        boxes = tf.boolean_mask(boxes, keep)
        classes = tf.boolean_mask(classes, keep)
        num = tf.shape(classes)[0]
        return {"boxes": boxes, "classes": classes, "num_detections": num}

    ds = tf.data.TFRecordDataset(path).map(_decoder(tf)).map(parse)
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_normalize_boxes_and_denormalize(tf, tmp_path):
    path = str(tmp_path / "det.tfrecord")
    _detection_records(tf, path)

    def parse(data):
        image = tf.image.convert_image_dtype(data["image"], tf.float32)
        image_shape = tf.cast(tf.shape(image)[0:2], tf.float32)
        boxes = data["groundtruth_boxes"]
        denormalized = boxes * tf.concat([image_shape, image_shape], axis=-1)
        renormalized = denormalized / tf.tile(image_shape[tf.newaxis, :], [1, 2])
        offset = tf.constant([0.5, 0.5, 0.5, 0.5]) * tf.cast(
            tf.reduce_any(tf.greater(boxes, 0.9), axis=-1, keepdims=True), tf.float32)
        mean = tf.constant([0.485, 0.456, 0.406])
        std = tf.constant([0.229, 0.224, 0.225])
        image = (image - mean) / std
        return image, denormalized, renormalized + offset, tf.size(boxes)

    ds = tf.data.TFRecordDataset(path).map(_decoder(tf), num_parallel_calls=2).map(parse)
    return to_numpy(list(ds))
