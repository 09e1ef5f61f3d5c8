"""``conveyor.lookup``: the ``tf.lookup`` tables an input pipeline uses."""
from conveyor.ops.lookup_ops import KeyValueTensorInitializer, StaticHashTable

__all__ = ["KeyValueTensorInitializer", "StaticHashTable"]
