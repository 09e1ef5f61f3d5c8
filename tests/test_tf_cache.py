"""Dataset.cache against real TensorFlow: the same elements on every pass, in memory
and in files, for nested structures and strings, partial passes, iterators started
while the cache fills, errors, and files reused by a changed pipeline."""
import collections
import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from test_tf_equivalence import assert_same_elements, assert_same_spec, cardinality  # noqa: E402

Point = collections.namedtuple("Point", ["x", "y"])


def tf_list(ds):
    return list(ds.as_numpy_iterator())


def cv_list(ds):
    return list(ds)


def nested(mod):
    n = 9
    return mod.data.Dataset.from_tensor_slices({
        "image": np.arange(n * 6, dtype=np.uint8).reshape(n, 2, 3),
        "text": np.array([b"", b"a", b"bb", b"\x00\xff", b"cccc", b"", b"long" * 50, b"x", b"yz"],
                         dtype=object),
        "pair": (np.arange(n, dtype=np.float16), np.arange(n) % 2 == 0),
        "point": Point(np.arange(n, dtype=np.int64), np.linspace(0, 1, n)),
    })


PIPELINES = {
    "range": lambda mod: mod.data.Dataset.range(12),
    "nested": nested,
    "batched_remainder": lambda mod: nested(mod).batch(4),
    "strings": lambda mod: mod.data.Dataset.from_tensor_slices(
        np.array([[b"a", b""], [b"ccc", b"dd"], [b"", b""]], dtype=object)),
    "skip_take": lambda mod: mod.data.Dataset.range(30).skip(3).take(20),
    "empty": lambda mod: mod.data.Dataset.range(0),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
@pytest.mark.parametrize("in_file", [False, True])
def test_cache_passes_equal_tf(name, in_file, tmp_path):
    build = PIPELINES[name]
    if in_file:
        tds, cds = build(tf).cache(str(tmp_path / "tf")), build(cv).cache(str(tmp_path / "cv"))
    else:
        tds, cds = build(tf).cache(), build(cv).cache()
    assert_same_spec(tds, cds)
    assert cardinality(cds) == cardinality(tds)
    for _ in range(2):  # the filling pass, then a replay
        assert_same_elements(tf_list(tds), cv_list(cds))
    assert_same_elements(tf_list(tds.repeat(2)), cv_list(cds.repeat(2)))
    if in_file:  # a new dataset over the committed file
        assert_same_elements(tf_list(build(tf).cache(str(tmp_path / "tf"))),
                             cv_list(build(cv).cache(str(tmp_path / "cv"))))


@pytest.mark.parametrize("in_file", [False, True])
def test_shuffle_after_cache_equals_tf(in_file, tmp_path):
    def build(mod, name):
        ds = nested(mod)
        ds = ds.cache(str(tmp_path / name)) if in_file else ds.cache()
        return ds.shuffle(5, seed=3).repeat(3)
    assert_same_elements(tf_list(build(tf, "tf")), cv_list(build(cv, "cv")))


def test_partial_pass_then_full_pass_equals_tf(tmp_path):
    for name in ("", "f"):
        tds = tf.data.Dataset.range(10).cache(str(tmp_path / ("tf" + name)) if name else "")
        cds = cv.data.Dataset.range(10).cache(str(tmp_path / ("cv" + name)) if name else "")
        assert_same_elements(tf_list(tds.take(3)), cv_list(cds.take(3)))
        assert_same_elements(tf_list(tds), cv_list(cds))
        assert_same_elements(tf_list(tds.take(3)), cv_list(cds.take(3)))


def test_iterators_started_while_filling_equal_tf():
    def run(mod, to_list):
        ds = mod.data.Dataset.range(5).map(lambda x: x * 10).cache()
        it1 = iter(ds)
        out = [int(next(it1))]
        out += [int(x) for x in ds]
        out += [int(x) for x in it1]
        out += [int(x) for x in to_list(ds)]
        return out
    assert run(cv, cv_list) == run(tf, tf_list)


def test_errors_are_passed_on_and_not_cached_like_tf():
    values = np.array([1.0, 2.0, 0.0, 4.0], np.float32)
    tds = tf.data.Dataset.from_tensor_slices(values).map(
        lambda x: tf.debugging.check_numerics(1 / x, "boom")).cache().ignore_errors()

    def inverse(x):
        if x == 0:
            raise ZeroDivisionError("boom")
        return np.float32(1) / x
    cds = cv.data.Dataset.from_tensor_slices(values).map(
        lambda x: cv.numpy_function(inverse, [x], cv.float32)).cache().ignore_errors()
    for _ in range(2):
        assert_same_elements(tf_list(tds), cv_list(cds))


def test_file_is_reused_when_the_pipeline_changes_like_tf(tmp_path):
    for mod, name in ((tf, "tf"), (cv, "cv")):
        f = str(tmp_path / name)
        first = [int(x) for x in mod.data.Dataset.range(5).cache(f)]
        second = [int(x) for x in mod.data.Dataset.range(10).cache(f)]
        assert (first, second) == (list(range(5)), list(range(5)))


def test_cardinality_equals_tf():
    for build in (lambda m: m.data.Dataset.range(7), lambda m: m.data.Dataset.range(3).repeat(),
                  lambda m: m.data.Dataset.range(9).batch(2)):
        assert cardinality(build(cv).cache()) == cardinality(build(tf).cache())
