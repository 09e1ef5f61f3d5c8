"""File and image ops of ``tf.io``: ``read_file``, ``decode_jpeg``,
``decode_png``, ``decode_image`` and ``decode_raw``.

Each runs eagerly on NumPy values (``bytes``, ``str``, object arrays of
bytes) and is traced into the native program of a ``Dataset.map`` function,
where it runs on the map's worker threads without the GIL:

    ds = tf.data.Dataset.list_files("/data/*.jpg")
    ds = ds.map(lambda f: tf.io.decode_jpeg(tf.io.read_file(f), channels=3),
                num_parallel_calls=tf.data.AUTOTUNE)

JPEG decoding uses libjpeg-turbo the way TensorFlow's DecodeJpeg does, and
PNG decoding (zlib) reproduces TensorFlow's libpng conversions, so both give
TensorFlow's pixels. Images whose header declares more than
:func:`get_max_image_pixels` pixels are refused before any image memory is
allocated (a decompression-bomb guard; see :func:`set_max_image_pixels`).
"""
from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor.ops.image_ops import convert_image_dtype
from conveyor.framework.tracing import Tensor, apply, convert, op_error, static_shape

__all__ = ["read_file", "write_file", "decode_jpeg", "decode_and_crop_jpeg", "extract_jpeg_shape",
           "decode_png", "decode_image", "decode_raw", "set_max_image_pixels",
           "get_max_image_pixels"]

# Pillow's error threshold (twice its warning limit), which is also the
# largest RGB image TensorFlow's decoder accepts (2**29 bytes).
DEFAULT_MAX_IMAGE_PIXELS = 178_956_970
_max_image_pixels = DEFAULT_MAX_IMAGE_PIXELS


def set_max_image_pixels(limit):
    """Set the decompression-bomb guard of the image decoders.

    ``decode_jpeg`` and ``decode_image`` refuse, with an
    ``InvalidArgumentError`` giving the dimensions and the limit, an image
    whose header declares more than `limit` pixels (width x height, before
    any ``ratio`` scaling), before they allocate memory for it. The default
    is 178,956,970 pixels (Pillow's limit, and TensorFlow's own for RGB).
    ``None`` or ``0`` removes the limit.

    The limit is read when a decode op is called eagerly or traced (when
    ``Dataset.map`` builds its program), so a pipeline keeps the limit it was
    built with. Returns the previous limit.
    """
    global _max_image_pixels
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"set_max_image_pixels: `limit` must be a non-negative int or None, "
                             f"got {limit!r}")
    previous = _max_image_pixels
    _max_image_pixels = limit or None
    return previous


def get_max_image_pixels():
    """The decoders' pixel limit (``None`` when there is none)."""
    return _max_image_pixels


def _pixel_limit():
    return _max_image_pixels or 0


def _invalid(message):
    return op_error(_errors.InvalidArgumentError, message)


def _scalar_string(value, name, what):
    x = convert(value, dtype=_dtypes.string, name=name)
    shape = static_shape(x)
    if shape is not None and len(shape) != 0:
        raise _invalid(f"{what} must be scalar, but had shape: {list(shape)}")
    return x


def _int_arg(value, name):
    if isinstance(value, Tensor):
        raise op_error(TypeError, f"`{name}` must be a Python int in conveyor, not a tensor")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise op_error(TypeError, f"`{name}` must be an int, got {value!r}") from None


def read_file(filename, name=None):
    """The entire contents of the file `filename`, as a scalar string
    (``tf.io.read_file``).

    Raises ``NotFoundError`` when the file does not exist,
    ``PermissionDeniedError`` when it cannot be read and
    ``FailedPreconditionError`` for a directory, each naming the file.
    """
    x = _scalar_string(filename, "filename", "Input filename tensor")
    return apply("ReadFile", [x], [((), _dtypes.string)])


def write_file(filename, contents, name=None):
    """Write the scalar string `contents` to the file `filename` (``tf.io.write_file``).

    Any URL the engine's file-system layer knows works; missing parent
    directories are created, as TensorFlow does, and the file appears whole.
    """
    import numpy as np

    from conveyor.io import gfile

    def scalar(value, what):
        value = value.numpy() if hasattr(value, "numpy") else value
        value = value.item() if isinstance(value, np.ndarray) and value.ndim == 0 else value
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        raise _errors.InvalidArgumentError(
            None, None, f"{what} must be a scalar string, got {type(value).__name__}")

    path = scalar(filename, "filename").decode("utf-8")
    data = scalar(contents, "contents")
    parent = path.rsplit("/", 1)[0] if "/" in path else ""
    if parent and not gfile.isdir(parent):
        gfile.makedirs(parent)
    with gfile.GFile(path, "wb") as f:
        f.write(data)


_DCT_METHODS = {"": 0, "INTEGER_FAST": 0, "INTEGER_ACCURATE": 1}


def _check_channels(channels):
    channels = _int_arg(channels, "channels")
    if channels not in (0, 1, 3, 4):
        raise _invalid(f"`channels` must be 0, 1, 3 or 4 but got {channels}")
    return channels


def _jpeg_attrs(channels, ratio, fancy_upscaling, try_recover_truncated, acceptable_fraction,
                dct_method):
    """The checked attributes of DecodeJpeg and DecodeAndCropJpeg."""
    channels = _check_channels(channels)
    ratio = _int_arg(ratio, "ratio")
    if ratio not in (1, 2, 4, 8):
        raise _invalid(f"ratio must be 1, 2, 4, or 8, got {ratio}")
    if dct_method not in _DCT_METHODS:
        raise _invalid("dct_method must be one of {'', 'INTEGER_FAST', 'INTEGER_ACCURATE'}")
    if isinstance(acceptable_fraction, Tensor):
        raise op_error(TypeError, "`acceptable_fraction` must be a Python number in conveyor")
    return {"channels": channels, "ratio": ratio, "fancy_upscaling": int(bool(fancy_upscaling)),
            "try_recover_truncated": int(bool(try_recover_truncated)),
            "dct_method": _DCT_METHODS[dct_method], "max_pixels": _pixel_limit(),
            "acceptable_fraction": float(acceptable_fraction)}


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False,
                acceptable_fraction=1, dct_method="", name=None):
    """Decode a JPEG-encoded image to a uint8 tensor (``tf.io.decode_jpeg``).

    Args:
      contents: a scalar string, the JPEG-encoded image.
      channels: 0 (the image's own: 1 for grayscale, 3 for color; CMYK
        images are converted to RGB), 1 (grayscale) or 3 (RGB).
      ratio: 1, 2, 4 or 8: downscale by this factor while decoding
        (libjpeg's scaled IDCT; much faster than decoding then resizing).
      fancy_upscaling: smooth chroma upsampling (slower, better quality).
      try_recover_truncated: decode a truncated image, repeating the last
        decoded row over the missing ones.
      acceptable_fraction: the fraction of rows that must be present in a
        truncated image (without `try_recover_truncated`); the missing rows
        are black.
      dct_method: ``''`` or ``'INTEGER_FAST'`` (TensorFlow's default, the fast
        integer IDCT) or ``'INTEGER_ACCURATE'``.

    Returns:
      A uint8 tensor of shape ``[height, width, channels]``; its static shape
      is ``(None, None, channels or None)``.

    Raises ``InvalidArgumentError`` for invalid or truncated JPEG data, for
    data of no known image format, and for images larger than
    :func:`~conveyor.io.get_max_image_pixels`; ``UnimplementedError`` for GIF, BMP, WebP
    and JPEG XL data (which TensorFlow's op also decodes). As in TensorFlow,
    PNG data is decoded too (as ``decode_png`` with uint8 output, channels 0,
    1, 3 or 4).
    """
    x = _scalar_string(contents, "contents", "`contents`")
    attrs = _jpeg_attrs(channels, ratio, fancy_upscaling, try_recover_truncated,
                        acceptable_fraction, dct_method)
    channels = attrs["channels"]
    return apply("DecodeJpeg", [x], [((None, None, channels or None), _dtypes.uint8)], attrs=attrs)


def decode_and_crop_jpeg(contents, crop_window, channels=0, ratio=1, fancy_upscaling=True,
                         try_recover_truncated=False, acceptable_fraction=1, dct_method="",
                         name=None):
    """Decode the window ``crop_window = [y, x, height, width]`` of a JPEG
    image (``tf.io.decode_and_crop_jpeg``, ``tf.image.decode_and_crop_jpeg``).

    Only the window is decoded: libjpeg-turbo skips the rows above it,
    decodes only the columns of blocks that cover it and stops after its last
    row, as TensorFlow's op does, so the pixels are TensorFlow's (for the
    default options, those of ``decode_jpeg`` then a crop). The window is in
    output pixels, after `ratio`. Arguments as :func:`decode_jpeg`; JPEG data
    only.

    Raises ``InvalidArgumentError`` for a window not inside the image, for
    `crop_window` not an int32 vector of 4, for non-JPEG data and as
    :func:`decode_jpeg` does.
    """
    x = _scalar_string(contents, "contents", "`contents`")
    window = convert(crop_window, dtype=_dtypes.int32, name="crop_window")
    shape = static_shape(window)
    if shape is not None and len(shape) != 1:
        raise _invalid(f"crop_window must be 1-D, got shape {list(shape)}")
    if shape is not None and shape[0] not in (None, 4):
        raise _invalid(f"crop_size must have four elements {list(shape)}")
    attrs = _jpeg_attrs(channels, ratio, fancy_upscaling, try_recover_truncated,
                        acceptable_fraction, dct_method)
    channels = attrs["channels"]
    return apply("DecodeAndCropJpeg", [x, window],
                 [((None, None, channels or None), _dtypes.uint8)], attrs=attrs)


def extract_jpeg_shape(contents, output_type=_dtypes.int32, name=None):
    """The shape ``[height, width, channels]`` of a JPEG image, read from its
    header alone (``tf.io.extract_jpeg_shape``): nothing is decoded.
    `channels` is the number of color components the file declares (4 for
    CMYK). `output_type` is int32 or int64.

    Raises ``InvalidArgumentError`` for data that is not a JPEG header.
    """
    x = convert(contents, dtype=_dtypes.string, name="contents")
    shape = static_shape(x)
    if shape is not None and len(shape) != 0:
        raise _invalid(f"contents must be scalar, got shape {list(shape)}")
    dtype = _dtypes.as_dtype(output_type)
    if dtype not in (_dtypes.int32, _dtypes.int64):
        raise _invalid(f"Value for attr 'output_type' of {dtype.name} is not in the list of "
                       f"allowed values: int32, int64")
    return apply("ExtractJpegShape", [x], [((3,), dtype)], attrs={"output_type": dtype._code})


def decode_png(contents, channels=0, dtype=_dtypes.uint8, name=None):
    """Decode a PNG-encoded image to a uint8 or uint16 tensor
    (``tf.io.decode_png``).

    Every standard PNG decodes: bit depths 1, 2, 4, 8 and 16, gray, gray +
    alpha, RGB, RGBA and palette images, tRNS transparency and Adam7
    interlacing. As in TensorFlow, JPEG data is decoded too.

    Args:
      contents: a scalar string, the PNG-encoded image.
      channels: 0 (the image's own: 1 gray, 2 gray + alpha, 3 RGB, 4 RGBA; a
        palette image gives 3, or 4 when it has transparency), 1 (gray), 3
        (RGB) or 4 (RGBA).
      dtype: uint8 or uint16. 16-bit images decoded to uint8 keep the high
        byte of each value; 8-bit images decoded to uint16 are
        ``value * 257``.

    Returns:
      A tensor of type `dtype`, ``[height, width, channels]``; its static
      shape is ``(None, None, channels or None)``.

    Raises ``InvalidArgumentError`` for invalid, corrupt (bad CRC or Adler-32
    check) or truncated data, data of no known image format, and images
    larger than :func:`~conveyor.io.get_max_image_pixels`; ``UnimplementedError`` for GIF,
    BMP, WebP and JPEG XL data.
    """
    x = _scalar_string(contents, "contents", "`contents`")
    channels = _check_channels(channels)
    dtype = _dtypes.as_dtype(dtype)
    if dtype not in (_dtypes.uint8, _dtypes.uint16):
        raise op_error(TypeError, f"Value for attr 'dtype' of {dtype.name} is not in the list of "
                                  f"allowed values: uint8, uint16")
    return apply("DecodePng", [x], [((None, None, channels or None), dtype)],
                 attrs={"channels": channels, "dtype": dtype._code, "max_pixels": _pixel_limit()})


def decode_image(contents, channels=None, dtype=_dtypes.uint8, name=None, expand_animations=True):
    """Decode an image, detecting its format from its first bytes
    (``tf.io.decode_image``).

    conveyor decodes JPEG images (with ``decode_jpeg``'s defaults) and PNG
    images (as ``decode_png``); GIF, BMP, WebP and JPEG XL data raise
    ``UnimplementedError`` naming the format, and data of no known format
    raises ``InvalidArgumentError``.

    Args:
      contents: a scalar string, the encoded image.
      channels: ``None`` or 0 (the image's own), 1, 3 or 4 (not for JPEG).
      dtype: the output type. uint8 values are the decoded pixels; other
        types are scaled as ``tf.image.convert_image_dtype`` does (JPEG:
        float32 ``value / 255``, uint16 ``value * 256``; PNG is decoded to
        uint16 first, as ``decode_png(dtype=uint16)``, then float32 is
        ``value / 65535``).
      expand_animations: as in TensorFlow: when True (the default) the static
        shape is unknown (an animated GIF would be 4-D); pass False to get
        ``(None, None, channels or None)``. JPEG and PNG images are always 3-D.

    Returns:
      A tensor of type `dtype`, ``[height, width, channels]``.
    """
    x = _scalar_string(contents, "contents", "`contents`")
    channels = _check_channels(0 if channels is None else channels)
    dtype = _dtypes.as_dtype(dtype)
    shape = None if expand_animations else (None, None, channels or None)
    native = (_dtypes.uint8, _dtypes.uint16, _dtypes.float32)
    attrs = {"channels": channels,
             "dtype": dtype._code if dtype in native else _dtypes.uint16._code,
             "expand_animations": int(bool(expand_animations)), "max_pixels": _pixel_limit()}
    if dtype in native:
        return apply("DecodeImage", [x], [(shape, dtype)], attrs=attrs)
    # As TensorFlow does: decode to uint16, then convert.
    return convert_image_dtype(apply("DecodeImage", [x], [(shape, _dtypes.uint16)], attrs=attrs),
                               dtype)


_RAW_TYPES = ("float16", "float32", "float64", "int32", "uint16", "uint8", "int16", "int8",
              "int64", "bfloat16", "bool")  # bool last: not with fixed_length


def decode_raw(input_bytes, out_type, little_endian=True, fixed_length=None, name=None):
    """Reinterpret the bytes of each string as a vector of numbers
    (``tf.io.decode_raw``).

    The result has the shape of `input_bytes` plus one last dimension: the
    string length divided by the size of `out_type`. Without `fixed_length`
    all strings must have the same length, a multiple of that size; with it,
    each string is cut or zero-padded to `fixed_length` bytes.

    Args:
      input_bytes: a string tensor of any shape.
      out_type: float16, float32, float64, int8, int16, int32, int64, uint8,
        uint16, bfloat16 (with ml_dtypes installed) or bool (bool is not
        allowed with `fixed_length`).
      little_endian: whether the values are stored little-endian.
      fixed_length: None, or the number of bytes of each string to decode
        (a Python int in conveyor).

    Raises ``InvalidArgumentError`` when the strings differ in length or their
    length is not a multiple of the type's size.
    """
    x = convert(input_bytes, dtype=_dtypes.string, name="input_bytes")
    out_type = _dtypes.as_dtype(out_type)
    allowed = _RAW_TYPES if fixed_length is None else _RAW_TYPES[:-1]
    if out_type.name not in allowed:
        raise _invalid(f"Value for attr 'out_type' of {out_type.name} is not in the list of "
                       f"allowed values: {', '.join(allowed)}")
    width = None
    if fixed_length is not None:
        fixed_length = _int_arg(fixed_length, "fixed_length")
        if fixed_length <= 0:
            raise _invalid(f"fixed_length ({fixed_length}) must be greater than zero.")
        if fixed_length % out_type.size:
            raise _invalid(f"fixed_length ({fixed_length}) must be a multiple of the size of "
                           f"out_type ({out_type.size})")
        width = fixed_length // out_type.size
    shape = static_shape(x)
    out_shape = None if shape is None else tuple(shape) + (width,)
    return apply("DecodeRaw", [x], [(out_shape, out_type)],
                 attrs={"dtype": out_type._code, "little_endian": int(bool(little_endian)),
                        "fixed_length": fixed_length or 0})
