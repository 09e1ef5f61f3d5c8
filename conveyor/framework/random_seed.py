"""Random seeds, with TensorFlow's rules: the one place conveyor derives them.

``conveyor.random.set_seed`` sets the global seed kept here. Every random
operation asks this module for its seeds: ``Dataset.shuffle``,
``Dataset.random`` and ``sample_from_datasets`` through :func:`get_seed`
(as TensorFlow's ``get_seed``), and the random ops of map functions
(``conveyor.random.uniform``, ``random_crop``...) through
:func:`op_seed_pair` and :func:`map_base_seed` (see ``framework.tracing``).

TensorFlow's rules (``get_seed``):

* global seed and op seed: ``(global % (2**31 - 1), op % (2**31 - 1))``;
* global seed only: the op seed is drawn from a ``random.Random(global)``
  sequence, one per random operation created, in creation order;
* op seed only: ``(87654321, op % (2**31 - 1))``;
* neither: unseeded (a different order every run).
"""
import os
import random as _random

__all__ = ["set_seed", "get_seed", "global_seed", "op_seed_pair", "map_base_seed", "get_state",
           "set_state"]

_MAXINT32 = 2 ** 31 - 1
_DEFAULT_GRAPH_SEED = 87654321
_global_seed = None
_rng = None  # draws the op seeds of operations created without one


def set_seed(seed):
    """Set the global random seed (``tf.random.set_seed``); None clears it."""
    global _global_seed, _rng
    if seed is None:
        _global_seed, _rng = None, None
        return
    seed = int(seed)
    _global_seed, _rng = seed, _random.Random(seed)


def get_state():
    """The global seed and how far its op-seed sequence has been drawn: what
    :func:`set_state` puts back (the pipeline doctor builds a pipeline several
    times as if each were a fresh run, then leaves the state as it found it)."""
    return _global_seed, None if _rng is None else _rng.getstate()


def set_state(state):
    """Restore a state from :func:`get_state`."""
    global _global_seed, _rng
    _global_seed, rng_state = state
    _rng = None
    if rng_state is not None:
        _rng = _random.Random()
        _rng.setstate(rng_state)


def global_seed():
    """The global seed, or None."""
    return _global_seed


def op_seed_pair(op_seed):
    """The seed pair of an operation given its own `op_seed` (not None):
    (global seed or TensorFlow's default graph seed, op seed), each reduced
    modulo 2**31 - 1. Draws nothing."""
    graph_seed = _DEFAULT_GRAPH_SEED if _global_seed is None else _global_seed
    return graph_seed % _MAXINT32, int(op_seed) % _MAXINT32


def get_seed(op_seed):
    """The (seed, seed2) pair a random operation uses, as ``tf.compat.v1.get_seed``."""
    if _global_seed is not None:
        if op_seed is None:
            op_seed = _rng.randint(0, _MAXINT32)
        seeds = op_seed_pair(op_seed)
    elif op_seed is not None:
        seeds = op_seed_pair(op_seed)
    else:
        seeds = (None, None)
    if seeds == (0, 0):
        return 0, _MAXINT32
    return seeds


def map_base_seed():
    """The random base seed of one map function (for its random ops without
    a seed of their own): from the global seed when set (so runs repeat),
    otherwise fresh."""
    if _global_seed is not None:
        return (_global_seed % _MAXINT32, 0)
    r = int.from_bytes(os.urandom(8), "little")
    return (r & _MAXINT32, (r >> 32) & _MAXINT32)
