"""tf.compat.v1.data's readers, tf.data.experimental.unbatch / get_structure,
tf.io.encode_base64 / decode_base64 / matching_files and tf.strings.ngrams
(issue 28), against TensorFlow, on real files."""
import warnings

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from conveyor.framework.tracing import TracingWarning  # noqa: E402


def _np(v):
    return v.numpy() if hasattr(v, "numpy") and not isinstance(v, np.ndarray) else np.asarray(v)


def _same(a, b):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    assert a.tolist() == b.tolist()


def test_compat_v1_readers(tmp_path):
    records = [b"first", b"", b"third record"]
    with tf.io.TFRecordWriter(str(tmp_path / "a.tfrecord")) as w:
        for r in records:
            w.write(r)
    (tmp_path / "a.txt").write_bytes(b"one\ntwo\n\nfour")
    (tmp_path / "a.bin").write_bytes(bytes(range(24)))
    cases = [("TFRecordDataset", [str(tmp_path / "a.tfrecord")], {}),
             ("TextLineDataset", [str(tmp_path / "a.txt")], {}),
             ("FixedLengthRecordDataset", [str(tmp_path / "a.bin")], {"record_bytes": 8})]
    for cls, files, kw in cases:
        ours = list(getattr(cv.compat.v1.data, cls)(files, **kw).as_numpy_iterator())
        theirs = list(getattr(tf.compat.v1.data, cls)(files, **kw).as_numpy_iterator())
        assert ours == theirs and ours


def test_unbatch_and_get_structure():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    ours = cv.data.Dataset.from_tensors(x).apply(cv.data.experimental.unbatch())
    theirs = tf.data.Dataset.from_tensors(x).apply(tf.data.experimental.unbatch())
    assert [v.tolist() for v in ours.as_numpy_iterator()] == \
        [v.tolist() for v in theirs.as_numpy_iterator()]
    assert repr(cv.data.experimental.get_structure(ours)) == \
        repr(tf.data.experimental.get_structure(theirs))
    # An iterator's structure is its dataset's, for iter(dataset) and TF1's iterators.
    for ds_ours, ds_theirs in ((ours, theirs), (ours.batch(2), theirs.batch(2))):
        assert repr(cv.data.experimental.get_structure(iter(ds_ours))) == \
            repr(tf.data.experimental.get_structure(iter(ds_theirs)))
        # ...and its own element_spec, while it runs and after its end.
        it_ours, it_theirs = iter(ds_ours), iter(ds_theirs)
        assert repr(it_ours.element_spec) == repr(it_theirs.element_spec)
        list(it_ours)
        assert repr(it_ours.element_spec) == repr(it_theirs.element_spec)
    it = cv.compat.v1.data.make_one_shot_iterator(ours)
    assert repr(cv.data.experimental.get_structure(it)) == repr(ours.element_spec)
    with pytest.raises(TypeError, match="dataset_or_iterator"):
        cv.data.experimental.get_structure(3)
    with pytest.raises(TypeError, match="dataset_or_iterator"):
        cv.data.experimental.get_structure(iter([1, 2]))


def test_get_structure_does_not_keep_iterators_alive():
    """The iterator -> dataset entry goes with the iterator (weak keys)."""
    import gc
    import weakref
    spec = (cv.TensorSpec([], cv.int64), {"s": cv.TensorSpec([], cv.string)})
    ds = cv.data.Dataset.range(3).map(lambda i: (i, {"s": cv.strings.as_string(i)}))
    it = iter(ds)
    assert cv.data.experimental.get_structure(it) == spec
    assert next(it)[0] == 0
    ref = weakref.ref(it)
    del it
    gc.collect()
    assert ref() is None


TEXTS = np.array([b"hello", b"", b"\xff\x00ab", b"abcd", b"x" * 100], object)


@pytest.mark.parametrize("pad", [False, True])
def test_base64_round_trip(pad):
    _same(cv.io.encode_base64(TEXTS, pad=pad), tf.io.encode_base64(TEXTS, pad=pad))
    encoded = _np(tf.io.encode_base64(TEXTS, pad=pad))
    _same(cv.io.decode_base64(encoded), tf.io.decode_base64(encoded))

    def fn(t, x):
        e = t.io.encode_base64(x, pad=pad)
        return e, t.io.decode_base64(e)
    ds = cv.data.Dataset.from_tensor_slices(TEXTS).map(lambda x: fn(cv, x))
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracingWarning)
        assert "mode=native" in repr(ds)
        ours = list(ds.as_numpy_iterator())
    theirs = list(tf.data.Dataset.from_tensor_slices(TEXTS).map(lambda x: fn(tf, x))
                  .as_numpy_iterator())
    assert ours == theirs


@pytest.mark.parametrize("text", [b"YQ", b"YQ==", b"YWI", b"YWI=", b"", b"a", b"ab+c", b"ab=c",
                                  b"YQ=", b"YQ===", b"Y Q=", b"YWJj\n"])
def test_decode_base64_accepts_and_refuses_as_tensorflow(text):
    value = np.array([text], object)
    try:
        want = _np(tf.io.decode_base64(value)).tolist()
    except tf.errors.InvalidArgumentError:
        with pytest.raises(cv.errors.InvalidArgumentError):
            cv.io.decode_base64(value)
        return
    assert _np(cv.io.decode_base64(value)).tolist() == want


def test_matching_files(tmp_path):
    for name in ("b.txt", "a.txt", "c.csv", ".hidden.txt"):
        (tmp_path / name).write_bytes(b"x")
    for pattern in (str(tmp_path / "*.txt"), [str(tmp_path / "*.csv"), str(tmp_path / "?.txt")],
                    str(tmp_path / "none*")):
        _same(cv.io.matching_files(pattern), tf.io.matching_files(pattern))
    with pytest.warns(TracingWarning, match="matching_files"):
        ds = cv.data.Dataset.from_tensors(str(tmp_path / "*.txt")).map(cv.io.matching_files)
    ours = list(ds.as_numpy_iterator())
    theirs = list(tf.data.Dataset.from_tensors(str(tmp_path / "*.txt"))
                  .map(tf.io.matching_files).as_numpy_iterator())
    assert [v.tolist() for v in ours] == [v.tolist() for v in theirs]


NGRAMS = [
    (2, {}),
    ([1, 3], {"separator": "_", "pad_values": ("<", ">")}),
    (3, {"pad_values": "#", "padding_width": 1}),
    (5, {"preserve_short_sequences": True}),
    (4, {}),
]


@pytest.mark.parametrize("width, kw", NGRAMS)
def test_ngrams(width, kw):
    words = np.array([[b"a", b"b", b"c"], [b"d", b"e", b"f"]], object)
    _same(cv.strings.ngrams(words, width, **kw), tf.strings.ngrams(words, width, **kw))
    _same(cv.strings.ngrams(words[0], width, **kw), tf.strings.ngrams(words[0], width, **kw))


def test_ngrams_in_a_map_runs_in_python_and_says_so():
    words = np.array([b"to", b"be", b"or", b"not"], object)
    with pytest.warns(TracingWarning, match="ngrams"):
        ds = cv.data.Dataset.from_tensors(words).map(lambda w: cv.strings.ngrams(w, 2))
    ours = list(ds.as_numpy_iterator())
    theirs = list(tf.data.Dataset.from_tensors(words).map(lambda w: tf.strings.ngrams(w, 2))
                  .as_numpy_iterator())
    assert [v.tolist() for v in ours] == [v.tolist() for v in theirs]
