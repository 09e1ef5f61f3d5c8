"""Colour adjustments and the stateless random augmentations of ``tf.image``.

``adjust_saturation``, ``adjust_hue``, ``adjust_contrast``, ``rgb_to_hsv``,
``hsv_to_rgb`` compute what TensorFlow's CPU kernels compute, in float32
(integer images go through ``convert_image_dtype`` as in TensorFlow).

The ``stateless_random_*`` ops draw from TensorFlow's stateless stream
(``conveyor.random.stateless_uniform``): the same seed gives TensorFlow's
flips, crops and factors. The stateful ``random_*`` ops draw from
conveyor's per-element stream (reproducible with a seed whatever the thread
count, not TensorFlow's values; see docs/differences.md).
"""
import numpy as np

from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor import random as _random
from conveyor.ops.image_ops import convert_image_dtype
from conveyor.ops.stateless_random_ops import _seed, stateless_uniform
from conveyor.framework.tracing import Tensor, apply, dtype_of, op_error, static_shape
from conveyor.image._transform import (_RANDOM, _check_inner_dims, _image, _shape_str,
                                       adjust_brightness)

__all__ = ["adjust_saturation", "adjust_hue", "adjust_contrast", "adjust_gamma", "rgb_to_hsv",
           "hsv_to_rgb", "random_saturation", "random_hue", "random_contrast",
           "random_brightness", "stateless_random_flip_left_right",
           "stateless_random_flip_up_down", "stateless_random_brightness",
           "stateless_random_contrast", "stateless_random_crop", "stateless_random_saturation",
           "stateless_random_hue"]

# AdjustHsv modes (csrc/ops/adjust_hsv.c).
_SATURATION, _HUE, _TO_HSV, _TO_RGB = range(4)
_STATELESS_CROP = _RANDOM + 1  # CropOrPad's STATELESS mode (csrc/ops/crop.c)


def _cast(x, dtype):
    return apply("Cast", [x], [(static_shape(x), dtype)], attrs={"dtype": dtype._code})


def _to_float(image, op):
    """TensorFlow's working image of the colour ops: float32 as it is,
    float16 refused (TensorFlow's `op` has no CPU kernel for it), other
    dtypes through ``convert_image_dtype``."""
    x, shape = _image(image)
    src = dtype_of(x)
    if not (src.is_floating or src.is_integer):
        raise op_error(AttributeError, "image dtype must be either floating point or integer")
    if src == _dtypes.float32:
        return x, src
    if src == _dtypes.float16:
        raise op_error(_errors.NotFoundError, f"Could not find device for node: {op} = "
                                              f"{op}[T=DT_HALF] (TensorFlow has no CPU kernel "
                                              f"for float16 images here)")
    return convert_image_dtype(x, _dtypes.float32), src


def _from_float(x, src, saturate):
    if src == _dtypes.float32:
        return x
    return convert_image_dtype(x, src, saturate=saturate)


def _factor(value, name):
    """A factor argument: ([], float32 value) for a number, ([tensor], 0.0)
    for a scalar float tensor."""
    if isinstance(value, Tensor):
        if value.shape.rank not in (None, 0) or not dtype_of(value).is_floating:
            raise op_error(TypeError, f"`{name}` must be a scalar float tensor, got {value!r}")
        if dtype_of(value) == _dtypes.float16:
            value = _cast(value, _dtypes.float32)
        return [value], 0.0
    try:
        arr = np.asarray(value)
        if arr.ndim or arr.dtype.kind not in "iuf":
            raise TypeError
        return [], float(np.float32(arr))
    except (TypeError, ValueError):
        raise op_error(TypeError, f"`{name}` must be a float scalar, got {value!r}") from None


def _hsv_op(image, mode, value, name, saturate=False):
    x, src = _to_float(image, "AdjustSaturation" if mode == _SATURATION else "AdjustHue")
    extra, number = _factor(value, name)
    out = apply("AdjustHsv", [x] + extra, [(static_shape(x), _dtypes.float32)],
                attrs={"mode": mode, "value": number})
    return _from_float(out, src, saturate)


def adjust_saturation(image, saturation_factor, name=None):
    """Multiply the saturation of RGB `image` by `saturation_factor`
    (``tf.image.adjust_saturation``): to HSV, S times the factor clipped to
    [0, 1], back to RGB, with TensorFlow's float32 arithmetic."""
    return _hsv_op(image, _SATURATION, saturation_factor, "saturation_factor")


def adjust_hue(image, delta, name=None):
    """Rotate the hue of RGB `image` by `delta` (a fraction of the colour
    circle in [-1, 1]) (``tf.image.adjust_hue``)."""
    if not isinstance(delta, Tensor) and not isinstance(image, Tensor):
        d = float(np.asarray(delta))
        if d < -1 or d > 1:
            raise op_error(ValueError, "delta must be in the interval [-1, 1]")
    return _hsv_op(image, _HUE, delta, "delta")


def adjust_contrast(images, contrast_factor):
    """(x - mean) * contrast_factor + mean for each channel of each image
    (``tf.image.adjust_contrast``); the mean over height and width is summed
    in TensorFlow's order. Integer images are converted to float32 and back
    with saturation."""
    x, src = _to_float(images, "AdjustContrastv2")
    shape = static_shape(x)
    if isinstance(x, Tensor) and shape is not None and len(shape) < 3:  # eagerly: the op's error
        raise op_error(ValueError, f"Shape must be at least rank 3 but is rank {len(shape)}")
    extra, number = _factor(contrast_factor, "contrast_factor")
    out = apply("AdjustContrastv2", [x] + extra, [(shape, _dtypes.float32)],
                attrs={"factor": number})
    return _from_float(out, src, True)


def adjust_gamma(image, gamma=1, gain=1):
    """gain * image ** gamma (``tf.image.adjust_gamma``): integer images are
    converted to float32 and back with saturation; float16 is computed in
    float32 and rounded back. `gamma` and `gain` are Python numbers here.
    Within 1 ulp of TensorFlow's float32 power (docs/differences.md)."""
    for value, name in ((gamma, "gamma"), (gain, "gain")):
        if isinstance(value, Tensor):
            raise op_error(TypeError, f"conveyor's adjust_gamma needs a Python number for "
                                      f"`{name}`, not a traced tensor")
    if gamma < 0:
        raise op_error(ValueError, "Gamma should be a non-negative real number.")
    x, shape = _image(image)
    src = dtype_of(x)
    if not (src.is_floating or src.is_integer):
        raise op_error(AttributeError, "image dtype must be either floating point or integer")
    if src == _dtypes.float16:
        x = _cast(x, _dtypes.float32)
    elif src != _dtypes.float32:
        x = convert_image_dtype(x, _dtypes.float32)
    out = apply("AdjustGamma", [x], [(shape, _dtypes.float32)],
                attrs={"gamma": float(np.float32(gamma)), "gain": float(np.float32(gain))})
    if src == _dtypes.float16:
        return _cast(out, src)
    return _from_float(out, src, True)


def _colorspace(images, mode):
    x, _ = _image(images, "images")
    dtype = dtype_of(x)
    if not (dtype.is_floating or dtype.is_integer):
        raise op_error(TypeError, f"`images` must be numeric, got {dtype.name}")
    if dtype != _dtypes.float32:  # TensorFlow casts the rest
        x, dtype = _cast(x, _dtypes.float32), _dtypes.float32
    shape = static_shape(x)
    return apply("AdjustHsv", [x], [(shape, dtype)], attrs={"mode": mode, "value": 0.0})


def rgb_to_hsv(images, name=None):
    """RGB `images` (last dim 3, values in [0, 1]) to HSV
    (``tf.image.rgb_to_hsv``); hue is a fraction of 1. As TensorFlow, it
    casts (does not scale) every other dtype to float32, float64 too."""
    return _colorspace(images, _TO_HSV)


def hsv_to_rgb(images, name=None):
    """HSV `images` to RGB (``tf.image.hsv_to_rgb``)."""
    return _colorspace(images, _TO_RGB)


def _check_range(lower, upper):
    if upper <= lower:
        raise op_error(ValueError, "upper must be > lower.")
    if lower < 0:
        raise op_error(ValueError, "lower must be non-negative.")


def _check_delta(max_delta, most=None):
    if most is not None and max_delta > most:
        raise op_error(ValueError, f"max_delta must be <= {most}.")
    if max_delta < 0:
        raise op_error(ValueError, "max_delta must be non-negative.")


def random_brightness(image, max_delta, seed=None):
    """adjust_brightness by a delta uniform in [-max_delta, max_delta)
    (``tf.image.random_brightness``), drawn from conveyor's per-element
    stream."""
    _check_delta(max_delta)
    return adjust_brightness(image, _random.uniform([], -max_delta, max_delta, seed=seed))


def random_contrast(image, lower, upper, seed=None):
    """adjust_contrast by a factor uniform in [lower, upper)
    (``tf.image.random_contrast``), from conveyor's per-element stream."""
    _check_range(lower, upper)
    return adjust_contrast(image, _random.uniform([], lower, upper, seed=seed))


def random_saturation(image, lower, upper, seed=None):
    """adjust_saturation by a factor uniform in [lower, upper)
    (``tf.image.random_saturation``), from conveyor's per-element stream."""
    _check_range(lower, upper)
    return adjust_saturation(image, _random.uniform([], lower, upper, seed=seed))


def random_hue(image, max_delta, seed=None):
    """adjust_hue by a delta uniform in [-max_delta, max_delta), max_delta
    <= 0.5 (``tf.image.random_hue``), from conveyor's per-element stream."""
    _check_delta(max_delta, 0.5)
    return adjust_hue(image, _random.uniform([], -max_delta, max_delta, seed=seed))


def _stateless_flip(image, axis, seed):
    x, shape = _image(image)
    if shape is not None:
        if len(shape) < 3:
            raise op_error(ValueError, f"'image' (shape {_shape_str(shape)}) must be at least "
                                       f"three-dimensional.")
        _check_inner_dims(shape)
        if len(shape) > 4:
            raise op_error(ValueError, f"'image' (shape {_shape_str(shape)}) must have either 3 "
                                       f"or 4 dimensions.")
    return apply("ReverseV2", [x, _seed(seed)], [(shape, dtype_of(x))],
                 attrs={"mode": 2, "image": 1, "axes": [axis]})


def stateless_random_flip_left_right(image, seed):
    """Flip `image` horizontally with probability 1/2 as TensorFlow does for
    `seed` (``tf.image.stateless_random_flip_left_right``); a batch draws
    once per image."""
    return _stateless_flip(image, -2, seed)


def stateless_random_flip_up_down(image, seed):
    """Flip `image` vertically with probability 1/2 as TensorFlow does for
    `seed` (``tf.image.stateless_random_flip_up_down``)."""
    return _stateless_flip(image, -3, seed)


def stateless_random_brightness(image, max_delta, seed):
    """adjust_brightness by TensorFlow's delta for `seed`, uniform in
    [-max_delta, max_delta) (``tf.image.stateless_random_brightness``)."""
    _check_delta(max_delta)
    return adjust_brightness(image, stateless_uniform([], seed, -max_delta, max_delta))


def stateless_random_contrast(image, lower, upper, seed):
    """adjust_contrast by TensorFlow's factor for `seed`, uniform in
    [lower, upper) (``tf.image.stateless_random_contrast``)."""
    _check_range(lower, upper)
    return adjust_contrast(image, stateless_uniform([], seed, lower, upper))


def stateless_random_saturation(image, lower, upper, seed=None):
    """adjust_saturation by TensorFlow's factor for `seed`
    (``tf.image.stateless_random_saturation``)."""
    _check_range(lower, upper)
    return adjust_saturation(image, stateless_uniform([], seed, lower, upper))


def stateless_random_hue(image, max_delta, seed):
    """adjust_hue by TensorFlow's delta for `seed`, uniform in [-max_delta,
    max_delta) (``tf.image.stateless_random_hue``)."""
    _check_delta(max_delta, 0.5)
    return adjust_hue(image, stateless_uniform([], seed, -max_delta, max_delta))


def stateless_random_crop(value, size, seed, name=None):
    """A `size` slice of `value` (any rank) at TensorFlow's offsets for
    `seed` (``tf.image.stateless_random_crop``). `size` is a list of ints
    here; ``InvalidArgumentError`` when it does not fit."""
    if isinstance(size, Tensor):
        raise op_error(TypeError, "conveyor's stateless_random_crop needs `size` as a list of "
                                  "ints, not a traced tensor")
    x, shape = _image(value, "value")
    sizes = [int(v) for v in np.asarray(size).reshape(-1)]
    if shape is not None and len(sizes) != len(shape):
        raise op_error(_errors.InvalidArgumentError,
                       f"Incompatible shapes: [{len(shape)}] vs. [{len(sizes)}]")
    if shape is not None and None not in shape and any(d < s for d, s in zip(shape, sizes)):
        raise op_error(_errors.InvalidArgumentError,
                       f"Need value.shape >= size, got [{' '.join(map(str, shape))}] "
                       f"[{' '.join(map(str, sizes))}]")
    return apply("CropOrPad", [x, _seed(seed)], [(tuple(sizes), dtype_of(x))],
                 attrs={"mode": _STATELESS_CROP, "params": sizes})

