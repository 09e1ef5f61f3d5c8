"""conveyor's cast / arithmetic / one_hot against TensorFlow, eagerly and traced in map."""
import numpy as np
import pytest

import conveyor as cv

tf = pytest.importorskip("tensorflow")

RNG = np.random.default_rng(5)
DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"]


def sample(dtype, shape):
    if np.dtype(dtype).kind == "f":
        return (RNG.standard_normal(shape) * 100).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


BINARY = [("add", tf.math.add), ("subtract", tf.math.subtract), ("multiply", tf.math.multiply),
          ("maximum", tf.math.maximum), ("minimum", tf.math.minimum), ("less", tf.math.less),
          ("greater_equal", tf.math.greater_equal), ("equal", tf.math.equal),
          ("not_equal", tf.math.not_equal)]


def tf_supports(fn, a, b):
    try:
        return fn(a, b).numpy()
    except (tf.errors.NotFoundError, tf.errors.InvalidArgumentError, TypeError):
        return None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,tf_fn", BINARY, ids=[n for n, _ in BINARY])
def test_binary_ops_match_tf(dtype, name, tf_fn):
    a, b = sample(dtype, (3, 4)), sample(dtype, (4,))
    expected = tf_supports(tf_fn, a, b)
    if expected is None:
        pytest.skip(f"TensorFlow has no {name} kernel for {dtype}")
    got = getattr(cv.math, name)(a, b)
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == expected.dtype


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "float32", "float64"])
def test_division_family_matches_tf(dtype):
    a, b = sample(dtype, (5, 6)), sample(dtype, (5, 6))
    if np.dtype(dtype).kind != "f":
        b[b == 0] = 3
    for name, tf_fn in [("truediv", tf.math.truediv), ("floordiv", tf.math.floordiv),
                        ("floormod", tf.math.floormod)]:
        expected = tf_fn(a, b).numpy()
        got = getattr(cv.math, name)(a, b)
        assert got.dtype == expected.dtype, name
        np.testing.assert_array_equal(got, expected, err_msg=name)


@pytest.mark.parametrize("src", DTYPES + ["bool"])
@pytest.mark.parametrize("dst", DTYPES + ["bool"])
def test_cast_matches_tf_in_range(src, dst):
    if src == "bool":
        x = RNG.integers(0, 2, 20).astype(bool)
    elif np.dtype(src).kind == "f":
        x = (RNG.standard_normal(20) * 50).astype(src)
    else:
        x = sample(src, (20,))
    expected = tf.cast(x, dst).numpy()
    got = cv.cast(x, dst)
    if np.dtype(src).kind == "f" and np.dtype(dst).kind in "iu":
        # Out-of-range float -> int conversion is implementation-defined in TF:
        # compare where the value fits the target type.
        info = np.iinfo(dst)
        wide = x.astype(np.float64)
        fits = (wide >= info.min) & (wide <= info.max)
        np.testing.assert_array_equal(got[fits], expected[fits])
    else:
        np.testing.assert_array_equal(got, expected)
    assert got.dtype == expected.dtype


def test_unary_ops_match_tf():
    x = (RNG.standard_normal(50) * 10).astype(np.float32)
    for name in ["negative", "abs", "floor", "ceil", "round", "square"]:
        np.testing.assert_array_equal(getattr(cv.math, name)(x), getattr(tf.math, name)(x).numpy(),
                                      err_msg=name)
    pos = np.abs(x) + 0.5
    for name in ["sqrt", "exp", "log"]:
        np.testing.assert_allclose(getattr(cv.math, name)(pos / 10), getattr(tf.math, name)(pos / 10),
                                   rtol=2e-7, err_msg=name)
    ints = sample("int32", (20,))
    np.testing.assert_array_equal(cv.abs(ints), tf.abs(ints).numpy())


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_one_hot_matches_tf(axis):
    idx = np.array([[0, 3, -1], [2, 5, 1]], np.int64)
    for kw in [{}, {"on_value": 5, "off_value": -1}, {"dtype": tf.int32},
               {"on_value": 2.5, "off_value": 0.5, "dtype": tf.float64}]:
        cv_kw = dict(kw)
        if "dtype" in cv_kw:
            cv_kw["dtype"] = cv_kw["dtype"].name
        expected = tf.one_hot(idx, 4, axis=axis, **kw).numpy()
        got = cv.one_hot(idx, 4, axis=axis, **cv_kw)
        np.testing.assert_array_equal(got, expected)
        assert got.dtype == expected.dtype


def test_operator_dtype_rules_match_tf():
    x = np.arange(4, dtype=np.int32)
    assert (cv.add(x, 2)).dtype == tf.add(x, 2).numpy().dtype
    assert cv.divide(x, x + 1).dtype == tf.divide(x, x + 1).numpy().dtype == np.float64
    u = np.arange(4, dtype=np.uint8)
    assert cv.divide(u, u + 1).dtype == tf.divide(u, u + 1).numpy().dtype == np.float32


def test_traced_map_matches_tf_data():
    images = RNG.integers(0, 256, (6, 8, 10, 3), dtype=np.uint8)
    labels = np.arange(6, dtype=np.int64) % 3

    def make(lib):
        def fn(image, label):
            x = lib.cast(image, lib.float32) / 255.0
            x = (x - 0.5) * 2.0
            x = lib.image.resize(x, [4, 5])
            return x, lib.one_hot(label, 3), label * 2 + 1, lib.cast(label, lib.float16) / 3.0
        return fn

    ours = cv.data.Dataset.from_tensor_slices((images, labels)).map(make(cv), num_parallel_calls=3)
    assert "mode=native" in repr(ours)
    theirs = tf.data.Dataset.from_tensor_slices((images, labels)).map(make(tf), num_parallel_calls=3)
    for spec_ours, spec_theirs in zip(ours.element_spec, theirs.element_spec):
        assert spec_ours.shape.as_list() == spec_theirs.shape.as_list()
        assert spec_ours.dtype.name == spec_theirs.dtype.name
    for a, b in zip(ours, theirs.as_numpy_iterator()):
        for x, y in zip(a, b):
            assert x.dtype == y.dtype
            np.testing.assert_allclose(x, y, atol=1e-6, rtol=0)


def test_cast_out_of_range_floats_to_wide_integers_match_tf():
    x = np.array([np.nan, 1e10, np.inf, -np.inf, -1.0, -5.5, 3e9, 4.2e9, 2.0 ** 32, -3e9, 1.9e19,
                  2.0 ** 64, 1e30, -1e30] * 4, np.float32)
    for src in (np.float32, np.float64):
        for dst in ("int32", "int64", "uint32", "uint64"):
            np.testing.assert_array_equal(cv.cast(x.astype(src), dst),
                                          tf.cast(x.astype(src), dst).numpy(), err_msg=dst)
