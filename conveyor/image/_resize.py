"""tf.image.resize and friends (TF2 half-pixel semantics)."""
__all__ = []
