"""Command-line tools: ``python -m conveyor.tools.<name>``.

``index``: write TFRecord index sidecars (``<file>.cvindex``), so that
``skip``, ``shard`` and restoring an iterator seek instead of reading.
"""
