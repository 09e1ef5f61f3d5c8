"""Reductions, argmax/argmin and range against TensorFlow, eagerly and traced in map."""
import numpy as np
import pytest

import conveyor as cv

tf = pytest.importorskip("tensorflow")

RNG = np.random.default_rng(11)
NUMERIC = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64"]
KINDS = ["sum", "mean", "max", "min", "prod"]
AXES = [None, 0, -1, [0, 2], (1,), [], [-3, 1, 2]]


def sample(dtype, shape, small=False):
    if np.dtype(dtype).kind == "f":
        return (RNG.standard_normal(shape) * (3 if small else 100)).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return RNG.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dtype)
    if small:
        return RNG.integers(max(info.min, -3), 4, shape).astype(dtype)
    return RNG.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def tf_result(fn):
    try:
        return fn().numpy()
    except (tf.errors.InvalidArgumentError, tf.errors.NotFoundError, TypeError):
        return None


def assert_matches(got, expected, dtype):
    got = np.asarray(got)
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    if np.dtype(dtype).kind == "f":
        # float16: TensorFlow sums in half precision (a tree of roundings);
        # conveyor accumulates in double and rounds once: a few half ulps apart.
        rtol = 1e-2 if dtype == "float16" else 1e-6 if dtype == "float32" else 1e-12
        atol = np.abs(expected.astype(np.float64)).max(initial=0) * 1e-2 if dtype == "float16" \
            else rtol
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64),
                                   rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(got, expected)


def native(ds):
    assert "mode=native" in repr(ds), repr(ds)
    return ds


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("kind", KINDS)
def test_reductions_match_tf(dtype, kind):
    x = sample(dtype, (3, 4, 5), small=kind == "prod")
    for axis in AXES:
        for keepdims in (False, True):
            expected = tf_result(lambda: getattr(tf, f"reduce_{kind}")(x, axis, keepdims))
            if expected is None:
                pytest.skip(f"TensorFlow has no reduce_{kind} for {dtype}")
            got = getattr(cv, f"reduce_{kind}")(x, axis=axis, keepdims=keepdims)
            assert_matches(got, expected, dtype)
            assert_matches(getattr(cv.math, f"reduce_{kind}")(x, axis), getattr(
                tf.math, f"reduce_{kind}")(x, axis).numpy(), dtype)


@pytest.mark.parametrize("kind", ["any", "all"])
def test_logical_reductions_match_tf(kind):
    for shape in [(3, 4, 5), (0, 3, 2), (2, 1, 7)]:
        x = sample("bool", shape)
        for axis in AXES:
            for keepdims in (False, True):
                expected = getattr(tf, f"reduce_{kind}")(x, axis, keepdims).numpy()
                np.testing.assert_array_equal(
                    getattr(cv, f"reduce_{kind}")(x, axis, keepdims), expected)
    # TensorFlow converts a NumPy array to bool for any/all
    assert cv.reduce_any(np.array([1, 0])) == tf.reduce_any(np.array([1, 0])).numpy()
    assert cv.reduce_all(np.array([1., 0])) == tf.reduce_all(np.array([1., 0])).numpy()


def test_float32_sums_of_many_values_are_close_to_tf():
    for n in (1, 7, 1000, 100003):
        x = RNG.uniform(0, 1, n).astype(np.float32)
        np.testing.assert_allclose(cv.reduce_sum(x), tf.reduce_sum(x).numpy(), rtol=1e-6)
        np.testing.assert_allclose(cv.reduce_mean(x), tf.reduce_mean(x).numpy(), rtol=1e-6)
    x = RNG.uniform(0, 1, (300, 200)).astype(np.float32)
    for axis in (0, 1):
        np.testing.assert_allclose(cv.reduce_sum(x, axis), tf.reduce_sum(x, axis).numpy(),
                                   rtol=1e-6)


@pytest.mark.parametrize("dtype", NUMERIC)
def test_empty_reductions_give_tf_identities(dtype):
    for shape, axis in [((0,), None), ((0, 3), 0), ((3, 0), 1), ((0, 3), 1), ((2, 0, 2), [0, 1])]:
        x = np.zeros(shape, dtype)
        for kind in KINDS:
            expected = tf_result(lambda: getattr(tf, f"reduce_{kind}")(x, axis))
            if expected is None:
                continue
            got = getattr(cv, f"reduce_{kind}")(x, axis)
            np.testing.assert_array_equal(got, expected, err_msg=f"{kind} {shape} {axis}")
            assert got.dtype == expected.dtype


def test_integer_means_truncate_and_accumulate_as_tf():
    cases = [np.array([100, 100, 100], np.int8), np.array([-7, 2], np.int32),
             np.array([-100, -100, 1], np.int8), np.array([2 ** 31 - 1] * 2, np.int32),
             np.array([200, 200], np.uint8), np.array([2 ** 62, 2 ** 62], np.int64),
             np.array([100, 100], np.int8), np.array([60000, 60000], np.float16)]
    for x in cases:
        for kind in ("mean", "sum", "prod"):
            expected = getattr(tf, f"reduce_{kind}")(x).numpy()
            got = getattr(cv, f"reduce_{kind}")(x)
            np.testing.assert_array_equal(got, expected, err_msg=f"{kind} {x}")


def test_nan_propagates_through_max_min_sum():
    x = np.array([[1., np.nan, 2.], [3., 4., -np.inf]], np.float32)
    for kind in KINDS:
        for axis in (None, 0, 1):
            np.testing.assert_array_equal(getattr(cv, f"reduce_{kind}")(x, axis),
                                          getattr(tf, f"reduce_{kind}")(x, axis).numpy())


def test_reduction_errors_match_tf():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(cv.errors.InvalidArgumentError, match="Invalid reduction dimension"):
        cv.reduce_sum(x, axis=2)
    with pytest.raises(cv.errors.InvalidArgumentError, match="Invalid reduction dimension"):
        cv.reduce_sum(x, axis=-3)
    with pytest.raises(cv.errors.InvalidArgumentError, match="duplicate"):
        cv.reduce_sum(x, axis=[0, 0])
    with pytest.raises(cv.errors.InvalidArgumentError):
        cv.reduce_sum(np.array([True, False]))
    with pytest.raises(cv.errors.InvalidArgumentError):
        cv.reduce_any(cv.constant([1, 0]))
    with pytest.raises(TypeError):
        cv.reduce_sum(x, axis=1.0)
    ds = cv.data.Dataset.from_tensors(x)
    with pytest.raises(ValueError, match="Invalid reduction dimension 2"):
        ds.map(lambda v: cv.reduce_sum(v, axis=2))
    with pytest.raises(TypeError):
        ds.map(lambda v: cv.reduce_sum(v > 0))
    assert cv.reduce_sum(5) == 5 and cv.reduce_sum(5, axis=[]) == 5


def test_traced_reductions_match_tf_data():
    x = RNG.standard_normal((6, 4, 5)).astype(np.float32)
    i = RNG.integers(-50, 50, (6, 4, 5)).astype(np.int32)

    def make(lib):
        def fn(a, b):
            return (lib.reduce_sum(a), lib.reduce_mean(a, axis=1), lib.reduce_max(b, -1, True),
                    lib.math.reduce_min(a, [0, 1]), lib.reduce_prod(lib.cast(b > 0, lib.int32), 0),
                    lib.reduce_any(a > 1.5, axis=0), lib.reduce_all(b < 40),
                    lib.reduce_mean(b, 1), lib.argmax(a, axis=1), lib.math.argmin(b),
                    lib.argmax(b, -1, output_type=lib.int32))
        return fn

    ours = native(cv.data.Dataset.from_tensor_slices((x, i)).map(make(cv)))
    theirs = tf.data.Dataset.from_tensor_slices((x, i)).map(make(tf))
    for a, b in zip(ours.element_spec, theirs.element_spec):
        assert a.shape.as_list() == b.shape.as_list() and a.dtype.name == b.dtype.name
    for got, want in zip(ours, theirs.as_numpy_iterator()):
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-6)


def test_traced_reduction_of_unknown_shape_keeps_what_is_known():
    ds = cv.data.Dataset.from_generator(lambda: iter([np.ones((2, 3), np.float32)]),
                                        output_signature=cv.TensorSpec([None, 3], cv.float32))
    tds = tf.data.Dataset.from_generator(lambda: iter([np.ones((2, 3), np.float32)]),
                                         output_signature=tf.TensorSpec([None, 3], tf.float32))
    for f in [lambda v, lib: lib.reduce_sum(v, 0), lambda v, lib: lib.reduce_sum(v, 1, True),
              lambda v, lib: lib.reduce_mean(v), lambda v, lib: lib.argmax(v, 1)]:
        ours = native(ds.map(lambda v: f(v, cv)))
        theirs = tds.map(lambda v: f(v, tf))
        assert ours.element_spec.shape.as_list() == theirs.element_spec.shape.as_list()
        np.testing.assert_array_equal(list(ours)[0], list(theirs.as_numpy_iterator())[0])


# -- argmax / argmin --------------------------------------------------------------

@pytest.mark.parametrize("dtype", NUMERIC + ["bool"])
def test_argmax_argmin_match_tf(dtype):
    x = sample(dtype, (4, 5, 6), small=True)  # small range: many ties
    for axis in (None, 0, 1, 2, -1):
        for fn in ("argmax", "argmin"):
            expected = tf_result(lambda: getattr(tf, fn)(x, axis))
            if expected is None:
                continue
            got = getattr(cv, fn)(x, axis)
            assert got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected, err_msg=f"{fn} {axis}")
    for out in (cv.int32, cv.int16, cv.uint16):
        expected = tf.argmax(x, 1, output_type=out.name).numpy()
        got = cv.argmax(x, 1, output_type=out)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


def test_argmax_nan_and_edge_cases_match_tf():
    nan, inf = np.nan, np.inf
    for values in ([1., nan, 2.], [1., 3., nan], [nan, 1., 2.], [nan, nan], [nan, -inf],
                   [-inf, -inf], [nan, inf], [3., 3., 1.], [-3e38, -inf]):
        for dt in (np.float16, np.float32, np.float64):
            with np.errstate(over="ignore"):  # -3e38 is -inf in float16
                x = np.array(values).astype(dt)
            for fn in ("argmax", "argmin"):
                assert getattr(cv, fn)(x) == getattr(tf, fn)(x).numpy(), (fn, values, dt)
    with pytest.raises(cv.errors.InvalidArgumentError, match="Reduction axis 0 is empty"):
        cv.argmax(np.zeros((0,)))
    np.testing.assert_array_equal(cv.argmax(np.zeros((0, 3)), axis=1), np.zeros(0, np.int64))
    with pytest.raises(cv.errors.InvalidArgumentError, match="Expected dimension in the range"):
        cv.argmax(np.array([1, 2]), axis=1)
    with pytest.raises(ValueError):
        cv.data.Dataset.from_tensors(np.ones((2, 3))).map(lambda v: cv.argmax(v, axis=2))
    with pytest.raises(TypeError):
        cv.argmax([1, 2], output_type=cv.float32)


# -- range ------------------------------------------------------------------------

RANGES = [(5,), (1, 5.), (0., 1., 0.3), (10, 0, -3), (np.int64(5),), (np.float64(5),),
          (np.int32(1), np.int64(5)), (1, 5, 2.5), (0., 100., 0.1), (-3, 7, 2), (7, -3, -2),
          (2 ** 40, 2 ** 40 + 3), (0,), (np.int32(2 ** 31 - 5), np.int32(2 ** 31 - 1), 3),
          (np.int64(-2 ** 63), np.int64(2 ** 63 - 1), np.int64(2 ** 62))]


@pytest.mark.parametrize("args", RANGES, ids=[repr(a) for a in RANGES])
def test_range_matches_tf(args):
    expected = tf.range(*args).numpy()
    got = cv.range(*args)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_range_dtypes_and_errors_match_tf():
    for dtype in ("float16", "float32", "float64", "int32", "int64"):
        for args in [(5,), (1, 9, 2), (0.5, 3.5) if dtype[0] == "f" else (2, 8)]:
            expected = tf.range(*args, dtype=dtype).numpy()
            got = cv.range(*args, dtype=dtype)
            assert got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected)
    expected = tf.range(np.float16(0.), np.float16(10.), np.float16(0.1)).numpy()
    np.testing.assert_array_equal(cv.range(np.float16(0.), np.float16(10.), np.float16(0.1)),
                                  expected)
    np.testing.assert_array_equal(cv.range(cv.constant(1.), 5, dtype=cv.int32),
                                  tf.range(tf.constant(1.), 5, dtype=tf.int32).numpy())
    for args in [(0, 5, 0), (5, 0), (0, 5, -1), (np.nan,), (0., 1., 0.)]:
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.range(*args)
        with pytest.raises(cv.errors.InvalidArgumentError, match="Requires"):
            cv.range(*args)
    with pytest.raises(TypeError):
        cv.range(1.5, dtype=cv.int32)
    with pytest.raises(cv.errors.NotFoundError):
        cv.range(5, dtype=cv.int16)


def test_traced_range_of_element_values_matches_tf_data():
    n = np.array([0, 3, 1, 6], np.int64)
    ours = native(cv.data.Dataset.from_tensor_slices(n).map(lambda x: cv.range(x)))
    theirs = tf.data.Dataset.from_tensor_slices(n).map(lambda x: tf.range(x))
    assert ours.element_spec.shape.as_list() == theirs.element_spec.shape.as_list() == [None]
    assert ours.element_spec.dtype.name == theirs.element_spec.dtype.name == "int64"
    for a, b in zip(ours, theirs.as_numpy_iterator()):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype

    def make(lib):
        return lambda x: (lib.range(x, 10, 2), lib.range(lib.cast(x, lib.float32), 8.5),
                          lib.range(3), lib.range(1, x + 2, dtype=lib.float64))
    ours = native(cv.data.Dataset.from_tensor_slices(n).map(make(cv)))
    theirs = tf.data.Dataset.from_tensor_slices(n).map(make(tf))
    for a, b in zip(ours.element_spec, theirs.element_spec):
        assert a.shape.as_list() == b.shape.as_list() and a.dtype.name == b.dtype.name
    for a, b in zip(ours, theirs.as_numpy_iterator()):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
            assert x.dtype == y.dtype
    with pytest.raises(ValueError, match="Requires delta != 0"):
        cv.data.Dataset.from_tensor_slices(n).map(lambda x: cv.range(0, 5, 0) + x)
    bad = native(cv.data.Dataset.from_tensor_slices(n).map(lambda x: cv.range(5, x)))
    with pytest.raises(cv.errors.InvalidArgumentError, match="Requires start <= limit"):
        list(bad)


@pytest.mark.parametrize("dtype", NUMERIC)
def test_traced_reductions_of_every_dtype_match_tf_data(dtype):
    x = sample(dtype, (4, 3, 5), small=True)

    def make(lib):
        return lambda v: (lib.reduce_sum(v, 0), lib.reduce_max(v), lib.reduce_min(v, -1, True),
                          lib.reduce_mean(v, [0, 1]), lib.reduce_prod(v, 1), lib.argmin(v, 1),
                          lib.argmax(v))
    ours = native(cv.data.Dataset.from_tensor_slices(x).map(make(cv)))
    try:
        theirs = list(tf.data.Dataset.from_tensor_slices(x).map(make(tf)).as_numpy_iterator())
    except (TypeError, tf.errors.NotFoundError, tf.errors.InvalidArgumentError):
        pytest.skip(f"TensorFlow lacks one of these kernels for {dtype}")
    for got, want in zip(ours, theirs):
        for g, w in zip(got, want):
            assert_matches(g, w, dtype if g.dtype == x.dtype else "int64")
