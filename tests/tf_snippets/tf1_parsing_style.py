"""TensorFlow 1 era input code (``tf.compat.v1``) and the parsing calls it
leans on: initializable iterators, output shapes and types, batched Example
parsing with FixedLenSequenceFeature, SequenceExamples, CSV lines with
defaults of several dtypes. Our own code, the same calls."""
import numpy as np

from tf_snippets._compare import to_numpy


def _drain(tf, get_next):
    out = []
    while True:
        try:
            out.append(get_next())
        except tf.errors.OutOfRangeError:
            return out


def _example_records(tf, path, n=6):
    with tf.io.TFRecordWriter(path) as writer:
        for i in range(n):
            feature = {
                "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                "tokens": tf.train.Feature(int64_list=tf.train.Int64List(
                    value=list(range(i % 4)))),
                "score": tf.train.Feature(float_list=tf.train.FloatList(value=[i / 2.0, -i])),
                "name": tf.train.Feature(bytes_list=tf.train.BytesList(
                    value=[f"row{i}".encode()])),
            }
            writer.write(tf.train.Example(features=tf.train.Features(
                feature=feature)).SerializeToString())


def snippet_initializable_iterator_under_eager(tf, tmp_path):
    # TF1 code probes for graph mode: eagerly the initializable iterator is
    # refused and the code falls back to a one-shot iterator.
    v1 = tf.compat.v1
    ds = tf.data.Dataset.range(5).map(lambda x: x * 3)
    try:
        iterator = v1.data.make_initializable_iterator(ds)
        refused = None
    except RuntimeError as e:
        refused = type(e).__name__
        iterator = v1.data.make_one_shot_iterator(ds)
    return refused, [int(x) for x in _drain(tf, iterator.get_next)]


def snippet_output_shapes_and_types(tf, tmp_path):
    v1 = tf.compat.v1
    ds = tf.data.Dataset.from_tensor_slices(
        {"a": np.zeros((4, 3), np.float32), "b": np.array([b"x", b"y", b"z", b"w"])}).batch(2)
    shapes = v1.data.get_output_shapes(ds)
    types = v1.data.get_output_types(ds)
    classes = v1.data.get_output_classes(ds)
    return ({k: str(v) for k, v in shapes.items()}, {k: repr(v) for k, v in types.items()},
            {k: v.__name__ for k, v in classes.items()})


def snippet_compat_parse_example_fixed_len_sequence(tf, tmp_path):
    v1 = tf.compat.v1
    path = str(tmp_path / "rows.tfrecord")
    _example_records(tf, path)
    features = {
        "id": v1.FixedLenFeature([], tf.int64),
        "tokens": v1.FixedLenSequenceFeature([], tf.int64, allow_missing=True,
                                             default_value=-1),
        "score": v1.FixedLenFeature([2], tf.float32),
        "name": v1.FixedLenFeature([], tf.string),
    }
    ds = tf.data.TFRecordDataset(path).batch(3).map(lambda s: v1.parse_example(s, features))
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_parse_single_example_var_len_to_dense(tf, tmp_path):
    path = str(tmp_path / "rows.tfrecord")
    _example_records(tf, path)
    features = {"tokens": tf.io.VarLenFeature(tf.int64),
                "score": tf.io.FixedLenFeature([2], tf.float32)}

    def parse(record):
        parsed = tf.io.parse_single_example(record, features)
        tokens = tf.sparse.to_dense(parsed["tokens"], default_value=-1)
        return tokens, tf.size(tokens), parsed["score"]

    ds = tf.data.TFRecordDataset(path).map(parse).padded_batch(3, padded_shapes=([4], [], [2]))
    return to_numpy(list(ds))


def _sequence_records(tf, path, n=4):
    with tf.io.TFRecordWriter(path) as writer:
        for i in range(n):
            steps = [tf.train.Feature(float_list=tf.train.FloatList(value=[t * 0.5, t + i]))
                     for t in range(i + 1)]
            words = [tf.train.Feature(bytes_list=tf.train.BytesList(value=[f"w{t}".encode()]))
                     for t in range(i + 2)]
            example = tf.train.SequenceExample(
                context=tf.train.Features(feature={
                    "length": tf.train.Feature(int64_list=tf.train.Int64List(value=[i + 1])),
                    "label": tf.train.Feature(bytes_list=tf.train.BytesList(
                        value=[b"odd" if i % 2 else b"even"]))}),
                feature_lists=tf.train.FeatureLists(feature_list={
                    "frames": tf.train.FeatureList(feature=steps),
                    "words": tf.train.FeatureList(feature=words)}))
            writer.write(example.SerializeToString())


def snippet_parse_single_sequence_example(tf, tmp_path):
    path = str(tmp_path / "seq.tfrecord")
    _sequence_records(tf, path)
    context_features = {"length": tf.io.FixedLenFeature([], tf.int64),
                        "label": tf.io.FixedLenFeature([], tf.string)}
    sequence_features = {"frames": tf.io.FixedLenSequenceFeature([2], tf.float32),
                         "words": tf.io.VarLenFeature(tf.string)}

    def parse(record):
        context, sequence = tf.io.parse_single_sequence_example(
            record, context_features=context_features, sequence_features=sequence_features)
        return (context["length"], context["label"], sequence["frames"],
                tf.sparse.to_dense(sequence["words"], default_value=b""))

    ds = tf.data.TFRecordDataset(path).map(parse)
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_parse_sequence_example_batched(tf, tmp_path):
    path = str(tmp_path / "seq.tfrecord")
    _sequence_records(tf, path)
    context_features = {"length": tf.io.FixedLenFeature([], tf.int64)}
    sequence_features = {"frames": tf.io.FixedLenSequenceFeature([2], tf.float32)}

    def parse(records):
        context, sequence, lengths = tf.io.parse_sequence_example(
            records, context_features=context_features, sequence_features=sequence_features)
        return context["length"], sequence["frames"], lengths["frames"]

    ds = tf.data.TFRecordDataset(path).batch(2).map(parse)
    return to_numpy(list(ds))


def snippet_decode_csv_several_dtypes(tf, tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("1,2.5,alpha,7,1.25\n2,,beta,,\n3,-1e3,\"g,amma\",9,0.5\n")
    defaults = [tf.constant([0], tf.int32), [0.0], [""], tf.constant([-1], tf.int64),
                tf.constant([0.0], tf.float64)]

    def parse(line):
        a, b, c, d, e = tf.io.decode_csv(line, record_defaults=defaults)
        return {"a": a, "b": b, "c": c, "d": d, "e": e}

    ds = tf.data.TextLineDataset(str(path)).map(parse)
    batched = tf.data.TextLineDataset(str(path)).batch(3).map(
        lambda lines: tf.io.decode_csv(lines, record_defaults=[defaults[0], defaults[2],
                                                               defaults[4]],
                                       select_cols=[0, 2, 4]))
    return to_numpy(list(ds)), to_numpy(list(batched)), str(ds.element_spec)


def snippet_csv_dataset_header_and_types(tf, tmp_path):
    path = tmp_path / "table.csv"
    path.write_text("x,y,name,flag\n1,0.5,a,3\n2,,b,4\n3,1.5,c,\n")
    ds = tf.data.experimental.CsvDataset(
        str(path), record_defaults=[tf.int64, tf.constant(9.0, tf.float32), tf.string,
                                    tf.constant(0, tf.int32)],
        header=True)
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_make_csv_dataset_label_and_types(tf, tmp_path):
    path = tmp_path / "table.csv"
    path.write_text("age,fare,town,survived\n22,7.25,Southampton,0\n38,71.28,Cherbourg,1\n"
                    "26,7.92,Southampton,1\n35,53.1,Queenstown,1\n")
    ds = tf.data.experimental.make_csv_dataset(
        str(path), batch_size=2, label_name="survived", num_epochs=1, shuffle=False,
        column_defaults=[tf.int32, tf.float64, tf.string, tf.int64])
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_v1_iterator_string_handle_free_loop(tf, tmp_path):
    v1 = tf.compat.v1
    ds = tf.data.Dataset.from_tensor_slices((np.arange(6), np.arange(6) * 2.0)).batch(4)
    iterator = v1.data.make_one_shot_iterator(ds)
    shapes = v1.data.get_output_shapes(iterator)
    types = v1.data.get_output_types(iterator)
    return to_numpy(_drain(tf, iterator.get_next)), [str(s) for s in shapes], \
        [repr(t) for t in types]
