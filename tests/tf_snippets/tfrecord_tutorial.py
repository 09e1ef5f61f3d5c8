"""TFRecord and tf.train.Example tutorial (tensorflow.org/tutorials/load_data/tfrecord)."""
import os
import shutil

import numpy as np

from tf_snippets._compare import to_numpy


def _feature_helpers(tf):
    def _bytes_feature(value):
        """Returns a bytes_list from a string / byte."""
        if isinstance(value, type(tf.constant(0))):
            value = value.numpy()  # BytesList won't unpack a string from an EagerTensor.
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))

    def _float_feature(value):
        """Returns a float_list from a float / double."""
        return tf.train.Feature(float_list=tf.train.FloatList(value=[value]))

    def _int64_feature(value):
        """Returns an int64_list from a bool / enum / int / uint."""
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(value)]))

    return _bytes_feature, _float_feature, _int64_feature


# The observations of the tutorial, smaller.
n_observations = 12
_rng = np.random.RandomState(0)
feature0 = _rng.choice([False, True], n_observations)
feature1 = _rng.randint(0, 5, n_observations)
_strings = np.array([b"cat", b"dog", b"chicken", b"horse", b"goat"])
feature2 = _strings[feature1]
feature3 = _rng.randn(n_observations)


def _serialize_example_fn(tf):
    _bytes_feature, _float_feature, _int64_feature = _feature_helpers(tf)

    def serialize_example(feature0, feature1, feature2, feature3):
        feature = {
            "feature0": _int64_feature(feature0),
            "feature1": _int64_feature(feature1),
            "feature2": _bytes_feature(feature2),
            "feature3": _float_feature(feature3),
        }
        example_proto = tf.train.Example(features=tf.train.Features(feature=feature))
        return example_proto.SerializeToString()

    return serialize_example


FEATURE_DESCRIPTION_KEYS = ("feature0", "feature1", "feature2", "feature3")


def _feature_description(tf):
    return {
        "feature0": tf.io.FixedLenFeature([], tf.int64, default_value=0),
        "feature1": tf.io.FixedLenFeature([], tf.int64, default_value=0),
        "feature2": tf.io.FixedLenFeature([], tf.string, default_value=""),
        "feature3": tf.io.FixedLenFeature([], tf.float32, default_value=0.0),
    }


def _write_observations(tf, path):
    serialize_example = _serialize_example_fn(tf)
    with tf.io.TFRecordWriter(path) as writer:
        for i in range(n_observations):
            writer.write(serialize_example(bool(feature0[i]), int(feature1[i]), feature2[i],
                                           float(feature3[i])))


def snippet_feature_serialize_bytes(tf, tmp_path):
    _bytes_feature, _float_feature, _int64_feature = _feature_helpers(tf)
    feature = _float_feature(np.exp(1))
    return to_numpy((feature.SerializeToString(), _int64_feature(True).SerializeToString(),
                     _bytes_feature(b"test_bytes").SerializeToString()))


def snippet_feature_bytes_from_tensor(tf, tmp_path):
    _bytes_feature, _, _ = _feature_helpers(tf)
    return to_numpy(_bytes_feature(tf.constant("test_string")).SerializeToString())


def snippet_example_roundtrip_fromstring(tf, tmp_path):
    serialize_example = _serialize_example_fn(tf)
    serialized_example = serialize_example(False, 4, b"goat", 0.9876)
    example_proto = tf.train.Example.FromString(serialized_example)
    f = example_proto.features.feature
    return to_numpy((list(f["feature0"].int64_list.value), list(f["feature1"].int64_list.value),
                     list(f["feature2"].bytes_list.value),
                     np.float32(f["feature3"].float_list.value[0])))


def snippet_example_serialized_bytes(tf, tmp_path):
    serialize_example = _serialize_example_fn(tf)
    return to_numpy(serialize_example(False, 4, b"goat", 0.9876))


def snippet_from_tensor_slices_observations(tf, tmp_path):
    features_dataset = tf.data.Dataset.from_tensor_slices((feature0, feature1, feature2, feature3))
    return to_numpy([tuple(t.numpy() for t in f) for f in features_dataset.take(2)])


def snippet_tf_serialize_example_py_function(tf, tmp_path):
    serialize_example = _serialize_example_fn(tf)

    def tf_serialize_example(f0, f1, f2, f3):
        tf_string = tf.py_function(
            lambda *args: serialize_example(*(a.numpy() for a in args)),
            (f0, f1, f2, f3), tf.string)
        return tf.reshape(tf_string, ())

    features_dataset = tf.data.Dataset.from_tensor_slices((feature0, feature1, feature2, feature3))
    serialized_features_dataset = features_dataset.map(tf_serialize_example)
    return to_numpy(list(serialized_features_dataset.take(3).as_numpy_iterator()))


def snippet_experimental_tfrecord_writer(tf, tmp_path):
    serialize_example = _serialize_example_fn(tf)

    def generator():
        for features in zip(feature0, feature1, feature2, feature3):
            yield serialize_example(*features)

    serialized_features_dataset = tf.data.Dataset.from_generator(
        generator, output_types=tf.string, output_shapes=())
    filename = os.path.join(tmp_path, "test.tfrecord")
    writer = tf.data.experimental.TFRecordWriter(filename)
    writer.write(serialized_features_dataset)
    raw_dataset = tf.data.TFRecordDataset([filename])
    return to_numpy([r.numpy() for r in raw_dataset.take(3)])


def snippet_tfrecord_writer_read_raw(tf, tmp_path):
    filename = os.path.join(tmp_path, "test.tfrecord")
    _write_observations(tf, filename)
    filenames = [filename]
    raw_dataset = tf.data.TFRecordDataset(filenames)
    return to_numpy([raw_record.numpy() for raw_record in raw_dataset.take(4)])


def snippet_parse_single_example_map(tf, tmp_path):
    filename = os.path.join(tmp_path, "test.tfrecord")
    _write_observations(tf, filename)
    feature_description = _feature_description(tf)

    def _parse_function(example_proto):
        return tf.io.parse_single_example(example_proto, feature_description)

    parsed_dataset = tf.data.TFRecordDataset([filename]).map(_parse_function)
    return to_numpy(list(parsed_dataset.as_numpy_iterator()))


def snippet_parse_example_batched(tf, tmp_path):
    filename = os.path.join(tmp_path, "test.tfrecord")
    _write_observations(tf, filename)
    feature_description = _feature_description(tf)
    ds = tf.data.TFRecordDataset(filename).batch(5)
    ds = ds.map(lambda serialized: tf.io.parse_example(serialized, feature_description))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_parse_default_value_missing(tf, tmp_path):
    _bytes_feature, _float_feature, _int64_feature = _feature_helpers(tf)
    filename = os.path.join(tmp_path, "partial.tfrecord")
    with tf.io.TFRecordWriter(filename) as writer:
        for i in range(3):
            feature = {"feature1": _int64_feature(i)}
            if i != 1:
                feature["feature2"] = _bytes_feature(b"x%d" % i)
            writer.write(tf.train.Example(
                features=tf.train.Features(feature=feature)).SerializeToString())
    description = {"feature1": tf.io.FixedLenFeature([], tf.int64),
                   "feature2": tf.io.FixedLenFeature([], tf.string, default_value="none")}
    ds = tf.data.TFRecordDataset(filename).map(
        lambda x: tf.io.parse_single_example(x, description))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_parse_var_len_sparse(tf, tmp_path):
    filename = os.path.join(tmp_path, "varlen.tfrecord")
    with tf.io.TFRecordWriter(filename) as writer:
        for n in (1, 3, 0, 2):
            example = tf.train.Example(features=tf.train.Features(feature={
                "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=list(range(n))))}))
            writer.write(example.SerializeToString())
    description = {"ids": tf.io.VarLenFeature(tf.int64)}
    ds = tf.data.TFRecordDataset(filename).map(
        lambda x: tf.sparse.to_dense(tf.io.parse_single_example(x, description)["ids"]))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_parse_fixed_len_sequence(tf, tmp_path):
    filename = os.path.join(tmp_path, "seq.tfrecord")
    with tf.io.TFRecordWriter(filename) as writer:
        for n in (2, 4, 1):
            example = tf.train.Example(features=tf.train.Features(feature={
                "values": tf.train.Feature(float_list=tf.train.FloatList(
                    value=[0.5 * i for i in range(n)]))}))
            writer.write(example.SerializeToString())
    description = {"values": tf.io.FixedLenSequenceFeature([], tf.float32, allow_missing=True)}
    ds = tf.data.TFRecordDataset(filename).map(lambda x: tf.io.parse_single_example(x, description))
    ds = ds.padded_batch(3)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_gzip_tfrecord(tf, tmp_path):
    filename = os.path.join(tmp_path, "data.tfrecord.gz")
    options = tf.io.TFRecordOptions(compression_type="GZIP")
    with tf.io.TFRecordWriter(filename, options=options) as writer:
        for i in range(5):
            writer.write(b"record %d" % i)
    ds = tf.data.TFRecordDataset(filename, compression_type="GZIP")
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_tfrecord_num_parallel_reads(tf, tmp_path):
    filenames = []
    for shard in range(3):
        filename = os.path.join(tmp_path, f"shard-{shard}.tfrecord")
        with tf.io.TFRecordWriter(filename) as writer:
            for i in range(4):
                writer.write(f"s{shard}-r{i}".encode())
        filenames.append(filename)
    ds = tf.data.TFRecordDataset(filenames, num_parallel_reads=3)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_example_parse_from_string_loop(tf, tmp_path):
    filename = os.path.join(tmp_path, "test.tfrecord")
    _write_observations(tf, filename)
    out = []
    for raw_record in tf.data.TFRecordDataset([filename]).take(2):
        example = tf.train.Example()
        example.ParseFromString(raw_record.numpy())
        out.append(list(example.features.feature["feature1"].int64_list.value))
    return to_numpy(out)


def _image_example_fn(tf):
    _bytes_feature, _float_feature, _int64_feature = _feature_helpers(tf)

    def image_example(image_string, label):
        image_shape = tf.io.decode_jpeg(image_string).shape
        feature = {
            "height": _int64_feature(image_shape[0]),
            "width": _int64_feature(image_shape[1]),
            "depth": _int64_feature(image_shape[2]),
            "label": _int64_feature(label),
            "image_raw": _bytes_feature(image_string),
        }
        return tf.train.Example(features=tf.train.Features(feature=feature))

    return image_example


def _image_files(tmp_path):
    from tf_snippets.images_tutorial import _jpeg_dir
    src = _jpeg_dir()
    out = {}
    for name, label in (("hopper.jpg", 0), ("testorig.jpg", 1)):
        shutil.copy(os.path.join(src, name), os.path.join(tmp_path, name))
        out[os.path.join(tmp_path, name)] = label
    return out


def snippet_write_image_tfrecord(tf, tmp_path):
    image_labels = _image_files(tmp_path)
    image_example = _image_example_fn(tf)
    record_file = os.path.join(tmp_path, "images.tfrecords")
    with tf.io.TFRecordWriter(record_file) as writer:
        for filename, label in image_labels.items():
            image_string = open(filename, "rb").read()
            tf_example = image_example(image_string, label)
            writer.write(tf_example.SerializeToString())
    return to_numpy(os.path.getsize(record_file))


def snippet_read_image_tfrecord(tf, tmp_path):
    image_labels = _image_files(tmp_path)
    image_example = _image_example_fn(tf)
    record_file = os.path.join(tmp_path, "images.tfrecords")
    with tf.io.TFRecordWriter(record_file) as writer:
        for filename, label in image_labels.items():
            writer.write(image_example(open(filename, "rb").read(), label).SerializeToString())

    image_feature_description = {
        "height": tf.io.FixedLenFeature([], tf.int64),
        "width": tf.io.FixedLenFeature([], tf.int64),
        "depth": tf.io.FixedLenFeature([], tf.int64),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "image_raw": tf.io.FixedLenFeature([], tf.string),
    }

    def _parse_image_function(example_proto):
        return tf.io.parse_single_example(example_proto, image_feature_description)

    parsed_image_dataset = tf.data.TFRecordDataset(record_file).map(_parse_image_function)
    out = []
    for image_features in parsed_image_dataset:
        image_raw = image_features["image_raw"].numpy()
        image = tf.io.decode_jpeg(image_raw)
        out.append((image_features["height"].numpy(), image_features["label"].numpy(),
                    image.numpy().mean(dtype=np.float64)))
    return to_numpy(out)


def snippet_serialize_parse_tensor(tf, tmp_path):
    t = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    serialized = tf.io.serialize_tensor(t)
    parsed = tf.io.parse_tensor(serialized, out_type=tf.float32)
    return to_numpy(parsed)


def snippet_decode_raw_feature(tf, tmp_path):
    _bytes_feature, _, _ = _feature_helpers(tf)
    filename = os.path.join(tmp_path, "raw.tfrecord")
    with tf.io.TFRecordWriter(filename) as writer:
        for i in range(3):
            arr = (np.arange(4, dtype=np.float32) + i)
            ex = tf.train.Example(features=tf.train.Features(
                feature={"x": _bytes_feature(arr.tobytes())}))
            writer.write(ex.SerializeToString())
    description = {"x": tf.io.FixedLenFeature([], tf.string)}
    ds = tf.data.TFRecordDataset(filename).map(
        lambda r: tf.io.decode_raw(tf.io.parse_single_example(r, description)["x"], tf.float32))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_feature_proto_text(tf, tmp_path):
    feature = tf.train.Feature(int64_list=tf.train.Int64List(value=[1, 2]))
    return to_numpy(str(feature))


# --- Files written with plain Python (no tf.train.Example), read with tf.data ---

def _crc32c(data, _table=[]):
    if not _table:
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            _table.append(c)
    crc = 0xFFFFFFFF
    for b in data:
        crc = _table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked(data):
    crc = _crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _write_tfrecord(path, records):
    import struct
    with open(path, "wb") as f:
        for r in records:
            header = struct.pack("<Q", len(r))
            f.write(header + struct.pack("<I", _masked(header)) + r + struct.pack("<I", _masked(r)))


def _varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def _ld(tag, payload):
    return bytes([tag]) + _varint(len(payload)) + payload


def _example(features):
    """Serialized tf.train.Example from {name: list of int / float / bytes}."""
    import struct
    entries = b""
    for key, values in features.items():
        if values and isinstance(values[0], bytes):
            feature = _ld(0x0A, b"".join(_ld(0x0A, v) for v in values))
        elif values and isinstance(values[0], float):
            feature = _ld(0x12, _ld(0x0A, struct.pack(f"<{len(values)}f", *values)))
        else:
            feature = _ld(0x1A, _ld(0x0A, b"".join(_varint(v & (2**64 - 1)) for v in values)))
        entries += _ld(0x0A, _ld(0x0A, key.encode()) + _ld(0x12, feature))
    return _ld(0x0A, entries)


def _plain_records(tmp_path, n=6, name="plain.tfrecord"):
    path = os.path.join(tmp_path, name)
    _write_tfrecord(path, [_example({"feature0": [i % 2], "feature1": [int(feature1[i])],
                                     "feature2": [bytes(feature2[i])],
                                     "feature3": [float(np.float32(feature3[i]))]})
                           for i in range(n)])
    return path


def snippet_plain_parse_single_example(tf, tmp_path):
    filename = _plain_records(tmp_path)
    feature_description = _feature_description(tf)

    def _parse_function(example_proto):
        return tf.io.parse_single_example(example_proto, feature_description)

    parsed_dataset = tf.data.TFRecordDataset([filename]).map(_parse_function)
    return to_numpy(list(parsed_dataset.as_numpy_iterator()))


def snippet_plain_parse_example_after_batch(tf, tmp_path):
    filename = _plain_records(tmp_path, n=7)
    ds = tf.data.TFRecordDataset(filename).batch(3)
    ds = ds.map(lambda s: tf.io.parse_example(s, _feature_description(tf)),
                num_parallel_calls=tf.data.AUTOTUNE)
    return to_numpy(list(ds.prefetch(tf.data.AUTOTUNE).as_numpy_iterator()))


def snippet_plain_shards_interleave_parse(tf, tmp_path):
    for shard in range(3):
        _plain_records(tmp_path, n=4, name=f"train-{shard:05d}-of-00003.tfrecord")
    files = tf.data.Dataset.list_files(os.path.join(tmp_path, "train-*.tfrecord"), shuffle=False)
    ds = files.interleave(tf.data.TFRecordDataset, cycle_length=3, block_length=2,
                          num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.map(lambda r: tf.io.parse_single_example(r, _feature_description(tf))["feature1"])
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_plain_var_len_feature(tf, tmp_path):
    path = os.path.join(tmp_path, "varlen.tfrecord")
    _write_tfrecord(path, [_example({"ids": list(range(n)), "label": [n]}) for n in (1, 3, 2)])
    description = {"ids": tf.io.VarLenFeature(tf.int64),
                   "label": tf.io.FixedLenFeature([], tf.int64)}
    ds = tf.data.TFRecordDataset(path).map(lambda x: tf.io.parse_single_example(x, description))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_plain_image_records_decode(tf, tmp_path):
    from tf_snippets.images_tutorial import _jpeg_dir
    records = []
    for label, name in enumerate(["hopper.jpg", "testorig.jpg"]):
        with open(os.path.join(_jpeg_dir(), name), "rb") as f:
            records.append(_example({"image_raw": [f.read()], "label": [label]}))
    path = os.path.join(tmp_path, "images.tfrecords")
    _write_tfrecord(path, records)
    image_feature_description = {
        "image_raw": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }

    def parse(example_proto):
        features = tf.io.parse_single_example(example_proto, image_feature_description)
        image = tf.io.decode_jpeg(features["image_raw"], channels=3)
        image = tf.image.resize(image, [16, 16])
        return image, features["label"]

    ds = tf.data.TFRecordDataset(path).map(parse).batch(2)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_plain_fixed_len_vector_default(tf, tmp_path):
    path = os.path.join(tmp_path, "vec.tfrecord")
    _write_tfrecord(path, [_example({"xy": [1.5, 2.5]}), _example({"other": [1]})])
    description = {"xy": tf.io.FixedLenFeature([2], tf.float32, default_value=[0.0, -1.0])}
    ds = tf.data.TFRecordDataset(path).map(lambda x: tf.io.parse_single_example(x, description))
    return to_numpy(list(ds.as_numpy_iterator()))
