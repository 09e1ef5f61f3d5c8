"""``conveyor.data.experimental``: the parts of ``tf.data.experimental`` that apply."""
from conveyor import _tracing
from conveyor.data.dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from conveyor.data.options import AutoShardPolicy, OptimizationOptions, ThreadingOptions

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "cardinality",
           "AutoShardPolicy", "OptimizationOptions", "ThreadingOptions", "enable_debug_mode",
           "disable_debug_mode"]


def cardinality(dataset):
    """``dataset.cardinality()``, as the older ``tf.data.experimental.cardinality``."""
    return dataset.cardinality()


def enable_debug_mode():
    """Run map functions as plain Python (``tf.data.experimental.enable_debug_mode``).

    Datasets built afterwards call their map functions per element with NumPy
    arrays, one at a time on the consumer's thread, instead of compiling them:
    breakpoints and ``print`` work inside them, and conveyor ops called there
    compute at once. Outputs (random ops included) are the same as in the
    compiled program. Use it to debug, not to train: it is slow.
    """
    _tracing.set_debug_mode(True)


def disable_debug_mode():
    """Undo :func:`enable_debug_mode` for datasets built afterwards."""
    _tracing.set_debug_mode(False)
