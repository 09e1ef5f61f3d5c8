"""tf.io.parse_single_sequence_example and tf.io.parse_sequence_example against
TensorFlow: context and feature lists of every dtype, VarLen and
FixedLenSequence features, missing lists, batches with padding and lengths,
key order, error types and texts, and inside Dataset.map (which runs in
Python: the feature lists are decoded there)."""
import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from conveyor.framework.tracing import TracingWarning  # noqa: E402


def record(i):
    frames = [tf.train.Feature(float_list=tf.train.FloatList(value=[t * 0.5, t + i]))
              for t in range(i + 1)]
    words = [tf.train.Feature(bytes_list=tf.train.BytesList(value=[f"w{t}".encode()] * t))
             for t in range(i + 2)]
    ids = [tf.train.Feature(int64_list=tf.train.Int64List(value=[t * 7 - i]))
           for t in range(3 - i % 3)]
    return tf.train.SequenceExample(
        context=tf.train.Features(feature={
            "length": tf.train.Feature(int64_list=tf.train.Int64List(value=[i + 1])),
            "label": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"x" * i]))}),
        feature_lists=tf.train.FeatureLists(feature_list={
            "frames": tf.train.FeatureList(feature=frames),
            "words": tf.train.FeatureList(feature=words),
            "ids": tf.train.FeatureList(feature=ids)})).SerializeToString()


def features(m):
    context = {"length": m.io.FixedLenFeature([], m.int64),
               "label": m.io.FixedLenFeature([], m.string),
               "extra": m.io.VarLenFeature(m.int64)}
    sequence = {"words": m.io.VarLenFeature(m.string),
                "frames": m.io.FixedLenSequenceFeature([2], m.float32),
                "ids": m.io.FixedLenSequenceFeature([], m.int64),
                "missing": m.io.FixedLenSequenceFeature([3], m.float32, allow_missing=True),
                "absent": m.io.VarLenFeature(m.float32)}
    return context, sequence


def as_numpy(x):
    if isinstance(x, dict):
        return {k: as_numpy(v) for k, v in x.items()}
    if hasattr(x, "dense_shape"):
        return tuple(as_numpy(v) for v in (x.indices, x.values, x.dense_shape))
    if isinstance(x, (tuple, list)):
        return type(x)(as_numpy(v) for v in x)
    return np.asarray(x.numpy() if hasattr(x, "numpy") else x)


def assert_same(got, want):
    got, want = as_numpy(got), as_numpy(want)
    if isinstance(want, dict):
        assert list(got) == list(want)  # TensorFlow's key order
        for k in want:
            assert_same(got[k], want[k])
    elif isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
    else:
        assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("i", [0, 1, 2, 3])
def test_single_matches_tf(i):
    want = tf.io.parse_single_sequence_example(record(i), *features(tf))
    got = cv.io.parse_single_sequence_example(record(i), *features(cv))
    assert_same(got, want)


def test_batched_matches_tf():
    batch = [record(i) for i in (2, 0, 3, 1)]
    want = tf.io.parse_sequence_example(batch, *features(tf))
    got = cv.io.parse_sequence_example(batch, *features(cv))
    assert_same(got, want)


def test_only_sequence_or_only_context():
    want = tf.io.parse_single_sequence_example(record(1), None, features(tf)[1])
    assert_same(cv.io.parse_single_sequence_example(record(1), None, features(cv)[1]), want)
    want = tf.io.parse_single_sequence_example(record(1), features(tf)[0])
    assert_same(cv.io.parse_single_sequence_example(record(1), features(cv)[0]), want)


def test_in_a_map_runs_in_python_with_tf_values():
    def pipeline(m):
        def parse(s):
            context, lists = m.io.parse_single_sequence_example(s, *features(m))
            return context["length"], lists["frames"], m.sparse.to_dense(lists["words"])
        return m.data.Dataset.from_tensor_slices([record(i) for i in range(4)]).map(parse)

    want = [as_numpy(x) for x in pipeline(tf)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracingWarning)
        got = [as_numpy(x) for x in pipeline(cv)]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_same(g, w)


ERRORS = [
    ({"nope": "FixedLenSequenceFeature([], int64)"}, "Feature list 'nope' is required"),
    ({"frames": "FixedLenSequenceFeature([3], float32)"}, "unexpected number of values"),
    ({"frames": "FixedLenSequenceFeature([2], int64)"}, "Data types don't match"),
]


@pytest.mark.parametrize("spec,text", ERRORS, ids=[t for _, t in ERRORS])
def test_errors_match_tf(spec, text):
    def make(m):
        out = {}
        for key, src in spec.items():
            shape, dtype = src[len("FixedLenSequenceFeature("):-1].split("], ")
            out[key] = m.io.FixedLenSequenceFeature(
                [int(d) for d in shape[1:].split(",") if d], getattr(m, dtype))
        return out

    with pytest.raises(tf.errors.InvalidArgumentError) as tf_err:
        tf.io.parse_single_sequence_example(record(1), None, make(tf))
    with pytest.raises(cv.errors.InvalidArgumentError) as cv_err:
        cv.io.parse_single_sequence_example(record(1), None, make(cv))
    assert text in tf_err.value.message
    assert cv_err.value.message in tf_err.value.message


def test_a_sequence_default_value_is_refused_as_in_tf():
    for m in (tf, cv):
        with pytest.raises(ValueError, match=r"dense_defaults\[ids\] must be None"):
            m.io.parse_single_sequence_example(record(1), None, {
                "ids": m.io.FixedLenSequenceFeature([], m.int64, default_value=-1)})


def test_not_a_sequence_example_is_invalid_argument():
    with pytest.raises(cv.errors.InvalidArgumentError):
        cv.io.parse_single_sequence_example(b"\xff\xff\xff", None, features(cv)[1])
