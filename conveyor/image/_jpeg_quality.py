"""``tf.image.adjust_jpeg_quality`` and its random forms: the image through
a JPEG encode at the given quality and a decode (libjpeg-turbo's pixels, as
TensorFlow's), in the image's dtype; both native ops inside a map (a quality
known per element is EncodeJpeg's second input)."""
from conveyor import dtypes as _dtypes
from conveyor.framework.tracing import Tensor, apply, convert, dtype_of, op_error, static_shape
from conveyor.io._encode import encode_jpeg
from conveyor.io.image_ops import decode_jpeg
from conveyor.ops.image_ops import convert_image_dtype

__all__ = ["adjust_jpeg_quality", "random_jpeg_quality", "stateless_random_jpeg_quality"]


def adjust_jpeg_quality(image, jpeg_quality, dct_method="", name=None):
    """`image` ([height, width, 1 or 3], any image dtype) JPEG-compressed at
    `jpeg_quality` (0-100; an int, or a scalar int32 tensor) and decoded again
    (``tf.image.adjust_jpeg_quality``); floats are taken as [0, 1]."""
    del name
    x = convert(image, name="image")
    shape = static_shape(x)
    channels = shape[-1] if shape else None
    if channels not in (1, 3):
        raise op_error(ValueError, f"adjust_jpeg_quality: image must have 1 or 3 channels, got "
                                   f"shape {None if shape is None else list(shape)}")
    orig = dtype_of(x)
    pixels = convert_image_dtype(x, _dtypes.uint8, saturate=True)
    if isinstance(jpeg_quality, Tensor):  # per element: EncodeJpeg's quality input
        if jpeg_quality.dtype != _dtypes.int32 or jpeg_quality.shape.rank not in (None, 0):
            raise op_error(ValueError, "jpeg_quality must be a scalar int32")
        encoded = apply("EncodeJpeg", [pixels, jpeg_quality], [((), _dtypes.string)],
                        attrs={"quality": 95, "progressive": False, "optimize_size": False,
                               "chroma_downsampling": True})
    else:
        encoded = encode_jpeg(pixels, quality=int(jpeg_quality))
    decoded = decode_jpeg(encoded, channels=channels, dct_method=dct_method)
    return convert_image_dtype(decoded, orig, saturate=True)


def _quality_range(min_jpeg_quality, max_jpeg_quality):
    if not (0 <= min_jpeg_quality <= 100 and 0 <= max_jpeg_quality <= 100):
        raise op_error(ValueError, "jpeg encoding range must be between 0 and 100.")
    if min_jpeg_quality >= max_jpeg_quality:
        raise op_error(ValueError, "`min_jpeg_quality` must be less than `max_jpeg_quality`.")


def stateless_random_jpeg_quality(image, min_jpeg_quality, max_jpeg_quality, seed):
    """adjust_jpeg_quality at a quality drawn uniformly from
    [min_jpeg_quality, max_jpeg_quality) by ``stateless_random_uniform`` with
    `seed` (``tf.image.stateless_random_jpeg_quality``: TensorFlow's values)."""
    from conveyor.ops.stateless_random_ops import stateless_uniform
    _quality_range(min_jpeg_quality, max_jpeg_quality)
    quality = stateless_uniform([], seed=seed, minval=min_jpeg_quality, maxval=max_jpeg_quality,
                                dtype=_dtypes.int32)
    return adjust_jpeg_quality(image, quality)


def random_jpeg_quality(image, min_jpeg_quality, max_jpeg_quality, seed=None):
    """adjust_jpeg_quality at a random quality in [min_jpeg_quality,
    max_jpeg_quality) (``tf.image.random_jpeg_quality``), drawn from conveyor's
    per-element stream like the other stateful random ops."""
    from conveyor.ops.random_ops import uniform
    _quality_range(min_jpeg_quality, max_jpeg_quality)
    quality = uniform([], minval=min_jpeg_quality, maxval=max_jpeg_quality, dtype=_dtypes.int32,
                      seed=seed)
    return adjust_jpeg_quality(image, quality)
