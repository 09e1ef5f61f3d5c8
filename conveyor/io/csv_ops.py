"""``tf.io.decode_csv``: CSV records (strings) to one tensor per column.

The work is the engine's DecodeCSV op (csrc/ops/decode_csv.c): it runs
eagerly on NumPy arrays / Python values and inside a traced ``Dataset.map``
function (no GIL). Parsing and conversion follow TensorFlow: RFC 4180
quotes with ``""`` escapes, the field count checked per record, int32 /
int64 / float32 / float64 / string columns, an empty field (or one equal
to ``na_value``) takes the column's default, and a column without a default
is required.
"""
import numpy as np

from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor.framework.tracing import apply, convert, dtype_of, is_symbolic, op_error, static_shape

__all__ = ["decode_csv"]

MAX_COLUMNS = 4096  # an op's most outputs (csrc/python/ops.c)
CSV_DTYPES = (_dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.int64, _dtypes.string)


def _invalid(message):
    return op_error(_errors.InvalidArgumentError, message)


def delim_byte(field_delim):
    """The delimiter's byte (TensorFlow: exactly one character)."""
    d = field_delim.encode() if isinstance(field_delim, str) else field_delim
    if not isinstance(d, (bytes, bytearray)) or len(d) != 1:
        raise _invalid("field_delim should be only 1 char")
    return d[0]


def na_text(na_value):
    if isinstance(na_value, bytes):
        na_value = na_value.decode("utf-8", "surrogateescape")
    if not isinstance(na_value, str):
        raise TypeError(f"`na_value` must be a string, got {na_value!r}.")
    if "\0" in na_value:
        raise _invalid("na_value must not contain a NUL character in conveyor")
    return na_value


def default_array(d, what="record_defaults"):
    """A column default as a NumPy array of <= 1 element (empty: required);
    a DType stands for a required column of that type."""
    if isinstance(d, _dtypes.DType):
        arr = np.zeros([0], dtype=object if d == _dtypes.string else d.as_numpy_dtype)
        dtype = d
    else:
        if isinstance(d, (list, tuple)) and len(d) == 0:
            arr, dtype = np.zeros([0], np.float32), _dtypes.float32
        elif isinstance(d, (list, tuple)) and len(d) == 1 and is_symbolic(d[0]):
            arr = d[0]  # a traced value: the op takes a scalar default as well
            dtype = dtype_of(arr)
        else:
            arr = convert(d, name=what)
            dtype = dtype_of(arr)
    if dtype not in CSV_DTYPES:
        raise _invalid(f"Value for attr 'OUT_TYPE' of {dtype.name} is not in the list of "
                       "allowed values: float, double, int32, int64, string")
    return arr, dtype


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None,
               na_value="", select_cols=None):
    """Convert CSV records to tensors, one per column (``tf.io.decode_csv``).

    Args:
      records: a string tensor of any shape; each string is one record.
      record_defaults: one entry per output column: a one-element list or
        tensor (the default, whose dtype is the column's: float32, float64,
        int32, int64 or string), or an empty one (the column is required).
      field_delim: the one-character field delimiter.
      use_quote_delim: whether double quotes delimit fields (RFC 4180).
      na_value: a field equal to it is missing (takes the default).
      select_cols: optional strictly increasing field indices to keep.

    Returns a list of tensors with the shape of `records`. Raises
    ``InvalidArgumentError`` for a record with the wrong number of fields,
    a bad quote, a value that is not a number of its column's type, or a
    missing required field (naming the field and the record).
    """
    if isinstance(records, (list, tuple)) and len(records) == 0:
        records = np.zeros([0], dtype=object)
    x = convert(records, dtype=None, name="records")
    if dtype_of(x) != _dtypes.string:
        raise op_error(TypeError, f"Value passed to parameter 'records' has DataType "
                                  f"{dtype_of(x).name} not in list of allowed values: string")
    if isinstance(record_defaults, (str, bytes)) or not hasattr(record_defaults, "__len__"):
        raise op_error(TypeError, "`record_defaults` must be a list of defaults, one per column")
    defaults, dtypes = [], []
    for j, d in enumerate(record_defaults):
        arr, dtype = default_array(d)
        if not hasattr(arr, "_trace") and np.ndim(arr) > 1:
            raise _invalid(f"record_defaults[{j}] must be a scalar or a vector")
        if not hasattr(arr, "_trace") and np.size(arr) > 1:
            raise _invalid(f"There should only be 1 default per field but field {j} has "
                           f"{np.size(arr)}")
        defaults.append(arr)
        dtypes.append(dtype)
    if not defaults:
        raise _invalid("Length for attr 'OUT_TYPE' of 0 must be at least minimum 1")
    if len(defaults) > MAX_COLUMNS:
        raise _invalid(f"decode_csv: {len(defaults)} columns; conveyor's ops have at most "
                       f"{MAX_COLUMNS} outputs (CsvDataset has no such limit)")
    sel = []
    if select_cols is not None:
        sel = [int(c) for c in select_cols]
        if any(c < 0 for c in sel):
            raise op_error(ValueError, "select_cols contains negative values.")
        if any(b <= a for a, b in zip(sel, sel[1:])):
            raise op_error(ValueError, "select_cols is not strictly increasing.")
        if len(sel) != len(defaults):
            raise op_error(ValueError, "Length of select_cols and record_defaults do not match.")
    attrs = {"field_delim": delim_byte(field_delim), "use_quote_delim": 1 if use_quote_delim else 0}
    shape = static_shape(x)
    out = apply("DecodeCSV", [x, np.array(sel, dtype=np.int64)] + defaults,
                [(shape, dt) for dt in dtypes], attrs=attrs, string=na_text(na_value) or None)
    return out if isinstance(out, list) else [out]
