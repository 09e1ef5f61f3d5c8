"""``tf.image.adjust_jpeg_quality``: the image through a JPEG encode at the
given quality and a decode (libjpeg-turbo's pixels, as TensorFlow's), in
the image's dtype; both native ops inside a map."""
from conveyor import dtypes as _dtypes
from conveyor.framework.tracing import Tensor, convert, dtype_of, op_error, static_shape
from conveyor.io._encode import encode_jpeg
from conveyor.io.image_ops import decode_jpeg
from conveyor.ops.image_ops import convert_image_dtype

__all__ = ["adjust_jpeg_quality"]


def adjust_jpeg_quality(image, jpeg_quality, dct_method="", name=None):
    """`image` ([height, width, 1 or 3], any image dtype) JPEG-compressed at
    `jpeg_quality` (0-100, static) and decoded again
    (``tf.image.adjust_jpeg_quality``); floats are taken as [0, 1]."""
    del name
    x = convert(image, name="image")
    shape = static_shape(x)
    channels = shape[-1] if shape else None
    if channels not in (1, 3):
        raise op_error(ValueError, f"adjust_jpeg_quality: image must have 1 or 3 channels, got "
                                   f"shape {None if shape is None else list(shape)}")
    if isinstance(jpeg_quality, Tensor):
        raise jpeg_quality._trace.fail("adjust_jpeg_quality with a traced quality is not "
                                       "supported natively")
    quality = int(jpeg_quality)
    orig = dtype_of(x)
    pixels = convert_image_dtype(x, _dtypes.uint8, saturate=True)
    decoded = decode_jpeg(encode_jpeg(pixels, quality=quality), channels=channels,
                          dct_method=dct_method)
    return convert_image_dtype(decoded, orig, saturate=True)
