"""The top-level names traced maps use (issue 28), against TensorFlow:
eagerly, and traced into the native program of a map (no TracingWarning)."""
import warnings

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from conveyor.framework.tracing import TracingWarning  # noqa: E402

X = np.arange(2 * 3 * 4, dtype=np.int32).reshape(2, 3, 4)


def _np(v):
    return v.numpy() if hasattr(v, "numpy") and not isinstance(v, np.ndarray) else np.asarray(v)


def _same(a, b):
    a, b = _np(a), _np(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)


def _in_map(t, fn, value=X):
    """fn run inside a map over one element `value`, in conveyor (asserting
    it is traced natively) or TensorFlow."""
    ds = t.data.Dataset.from_tensors(value).map(fn)
    if t is cv:
        with warnings.catch_warnings():
            warnings.simplefilter("error", TracingWarning)
            assert "mode=native" in repr(ds)
            return next(iter(ds))
    return next(iter(ds))


CASES = {
    "slice": lambda t, x: t.slice(x, [0, 1, 1], [2, -1, 2]),
    "slice_all": lambda t, x: t.slice(x, [1, 0, 0], [-1, -1, -1]),
    "roll": lambda t, x: t.roll(x, shift=[1, -5], axis=[2, 1]),
    "roll_same_axis": lambda t, x: t.roll(x, shift=[2, 3], axis=[0, 0]),
    "repeat_axis": lambda t, x: t.repeat(x, [1, 0, 2], axis=1),
    "repeat_flat": lambda t, x: t.repeat(x, 2),
    "newaxis": lambda t, x: x[:, t.newaxis, 1],
    "map_fn": lambda t, x: t.map_fn(lambda r: t.reduce_sum(r, axis=0) * 2, x),
    "map_fn_struct": lambda t, x: t.map_fn(lambda p: p[0] + p[1], (x, x * 3),
                                          fn_output_signature=t.int32),
    "map_fn_dtype": lambda t, x: t.map_fn(lambda r: t.cast(r, t.float32) / 2, x,
                                          fn_output_signature=t.float32),
    "meshgrid": lambda t, x: t.stack(t.meshgrid(x[0, 0], x[1, :, 0])),
    "meshgrid_ij": lambda t, x: t.stack(t.meshgrid(x[0, :, 0], x[1, :, 1], indexing="ij"),
                                        axis=-1),
    "name_scope": lambda t, x: _scoped(t, x),
    "case": lambda t, x: t.case([(t.reduce_sum(x) < 0, lambda: x * 2),
                                 (t.reduce_sum(x) > 10, lambda: x + 1)], default=lambda: x),
    "case_default_last": lambda t, x: t.case([(t.reduce_max(x) > 100, lambda: x * 0),
                                              (t.reduce_max(x) >= 0, lambda: x - 1)]),
}


def _scoped(t, x):
    with t.name_scope("outer"):
        with t.name_scope("inner"):
            with t.control_dependencies([t.Assert(t.reduce_all(x >= 0), ["negative"])]):
                return t.identity(x) * 2


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_and_traced_match_tensorflow(name):
    fn = CASES[name]
    _same(fn(cv, X), fn(tf, tf.constant(X)))
    _same(_in_map(cv, lambda x: fn(cv, x)), _in_map(tf, lambda x: fn(tf, x)))


def test_aliases_and_scope_names():
    assert cv.newaxis is None and tf.newaxis is None
    assert cv.SparseTensor is cv.sparse.SparseTensor
    with cv.name_scope("a") as a:
        with cv.name_scope("b") as b:
            assert (a, b) == ("a/", "a/b/")
    with tf.name_scope("a") as ta:
        assert ta == a


def test_assert_messages():
    data = ["x is", 3, np.array([1, 2, 3, 4, 5]), "end"]
    with pytest.raises(tf.errors.InvalidArgumentError) as theirs:
        tf.Assert(False, data)
    with pytest.raises(cv.errors.InvalidArgumentError) as ours:
        cv.Assert(False, data)
    assert str(ours.value) == theirs.value.message
    assert cv.Assert(True, data) is None
    ds = cv.data.Dataset.range(4).map(lambda i: (cv.Assert(i < 2, ["big"]), i)[1])
    assert "mode=native" in repr(ds)
    it = iter(ds)
    assert [int(next(it)), int(next(it))] == [0, 1]
    with pytest.raises(cv.errors.InvalidArgumentError, match="to be true"):
        next(it)


def test_case_errors():
    with pytest.raises(cv.errors.InvalidArgumentError, match="None of conditions"):
        cv.case([(np.array(False), lambda: 1), (np.array(False), lambda: 2)])
    with pytest.raises(cv.errors.InvalidArgumentError, match="exclusive"):
        cv.case([(np.array(True), lambda: 1), (np.array(True), lambda: 2)], default=lambda: 3,
                exclusive=True)
    assert cv.case({False: lambda: 1}, default=lambda: 3) == 3


@pytest.mark.parametrize("keys,values,default,query", [
    (["a", "b", "c"], [1, 2, 3], -1, [["a", "q"], ["c", "b"]]),
    (np.array([5, 7, 9], np.int64), ["x", "y", "z"], "none", np.array([[7, 8], [5, 9]], np.int64)),
    (np.array([3, 1], np.int32), np.array([0.5, 1.5], np.float32), 0.0, np.array([1, 2, 3], np.int32)),
])
def test_static_hash_table(keys, values, default, query):
    def table(t):
        return t.lookup.StaticHashTable(t.lookup.KeyValueTensorInitializer(keys, values), default)
    ours, theirs = table(cv), table(tf)
    _same(ours.lookup(np.asarray(query, dtype=object if isinstance(keys, list) else None)
                      if isinstance(keys, list) else query), theirs.lookup(tf.constant(query)))
    assert int(ours.size()) == int(theirs.size())
    traced = _in_map(cv, lambda q: ours.lookup(q), np.asarray(query))
    _same(traced, theirs.lookup(tf.constant(query)))
    _same(ours[query if not isinstance(keys, list) else np.asarray(query, dtype=object)],
          theirs.lookup(tf.constant(query)))


def test_lookup_key_dtype_mismatch():
    t = cv.lookup.StaticHashTable(cv.lookup.KeyValueTensorInitializer([1, 2], [3, 4]), 0)
    with pytest.raises(TypeError, match="Keys must be dtype"):
        t.lookup(np.array([1], np.int64))


def test_py_function_and_numpy_function_decorators():
    def pipeline(t):
        @t.py_function(Tout=t.int64)
        def add(a, b):
            return a.numpy() + b.numpy()

        @t.numpy_function(Tout=t.float32)
        def half(a):
            return (a / 2).astype(np.float32)

        ds = t.data.Dataset.range(4).map(lambda i: (add(i, i * 10), half(i)))
        return [(int(a), float(b)) for a, b in ds]
    assert pipeline(cv) == pipeline(tf)


def test_from_generator_args_as_tensorflow_hands_them():
    def run(t):
        seen = []

        def gen(*args):
            seen.append([(type(a).__name__, a.tolist() if isinstance(a, np.ndarray) else a)
                         for a in args])
            yield 1
        list(t.data.Dataset.from_generator(gen, output_signature=t.TensorSpec([], t.int32),
                                           args=(1, "ab", 2.5, True, b"xy", [1, 2],
                                                 np.int32(3))))
        return seen
    assert run(cv) == run(tf)


def test_encode_jpeg_is_a_string_tensor():
    image = np.zeros((4, 4, 3), np.uint8)
    for name in ("encode_jpeg", "encode_png"):
        ours, theirs = getattr(cv.io, name)(image), getattr(tf.io, name)(image)
        assert isinstance(ours.numpy(), bytes)
        assert ours.shape == theirs.shape == ()
    _same(tf.io.decode_jpeg(cv.io.encode_jpeg(image).numpy()),
          tf.io.decode_jpeg(tf.io.encode_jpeg(image)))
