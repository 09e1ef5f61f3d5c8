"""``conveyor.data.experimental``: the parts of ``tf.data.experimental`` that apply."""
from conveyor import _tracing
from conveyor.data.dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from conveyor.data.dataset import CacheWarning
from conveyor.data.options import AutoShardPolicy, OptimizationOptions, ThreadingOptions

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "cardinality",
           "AutoShardPolicy", "OptimizationOptions", "ThreadingOptions", "enable_debug_mode",
           "disable_debug_mode", "CacheWarning", "cache_progress"]


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


def cache_progress(enabled=True):
    """Show a progress bar (tqdm) while ``Dataset.cache`` fills its cache.

    `enabled`: True shows one for every first pass that takes more than a
    second (tqdm must be installed: ``ImportError`` otherwise); False never;
    None (the default) shows them when tqdm is installed and stderr is a
    terminal. Applies to every cache in the process, also those already
    built.
    """
    from conveyor.data import dataset as _dataset
    if enabled and _dataset._tqdm() is None:
        raise ImportError("cache_progress(True) needs tqdm: pip install tqdm")
    _dataset._set_cache_progress(None if enabled is None else bool(enabled))
