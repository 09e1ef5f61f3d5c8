"""Loaders in the style of keras-io's examples and Keras' dataset utilities
(list_files with class labels from the path, text files read whole with
labels from their folder, vocabulary lookups with tf.lookup tables as a
StringLookup layer would do): our own code, the same calls."""
import numpy as np

from tf_snippets._compare import to_numpy


def _image_tree(tf, root):
    rng = np.random.default_rng(12)
    for c, name in enumerate(["cats", "dogs", "birds"]):
        (root / name).mkdir(parents=True)
        for i in range(2 + c):
            image = rng.integers(0, 256, size=(10 + i, 14 + c, 3)).astype(np.uint8)
            tf.io.write_file(str(root / name / f"img_{i}.png"), tf.io.encode_png(image))
    return sorted(["birds", "cats", "dogs"])


def snippet_list_files_labels_from_path(tf, tmp_path):
    root = tmp_path / "photos"
    class_names = np.array(_image_tree(tf, root))

    def get_label(file_path):
        parts = tf.strings.split(file_path, "/")
        one_hot = parts[-2] == class_names
        return tf.argmax(one_hot)

    def process_path(file_path):
        label = get_label(file_path)
        img = tf.io.decode_png(tf.io.read_file(file_path), channels=3)
        img = tf.image.resize(img, [8, 8])
        return img, label

    list_ds = tf.data.Dataset.list_files(str(root / "*/*"), shuffle=False)
    ds = list_ds.map(process_path, num_parallel_calls=tf.data.AUTOTUNE).batch(3)
    return to_numpy(list(ds)), str(ds.element_spec)


def snippet_label_table_from_class_names(tf, tmp_path):
    root = tmp_path / "photos"
    class_names = _image_tree(tf, root)
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(tf.constant(class_names),
                                            tf.range(len(class_names), dtype=tf.int64)),
        default_value=-1)

    def label_of(path):
        return path, table.lookup(tf.strings.split(path, "/")[-2])

    ds = tf.data.Dataset.list_files(str(root / "*/*.png"), shuffle=False).map(label_of)
    return to_numpy([(p.decode().split("photos/")[1], lab) for p, lab in ds.as_numpy_iterator()])


def _text_tree(root):
    texts = {"neg": ["a dull film", "boring and slow", "not good at all"],
             "pos": ["a great film", "loved every minute", "good fun", "great acting"]}
    for label, docs in texts.items():
        (root / label).mkdir(parents=True)
        for i, doc in enumerate(docs):
            (root / label / f"{i}.txt").write_text(doc + "\n")
    return texts


def snippet_text_files_read_whole_with_labels(tf, tmp_path):
    root = tmp_path / "reviews"
    _text_tree(root)
    class_names = ["neg", "pos"]

    def read(path):
        text = tf.strings.strip(tf.io.read_file(path))
        folder = tf.strings.split(path, "/")[-2]
        label = tf.cast(tf.equal(folder, class_names[1]), tf.int32)
        return text, label

    ds = tf.data.Dataset.list_files(str(root / "*/*.txt"), shuffle=False).map(read).batch(4)
    return to_numpy(list(ds))


def snippet_text_dataset_from_directory(tf, tmp_path):
    root = tmp_path / "reviews"
    _text_tree(root)
    ds = tf.keras.utils.text_dataset_from_directory(str(root), batch_size=3, shuffle=False)
    return to_numpy(list(ds)), list(ds.class_names)


def snippet_vocabulary_lookup_oov_buckets(tf, tmp_path):
    vocab = ["a", "film", "good", "great", "not"]
    table = tf.lookup.StaticVocabularyTable(
        tf.lookup.KeyValueTensorInitializer(vocab, tf.range(len(vocab), dtype=tf.int64)),
        num_oov_buckets=2)
    lines = ["a great film", "not a good film", "boring"]

    def tokenize(line):
        tokens = tf.strings.split(tf.strings.lower(line))
        return table.lookup(tokens)

    ds = tf.data.Dataset.from_tensor_slices(lines).map(tokenize)
    return to_numpy([v for v in ds.as_numpy_iterator()]), int(table.size())


def snippet_vocabulary_file_table(tf, tmp_path):
    vocab_path = tmp_path / "vocab.txt"
    vocab_path.write_text("[PAD]\n[UNK]\nthe\ncat\nsat\n")
    table = tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(str(vocab_path), tf.string,
                                      tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
                                      tf.lookup.TextFileIndex.LINE_NUMBER),
        default_value=1)
    ds = tf.data.Dataset.from_tensor_slices(["the cat sat", "the dog"]).map(
        lambda s: table.lookup(tf.strings.split(s)))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_image_dataset_from_directory_split(tf, tmp_path):
    root = tmp_path / "photos"
    _image_tree(tf, root)
    train = tf.keras.utils.image_dataset_from_directory(
        str(root), validation_split=0.3, subset="training", seed=7, image_size=(6, 6),
        batch_size=2)
    val = tf.keras.utils.image_dataset_from_directory(
        str(root), validation_split=0.3, subset="validation", seed=7, image_size=(6, 6),
        batch_size=2)
    normalization = lambda x, y: (x / 255.0, y)  # noqa: E731
    return (to_numpy(list(train.map(normalization))), to_numpy(list(val)),
            list(train.class_names))
