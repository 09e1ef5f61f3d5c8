"""tf.TensorArray against TensorFlow's: values, dtypes, shapes and error
types eagerly, and inside Dataset.map in the shapes pipelines use (a Python
loop over range, unstack / stack) with no Python fallback; a loop over
tf.range falls back to Python and still gives TensorFlow's values."""
import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from conveyor.framework.tracing import TracingWarning  # noqa: E402


def outcome(fn, lib):
    try:
        r = fn(lib)
        r = r if isinstance(r, tuple) else (r,)
        return ("ok",) + tuple((np.asarray(x.numpy()).dtype.name if np.asarray(x.numpy()).dtype != object else "object",
                                np.asarray(x.numpy()).shape, np.asarray(x.numpy()).tolist()) for x in r)
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return (type(e).__name__,)


CASES = {
    "write_stack": lambda t: t.TensorArray(t.float32, size=3).write(0, [1., 2.]).write(
        2, [3., 4.]).stack(),
    "dynamic": lambda t: t.TensorArray(t.int32, size=0, dynamic_size=True).write(3, 7).stack(),
    "size": lambda t: t.TensorArray(t.int32, size=0, dynamic_size=True).write(3, 7).size(),
    "python_int_to_float": lambda t: t.TensorArray(t.float32, size=2).write(0, 1).stack(),
    "unstack_read": lambda t: t.TensorArray(t.float32, size=0, dynamic_size=True).unstack(
        [[1., 2.], [3., 4.]]).read(1),
    "unstack_size": lambda t: t.TensorArray(t.float32, size=0, dynamic_size=True).unstack(
        [[1., 2.], [3., 4.]]).size(),
    "gather": lambda t: t.TensorArray(t.float32, size=3).unstack([1., 2., 3.]).gather([2, 0]),
    "scatter": lambda t: t.TensorArray(t.float32, size=3).scatter([2, 0], [5., 6.]).stack(),
    "concat": lambda t: t.TensorArray(t.float32, size=2, infer_shape=False).write(
        0, [1., 2.]).write(1, [3.]).concat(),
    "strings": lambda t: t.TensorArray(t.string, size=2).write(0, "ab").write(1, b"c").stack(),
    "empty": lambda t: t.TensorArray(t.float32, size=0).stack(),
    "empty_element_shape": lambda t: t.TensorArray(t.float32, size=0,
                                                   element_shape=[2, 3]).stack(),
    "unwritten_element_shape": lambda t: t.TensorArray(t.float32, size=2,
                                                       element_shape=[3]).read(1),
    "rewrite": lambda t: t.TensorArray(t.float32, size=1).write(0, 1.).write(0, 2.).stack(),
    "no_clear": lambda t: (lambda a: (a.read(0), a.read(0)))(
        t.TensorArray(t.float32, size=1, clear_after_read=False).write(0, 1.)),
    # errors
    "write_out_of_range": lambda t: t.TensorArray(t.float32, size=2).write(2, 1.0),
    "write_negative": lambda t: t.TensorArray(t.float32, size=2).write(-1, 1.0),
    "read_out_of_range": lambda t: t.TensorArray(t.float32, size=2).write(0, 1.).read(5),
    "read_unwritten_unknown_shape": lambda t: t.TensorArray(t.float32, size=2).read(1),
    "read_twice": lambda t: (lambda a: (a.read(0), a.read(0)))(
        t.TensorArray(t.float32, size=1).write(0, 1.)),
    "shape_mismatch": lambda t: t.TensorArray(t.float32, size=2).write(0, [1., 2.]).write(
        1, [1.]),
    "element_shape_mismatch": lambda t: t.TensorArray(t.float32, size=2,
                                                      element_shape=[3]).write(0, [1., 2.]),
    "unstack_too_many": lambda t: t.TensorArray(t.float32, size=1).unstack([[1., 2.], [3., 4.]]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_matches_tensorflow(name):
    assert outcome(CASES[name], cv) == outcome(CASES[name], tf)


def test_properties():
    for lib in (tf, cv):
        a = lib.TensorArray(lib.float32, size=2, dynamic_size=True).write(0, [1., 2.])
        assert a.dtype == lib.float32 and a.dynamic_size
        assert a.element_shape.as_list() == [2]


def make_fn(lib):
    def fn(x):
        x = lib.cast(x, lib.float32)
        ta = lib.TensorArray(lib.float32, size=3, element_shape=[2])
        for i in range(3):
            ta = ta.write(i, lib.stack([x * i, x + i]))
        rows = lib.TensorArray(lib.float32, size=2).unstack(lib.reshape(lib.range(4.0) * x, [2, 2]))
        return ta.stack(), rows.read(1), rows.size()
    return fn


def test_traced_in_map_matches_tensorflow():
    want = list(tf.data.Dataset.range(4).map(make_fn(tf)).as_numpy_iterator())
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracingWarning)
        ds = cv.data.Dataset.range(4).map(make_fn(cv))
        got = list(ds.as_numpy_iterator())
    assert repr(ds.element_spec) == repr(tf.data.Dataset.range(4).map(make_fn(tf)).element_spec)
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            assert np.asarray(a).dtype == np.asarray(b).dtype
            assert np.asarray(a).tolist() == np.asarray(b).tolist()


def test_loop_over_tensor_range_falls_back_with_tensorflows_values():
    def fn(lib):
        @lib.function
        def inner(x):
            ta = lib.TensorArray(lib.float32, size=0, dynamic_size=True)
            for i in lib.range(3):
                ta = ta.write(i, lib.cast(i, lib.float32) * x)
            return ta.stack()
        return lambda x: inner(lib.cast(x, lib.float32))

    want = list(tf.data.Dataset.range(3).map(fn(tf)).as_numpy_iterator())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracingWarning)
        got = list(cv.data.Dataset.range(3).map(fn(cv)).as_numpy_iterator())
    assert [g.tolist() for g in got] == [w.tolist() for w in want]
    assert got[0].dtype == want[0].dtype
