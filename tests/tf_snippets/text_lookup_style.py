"""Text preprocessing as input pipelines write it without Keras layers:
string splitting and cleaning, unicode characters, n-grams, joins, numbers
from strings, and vocabulary tables (static hash tables and OOV buckets).
Our own code, the same calls."""
import numpy as np

from tf_snippets._compare import to_numpy

LINES = ["The quick brown fox", "jumps over  the lazy dog!", "", "Ünïcödé text, 42 times",
         "a b c d e"]


def _lines(tf):
    return tf.data.Dataset.from_tensor_slices(LINES)


def snippet_split_regex_clean_and_join(tf, tmp_path):
    def clean(line):
        line = tf.strings.lower(line)
        line = tf.strings.regex_replace(line, r"[^a-z0-9 ]", "")
        words = tf.strings.split(line)
        return tf.strings.reduce_join(words, separator="_"), words

    return to_numpy(list(_lines(tf).map(clean)))


def snippet_split_with_separator_and_maxsplit(tf, tmp_path):
    ds = tf.data.Dataset.from_tensor_slices(["k1=v1=x", "k2=v2", "bare"])
    ds = ds.map(lambda s: tf.strings.split(s, sep="=", maxsplit=1))
    return to_numpy(list(ds))


def snippet_unicode_split_and_decode(tf, tmp_path):
    def chars(line):
        c = tf.strings.unicode_split(line, "UTF-8")
        codes = tf.strings.unicode_decode(line, "UTF-8")
        return c, codes, tf.strings.length(
            line, unit="UTF8_CHAR")

    return to_numpy(list(_lines(tf).map(chars)))


def snippet_substr_and_to_number(tf, tmp_path):
    ds = tf.data.Dataset.from_tensor_slices(["id-0012:3.5", "id-0400:-1.25", "id-9999:0"])

    def parse(s):
        ident = tf.strings.to_number(tf.strings.substr(s, 3, 4), out_type=tf.int32)
        value = tf.strings.to_number(tf.strings.split(s, ":")[1], out_type=tf.float64)
        return ident, value, tf.strings.substr(s, -1, 1)

    return to_numpy(list(ds.map(parse)))


def snippet_ngrams_of_tokens(tf, tmp_path):
    def grams(line):
        words = tf.strings.split(tf.strings.lower(line))
        return tf.strings.ngrams(words, 2, separator=" ")

    return to_numpy(list(_lines(tf).filter(lambda s: tf.strings.length(s) > 0).map(grams)))


def snippet_batched_split_reduce_join_axis(tf, tmp_path):
    ds = _lines(tf).batch(5).map(
        lambda lines: tf.strings.reduce_join(tf.strings.split(lines).to_tensor("-"), axis=1,
                                             separator="|"))
    return to_numpy(list(ds))


def snippet_static_hash_table_labels(tf, tmp_path):
    keys = tf.constant(["cat", "dog", "bird"])
    values = tf.constant([0, 1, 2], tf.int64)
    table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(keys, values),
                                      default_value=-1)
    ds = tf.data.Dataset.from_tensor_slices(["dog", "fish", "bird", "cat"]).map(
        lambda w: (w, table.lookup(w)))
    return to_numpy(list(ds)), int(table.size())


def snippet_static_hash_table_int_keys_batched(tf, tmp_path):
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(tf.constant([3, 7, 11], tf.int64),
                                            tf.constant(["three", "seven", "eleven"])),
        default_value="?")
    ds = tf.data.Dataset.range(12).batch(4).map(table.lookup)
    return to_numpy(list(ds))


def snippet_static_vocabulary_table_oov(tf, tmp_path):
    vocab = ["the", "quick", "brown", "fox", "dog"]
    init = tf.lookup.KeyValueTensorInitializer(vocab, tf.range(len(vocab), dtype=tf.int64),
                                               key_dtype=tf.string, value_dtype=tf.int64)
    table = tf.lookup.StaticVocabularyTable(init, num_oov_buckets=3)

    def ids(line):
        words = tf.strings.split(tf.strings.lower(line))
        return table.lookup(words)

    return to_numpy(list(_lines(tf).map(ids))), int(table.size())


def snippet_vocabulary_from_dataset_then_table(tf, tmp_path):
    words = _lines(tf).map(lambda s: tf.strings.split(tf.strings.lower(s))).unbatch()
    vocab = sorted(set(w.numpy() for w in words))
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(np.array(vocab, dtype=object),
                                            np.arange(1, len(vocab) + 1, dtype=np.int64)),
        default_value=0)
    ds = _lines(tf).map(lambda s: table.lookup(tf.strings.split(tf.strings.lower(s)))).map(
        lambda ids: (tf.reduce_sum(ids), tf.size(ids)))
    return vocab, to_numpy(list(ds))


def snippet_strings_format_and_as_string(tf, tmp_path):
    ds = tf.data.Dataset.range(3).map(
        lambda i: (tf.strings.as_string(tf.cast(i, tf.float32) / 3, precision=3),
                   tf.strings.join(["row", tf.strings.as_string(i, width=3, fill="0")],
                                   separator=":"),
                   tf.strings.format("value={} of {}", (i, tf.constant(3, tf.int64)))))
    return to_numpy(list(ds))


def snippet_strings_strip_upper_and_regex_full_match(tf, tmp_path):
    ds = tf.data.Dataset.from_tensor_slices(["  Alpha ", "beta2", " 3gamma", "DELTA"])
    ds = ds.map(lambda s: tf.strings.strip(s)).map(
        lambda s: (tf.strings.upper(s), tf.strings.regex_full_match(s, r"[A-Za-z]+")))
    return to_numpy(list(ds))
