"""``conveyor.compat`` (``tf.compat``): ``v1``, TensorFlow 1's spellings of
the input-pipeline API, and ``v2`` (set by conveyor/__init__.py: conveyor
itself, as ``tf.compat.v2`` is TensorFlow 2's API)."""
from conveyor.compat import v1

__all__ = ["v1"]
