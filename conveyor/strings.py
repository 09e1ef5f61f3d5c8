"""String ops (``tf.strings``): each works on NumPy arrays and Python
values eagerly, and on traced tensors inside ``Dataset.map`` (recorded into
the native program, run without the GIL). Values, dtypes, shapes and errors
follow TensorFlow's.
"""
import functools
import re

import numpy as np

from conveyor import _engine
from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor._tracing import Tensor, apply, convert, dtype_of, op_error, static_shape

__all__ = []


def _string_input(value, fname, name="input"):
    """`value` as a string tensor (a traced Tensor or a NumPy object array)."""
    x = convert(value, name=name)
    if dtype_of(x) != _dtypes.string:
        raise op_error(TypeError, f"{fname}: `{name}` must be a string tensor, got "
                                  f"{dtype_of(x).name}")
    return x


# -- regex and text ops ------------------------------------------------------------
# csrc/ops/regex.c (the RE2-syntax engine), regex_full_match.c, regex_replace.c,
# string_case.c, string_strip.c, string_length.c, substr.c, string_join.c,
# reduce_join.c, as_string.c; string ==/!= is string_equal.c (conveyor._math).

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
                 string=pattern + "\0" + rewrite, ints=[1 if replace_global else 0],
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
                 ints=[0, _encoding(encoding, "lower")])


def upper(input, encoding="", name=None):  # noqa: A002
    """Each string of `input` in upper case (``tf.strings.upper``); see
    :func:`lower` for `encoding`."""
    x = _string_input(input, "upper")
    return apply("StringCase", [x], [(static_shape(x), _dtypes.string)],
                 ints=[1, _encoding(encoding, "upper")])


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
                 ints=[_unit(unit, "length")])


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
    from conveyor._math import _broadcast_shape
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
    return apply("Substr", [x, p, n], [(shape, _dtypes.string)], ints=[_unit(unit, "substr")])


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
                 ints=[1 if keepdims else 0] + flags, string=_separator(separator, "reduce_join"))


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
                 ints=[int(precision), int(bool(scientific)), int(bool(shortest)), int(width),
                       ord(fill) if fill else 0])


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
                 ints=[int(summarize), builtins_len(text.encode("utf-8")) + 1], string=text)
