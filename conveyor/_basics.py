"""The small tensor utilities tf.data code reaches for: ``tf.function`` and
``tf.autograph.experimental.do_not_convert`` (decorators), ``identity``,
``convert_to_tensor``, ``is_tensor``, ``size``, ``rank`` and ``print``.

``tf.function`` passes the function through: a map function is traced by
the map itself (conveyor/framework/tracing.py), with or without the decorator, and
called eagerly elsewhere; ``input_signature`` and the compile flags are
accepted. The others work eagerly and inside traced map functions.
"""
import sys
import types

import numpy as np

from conveyor import dtypes as _dtypes
from conveyor.framework.convert import to_array
from conveyor.framework.eager import EagerTensor, as_eager
from conveyor.framework.tracing import Tensor, _PlainPython, convert, current_trace, static_shape

__all__ = ["function", "autograph", "identity", "convert_to_tensor", "is_tensor", "size", "rank",
           "print_"]


def function(func=None, input_signature=None, autograph=True, jit_compile=None,
             reduce_retracing=False, experimental_implements=None,
             experimental_autograph_options=None, experimental_attributes=None,
             experimental_relax_shapes=None, experimental_compile=None,
             experimental_follow_type_hints=None):
    """``@tf.function``: returns `func` itself (a map traces it natively on its
    own; called directly it runs eagerly). Usable with or without arguments."""
    if func is None:
        return lambda f: function(f, input_signature, autograph, jit_compile, reduce_retracing)
    if not callable(func):
        raise TypeError(f"tf.function: {func!r} is not callable")
    return func


class _Experimental:
    @staticmethod
    def do_not_convert(func=None):
        """Decorator: `func` unchanged (conveyor does not rewrite Python)."""
        if func is None:
            return lambda f: f
        return func


autograph = types.SimpleNamespace(experimental=_Experimental())


def identity(input, name=None):  # noqa: A002 - TensorFlow's argument name
    """`input` as a tensor (``tf.identity``)."""
    x = convert(input, name="input")
    if isinstance(x, Tensor):  # a node of its own, as TensorFlow's Identity
        from conveyor._reduce import ensure_shape
        return ensure_shape(x, static_shape(x))
    return as_eager(np.asarray(x))


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    """`value` as a tensor of `dtype` (``tf.convert_to_tensor``): a symbolic
    Tensor inside a traced function, an ``EagerTensor`` otherwise.
    `dtype_hint` is used when `value` (a Python number or list) fits it."""
    if isinstance(value, Tensor):
        if dtype is not None and _dtypes.as_dtype(dtype) != value.dtype:
            raise TypeError(f"Tensor conversion requested dtype {_dtypes.as_dtype(dtype).name} "
                            f"for Tensor with dtype {value.dtype.name}: {value!r}")
        return value
    if dtype is None and dtype_hint is not None and isinstance(value, (int, float, list, tuple)):
        try:
            arr = to_array(value, dtype_hint)
            if np.array_equal(arr, np.asarray(value)):
                dtype = dtype_hint
        except (TypeError, ValueError, OverflowError):
            pass
    if current_trace() is not None:  # a constant of the traced program
        from conveyor.ops.math_ops import constant
        return constant(value, dtype=dtype)
    arr = to_array(value, dtype)
    if dtype is not None and isinstance(value, np.ndarray) and value.dtype != arr.dtype \
            and _dtypes.as_dtype(value.dtype) != _dtypes.as_dtype(dtype):
        raise TypeError(f"Tensor conversion requested dtype {_dtypes.as_dtype(dtype).name} for "
                        f"array with dtype {_dtypes.as_dtype(value.dtype).name}")
    return as_eager(arr)


def is_tensor(x):
    """True for conveyor's tensors: traced ``Tensor``s and ``EagerTensor``s
    (an eager op's scalar string result is plain ``bytes``: False)."""
    return isinstance(x, (Tensor, EagerTensor))


def size(input, out_type=None, name=None):  # noqa: A002
    """The number of elements (``tf.size``; int32 unless `out_type`)."""
    out_type = _dtypes.int32 if out_type is None else _dtypes.as_dtype(out_type)
    x = convert(input, name="input")
    s = static_shape(x)
    if s is not None and None not in s:
        return _constant(int(np.prod(s, dtype=np.int64)), out_type)
    from conveyor.ops.math_ops import cast, shape
    from conveyor._reduce import reduce_prod
    return cast(reduce_prod(shape(x, out_type=_dtypes.int64)), out_type)


def rank(input, name=None):  # noqa: A002
    """The number of dimensions, an int32 scalar (``tf.rank``)."""
    x = convert(input, name="input")
    s = static_shape(x)
    if s is None:
        from conveyor.ops.math_ops import shape
        return size(shape(x))
    return _constant(len(s), _dtypes.int32)


def _constant(value, dtype):
    from conveyor.ops.math_ops import constant
    return constant(value, dtype=dtype)


def print_(*inputs, output_stream=None, summarize=3, sep=" ", end="\n", name=None):
    """``tf.print``: prints its inputs. Inside a traced map function it makes
    the function run in Python per element (a print is a side effect per
    element), as ``tf.print`` runs at every call of a graph."""
    if any(isinstance(v, Tensor) for v in inputs) or current_trace() is not None:
        raise _PlainPython("it calls tf.print")
    if output_stream is None or output_stream in ("stderr", "sys.stderr"):
        output_stream = sys.stderr
    elif output_stream in ("stdout", "sys.stdout"):
        output_stream = sys.stdout
    text = sep.join(_format(v, summarize) for v in inputs)
    print(text, end=end, file=output_stream)


def _format(value, summarize):
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    arr = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
    if arr.dtype.kind in "SO":
        decode = np.vectorize(
            lambda b: b.decode("utf-8", "replace") if isinstance(b, bytes) else b, otypes=[object])
        arr = decode(arr) if arr.size else arr.astype(object)
        if arr.ndim == 0:
            return str(arr[()])
    with np.printoptions(threshold=summarize * 2 if summarize > 0 else sys.maxsize,
                         edgeitems=max(summarize, 1)):
        return str(arr)
