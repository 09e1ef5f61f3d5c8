"""CSV datasets: ``tf.data.experimental.CsvDataset`` and ``make_csv_dataset``.

``CsvDataset`` reads its files in the C engine (csrc/kernels/csv.c, no GIL)
through the same file layer as ``TextLineDataset`` (GZIP / ZLIB on the fly,
exact resume). Records follow tf.data: a record ends at ``\\n``, ``\\r\\n``
or ``\\r`` outside quotes; quoted fields may hold delimiters and newlines;
an empty line is a record with one empty field. A bad record raises
``InvalidArgumentError`` naming the file, the record and its line, and
iteration goes on with the next record.

``make_csv_dataset`` composes ``CsvDataset`` the way tf.data does: sorted
file names (shuffled with the seed when ``shuffle``), a deterministic
interleave over the files, shuffle, repeat, batch and a map that builds an
``OrderedDict`` of features (and the label).
"""
import collections
import csv as _pycsv
import gzip as _gzip
import io as _io

import numpy as np

from conveyor import _engine
from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor.ops.array_ops import reshape as _reshape
from conveyor.data.dataset import AUTOTUNE, Dataset
from conveyor.data.readers import _compression_code, _filenames_dataset
from conveyor.io import gfile as _gfile
from conveyor.io.csv_ops import CSV_DTYPES, default_array, delim_byte, na_text
from conveyor.tensor_spec import TensorSpec

__all__ = ["CsvDataset", "make_csv_dataset"]

_DEFAULT_BUFFER = 256 * 1024


def _indices(values, what):
    if values is None:
        return []
    out = [int(v) for v in values]
    if any(v < 0 for v in out):
        raise _errors.InvalidArgumentError(f"{what} should be non-negative indices")
    if any(b <= a for a, b in zip(out, out[1:])):
        raise _errors.InvalidArgumentError(f"{what} should be strictly increasing indices")
    return out


def _column_default(d, j):
    arr, dtype = default_array(d)
    arr = np.asarray(arr)
    if arr.ndim > 1 or arr.size > 1:
        raise _errors.InvalidArgumentError(
            f"There should only be 1 default per field but field {j} has {arr.size}")
    if arr.size == 0:
        return dtype, None
    v = arr.reshape(-1)[0]
    if dtype == _dtypes.string:
        return dtype, v if isinstance(v, bytes) else str(v).encode()
    if dtype in (_dtypes.float32, _dtypes.float64):
        return dtype, float(v)
    return dtype, int(v)


def _default_for_engine(v):
    """A column default as the engine's csv takes it: an empty array for a
    required column, else one int64, float64 or string value."""
    if v is None:
        return np.zeros([0], np.int64)
    if isinstance(v, bytes):
        return np.array(v, dtype=object)
    return np.array(v, np.float64 if isinstance(v, float) else np.int64)


class _CsvReader(Dataset):
    """The engine's CSV kernel over a dataset of filenames."""

    def __init__(self, filenames, args, specs):
        super().__init__([filenames])
        self._args = dict(args)  # csv's keywords
        self._specs = specs

    def _build(self, ctx, engine_inputs):
        return _engine.csv(engine_inputs[0], **self._args)

    def _derive_spec(self):
        return self._specs


class CsvDataset(Dataset):
    """A ``Dataset`` of the CSV records of one or more files
    (``tf.data.experimental.CsvDataset``).

    Each element is a tuple with one scalar per selected column, typed by
    `record_defaults` (float32, float64, int32, int64 or string): a
    one-element default, or a dtype / empty list for a required column.

    Args:
      filenames: a path, a list of paths, or a ``Dataset`` of scalar strings.
      record_defaults: one entry per (selected) column.
      compression_type: ``None`` / ``""``, ``"ZLIB"`` or ``"GZIP"``.
      buffer_size: bytes per read (must be positive).
      header: whether each file's first record is a header to skip.
      field_delim: the one-character delimiter.
      use_quote_delim: whether ``"`` quotes fields (which then may hold the
        delimiter and newlines; ``""`` is a quote).
      na_value: a field equal to it takes the default.
      select_cols: strictly increasing field indices to keep (at most one of
        `select_cols` and `exclude_cols`).
      exclude_cols: strictly increasing field indices to drop.
    """

    def __init__(self, filenames, record_defaults, compression_type=None, buffer_size=None,
                 header=False, field_delim=",", use_quote_delim=True, na_value="",
                 select_cols=None, exclude_cols=None, name=None):
        if isinstance(compression_type, bytes):
            compression_type = compression_type.decode()
        if compression_type not in (None, "", "ZLIB", "GZIP"):
            raise _errors.InvalidArgumentError(
                f"Unsupported compression_type: {compression_type}.")
        compression = _compression_code(compression_type)
        if buffer_size is None:
            buffer_size = _DEFAULT_BUFFER
        elif isinstance(buffer_size, bool) or not isinstance(buffer_size, (int, np.integer)):
            raise TypeError(f"`buffer_size` must be an int, got {buffer_size!r}.")
        elif buffer_size <= 0:
            raise _errors.InvalidArgumentError("buffer_size should be positive")
        cols = [_column_default(d, j) for j, d in enumerate(record_defaults)]
        if not cols:
            raise _errors.InvalidArgumentError(
                "Length for attr 'output_types' of 0 must be at least minimum 1")
        delim = delim_byte(field_delim)
        na = na_text(na_value).encode("utf-8", "surrogateescape")
        select = _indices(select_cols, "select_cols")
        exclude = _indices(exclude_cols, "exclude_cols")
        if select and exclude:
            raise _errors.InvalidArgumentError("Either select_cols or exclude_cols should be empty")
        if select and len(select) != len(cols):
            raise _errors.InvalidArgumentError("select_cols should match output size")
        specs = tuple(TensorSpec([], dt) for dt, _ in cols)
        args = {"compression": compression, "buffer_size": int(buffer_size),
                "header": bool(header), "delim": delim, "use_quote": bool(use_quote_delim),
                "na": na, "select": select, "exclude": exclude,
                "dtypes": [dt._code for dt, _ in cols],
                "defaults": [_default_for_engine(v) for _, v in cols]}
        self._impl = _CsvReader(_filenames_dataset(filenames), args, specs)
        self._specs = specs
        super().__init__([self._impl])

    def _build(self, ctx, engine_inputs):
        return engine_inputs[0]

    def _derive_spec(self):
        return self._specs


# ------------------------------------------------------------ make_csv_dataset

def _file_names(file_pattern):
    if isinstance(file_pattern, (list, tuple)):
        if not file_pattern:
            raise ValueError("Argument `file_pattern` should not be empty.")
        names = []
        for p in file_pattern:
            names.extend(_gfile.glob(p))
    else:
        names = list(_gfile.glob(file_pattern))
    if not names:
        raise ValueError(f"No files match `file_pattern` {file_pattern}.")
    return sorted(names)


class _BinaryGFile(_io.RawIOBase):
    """A file of any URL the file-system layer knows, as a raw binary stream (for
    TextIOWrapper and gzip)."""

    def __init__(self, name):
        super().__init__()
        self._f = _gfile.GFile(name, "rb")

    def readable(self):
        return True

    def readinto(self, buffer):
        data = self._f.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def close(self):
        self._f.close()
        super().close()


def _open_text(compression_type, encoding):
    if compression_type in (None, ""):
        return lambda f: _io.TextIOWrapper(_BinaryGFile(f), encoding=encoding, newline="")
    if compression_type == "GZIP":
        return lambda f: _gzip.open(_BinaryGFile(f), "rt", encoding=encoding, newline="")
    if compression_type == "ZLIB":
        raise ValueError(f"`compression_type` {compression_type} is not supported for probing "
                         "columns.")
    raise ValueError(f"Received unknown `compression_type` {compression_type}. Expected: GZIP, "
                     "ZLIB or  (empty string).")


def _reader(f, field_delim, use_quote_delim):
    return _pycsv.reader(f, delimiter=field_delim,
                         quoting=_pycsv.QUOTE_MINIMAL if use_quote_delim else _pycsv.QUOTE_NONE)


def _header_names(filenames, opener, field_delim, use_quote_delim):
    names = None
    for fn in filenames:
        with opener(fn) as f:
            try:
                row = next(_reader(f, field_delim, use_quote_delim))
            except StopIteration:
                raise ValueError(f"Failed when reading the header line of {fn}. Is it an empty "
                                 "file?") from None
        if names is None:
            names = row
        elif row != names:
            raise ValueError("All input CSV files should have the same column names in the "
                             f"header row. File {fn} has different column names.")
    return names


def _fits(text, np_type, finite=False):
    try:
        v = np_type(text)
    except (ValueError, OverflowError):
        return False
    if finite:
        return bool(v < np.inf)
    return True


# Least to most permissive; a column keeps the first type valid for every value seen.
_INFER_ORDER = (
    (_dtypes.int32, lambda s: _fits(s, np.int64) and _fits(s, np.int32)
     and np.int32(s) == np.int64(s)),
    (_dtypes.int64, lambda s: _fits(s, np.int64)),
    (_dtypes.float32, lambda s: _fits(s, np.float32, finite=True)),
    (_dtypes.float64, lambda s: _fits(s, np.float64, finite=True)),
    (_dtypes.string, lambda s: True),
)


def _infer(text, na_value, prev):
    if text in ("", na_value):
        return prev
    rank = {dt: i for i, (dt, _) in enumerate(_INFER_ORDER)}
    for i, (dt, ok) in enumerate(_INFER_ORDER):
        if (prev is None or rank[prev] <= i) and ok(text):
            return dt
    return _dtypes.string


def _inferred_defaults(filenames, num_cols, opener, field_delim, use_quote_delim, na_value,
                       header, rows, select):
    cols = list(range(num_cols)) if select is None else select
    types = [None] * len(cols)
    seen = 0
    for fn in filenames:
        if rows is not None and seen >= rows:
            break
        with opener(fn) as f:
            rdr = _reader(f, field_delim, use_quote_delim)
            line = 1
            if header:
                next(rdr, None)
                line += 1
            for row in rdr:
                if rows is not None and seen >= rows:
                    break
                if len(row) != num_cols:
                    raise ValueError(f"Problem inferring types: CSV row {line} has {len(row)} "
                                     f"number of fields. Expected: {num_cols}.")
                line += 1
                seen += 1
                for j, c in enumerate(cols):
                    types[j] = _infer(row[c], na_value, types[j])
    types = [t or _dtypes.string for t in types]
    return [np.array([b""], dtype=object) if t == _dtypes.string
            else np.zeros([1], dtype=t.as_numpy_dtype) for t in types]


def _select_indices(select_columns, names):
    index = {n: i for i, n in enumerate(names)}
    out = []
    for v in select_columns:
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            if v < 0 or v >= len(names):
                raise ValueError(f"Column index {v} specified in `select_columns` should be > 0 "
                                 f" and <= {len(names)}, which is the number of columns.")
            out.append(int(v))
        elif v not in index:
            raise ValueError(f"Column {v} specified in `select_columns` must be of one of the "
                             f"columns: {index.keys()}.")
        else:
            out.append(index[v])
    uniq = sorted(set(out))
    if len(uniq) != len(out):
        dup = {a for a, b in zip(sorted(out), sorted(out)[1:]) if a == b}
        raise ValueError(f"The `select_columns` argument contains duplicate columns: {dup}.")
    return uniq


def make_csv_dataset(file_pattern, batch_size, column_names=None, column_defaults=None,
                     label_name=None, select_columns=None, field_delim=",", use_quote_delim=True,
                     na_value="", header=True, num_epochs=None, shuffle=True,
                     shuffle_buffer_size=10000, shuffle_seed=None, prefetch_buffer_size=None,
                     num_parallel_reads=None, sloppy=False, num_rows_for_inference=100,
                     compression_type=None, ignore_errors=False, encoding="utf-8"):
    """Batches of CSV records as ``(features, label)`` or ``features``
    (``tf.data.experimental.make_csv_dataset``).

    Files matching `file_pattern` are read in sorted order (shuffled with
    `shuffle_seed` when `shuffle`), `num_parallel_reads` (default 1) at a time
    one record each in turn; records are shuffled (`shuffle_buffer_size`),
    repeated `num_epochs` times (None: forever, and the last partial batch is
    dropped) and batched; each batch is an ``OrderedDict`` of column name ->
    vector, the `label_name` column split off as the label. Column names come
    from the header when not given; column types, when `column_defaults` is
    not given, are inferred from the first `num_rows_for_inference` rows
    (int32, int64, float32, float64, string: the least permissive type that
    fits every value).
    """
    if num_parallel_reads is None:
        num_parallel_reads = 1
    if prefetch_buffer_size is None:
        prefetch_buffer_size = AUTOTUNE
    filenames = _file_names(file_pattern)
    opener = None
    if column_names is None or column_defaults is None:
        opener = _open_text(compression_type, encoding)
    if column_names is None:
        if not header:
            raise ValueError("Expected `column_names` or `header` arguments. Neither is "
                             "provided.")
        column_names = _header_names(filenames, opener, field_delim, use_quote_delim)
    column_names = list(column_names)
    if len(column_names) != len(set(column_names)):
        s = sorted(column_names)
        dup = {a for a, b in zip(s, s[1:]) if a == b}
        raise ValueError("Either `column_names` argument or CSV header row contains duplicate "
                         f"column names: {dup}.")
    if select_columns is not None:
        select_columns = _select_indices(select_columns, column_names)
    if column_defaults is not None:
        column_defaults = [d for d in column_defaults]
    else:
        column_defaults = _inferred_defaults(filenames, len(column_names), opener, field_delim,
                                             use_quote_delim, na_value, header,
                                             num_rows_for_inference, select_columns)
    if select_columns is not None and len(column_defaults) != len(select_columns):
        raise ValueError(
            "If specified, `column_defaults` and `select_columns` must have the same length: "
            f"`column_defaults` has length {len(column_defaults)}, `select_columns` has length "
            f"{len(select_columns)}.")
    if select_columns is not None and len(column_names) > len(select_columns):
        column_names = [column_names[i] for i in select_columns]
    if label_name is not None and label_name not in column_names:
        raise ValueError("`label_name` provided must be one of the columns: "
                         f"{column_names}. Received: {label_name}.")

    files = Dataset.from_tensor_slices(np.array([f.encode() if isinstance(f, str) else f
                                                 for f in filenames], dtype=object))
    if shuffle:
        files = files.shuffle(len(filenames), shuffle_seed)

    def read_file(filename, single=True):
        ds = CsvDataset(Dataset.from_tensors(filename) if single else filename, column_defaults,
                        field_delim=field_delim, use_quote_delim=use_quote_delim,
                        na_value=na_value, select_cols=select_columns, header=header,
                        compression_type=compression_type)
        return ds.ignore_errors() if ignore_errors else ds

    names = list(column_names)

    def to_features(*columns):
        # reshape to [-1] is a no-copy no-op on the batched vectors; it makes the
        # function a native program (a function calling no op would run in Python).
        features = collections.OrderedDict(zip(names, (_reshape(c, [-1]) for c in columns)))
        if label_name is not None:
            label = features.pop(label_name)
            return features, label
        return features

    if num_parallel_reads == 1:
        # One file at a time: one reader over the (shuffled) names is the same
        # sequence as tf.data's interleave with cycle length 1.
        ds = read_file(files, single=False)
    elif num_parallel_reads == AUTOTUNE:
        ds = files.interleave(read_file, num_parallel_calls=AUTOTUNE, deterministic=not sloppy)
    else:
        ds = files.interleave(read_file, cycle_length=num_parallel_reads, block_length=1,
                              num_parallel_calls=num_parallel_reads, deterministic=not sloppy)
    if shuffle:
        ds = ds.shuffle(shuffle_buffer_size, shuffle_seed)
    if num_epochs != 1:
        ds = ds.repeat(num_epochs)
    ds = ds.batch(batch_size, drop_remainder=num_epochs is None)
    ds = ds.map(to_features)
    return ds.prefetch(prefetch_buffer_size)
