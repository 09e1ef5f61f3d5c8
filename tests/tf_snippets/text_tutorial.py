"""Load text tutorial (tensorflow.org/tutorials/load_data/text), on three small 'translations'."""
import gzip
import os

import numpy as np

from tf_snippets._compare import to_numpy

TEXTS = {
    "cowper.txt": ["Achilles sing, O Goddess! Peleus' son;", "His wrath pernicious, who ten thousand woes",
                   "Caused to Achaia's host, sent many a soul", ""],
    "derby.txt": ["Of Peleus' son, Achilles, sing, O Muse,", "The vengeance, deep and deadly; whence to Greece",
                  "Unnumbered ills arose; which many a soul"],
    "butler.txt": ["Sing, O goddess, the anger of Achilles son of Peleus, that brought",
                   "countless ills upon the Achaeans. Many a brave soul did it send", "hurrying down to Hades,",
                   "and many a hero did it yield a prey to dogs and"],
}
FILE_NAMES = ["cowper.txt", "derby.txt", "butler.txt"]


def _write_texts(tmp_path):
    for name, lines in TEXTS.items():
        with open(os.path.join(tmp_path, name), "w") as f:
            f.write("\n".join(lines) + "\n")
    return str(tmp_path)


def _labeled_data_sets(tf, parent_dir):
    def labeler(example, index):
        return example, tf.cast(index, tf.int64)

    labeled_data_sets = []
    for i, file_name in enumerate(FILE_NAMES):
        lines_dataset = tf.data.TextLineDataset(os.path.join(parent_dir, file_name))
        labeled_dataset = lines_dataset.map(lambda ex: labeler(ex, i))
        labeled_data_sets.append(labeled_dataset)
    return labeled_data_sets


def snippet_labeler_concatenate(tf, tmp_path):
    parent_dir = _write_texts(tmp_path)
    labeled_data_sets = _labeled_data_sets(tf, parent_dir)
    all_labeled_data = labeled_data_sets[0]
    for labeled_dataset in labeled_data_sets[1:]:
        all_labeled_data = all_labeled_data.concatenate(labeled_dataset)
    return to_numpy([(text.numpy(), label.numpy()) for text, label in all_labeled_data])


def snippet_labeler_shuffle_no_reshuffle(tf, tmp_path):
    parent_dir = _write_texts(tmp_path)
    labeled_data_sets = _labeled_data_sets(tf, parent_dir)
    all_labeled_data = labeled_data_sets[0]
    for labeled_dataset in labeled_data_sets[1:]:
        all_labeled_data = all_labeled_data.concatenate(labeled_dataset)
    all_labeled_data = all_labeled_data.shuffle(50, reshuffle_each_iteration=False, seed=4)
    first = [label for _, label in all_labeled_data.as_numpy_iterator()]
    second = [label for _, label in all_labeled_data.as_numpy_iterator()]
    return to_numpy((first, second))


def snippet_labeled_take_skip_split(tf, tmp_path):
    parent_dir = _write_texts(tmp_path)
    labeled = _labeled_data_sets(tf, parent_dir)
    ds = labeled[0].concatenate(labeled[1]).concatenate(labeled[2])
    VALIDATION_SIZE = 3
    train_data = ds.skip(VALIDATION_SIZE).batch(4)
    validation_data = ds.take(VALIDATION_SIZE).batch(4)
    return to_numpy((list(train_data.as_numpy_iterator()),
                     list(validation_data.as_numpy_iterator())))


def snippet_standardize_lower_regex(tf, tmp_path):
    parent_dir = _write_texts(tmp_path)

    def custom_standardization(input_data):
        lowercase = tf.strings.lower(input_data)
        return tf.strings.regex_replace(lowercase, "[%s]" % "!,;.'", "")

    ds = tf.data.TextLineDataset(os.path.join(parent_dir, "cowper.txt")).map(custom_standardization)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_strings_split_ragged(tf, tmp_path):
    parent_dir = _write_texts(tmp_path)
    ds = tf.data.TextLineDataset(os.path.join(parent_dir, "derby.txt"))
    ds = ds.map(lambda line: tf.strings.split(line))
    return to_numpy([words.numpy() for words in ds])


def snippet_filter_empty_lines_length(tf, tmp_path):
    parent_dir = _write_texts(tmp_path)
    ds = tf.data.TextLineDataset(os.path.join(parent_dir, "cowper.txt"))
    ds = ds.filter(lambda line: tf.strings.length(line) > 0)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_filter_empty_lines_python_compare(tf, tmp_path):
    parent_dir = _write_texts(tmp_path)
    ds = tf.data.TextLineDataset(os.path.join(parent_dir, "cowper.txt"))
    ds = ds.filter(lambda line: tf.not_equal(line, ""))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_textline_multiple_files_count(tf, tmp_path):
    parent_dir = _write_texts(tmp_path)
    ds = tf.data.TextLineDataset([os.path.join(parent_dir, f) for f in FILE_NAMES])
    n = 0
    for _ in ds:
        n += 1
    return to_numpy((n, list(ds.take(2).as_numpy_iterator())))


def snippet_interleave_text_files_block(tf, tmp_path):
    parent_dir = _write_texts(tmp_path)
    files = tf.data.Dataset.from_tensor_slices([os.path.join(parent_dir, f) for f in FILE_NAMES])
    ds = files.interleave(tf.data.TextLineDataset, cycle_length=2, block_length=2)
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_vocabulary_python_loop(tf, tmp_path):
    parent_dir = _write_texts(tmp_path)
    ds = tf.data.TextLineDataset([os.path.join(parent_dir, f) for f in FILE_NAMES])
    vocab = {}
    for line in ds:
        for word in line.numpy().decode().lower().split():
            vocab[word] = vocab.get(word, 0) + 1
    return to_numpy(sorted(vocab.items(), key=lambda kv: (-kv[1], kv[0]))[:8])


def snippet_vocabulary_as_numpy_iterator(tf, tmp_path):
    parent_dir = _write_texts(tmp_path)
    ds = tf.data.TextLineDataset([os.path.join(parent_dir, f) for f in FILE_NAMES])
    vocab = set()
    for line in ds.as_numpy_iterator():
        vocab.update(line.decode().split())
    return to_numpy(sorted(vocab)[:10])


def snippet_gzip_text_lines(tf, tmp_path):
    path = os.path.join(tmp_path, "lines.txt.gz")
    with gzip.open(path, "wt") as f:
        f.write("alpha\nbeta\ngamma\n")
    ds = tf.data.TextLineDataset(path, compression_type="GZIP")
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_regex_full_match_filter(tf, tmp_path):
    parent_dir = _write_texts(tmp_path)
    ds = tf.data.TextLineDataset(os.path.join(parent_dir, "butler.txt"))
    ds = ds.filter(lambda x: tf.strings.regex_full_match(x, ".*[Mm]any.*"))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_hash_bucket(tf, tmp_path):
    words = tf.data.Dataset.from_tensor_slices(["achilles", "peleus", "goddess", "soul"])
    ds = words.map(lambda w: tf.strings.to_hash_bucket_fast(w, 100))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_strings_join_format(tf, tmp_path):
    ds = tf.data.Dataset.from_tensor_slices((["a", "b"], [1, 2]))
    ds = ds.map(lambda s, i: tf.strings.join([s, tf.strings.as_string(i)], separator="-"))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_strings_substr_bytes_split(tf, tmp_path):
    ds = tf.data.Dataset.from_tensor_slices(["hello", "world"])
    ds = ds.map(lambda s: (tf.strings.substr(s, 1, 3), tf.strings.bytes_split(s)))
    return to_numpy([(a.numpy(), b.numpy()) for a, b in ds])


def snippet_py_function_tokenize_count(tf, tmp_path):
    parent_dir = _write_texts(tmp_path)

    def count_words(line):
        return len(line.numpy().split())

    ds = tf.data.TextLineDataset(os.path.join(parent_dir, "derby.txt"))
    ds = ds.map(lambda line: tf.py_function(count_words, [line], tf.int64))
    return to_numpy(list(ds.as_numpy_iterator()))


def snippet_text_batch_padded_tokens(tf, tmp_path):
    vocab = {w: i + 1 for i, w in enumerate("sing o goddess the anger of achilles".split())}

    def encode(text):
        words = text.numpy().decode().lower().replace(",", "").split()
        return np.array([vocab.get(w, 0) for w in words], dtype=np.int64)

    def encode_map_fn(text):
        encoded_text = tf.py_function(encode, inp=[text], Tout=tf.int64)
        encoded_text.set_shape([None])
        return encoded_text

    ds = tf.data.Dataset.from_tensor_slices(["Sing, O goddess", "the anger of Achilles son",
                                             "of Peleus"])
    ds = ds.map(encode_map_fn).padded_batch(2)
    return to_numpy(list(ds.as_numpy_iterator()))
