"""``tf.io.decode_compressed``: inflate ZLIB or GZIP strings, natively
(csrc/ops/decode_compressed.c) in a map function and eagerly."""
from conveyor import dtypes as _dtypes
from conveyor.framework.tracing import apply, convert, dtype_of, op_error, static_shape

__all__ = ["decode_compressed"]

_KINDS = {"ZLIB": 1, "GZIP": 2}


def decode_compressed(bytes, compression_type="", name=None):  # noqa: A002 - TF's name
    """Each string of `bytes` decompressed (``compression_type``: ``""`` for
    none, ``"ZLIB"`` or ``"GZIP"``). As TensorFlow, a stream cut short gives
    what was decoded; bytes that are not such a stream raise ``DataLossError``."""
    x = convert(bytes, name="bytes")
    if dtype_of(x) != _dtypes.string:
        raise op_error(TypeError, f"decode_compressed: `bytes` must be a string tensor, got "
                                  f"{dtype_of(x).name}")
    kind = (compression_type or "").upper()
    if kind == "":
        return x
    if kind == "ZSTD":
        raise op_error(NotImplementedError, "decode_compressed: ZSTD is not supported by conveyor "
                                            "(ZLIB and GZIP are)")
    if kind not in _KINDS:
        raise op_error(ValueError, f"Only ZLIB, ZSTD, GZIP or NONE are supported compressions, "
                                   f"got {compression_type!r}")
    return apply("DecodeCompressed", [x], [(static_shape(x), _dtypes.string)],
                 attrs={"kind": _KINDS[kind]})
