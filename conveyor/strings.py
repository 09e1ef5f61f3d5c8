"""String ops (``tf.strings``): each works on NumPy arrays and Python
values eagerly, and on traced tensors inside ``Dataset.map`` (recorded into
the native program, run without the GIL). Values, dtypes, shapes and errors
follow TensorFlow's.
"""
import functools

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
def _check_regex(op, text):
    """Compile once now (an invalid pattern is an error when the pipeline is
    built, as TensorFlow's static regex ops fail when created): None or the
    error message."""
    try:
        _engine.run_op(op, [np.array([], dtype=object)], (1,), (), text, None, 1,
                       (0, 0, 0, 0, 0, 0))
    except _errors.InvalidArgumentError as e:
        return str(e)
    return None


def _compiled(op, text):
    message = _check_regex(op, text)
    if message is not None:
        raise op_error(_errors.InvalidArgumentError, message)


def regex_full_match(input, pattern, name=None):  # noqa: A002 - TensorFlow's argument name
    """Whether each string of `input` matches `pattern` as a whole, as a bool
    tensor of the same shape (``tf.strings.regex_full_match``).

    `pattern` uses RE2's syntax (TensorFlow's engine) and is compiled once,
    when the map function is traced; an invalid pattern raises
    InvalidArgumentError. Matching takes time linear in the string's length.
    """
    x = _string_input(input, "regex_full_match")
    pattern = _static_text(pattern, "regex_full_match", "pattern", [x])
    _compiled("RegexFullMatch", pattern)
    return apply("RegexFullMatch", [x], [(static_shape(x), _dtypes.bool)], string=pattern)


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """Each string of `input` with the matches of `pattern` replaced by
    `rewrite` (``tf.strings.regex_replace``): all of them, or the first with
    ``replace_global=False``. In `rewrite`, ``\\0`` is the whole match,
    ``\\1`` to ``\\9`` the pattern's groups and ``\\\\`` a backslash.
    """
    x = _string_input(input, "regex_replace")
    pattern = _static_text(pattern, "regex_replace", "pattern", [x])
    rewrite = _static_text(rewrite, "regex_replace", "rewrite", [x])
    _compiled("RegexFullMatch", pattern)
    text = pattern + "\0" + rewrite
    _compiled("RegexReplace", text)
    return apply("RegexReplace", [x], [(static_shape(x), _dtypes.string)], string=text,
                 ints=[1 if replace_global else 0])


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
