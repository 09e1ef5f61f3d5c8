"""Datasets that read files: TFRecordDataset, TextLineDataset, FixedLengthRecordDataset.

Each reads its files one after the other in the C engine (no GIL), and
yields one scalar ``tf.string`` element (``bytes``) per record. With
``num_parallel_reads`` the files are read as tf.data does it: an
``interleave`` over the filenames, one record per file in turn.

Errors follow tf.data: a damaged record raises ``DataLossError``
("corrupted record at <offset>", plus the file and the record index) at its
position, and iteration goes on with the *next* file, so ``ignore_errors()``
skips the rest of a corrupt file. A missing file raises ``NotFoundError`` (a
``FileNotFoundError``) naming it.

A file that ends inside a record (a *torn tail*: a writer that died
mid-write, a copy cut short, a GZIP/ZLIB stream that stops before its end)
follows conveyor's own rule, ``on_truncation``: every whole record before the
tear is read, then ``"warn"`` (the default) issues a
``conveyor.errors.DataLossWarning`` naming the file and the byte offset where
the torn record starts and goes on with the next file; ``"error"`` raises
``DataLossError`` ("truncated record at <offset>") there instead;
``"ignore"`` ends the file quietly. TensorFlow ends quietly at a cut inside a
TFRecord header, raises ``DataLossError`` at a cut inside its data, and
refuses an uncompressed fixed-length file whose size is not a whole number of
records (``InvalidArgumentError``, none of its records).

Records carry their provenance: an error inside a traced ``map`` function
that works on a record's bytes names the file and the record index.
"""
import os

import numpy as np

from conveyor import _engine
from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor.data.dataset import AUTOTUNE, Dataset
from conveyor.tensor_spec import TensorSpec

__all__ = ["TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset"]

_COMPRESSION = {None: 0, "": 0, "ZLIB": 1, "GZIP": 2}
_DEFAULT_BUFFER = 256 * 1024
_STRING_SCALAR = TensorSpec([], _dtypes.string)
_TRUNCATION = {"warn": 0, "error": 1, "ignore": 2}  # io/record_reader.h: CvTruncation


def _truncation_code(on_truncation):
    try:
        return _TRUNCATION[on_truncation]
    except (KeyError, TypeError):
        raise ValueError(f"`on_truncation` must be 'warn', 'error' or 'ignore', got "
                         f"{on_truncation!r}.") from None


def _compression_code(compression_type):
    if isinstance(compression_type, bytes):
        compression_type = compression_type.decode()
    if compression_type is not None and not isinstance(compression_type, str):
        raise TypeError(f"`compression_type` must be None or a string, got {compression_type!r}.")
    try:
        return _COMPRESSION[compression_type]
    except KeyError:
        raise _errors.InvalidArgumentError(
            f"Unsupported compression_type {compression_type!r}: use None, '' (no compression), "
            "'ZLIB' or 'GZIP' (names are case-sensitive, as in TensorFlow).") from None


def _byte_count(value, what, default, minimum=0):
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"`{what}` must be an int, got {value!r} ({type(value).__name__}).")
    value = int(value)
    if value < minimum:
        raise _errors.InvalidArgumentError(f"`{what}` must be >= {minimum}, got {value}.")
    return value


def _filename_of(x):
    if isinstance(x, os.PathLike):
        x = os.fspath(x)
    if isinstance(x, (str, bytes, np.str_, np.bytes_)):
        return x
    kind = "tf.int32" if isinstance(x, (int, np.integer)) and not isinstance(x, bool) else (
        "tf.float32" if isinstance(x, (float, np.floating)) else type(x).__name__)
    raise TypeError(f"The `filenames` argument must contain `tf.string` elements. Got `{kind}` "
                    "elements.")


def _filenames_dataset(filenames):
    """`filenames` (a str, path, list, array or Dataset of scalar strings) -> Dataset of scalar strings."""
    if isinstance(filenames, Dataset):
        spec = filenames.element_spec
        if not isinstance(spec, TensorSpec) or spec.dtype != _dtypes.string:
            got = spec.dtype.name if isinstance(spec, TensorSpec) else repr(spec)
            raise TypeError("The `filenames` argument must contain `tf.string` elements. Got a "
                            f"dataset of `tf.{got}` elements.")
        if spec.shape.rank != 0:
            raise TypeError("The `filenames` argument must contain `tf.string` elements of shape [] "
                            f"(i.e. scalars). Got a dataset of element shape {spec.shape!r}.")
        return filenames
    if isinstance(filenames, np.ndarray):
        if filenames.dtype.kind not in "SUO":
            raise TypeError("The `filenames` argument must contain `tf.string` elements. Got "
                            f"`tf.{_dtypes.as_dtype(filenames.dtype).name}` elements.")
        if filenames.ndim > 1:
            raise _errors.InvalidArgumentError(
                f"`filenames` must be a scalar or a vector, got shape {filenames.shape}.")
        filenames = filenames.reshape(-1).tolist()
    elif isinstance(filenames, (list, tuple)):
        filenames = list(filenames)
    else:
        filenames = [filenames]
    names = [_filename_of(x) for x in filenames]
    names = [n.encode() if isinstance(n, str) else bytes(n) for n in names]
    return Dataset.from_tensor_slices(np.array(names, dtype=object))


class _ReaderDataset(Dataset):
    """One engine reader kernel over a dataset of filenames (files in order)."""

    def __init__(self, filenames, kernel, args):
        super().__init__([filenames])
        # _engine.<kernel>(files, **args); both are part of the pipeline's
        # fingerprint (exact resume), so a state saved with other reader
        # arguments is refused.
        self._kernel = kernel
        self._args = dict(args)  # the kernel's keywords

    def _build(self, ctx, engine_inputs):
        return getattr(_engine, self._kernel)(engine_inputs[0], **self._args)

    def _derive_spec(self):
        return _STRING_SCALAR


class _FileDataset(Dataset):
    """The public reader classes: the files in order (num_parallel_reads=None), or an
    interleave over the files as tf.data builds it."""

    def __init__(self, filenames, num_parallel_reads, kernel, args):
        filenames = _filenames_dataset(filenames)
        if num_parallel_reads is None:
            impl = _ReaderDataset(filenames, kernel, args)
        else:
            n = num_parallel_reads
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
                raise TypeError(f"`num_parallel_reads` must be an int or AUTOTUNE, got {n!r}.")
            n = int(n)
            if n != AUTOTUNE and n <= 0:
                raise _errors.InvalidArgumentError(
                    f"`num_parallel_reads` must be positive or AUTOTUNE (-1), got {n}.")

            def read_one_file(filename):
                return _ReaderDataset(Dataset.from_tensors(np.array(filename, dtype=object)),
                                      kernel, args)

            if n == AUTOTUNE:
                # tf.data: interleave(num_parallel_calls=AUTOTUNE); the cycle length
                # follows the CPU count, so the order is machine-dependent.
                impl = filenames.interleave(read_one_file, num_parallel_calls=AUTOTUNE)
            else:
                # tf.data: the legacy parallel interleave with sloppy=False: one record
                # of each of `n` files in turn, in a deterministic order.
                impl = filenames.interleave(read_one_file, cycle_length=n, block_length=1,
                                            num_parallel_calls=n, deterministic=True)
        super().__init__([impl])

    def _build(self, ctx, engine_inputs):
        return engine_inputs[0]

    def _derive_spec(self):
        return _STRING_SCALAR


class TFRecordDataset(_FileDataset):
    """A ``Dataset`` of the records of one or more TFRecord files.

    Args:
      filenames: a path (``str``, ``bytes`` or path-like), a list of them, a
        string array of rank <= 1, or a ``Dataset`` of scalar strings.
      compression_type: ``None`` or ``""`` (no compression), ``"ZLIB"`` or
        ``"GZIP"``. Compression is never guessed from the file.
      buffer_size: bytes per read (default 256 KiB); 0 behaves like the default.
      num_parallel_reads: ``None`` reads the files one after the other; an int
        ``N`` reads ``N`` files at a time, one record of each in turn
        (deterministic); ``AUTOTUNE`` lets the cycle length follow the CPU count.
      name: ignored (tf.data's op name).
      max_record_bytes: conveyor only: a record whose header declares more
        bytes raises ``DataLossError`` ("record size too large") instead of
        allocating; default 256 MiB.
      on_truncation: conveyor only: what a file that ends inside a record (a
        torn tail) does once its whole records are read: ``"warn"``
        (default: a ``conveyor.errors.DataLossWarning`` naming the file and
        the offset of the torn record, then the next file), ``"error"``
        (``DataLossError`` "truncated record at <offset>") or ``"ignore"``.

    Each element is a scalar ``tf.string``: iteration yields ``bytes``.
    """

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None,
                 name=None, max_record_bytes=None, on_truncation="warn"):
        compression = _compression_code(compression_type)
        truncation = _truncation_code(on_truncation)
        buffer_size = _byte_count(buffer_size, "buffer_size", _DEFAULT_BUFFER)
        max_bytes = _byte_count(max_record_bytes, "max_record_bytes", 0, minimum=1) \
            if max_record_bytes is not None else 0
        self._compression_type = compression_type
        super().__init__(filenames, num_parallel_reads, "tfrecord",
                         {"compression": compression, "buffer_size": buffer_size,
                          "max_record_bytes": max_bytes, "on_truncation": truncation})


class TextLineDataset(_FileDataset):
    """A ``Dataset`` of the lines of one or more text files.

    Each line comes without its ``\\n``; every ``\\r`` byte is dropped (not
    only a trailing one), as tf.data does. An empty line in the middle of a
    file yields ``b""``; a last line without ``\\n`` is yielded only if it is
    not empty (that is normal, not a torn file). A GZIP or ZLIB file whose
    stream is cut short is torn: ``on_truncation="warn"`` (default) warns and
    keeps its incomplete last line, as TensorFlow keeps it (quietly);
    ``"error"`` raises ``DataLossError`` instead of that line; ``"ignore"``
    is TensorFlow's behaviour. Other arguments as for ``TFRecordDataset``.
    """

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None,
                 name=None, on_truncation="warn"):
        compression = _compression_code(compression_type)
        truncation = _truncation_code(on_truncation)
        buffer_size = _byte_count(buffer_size, "buffer_size", _DEFAULT_BUFFER)
        super().__init__(filenames, num_parallel_reads, "text_line",
                         {"compression": compression, "buffer_size": buffer_size,
                          "on_truncation": truncation})


class FixedLengthRecordDataset(_FileDataset):
    """A ``Dataset`` of fixed-length records from one or more binary files.

    Each file: ``header_bytes`` skipped, then records of ``record_bytes``
    bytes, then ``footer_bytes`` skipped. A file whose body is not a whole
    number of records ends in a torn record: its whole records come first,
    then ``on_truncation`` decides (``"warn"``, the default: a
    ``DataLossWarning`` naming the file and the torn record's offset;
    ``"error"``: ``DataLossError``; ``"ignore"``). tf.data refuses such an
    uncompressed file at open (``InvalidArgumentError``, none of its records)
    and raises ``DataLossError`` after the whole records of a compressed one.
    Other arguments as for ``TFRecordDataset``.
    """

    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None,
                 buffer_size=None, compression_type=None, num_parallel_reads=None, name=None,
                 on_truncation="warn"):
        record_bytes = _byte_count(record_bytes, "record_bytes", None, minimum=1)
        if record_bytes is None:
            raise TypeError("`record_bytes` must be an int, got None.")
        header_bytes = _byte_count(header_bytes, "header_bytes", 0)
        footer_bytes = _byte_count(footer_bytes, "footer_bytes", 0)
        compression = _compression_code(compression_type)
        buffer_size = _byte_count(buffer_size, "buffer_size", _DEFAULT_BUFFER)
        truncation = _truncation_code(on_truncation)
        super().__init__(filenames, num_parallel_reads, "fixed_length_record",
                         {"header_bytes": header_bytes, "record_bytes": record_bytes,
                          "footer_bytes": footer_bytes, "compression": compression,
                          "buffer_size": buffer_size, "on_truncation": truncation})
