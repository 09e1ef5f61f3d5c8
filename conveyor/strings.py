"""``conveyor.strings``: the ``tf.strings`` ops an input pipeline uses.

Each op runs eagerly on Python strings, ``bytes``, NumPy arrays of them and
EagerTensors, and inside ``Dataset.map`` is compiled into the native
program (no GIL). Strings are bytes; text is UTF-8.
"""
from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor._tracing import Tensor, apply, convert, current_trace, op_error, static_shape

__all__ = ["split", "bytes_split", "unicode_split", "unicode_decode", "to_number",
           "to_hash_bucket_fast", "to_hash_bucket_strong", "to_hash_bucket"]


# -- split, number and hash ops (csrc/ops/string_split.c, unicode_decode.c,
# string_to_number.c, string_to_hash_bucket.c)

def _strings(value, name):
    return convert(value, dtype=_dtypes.string, name=name)


def _scalar_only(x, fname):
    """The ops that give a RaggedTensor for rank >= 1 in TensorFlow take a
    scalar in conveyor (it has no RaggedTensor yet)."""
    shape = static_shape(x)
    if shape is not None and len(shape) > 0:
        raise op_error(NotImplementedError,
                       f"tf.strings.{fname} of a rank-{len(shape)} string tensor (shape "
                       f"{list(shape)}) returns a RaggedTensor in TensorFlow, and conveyor has no "
                       f"ragged tensors yet: call it on scalar strings (for example inside "
                       f"Dataset.map before batching)")


def _int_attr(value, name, fname):
    if isinstance(value, Tensor):
        raise op_error(TypeError, f"{fname}: `{name}` must be a Python int, not a traced tensor")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise op_error(TypeError, f"{fname}: `{name}` must be an int, got {value!r}") from None


def split(input, sep=None, maxsplit=-1, name=None):  # noqa: A002 - TensorFlow's argument name
    """Split a scalar string into its pieces (``tf.strings.split``).

    With ``sep=None`` (or ``""``) the string is split on runs of ASCII
    whitespace and empty pieces are dropped; with a separator (any bytes)
    it is split at each occurrence and empty pieces are kept. ``maxsplit``
    limits the number of splits (the rest is the last piece).

    Returns a 1-D string tensor whose length depends on the value (its
    static shape is ``(None,)`` inside ``Dataset.map``). TensorFlow returns a
    RaggedTensor for inputs of rank >= 1; conveyor raises
    ``NotImplementedError`` for them.
    """
    x = _strings(input, "input")
    _scalar_only(x, "split")
    maxsplit = _int_attr(maxsplit, "maxsplit", "split")
    if sep is None:
        return apply("StringSplitV2", [x], [((None,), _dtypes.string)], ints=[0, maxsplit])
    s = _strings(sep, "sep")
    if static_shape(s) not in (None, ()):
        raise op_error(_errors.InvalidArgumentError,
                       f"sep must be a scalar, got shape: {list(static_shape(s))}")
    return apply("StringSplitV2", [x, s], [((None,), _dtypes.string)], ints=[1, maxsplit])


def bytes_split(input, name=None):  # noqa: A002
    """The bytes of a scalar string, one string each (``tf.strings.bytes_split``):
    a 1-D string tensor of the string's length (``(None,)`` when traced)."""
    x = _strings(input, "input")
    _scalar_only(x, "bytes_split")
    return apply("StringSplitV2", [x], [((None,), _dtypes.string)], ints=[2, -1])


_ERRORS = {"strict": 0, "replace": 1, "ignore": 2}


def _decode_args(fname, input_encoding, errors, replacement_char):
    if not isinstance(input_encoding, str) or input_encoding.upper().replace("_", "-") not in (
            "UTF-8", "UTF8"):
        raise op_error(NotImplementedError,
                       f"tf.strings.{fname}: conveyor decodes UTF-8 only, got input_encoding="
                       f"{input_encoding!r}")
    if errors not in _ERRORS:
        raise op_error(_errors.InvalidArgumentError,
                       f"Value for attr 'errors' of \"{errors}\" is not in the list of allowed "
                       f"values: \"strict\", \"replace\", \"ignore\"")
    replacement_char = _int_attr(replacement_char, "replacement_char", fname)
    if not 0 <= replacement_char <= 0x10FFFF:
        raise op_error(_errors.InvalidArgumentError,
                       "replacement_char out of unicode codepoint range")
    return _ERRORS[errors], replacement_char


def unicode_decode(input, input_encoding, errors="replace", replacement_char=0xFFFD,  # noqa: A002
                   replace_control_characters=False, name=None):
    """The code points of a scalar UTF-8 string as a 1-D int32 tensor
    (``tf.strings.unicode_decode``).

    An invalid byte sequence (its longest valid-looking prefix, as
    TensorFlow) becomes `replacement_char` with ``errors="replace"``, is
    dropped with ``"ignore"`` and raises ``InvalidArgumentError`` with
    ``"strict"``; with `replace_control_characters`, U+0000..U+001F become
    `replacement_char` (dropped with ``"ignore"``). Only UTF-8 is supported; inputs of rank >= 1
    (a RaggedTensor in TensorFlow) raise ``NotImplementedError``.
    """
    x = _strings(input, "input")
    _scalar_only(x, "unicode_decode")
    mode, repl = _decode_args("unicode_decode", input_encoding, errors, replacement_char)
    return apply("UnicodeDecode", [x], [((None,), _dtypes.int32)],
                 ints=[mode, repl, int(bool(replace_control_characters)), 0])


def unicode_split(input, input_encoding, errors="replace", replacement_char=0xFFFD,  # noqa: A002
                  name=None):
    """The characters of a scalar UTF-8 string, one string each
    (``tf.strings.unicode_split``); invalid sequences follow `errors` as in
    :func:`unicode_decode` (a replacement is `replacement_char` in UTF-8)."""
    x = _strings(input, "input")
    _scalar_only(x, "unicode_split")
    mode, repl = _decode_args("unicode_split", input_encoding, errors, replacement_char)
    return apply("UnicodeDecode", [x], [((None,), _dtypes.string)], ints=[mode, repl, 0, 1])


_NUMBER_TYPES = ("float32", "float64", "int32", "int64", "uint32", "uint64")


def to_number(string_tensor, out_type=_dtypes.float32, name=None):
    """Parse each string as a number of `out_type` (``tf.strings.to_number``):
    float32 (default), float64, int32, int64, uint32 or uint64. Leading and
    trailing whitespace is allowed; floats accept exponents, hexadecimal,
    ``inf`` and ``nan`` (values out of range become +-inf), integers only
    decimal digits with a sign (no minus for unsigned types), in range. Anything else raises
    ``InvalidArgumentError`` naming the string. The result has the input's
    shape."""
    x = _strings(string_tensor, "string_tensor")
    out_type = _dtypes.as_dtype(out_type)
    if out_type.name not in _NUMBER_TYPES:
        raise op_error(_errors.InvalidArgumentError,
                       f"Value for attr 'out_type' of {out_type.name} is not in the list of "
                       f"allowed values: float, double, int32, int64, uint32, uint64")
    return apply("StringToNumber", [x], [(static_shape(x), out_type)], ints=[out_type._code])


def _num_buckets(num_buckets, op):
    n = _int_attr(num_buckets, "num_buckets", op)
    if n < 1 or n >= 2 ** 63:
        shown = n - 2 ** 64 if 2 ** 63 <= n < 2 ** 64 else n  # TensorFlow's int64 attr wraps
        if current_trace() is not None:
            raise op_error(ValueError, f"Attr 'num_buckets' of '{op}' Op passed {shown} less "
                                       f"than minimum 1.")
        raise op_error(_errors.InvalidArgumentError,
                       f"Value for attr 'num_buckets' of {shown} must be at least minimum 1")
    return n


def _hash(x, kind, buckets, key=(0, 0)):
    return apply("StringToHashBucket", [x], [(static_shape(x), _dtypes.int64)],
                 ints=[kind, buckets, key[0], key[1]])


def to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002
    """Each string's bucket in ``[0, num_buckets)``: FarmHash Fingerprint64
    of its bytes modulo `num_buckets`, as int64 in the input's shape
    (``tf.strings.to_hash_bucket_fast``; the same buckets as TensorFlow)."""
    x = _strings(input, "input")
    return _hash(x, 0, _num_buckets(num_buckets, "StringToHashBucketFast"))


def to_hash_bucket_strong(input, num_buckets, key, name=None):  # noqa: A002
    """Each string's bucket from SipHash-2-4 keyed by `key` (two ints), as
    int64 in the input's shape (``tf.strings.to_hash_bucket_strong``)."""
    x = _strings(input, "input")
    buckets = _num_buckets(num_buckets, "StringToHashBucketStrong")
    if isinstance(key, Tensor):
        raise op_error(TypeError, "to_hash_bucket_strong: `key` must be a list of two ints")
    key = [_int_attr(k, "key", "to_hash_bucket_strong") for k in key]
    if len(key) != 2:
        raise op_error(_errors.InvalidArgumentError, "Key must have 2 elements")
    if any(not -2 ** 63 <= k < 2 ** 63 for k in key):
        raise op_error(ValueError, f"to_hash_bucket_strong: key {key} does not fit int64")
    return _hash(x, 1, buckets, key)


def to_hash_bucket(string_tensor, num_buckets, name=None):
    """Each string's bucket from the legacy 64-bit hash of
    ``tf.strings.to_hash_bucket`` (prefer :func:`to_hash_bucket_fast`)."""
    x = _strings(string_tensor, "string_tensor")
    return _hash(x, 2, _num_buckets(num_buckets, "StringToHashBucket"))
