"""``conveyor.data.experimental``: the parts of ``tf.data.experimental`` that apply."""
from conveyor.data.dataset import AUTOTUNE, INFINITE_CARDINALITY, SHARD_HINT, UNKNOWN_CARDINALITY
from conveyor.data.options import AutoShardPolicy, OptimizationOptions, ThreadingOptions

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "cardinality",
           "AutoShardPolicy", "OptimizationOptions", "ThreadingOptions", "SHARD_HINT"]


def cardinality(dataset):
    """``dataset.cardinality()``, as the older ``tf.data.experimental.cardinality``."""
    return dataset.cardinality()
