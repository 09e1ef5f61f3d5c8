"""unbatch, rebatch and padded_batch against real TensorFlow: values, structure,
element_spec, cardinality, errors inside the pipeline (where iteration goes on)
and argument errors."""
import collections
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from test_tf_equivalence import D, assert_both_raise, cardinality, check, spec_form  # noqa: E402
from test_tf_transformations import failing, fill, generated, same_outcomes, strings  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*runs in Python per element")  # on purpose

Point = collections.namedtuple("Point", ["x", "y"])


# -- unbatch -----------------------------------------------------------------------


def test_unbatch():
    check(lambda mod: D(mod).range(10).batch(3).unbatch())
    check(lambda mod: D(mod).range(9).batch(3, drop_remainder=True).unbatch())
    check(lambda mod: D(mod).from_tensors(np.arange(24.0).reshape(4, 3, 2)).unbatch())


def test_unbatch_structures_and_strings():
    check(lambda mod: D(mod).from_tensor_slices({
        "s": np.array([[b"a", b"bb"], [b"", b"c"], [b"d", b"e"]]),
        "p": Point(np.arange(6).reshape(3, 2), np.ones((3, 2, 2), np.float32))}).unbatch())
    check(lambda mod: D(mod).from_tensors((np.arange(3), np.array([b"x", b"y", b"z"]))).unbatch())


def test_unbatch_cardinality():
    for build in (lambda mod: D(mod).range(10).batch(3).unbatch(),
                  lambda mod: D(mod).range(9).batch(3, drop_remainder=True).unbatch(),
                  lambda mod: D(mod).range(9).batch(3, drop_remainder=True).repeat().unbatch(),
                  lambda mod: D(mod).range(10).batch(3).repeat().unbatch(),
                  lambda mod: D(mod).range(0).batch(3, drop_remainder=True).unbatch(),
                  lambda mod: D(mod).from_tensors(np.zeros((4, 2))).unbatch(),
                  lambda mod: D(mod).from_tensors(np.zeros((0, 2))).unbatch()):
        assert cardinality(build(cv)) == cardinality(build(tf))


def test_unbatch_static_errors():
    assert_both_raise(lambda mod: D(mod).range(3).unbatch())
    assert_both_raise(lambda mod: D(mod).from_tensors((np.zeros(3), np.zeros(2))).unbatch())


def test_unbatch_runtime_errors_then_goes_on():
    pair = lambda mod: (mod.TensorSpec([None], mod.float64), mod.TensorSpec([None], mod.float64))  # noqa: E731
    values = [(np.zeros(2), np.ones(2)), (np.zeros(2), np.zeros(3)), (np.zeros(0), np.zeros(0)),
              (np.full(1, 7.0), np.full(1, 8.0))]
    same_outcomes(lambda mod: generated(mod, values, pair).unbatch())
    values = [np.zeros(2), np.float64(3), np.ones(1)]
    same_outcomes(lambda mod: generated(mod, values, lambda m: m.TensorSpec(None, m.float64)).unbatch())
    same_outcomes(lambda mod: failing(mod, 10, [1, 5]).batch(2).unbatch())


# -- rebatch -----------------------------------------------------------------------


@pytest.mark.parametrize("n, b, sizes, drop", [
    (6, 2, 3, False), (7, 4, 3, False), (7, 2, 3, True), (8, 4, [2, 1, 1], False),
    (9, 4, [2, 3], True), (9, 4, [2, 3], False), (5, 2, [2, 0], False), (12, 5, 4, False),
    (12, 4, 2, True), (3, 1, 5, False)])
def test_rebatch(n, b, sizes, drop):
    check(lambda mod: D(mod).range(n).batch(b).rebatch(sizes, drop_remainder=drop))


def test_rebatch_static_batch_dimension():
    for build in (lambda mod: D(mod).range(8).batch(4, True).rebatch(2),
                  lambda mod: D(mod).range(8).batch(4, True).rebatch(3),
                  lambda mod: D(mod).range(8).batch(4).rebatch(2, drop_remainder=True),
                  lambda mod: D(mod).range(8).batch(4, True).rebatch([2, 2]),
                  lambda mod: D(mod).range(8).batch(4, True).rebatch([2, 1])):
        assert spec_form(build(cv).element_spec) == spec_form(build(tf).element_spec)


def test_rebatch_structures_and_strings():
    words = np.array([b"a", b"bb", b"ccc", b"d", b"e"])
    check(lambda mod: D(mod).from_tensor_slices(words).batch(2).rebatch(3))
    check(lambda mod: D(mod).from_tensor_slices(
        {"i": np.arange(5), "w": words, "m": np.arange(20.0).reshape(5, 2, 2)}).batch(2).rebatch([3, 1]))


def test_rebatch_zero_size_batches():
    check(lambda mod: D(mod).range(5).batch(2).rebatch(0).take(4), card=False)
    check(lambda mod: D(mod).from_tensor_slices(np.zeros((4, 3))).batch(2).rebatch([0, 3]), card=False)


def test_rebatch_cardinality_is_unknown():
    for build in (lambda mod: D(mod).range(12).batch(4, True).rebatch(2),
                  lambda mod: D(mod).range(12).batch(4, True).repeat().rebatch(2)):
        assert cardinality(build(cv)) == cardinality(build(tf)) == -2


def test_rebatch_errors_then_goes_on():
    same_outcomes(lambda mod: failing(mod, 10, [1, 5]).batch(2).rebatch(3))
    matrix = lambda m: m.TensorSpec([None, None], m.float64)  # noqa: E731
    values = [np.zeros((2, 3)), np.ones((2, 4)), np.ones((0, 4)), np.ones((3, 4))]
    same_outcomes(lambda mod: generated(mod, values, matrix).rebatch(3))
    pair = lambda m: (m.TensorSpec([None], m.float64), m.TensorSpec([None], m.float64))  # noqa: E731
    values = [(np.zeros(2), np.zeros(3)), (np.ones(2), np.ones(2))]
    same_outcomes(lambda mod: generated(mod, values, pair).rebatch(2))


def test_rebatch_bad_arguments():
    assert_both_raise(lambda mod: D(mod).range(5).batch(2).rebatch([[1]]))
    assert_both_raise(lambda mod: D(mod).range(5).rebatch(2))
    assert_both_raise(lambda mod: D(mod).range(5).rebatch(2, drop_remainder=True))
    assert_both_raise(lambda mod: D(mod).range(5).batch(2).rebatch(2.5))


# -- padded_batch ------------------------------------------------------------------


def vectors(mod, n=5):
    return D(mod).range(1, n).map(fill(mod))


def test_padded_batch_docs_examples():
    check(lambda mod: vectors(mod).padded_batch(2))
    check(lambda mod: vectors(mod).padded_batch(2, padded_shapes=5))
    check(lambda mod: vectors(mod).padded_batch(2, padded_shapes=[5], padding_values=np.int64(-1)))
    check(lambda mod: D(mod).zip(vectors(mod), D(mod).range(4)).padded_batch(
        3, padded_shapes=([None], []), padding_values=(np.int64(-1), np.int64(100))))


def test_padded_batch_shapes_forms():
    check(lambda mod: vectors(mod).padded_batch(2, padded_shapes=mod.TensorShape([6])))
    check(lambda mod: vectors(mod).padded_batch(2, padded_shapes=[-1]))
    check(lambda mod: vectors(mod).padded_batch(2, padded_shapes=np.array([7])))
    check(lambda mod: vectors(mod).padded_batch(3, drop_remainder=True))


def test_padded_batch_padding_values_forms():
    pair = lambda mod: D(mod).zip(vectors(mod), D(mod).range(4))  # noqa: E731
    check(lambda mod: pair(mod).padded_batch(3, padding_values=np.int64(7)))
    check(lambda mod: pair(mod).padded_batch(3, padding_values=(None, np.int64(7))))
    check(lambda mod: D(mod).from_tensor_slices([[True], [False]]).padded_batch(2, padded_shapes=[3]))


def test_padded_batch_matrices():
    def mats(mod):
        if mod is tf:
            return D(mod).range(1, 4).map(lambda x: tf.fill([x, 4 - x], x))
        return D(mod).range(1, 4).map(lambda x: np.full([int(x), 4 - int(x)], x))
    check(lambda mod: mats(mod).padded_batch(3))
    check(lambda mod: mats(mod).padded_batch(2, padded_shapes=[3, None]))
    check(lambda mod: mats(mod).padded_batch(2, padded_shapes=[4, 5], padding_values=np.int64(-9)))


def test_padded_batch_strings_dicts_and_scalars():
    words = lambda m: m.TensorSpec([None], m.string)  # noqa: E731
    values = [np.array([b"a"], object), np.array([b"bb", b"c"], object), np.array([], object),
              np.array([b"d", b"", b"eee"], object)]
    check(lambda mod: generated(mod, values, words).padded_batch(2), card=False)
    check(lambda mod: generated(mod, values, words).padded_batch(
        3, padded_shapes=[4], padding_values="<pad>"), card=False)
    check(lambda mod: D(mod).zip({"a": vectors(mod), "b": strings(mod, [b"x", b"y", b"z", b"w"])})
          .padded_batch(3, drop_remainder=True))
    check(lambda mod: D(mod).range(5).padded_batch(2))


def test_padded_batch_zero_sized():
    def build(mod):
        if mod is tf:
            return D(mod).range(3).map(lambda x: tf.zeros([0, x]))
        return D(mod).range(3).map(lambda x: np.zeros([0, int(x)], np.float32))
    check(lambda mod: build(mod).padded_batch(2))


def test_padded_batch_cardinality():
    for build in (lambda mod: vectors(mod, 11).padded_batch(3),
                  lambda mod: vectors(mod, 11).padded_batch(3, drop_remainder=True),
                  lambda mod: vectors(mod).repeat().padded_batch(3)):
        assert cardinality(build(cv)) == cardinality(build(tf))


def test_padded_batch_runtime_errors():
    same_outcomes(lambda mod: vectors(mod).padded_batch(2, padded_shapes=[3]))
    anyrank = lambda m: m.TensorSpec(None, m.float64)  # noqa: E731
    same_outcomes(lambda mod: generated(mod, [np.zeros(2), np.zeros((2, 2)), np.ones(1)], anyrank)
                  .padded_batch(2, padded_shapes=[None]))
    same_outcomes(lambda mod: failing(mod, 10, [1, 5]).padded_batch(3))


def test_padded_batch_bad_arguments():
    # An input whose spec is known up front (a Python map's is known only once it
    # has run, so conveyor checks then: see docs/differences.md).
    def v(mod):
        return generated(mod, [np.full(k, k) for k in range(1, 5)],
                         lambda m: m.TensorSpec([None], m.int64))
    for build in [
            lambda mod: v(mod).padded_batch(2, padding_values=-1),           # int32 for int64
            lambda mod: v(mod).padded_batch(2, padding_values=-1.0),
            lambda mod: v(mod).padded_batch(2, padding_values=np.array([1, 2])),
            lambda mod: v(mod).padded_batch(0),
            lambda mod: v(mod).padded_batch(2, padded_shapes=[2, 2]),
            lambda mod: v(mod).padded_batch(2, padded_shapes=([2], [2])),
            lambda mod: v(mod).padded_batch(2, padded_shapes=[2.5]),
            lambda mod: v(mod).padded_batch(2, padded_shapes="a"),
            lambda mod: v(mod).padded_batch(2, padded_shapes=[-3]),
            lambda mod: strings(mod, [b"a"]).padded_batch(2, padding_values=0),
            lambda mod: D(mod).zip(v(mod), D(mod).range(4)).padded_batch(3, padding_values=(1, 2, 3)),
            lambda mod: generated(mod, [], lambda m: m.TensorSpec(None, m.float64)).padded_batch(2)]:
        assert_both_raise(build)
