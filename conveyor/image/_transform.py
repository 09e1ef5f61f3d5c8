"""Crops, flips and padding of images (``tf.image``); ``convert_image_dtype``
is defined in ``conveyor/ops/image_ops.py`` (the decoders use it too).

Each function takes TensorFlow's arguments and raises TensorFlow's errors:
problems visible from static shapes and arguments raise ``ValueError`` (or
``TypeError``) when the function is called or traced; problems that depend
on a traced image's run-time size raise ``InvalidArgumentError`` at that
element, with TensorFlow's message. Images are 3-D ``[height, width,
channels]`` or 4-D ``[batch, height, width, channels]``, of any numeric or
bool dtype.

Random ops (``random_crop``, ``random_flip_*``) draw from conveyor's
per-element streams: the same seed gives the same crops and flips whatever
the thread count, but not TensorFlow's values.
"""
import operator

import numpy as np

from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor.ops.image_ops import _as, _saturate_limits, convert_image_dtype
from conveyor.ops.math_ops import cast
from conveyor.framework.tracing import Tensor, apply, convert, dtype_of, op_error, static_shape

__all__ = ["convert_image_dtype", "central_crop", "crop_to_bounding_box", "pad_to_bounding_box",
           "resize_with_crop_or_pad", "resize_image_with_crop_or_pad", "random_crop",
           "flip_left_right", "flip_up_down", "random_flip_left_right", "random_flip_up_down",
           "transpose", "transpose_image", "rot90", "rgb_to_grayscale", "grayscale_to_rgb",
           "adjust_brightness", "per_image_standardization"]

# CropOrPad modes (csrc/ops/crop.c).
_BOX, _PAD, _CROP_OR_PAD, _CENTRAL, _RANDOM = range(5)


def _shape_str(shape):
    """A static shape as TensorFlow prints a TensorShape."""
    if shape is None:
        return "<unknown>"
    if len(shape) == 1:
        return f"({shape[0]},)"
    return "(" + ", ".join(str(d) for d in shape) + ")"


def _image(image, name="image"):
    x = convert(image, name=name)
    if dtype_of(x) == _dtypes.string:
        raise op_error(TypeError, f"`{name}` must be numeric or bool; conveyor's image ops do "
                                  f"not take string tensors")
    return x, static_shape(x)


def _check_inner_dims(shape):
    """TensorFlow's static check that an image's inner 3 dims are not 0."""
    if shape is not None and any(d == 0 for d in shape[-3:]):
        raise op_error(ValueError, f"inner 3 dims of 'image.shape' must be > 0: "
                                   f"{_shape_str(shape)}")


def _int_param(value, name):
    """A crop or pad argument: a Python int, or a scalar integer Tensor
    (read at run time)."""
    if isinstance(value, Tensor):
        if value.shape.rank not in (None, 0) or not dtype_of(value).is_integer:
            raise op_error(TypeError, f"`{name}` must be a scalar integer tensor, got {value!r}")
        return value
    try:
        v = operator.index(value if not isinstance(value, np.ndarray) or value.ndim
                           else value[()])
        if not -2**63 <= v < 2**63:
            raise TypeError
        return v
    except TypeError:
        raise op_error(TypeError, f"Cannot convert {value!r} to a tensor of dtype int32 "
                                  f"(`{name}`)") from None


def _static(v):
    return None if isinstance(v, Tensor) else v


def _as_batch(shape, what="image"):
    """TensorFlow's rank handling of the bounding-box ops: the 4-D shape they
    work on (a 3-D image gets a batch of 1) and whether it was a batch."""
    if shape is None:
        return (None,) * 4, False
    if len(shape) == 3:
        return (1,) + tuple(shape), False
    if len(shape) == 4:
        return tuple(shape), True
    raise op_error(ValueError, f"'{what}' (shape {_shape_str(shape)}) must have either 3 or 4 "
                               f"dimensions.")


def _window(x, mode, params, out4, is_batch):
    """Apply CropOrPad with [offset_h, offset_w, target_h, target_w], some
    of which may be traced scalars."""
    static, dynamic, mask = [], [], 0
    for k, p in enumerate(params):
        if isinstance(p, Tensor):
            mask |= 1 << k
            dynamic.append(p)
            static.append(0)
        else:
            static.append(int(p))
    # An image of unknown rank may be 3-D or 4-D when it runs: rank unknown.
    shape = None if static_shape(x) is None else tuple(out4) if is_batch else tuple(out4[1:])
    return apply("CropOrPad", [x] + dynamic, [(shape, dtype_of(x))],
                 attrs={"mode": mode, "params": static + [mask]})


# ---------------------------------------------------------------------------
# crops and pads
# ---------------------------------------------------------------------------


def _box_args(image, offset_height, offset_width, target_height, target_width):
    """The converted image, its shape as a batch, whether it was one, and the
    four box parameters (ints or scalar integer tensors)."""
    x, shape = _image(image)
    shape4, is_batch = _as_batch(shape)
    _check_inner_dims(shape4)
    params = [_int_param(v, n) for v, n in ((offset_height, "offset_height"),
                                            (offset_width, "offset_width"),
                                            (target_height, "target_height"),
                                            (target_width, "target_width"))]
    return x, shape4, is_batch, params


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """Crop `image` to the box whose top-left corner is at (`offset_height`,
    `offset_width`), of size `target_height` x `target_width`
    (``tf.image.crop_to_bounding_box``).

    The offsets and sizes are ints or scalar integer tensors; a box reaching
    past a traced image of unknown size raises ``InvalidArgumentError`` at
    that element.
    """
    x, shape4, is_batch, params = _box_args(image, offset_height, offset_width, target_height,
                                            target_width)
    oh, ow, th, tw = (_static(p) for p in params)
    batch, height, width, depth = shape4
    for ok, message in ((ow is None or ow >= 0, "offset_width must be >= 0."),
                        (oh is None or oh >= 0, "offset_height must be >= 0."),
                        (tw is None or tw > 0, "target_width must be > 0."),
                        (th is None or th > 0, "target_height must be > 0."),
                        (None in (width, tw, ow) or width >= tw + ow,
                         "width must be >= target + offset."),
                        (None in (height, th, oh) or height >= th + oh,
                         "height must be >= target + offset.")):
        if not ok:
            raise op_error(ValueError, message)
    return _window(x, _BOX, params, (batch, th, tw, depth), is_batch)


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """Pad `image` with zeros to `target_height` x `target_width`, placing
    it at (`offset_height`, `offset_width`) (``tf.image.pad_to_bounding_box``).
    """
    x, shape4, is_batch, params = _box_args(image, offset_height, offset_width, target_height,
                                            target_width)
    oh, ow, th, tw = (_static(p) for p in params)
    batch, height, width, depth = shape4
    for ok, message in ((oh is None or oh >= 0, "offset_height must be >= 0"),
                        (ow is None or ow >= 0, "offset_width must be >= 0"),
                        (None in (width, tw, ow) or tw - ow - width >= 0,
                         "width must be <= target - offset"),
                        (None in (height, th, oh) or th - oh - height >= 0,
                         "height must be <= target - offset")):
        if not ok:
            raise op_error(ValueError, message)
    return _window(x, _PAD, params, (batch, th, tw, depth), is_batch)


def resize_with_crop_or_pad(image, target_height, target_width):
    """Crop or pad `image` to `target_height` x `target_width`, keeping it
    centered (``tf.image.resize_with_crop_or_pad``): a dim larger than the
    target loses (size - target) // 2 at the start, a smaller one gets
    (target - size) // 2 zeros before it.
    """
    x, shape = _image(image)
    shape4, is_batch = _as_batch(shape)
    _check_inner_dims(shape4)
    params = [0, 0, _int_param(target_height, "target_height"),
              _int_param(target_width, "target_width")]
    th, tw = _static(params[2]), _static(params[3])
    if tw is not None and tw <= 0:
        raise op_error(ValueError, "target_width must be > 0.")
    if th is not None and th <= 0:
        raise op_error(ValueError, "target_height must be > 0.")
    return _window(x, _CROP_OR_PAD, params, (shape4[0], th, tw, shape4[3]), is_batch)


resize_image_with_crop_or_pad = resize_with_crop_or_pad


def _central_start(size, fraction):
    return int((float(size) - float(size) * fraction) / 2)


def central_crop(image, central_fraction):
    """The central `central_fraction` of `image`'s height and width
    (``tf.image.central_crop``): each side loses
    int((size - size * central_fraction) / 2) pixels.

    `central_fraction` is a float in (0, 1] or a scalar float tensor.
    """
    x, shape = _image(image)
    fraction = None
    if isinstance(central_fraction, Tensor):
        if central_fraction.shape.rank not in (None, 0) or not dtype_of(central_fraction).is_floating:
            raise op_error(TypeError, f"`central_fraction` must be a scalar float tensor, got "
                                      f"{central_fraction!r}")
        if dtype_of(central_fraction) == _dtypes.float16:
            central_fraction = apply("Cast", [central_fraction],
                                     [(static_shape(central_fraction), _dtypes.float32)],
                                     attrs={"dtype": _dtypes.float32._code})
    else:
        try:
            fraction = float(np.asarray(central_fraction).item())
        except (TypeError, ValueError):
            raise op_error(TypeError, f"`central_fraction` must be a float, got "
                                      f"{central_fraction!r}") from None
        if fraction <= 0.0 or fraction > 1.0:
            raise op_error(ValueError, "central_fraction must be within (0, 1]")
        if fraction == 1.0:
            return x
    if shape is not None and len(shape) < 3:
        raise op_error(ValueError, f"'image' (shape {_shape_str(shape)}) must be at least "
                                   f"three-dimensional.")
    _check_inner_dims(shape)
    rank = None if shape is None else len(shape)
    if rank not in (3, 4):
        raise op_error(ValueError, f"`image` should either be a Tensor with rank = 3 or rank = 4. "
                                   f"Had rank = {rank}.")
    out, fractions = list(shape), []
    for d in (rank - 3, rank - 2):
        if out[d] is not None and fraction is not None:
            out[d] -= 2 * _central_start(out[d], fraction)
            fractions.append(fraction)
        else:
            # TensorFlow computes a dim known only at run time from the
            # fraction as a float32 tensor: the same rounding here.
            out[d] = None
            fractions.append(float(np.float32(fraction)) if fraction is not None else 1.0)
    inputs = [x] if fraction is not None else [x, central_fraction]
    height_fraction, width_fraction = fractions
    return apply("CropOrPad", inputs, [(tuple(out), dtype_of(x))],
                 attrs={"mode": _CENTRAL, "height_fraction": height_fraction,
                        "width_fraction": width_fraction})


def random_crop(value, size, seed=None, name=None):
    """A random `size` slice of `value`, any rank (``tf.image.random_crop``).

    Each dim's offset is uniform in [0, value.shape - size]. `size` is a
    list of ints (or a 1-D integer tensor); ``InvalidArgumentError`` when it
    does not fit `value` (TensorFlow's error, at the element when the shape
    is only known then). Offsets come from conveyor's per-element random
    stream: reproducible with a seed whatever the thread count, not
    TensorFlow's values.
    """
    x, shape = _image(value, "value")
    if isinstance(size, Tensor):
        if size.shape.rank != 1 or dtype_of(size) not in (_dtypes.int32, _dtypes.int64):
            raise op_error(_errors.InvalidArgumentError,
                           f"`size` must be a 1-D int32 or int64 tensor, got {size!r}")
        n = size.shape.as_list()[0]
        if shape is not None and n is not None and n != len(shape):
            raise op_error(_errors.InvalidArgumentError,
                           f"Incompatible shapes: [{len(shape)}] vs. [{n}]")
        out = None if n is None else (None,) * n
        return apply("CropOrPad", [x, size], [(out, dtype_of(x))], attrs={"mode": _RANDOM},
                     random=True, op_seed=seed)
    try:
        arr = np.asarray(size)
        if arr.size and arr.dtype.kind not in "iu":
            raise TypeError
        sizes = [int(v) for v in arr.reshape(-1)]
    except (TypeError, ValueError):
        raise op_error(TypeError, f"Cannot convert {size!r} to a tensor of dtype int32 "
                                  f"(`size`)") from None
    if arr.ndim != 1:
        raise op_error(_errors.InvalidArgumentError,
                       f"`size` must be a 1-D list of ints, got shape {list(arr.shape)}")
    if shape is not None and len(sizes) != len(shape):
        raise op_error(_errors.InvalidArgumentError,
                       f"Incompatible shapes: [{len(shape)}] vs. [{len(sizes)}]")
    if any(s < 0 for s in sizes):
        raise op_error(_errors.InvalidArgumentError, f"size must be >= 0, got {sizes}")
    if shape is not None and None not in shape and any(d < s for d, s in zip(shape, sizes)):
        raise op_error(_errors.InvalidArgumentError,
                       f"Need value.shape >= size, got [{' '.join(map(str, shape))}] "
                       f"[{' '.join(map(str, sizes))}]")
    return apply("CropOrPad", [x], [(tuple(sizes), dtype_of(x))],
                 attrs={"mode": _RANDOM, "params": sizes},
                 random=True, op_seed=seed)


# ---------------------------------------------------------------------------
# flips
# ---------------------------------------------------------------------------


def _flip(image, axis, random, seed, sep):
    x, shape = _image(image)
    if shape is not None:
        if len(shape) < 3:
            raise op_error(ValueError, f"'image' (shape {_shape_str(shape)}) must be at least "
                                       f"three-dimensional.")
        _check_inner_dims(shape)
        if len(shape) > 4:
            raise op_error(ValueError, f"'image' (shape {_shape_str(shape)}){sep}must have either "
                                       f"3 or 4 dimensions.")
    return apply("ReverseV2", [x], [(shape, dtype_of(x))],
                 attrs={"mode": int(random), "image": 1, "axes": [axis]},
                 random=random, op_seed=seed)


def flip_left_right(image):
    """Flip `image` horizontally (the width axis) (``tf.image.flip_left_right``)."""
    return _flip(image, -2, False, None, "")


def flip_up_down(image):
    """Flip `image` vertically (the height axis) (``tf.image.flip_up_down``)."""
    return _flip(image, -3, False, None, "")


def random_flip_left_right(image, seed=None):
    """Flip `image` horizontally with probability 1/2; each image of a 4-D
    batch on its own draw (``tf.image.random_flip_left_right``)."""
    return _flip(image, -2, True, seed, " ")


def random_flip_up_down(image, seed=None):
    """Flip `image` vertically with probability 1/2; each image of a 4-D
    batch on its own draw (``tf.image.random_flip_up_down``)."""
    return _flip(image, -3, True, seed, " ")


# ---------------------------------------------------------------------------
# rotations, colour, brightness, standardization
# ---------------------------------------------------------------------------


def _image_3d_or_4d(image):
    """An image op's input with TensorFlow's static rank checks."""
    x, shape = _image(image)
    if shape is not None:
        if len(shape) < 3:
            raise op_error(ValueError, f"'image' (shape {_shape_str(shape)}) must be at least "
                                       f"three-dimensional.")
        _check_inner_dims(shape)
        if len(shape) > 4:
            raise op_error(ValueError, f"'image' (shape {_shape_str(shape)}) must have either 3 "
                                       f"or 4 dimensions.")
    return x, shape


def _swap_hw(shape):
    if shape is None:
        return None
    out = list(shape)
    out[-3], out[-2] = out[-2], out[-3]
    return tuple(out)


def transpose(image, name=None):
    """Swap the height and width of `image` (``tf.image.transpose``)."""
    x, shape = _image_3d_or_4d(image)
    return apply("Rot90", [x], [(_swap_hw(shape), dtype_of(x))], attrs={"k": 4})


transpose_image = transpose


def rot90(image, k=1, name=None):
    """Rotate `image` by `k` quarter turns counter-clockwise (``tf.image.rot90``).

    `k` is an int or a scalar integer tensor (read at run time; the traced
    height and width are then unknown).
    """
    x, shape = _image_3d_or_4d(image)
    if isinstance(k, Tensor):
        if k.shape.rank not in (None, 0) or not dtype_of(k).is_integer:
            raise op_error(ValueError, f"Shape {k.shape} must have rank 0" if k.shape.rank
                           else f"`k` must be an integer, got {k!r}")
        out = None if shape is None else tuple(shape[:-3]) + (None, None, shape[-1])
        kt = k if dtype_of(k) in (_dtypes.int32, _dtypes.int64) else apply(
            "Cast", [k], [(static_shape(k), _dtypes.int64)], attrs={"dtype": _dtypes.int64._code})
        return apply("Rot90", [x, kt], [(out, dtype_of(x))], attrs={"k": 1})
    arr = np.asarray(k)
    if arr.ndim != 0:
        raise op_error(ValueError, f"Shape {_shape_str(arr.shape)} must have rank 0")
    k = _int_param(k, "k") % 4
    out = shape if k == 2 else _swap_hw(shape)
    if isinstance(x, Tensor) and shape is not None:
        # TensorFlow picks the turn with a switch over every k: a traced
        # result's height and width are known only when they are equal.
        hw = shape[-3] if shape[-3] == shape[-2] else None
        out = tuple(shape[:-3]) + (hw, hw, shape[-1])
    if k == 0 and out == shape:
        return x
    return apply("Rot90", [x], [(out, dtype_of(x))], attrs={"k": k})


def _float_dtype_check(x):
    src = dtype_of(x)
    if not (src.is_floating or src.is_integer):
        raise op_error(AttributeError, "image dtype must be either floating point or integer")
    return src


def rgb_to_grayscale(images, name=None):
    """The luma of RGB `images` (last dim 3 becomes 1) (``tf.image.rgb_to_grayscale``):
    0.2989 R + 0.5870 G + 0.1140 B computed in float32 as TensorFlow does,
    in the input's dtype."""
    x, shape = _image(images, "images")
    src = _float_dtype_check(x)
    if src == _dtypes.bfloat16:  # TensorFlow computes it in float32 and casts back
        return cast(rgb_to_grayscale(cast(x, _dtypes.float32)), src)
    if shape is not None and (len(shape) == 0 or shape[-1] not in (None, 3)):
        raise op_error(_errors.InvalidArgumentError,
                       f"the last dimension of an RGB image must be 3, got shape "
                       f"{_shape_str(shape)}")
    scale_in = float(_as(_dtypes.float32, 1.0 / src.max)) if src.is_integer else 1.0
    scale_out = float(_as(_dtypes.float32, src.max + 0.5)) if src.is_integer else 1.0
    out = None if shape is None else tuple(shape[:-1]) + (1,)
    return apply("ImageColor", [x], [(out, src)], attrs={"mode": 0, "scale_in": scale_in,
                                                         "scale_out": scale_out})


def grayscale_to_rgb(images, name=None):
    """Repeat the single channel of grayscale `images` 3 times
    (``tf.image.grayscale_to_rgb``)."""
    x, shape = _image(images, "images")
    if shape is not None:
        if len(shape) < 2:
            raise op_error(ValueError, f"A grayscale image (shape {_shape_str(shape)}) must be at "
                                       f"least two-dimensional.")
        if None not in shape and shape[-1] != 1:
            raise op_error(ValueError, "Last dimension of a grayscale image should be size 1.")
    _float_dtype_check(x)
    out = None if shape is None else tuple(shape[:-1]) + (3,)
    return apply("ImageColor", [x], [(out, dtype_of(x))], attrs={"mode": 1})


def adjust_brightness(image, delta):
    """Add `delta` to every value of `image` (``tf.image.adjust_brightness``).

    Float16 and float32 images get it in their own dtype; other dtypes are
    converted to float32 (``convert_image_dtype``), shifted, and converted
    back with saturation. `delta` is a float or a scalar float tensor.
    """
    x, shape = _image(image)
    src = _float_dtype_check(x)
    if src == _dtypes.bfloat16:  # TensorFlow shifts it as float32 and casts back
        return cast(adjust_brightness(cast(x, _dtypes.float32), delta), src)
    inputs = [x]
    if isinstance(delta, Tensor):
        if delta.shape.rank not in (None, 0) or not dtype_of(delta).is_floating:
            raise op_error(TypeError, f"`delta` must be a scalar float tensor, got {delta!r}")
        if dtype_of(delta) == _dtypes.float16:
            delta = apply("Cast", [delta], [((), _dtypes.float32)],
                          attrs={"dtype": _dtypes.float32._code})
        inputs.append(delta)
        value = 0.0
    else:
        try:
            arr = np.asarray(delta)
            if arr.ndim or arr.dtype.kind not in "iuf":
                raise TypeError
            value = float(arr)
        except (TypeError, ValueError):
            raise op_error(TypeError, f"`delta` must be a float scalar in conveyor, got "
                                      f"{delta!r}") from None
    scale_in = scale_out = lo = hi = 0.0
    if src.is_integer:
        scale_in = float(_as(_dtypes.float32, 1.0 / src.max))
        scale_out = float(_as(_dtypes.float32, src.max + 0.5))
        lo, hi = (float(v) for v in _saturate_limits(_dtypes.float32, src))
    return apply("AdjustBrightness", inputs, [(shape, src)],
                 attrs={"delta": value, "scale_in": scale_in, "scale_out": scale_out, "lo": lo,
                        "hi": hi})


def per_image_standardization(image):
    """Scale each image to zero mean and unit variance
    (``tf.image.per_image_standardization``): (x - mean) / max(stddev,
    1 / sqrt(N)) over each image's N values (its last 3 dims), in float32.
    """
    x, shape = _image(image)
    if shape is not None:
        if len(shape) < 3:
            raise op_error(ValueError, f"'image' (shape {_shape_str(shape)}) must be at least "
                                       f"three-dimensional.")
        _check_inner_dims(shape)
    if dtype_of(x) == _dtypes.bfloat16:  # TensorFlow standardizes it as float32
        x = cast(x, _dtypes.float32)
    return apply("PerImageStandardization", [x], [(shape, _dtypes.float32)])
