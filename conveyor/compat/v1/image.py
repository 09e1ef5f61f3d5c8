"""``tf.compat.v1.image``: conveyor.image plus TensorFlow 1's resize ops,
with their ``align_corners`` and ``half_pixel_centers`` flags (default
False, the legacy sampling ``x * in / out`` that tf.image.resize no longer
uses), run by the engine's ResizeLegacy op (csrc/ops/resize_legacy.c)."""
from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor.framework.tracing import apply, convert, dtype_of, op_error, static_shape
from conveyor.image import *  # noqa: F401,F403
from conveyor.image import ResizeMethod as _ResizeMethodV2
from conveyor.image import resize as _resize_v2
from conveyor.image import _boxes

__all__ = ["draw_bounding_boxes", "crop_and_resize", "ResizeMethod", "resize", "resize_images", "resize_bilinear", "resize_bicubic",
           "resize_nearest_neighbor", "resize_area"]


class ResizeMethod:
    """TensorFlow 1's ``tf.compat.v1.image.ResizeMethod`` (ints)."""

    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


def _static_size(size):
    if hasattr(size, "_trace"):
        raise op_error(TypeError, "conveyor's resize needs a static `size` (Python ints), not a "
                                  "traced tensor")
    try:
        h, w = (int(v) for v in size)
    except (TypeError, ValueError):
        raise op_error(ValueError, "'size' must be a 1-D Tensor of 2 elements: new_height, "
                                   "new_width") from None
    return h, w


_BILINEAR, _NEAREST, _BICUBIC = 0, 1, 2


def _legacy(images, size, method, align_corners, half_pixel_centers, need_4d=True):
    x = convert(images, name="images")
    shape = static_shape(x)
    if shape is not None and (len(shape) != 4 if need_4d else len(shape) not in (3, 4)):
        raise op_error(_errors.InvalidArgumentError, f"input must be 4-dimensional{list(shape)}")
    h, w = _static_size(size)
    if align_corners and half_pixel_centers:
        raise op_error(_errors.InvalidArgumentError,
                       "If half_pixel_centers is True, align_corners must be False.")
    out = None if shape is None else shape[:-3] + (h, w, shape[-1])
    dtype = dtype_of(x) if method == _NEAREST else _dtypes.float32
    if not (dtype_of(x).is_integer or dtype_of(x).is_floating):
        raise op_error(TypeError, f"resize: images must be an integer or floating tensor, got "
                                  f"{dtype_of(x).name}")
    if method == _BICUBIC and half_pixel_centers:
        _legacy_rank_check(x)
        return _resize_v2(x, (h, w), method=_ResizeMethodV2.BICUBIC)
    attrs = {"height": h, "width": w, "preserve_aspect_ratio": 0, "method": method,
             "align_corners": int(bool(align_corners)),
             "half_pixel_centers": int(bool(half_pixel_centers))}
    return apply("ResizeLegacy", [x], [(out, dtype)], attrs=attrs)


def resize_bilinear(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """``tf.compat.v1.image.resize_bilinear``: 4-D `images`, float32 result."""
    return _legacy(images, size, _BILINEAR, align_corners, half_pixel_centers)


def resize_nearest_neighbor(images, size, align_corners=False, name=None,
                            half_pixel_centers=False):
    """``tf.compat.v1.image.resize_nearest_neighbor``: 4-D `images`, their dtype."""
    return _legacy(images, size, _NEAREST, align_corners, half_pixel_centers)


def resize_bicubic(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """``tf.compat.v1.image.resize_bicubic``: 4-D `images`, float32 result
    (TensorFlow 1's cubic convolution, a = -0.75, without half-pixel centers;
    with them, tf.image.resize's bicubic)."""
    return _legacy(images, size, _BICUBIC, align_corners, half_pixel_centers)


def resize_area(images, size, align_corners=False, name=None):
    """``tf.compat.v1.image.resize_area`` (align_corners=False only)."""
    if align_corners:
        raise NotImplementedError("conveyor's resize_area has no align_corners=True")
    _legacy_rank_check(images)
    return _resize_v2(images, size, method=_ResizeMethodV2.AREA)


def _legacy_rank_check(images):
    shape = static_shape(convert(images, name="images"))
    if shape is not None and len(shape) != 4:
        raise op_error(_errors.InvalidArgumentError, f"input must be 4-dimensional{list(shape)}")


_METHODS = {0: 0, 1: 1, 2: 2, 3: 3, "bilinear": 0, "nearest": 1, "bicubic": 2, "area": 3}


def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False,
                  preserve_aspect_ratio=False, name=None):
    """``tf.compat.v1.image.resize_images`` (= ``tf.compat.v1.image.resize``):
    3-D or 4-D images; TensorFlow 1's sampling (no half-pixel centers);
    returned unchanged when already of `size`; float32 except nearest."""
    x = convert(images, name="images")
    shape = static_shape(x)
    if shape is None:
        raise op_error(ValueError, "'images' contains no shape.")
    if len(shape) not in (3, 4):
        raise op_error(ValueError, "'images' must have either 3 or 4 dimensions.")
    if preserve_aspect_ratio:
        raise NotImplementedError("conveyor's tf.compat.v1.image.resize_images has no "
                                  "preserve_aspect_ratio (use tf.image.resize)")
    h, w = _static_size(size)
    if shape[-3] == h and shape[-2] == w:
        return x
    kind = _METHODS.get(method)
    if kind is None:
        raise ValueError(f"Resize method is not implemented: {method}")
    if kind in (0, 1, 2):
        return _legacy(x, (h, w), kind, align_corners, False, need_4d=False)
    if align_corners:
        raise NotImplementedError("conveyor's resize_images has no align_corners=True for the "
                                  "area method")
    return _resize_v2(x, (h, w), method=_ResizeMethodV2.AREA)


resize = resize_images



def draw_bounding_boxes(images, boxes, name=None, colors=None):
    """``tf.compat.v1.image.draw_bounding_boxes``: `colors` may be left out."""
    return _boxes.draw_bounding_boxes(images, boxes, colors, name=name)


def crop_and_resize(image, boxes, box_ind=None, crop_size=None, method="bilinear",
                    extrapolation_value=0, name=None, box_indices=None):
    """``tf.compat.v1.image.crop_and_resize``: the box indices are `box_ind`
    (or `box_indices`)."""
    if box_indices is None:
        box_indices = box_ind
    return _boxes.crop_and_resize(image, boxes, box_indices, crop_size, method,
                                  extrapolation_value, name=name)
