"""Lookup tables made from datasets and tables with out-of-vocabulary buckets
(issue 28): ``tf.data.experimental.table_from_dataset`` /
``index_table_from_dataset`` / ``DatasetInitializer`` and
``tf.lookup.StaticVocabularyTable``, against TensorFlow, eagerly and inside a
map traced natively (no TracingWarning)."""
import warnings

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from conveyor.framework.tracing import TracingWarning  # noqa: E402

WORDS = ["emerson", "lake", "palmer", "lake", "king", "crimson", ""]


def _np(v):
    return v.numpy() if hasattr(v, "numpy") and not isinstance(v, np.ndarray) else np.asarray(v)


def _same(a, b):
    a, b = _np(a), _np(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a, b)
    np.testing.assert_array_equal(a, b)


def _traced(table, query):
    """table.lookup inside a map over one element, asserting the map runs natively."""
    ds = cv.data.Dataset.from_tensors(query).map(table.lookup)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracingWarning)
        assert "mode=native" in repr(ds)
        return next(iter(ds))


def _vocab(t, kind):
    if kind == "string":
        return t.data.Dataset.range(50).map(lambda x: t.strings.as_string(x * 3))
    return t.data.Dataset.range(50).map(lambda x: x * 3)


def _query(kind):
    if kind == "string":
        return np.array([b"0", b"3", b"147", b"1", b"abc", b""], dtype=object)
    return np.array([0, 3, 147, 1, -5, 10**12], dtype=np.int64)


@pytest.mark.parametrize("kind", ["string", "int64"])
@pytest.mark.parametrize("oov", [0, 1, 7])
@pytest.mark.parametrize("vocab_size", [None, 20])
def test_index_table_from_dataset_matches_tensorflow(kind, oov, vocab_size):
    key_dtype = {"string": "string", "int64": "int64"}[kind]

    def make(t):
        return t.data.experimental.index_table_from_dataset(
            _vocab(t, kind), num_oov_buckets=oov, vocab_size=vocab_size,
            key_dtype=getattr(t, key_dtype))
    ours, theirs = make(cv), make(tf)
    q = _query(kind)
    expected = theirs.lookup(tf.constant(q))
    _same(ours.lookup(q), expected)
    _same(_traced(ours, q), expected)
    assert int(ours.size()) == int(theirs.size())


def test_table_from_dataset_values_and_default():
    def make(t, **kw):
        pairs = t.data.Dataset.zip((t.data.Dataset.range(10),
                                    t.data.Dataset.range(10).map(lambda x: t.strings.as_string(x * 2))))
        return t.data.experimental.table_from_dataset(pairs, key_dtype=t.int64, **kw)
    q = np.array([0, 9, 10, -1], np.int64)
    _same(make(cv, default_value="n/a").lookup(q), make(tf, default_value="n/a").lookup(tf.constant(q)))
    _same(_traced(make(cv, default_value="n/a"), q),
          make(tf, default_value="n/a").lookup(tf.constant(q)))
    # Values that are strings need a default, in both.
    with pytest.raises(ValueError, match="default_value"):
        make(tf)
    with pytest.raises(ValueError, match="default_value"):
        make(cv)


def test_dataset_initializer_in_a_static_hash_table():
    def make(t):
        pairs = t.data.Dataset.from_tensor_slices((["a", "b", "c"], [10, 20, 30]))
        return t.lookup.StaticHashTable(t.data.experimental.DatasetInitializer(pairs), -1)
    q = np.array([b"c", b"z", b"a"], dtype=object)
    _same(make(cv).lookup(q), make(tf).lookup(tf.constant(q)))


@pytest.mark.parametrize("bad", ["three", "vector", "one"])
def test_dataset_initializer_refuses_what_tensorflow_refuses(bad):
    def make(t):
        if bad == "three":
            return t.data.Dataset.from_tensor_slices(([1], [2], [3]))
        if bad == "vector":
            return t.data.Dataset.from_tensor_slices(([[1, 2]], [3]))
        return t.data.Dataset.range(3)
    error = TypeError if bad == "one" else ValueError  # TensorFlow's len() of a TensorSpec
    with pytest.raises(error) as theirs:
        tf.data.experimental.DatasetInitializer(make(tf))
    with pytest.raises(error) as ours:
        cv.data.experimental.DatasetInitializer(make(cv))
    if bad != "one":  # the same sentence, up to the spec's repr
        assert str(ours.value).split(".")[0] == str(theirs.value).split(".")[0]


def test_vocab_size_larger_than_the_dataset_is_an_error_in_both():
    with pytest.raises(tf.errors.FailedPreconditionError):
        tf.data.experimental.index_table_from_dataset(tf.data.Dataset.range(3), vocab_size=5,
                                                      key_dtype=tf.int64)
    with pytest.raises(cv.errors.FailedPreconditionError):
        cv.data.experimental.index_table_from_dataset(cv.data.Dataset.range(3), vocab_size=5,
                                                      key_dtype=cv.int64)
    with pytest.raises(ValueError, match="vocab_size"):
        cv.data.experimental.index_table_from_dataset(cv.data.Dataset.range(3), vocab_size=0)
    with pytest.raises(ValueError, match="num_oov_buckets"):
        cv.data.experimental.index_table_from_dataset(cv.data.Dataset.range(3), num_oov_buckets=-1)


@pytest.mark.parametrize("hasher", ["legacy", "strong"])
def test_other_hashers(hasher):
    def make(t):
        from tensorflow.python.ops import lookup_ops
        spec = (lookup_ops.HasherSpec("legacy", None) if hasher == "legacy"
                else lookup_ops.StrongHashSpec((1, 2)))
        return t.data.experimental.index_table_from_dataset(
            t.data.Dataset.from_tensor_slices(["a", "b"]), num_oov_buckets=5, hasher_spec=spec)
    q = np.array([b"a", b"x", b"yy", b"b"], dtype=object)
    _same(make(cv).lookup(q), make(tf).lookup(tf.constant(q)))


@pytest.mark.parametrize("keys,lookup_dtype", [
    (WORDS[:3], None),
    (np.array([4, 8, 15], np.int64), None),
    (np.array([4, 8, 15], np.int64), "int32"),
])
def test_static_vocabulary_table_matches_tensorflow(keys, lookup_dtype):
    def make(t):
        init = t.lookup.KeyValueTensorInitializer(keys, t.constant([0, 1, 2], dtype=t.int64))
        dtype = None if lookup_dtype is None else getattr(t, lookup_dtype)
        return t.lookup.StaticVocabularyTable(init, num_oov_buckets=3, lookup_key_dtype=dtype)
    if isinstance(keys, list):
        q = np.array([w.encode() for w in WORDS], dtype=object)
    else:
        q = np.array([4, 16, 15, 23, 42, 8, 0], dtype=lookup_dtype or np.int64)
    ours, theirs = make(cv), make(tf)
    expected = theirs.lookup(tf.constant(q))
    _same(ours.lookup(q), expected)
    _same(ours[q], expected)
    _same(_traced(ours, q), expected)
    assert int(ours.size()) == int(theirs.size())


def test_static_vocabulary_table_errors():
    init = cv.lookup.KeyValueTensorInitializer(["a"], np.array([0], np.int64))
    with pytest.raises(ValueError, match="num_oov_buckets"):
        cv.lookup.StaticVocabularyTable(init, 0)
    with pytest.raises(TypeError, match="value_dtype"):
        cv.lookup.StaticVocabularyTable(cv.lookup.KeyValueTensorInitializer(["a"], [0]), 1)
    table = cv.lookup.StaticVocabularyTable(init, 2)
    with pytest.raises(TypeError, match="Dtype of argument `keys`"):
        table.lookup(np.array([1], np.int64))
    buckets_only = cv.lookup.StaticVocabularyTable(None, 4)
    _same(buckets_only.lookup(np.array([b"a", b"b"], dtype=object)),
          tf.lookup.StaticVocabularyTable(None, 4).lookup(tf.constant(["a", "b"])))
