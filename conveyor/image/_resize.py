"""``conveyor.image.resize`` (``tf.image.resize``, TensorFlow 2's semantics).

Every method runs TensorFlow's algorithm in C with the same float32
arithmetic (half-pixel centers): ``bilinear`` is ResizeBilinear,
``nearest`` ResizeNearestNeighbor, ``bicubic`` ResizeBicubic (Keys cubic),
``area`` ResizeArea, and ``antialias=True`` or the ``lanczos3``,
``lanczos5``, ``gaussian`` and ``mitchellcubic`` methods ScaleAndTranslate.
"""
import numpy as np

from conveyor import dtypes as _dtypes
from conveyor.framework.tracing import (Tensor, apply, convert, dtype_of, known_value, op_error,
                                        static_shape)
from conveyor.ops.math_ops import cast

__all__ = ["ResizeMethod", "resize"]

_INT32_MIN, _INT32_MAX = -2 ** 31, 2 ** 31 - 1


class ResizeMethod:
    """The ``method`` values of :func:`resize` (``tf.image.ResizeMethod``)."""

    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


# method -> (op without antialias, op with antialias); a ScaleAndTranslate
# entry is ("ScaleAndTranslate", kernel).
_OPS = {
    ResizeMethod.BILINEAR: (("ResizeBilinear", None), ("ScaleAndTranslate", "triangle")),
    ResizeMethod.NEAREST_NEIGHBOR: (("ResizeNearestNeighbor", None),) * 2,
    ResizeMethod.BICUBIC: (("ResizeBicubic", None), ("ScaleAndTranslate", "keyscubic")),
    ResizeMethod.AREA: (("ResizeArea", None),) * 2,
    ResizeMethod.LANCZOS3: (("ScaleAndTranslate", "lanczos3"),) * 2,
    ResizeMethod.LANCZOS5: (("ScaleAndTranslate", "lanczos5"),) * 2,
    ResizeMethod.GAUSSIAN: (("ScaleAndTranslate", "gaussian"),) * 2,
    ResizeMethod.MITCHELLCUBIC: (("ScaleAndTranslate", "mitchellcubic"),) * 2,
}


def _traced_size(size):
    """A traced `size` known only per element, checked as TensorFlow checks it
    when the function is traced (an int32 tensor compatible with shape [2])."""
    if size.dtype != _dtypes.int32:
        raise op_error(ValueError, f"'size' must be a 1-D int32 Tensor, got {size.dtype.name}")
    shape = static_shape(size)
    if shape is not None and (len(shape) != 1 or shape[0] not in (None, 2)):
        raise op_error(ValueError, "'size' must be a 1-D Tensor of 2 elements: "
                                   "new_height, new_width")
    return size


def _static_size(size):
    """`size` as two Python ints, with tf.image.resize's checks."""
    try:
        arr = np.asarray(size)
    except (TypeError, ValueError):
        raise op_error(ValueError, "'size' must be a 1-D int32 Tensor") from None
    if arr.size and arr.dtype.kind not in "iu":
        raise op_error(ValueError, "'size' must be a 1-D int32 Tensor")
    if arr.shape != (2,):
        raise op_error(ValueError, "'size' must be a 1-D Tensor of 2 elements: "
                                   "new_height, new_width")
    h, w = int(arr[0]), int(arr[1])
    if not (_INT32_MIN <= h <= _INT32_MAX and _INT32_MIN <= w <= _INT32_MAX):
        raise op_error(ValueError, f"'size' must be a 1-D int32 Tensor, got {[h, w]} (out of "
                                   f"int32 range)")
    return h, w


def _preserved(h, w, in_h, in_w):
    """The size preserve_aspect_ratio gives, in float32 as TensorFlow (and the C op)."""
    f32 = np.float32
    scale = min(f32(h) / f32(in_h), f32(w) / f32(in_w))
    return int(np.rint(scale * f32(in_h))), int(np.rint(scale * f32(in_w)))


def resize(images, size, method=ResizeMethod.BILINEAR, preserve_aspect_ratio=False,
           antialias=False, name=None):
    """Resize `images` to `size` using the specified `method` (``tf.image.resize``).

    Args:
      images: 4-D tensor of shape `[batch, height, width, channels]` or 3-D
        tensor of shape `[height, width, channels]`, of any integer or
        floating dtype.
      size: 2 ints `[new_height, new_width]`, or a 1-D int32 tensor of 2
        elements, which may be computed from each element (its shape times a
        scale): the op then reads it per element, natively.
      method: a :class:`ResizeMethod` value or its string: ``"bilinear"``,
        ``"nearest"``, ``"bicubic"``, ``"area"``, ``"lanczos3"``,
        ``"lanczos5"``, ``"gaussian"`` or ``"mitchellcubic"``.
      preserve_aspect_ratio: if True, resize to fit within `size` keeping the
        aspect ratio (scaling up when `size` is larger).
      antialias: use an anti-aliasing filter when downsampling (no effect
        for ``nearest`` and ``area``, nor when upsampling).
      name: unused (TensorFlow's op name).

    Returns:
      The resized images, 3-D or 4-D as `images`: float32, except for
      ``nearest``, which keeps the dtype of `images`.

    Raises:
      ValueError: `images` is not 3-D or 4-D, `size` is not 2 int32 values,
        or `method` is unknown.
      TypeError: `images` is not numeric.
      InvalidArgumentError: (when the op runs) a size is not positive, or
        the image is empty or has no channels.
    """
    del name
    images = convert(images, name="images")
    shape = static_shape(images)
    if shape is None:
        raise op_error(ValueError, "'images' contains no shape.")
    if len(shape) not in (3, 4):
        raise op_error(ValueError, "'images' must have either 3 or 4 dimensions.")
    dtype = dtype_of(images)
    if not (dtype.is_integer or dtype.is_floating):
        raise op_error(TypeError, f"resize: images must be an integer or floating tensor, got "
                                  f"{dtype.name}")
    size_input = None  # a size known per element: the op's second input
    if isinstance(size, Tensor):
        known = known_value(size)
        if known is None:
            size_input = _traced_size(size)
        else:
            size = known
    h, w = (0, 0) if size_input is not None else _static_size(size)
    try:
        ops = _OPS[method]
    except (KeyError, TypeError):
        raise op_error(ValueError, f"Resize method is not implemented: {method}") from None
    op, kernel = ops[1 if antialias else 0]
    in_h, in_w = shape[-3], shape[-2]
    out_h, out_w = (None, None) if size_input is not None else (h, w)
    if preserve_aspect_ratio and size_input is None:
        if in_h is None or in_w is None:
            out_h = out_w = None
        elif in_h > 0 and in_w > 0:
            out_h, out_w = _preserved(h, w, in_h, in_w)
    # A size that is not positive fails when the op runs, as in TensorFlow.
    out_h = out_h if out_h is not None and out_h > 0 else None
    out_w = out_w if out_w is not None and out_w > 0 else None
    out_shape = shape[:-3] + (out_h, out_w, shape[-1])
    out_dtype = dtype if op == "ResizeNearestNeighbor" else _dtypes.float32
    attrs = {"height": h, "width": w, "preserve_aspect_ratio": int(bool(preserve_aspect_ratio))}
    if op == "ScaleAndTranslate":
        attrs["antialias"] = int(bool(antialias))
    if dtype == _dtypes.bfloat16 and op != "ResizeNearestNeighbor":
        images = cast(images, _dtypes.float32)  # exact, and what TensorFlow's kernel reads
    inputs = [images] if size_input is None else [images, size_input]
    return apply(op, inputs, [(out_shape, out_dtype)], attrs=attrs, string=kernel)
