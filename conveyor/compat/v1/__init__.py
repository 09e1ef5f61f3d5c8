"""``conveyor.compat.v1`` (``tf.compat.v1``; ``import conveyor.compat.v1 as
tf``): TensorFlow 1's spellings of the input-pipeline API, session-free.

The TensorFlow 2 names of conveyor's top level are copied in by
conveyor/__init__.py (it cannot be imported from here without an import
circle); the ones defined here are TensorFlow 1's: ``read_file``,
``to_float`` ..., ``random_uniform``, ``random_normal``,
``set_random_seed``, the parsing functions and features, ``py_func``, and
the modules ``image`` (legacy resize), ``data`` (one-shot and
initializable iterators), ``logging`` and ``gfile``."""
from conveyor import dtypes as _dtypes
from conveyor.compat.v1 import data, gfile, image, logging
from conveyor.framework.random_seed import set_seed as set_random_seed
from conveyor.framework.tracing import numpy_function as py_func
from conveyor.io.csv_ops import decode_csv
from conveyor.io.example import (FixedLenFeature, FixedLenSequenceFeature, VarLenFeature,
                                 parse_example, parse_single_example)
from conveyor.io.sequence_example import parse_sequence_example, parse_single_sequence_example
from conveyor.io.image_ops import decode_raw as _decode_raw
from conveyor.io.image_ops import read_file
from conveyor.ops.math_ops import cast as _cast
from conveyor.ops.random_ops import uniform as _uniform
from conveyor.ops.stateless_random_ops import stateless_normal as _stateless_normal

__all__ = ["data", "gfile", "image", "logging", "set_random_seed", "py_func", "decode_csv",
           "FixedLenFeature", "FixedLenSequenceFeature", "VarLenFeature", "parse_example",
           "parse_single_example", "parse_sequence_example", "parse_single_sequence_example",
           "read_file", "to_float", "to_double", "to_int32",
           "to_int64", "to_bfloat16", "random_uniform", "random_normal", "decode_raw"]


def decode_raw(input_bytes=None, out_type=None, little_endian=True, name=None, bytes=None):  # noqa: A002
    """``tf.compat.v1.decode_raw``: ``tf.io.decode_raw``, with TensorFlow 1's
    `bytes` as another name for `input_bytes` (give one of them)."""
    if (input_bytes is None) == (bytes is None):
        raise ValueError("decode_raw: give exactly one of `input_bytes` and `bytes`")
    return _decode_raw(input_bytes if bytes is None else bytes, out_type,
                       little_endian=little_endian)


def to_float(x, name="ToFloat"):
    """``tf.compat.v1.to_float``: ``cast(x, float32)``."""
    return _cast(x, _dtypes.float32)


def to_double(x, name="ToDouble"):
    return _cast(x, _dtypes.float64)


def to_int32(x, name="ToInt32"):
    return _cast(x, _dtypes.int32)


def to_int64(x, name="ToInt64"):
    return _cast(x, _dtypes.int64)


def to_bfloat16(x, name="ToBFloat16"):
    if not hasattr(_dtypes, "bfloat16"):
        raise NotImplementedError("conveyor has no bfloat16 (install ml_dtypes)")
    return _cast(x, _dtypes.bfloat16)


def random_uniform(shape, minval=0, maxval=None, dtype=_dtypes.float32, seed=None, name=None):
    """``tf.compat.v1.random_uniform`` (``tf.random.uniform``)."""
    return _uniform(shape, minval=minval, maxval=maxval, dtype=dtype, seed=seed)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    """``tf.compat.v1.random_normal`` (``tf.random.normal``): a fresh draw
    per call (per element inside a map), keyed by `seed` as ``random_uniform``
    is; `mean` and `stddev` are Python numbers. The values are not
    TensorFlow's (no stateful random op's are)."""
    key = _uniform([2], 0, 2 ** 31 - 1, dtype=_dtypes.int64, seed=seed)
    return _stateless_normal(shape, key, mean=mean, stddev=stddev, dtype=dtype)
