"""The ``tf.nn`` functions input pipelines call (activations, softmax,
normalization, top_k), composed from conveyor's elementwise and reduction
ops: eager, and traced natively inside a map."""
import numpy as np

from conveyor.framework.tracing import convert, dtype_of, op_error
from conveyor.ops.math_ops import (_finite_or_zero, exp, l2_normalize, log, maximum, minimum,
                                   reduce_max, reduce_sum, sigmoid, subtract, tanh, truediv)
from conveyor.ops.sort_ops import top_k

__all__ = ["relu", "relu6", "sigmoid", "tanh", "softmax", "log_softmax", "l2_normalize",
           "top_k"]


def _float(x, fname):
    x = convert(x, name="features")
    if not dtype_of(x).is_floating and fname in ("softmax", "log_softmax"):
        raise op_error(TypeError, f"{fname}: Value for attr 'T' of {dtype_of(x).name} is not in "
                                  f"the list of allowed values (floats)")
    return x


def relu(features, name=None):
    """max(features, 0) (``tf.nn.relu``)."""
    x = convert(features, name="features")
    return maximum(x, np.zeros((), dtype_of(x).as_numpy_dtype))


def relu6(features, name=None):
    """min(max(features, 0), 6) (``tf.nn.relu6``)."""
    x = convert(features, name="features")
    npdt = dtype_of(x).as_numpy_dtype
    return minimum(maximum(x, np.zeros((), npdt)), np.asarray(6, npdt))


def _shifted(logits, axis):
    """logits minus their (finite) maximum along `axis`, as TensorFlow's kernel."""
    return subtract(logits, _finite_or_zero(reduce_max(logits, axis, keepdims=True)))


def softmax(logits, axis=None, name=None):
    """exp(logits) / sum(exp(logits)) along `axis` (the last by default;
    ``tf.nn.softmax``), computed from logits minus their maximum."""
    x = _float(logits, "softmax")
    e = exp(_shifted(x, -1 if axis is None else axis))
    return truediv(e, reduce_sum(e, -1 if axis is None else axis, keepdims=True))


def log_softmax(logits, axis=None, name=None):
    """logits - log(sum(exp(logits))) along `axis` (``tf.nn.log_softmax``)."""
    x = _float(logits, "log_softmax")
    shifted = _shifted(x, -1 if axis is None else axis)
    return subtract(shifted, log(reduce_sum(exp(shifted), -1 if axis is None else axis,
                                            keepdims=True)))
