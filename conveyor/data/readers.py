"""Datasets that read files: TFRecordDataset, TextLineDataset, FixedLengthRecordDataset."""
__all__ = []
