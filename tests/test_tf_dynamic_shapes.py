"""Shapes known only per element stay in the traced program (issue 28):
tf.fill / zeros / ones with computed dims, tf.pad with computed paddings,
slices with tensor bounds (x[:n], x[n:-1]), zeros_like of such a tensor and
gather_nd(batch_dims=1) on a batch of unknown size; against TensorFlow, with
no TracingWarning (the map stays native)."""
import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from conveyor.framework.tracing import TracingWarning  # noqa: E402

ROWS = [np.arange(8, dtype=np.float32).reshape(2, 4), np.full((6, 4), 2.5, np.float32),
        np.zeros((0, 4), np.float32), np.arange(12, dtype=np.float32).reshape(3, 4) - 5]


def _run(lib, fn, rows=ROWS, spec=([None, 4], "float32")):
    sig = lib.TensorSpec(spec[0], getattr(lib, spec[1]))
    ds = lib.data.Dataset.from_generator(lambda: iter(rows), output_signature=sig)
    if lib is cv:
        with warnings.catch_warnings():
            warnings.simplefilter("error", TracingWarning)
            ds = ds.map(lambda x: fn(lib, x))
            assert "mode=native" in repr(ds)
    else:
        ds = ds.map(lambda x: fn(lib, x))
    return ds.element_spec, [lib.nest.map_structure(lambda v: v.numpy(), e) for e in ds]


def _same(fn, **kw):
    want_spec, want = _run(tf, fn, **kw)
    got_spec, got = _run(cv, fn, **kw)
    assert repr(got_spec) == repr(want_spec)
    for g, w in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
        assert g.dtype == w.dtype and g.shape == w.shape, (g, w)
        np.testing.assert_array_equal(g, w)


def _pad_to(t, x, size, value):
    """tensorflow/models' pad_to_fixed_size pattern (our code)."""
    n = tf.shape(x)[0] if t is tf else cv.shape(x)[0]
    n = t.clip_by_value(n, 0, size)
    x = x[:n]
    pad = [t.maximum(0, size - n), t.shape(x)[1]]
    padded = t.concat([x, t.cast(value * t.ones(pad), x.dtype)], axis=0)
    padded.set_shape([size, 4])
    return padded


FUNCTIONS = {
    "fill": lambda t, x: t.fill([t.shape(x)[0] + 1, 2], 7.5),
    "fill_traced_value": lambda t, x: t.fill([t.shape(x)[0], 3], t.reduce_max(x, axis=None)),
    "zeros_ones": lambda t, x: (t.zeros([t.shape(x)[0]], t.int64),
                                t.ones([2, t.shape(x)[0], 3], t.bool)),
    "zeros_like": lambda t, x: (t.zeros_like(x), t.ones_like(x, dtype=t.int32)),
    "pad_1d": lambda t, x: t.pad(t.reshape(x, [-1]), [[0, 30 - t.size(x)]], constant_values=-1.0),
    "pad_2d": lambda t, x: t.pad(x, [[1, 8 - t.shape(x)[0]], [2, 0]]),
    "pad_paddings_tensor": lambda t, x: t.pad(x, [[0, 7 - t.shape(x)[0]], t.constant([1, 1])]),
    "slice_stop": lambda t, x: x[:t.shape(x)[0] - 1],
    "slice_start_negative": lambda t, x: x[-t.minimum(t.shape(x)[0], 2):],
    "slice_clamped": lambda t, x: (x[:t.shape(x)[0] + 5], x[t.shape(x)[0] + 1:]),
    "slice_with_static_parts": lambda t, x: x[1:t.shape(x)[0], 1:3],
    "slice_rows_then_cols": lambda t, x: x[:, :t.shape(x)[0]],
    "pad_to_fixed_size": lambda t, x: _pad_to(t, x, 4, -1),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_traced_like_tensorflow(name):
    _same(FUNCTIONS[name])


def test_a_negative_computed_dim_is_invalid_argument():
    fn = lambda t, x: t.zeros([t.shape(x)[0] - 3])  # noqa: E731
    with pytest.raises(tf.errors.InvalidArgumentError):
        _run(tf, fn)
    with pytest.raises(cv.errors.InvalidArgumentError, match="dimensions must be >= 0"):
        _run(cv, fn)


def test_gather_nd_batch_dims_on_a_batch_of_unknown_size():
    rng = np.random.default_rng(1)
    boxes = rng.uniform(0, 1, (5, 6, 4)).astype(np.float32)
    order = np.argsort(-rng.uniform(0, 1, (5, 6)), axis=1)[:, :3].astype(np.int32)

    def fn(t, pair):
        b, o = pair
        return t.gather_nd(b, o[..., None], batch_dims=1)

    for lib in (tf, cv):
        ds = lib.data.Dataset.from_tensor_slices((boxes, order)).batch(2)  # last batch: 1
        if lib is cv:
            with warnings.catch_warnings():
                warnings.simplefilter("error", TracingWarning)
                ds = ds.map(lambda *p: fn(lib, p))
                assert "mode=native" in repr(ds)
            got = [v.numpy() for v in ds]
        else:
            want = [v.numpy() for v in ds.map(lambda *p: fn(lib, p))]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_gather_nd_rows_of_unknown_count_picked_by_where():
    """The detection parsers' crowd filter: gather_nd(boxes, tf.where(keep))."""
    def fn(t, x):
        keep = t.where(t.greater(x[:, 0], 0.0))
        return t.gather_nd(x, keep), t.gather_nd(x[:, 1], keep)
    _same(fn)


def test_gather_nd_out_of_range_row_of_unknown_count():
    def fn(t, x):
        return t.gather_nd(x, [[2]])
    rows = [np.ones((2, 4), np.float32)]
    with pytest.raises(tf.errors.InvalidArgumentError):
        _run(tf, fn, rows=rows)
    with pytest.raises(cv.errors.InvalidArgumentError, match="do not index into param shape"):
        _run(cv, fn, rows=rows)


def test_python_path_hands_eager_tensors_when_an_op_stopped_the_trace():
    """Stopped by an op (tile by traced multiples): TensorFlow-style code,
    so eager tensors; stopped by NumPy use of a value (len): NumPy arrays."""
    seen = []

    def tf_style(image, multiples):
        seen.append((image.get_shape().as_list(), image.dtype))
        return cv.tile(image, multiples)

    image = np.zeros((4, 6, 3), np.uint8)
    with pytest.warns(TracingWarning, match="traced `multiples`"):
        ds = cv.data.Dataset.from_tensors((image, np.array([1, 2, 1], np.int32))).map(tf_style)
    assert next(iter(ds)).shape == (4, 12, 3)
    assert seen[-1] == ([4, 6, 3], cv.uint8)

    def numpy_style(s):
        seen.append(type(s))
        return len(s) > 1
    with pytest.warns(TracingWarning, match="len"):
        kept = list(cv.data.Dataset.from_tensor_slices([b"a", b"bbb"]).filter(numpy_style)
                    .as_numpy_iterator())
    assert kept == [b"bbb"] and seen[-1] is bytes
