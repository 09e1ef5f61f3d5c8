"""The ``tf.strings`` ops an input pipeline uses; ``conveyor.strings`` re-exports
them and its docstring says how they run (eagerly, and natively inside
``Dataset.map``)."""
import functools
import re

import numpy as np

from conveyor import _engine
from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor.framework.eager import as_eager
from conveyor.framework.tracing import (Tensor, apply, convert, current_trace, dtype_of, op_error,
                                        static_shape)

__all__ = ["split", "bytes_split", "unicode_split", "unicode_decode", "to_number",
           "to_hash_bucket_fast", "to_hash_bucket_strong", "to_hash_bucket", "encode_base64", "decode_base64", "ngrams"]


def _string_input(value, fname, name="input"):
    """`value` as a string tensor (a traced Tensor or a NumPy object array)."""
    x = convert(value, name=name)
    if dtype_of(x) != _dtypes.string:
        raise op_error(TypeError, f"{fname}: `{name}` must be a string tensor, got "
                                  f"{dtype_of(x).name}")
    return x


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
        return apply("StringSplitV2", [x], [((None,), _dtypes.string)],
                     attrs={"mode": 0, "maxsplit": maxsplit})
    s = _strings(sep, "sep")
    if static_shape(s) not in (None, ()):
        raise op_error(_errors.InvalidArgumentError,
                       f"sep must be a scalar, got shape: {list(static_shape(s))}")
    return apply("StringSplitV2", [x, s], [((None,), _dtypes.string)],
                 attrs={"mode": 1, "maxsplit": maxsplit})


def bytes_split(input, name=None):  # noqa: A002
    """The bytes of a scalar string, one string each (``tf.strings.bytes_split``):
    a 1-D string tensor of the string's length (``(None,)`` when traced)."""
    x = _strings(input, "input")
    _scalar_only(x, "bytes_split")
    return apply("StringSplitV2", [x], [((None,), _dtypes.string)],
                 attrs={"mode": 2, "maxsplit": -1})


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
                 attrs={"errors": mode, "replacement_char": repl,
                        "replace_control_characters": int(bool(replace_control_characters)),
                        "output_strings": 0})


def unicode_split(input, input_encoding, errors="replace", replacement_char=0xFFFD,  # noqa: A002
                  name=None):
    """The characters of a scalar UTF-8 string, one string each
    (``tf.strings.unicode_split``); invalid sequences follow `errors` as in
    :func:`unicode_decode` (a replacement is `replacement_char` in UTF-8)."""
    x = _strings(input, "input")
    _scalar_only(x, "unicode_split")
    mode, repl = _decode_args("unicode_split", input_encoding, errors, replacement_char)
    return apply("UnicodeDecode", [x], [((None,), _dtypes.string)],
                 attrs={"errors": mode, "replacement_char": repl, "replace_control_characters": 0,
                        "output_strings": 1})


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
    return apply("StringToNumber", [x], [(static_shape(x), out_type)],
                 attrs={"dtype": out_type._code})


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
                 attrs={"kind": kind, "num_buckets": buckets, "key0": key[0], "key1": key[1]})


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


# -- regex and text ops ------------------------------------------------------------
# csrc/ops/regex.c (the RE2-syntax engine), regex_full_match.c, regex_replace.c,
# string_case.c, string_strip.c, string_length.c, substr.c, string_join.c,
# reduce_join.c, as_string.c; string ==/!= is string_equal.c (conveyor.ops.math_ops).

__all__ += ["regex_full_match", "regex_replace", "lower", "upper", "strip", "length"]


def _static_text(value, fname, name, traced_inputs):
    """A pattern or rewrite given as str, bytes or a scalar string array, as
    str. A traced one (a tensor computed per element) makes the function run
    in Python: conveyor compiles patterns when the pipeline is built."""
    if isinstance(value, Tensor):
        raise value._trace.fail(f"{fname}: a `{name}` computed per element is not supported "
                                f"natively (pass a Python string)")
    if isinstance(value, np.ndarray):
        if value.ndim != 0:
            raise op_error(_errors.InvalidArgumentError,
                           f"{name.capitalize()} must be scalar, but received {list(value.shape)}")
        value = value.item()
    if isinstance(value, (bytes, np.bytes_)):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise op_error(_errors.InvalidArgumentError,
                           f"{fname}: `{name}` is not valid UTF-8: {value!r}") from None
    if not isinstance(value, str):
        raise op_error(TypeError, f"{fname}: `{name}` must be a string, got {value!r:.80}")
    if "\0" in value:
        raise op_error(_errors.InvalidArgumentError,
                       f"{fname}: a `{name}` with NUL characters is not supported")
    return value


@functools.lru_cache(maxsize=256)
def _compile(pattern):
    return _engine.regex_compile(pattern)


def _compiled(pattern):
    """`pattern` compiled (once: the program shares it among its threads);
    an invalid pattern is an InvalidArgumentError now, when the pipeline is
    built, as TensorFlow's static regex ops fail when created."""
    try:
        return _compile(pattern)
    except _errors.InvalidArgumentError as e:
        raise op_error(_errors.InvalidArgumentError, str(e)) from None


_REWRITE_ESCAPE = re.compile(r"\\(.?)", re.S)


def regex_full_match(input, pattern, name=None):  # noqa: A002 - TensorFlow's argument name
    """Whether each string of `input` matches `pattern` as a whole, as a bool
    tensor of the same shape (``tf.strings.regex_full_match``).

    `pattern` uses RE2's syntax (TensorFlow's engine) and is compiled once,
    when the map function is traced; an invalid pattern raises
    InvalidArgumentError. Matching takes time linear in the string's length.
    """
    x = _string_input(input, "regex_full_match")
    pattern = _static_text(pattern, "regex_full_match", "pattern", [x])
    return apply("RegexFullMatch", [x], [(static_shape(x), _dtypes.bool)], string=pattern,
                 obj=_compiled(pattern))


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """Each string of `input` with the matches of `pattern` replaced by
    `rewrite` (``tf.strings.regex_replace``): all of them, or the first with
    ``replace_global=False``. In `rewrite`, ``\\0`` is the whole match,
    ``\\1`` to ``\\9`` the pattern's groups and ``\\\\`` a backslash.
    """
    x = _string_input(input, "regex_replace")
    pattern = _static_text(pattern, "regex_replace", "pattern", [x])
    rewrite = _static_text(rewrite, "regex_replace", "rewrite", [x])
    compiled = _compiled(pattern)
    for m in _REWRITE_ESCAPE.finditer(rewrite):
        if len(m.group(1)) != 1 or m.group(1) not in "0123456789\\":
            raise op_error(_errors.InvalidArgumentError, f"regex_replace: invalid rewrite "
                                                         f"pattern: {rewrite}")
    return apply("RegexReplace", [x], [(static_shape(x), _dtypes.string)],
                 string=pattern + "\0" + rewrite,
                 attrs={"replace_global": 1 if replace_global else 0},
                 obj=compiled)


def _encoding(encoding, fname):
    if encoding in ("", None):
        return 0
    if str(encoding).lower().replace("-", "") == "utf8":
        return 1
    raise op_error(_errors.InvalidArgumentError, f"{fname}: encoding must be \"\" or \"utf-8\", "
                                                 f"got {encoding!r}")


def lower(input, encoding="", name=None):  # noqa: A002
    """Each string of `input` in lower case (``tf.strings.lower``): ASCII
    letters only, or with ``encoding="utf-8"`` Unicode letters too (invalid
    UTF-8 bytes become U+FFFD)."""
    x = _string_input(input, "lower")
    return apply("StringCase", [x], [(static_shape(x), _dtypes.string)],
                 attrs={"upper": 0, "utf8": _encoding(encoding, "lower")})


def upper(input, encoding="", name=None):  # noqa: A002
    """Each string of `input` in upper case (``tf.strings.upper``); see
    :func:`lower` for `encoding`."""
    x = _string_input(input, "upper")
    return apply("StringCase", [x], [(static_shape(x), _dtypes.string)],
                 attrs={"upper": 1, "utf8": _encoding(encoding, "upper")})


def strip(input, name=None):  # noqa: A002
    """Each string of `input` without leading and trailing ASCII whitespace
    (``tf.strings.strip``)."""
    x = _string_input(input, "strip")
    return apply("StringStrip", [x], [(static_shape(x), _dtypes.string)])


def _unit(unit, fname):
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise op_error(ValueError, f"{fname}: unit must be \"BYTE\" or \"UTF8_CHAR\", got "
                                   f"{unit!r}")
    return 1 if unit == "UTF8_CHAR" else 0


def length(input, unit="BYTE", name=None):  # noqa: A002
    """The length of each string of `input` as int32 (``tf.strings.length``):
    in bytes, or with ``unit="UTF8_CHAR"`` in UTF-8 characters."""
    x = _string_input(input, "length")
    return apply("StringLength", [x], [(static_shape(x), _dtypes.int32)],
                 attrs={"utf8": _unit(unit, "length")})


def _int_pair(pos, len_, fname):
    """pos and len as int tensors of one dtype (a Python int takes the other's)."""
    p, n = convert(pos, name="pos"), convert(len_, name="len")
    for v, label in ((p, "pos"), (n, "len")):
        if dtype_of(v) not in (_dtypes.int32, _dtypes.int64):
            raise op_error(TypeError, f"{fname}: `{label}` must be int32 or int64, got "
                                      f"{dtype_of(v).name}")
    if dtype_of(p) != dtype_of(n):
        if not isinstance(len_, Tensor) and np.ndim(len_) == 0 and isinstance(len_, int):
            n = convert(len_, dtype_of(p), name="len")
        elif not isinstance(pos, Tensor) and np.ndim(pos) == 0 and isinstance(pos, int):
            p = convert(pos, dtype_of(n), name="pos")
        else:
            raise op_error(TypeError, f"{fname}: `pos` and `len` must have the same dtype, got "
                                      f"{dtype_of(p).name} and {dtype_of(n).name}")
    sp, sn = static_shape(p), static_shape(n)
    if sp is not None and sn is not None and None not in sp + sn and sp != sn:
        raise op_error(ValueError, f"{fname}: `pos` and `len` must have the same shape, got "
                                   f"{list(sp)} and {list(sn)}")
    return p, n


def _broadcast(a, b, fname):
    from conveyor.ops.math_ops import _broadcast_shape
    return _broadcast_shape(a, b, fname)


__all__ += ["substr", "join", "reduce_join", "as_string"]


def substr(input, pos, len, unit="BYTE", name=None):  # noqa: A002 - TensorFlow's names
    """The substring of each string of `input` that starts at `pos` and is
    `len` long (``tf.strings.substr``), in bytes or ``unit="UTF8_CHAR"``
    characters. A negative `pos` counts from the end; a `pos` past either
    end is an InvalidArgumentError; the substring stops at the string's end.
    `pos` and `len` (one shape) broadcast with `input`."""
    x = _string_input(input, "substr")
    p, n = _int_pair(pos, len, "substr")
    shape = _broadcast(static_shape(x), static_shape(p), "substr")
    return apply("Substr", [x, p, n], [(shape, _dtypes.string)],
                 attrs={"utf8": _unit(unit, "substr")})


def _separator(separator, fname):
    sep = _static_text(separator, fname, "separator", [])
    return sep or None


def join(inputs, separator="", name=None):
    """The strings of `inputs` (a list of string tensors of one shape, or
    scalars, which repeat) joined element by element with `separator`
    (``tf.strings.join``)."""
    if isinstance(inputs, (Tensor, np.ndarray, str, bytes)):
        raise op_error(TypeError, "join: `inputs` must be a list of string tensors")
    xs = [_string_input(v, "join", "inputs") for v in inputs]
    if not xs:
        raise op_error(ValueError, "join: `inputs` must not be empty")
    shapes = [static_shape(v) for v in xs]
    shape = ()
    for s in shapes:
        if s == ():
            continue
        if s is None or None in s or shape in ((), None):
            if shape == () or (s is not None and shape is None):
                shape = s
            continue
        if s != shape:
            raise op_error(_errors.InvalidArgumentError,
                           f"Input shapes do not match: {list(shape)} vs. {list(s)}")
    return apply("StringJoin", xs, [(shape, _dtypes.string)],
                 string=_separator(separator, "join"))


def reduce_join(inputs, axis=None, keepdims=False, separator="", name=None):
    """The strings of `inputs` joined along `axis` (an int, a list, or None
    for all axes) in row-major order with `separator`
    (``tf.strings.reduce_join``); the reduced axes are dropped, or kept
    with size 1 (`keepdims`)."""
    x = _string_input(inputs, "reduce_join", "inputs")
    shape = static_shape(x)
    if shape is None:
        raise op_error(ValueError, "reduce_join: the input needs a known rank")
    rank = builtins_len(shape)
    if axis is None:
        axes = list(range(rank - 1, -1, -1))  # all: the last varies fastest (row-major)
    else:
        if isinstance(axis, Tensor):
            raise axis._trace.fail("reduce_join: an `axis` computed per element")
        axes = []
        for a in np.asarray(axis).reshape(-1).tolist():
            if not -rank <= int(a) < rank:
                raise op_error(_errors.InvalidArgumentError,
                               f"Invalid reduction dimension {int(a)} for input with {rank} "
                               f"dimensions")
            if int(a) % rank not in axes:
                axes.append(int(a) % rank)
    out = [1 if d in axes else shape[d] for d in range(rank) if keepdims or d not in axes]
    flags = [axes.index(d) + 1 if d in axes else 0 for d in range(rank)]
    return apply("ReduceJoin", [x], [(tuple(out), _dtypes.string)],
                 attrs={"keepdims": 1 if keepdims else 0, "reduced": flags},
                 string=_separator(separator, "reduce_join"))


builtins_len = len


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="",  # noqa: A002
              name=None):
    """Each value of `input` as text (``tf.strings.as_string``): integers in
    decimal, floats with ``%f`` (``%e`` if `scientific`, ``%g`` if
    `shortest`) and `precision` digits, bools as ``true`` / ``false``;
    numbers padded to `width` with `fill` (one of ``0``, space, ``-``,
    ``+``, ``#``, read as printf flags, as TensorFlow does)."""
    x = convert(input, name="input")
    dt = dtype_of(x)
    if isinstance(fill, bytes):
        fill = fill.decode("utf-8", "replace")
    if builtins_len(fill) > 1:
        raise op_error(_errors.InvalidArgumentError, "Fill string must be one or fewer characters")
    if fill and fill not in "0 -+#":
        raise op_error(_errors.InvalidArgumentError, f"Fill argument not supported: \"{fill}\"")
    if scientific and shortest:
        raise op_error(_errors.InvalidArgumentError,
                       "Cannot select both scientific and shortest notation")
    if not dt.is_floating and dt != _dtypes.string:
        if precision > -1:
            raise op_error(_errors.InvalidArgumentError,
                           f"precision not supported for datatype {dt.name}")
        if scientific or shortest:
            raise op_error(_errors.InvalidArgumentError,
                           f"scientific and shortest format not supported for datatype {dt.name}")
    if not -1 <= int(precision) <= 1000 or not -1 <= int(width) <= 1 << 20:
        raise op_error(_errors.InvalidArgumentError, "as_string: precision or width out of range")
    return apply("AsString", [x], [(static_shape(x), _dtypes.string)],
                 attrs={"precision": int(precision), "scientific": int(bool(scientific)),
                        "shortest": int(bool(shortest)), "width": int(width),
                        "fill": ord(fill) if fill else 0})


__all__ += ["format"]


def format(template, inputs, placeholder="{}", summarize=3, name=None):  # noqa: A001
    """A scalar string: `template` with each `placeholder` replaced by the
    next of `inputs` (``tf.strings.format``). Scalars print as their value,
    vectors as ``[1 2 3]`` (the first and last `summarize` values around
    ``...`` when longer; -1: all), strings quoted. Inputs of rank 2 or more
    are not supported yet."""
    if isinstance(inputs, (list, tuple)):
        values = list(inputs)
    else:
        values = [inputs]
    xs = [convert(v, name="inputs") for v in values]
    template = _static_text(template, "format", "template", [])
    placeholder = _static_text(placeholder, "format", "placeholder", [])
    pieces = template.split(placeholder)
    if builtins_len(pieces) - 1 != builtins_len(xs):
        raise op_error(ValueError, f"The template expects {builtins_len(pieces) - 1} tensors, but "
                                   f"the inputs only has {builtins_len(xs)}.")
    for x in xs:
        shape = static_shape(x)
        if shape is None or builtins_len(shape) > 1:
            raise op_error(_errors.UnimplementedError, "format: inputs of rank 2 or more (or of "
                                                       "unknown rank) are not supported yet")
    text = "\0".join(pieces)
    return apply("StringFormat", xs, [((), _dtypes.string)],
                 attrs={"summarize": int(summarize),
                        "template_length": builtins_len(text.encode("utf-8")) + 1}, string=text)


# -- base64 (csrc/ops/base64.c) -------------------------------------------------


def encode_base64(input, pad=False, name=None):  # noqa: A002
    """Each string of `input` in web-safe base64 (``tf.io.encode_base64``:
    the alphabet A-Z a-z 0-9 - _), padded with '=' only with `pad`."""
    x = _string_input(input, "encode_base64")
    return apply("Base64", [x], [(static_shape(x), _dtypes.string)],
                 attrs={"decode": 0, "pad": int(bool(pad))})


def decode_base64(input, name=None):  # noqa: A002
    """Each web-safe base64 string of `input` decoded (``tf.io.decode_base64``),
    with or without '=' padding; another character is an
    InvalidArgumentError."""
    x = _string_input(input, "decode_base64")
    return apply("Base64", [x], [(static_shape(x), _dtypes.string)],
                 attrs={"decode": 1, "pad": 0})


# -- ngrams (eager; a traced call runs the map in Python) ---------------------------


def ngrams(data, ngram_width, separator=" ", pad_values=None, padding_width=None,
           preserve_short_sequences=False, name=None):
    """The n-grams of the strings along the last axis of `data`, joined by
    `separator` (``tf.strings.ngrams``) for each width in `ngram_width` (an
    int or a list, in that order); `pad_values` (a pair, or one value for
    both sides) pads each sequence by `padding_width` (default width - 1);
    with `preserve_short_sequences` a sequence too short for any n-gram
    gives itself, joined. Dense tensors only; conveyor computes it eagerly:
    inside a map it makes the function run in Python (a TracingWarning
    names it)."""
    x = _string_input(data, "ngrams", "data")
    if isinstance(x, Tensor):
        raise x._trace.fail("tf.strings.ngrams is computed eagerly in conveyor, not natively")
    arr = np.asarray(x, dtype=object)
    if arr.ndim == 0:
        raise op_error(ValueError, "ngrams: data must have rank >= 1")
    widths = [ngram_width] if isinstance(ngram_width, int) else list(ngram_width)
    if any(w <= 0 for w in widths):
        raise op_error(_errors.InvalidArgumentError, "ngram_width must be > 0")
    sep = separator.encode() if isinstance(separator, str) else bytes(separator)
    if pad_values is not None:
        pads = [pad_values] * 2 if isinstance(pad_values, (str, bytes)) else list(pad_values)
        pads = [p.encode() if isinstance(p, str) else bytes(p) for p in pads]

    def row(seq):
        out = []
        for w in widths:
            items = list(seq)
            if pad_values is not None:
                k = w - 1 if padding_width is None else min(int(padding_width), w - 1)
                items = [pads[0]] * k + items + [pads[1]] * k
            out += [sep.join(items[i:i + w]) for i in range(len(items) - w + 1)]
        if not out and preserve_short_sequences and len(seq):
            out = [sep.join(list(seq))]
        return out
    rows = [row(r) for r in arr.reshape(-1, arr.shape[-1])]
    if len({len(r) for r in rows}) > 1:
        raise op_error(_errors.InvalidArgumentError, "ngrams: rows give different numbers of "
                                                     "n-grams; conveyor returns dense tensors")
    width = len(rows[0]) if rows else 0
    result = np.empty((len(rows), width), dtype=object)
    for i, r in enumerate(rows):
        result[i, :] = r
    return as_eager(result.reshape(arr.shape[:-1] + (width,)))
