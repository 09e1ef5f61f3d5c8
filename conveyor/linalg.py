"""``conveyor.linalg`` (``tf.linalg``): ``matmul``, for the small matrices
of input pipelines (see ``conveyor.ops.linalg_ops``)."""
from conveyor.ops.linalg_ops import matmul

__all__ = ["matmul"]
