"""tf.bfloat16 against TensorFlow: tf.cast both ways, convert_image_dtype,
arithmetic, reductions and the image ops that take it (bit for bit: float32,
rounded to nearest even after each step of TensorFlow's functor),
element_spec, and arrays out as ml_dtypes.bfloat16 (what TensorFlow's
numpy() returns), eagerly and traced in Dataset.map; without ml_dtypes,
conveyor imports and a bfloat16 tensor raises ImportError naming it."""
import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
ml_dtypes = pytest.importorskip("ml_dtypes")

import conveyor as cv  # noqa: E402
from conveyor.framework.tracing import TracingWarning  # noqa: E402


def floats(rs):
    """Ties, halfway+1ulp, subnormals, infinities, NaN, huge values."""
    x = rs.standard_normal(2000).astype(np.float32) * np.float32(1000)
    bits = rs.randint(0, 2**32, 2000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    ties = (np.arange(0, 64, dtype=np.uint32) << 16 | 0x8000).view(np.float32) + 0
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-42, 3.4e38, 1.00390625,
                        1.01171875], np.float32)
    out = np.concatenate([x, bits, ties, special])
    return out[~np.isnan(out)] if False else out


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    g, w = got.view(np.uint16 if got.itemsize == 2 else got.dtype), want.view(
        np.uint16 if want.itemsize == 2 else want.dtype)
    if got.dtype == ml_dtypes.bfloat16 or got.dtype.kind == "f":
        nan = np.isnan(got.astype(np.float32))
        assert (nan == np.isnan(want.astype(np.float32))).all()
        g, w = g[~nan], w[~nan]
    np.testing.assert_array_equal(g, w)


def test_dtype_names_and_properties():
    assert cv.bfloat16.name == tf.bfloat16.name == "bfloat16"
    assert repr(cv.bfloat16) == repr(tf.bfloat16)
    assert cv.bfloat16.as_numpy_dtype is tf.bfloat16.as_numpy_dtype is ml_dtypes.bfloat16
    assert cv.bfloat16.is_floating and not cv.bfloat16.is_integer
    assert cv.bfloat16.size == 2 and cv.bfloat16.max == tf.bfloat16.max
    assert cv.as_dtype("bfloat16") == cv.bfloat16 == np.dtype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("src", ["float32", "float64", "float16", "int32", "int64", "uint8",
                                 "int8", "bool"])
def test_cast_to_and_from_bfloat16_matches_tensorflow(src):
    rs = np.random.RandomState(0)
    with np.errstate(all="ignore"):
        if src == "bool":
            x = rs.randint(0, 2, 100).astype(bool)
        elif np.dtype(src).kind == "f":
            x = floats(rs).astype(src)
        else:
            info = np.iinfo(src)
            x = rs.randint(info.min, int(info.max) + 1, 3000, dtype=np.int64).astype(src)
    want = tf.cast(x, tf.bfloat16).numpy()
    got = cv.cast(x, cv.bfloat16)
    same(got, want)
    back_want = tf.cast(want, getattr(tf, src)).numpy()
    back_got = cv.cast(got, getattr(cv, src))
    same(back_got, back_want)


@pytest.mark.parametrize("src,dst", [("uint8", "bfloat16"), ("float32", "bfloat16"),
                                     ("bfloat16", "float32"), ("bfloat16", "uint8"),
                                     ("int16", "bfloat16"), ("bfloat16", "int32")])
@pytest.mark.parametrize("saturate", [False, True])
def test_convert_image_dtype_matches_tensorflow(src, dst, saturate):
    rs = np.random.RandomState(1)
    # Out-of-range floats only with saturate: without it TensorFlow's cast
    # wraps its scalar tail (docs/differences.md)
    lo, hi = (-0.2, 1.2) if saturate else (0.0, 1.0)
    if src == "bfloat16":
        x = rs.uniform(lo, hi, [6, 7, 3]).astype(ml_dtypes.bfloat16)
    elif src == "float32":
        x = rs.uniform(lo, hi, [6, 7, 3]).astype(np.float32)
    else:
        info = np.iinfo(src)
        x = rs.randint(info.min, int(info.max) + 1, [6, 7, 3]).astype(src)
    want = tf.image.convert_image_dtype(x, getattr(tf, dst), saturate=saturate).numpy()
    got = cv.image.convert_image_dtype(x, getattr(cv, dst), saturate=saturate)
    same(got, want)


def test_bfloat16_in_map_matches_tensorflow():
    images = np.random.RandomState(2).randint(0, 256, [5, 4, 6, 3]).astype(np.uint8)

    def fn(lib):
        def f(image):
            x = lib.image.convert_image_dtype(image, lib.bfloat16)
            return x, lib.cast(lib.cast(image, lib.float32) / 7.0, lib.bfloat16)
        return f

    want_ds = tf.data.Dataset.from_tensor_slices(images).map(fn(tf)).batch(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracingWarning)
        got_ds = cv.data.Dataset.from_tensor_slices(images).map(fn(cv)).batch(2)
        got = list(got_ds.as_numpy_iterator())
    assert repr(got_ds.element_spec) == repr(want_ds.element_spec)
    for g, w in zip(got, want_ds.as_numpy_iterator()):
        for a, b in zip(g, w):
            assert type(np.asarray(a).dtype) is type(b.dtype)
            same(a, b)


def test_bfloat16_arrays_in_and_out():
    x = np.array([[1.5, -2.25], [3.0, 1e-3]], ml_dtypes.bfloat16)
    for lib in (tf, cv):
        ds = lib.data.Dataset.from_tensor_slices(x)
        assert ds.element_spec.dtype == lib.bfloat16
    got = list(cv.data.Dataset.from_tensor_slices(x).as_numpy_iterator())
    want = list(tf.data.Dataset.from_tensor_slices(x).as_numpy_iterator())
    for g, w in zip(got, want):
        same(g, w)
    same(cv.constant([1.5, 2.0], dtype=cv.bfloat16), tf.constant([1.5, 2.0],
                                                                  dtype=tf.bfloat16).numpy())


def test_without_ml_dtypes_import_error_names_it(run_python):
    code = (
        "import sys; sys.modules['ml_dtypes'] = None\n"
        "import numpy as np, conveyor as tf\n"
        "assert tf.bfloat16.name == 'bfloat16'\n"
        "print(list(tf.data.Dataset.range(2).map(lambda x: tf.cast(x, tf.float32))))\n"
        "try:\n"
        "    tf.cast(np.float32(1), tf.bfloat16)\n"
        "except ImportError as e:\n"
        "    print('ImportError', e)\n")
    out = run_python(code)
    assert "ImportError" in out.stdout and "ml_dtypes" in out.stdout, out


def test_ops_that_would_misread_bfloat16_refuse_it():
    x = cv.cast(np.ones([4, 4, 3], np.float32), cv.bfloat16)
    for fn in (lambda: cv.reduce_prod(x), lambda: cv.cumsum(x),
               lambda: cv.image.crop_and_resize(x[None], [[0, 0, 1, 1]], [0], [2, 2])):
        with pytest.raises(TypeError, match="bfloat16"):
            fn()
    # moving values is fine
    same(cv.image.flip_left_right(x), tf.image.flip_left_right(tf.constant(x)).numpy())
    same(cv.reshape(x, [-1]), tf.reshape(tf.constant(x), [-1]).numpy())
    with pytest.raises(TypeError, match="bfloat16"):
        cv.data.Dataset.from_tensors(x).map(lambda v: cv.math.cumsum(v))


def _bf16_pair(seed=4, n=3000):
    rs = np.random.RandomState(seed)
    a = (rs.standard_normal(n) * 100).astype(np.float32)
    b = (rs.standard_normal(n) * 3).astype(np.float32)
    # Ties of float32 -> bfloat16, infinities, NaN, zeros and huge values; no
    # subnormals (TensorFlow flushes them, conveyor's arithmetic keeps them:
    # docs/differences.md).
    ties = ((np.arange(0, 56, dtype=np.uint32) + 0x3f00) << 16 | 0x8000).view(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.4e38, -3.3e38, 1.00390625,
                        1.01171875, 2.0], np.float32)
    a[-66:] = np.concatenate([ties, special])
    b[:66] = np.concatenate([special, ties])
    return a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)


BINARY = ["add", "subtract", "multiply", "divide", "truediv", "maximum", "minimum",
          "squared_difference", "floordiv", "floormod", "pow", "less", "equal", "greater_equal",
          "divide_no_nan", "atan2"]
UNARY = ["negative", "abs", "sqrt", "log", "floor", "ceil", "round", "square", "tanh", "sigmoid",
         "rsqrt", "reciprocal", "sign", "is_nan", "is_finite", "softplus", "sin", "log1p"]


def _tf_np(v):
    return v.numpy() if hasattr(v, "numpy") else np.asarray(v)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("fname", BINARY)
def test_binary_math_matches_tensorflow_bit_for_bit(fname, dtype):
    """float32 then round to nearest even per step of TensorFlow's functor
    (squared_difference rounds the difference, floordiv the quotient)."""
    a, b = _bf16_pair()
    if dtype == "float16":
        with np.errstate(over="ignore"):  # the huge values become infinities
            a, b = a.astype(np.float16), b.astype(np.float16)
    if fname == "pow":
        a = np.abs(a)
    with np.errstate(all="ignore"):
        want = _tf_np(getattr(tf.math, fname)(a, b))
    same(getattr(cv.math, fname)(a, b), want)


@pytest.mark.parametrize("fname", UNARY)
def test_unary_math_matches_tensorflow_bit_for_bit(fname):
    a, b = _bf16_pair()
    x = np.abs(a) if fname in ("sqrt", "log", "rsqrt") else b
    if fname == "reciprocal":  # no subnormal results (see _bf16_pair)
        x = np.where(np.abs(x.astype(np.float32)) > 1e30, x.dtype.type(1e30), x)
    same(getattr(cv.math, fname)(x), _tf_np(getattr(tf.math, fname)(x)))


@pytest.mark.parametrize("fname", ["sigmoid", "squared_difference", "floordiv"])
def test_float16_steps_match_tensorflow(fname):
    """The float16 functions whose TensorFlow functor rounds between steps."""
    with np.errstate(over="ignore"):  # the huge values become infinities
        a, b = (v.astype(np.float16) for v in _bf16_pair(5))
    args = (b,) if fname == "sigmoid" else (a, b)
    same(getattr(cv.math, fname)(*args), _tf_np(getattr(tf.math, fname)(*args)))


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("axis", [None, 0, 1, [0, 1]])
def test_reductions_match_tensorflow(kind, axis):
    """Reduced in float32, rounded once (reduce_prod rounds per factor: refused)."""
    a, _ = _bf16_pair(6)
    m = a.reshape(30, 100)
    fn = "reduce_" + kind
    same(getattr(cv, fn)(m, axis), _tf_np(getattr(tf, fn)(m, axis)))
    same(getattr(cv, fn)(m, axis, keepdims=True), _tf_np(getattr(tf, fn)(m, axis, keepdims=True)))


def test_recipe_style_bfloat16_map_is_traced_and_matches_tensorflow():
    """tensorflow/models' ImageNet preprocessing ends in bfloat16: normalize,
    scale and resize around it, as a traced map."""
    images = np.random.RandomState(7).randint(0, 256, [4, 10, 12, 3]).astype(np.uint8)

    def fn(t):
        def f(image):
            x = t.cast(image, t.bfloat16)
            x = (x - t.constant([123.675, 116.28, 103.53], t.bfloat16)) / 58.0
            y = t.image.resize(x, [5, 6])
            z = t.image.per_image_standardization(x)
            k = t.argmax(t.reshape(x, [-1]), output_type=t.int32)
            return (x * 2.0 + 1, y, z, t.reduce_mean(x, [0, 1]), t.math.squared_difference(x, x / 3),
                    t.sigmoid(x), t.one_hot(k, 4, dtype=t.bfloat16), t.image.rgb_to_grayscale(x),
                    t.image.adjust_brightness(x, 0.25), t.pad(x, [[1, 1], [0, 0], [0, 0]]),
                    t.image.rot90(x), x > 0.5, t.maximum(x, 0.0))
        return f

    want = list(tf.data.Dataset.from_tensor_slices(images).map(fn(tf)).as_numpy_iterator())
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracingWarning)
        ds = cv.data.Dataset.from_tensor_slices(images).map(fn(cv))
        assert "mode=native" in repr(ds)
        got = list(ds.as_numpy_iterator())
    for g, w in zip(got, want):
        for i, (a, b) in enumerate(zip(g, w)):
            if i == 2:  # per_image_standardization is float32: as close as for float32 images
                np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
            else:
                same(a, b)


def test_one_hot_bfloat16_writes_bfloat16():
    """OneHot stores bfloat16 as bfloat16 (it wrote doubles before: past the end)."""
    for on, off in ((None, None), (2.7, -1.0)):
        kw = {} if on is None else {"on_value": on, "off_value": off}
        same(cv.one_hot([1, 2, 5, 0], 3, dtype=cv.bfloat16, **kw),
             tf.one_hot([1, 2, 5, 0], 3, dtype=tf.bfloat16, **kw).numpy())


@pytest.mark.parametrize("little_endian", [True, False])
def test_decode_raw_bfloat16_matches_tensorflow(little_endian):
    values = floats(np.random.RandomState(3))[:64]
    as_bf16 = values.astype(ml_dtypes.bfloat16)
    raw = (as_bf16.view(np.uint16) if little_endian else as_bf16.view(">u2").byteswap()
           .view(np.uint16)).tobytes()
    want = tf.io.decode_raw([raw, raw], tf.bfloat16, little_endian=little_endian).numpy()
    same(cv.io.decode_raw([raw, raw], cv.bfloat16, little_endian=little_endian), want)
    ds = cv.data.Dataset.from_tensors(raw).map(
        lambda r: cv.io.decode_raw(r, cv.bfloat16, little_endian=little_endian))
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracingWarning)
        assert ds.element_spec.dtype == cv.bfloat16
        same(next(iter(ds)), want[0])
    fixed = tf.io.decode_raw([raw], tf.bfloat16, fixed_length=8).numpy()
    same(cv.io.decode_raw([raw], cv.bfloat16, fixed_length=8), fixed)
