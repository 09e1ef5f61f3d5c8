"""``conveyor.lookup``: the ``tf.lookup`` tables an input pipeline uses."""
from conveyor.ops.lookup_ops import (KeyValueTensorInitializer, StaticHashTable,
                                     StaticVocabularyTable, TextFileIndex, TextFileInitializer)

__all__ = ["KeyValueTensorInitializer", "StaticHashTable", "StaticVocabularyTable",
           "TextFileIndex", "TextFileInitializer"]
