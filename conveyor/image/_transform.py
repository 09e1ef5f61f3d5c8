"""Crops, flips, padding and dtype conversion of images."""
__all__ = []
