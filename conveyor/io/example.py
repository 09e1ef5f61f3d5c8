"""tf.train.Example: parsing (``parse_single_example``, ``parse_example``) and building."""
__all__ = []
