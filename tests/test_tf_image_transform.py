"""conveyor.image's crops, pads, flips and dtype conversion against tf.image.

Deterministic ops must give TensorFlow's exact values (bit for bit) on
random arrays and on real photos, for 3-D and 4-D images, in eager mode and
traced with unknown height and width; errors must have TensorFlow's type
and message. Random ops are compared by their errors only (their values
differ by design).
"""
import glob
import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from conveyor import _engine  # noqa: E402
from conveyor.framework import tracing as _tracing
from conveyor import image as cvi  # noqa: E402

JPEG_DIR = "/work/shared/testdata/jpeg"
NUMERIC = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
           "float32", "float64"]


def photos():
    """Real photos decoded by TensorFlow (uint8 [h, w, 3])."""
    out = []
    for path in sorted(glob.glob(os.path.join(JPEG_DIR, "*.jpg"))):
        try:
            out.append(tf.io.decode_jpeg(tf.io.read_file(path), channels=3).numpy())
        except Exception:  # noqa: BLE001 - a file TensorFlow cannot decode is not a test subject
            continue
    return out


PHOTOS = photos() if os.path.isdir(JPEG_DIR) else []


def same(c, t):
    """Identical dtype, shape and bits."""
    t = np.asarray(t)
    c = np.asarray(c)
    assert c.dtype == t.dtype and c.shape == t.shape, (c.dtype, c.shape, t.dtype, t.shape)
    assert c.tobytes() == t.tobytes(), "values differ"


def traced(fn, x, dims=None):
    """fn run as a traced program on x, with height and width unknown (or
    `dims`, a shape with Nones)."""
    shape = dims if dims is not None else tuple(
        None if i in (x.ndim - 3, x.ndim - 2) else d for i, d in enumerate(x.shape))
    prog, _, specs, _ = _tracing.trace(fn, [cv.TensorSpec(shape, cv.as_dtype(x.dtype))],
                                       lambda flat: flat, "fn")
    return _engine.run_program(prog, [x], 0, 0)[0], specs[0]


def tf_traced(fn, x):
    """fn under tf.function with height and width unknown."""
    shape = [None if i in (x.ndim - 3, x.ndim - 2) else d for i, d in enumerate(x.shape)]
    return tf.function(fn, input_signature=[tf.TensorSpec(shape, tf.as_dtype(x.dtype))])(x)


def errors_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - compared by the caller
        return type(e), str(e)
    return None, None


def assert_same_error(tf_call, cv_call):
    """TensorFlow's Python error: the same type and message."""
    ttype, tmsg = errors_of(tf_call)
    ctype, cmsg = errors_of(cv_call)
    assert ttype is not None and ctype is not None, (ttype, tmsg, ctype, cmsg)
    assert issubclass(ctype, ttype) and cmsg == tmsg, (ctype, cmsg, ttype, tmsg)


# ---------------------------------------------------------------------------
# convert_image_dtype
# ---------------------------------------------------------------------------


def sample(dtype, rng):
    """512 values (a multiple of TensorFlow's vector width, see
    docs/differences.md): random in-range values plus the edges."""
    d = np.dtype(dtype)
    if d.kind == "f":
        special = [0, 1, -1, 0.5, np.nan, np.inf, -np.inf, 1e10, -1e10, 2.0, 0.999, 1e-8, -0.0,
                   1.1, -0.1, 0.0039, 1 / 255]
        v = np.concatenate([rng.uniform(-0.2, 1.2, 200), rng.uniform(0, 1, 512 - 200 - len(special)),
                            special])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return v.astype(d)
    info = np.iinfo(d)
    edges = np.array([info.min, info.max, 0, 1, info.max - 1, info.min + 1, info.max // 2,
                      info.max // 2 + 1], dtype=d)
    return np.concatenate([rng.integers(info.min, info.max, 512 - len(edges), dtype=d,
                                        endpoint=True), edges])


@pytest.mark.parametrize("src", NUMERIC)
def test_convert_image_dtype_every_pair(src):
    rng = np.random.default_rng(NUMERIC.index(src))
    x = sample(src, rng).reshape(8, 16, 4)
    checked = 0
    for dst in NUMERIC:
        for saturate in (False, True):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    want = tf.image.convert_image_dtype(x, getattr(tf, dst), saturate=saturate)
            except tf.errors.NotFoundError:
                continue  # TF has no clip kernel for uint32/uint64 inputs; conveyor does
            got = cvi.convert_image_dtype(x, getattr(cv, dst), saturate=saturate)
            same(got, want)
            checked += 1
    assert checked >= 14


@pytest.mark.parametrize("src,dst", [("uint8", "float32"), ("float32", "uint8"),
                                     ("uint16", "float16"), ("float64", "int16"),
                                     ("int32", "uint8")])
def test_convert_image_dtype_traced(src, dst):
    rng = np.random.default_rng(1)
    x = sample(src, rng).reshape(2, 16, 16)[..., None].repeat(3, -1)
    for saturate in (False, True):
        want = tf.image.convert_image_dtype(x, getattr(tf, dst), saturate=saturate)
        got, spec = traced(lambda v: cvi.convert_image_dtype(v, dst, saturate), x)
        same(got, want)
        assert spec.dtype == getattr(cv, dst) and spec.shape.as_list() == [2, None, None, 3]


def test_convert_image_dtype_photos():
    assert PHOTOS, "no test photos"
    for img in PHOTOS:
        f = cvi.convert_image_dtype(img, cv.float32)
        same(f, tf.image.convert_image_dtype(img, tf.float32))
        for saturate in (False, True):
            same(cvi.convert_image_dtype(f, cv.uint8, saturate),
                 tf.image.convert_image_dtype(f, tf.uint8, saturate))
        same(cvi.convert_image_dtype(img, cv.float16), tf.image.convert_image_dtype(img, tf.float16))
        same(cvi.convert_image_dtype(img, cv.uint16), tf.image.convert_image_dtype(img, tf.uint16))


def test_convert_image_dtype_errors():
    x = np.zeros((2, 2, 3), np.uint8)
    assert_same_error(lambda: tf.image.convert_image_dtype(x, tf.bool),
                      lambda: cvi.convert_image_dtype(x, cv.bool))
    assert_same_error(lambda: tf.image.convert_image_dtype(x, tf.string),
                      lambda: cvi.convert_image_dtype(x, cv.string))
    b = np.zeros((2, 2, 3), bool)
    assert_same_error(lambda: tf.image.convert_image_dtype(b, tf.float32),
                      lambda: cvi.convert_image_dtype(b, cv.float32))


# ---------------------------------------------------------------------------
# flips, crops, pads
# ---------------------------------------------------------------------------


def arrays():
    rng = np.random.default_rng(7)
    out = [rng.integers(0, 256, (5, 7, 3), dtype=np.uint8),
           rng.integers(0, 256, (2, 6, 9, 3), dtype=np.uint8),
           rng.standard_normal((8, 5, 1)).astype(np.float32),
           rng.standard_normal((3, 4, 4, 2)).astype(np.float16),
           rng.integers(-1000, 1000, (9, 4, 5), dtype=np.int16),
           rng.integers(0, 2, (4, 6, 1)).astype(bool),
           rng.standard_normal((1, 1, 1)),
           rng.integers(0, 2**31, (3, 2, 7, 4), dtype=np.int64)]
    return out + PHOTOS[:3]


# fn(module, image, concrete shape): `image` may be a traced placeholder.
DETERMINISTIC = {
    "flip_left_right": lambda m, x, s: m.image.flip_left_right(x),
    "flip_up_down": lambda m, x, s: m.image.flip_up_down(x),
    "central_crop_0.5": lambda m, x, s: m.image.central_crop(x, 0.5),
    "central_crop_0.33": lambda m, x, s: m.image.central_crop(x, 0.33),
    "central_crop_0.875": lambda m, x, s: m.image.central_crop(x, 0.875),
    "central_crop_1": lambda m, x, s: m.image.central_crop(x, 1.0),
    "crop_box": lambda m, x, s: m.image.crop_to_bounding_box(x, 0, min(1, s[-2] - 1), 1, 1),
    "crop_rows": lambda m, x, s: m.image.crop_to_bounding_box(x, 1 if s[-3] > 1 else 0, 0, 1,
                                                              s[-2]),
    "pad": lambda m, x, s: m.image.pad_to_bounding_box(x, 2, 1, s[-3] + 3, s[-2] + 4),
    "pad_none": lambda m, x, s: m.image.pad_to_bounding_box(x, 0, 0, s[-3], s[-2]),
    "crop_or_pad_small": lambda m, x, s: m.image.resize_with_crop_or_pad(x, 3, 2),
    "crop_or_pad_big": lambda m, x, s: m.image.resize_with_crop_or_pad(x, 11, 10),
    "crop_or_pad_mixed": lambda m, x, s: m.image.resize_with_crop_or_pad(x, 1, s[-2] + 3),
}


@pytest.mark.parametrize("name", sorted(DETERMINISTIC))
def test_same_as_tf(name):
    fn = DETERMINISTIC[name]
    for x in arrays():
        want = fn(tf, x, x.shape)
        same(fn(cv, x, x.shape), want)
        if name == "central_crop_1":
            continue  # the image itself: no op to trace
        # Traced with unknown height and width: windows from the run-time shape.
        got, spec = traced(lambda v: fn(cv, v, x.shape), x)
        same(got, want)
        assert spec.shape.is_compatible_with(cv.TensorShape(want.shape))


def test_traced_offsets_from_runtime_shape():
    """Windows computed in C from shapes known only when the element runs
    (TensorFlow's graph path, which rounds the fraction to float32)."""
    sig = {r: tf.TensorSpec([None] * r, tf.uint8) for r in (3, 4)}
    tf_central = {r: tf.function(lambda v, f: tf.image.central_crop(v, f),
                                 input_signature=[sig[r], tf.TensorSpec([], tf.float32)])
                  for r in (3, 4)}
    tf_crop_or_pad = {r: tf.function(lambda v, h, w: tf.image.resize_with_crop_or_pad(v, h, w),
                                     input_signature=[sig[r], tf.TensorSpec([], tf.int32),
                                                      tf.TensorSpec([], tf.int32)])
                      for r in (3, 4)}
    for x in arrays():
        x = (np.arange(x.size) % 251).astype(np.uint8).reshape(x.shape)
        h, w = x.shape[-3], x.shape[-2]
        for frac in (0.1, 0.5, 0.7, 0.99):
            got, _ = traced(lambda v: cvi.central_crop(v, frac), x)
            same(got, tf_central[x.ndim](x, frac))
        for th, tw in ((1, 1), (h + 1, w), (max(h - 1, 1), w + 2), (2 * h + 1, 3)):
            got, _ = traced(lambda v: cvi.resize_with_crop_or_pad(v, th, tw), x)
            same(got, tf_crop_or_pad[x.ndim](x, th, tw))


def test_central_crop_rounding():
    """TensorFlow's int((size - size * fraction) / 2) on many sizes."""
    for h in (1, 2, 3, 7, 10, 99, 101, 224, 333):
        x = np.arange(h * 5, dtype=np.int32).reshape(h, 5, 1)
        for frac in (0.01, 0.1, 0.25, 0.3, 1 / 3, 0.5, 0.6, 0.875, 0.9, 0.95, 0.999):
            same(cvi.central_crop(x, frac), tf.image.central_crop(x, frac))


def test_photos_crops():
    assert PHOTOS, "no test photos"
    for img in PHOTOS:
        h, w = img.shape[:2]
        batch = np.stack([img, img[::-1]])
        for x in (img, batch):
            same(cvi.crop_to_bounding_box(x, h // 4, w // 3, h // 2, w // 2),
                 tf.image.crop_to_bounding_box(x, h // 4, w // 3, h // 2, w // 2))
            same(cvi.pad_to_bounding_box(x, 3, 5, h + 10, w + 7),
                 tf.image.pad_to_bounding_box(x, 3, 5, h + 10, w + 7))
            same(cvi.resize_with_crop_or_pad(x, 224, 224),
                 tf.image.resize_with_crop_or_pad(x, 224, 224))
            same(cvi.central_crop(x, 0.875), tf.image.central_crop(x, 0.875))
            same(cvi.flip_left_right(x), tf.image.flip_left_right(x))
            same(cvi.flip_up_down(x), tf.image.flip_up_down(x))


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------

IMG = np.zeros((5, 6, 3), np.uint8)
STATIC_ERRORS = {
    "crop offset_height": lambda m: m.image.crop_to_bounding_box(IMG, -1, 0, 2, 2),
    "crop offset_width": lambda m: m.image.crop_to_bounding_box(IMG, 0, -1, 2, 2),
    "crop target_height": lambda m: m.image.crop_to_bounding_box(IMG, 0, 0, 0, 2),
    "crop target_width": lambda m: m.image.crop_to_bounding_box(IMG, 0, 0, 2, 0),
    "crop too wide": lambda m: m.image.crop_to_bounding_box(IMG, 0, 2, 2, 5),
    "crop too tall": lambda m: m.image.crop_to_bounding_box(IMG, 3, 0, 3, 2),
    "crop rank 2": lambda m: m.image.crop_to_bounding_box(IMG[0], 0, 0, 1, 1),
    "crop rank 5": lambda m: m.image.crop_to_bounding_box(IMG[None, None], 0, 0, 1, 1),
    "crop zero dim": lambda m: m.image.crop_to_bounding_box(IMG[:0], 0, 0, 1, 1),
    "crop float target": lambda m: m.image.crop_to_bounding_box(IMG, 0, 0, 1, 1.5),
    "crop_or_pad float target": lambda m: m.image.resize_with_crop_or_pad(IMG, 2.5, 3),
    "pad offset_height": lambda m: m.image.pad_to_bounding_box(IMG, -1, 0, 9, 9),
    "pad offset_width": lambda m: m.image.pad_to_bounding_box(IMG, 0, -1, 9, 9),
    "pad too small width": lambda m: m.image.pad_to_bounding_box(IMG, 0, 2, 9, 7),
    "pad too small height": lambda m: m.image.pad_to_bounding_box(IMG, 1, 0, 5, 9),
    "pad zero dim": lambda m: m.image.pad_to_bounding_box(IMG[:, :, :0], 0, 0, 9, 9),
    "crop_or_pad target_height": lambda m: m.image.resize_with_crop_or_pad(IMG, 0, 3),
    "crop_or_pad target_width": lambda m: m.image.resize_with_crop_or_pad(IMG, 3, -2),
    "crop_or_pad rank": lambda m: m.image.resize_with_crop_or_pad(IMG[0], 3, 3),
    "central 0": lambda m: m.image.central_crop(IMG, 0.0),
    "central 1.5": lambda m: m.image.central_crop(IMG, 1.5),
    "central rank 2": lambda m: m.image.central_crop(IMG[0], 0.5),
    "central rank 5": lambda m: m.image.central_crop(IMG[None, None], 0.5),
    "central zero dim": lambda m: m.image.central_crop(IMG[:, :0], 0.5),
    "flip rank 2": lambda m: m.image.flip_left_right(IMG[0]),
    "flip rank 5": lambda m: m.image.flip_up_down(IMG[None, None]),
    "flip zero dim": lambda m: m.image.flip_left_right(IMG[:0]),
    "random flip rank 5": lambda m: m.image.random_flip_left_right(IMG[None, None]),
    "random flip rank 2": lambda m: m.image.random_flip_up_down(IMG[0]),
    "random_crop too big": lambda m: m.image.random_crop(IMG, [6, 6, 3]),
    "random_crop rank": lambda m: m.image.random_crop(IMG, [5, 6]),
    "random_crop float size": lambda m: m.image.random_crop(IMG, [5, 6, 2.5]),
}


@pytest.mark.parametrize("name", sorted(STATIC_ERRORS))
def test_static_errors(name):
    fn = STATIC_ERRORS[name]
    ttype, tmsg = errors_of(lambda: fn(tf))
    ctype, cmsg = errors_of(lambda: fn(cv))
    assert ttype is not None and ctype is not None, (ttype, tmsg, ctype, cmsg)
    if issubclass(ttype, tf.errors.OpError):
        assert issubclass(ctype, getattr(cv.errors, ttype.__name__)), (ctype, cmsg, tmsg)
        if "Need value.shape" in tmsg or "Incompatible shapes" in tmsg:
            assert cmsg.split(", got")[0].split(":")[0] in tmsg, (cmsg, tmsg)
    elif issubclass(ttype, TypeError):
        assert issubclass(ctype, TypeError), (ctype, cmsg)
    else:
        assert issubclass(ctype, ttype), (ctype, cmsg, ttype, tmsg)
        assert cmsg == tmsg


RUNTIME_ERRORS = {
    "crop too tall": (lambda m, v: m.image.crop_to_bounding_box(v, 2, 0, 4, 2), (5, 6, 3)),
    "crop too wide": (lambda m, v: m.image.crop_to_bounding_box(v, 0, 4, 2, 3), (5, 6, 3)),
    "pad too small": (lambda m, v: m.image.pad_to_bounding_box(v, 0, 0, 4, 9), (5, 6, 3)),
    "pad too narrow": (lambda m, v: m.image.pad_to_bounding_box(v, 0, 1, 9, 6), (5, 6, 3)),
    "flip zero dim": (lambda m, v: m.image.flip_left_right(v), (0, 6, 3)),
    "crop_or_pad zero dim": (lambda m, v: m.image.resize_with_crop_or_pad(v, 3, 3), (5, 0, 3)),
    "random_crop too big": (lambda m, v: m.image.random_crop(v, [6, 3, 3]), (5, 6, 3)),
}


@pytest.mark.parametrize("name", sorted(RUNTIME_ERRORS))
def test_runtime_errors(name):
    """Shapes known only at run time: InvalidArgumentError at the element,
    with TensorFlow's assertion message."""
    fn, shape = RUNTIME_ERRORS[name]
    x = np.zeros(shape, np.uint8)
    spec = (None, None, None)
    tfn = tf.function(lambda v: fn(tf, v), input_signature=[tf.TensorSpec(spec, tf.uint8)])
    prog, _, _, _ = _tracing.trace(lambda v: fn(cv, v), [cv.TensorSpec(spec, cv.uint8)],
                                   lambda flat: flat, "fn")
    ttype, tmsg = errors_of(lambda: tfn(x))
    ctype, cmsg = errors_of(lambda: _engine.run_program(prog, [x], 0, 3))
    assert ttype is tf.errors.InvalidArgumentError, (ttype, tmsg)
    assert ctype is cv.errors.InvalidArgumentError, (ctype, cmsg)
    assert cmsg.startswith("fn (element 3), in ")
    core = cmsg.split(": ", 1)[1]
    assert core.split(", got")[0] in tmsg.replace("\\'", "'"), (core, tmsg)


# ---------------------------------------------------------------------------
# rotations, colour, brightness, standardization
# ---------------------------------------------------------------------------


def test_rot90_and_transpose():
    for x in arrays():
        for k in (-1, 0, 1, 2, 3, 5):
            same(cvi.rot90(x, k), tf.image.rot90(x, k))
        same(cvi.transpose(x), tf.image.transpose(x))
        got, spec = traced(lambda v: cvi.rot90(v, 3), x)
        same(got, tf.image.rot90(x, 3))
    x = PHOTOS[0] if PHOTOS else arrays()[0]
    prog, _, _, _ = _tracing.trace(lambda v, k: cvi.rot90(v, k),
                                   [cv.TensorSpec((None, None, 3), cv.uint8),
                                    cv.TensorSpec((), cv.int32)], lambda flat: flat, "fn")
    for k in range(-2, 6):
        same(_engine.run_program(prog, [x, np.int32(k)], 0, 0)[0], tf.image.rot90(x, k))


def color_arrays():
    rng = np.random.default_rng(11)
    out = [rng.integers(0, 256, (5, 7, 3), dtype=np.uint8),
           rng.integers(0, 65536, (2, 3, 4, 3), dtype=np.uint16),
           rng.integers(-2**31, 2**31, (4, 4, 3), dtype=np.int32),
           rng.integers(-128, 128, (6, 3), dtype=np.int8),
           rng.uniform(-0.1, 1.1, (4, 5, 3)).astype(np.float32),
           rng.uniform(0, 1, (4, 5, 3)).astype(np.float16),
           rng.uniform(0, 1, (3, 3, 3))]
    return out + PHOTOS


def test_rgb_to_grayscale_and_back():
    for x in color_arrays():
        gray = cvi.rgb_to_grayscale(x)
        same(gray, tf.image.rgb_to_grayscale(x))
        try:
            want = tf.image.grayscale_to_rgb(tf.constant(gray))
        except tf.errors.UnimplementedError:  # TF's Tile lacks some dtypes (4-D uint16)
            want = np.repeat(gray, 3, axis=-1)
        same(cvi.grayscale_to_rgb(gray), want)
        got, spec = traced(lambda v: cvi.rgb_to_grayscale(v), x, dims=(None,) * (x.ndim - 1) + (3,))
        same(got, gray)
        assert spec.shape.as_list()[-1] == 1


def test_adjust_brightness():
    for x in color_arrays():
        for delta in (-0.3, 0.0, 0.1, 0.5, 1.5):
            same(cvi.adjust_brightness(x, delta), tf.image.adjust_brightness(x, delta))


def test_per_image_standardization():
    """Float32 sums: conveyor sums in double, TensorFlow in float32 trees;
    the results agree to float32 rounding."""
    for x in color_arrays() + [np.full((3, 4, 2), 7, np.uint8), np.zeros((2, 2, 2, 2), bool)]:
        if x.ndim < 3:
            continue
        want = tf.image.per_image_standardization(x).numpy()
        got = cvi.per_image_standardization(x)
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


MORE_ERRORS = {
    "rot90 k vector": lambda m: m.image.rot90(IMG, [1]),
    "rot90 rank 2": lambda m: m.image.rot90(IMG[0]),
    "rot90 rank 5": lambda m: m.image.rot90(IMG[None, None]),
    "transpose rank 5": lambda m: m.image.transpose(IMG[None, None]),
    "transpose zero": lambda m: m.image.transpose(IMG[:0]),
    "standardize rank 2": lambda m: m.image.per_image_standardization(IMG[0]),
    "standardize zero": lambda m: m.image.per_image_standardization(IMG[:, :0]),
    "grayscale bool": lambda m: m.image.rgb_to_grayscale(IMG.astype(bool)),
    "brightness bool": lambda m: m.image.adjust_brightness(IMG.astype(bool), 0.1),
    "grayscale_to_rgb rank 1": lambda m: m.image.grayscale_to_rgb(
        tf.constant(IMG[0, 0]) if m is tf else IMG[0, 0]),
    "grayscale_to_rgb 3 channels": lambda m: m.image.grayscale_to_rgb(
        tf.constant(IMG) if m is tf else IMG),
}


@pytest.mark.parametrize("name", sorted(MORE_ERRORS))
def test_more_static_errors(name):
    fn = MORE_ERRORS[name]
    assert_same_error(lambda: fn(tf), lambda: fn(cv))
