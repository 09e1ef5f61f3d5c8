"""tf.matmul, tf.linspace, tf.strided_slice, tf.gather_nd, tf.sort and
tf.argsort (issue 28), against TensorFlow: eagerly and traced into a map's
native program (no TracingWarning)."""
import warnings

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from conveyor.framework.tracing import TracingWarning  # noqa: E402

X = np.arange(2 * 3 * 4, dtype=np.int32).reshape(2, 3, 4)
RGB = np.random.RandomState(0).rand(4, 5, 3).astype(np.float32)


def _np(v):
    return v.numpy() if hasattr(v, "numpy") and not isinstance(v, np.ndarray) else np.asarray(v)


def _same(a, b, rtol=0):
    a, b = _np(a), _np(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    if rtol:
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)  # sums cancel: absolute too
    else:
        np.testing.assert_array_equal(a, b)


def _in_map(t, fn, value):
    ds = t.data.Dataset.from_tensors(value).map(fn)
    if t is cv:
        with warnings.catch_warnings():
            warnings.simplefilter("error", TracingWarning)
            assert "mode=native" in repr(ds)
            return next(iter(ds))
    return next(iter(ds))


def _both(fn, value, rtol=0):
    _same(fn(cv, value), fn(tf, tf.constant(value)), rtol)
    _same(_in_map(cv, lambda x: fn(cv, x), value), _in_map(tf, lambda x: fn(tf, x), value), rtol)


YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]],
               np.float32)

MATMUL = {
    "color_transform": (lambda t, x: t.reshape(t.matmul(t.reshape(x, [-1, 3]), YIQ,
                                                        transpose_b=True), [4, 5, 3]), RGB),
    "transpose_a": (lambda t, x: t.matmul(x[0], x[1], transpose_a=True), RGB[:2, :, :]),
    "batched": (lambda t, x: t.matmul(x, t.transpose(x, [0, 2, 1])), RGB),
    "linalg": (lambda t, x: t.linalg.matmul(x[0], x[0], adjoint_b=True), RGB),
    "float64": (lambda t, x: t.matmul(x[0], x[1], transpose_b=True), RGB.astype(np.float64)),
    "int32": (lambda t, x: t.matmul(x[0], x[1], transpose_b=True), X),
}


@pytest.mark.parametrize("name", sorted(MATMUL))
def test_matmul(name):
    fn, value = MATMUL[name]
    _both(fn, value, rtol=1e-6 if value.dtype.kind == "f" else 0)


def test_matmul_errors():
    a, b = np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.matmul(a, b)
    with pytest.raises(cv.errors.InvalidArgumentError):
        cv.matmul(a, b)
    with pytest.raises(ValueError):
        tf.data.Dataset.from_tensors(a).map(lambda v: tf.matmul(v, v))
    with pytest.raises(ValueError):
        cv.data.Dataset.from_tensors(a).map(lambda v: cv.matmul(v, v))
    with pytest.raises(TypeError):
        cv.matmul(a, b.astype(np.float64))


LINSPACE = {
    "scalar": lambda t, x: t.linspace(x[0, 0], x[1, 0], 7),
    "one": lambda t, x: t.linspace(x[0, 0], x[1, 0], 1),
    "two": lambda t, x: t.linspace(x[0, 0], x[1, 0], 2),
    "zero": lambda t, x: t.linspace(x[0, 0], x[1, 0], 0),
    "vector": lambda t, x: t.linspace(x[0], x[1], 5),
    "vector_axis1": lambda t, x: t.linspace(x[0], x[1], 4, axis=1),
    "vector_axis_neg": lambda t, x: t.linspace(x[0], x[1], 3, axis=-1),
    "python": lambda t, x: t.linspace(-1.0, 1.0, 9) + t.cast(x[0, 0] * 0, t.float32),
}


@pytest.mark.parametrize("name", sorted(LINSPACE))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linspace(name, dtype):
    _both(LINSPACE[name], np.array([[0.5, -2.0, 3.0], [1.75, 10.0, -3.0]], dtype))


def test_linspace_of_integers_is_float64():
    _same(cv.linspace(0, 10, 6), tf.linspace(0, 10, 6))


STRIDED = {
    "basic": ([0, 1, 1], [2, 3, 4], [1, 1, 2], {}),
    "shrink": ([1], [2], [1], {"shrink_axis_mask": 1}),
    "negative_stride": ([0, -1], [0, 0], [1, -1], {"begin_mask": 0, "end_mask": 2,
                                                   "ellipsis_mask": 1}),
    "masks": ([1, 0, 3], [0, 2, 0], [1, 1, -1], {"begin_mask": 2, "end_mask": 5}),
    "new_axis": ([0, 0, 1], [1, 0, 3], [1, 1, 1], {"new_axis_mask": 2, "shrink_axis_mask": 1}),
    "ellipsis_last": ([1, 0], [2, 0], [1, 1], {"shrink_axis_mask": 1, "ellipsis_mask": 2}),
}


@pytest.mark.parametrize("name", sorted(STRIDED))
def test_strided_slice(name):
    b, e, s, kw = STRIDED[name]
    _both(lambda t, x: t.strided_slice(x, b, e, s, **kw), X)


GATHER_ND = {
    "elements": [[0, 1, 2], [1, 2, 3]],
    "rows": [[1, 2], [0, 0], [1, 0]],
    "blocks": [[1], [0]],
    "batched": [[[0, 2]], [[1, 1]]],
}


@pytest.mark.parametrize("name", sorted(GATHER_ND))
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_gather_nd(name, index_dtype):
    indices = np.array(GATHER_ND[name], index_dtype)
    _both(lambda t, x: t.gather_nd(x, indices), X)
    _both(lambda t, x: t.gather_nd(x, indices), X.astype(np.float32))


def test_gather_nd_out_of_range_is_invalid_argument():
    bad = np.array([[0, 5]], np.int32)  # flat position 5 exists: the check must catch it
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.gather_nd(X, bad)
    with pytest.raises(cv.errors.InvalidArgumentError):
        cv.gather_nd(X, bad)
    with pytest.raises(cv.errors.InvalidArgumentError):
        list(cv.data.Dataset.from_tensors(X).map(lambda x: cv.gather_nd(x, bad)))



P4 = np.arange(2 * 2 * 3 * 4, dtype=np.int32).reshape(2, 2, 3, 4)
# (params, indices, batch_dims): tensorflow/models' detection code gathers per
# image (batch_dims=1) boxes or scores picked by per-image indices.
GATHER_ND_BATCH = {
    "b1_k1": (X, [[[1], [0]], [[2], [1]]], 1),
    "b1_k2_scalar_rows": (X, [[1, 2], [0, 3]], 1),
    "b1_k2": (X, [[[1, 2]], [[0, 3]]], 1),
    "b1_k1_rows": (X, [[1], [2]], 1),
    "b2_k1": (P4, [[[2], [1]], [[0], [1]]], 2),
    "b2_k2": (P4, [[[2, 1], [1, 0]], [[0, 0], [1, 3]]], 2),
    "b1_k0_whole_rows": (X, np.zeros((2, 3, 0), np.int64), 1),
}


@pytest.mark.parametrize("name", sorted(GATHER_ND_BATCH))
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_gather_nd_batch_dims(name, index_dtype):
    params, indices, batch_dims = GATHER_ND_BATCH[name]
    indices = np.array(indices, index_dtype)
    _both(lambda t, x: t.gather_nd(x, indices, batch_dims=batch_dims), params)
    _both(lambda t, x: t.gather_nd(x, indices, batch_dims=batch_dims), params.astype(np.float32))


def test_gather_nd_batch_dims_with_indices_of_unknown_batch_size():
    """Indices whose batch dim is only known per element: traced, checked per element."""
    sig = (cv.TensorSpec(X.shape, cv.int32), cv.TensorSpec([None, 1], cv.int64))

    def run(indices):
        ds = cv.data.Dataset.from_generator(lambda: iter([(X, indices)]), output_signature=sig)
        with warnings.catch_warnings():
            warnings.simplefilter("error", TracingWarning)
            ds = ds.map(lambda x, i: cv.gather_nd(x, i, batch_dims=1))
            assert "mode=native" in repr(ds)
        return list(ds)[0]
    good = np.array([[1], [2]], np.int64)
    _same(run(good), tf.gather_nd(X, good, batch_dims=1))
    with pytest.raises(cv.errors.InvalidArgumentError, match="batch dims"):
        run(np.array([[1], [2], [0]], np.int64))


def test_gather_nd_batch_dims_errors():
    two = np.array([[1, 2], [0, 3]], np.int64)
    for t in (tf, cv):
        with pytest.raises(ValueError, match="negative batch_dims"):
            t.gather_nd(X, two, batch_dims=-1)
        with pytest.raises(ValueError, match="must be less than rank"):
            t.gather_nd(X, two, batch_dims=2)
        with pytest.raises(t.errors.InvalidArgumentError):
            t.gather_nd(X, np.array([[5], [0]], np.int64), batch_dims=1)
        with pytest.raises(t.errors.InvalidArgumentError):
            t.gather_nd(X, np.array([[1], [2], [0]], np.int64), batch_dims=1)

SORTABLE = {
    "int32": np.array([[3, 1, 2, 1, -7], [0, -5, 7, 7, 2147483647]], np.int32),
    "uint8": np.array([[3, 1, 200, 1, 0], [9, 9, 9, 0, 255]], np.uint8),
    "float32": np.array([[0.5, -1.0, 0.5, -0.0, 0.0], [np.inf, -np.inf, 2.0, 1.0, 2.0]],
                        np.float32),
    "float64": np.array([[1e300, -1e300, 3.0, 3.0, 0.0], [5, 4, 3, 2, 1]], np.float64),
    "int64": np.array([[2**62, -2**62, 0, 0, 1], [1, 1, 1, 1, 1]], np.int64),
}


@pytest.mark.parametrize("name", sorted(SORTABLE))
@pytest.mark.parametrize("direction", ["ASCENDING", "DESCENDING"])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_sort_and_argsort(name, direction, axis):
    value = SORTABLE[name]
    _both(lambda t, x: t.sort(x, axis=axis, direction=direction), value)
    _both(lambda t, x: t.argsort(x, axis=axis, direction=direction), value)
    _both(lambda t, x: t.argsort(x, axis=axis, direction=direction, stable=True), value)


def test_sort_errors():
    with pytest.raises(ValueError):
        cv.sort(X, direction="UP")
    with pytest.raises(ValueError):
        tf.sort(X, direction="UP")
    with pytest.raises(ValueError):
        cv.sort(X, axis=3)


SEARCH = {
    "ints": (np.array([[1, 3, 3, 5], [0, 0, 2, 9]], np.int32),
             np.array([[3, 0, 6], [0, 2, 10]], np.int32)),
    "floats": (np.array([0.0, 0.5, 0.5, 1.0], np.float32),
               np.array([-1.0, 0.5, 0.75, 1.0, 2.0], np.float32)),
    "int64": (np.array([[-2**40, 0, 2**40]], np.int64), np.array([[2**40, -1]], np.int64)),
}


@pytest.mark.parametrize("name", sorted(SEARCH))
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("out_type", ["int32", "int64"])
def test_searchsorted(name, side, out_type):
    seq, values = SEARCH[name]

    def fn(t, v):
        return t.searchsorted(seq, v, side=side, out_type=getattr(t, out_type))
    _both(fn, values)


def test_searchsorted_errors():
    with pytest.raises(ValueError):
        cv.searchsorted([1, 2], [1], side="middle")
    with pytest.raises(ValueError):
        tf.searchsorted([1, 2], [1], side="middle")
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.searchsorted(np.int32([[1, 2]]), np.int32([[1], [2]]))
    with pytest.raises(cv.errors.InvalidArgumentError):
        cv.searchsorted(np.int32([[1, 2]]), np.int32([[1], [2]]))


SCATTER = {
    "elements_update": (np.zeros((3, 2), np.int32), [[0, 1], [2, 0]], np.int32([7, 8])),
    "rows_update": (np.ones((3, 2), np.float32), [[1], [0]], np.float32([[5, 6], [7, 8]])),
    "batched_update": (np.zeros((4, 3), np.int64), [[[0], [3]], [[1], [2]]],
                       np.arange(12, dtype=np.int64).reshape(2, 2, 3)),
}


@pytest.mark.parametrize("name", sorted(SCATTER))
def test_tensor_scatter_nd_update(name):
    tensor, indices, updates = SCATTER[name]
    _both(lambda t, x: t.tensor_scatter_nd_update(x, np.array(indices, np.int32), updates),
          tensor)
    _both(lambda t, x: t.tensor_scatter_nd_update(x, np.array(indices, np.int64), updates),
          tensor)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_scatter_nd_adds_repeated_indices(dtype):
    updates = np.array([1, 2, 3, 4], dtype)
    _both(lambda t, u: t.scatter_nd([[1], [3], [1], [0]], u, [5]), updates)
    rows = np.arange(6, dtype=dtype).reshape(2, 3)
    _both(lambda t, u: t.scatter_nd([[1], [1]], u, [3, 3]), rows)


@pytest.mark.parametrize("op", ["add", "sub", "max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int64, np.uint8, np.int8])
def test_tensor_scatter_nd_combining_forms(op, dtype):
    # repeated indices combine in order; integers wrap as TensorFlow's
    tensor = (np.arange(12).reshape(4, 3) * 37 % 200 - (0 if dtype == np.uint8 else 100))
    tensor = tensor.astype(dtype)
    indices = np.array([[1], [3], [1], [0]], np.int32)
    updates = (np.arange(12).reshape(4, 3) * 53 % 250).astype(dtype)
    name = f"tensor_scatter_nd_{op}"
    _both(lambda t, x: getattr(t, name)(x, indices, updates), tensor)
    elements = np.array([[2, 1], [2, 1], [0, 0]], np.int64)
    _both(lambda t, x: getattr(t, name)(x, elements, updates[0]), tensor)


def test_tensor_scatter_nd_max_min_nan():
    x = np.float32([1.0, np.nan, 3.0, -np.inf])
    u = np.float32([np.nan, 2.0, np.inf, 0.0])
    for name in ("tensor_scatter_nd_max", "tensor_scatter_nd_min"):
        _both(lambda t, v: getattr(t, name)(v, [[0], [1], [2], [3]], u), x)


def test_scatter_out_of_range_is_invalid_argument():
    x = np.zeros((3, 2), np.int32)
    for bad in ([[3]], [[-1]]):
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.tensor_scatter_nd_update(x, bad, np.int32([[5, 6]]))
        with pytest.raises(cv.errors.InvalidArgumentError):
            cv.tensor_scatter_nd_update(x, bad, np.int32([[5, 6]]))
    with pytest.raises(cv.errors.InvalidArgumentError):
        list(cv.data.Dataset.from_tensors(x).map(
            lambda v: cv.tensor_scatter_nd_update(v, [[4]], np.int32([[5, 6]]))))


UNIQUE = {
    "int32": np.array([1, 1, 2, 4, 4, 4, 7, 8, 8], np.int32),
    "int64_unsorted": np.array([9, -3, 9, 0, -3, 2**40], np.int64),
    "float_zero_nan": np.array([0.0, -0.0, np.nan, 1.0, np.nan, 1.0], np.float32),
    "uint8": np.array([255, 0, 255, 3], np.uint8),
    "empty": np.array([], np.float64),
}


@pytest.mark.parametrize("name", sorted(UNIQUE))
@pytest.mark.parametrize("out_idx", ["int32", "int64"])
def test_unique(name, out_idx):
    value = UNIQUE[name]

    def fn(t, v):
        u = t.unique(v, out_idx=getattr(t, out_idx))
        return u.y, u.idx
    for a, b in zip(fn(cv, value), fn(tf, tf.constant(value))):
        _same(a, b)
    ours = _in_map(cv, lambda v: fn(cv, v), value)
    theirs = _in_map(tf, lambda v: fn(tf, v), value)
    for a, b in zip(ours, theirs):
        _same(a, b)


def test_unique_is_a_named_tuple_and_strings_run_eagerly():
    words = np.array([b"b", b"a", b"b", b""], object)
    ours, theirs = cv.unique(words), tf.unique(words)
    assert ours._fields == theirs._fields == ("y", "idx")
    _same(ours.y, theirs.y)
    _same(ours.idx, theirs.idx)
    with pytest.warns(TracingWarning, match="unique"):
        ds = cv.data.Dataset.from_tensors(words).map(lambda w: cv.unique(w).y)
    assert [v.tolist() for v in ds.as_numpy_iterator()] == [[b"b", b"a", b""]]
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.unique(np.zeros((2, 2), np.int32))
    with pytest.raises(cv.errors.InvalidArgumentError):
        cv.unique(np.zeros((2, 2), np.int32))


@pytest.mark.parametrize("make", [
    lambda t: [t.constant(1, t.int64), 7],
    lambda t: [np.float32(1.5), 2],
    lambda t: [t.constant([1, 2], t.int64), [3, 4]],
])
def test_stack_converts_python_values_to_the_tensors_dtype(make):
    _same(cv.stack(make(cv)), tf.stack(make(tf)))
    _same(_in_map(cv, lambda x: cv.stack([x, 7]), np.int64(3)),
          _in_map(tf, lambda x: tf.stack([x, 7]), np.int64(3)))


TOP_K = {
    "ties_int32": (np.array([[3, 1, 3, 2, 5], [0, 0, 0, 1, -1]], np.int32), 3),
    "float_1d": (np.array([0.5, -1.0, 2.5, 2.5, 0.0, 7.0], np.float32), 4),
    "uint8_3d": (np.random.default_rng(3).integers(0, 9, (2, 3, 6)).astype(np.uint8), 2),
    "k_zero": (np.arange(5, dtype=np.int64), 0),
    "k_all": (np.array([2.0, 1.0, 2.0], np.float64), 3),
}


@pytest.mark.parametrize("name", sorted(TOP_K))
def test_top_k(name):
    x, k = TOP_K[name]
    _both(lambda t, v: tuple(t.math.top_k(v, k=k)), x)
    _both(lambda t, v: t.math.top_k(v, k, index_type=t.int64).indices, x)


def test_top_k_errors_match_tf():
    x = np.arange(4, dtype=np.float32)
    for k in (5, -1):
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.math.top_k(x, k)
        with pytest.raises(cv.errors.InvalidArgumentError):
            cv.math.top_k(x, k)
    with pytest.raises(ValueError):
        cv.data.Dataset.from_tensors(x).map(lambda v: cv.math.top_k(v, 5))


BITWISE_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                  np.uint64]


@pytest.mark.parametrize("dtype", BITWISE_DTYPES)
@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
                                  "right_shift"])
def test_bitwise_binary(name, dtype):
    # shift counts past the width or negative are clamped, as TensorFlow's kernels do
    info = np.iinfo(dtype)
    x = np.array([info.min, -7 if info.min else 7, 0, 5, info.max, 3], dtype)
    y = np.array([1, 2, 70, 0, 3, info.bits - 1], dtype)
    if info.min:
        y[2] = -1
    _both(lambda t, v: getattr(t.bitwise, name)(v, y), x)
    _both(lambda t, v: getattr(t.bitwise, name)(v, dtype(2)), x)  # broadcast a scalar


@pytest.mark.parametrize("dtype", BITWISE_DTYPES)
def test_bitwise_invert(dtype):
    info = np.iinfo(dtype)
    _both(lambda t, v: t.bitwise.invert(v), np.array([info.min, 0, 1, info.max], dtype))


def test_bitwise_refuses_floats_and_bool():
    for x in (np.float32([1.0]), np.array([True])):
        for m in (tf, cv):
            with pytest.raises((TypeError, tf.errors.InvalidArgumentError,
                                cv.errors.InvalidArgumentError)):
                m.bitwise.bitwise_and(x, x)
        with pytest.raises(TypeError):
            cv.data.Dataset.from_tensors(x).map(lambda v: cv.bitwise.left_shift(v, v))


@pytest.mark.parametrize("shape,dtype", [((5, 6, 3), np.float32), ((2, 5, 6, 3), np.float32),
                                         ((4, 4, 1), np.int32), ((9, 4, 2), np.int8),
                                         ((1, 1, 3), np.float64)])
def test_total_variation(shape, dtype):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(shape) * 50).astype(dtype)
    _both(lambda t, v: t.image.total_variation(v), x, rtol=1e-6 if x.dtype.kind == "f" else 0)


def test_abs_and_total_variation_refuse_unsigned_as_tf():
    x = np.array([[[1], [2]]], np.uint8)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.abs(x)
    with pytest.raises(cv.errors.InvalidArgumentError, match="uint8"):
        cv.abs(x)
    with pytest.raises(cv.errors.InvalidArgumentError, match="uint8"):
        cv.image.total_variation(x)
    with pytest.raises(TypeError):
        cv.data.Dataset.from_tensors(x).map(cv.image.total_variation)


@pytest.mark.parametrize("name", ["relu", "relu6", "sigmoid", "tanh", "softmax", "log_softmax",
                                  "l2_normalize"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nn_functions(name, dtype):
    x = (np.random.default_rng(6).standard_normal((3, 5)) * 4).astype(dtype)
    x[1, 2] = 80.0  # softmax shifts by the maximum: no overflow
    _both(lambda t, v: getattr(t.nn, name)(v), x, rtol=1e-6)
    if name in ("softmax", "log_softmax"):
        _both(lambda t, v: getattr(t.nn, name)(v, axis=0), x, rtol=1e-6)


def test_nn_relu_of_integers_and_top_k():
    _both(lambda t, v: t.nn.relu6(v), np.array([-3, 4, 9], np.int32))
    _both(lambda t, v: tuple(t.nn.top_k(v, 2)), np.array([1.0, 3.0, 2.0], np.float32))


@pytest.mark.parametrize("name", ["rgb_to_yuv", "yuv_to_rgb", "rgb_to_yiq", "yiq_to_rgb"])
@pytest.mark.parametrize("shape", [(4, 5, 3), (2, 4, 5, 3)])
def test_image_yuv_yiq(name, shape):
    x = np.random.default_rng(7).uniform(0, 1, shape).astype(np.float32)
    _both(lambda t, v: getattr(t.image, name)(v), x, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
def test_image_gradients(dtype):
    x = (np.random.default_rng(8).uniform(0, 1, (2, 4, 5, 3)) * 100).astype(dtype)
    _both(lambda t, v: tuple(t.image.image_gradients(v)), x)


PATCHES = [([1, 3, 3, 1], [1, 2, 2, 1], [1, 1, 1, 1], "VALID"),
           ([1, 3, 2, 1], [1, 2, 3, 1], [1, 2, 1, 1], "SAME"),
           ([1, 4, 4, 1], [1, 4, 4, 1], [1, 1, 1, 1], "VALID"),  # ViT-style patchify
           ([1, 2, 2, 1], [1, 1, 1, 1], [1, 3, 2, 1], "SAME"),
           ([1, 8, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "VALID")]  # no patch fits


@pytest.mark.parametrize("args", PATCHES, ids=[str(a) for a in PATCHES])
@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_extract_patches(args, dtype):
    x = np.arange(2 * 7 * 6 * 2).reshape(2, 7, 6, 2).astype(dtype)
    _both(lambda t, v: t.image.extract_patches(v, *args), x)


@pytest.mark.parametrize("quality", [10, 40, 95])
@pytest.mark.parametrize("shape,dtype", [((16, 13, 3), np.uint8), ((9, 20, 1), np.float32)])
def test_adjust_jpeg_quality_is_tensorflows_pixels(quality, shape, dtype):
    rng = np.random.default_rng(quality)
    x = (rng.uniform(0, 1, shape) * (255 if dtype == np.uint8 else 1)).astype(dtype)
    _both(lambda t, v: t.image.adjust_jpeg_quality(v, quality), x)


def test_stateless_random_jpeg_quality_per_element_matches_tf():
    # the quality is drawn per element (a traced scalar): EncodeJpeg's second input
    images = np.random.default_rng(2).integers(0, 256, (4, 16, 13, 3)).astype(np.uint8)

    def run(t):
        ds = t.data.Dataset.from_tensor_slices(images).enumerate()
        return ds.map(lambda i, v: t.image.stateless_random_jpeg_quality(
            v, 5, 95, seed=t.stack([i, t.constant(7, t.int64)])))

    got = run(cv)
    assert "mode=native" in repr(got)
    for g, w in zip(got, run(tf)):
        _same(g, w)
    assert "mode=native" in repr(cv.data.Dataset.from_tensor_slices(images).map(
        lambda v: cv.image.random_jpeg_quality(v, 30, 60)))
    for m in (tf, cv):
        with pytest.raises(ValueError, match="less than"):
            m.image.stateless_random_jpeg_quality(images[0], 50, 50, (1, 2))


def _nms_case(rng):
    n = int(rng.integers(0, 30))
    y, x = rng.uniform(0, 0.7, n), rng.uniform(0, 0.7, n)
    boxes = np.stack([y, x, y + rng.uniform(-0.1, 0.4, n), x + rng.uniform(0.0, 0.4, n)], 1)
    kw = dict(max_output_size=int(rng.integers(0, 12)), iou_threshold=float(rng.uniform(0, 1)),
              score_threshold=float(rng.uniform(-0.1, 0.5)))
    return boxes.astype(np.float32), rng.uniform(0, 1, n).astype(np.float32), kw


def test_non_max_suppression_matches_tf():
    # flipped corners and empty boxes included; distinct scores (ties: differences.md)
    rng = np.random.default_rng(9)
    for _ in range(100):
        boxes, scores, kw = _nms_case(rng)
        _same(cv.image.non_max_suppression(boxes, scores, **kw),
              tf.image.non_max_suppression(boxes, scores, **kw))
    boxes, scores, kw = _nms_case(np.random.default_rng(3))
    _both(lambda t, b: t.image.non_max_suppression(b, scores, **kw), boxes)


def test_non_max_suppression_errors():
    boxes, scores = np.zeros((2, 4), np.float32), np.zeros(2, np.float32)
    for kw in (dict(max_output_size=-1), dict(max_output_size=2, iou_threshold=1.5)):
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.image.non_max_suppression(boxes, scores, **kw)
        with pytest.raises(cv.errors.InvalidArgumentError):
            cv.image.non_max_suppression(boxes, scores, **kw)
