"""filter, zip, concatenate, enumerate and shard against real TensorFlow: values,
structure, element_spec, cardinality, errors inside the pipeline (where iteration
goes on) and argument errors. unbatch, rebatch and padded_batch: test_tf_batching.py."""
import collections
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from test_tf_equivalence import (D, assert_both_raise, assert_same_error_type,  # noqa: E402
                                 assert_same_outcomes, cardinality, check, outcomes, raised)

pytestmark = pytest.mark.filterwarnings("ignore:.*runs in Python per element")  # on purpose

Point = collections.namedtuple("Point", ["x", "y"])
NAN = np.float32("nan")


def failing(mod, n, bad):
    """range(n) whose elements listed in `bad` raise InvalidArgumentError."""
    if mod is tf:
        bad_t = tf.constant(bad, tf.int64)

        def fn(x):
            flag = tf.reduce_any(tf.equal(x, bad_t))
            checked = tf.debugging.check_numerics(tf.where(flag, NAN, 0.0), "boom")
            return x + tf.cast(checked, tf.int64)
    else:
        def fn(x):
            if int(x) in bad:
                raise cv.errors.InvalidArgumentError(f"boom at {int(x)}")
            return x
    return D(mod).range(n).map(fn)


def fill(mod):
    """x -> a vector of x copies of x (int64)."""
    if mod is tf:
        return lambda x: tf.fill([x], x)
    return lambda x: np.full([int(x)], x)


def generated(mod, values, spec):
    """from_generator over `values` with the signature spec(mod)."""
    return D(mod).from_generator(lambda: iter(values), output_signature=spec(mod))


def same_outcomes(build, limit=60):
    t = outcomes(build(tf).as_numpy_iterator(), limit)
    c = outcomes(iter(build(cv)), limit)
    assert_same_outcomes(t, c)
    return c


def strings(mod, values):
    return D(mod).from_tensor_slices(np.array(values, dtype=object))


# -- filter ----------------------------------------------------------------------


def test_filter_range():
    check(lambda mod: D(mod).range(20).filter(lambda x: x % 3 == 0))


def test_filter_tuple_elements_unpacked():
    check(lambda mod: D(mod).from_tensor_slices(
        (np.arange(6), np.array([b"a", b"bb", b"c", b"dd", b"e", b"ff"]))).filter(
        lambda a, b: a % 2 == 1))


def test_filter_dict_and_namedtuple_passed_whole():
    check(lambda mod: D(mod).from_tensor_slices(
        {"a": np.arange(5), "b": np.arange(5.0)}).filter(lambda d: d["a"] > 1))
    check(lambda mod: D(mod).from_tensor_slices(
        Point(np.arange(5), np.arange(5) * 10)).filter(lambda p: p.y < 30))


def test_filter_strings():
    check(lambda mod: strings(mod, [b"a", b"bb", b"", b"ccc"]).filter(
        (lambda s: tf.strings.length(s) > 1) if mod is tf else (lambda s: len(s) > 1)))


def test_filter_vectors_and_nothing_kept():
    check(lambda mod: D(mod).range(10).batch(3).filter(
        (lambda v: tf.reduce_sum(v) > 5) if mod is tf else (lambda v: v.sum() > 5)))
    check(lambda mod: D(mod).range(5).filter(lambda x: x > 100))


def test_filter_python_constant_predicate():
    check(lambda mod: D(mod).range(4).filter(lambda x: True))


def test_filter_cardinality_is_unknown():
    for build in (lambda mod: D(mod).range(5).filter(lambda x: True),
                  lambda mod: D(mod).range(5).repeat().filter(lambda x: True),
                  lambda mod: D(mod).range(0).filter(lambda x: True)):
        assert cardinality(build(cv)) == cardinality(build(tf)) == -2


def test_filter_error_in_predicate_then_goes_on():
    def build(mod):
        if mod is tf:
            def pred(x):
                bad = tf.debugging.check_numerics(tf.where(x == 2, np.float32("nan"), 0.0), "boom")
                return x % 2 == tf.cast(bad, tf.int64)
        else:
            def pred(x):
                if x == 2:
                    raise cv.errors.InvalidArgumentError("boom")
                return x % 2 == 0
        return D(mod).range(7).filter(pred)
    c = same_outcomes(build)
    assert [v for k, v in c if k == "ok"] == [0, 4, 6]


def test_filter_error_in_input_then_goes_on():
    same_outcomes(lambda mod: failing(mod, 8, [1, 2, 6]).filter(lambda x: x % 2 == 0))


def test_filter_predicate_not_a_scalar_bool():
    # TensorFlow sees the traced return type when the dataset is built; a Python
    # predicate's result is seen per element: InvalidArgumentError, a ValueError.
    for t_pred, c_pred in [(lambda x: x, lambda x: x),
                           (lambda x: tf.fill([1], True), lambda x: np.array([True]))]:
        t_exc = raised(lambda: D(tf).range(3).filter(t_pred))
        c_exc = raised(lambda: list(D(cv).range(3).filter(c_pred)))
        assert isinstance(t_exc, ValueError) and isinstance(c_exc, ValueError)
        assert isinstance(c_exc, cv.errors.InvalidArgumentError) and "filter" in str(c_exc)


def test_filter_traced_predicate_of_wrong_type_raises_when_built():
    assert_both_raise(lambda mod: D(mod).range(3).filter(lambda x: x % 2))
    assert_both_raise(lambda mod: D(mod).range(3).filter(lambda x: x * 2))


def test_filter_not_callable():
    assert_both_raise(lambda mod: D(mod).range(3).filter(3))


# -- zip ---------------------------------------------------------------------------


def test_zip_tuple_varargs_and_single():
    check(lambda mod: D(mod).zip((D(mod).range(3), D(mod).range(10, 15))))
    check(lambda mod: D(mod).zip(D(mod).range(3), D(mod).range(10, 15), D(mod).range(2)))
    check(lambda mod: D(mod).zip(D(mod).range(3)))
    check(lambda mod: D(mod).zip(datasets=(D(mod).range(3), D(mod).range(4))))
    # A static method: the instance it is called on is not an input.
    check(lambda mod: D(mod).range(100).zip(D(mod).range(2), D(mod).range(3)))


def test_zip_nested_structures_and_strings():
    check(lambda mod: D(mod).zip({
        "a": D(mod).range(4),
        "b": (strings(mod, [b"x", b"yy", b"zzz"]), D(mod).from_tensor_slices(np.eye(3))),
        "p": D(mod).zip(Point(D(mod).range(5), strings(mod, [b"p", b"q", b"r", b"s"]))),
    }))


def test_zip_of_many_datasets():
    check(lambda mod: D(mod).zip(tuple(D(mod).range(i, i + 10 - i) for i in range(9))))


def test_zip_cardinality():
    cases = [
        lambda mod: D(mod).zip(D(mod).range(3), D(mod).range(5)),
        lambda mod: D(mod).zip(D(mod).range(3).repeat(), D(mod).range(5)),
        lambda mod: D(mod).zip(D(mod).range(3).repeat(), D(mod).range(3).repeat()),
        lambda mod: D(mod).zip(D(mod).range(3).repeat(), D(mod).range(3).filter(lambda x: True)),
        lambda mod: D(mod).zip(D(mod).range(0), D(mod).range(3).filter(lambda x: True)),
    ]
    for build in cases:
        assert cardinality(build(cv)) == cardinality(build(tf))


@pytest.mark.parametrize("first_bad, second, bad", [
    (5, 5, [1]), (3, 2, [2]), (3, 3, [2]), (6, 6, [0, 3, 5])])
def test_zip_error_advances_every_input(first_bad, second, bad):
    same_outcomes(lambda mod: D(mod).zip(failing(mod, first_bad, bad), D(mod).range(second)))
    same_outcomes(lambda mod: D(mod).zip(D(mod).range(second), failing(mod, first_bad, bad)))


def test_zip_bad_arguments():
    assert_both_raise(lambda mod: D(mod).zip())
    assert_both_raise(lambda mod: D(mod).zip([D(mod).range(2), D(mod).range(2)]))
    assert_both_raise(lambda mod: D(mod).zip((D(mod).range(2), 3)))
    assert_both_raise(lambda mod: D(mod).zip(D(mod).range(2), datasets=D(mod).range(2)))
    assert_both_raise(lambda mod: D(mod).zip(()))
    assert_both_raise(lambda mod: D(mod).zip({}))


# -- concatenate -------------------------------------------------------------------


def test_concatenate_values_and_structures():
    check(lambda mod: D(mod).range(3).concatenate(D(mod).range(10, 12)))
    check(lambda mod: D(mod).from_tensor_slices({"a": np.arange(2), "s": np.array([b"x", b"y"])})
          .concatenate(D(mod).from_tensor_slices({"a": np.arange(3), "s": np.array([b"", b"z", b"w"])})))
    check(lambda mod: D(mod).range(2).concatenate(D(mod).range(3)).concatenate(D(mod).range(1)))


def test_concatenate_relaxes_shapes():
    check(lambda mod: D(mod).from_tensors(np.arange(3)).concatenate(D(mod).from_tensors(np.arange(4))))
    check(lambda mod: D(mod).from_tensors(np.arange(3)).concatenate(
        D(mod).from_tensors(np.zeros((1, 1), np.int64))))
    check(lambda mod: D(mod).range(4).batch(3, drop_remainder=True).concatenate(
        D(mod).range(4).batch(2, drop_remainder=True)))


def test_concatenate_cardinality():
    u = lambda mod: D(mod).range(3).filter(lambda x: True)  # noqa: E731
    inf = lambda mod: D(mod).range(3).repeat()  # noqa: E731
    fin = lambda mod: D(mod).range(4)  # noqa: E731
    for a in (u, inf, fin):
        for b in (u, inf, fin):
            assert cardinality(a(cv).concatenate(b(cv))) == cardinality(a(tf).concatenate(b(tf)))


def test_concatenate_errors_inside_go_on():
    same_outcomes(lambda mod: failing(mod, 4, [1, 3]).concatenate(failing(mod, 3, [0])))


def test_concatenate_incompatible_elements():
    assert_both_raise(lambda mod: D(mod).range(3).concatenate(strings(mod, [b"a"])))
    assert_both_raise(lambda mod: D(mod).range(3).concatenate(
        D(mod).zip(D(mod).range(2), D(mod).range(2))))
    assert_both_raise(lambda mod: D(mod).from_tensors({"a": 1}).concatenate(D(mod).from_tensors({"b": 1})))
    assert_both_raise(lambda mod: D(mod).from_tensors(Point(1, 2)).concatenate(D(mod).from_tensors((1, 2))))
    assert_both_raise(lambda mod: D(mod).from_tensors(1).concatenate(D(mod).range(1)))


# -- enumerate ---------------------------------------------------------------------


def test_enumerate():
    check(lambda mod: strings(mod, [b"a", b"b", b"c"]).enumerate())
    check(lambda mod: D(mod).from_tensor_slices({"v": np.arange(3.0)}).enumerate(start=5))
    check(lambda mod: D(mod).range(3).enumerate(-2))


def test_enumerate_cardinality():
    for build in (lambda mod: D(mod).range(3).enumerate(),
                  lambda mod: D(mod).range(5, 2 ** 63 - 1),  # tf.data: infinite
                  lambda mod: D(mod).range(3).repeat().enumerate(5),
                  lambda mod: D(mod).range(3).filter(lambda x: True).enumerate()):
        assert cardinality(build(cv)) == cardinality(build(tf))


def test_enumerate_bad_start():
    assert_both_raise(lambda mod: D(mod).range(2).enumerate(1.5))


# -- shard -------------------------------------------------------------------------


@pytest.mark.parametrize("n, k, i", [(10, 3, 0), (10, 3, 1), (10, 3, 2), (0, 3, 0), (2, 3, 2),
                                     (7, 1, 0), (9, 9, 8), (5, 8, 4)])
def test_shard(n, k, i):
    check(lambda mod: D(mod).range(n).shard(k, i))


def test_shard_structures_and_numpy_arguments():
    check(lambda mod: D(mod).from_tensor_slices(
        (np.arange(7), np.array([b"a", b"b", b"c", b"d", b"e", b"f", b"g"]))).shard(np.int32(2), np.int64(1)))
    check(lambda mod: D(mod).range(4).shard(True, False))


def test_shard_cardinality_of_infinite_and_unknown():
    for build in (lambda mod: D(mod).range(3).repeat().shard(2, 0),
                  lambda mod: D(mod).range(9).filter(lambda x: True).shard(2, 1)):
        assert cardinality(build(cv)) == cardinality(build(tf))


@pytest.mark.parametrize("n, k, i, bad", [(10, 3, 2, [1]), (10, 3, 2, [2]), (10, 3, 0, [1, 4, 5]),
                                          (12, 4, 3, [0, 1, 2, 3, 9])])
def test_shard_errors_follow_tf_positions(n, k, i, bad):
    same_outcomes(lambda mod: failing(mod, n, bad).shard(k, i))


def test_shard_bad_arguments():
    for args in [(0, 0), (3, 3), (3, -1), (-2, 0), (2.0, 0), ("2", 0), (2, 0.5)]:
        assert_both_raise(lambda mod: D(mod).range(3).shard(*args))


def test_shard_hint_builds_but_does_not_iterate():
    t_ds, c_ds = D(tf).range(4).shard(-1, 0), D(cv).range(4).shard(cv.data.experimental.SHARD_HINT, 0)
    assert cardinality(c_ds) == cardinality(t_ds)
    assert_same_error_type(raised(lambda: list(t_ds)), raised(lambda: list(c_ds)))
