"""``conveyor.bitwise``: ``tf.bitwise``'s ops on integer tensors, eagerly and
traced into a map's native program (op Elementwise)."""
from conveyor.ops.math_ops import (bitwise_and, bitwise_or, bitwise_xor, invert,  # noqa: F401
                                   left_shift, right_shift)

__all__ = ["bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift"]
