"""tf.bfloat16 against TensorFlow: tf.cast both ways, convert_image_dtype,
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
    for fn in (lambda: cv.add(x, x), lambda: cv.image.resize(x, [2, 2]),
               lambda: cv.reduce_sum(x), lambda: cv.image.adjust_brightness(x, 0.1)):
        with pytest.raises(TypeError, match="bfloat16"):
            fn()
    # moving values is fine
    same(cv.image.flip_left_right(x), tf.image.flip_left_right(tf.constant(x)).numpy())
    same(cv.reshape(x, [-1]), tf.reshape(tf.constant(x), [-1]).numpy())
    with pytest.raises(TypeError, match="bfloat16"):
        cv.data.Dataset.from_tensors(x).map(lambda v: cv.image.resize(v, [2, 2]))


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
