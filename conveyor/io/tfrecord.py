"""TFRecord files: ``TFRecordWriter`` and ``TFRecordOptions``."""
__all__ = []
