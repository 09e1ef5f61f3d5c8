"""``conveyor.data``: the ``tf.data`` namespace."""
from conveyor.data.dataset import (AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY,
                                   Dataset, DatasetSpec)
from conveyor.data.options import (AutoShardPolicy, AutotuneOptions, OptimizationOptions,
                                   Options, ThreadingOptions)
from conveyor.data import experimental
from conveyor.data import save_load  # noqa: F401 - puts save/load on Dataset
from conveyor.data.readers import *  # noqa: F401,F403

__all__ = ["Dataset", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "Options",
           "ThreadingOptions", "AutotuneOptions", "OptimizationOptions", "experimental",
           "DatasetSpec"]
