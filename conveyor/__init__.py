"""conveyor: tf.data without TensorFlow.

``import conveyor as tf`` runs tf.data input code built from the supported
operations unchanged: ``tf.data.Dataset``, ``tf.data.AUTOTUNE``, the dtype
names (``tf.int64``, ``tf.float32``, ``tf.string``, ...), ``tf.TensorSpec``
and ``tf.errors``. Pipelines run in a C engine on worker threads and yield
NumPy arrays.
"""
import atexit as _atexit
import sys as _sys

from conveyor import _engine
from conveyor import dtypes as _dtypes_module
from conveyor import errors
from conveyor import nest
from conveyor import random
from conveyor.dtypes import (DType, as_dtype, bfloat16, bool, double, float16, float32, float64, half,
                             int8, int16, int32, int64, string, uint8, uint16, uint32, uint64)
from conveyor.tensor_spec import TensorShape, TensorSpec
from conveyor import data
from conveyor import device
from conveyor.device import DeviceArray
from conveyor import io
from conveyor import audio
from conveyor import image
from conveyor import math
from conveyor import strings
from conveyor import train
from conveyor import sparse
from conveyor import ragged
from conveyor.ragged import RaggedTensor, RaggedTensorSpec
from conveyor.ops.math_ops import (abs, add, argmax, argmin, cast, clip_by_value,  # noqa: A004
                                   cumsum, divide, equal, exp, floor, greater, greater_equal, less,
                                   less_equal, logical_and, logical_not, logical_or, maximum,
                                   minimum, multiply, negative, not_equal, pow, range, reduce_all,
                                   reduce_any, reduce_max, reduce_mean, reduce_min, reduce_prod,
                                   reduce_sum, round, sqrt, square, subtract, truediv)
from conveyor.ops.math_ops import (acos, asin, atan, atan2, cos, cosh, reduce_logsumexp,  # noqa: A004
                                   sigmoid, sign, sin, sinh, tan, tanh, histogram_fixed_width)
from conveyor.ops.array_ops import (boolean_mask, broadcast_to, concat, constant,  # noqa: A004
                                    ensure_shape, expand_dims, fill, gather, identity, one_hot,
                                    ones, ones_like, pad, rank, reshape, reverse, sequence_mask,
                                    shape, size, split, squeeze, stack, stop_gradient, tile,
                                    transpose, unstack, where, zeros, zeros_like)
from conveyor.ops.control_flow_ops import cond, group, no_op
from conveyor.ops.array_ops import identity_n
from conveyor.ops.functional_ops import switch_case
from conveyor.ops.logging_ops import get_logger
from conveyor.framework.tensor_conversion import executing_eagerly, get_static_value
from conveyor import config
from conveyor import linalg
from conveyor import bitwise
from conveyor import nn
from conveyor.ops.linalg_ops import linspace, matmul
from conveyor.ops.indexing_ops import (gather_nd, scatter_nd, searchsorted, strided_slice,
                                      tensor_scatter_nd_add, tensor_scatter_nd_max,
                                      tensor_scatter_nd_min, tensor_scatter_nd_sub,
                                      tensor_scatter_nd_update, unique)
from conveyor.ops.sort_ops import argsort, sort
from conveyor import version
from conveyor.ops.logging_ops import print_ as print  # noqa: A004 - tf.print
from conveyor import debugging
from conveyor import sharding
from conveyor.framework.tracing import Tensor, numpy_function, py_function
from conveyor.framework.eager import EagerTensor
from conveyor.framework.variables import Variable
from conveyor.framework.function import autograph, function
from conveyor.framework.tensor_conversion import convert_to_tensor, is_tensor
from conveyor.ops.manip_ops import meshgrid, repeat, roll, slice  # noqa: A004
from conveyor.ops.functional_ops import Assert, case, control_dependencies, map_fn, name_scope
from conveyor.sparse import SparseTensor
from conveyor.ops.tensor_array_ops import TensorArray
from conveyor import lookup
from conveyor import keras
from conveyor import compat

newaxis = None  # tf.newaxis: x[:, tf.newaxis]

__version__ = "0.1.0"

__all__ = ["data", "audio", "keras", "compat", "lookup", "slice", "roll", "repeat", "meshgrid",
           "Assert", "case", "control_dependencies", "map_fn", "name_scope", "SparseTensor", "TensorArray",
           "newaxis", "device", "sharding", "sparse", "ragged", "RaggedTensor", "RaggedTensorSpec", "DeviceArray", "io", "image", "math", "strings", "train", "cast", "reshape", "one_hot", "shape", "expand_dims", "concat", "stack",
           "clip_by_value", "constant", "fill", "zeros", "ones", "zeros_like", "ones_like", "abs", "add", "divide", "equal", "exp", "floor",
           "greater", "greater_equal", "less", "less_equal", "logical_and", "logical_not",
           "logical_or", "maximum", "minimum", "multiply", "negative", "not_equal", "pow",
           "round", "sqrt", "square", "subtract", "truediv", "Tensor", "EagerTensor", "Variable", "function", "autograph", "convert_to_tensor", "identity", "is_tensor", "rank", "size", "print", "numpy_function", "py_function", "errors", "nest", "random", "DType", "as_dtype", "TensorSpec", "TensorShape",
           "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "half", "float32", "float64", "double", "string", "bfloat16",
           "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_any",
           "reduce_all", "argmax", "argmin", "range", "squeeze", "unstack", "gather", "where",
           "ensure_shape", "cond", "debugging", "transpose", "tile", "pad", "reverse",
           "broadcast_to", "split", "boolean_mask", "sequence_mask", "stop_gradient", "cumsum",
           "acos", "asin", "atan", "atan2", "cos", "cosh", "reduce_logsumexp", "sigmoid", "sign",
           "sin", "sinh", "tan", "tanh", "config", "version", "executing_eagerly", "no_op",
           "group", "identity_n", "get_static_value", "get_logger", "switch_case",
           "histogram_fixed_width", "linalg", "bitwise", "nn", "linspace", "matmul", "gather_nd",
           "strided_slice", "argsort", "sort", "searchsorted", "scatter_nd",
           "tensor_scatter_nd_update", "tensor_scatter_nd_add", "tensor_scatter_nd_sub",
           "tensor_scatter_nd_max", "tensor_scatter_nd_min", "unique"]

# tf.compat.v2 is TensorFlow 2's API: conveyor itself; tf.compat.v1 has
# TensorFlow 1's spellings, on top of conveyor's top-level names.
compat.v2 = _sys.modules[__name__]
_sys.modules[__name__ + ".compat.v2"] = compat.v2
for _name in __all__:
    if not hasattr(compat.v1, _name):
        setattr(compat.v1, _name, globals()[_name])
for _name in ("io", "strings", "math", "sparse", "ragged", "nest", "errors", "train",
              "TensorSpec", "TensorShape", "DType", "as_dtype"):
    if not hasattr(compat.v1, _name):
        setattr(compat.v1, _name, globals()[_name])
del _name

_engine.set_error_classes(errors._BY_CODE)
if _dtypes_module._ml_dtypes is not None:  # bfloat16 arrays are ml_dtypes' (optional)
    _engine.set_bfloat16_dtype(_dtypes_module._ml_dtypes.bfloat16)
_engine.set_warning_handler(errors._engine_warning)
# Stop every live pipeline before the interpreter finalizes: a worker thread
# that asks for the GIL during finalization would hang.
_atexit.register(_engine.shutdown)
