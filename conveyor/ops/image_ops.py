"""``convert_image_dtype`` (``tf.image.convert_image_dtype``) and the dtype
rounding helpers of the image ops.

A module of its own below ``conveyor.image`` and ``conveyor.io``: the image
ops (``conveyor/image/_transform.py``) and ``conveyor.io.decode_image`` (which
converts the decoded pixels to its `dtype`) both use it, and
``conveyor.image`` re-exports the decoders of ``conveyor.io``.
"""
import contextlib
import warnings

import numpy as np

from conveyor import dtypes as _dtypes
from conveyor.framework.tracing import apply, convert, dtype_of, op_error, static_shape

__all__ = ["convert_image_dtype"]


@contextlib.contextmanager
def _quiet():
    """NumPy conversions that TensorFlow lets overflow (to inf, or x86's
    invalid-conversion result): without NumPy's warnings about them."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


def _as(dtype, value):
    """`value` rounded to `dtype` as TensorFlow converts a Python number."""
    with _quiet():
        return np.asarray(value).astype(dtype.as_numpy_dtype)[()]


def _saturate_limits(src, dst):
    """The clamp of tf.saturate_cast(x: src -> dst): [lo, hi] as values of
    `src`, moved one step toward zero where rounding to `src` put them past
    dst's range (float32 cannot hold int32's max)."""
    t = src.as_numpy_dtype
    common = np.promote_types(t, dst.as_numpy_dtype)
    with _quiet():
        lo = _as(src, max(src.min, dst.min))
        hi = _as(src, min(float(src.max), float(dst.max)))
        pair = np.array([lo, dst.min], dtype=common)
        if pair[0] < pair[1]:
            lo = np.nextafter(lo, t(0), dtype=t)
        pair = np.array([hi, dst.max], dtype=common)
        if pair[0] > pair[1]:
            hi = np.nextafter(hi, t(0), dtype=t)
    return lo, hi


def _int64_bits(v):
    v = int(v)
    return v - (1 << 64) if v >= 1 << 63 else v


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """Convert `image` to `dtype`, scaling its values (``tf.image.convert_image_dtype``).

    Floating-point images hold values in [0, 1); integer images use their
    dtype's whole range [0, MAX]. Integer to float divides by MAX (as a
    multiplication by 1/MAX in the output precision, TensorFlow's exact
    arithmetic); float to integer multiplies by MAX + 0.5 and truncates;
    integer to integer shifts by the ratio of the ranges; float to float
    casts. With `saturate`, values are clamped to the output range before
    the cast (otherwise they wrap, as in TensorFlow).

    Raises:
      AttributeError: `dtype` or the image's dtype is neither floating point
        nor integer.
    """
    x = convert(image, name="image")
    dtype = _dtypes.as_dtype(dtype)
    if not (dtype.is_floating or dtype.is_integer):
        raise op_error(AttributeError, "dtype must be either floating point or integer")
    src = dtype_of(x)
    if not (src.is_floating or src.is_integer):
        raise op_error(AttributeError, "image dtype must be either floating point or integer")
    if src == dtype:
        return x
    lo = hi = shift = 0
    scale, flo, fhi = 0.0, 0.0, 0.0
    if src.is_integer and dtype.is_integer:
        if src.max > dtype.max:
            shift = ((src.max + 1) // (dtype.max + 1)).bit_length() - 1
        else:
            shift = -(((dtype.max + 1) // (src.max + 1)).bit_length() - 1)
        if saturate:
            lo, hi = (_int64_bits(v) for v in _saturate_limits(src, dtype))
    elif src.is_integer:
        scale = float(_as(dtype, 1.0 / src.max))
    elif dtype.is_integer:
        scale = float(_as(src, dtype.max + 0.5))
        if saturate:
            flo, fhi = (float(v) for v in _saturate_limits(src, dtype))
    return apply("ConvertImageDtype", [x], [(static_shape(x), dtype)],
                 attrs={"dtype": dtype._code, "saturate": int(bool(saturate)), "int_lo": lo,
                        "int_hi": hi, "shift": shift, "scale": scale, "float_lo": flo,
                        "float_hi": fhi})
