"""``conveyor.random``: seeds, with ``tf.random``'s rules.

``set_seed(seed)`` sets the global seed (kept in ``conveyor._seed``, which
derives every random operation's seeds). A random transformation's seeds are
derived as TensorFlow derives them (``get_seed``), so a pipeline seeded the
same way gives the same order as in TensorFlow, run after run:

* global seed and op seed: ``(global % (2**31 - 1), op % (2**31 - 1))``;
* global seed only: the op seed is drawn from a ``random.Random(global)``
  sequence, one per random operation created, in creation order;
* op seed only: ``(87654321, op % (2**31 - 1))``;
* neither: unseeded (a different order every run).
"""
import types as _types

import numpy as np

from conveyor import dtypes as _dtypes
from conveyor._seed import get_seed, set_seed
from conveyor._stateless import (fold_in, split, stateless_normal, stateless_split,
                                 stateless_uniform)
from conveyor._tracing import apply, op_error

__all__ = ["set_seed", "get_seed", "uniform", "stateless_uniform", "stateless_normal", "split", "fold_in", "experimental"]


def uniform(shape, minval=0, maxval=None, dtype=None, seed=None, name=None):
    """Uniform random values in [minval, maxval) (``tf.random.uniform``).

    Inside a map function each element gets its own values, drawn from a
    stream keyed by the seed and the element's position, so the result does
    not depend on thread count or scheduling (unlike TensorFlow's stateful
    op). Integer dtypes (int32, int64) need `maxval`.
    """
    dtype = _dtypes.float32 if dtype is None else _dtypes.as_dtype(dtype)
    dims = [int(d) for d in np.asarray(shape, dtype=np.int64).reshape(-1)]
    if any(d < 0 for d in dims) or len(dims) > 16:
        raise op_error(ValueError, f"uniform: invalid shape {dims}")
    if dtype in (_dtypes.int32, _dtypes.int64):
        if maxval is None:
            raise op_error(ValueError, "Must specify maxval for integer dtype " + dtype.name)
        bounds = {"int_minval": int(minval), "int_maxval": int(maxval), "minval": 0.0,
                  "maxval": 0.0}
        if int(minval) >= int(maxval):
            raise op_error(ValueError, f"Need minval < maxval: {minval} >= {maxval}")
    elif dtype in (_dtypes.float32, _dtypes.float64):
        bounds = {"int_minval": 0, "int_maxval": 0, "minval": float(minval),
                  "maxval": 1.0 if maxval is None else float(maxval)}
    else:
        raise op_error(TypeError, f"uniform: unsupported dtype {dtype.name}")
    attrs = {"dtype": dtype._code, **bounds, "rank": len(dims), "shape": dims}
    return apply("RandomUniform", [], [(tuple(dims), dtype)], attrs=attrs,
                 random=True, op_seed=seed)

# tf.random.experimental: the stateless seed split and fold-in.
experimental = _types.SimpleNamespace(stateless_split=stateless_split,
                                      stateless_fold_in=fold_in)
