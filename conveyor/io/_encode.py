"""tf.io.encode_jpeg and tf.io.encode_png: images to JPEG bytes with
libjpeg-turbo, to PNG bytes with zlib."""
from conveyor import dtypes as _dtypes
from conveyor.framework.eager import as_eager
from conveyor.framework.tracing import apply, convert, dtype_of, op_error, static_shape

__all__ = ["encode_jpeg", "encode_png"]


def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False,  # noqa: A002
                chroma_downsampling=True, density_unit="in", x_density=300, y_density=300,
                xmp_metadata="", name=None):
    """JPEG-encode a uint8 image ``[height, width, channels]`` (``tf.io.encode_jpeg``).

    `format` '' picks grayscale for 1 channel and RGB for 3 ('grayscale' and
    'rgb' force them); `quality` 0-100; `progressive` writes a progressive
    JPEG; `optimize_size` computes optimal Huffman tables;
    `chroma_downsampling` False keeps full-resolution color (4:4:4).
    Density and XMP metadata are accepted and not written.
    """
    x = convert(image, name="image")
    shape = static_shape(x)
    if dtype_of(x) != _dtypes.uint8:
        raise op_error(TypeError, f"encode_jpeg: image must be uint8, got {dtype_of(x).name}")
    if shape is not None and (len(shape) != 3 or shape[2] not in (None, 1, 3)):
        raise op_error(ValueError, f"encode_jpeg: image must be [height, width, 1 or 3], got "
                                   f"shape {list(shape)}")
    channels = {"": None, "grayscale": 1, "rgb": 3}
    if format not in channels:
        raise op_error(ValueError, f"format must be '', 'grayscale' or 'rgb', got {format!r}")
    if format and shape is not None and shape[2] not in (None, channels[format]):
        raise op_error(ValueError, f"format {format!r} needs {channels[format]} channels")
    if not 0 <= int(quality) <= 100:
        raise op_error(ValueError, f"quality must be in [0, 100], got {quality}")
    return _tensor(apply("EncodeJpeg", [x], [((), _dtypes.string)],
                         attrs={"quality": int(quality), "progressive": bool(progressive),
                                "optimize_size": bool(optimize_size),
                                "chroma_downsampling": bool(chroma_downsampling)}))


def _tensor(result):
    """An eager result as TensorFlow's: a scalar string tensor with
    ``numpy()`` (the bytes), not bare bytes; traced results as they are."""
    return as_eager(result) if isinstance(result, bytes) else result


def encode_png(image, compression=-1, name=None):
    """PNG-encode a uint8 or uint16 image ``[height, width, channels]``
    (``tf.io.encode_png``): 1 channel is gray, 2 gray + alpha, 3 RGB, 4 RGBA.

    `compression` is zlib's level, -1 (its default) or 0 to 9. The bytes are
    not TensorFlow's (its libpng chooses other filters), but any PNG decoder
    gives back the same pixels.
    """
    x = convert(image, name="image")
    shape = static_shape(x)
    if dtype_of(x) not in (_dtypes.uint8, _dtypes.uint16):
        raise op_error(TypeError, f"encode_png: image must be uint8 or uint16, got "
                                  f"{dtype_of(x).name}")
    if shape is not None and (len(shape) != 3 or shape[2] not in (None, 1, 2, 3, 4)):
        raise op_error(ValueError, f"encode_png: image must be [height, width, 1 to 4], got "
                                   f"shape {list(shape)}")
    if isinstance(compression, bool) or not isinstance(compression, int) or \
            not -1 <= compression <= 9:
        raise op_error(ValueError, f"compression should be in [-1,9], got {compression!r}")
    return _tensor(apply("EncodePng", [x], [((), _dtypes.string)],
                         attrs={"compression": compression}))
