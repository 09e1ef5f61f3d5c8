"""``tf.image``'s linear color space conversions (YUV, YIQ): each pixel times
a 3x3 matrix (TensorFlow's constants), a native matmul inside a map."""
import numpy as np

from conveyor.framework.tracing import convert, dtype_of, op_error, static_shape
from conveyor.ops.linalg_ops import matmul

__all__ = ["rgb_to_yuv", "yuv_to_rgb", "rgb_to_yiq", "yiq_to_rgb"]

# Rows: input channels; columns: output channels (pixel @ kernel).
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
               [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]
_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
               [0.114, -0.32134392, 0.31119955]]
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021],
               [0.6208248, -0.64720424, 1.70423049]]


def _convert(images, kernel, fname):
    x = convert(images, name="images")
    dt = dtype_of(x)
    if not dt.is_floating:
        raise op_error(TypeError, f"{fname}: images must be a float tensor, got {dt.name}")
    shape = static_shape(x)
    if shape is not None and (not shape or shape[-1] not in (None, 3)):
        raise op_error(ValueError, f"{fname}: the last dimension must be 3 (channels), got "
                                   f"shape {list(shape)}")
    return matmul(x, np.asarray(kernel, dt.as_numpy_dtype))


def rgb_to_yuv(images):
    """RGB images (floats in [0, 1]) to YUV (``tf.image.rgb_to_yuv``)."""
    return _convert(images, _RGB_TO_YUV, "rgb_to_yuv")


def yuv_to_rgb(images):
    """YUV images to RGB (``tf.image.yuv_to_rgb``)."""
    return _convert(images, _YUV_TO_RGB, "yuv_to_rgb")


def rgb_to_yiq(images):
    """RGB images (floats in [0, 1]) to YIQ (``tf.image.rgb_to_yiq``)."""
    return _convert(images, _RGB_TO_YIQ, "rgb_to_yiq")


def yiq_to_rgb(images):
    """YIQ images to RGB (``tf.image.yiq_to_rgb``)."""
    return _convert(images, _YIQ_TO_RGB, "yiq_to_rgb")
