"""``conveyor.random``: seeds, with ``tf.random``'s rules.

``set_seed(seed)`` sets the global seed (kept in ``conveyor.framework.random_seed``, which
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

from conveyor.framework.random_seed import get_seed, set_seed
from conveyor.ops.random_ops import (categorical, gamma, normal, shuffle, truncated_normal,
                                     uniform)
from conveyor.ops.stateless_random_ops import (fold_in, split, stateless_normal, stateless_split,
                                               stateless_categorical, stateless_truncated_normal,
                                               stateless_uniform)

__all__ = ["set_seed", "get_seed", "uniform", "normal", "truncated_normal", "categorical", "gamma",
           "shuffle", "stateless_truncated_normal", "stateless_categorical", "stateless_uniform",
           "stateless_normal", "split", "fold_in", "experimental"]


# tf.random.experimental: the stateless seed split and fold-in.
experimental = _types.SimpleNamespace(stateless_split=stateless_split,
                                      stateless_fold_in=fold_in)
