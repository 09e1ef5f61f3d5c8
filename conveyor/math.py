"""``conveyor.math``: the elementwise ops of ``tf.math`` an input pipeline uses.

They run eagerly on NumPy arrays and are compiled into native programs inside
``Dataset.map``; see ``conveyor.ops.math_ops`` for the dtype rules (TensorFlow's).
"""
from conveyor.ops.math_ops import (abs, add, argmax, argmin, ceil, cumsum, divide,  # noqa: F401,A004
                                   equal, exp, floor, floordiv, floormod, greater, greater_equal,
                                   less, less_equal, log, logical_and, logical_not, logical_or,
                                   logical_xor, maximum, minimum, multiply, negative, not_equal,
                                   pow, reduce_all, reduce_any, reduce_max, reduce_mean,
                                   reduce_min, reduce_prod, reduce_sum, round, sqrt, square,
                                   subtract, truediv)
from conveyor.ops.math_ops import (acos, asin, atan, atan2, cos, cosh, count_nonzero,  # noqa: F401
                                   cumprod, divide_no_nan, erf, expm1, is_finite, is_inf, is_nan,
                                   l2_normalize, log1p, reciprocal, reduce_logsumexp, reduce_std,
                                   reduce_variance, rsqrt, sigmoid, sign, sin, sinh, softplus,
                                   squared_difference, tan, tanh)

from conveyor.ops.sort_ops import top_k  # noqa: F401

mod = floormod

__all__ = ["abs", "add", "ceil", "divide", "equal", "exp", "floor", "floordiv", "floormod", "mod",
           "greater", "greater_equal", "less", "less_equal", "log", "logical_and", "logical_not",
           "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative",
           "not_equal", "pow", "round", "sqrt", "square", "subtract", "truediv",
           "argmax", "argmin", "reduce_all", "reduce_any", "reduce_max", "reduce_mean",
           "reduce_min", "reduce_prod", "reduce_sum", "cumsum",
           "acos", "asin", "atan", "atan2", "cos", "cosh", "count_nonzero", "cumprod",
           "divide_no_nan", "erf", "expm1", "is_finite", "is_inf", "is_nan", "l2_normalize",
           "log1p", "reciprocal", "reduce_logsumexp", "reduce_std", "reduce_variance", "rsqrt",
           "sigmoid", "sign", "sin", "sinh", "softplus", "squared_difference", "tan", "tanh",
           "top_k"]
