"""``conveyor.keras`` (``tf.keras`` under ``import conveyor as tf``): only
Keras' input-pipeline utilities, each returning a conveyor dataset."""
from conveyor.keras import preprocessing, utils

__all__ = ["utils", "preprocessing"]
