"""tf.lookup.TextFileInitializer against TensorFlow: whole lines, line numbers
and columns as keys and values, vocab_size, CRLF lines, OOV buckets, a
lookup traced into a map; and TensorFlow's errors for bad files."""
import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from conveyor.framework.tracing import TracingWarning  # noqa: E402

QUERIES = ["the", "cat", "sat", "dog", "", "7", "a\t5", "b"]


def _table(lib, path, key_index, value_dtype, value_index, **kw):
    key_dtype = lib.int64 if key_index == "int" else lib.string
    key_index = 0 if key_index == "int" else key_index
    init = lib.lookup.TextFileInitializer(str(path), key_dtype, key_index, value_dtype,
                                          value_index, **kw)
    return lib.lookup.StaticHashTable(init, default_value=-1 if value_dtype != lib.string else "?")


CASES = {
    "whole_line_to_number": ("the\ncat\nsat\n", -2, "int64", -1, {}),
    "crlf_lines": ("the\r\ncat\r\nsat", -2, "int64", -1, {}),
    "columns": ("a\t5\nb\t7\n", 0, "int64", 1, {}),
    "columns_comma_vocab_size": ("the,1\ncat,2\nsat,3\n", 0, "int64", 1,
                                 {"delimiter": ",", "vocab_size": 2}),
    "string_values": ("the x\ncat y\n", 0, "string", 1, {"delimiter": " "}),
    "float_values": ("the 0.5\ncat 2.25\n", 0, "float32", 1, {"delimiter": " "}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_text_file_table_matches_tensorflow(name, tmp_path):
    text, key_index, value_dtype, value_index, kw = CASES[name]
    path = tmp_path / "vocab.txt"
    path.write_bytes(text.encode())
    want = _table(tf, path, key_index, getattr(tf, value_dtype), value_index, **kw)
    got = _table(cv, path, key_index, getattr(cv, value_dtype), value_index, **kw)
    assert int(got.size()) == int(want.size())
    np.testing.assert_array_equal(np.asarray(got.lookup(np.array(QUERIES, object))),
                                  want.lookup(tf.constant(QUERIES)).numpy())
    ds = cv.data.Dataset.from_tensor_slices(QUERIES).map(got.lookup)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracingWarning)
        assert "mode=native" in repr(ds)
    np.testing.assert_array_equal(np.array(list(ds.as_numpy_iterator())),
                                  want.lookup(tf.constant(QUERIES)).numpy())


def test_vocabulary_table_from_file_matches_tensorflow(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\nthe\ncat\n")
    tables = [lib.lookup.StaticVocabularyTable(lib.lookup.TextFileInitializer(
        str(path), lib.string, lib.lookup.TextFileIndex.WHOLE_LINE, lib.int64,
        lib.lookup.TextFileIndex.LINE_NUMBER), num_oov_buckets=3) for lib in (tf, cv)]
    keys = ["the", "dog", "cat", "sat", "[PAD]"]
    np.testing.assert_array_equal(np.asarray(tables[1].lookup(np.array(keys, object))),
                                  tables[0].lookup(tf.constant(keys)).numpy())


@pytest.mark.parametrize("text,kw,match", [
    ("a\n\nb\n", {}, "empty line"),
    ("a\tb\n", {"value_index": 3}, "number of columns"),
    ("a\nb\n", {"vocab_size": 5}, "vocab_size"),
])
def test_bad_files_are_invalid_argument(tmp_path, text, kw, match):
    path = tmp_path / "vocab.txt"
    path.write_text(text)
    value_index = kw.pop("value_index", -1)
    for lib in (tf, cv):
        with pytest.raises(lib.errors.InvalidArgumentError, match=match):
            lib.lookup.StaticHashTable(lib.lookup.TextFileInitializer(
                str(path), lib.string, -2, lib.int64, value_index, **kw), -1)
