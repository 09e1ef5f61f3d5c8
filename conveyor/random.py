"""``conveyor.random``: seeds, with ``tf.random``'s rules.

``set_seed(seed)`` sets the global seed. A random transformation's seeds are
derived as TensorFlow derives them (``get_seed``), so a pipeline seeded the
same way gives the same order as in TensorFlow, run after run:

* global seed and op seed: ``(global % (2**31 - 1), op % (2**31 - 1))``;
* global seed only: the op seed is drawn from a ``random.Random(global)``
  sequence, one per random operation created, in creation order;
* op seed only: ``(87654321, op % (2**31 - 1))``;
* neither: unseeded (a different order every run).
"""
import random as _random

__all__ = ["set_seed", "get_seed"]

_MAXINT32 = 2 ** 31 - 1
_DEFAULT_GRAPH_SEED = 87654321
_global_seed = None
_rng = None


def set_seed(seed):
    """Set the global random seed (``tf.random.set_seed``); None clears it."""
    global _global_seed, _rng
    if seed is None:
        _global_seed, _rng = None, None
        return
    seed = int(seed)
    _global_seed, _rng = seed, _random.Random(seed)


def get_seed(op_seed):
    """The (seed, seed2) pair a random operation uses, as ``tf.compat.v1.get_seed``."""
    if _global_seed is not None:
        if op_seed is None:
            op_seed = _rng.randint(0, _MAXINT32)
        seeds = (_global_seed % _MAXINT32, int(op_seed) % _MAXINT32)
    elif op_seed is not None:
        seeds = (_DEFAULT_GRAPH_SEED, int(op_seed) % _MAXINT32)
    else:
        seeds = (None, None)
    if seeds == (0, 0):
        return 0, _MAXINT32
    return seeds
