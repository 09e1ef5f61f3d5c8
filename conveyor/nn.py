"""``conveyor.nn``: the ``tf.nn`` functions input pipelines call (see
``conveyor.ops.nn_ops``)."""
from conveyor.ops.nn_ops import (l2_normalize, log_softmax, relu, relu6, sigmoid,  # noqa: F401
                                 softmax, tanh, top_k)

__all__ = ["relu", "relu6", "sigmoid", "tanh", "softmax", "log_softmax", "l2_normalize", "top_k"]
