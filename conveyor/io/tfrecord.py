"""TFRecord files: ``TFRecordWriter`` and ``TFRecordOptions``.

The files written are byte-identical to TensorFlow's ``tf.io.TFRecordWriter``
for the same records, options and ``flush()`` calls (same framing, masked
CRC-32C, and zlib settings: default level, memory level 9, default strategy,
a partial flush on ``flush()``).
"""
import os

from conveyor import _engine

__all__ = ["TFRecordWriter", "TFRecordOptions", "TFRecordCompressionType"]

_CODES = {"": 0, "ZLIB": 1, "GZIP": 2}


class TFRecordCompressionType:
    """The compression of a TFRecord file (``tf.compat.v1.io.TFRecordCompressionType``)."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


class TFRecordOptions:
    """Options for writing TFRecord files, as ``tf.io.TFRecordOptions``.

    ``compression_type`` is ``None``/``""``, ``"ZLIB"`` or ``"GZIP"`` (or a
    ``TFRecordCompressionType`` value). ``compression_level`` (0-9, default
    zlib's default), ``mem_level`` (1-9, default 9) and
    ``compression_strategy`` (default 0) are passed to zlib. The buffer sizes
    and ``flush_mode`` of TensorFlow are accepted and do not change the bytes
    written (only ``flush_mode=None`` / ``Z_NO_FLUSH`` is supported);
    ``window_bits`` must stay at its default.
    """

    compression_type_map = {TFRecordCompressionType.ZLIB: "ZLIB",
                            TFRecordCompressionType.GZIP: "GZIP",
                            TFRecordCompressionType.NONE: ""}

    def __init__(self, compression_type=None, flush_mode=None, input_buffer_size=None,
                 output_buffer_size=None, window_bits=None, compression_level=None,
                 compression_method=None, mem_level=None, compression_strategy=None):
        if isinstance(compression_type, TFRecordOptions):
            compression_type = compression_type.compression_type
        if isinstance(compression_type, int) and not isinstance(compression_type, bool):
            if compression_type not in self.compression_type_map:
                raise ValueError(f"Unsupported compression_type {compression_type!r}.")
            compression_type = self.compression_type_map[compression_type]
        if compression_type is None:
            compression_type = ""
        if not isinstance(compression_type, str) or compression_type not in _CODES:
            raise ValueError(f"Unsupported compression_type {compression_type!r}: use None, '', "
                             "'ZLIB' or 'GZIP'.")
        if flush_mode not in (None, 0):
            raise NotImplementedError("TFRecordOptions: only flush_mode=None (Z_NO_FLUSH) is supported.")
        if window_bits not in (None, 15):
            raise NotImplementedError("TFRecordOptions: only the default window_bits is supported.")
        if compression_method not in (None, 8):
            raise ValueError("TFRecordOptions: compression_method must be Z_DEFLATED (8).")
        self.compression_type = compression_type
        self.flush_mode = flush_mode
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size
        self.window_bits = window_bits
        self.compression_level = compression_level
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy

    @classmethod
    def get_compression_type_string(cls, options):
        """The compression name ("", "ZLIB" or "GZIP") of options, a string or None."""
        if not options:
            return ""
        if isinstance(options, TFRecordOptions):
            return options.compression_type
        return TFRecordOptions(options).compression_type

    def _engine_args(self):
        level = -1 if self.compression_level is None else int(self.compression_level)
        mem_level = 9 if self.mem_level is None else int(self.mem_level)
        strategy = 0 if self.compression_strategy is None else int(self.compression_strategy)
        return _CODES[self.compression_type], level, mem_level, strategy


class TFRecordWriter:
    """Writes records to a TFRecord file, as ``tf.io.TFRecordWriter``.

    ``TFRecordWriter(path, options=None)``: `options` is a compression name
    (``"ZLIB"``, ``"GZIP"``, ``""``/``None``) or a ``TFRecordOptions``. The file
    is created (truncated) at once. ``write(record)`` appends one record
    (``bytes``-like); ``flush()`` pushes buffered bytes to the file;
    ``close()`` finishes it. Use it as a context manager to close on exit.
    The GIL is released while large records are compressed and written.
    """

    def __init__(self, path, options=None):
        if not isinstance(options, TFRecordOptions):
            options = TFRecordOptions(options)
        self._options = options
        self._path = os.fspath(path)
        self._handle = _engine.tfrecord_writer_open(self._path, *options._engine_args())

    def write(self, record):
        """Write one record: a ``bytes``-like value (a ``str`` is UTF-8 encoded)."""
        if isinstance(record, str):
            record = record.encode()
        elif hasattr(record, "numpy") and not isinstance(record, (bytes, bytearray, memoryview)):
            record = record.numpy()
        if not isinstance(record, (bytes, bytearray, memoryview)):
            raise TypeError(f"TFRecordWriter.write() takes bytes, got {type(record).__name__}.")
        _engine.tfrecord_writer_write(self._handle, record)

    def flush(self):
        """Push buffered records to the file (a zlib partial flush when compressing)."""
        _engine.tfrecord_writer_flush(self._handle)

    def close(self):
        """Finish the file. Idempotent; later writes raise ``FailedPreconditionError``."""
        _engine.tfrecord_writer_flush(self._handle, True)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.close()
        return False
