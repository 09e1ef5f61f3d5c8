"""``conveyor.data.experimental``: the parts of ``tf.data.experimental`` that apply."""
from conveyor.data.dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from conveyor.data.dataset import CacheWarning
from conveyor.data.options import AutoShardPolicy, OptimizationOptions, ThreadingOptions

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "cardinality",
           "AutoShardPolicy", "OptimizationOptions", "ThreadingOptions", "CacheWarning",
           "cache_progress"]


def cardinality(dataset):
    """``dataset.cardinality()``, as the older ``tf.data.experimental.cardinality``."""
    return dataset.cardinality()


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
