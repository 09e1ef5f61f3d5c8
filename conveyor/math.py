"""``conveyor.math``: the elementwise ops of ``tf.math`` an input pipeline uses.

They run eagerly on NumPy arrays and are compiled into native programs inside
``Dataset.map``; see ``conveyor.ops.math_ops`` for the dtype rules (TensorFlow's).
"""
from conveyor.ops.math_ops import (abs, add, ceil, divide, equal, exp, floor, floordiv,  # noqa: F401,A004
                                   floormod, greater, greater_equal, less, less_equal, log, logical_and,
                                   logical_not, logical_or, logical_xor, maximum, minimum, multiply,
                                   negative, not_equal, pow, round, sqrt, square, subtract, truediv)
from conveyor._reduce import (argmax, argmin, reduce_all, reduce_any, reduce_max,  # noqa: F401
                              reduce_mean, reduce_min, reduce_prod, reduce_sum)
from conveyor.ops.array_ops import cumsum  # noqa: F401

mod = floormod

__all__ = ["abs", "add", "ceil", "divide", "equal", "exp", "floor", "floordiv", "floormod", "mod",
           "greater", "greater_equal", "less", "less_equal", "log", "logical_and", "logical_not",
           "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative",
           "not_equal", "pow", "round", "sqrt", "square", "subtract", "truediv",
           "argmax", "argmin", "reduce_all", "reduce_any", "reduce_max", "reduce_mean",
           "reduce_min", "reduce_prod", "reduce_sum", "cumsum"]
