"""Conveyor pipelines on a Ray cluster, and Ray Data streams into conveyor.

``conveyor.ray`` joins conveyor to Ray Data (``pip install conveyor[ray]``);
``import conveyor`` does not import Ray, only ``import conveyor.ray`` does.

Two directions:

* :class:`ConveyorDatasource` / :func:`read_conveyor`: a Ray Data
  datasource whose read tasks each run a conveyor input pipeline over one
  shard of the files. You give the files (a list or a glob pattern) and a
  pipeline factory ``make_pipeline(files) -> tf.data.Dataset``; every read
  task calls the factory on its own shard, on the Ray worker, and streams the
  pipeline's elements out as Arrow blocks. Conveyor datasets hold native
  iterators and threads and cannot be pickled, so the factory (a module-level
  function or any picklable callable) travels to the workers, not the
  dataset.
* :func:`from_ray`: a conveyor ``Dataset`` over a Ray Data ``Dataset`` or
  ``DataIterator`` (such as ``ray.train.get_dataset_shard("train")``), built
  on ``Dataset.from_generator``; each iteration of the conveyor dataset is
  one epoch over the Ray stream.

Elements and rows. A Ray row is a dict of columns; a conveyor element is a
structure of tensors. The columns of an element are named after its
structure: a dict's keys, a tuple's positions (``"0"``, ``"1"``, ...), a
namedtuple's field names, nested structures joined with ``"/"``
(``{"image": x, "meta": {"id": y}}`` gives ``"image"`` and ``"meta/id"``),
and a single tensor is the column ``"item"`` (Ray's name for an unnamed
value). Scalars become Arrow columns of their dtype (``tf.string`` as
``binary``); arrays of any rank become Ray tensor columns (fixed shape, or
variable-shaped when the shape differs between rows); non-scalar
``tf.string`` arrays become nested Arrow lists of ``binary``.
"""
import glob as _glob
from collections.abc import Mapping as _Mapping
import os as _os

import numpy as _np

try:
    import pyarrow as _pa
    import ray.data as _ray_data
    from ray.data import Datasource as _Datasource, ReadTask as _ReadTask
    from ray.data.block import BlockMetadata as _BlockMetadata
    from ray.data.extensions import (ArrowTensorArray as _ArrowTensorArray,
                                     ArrowVariableShapedTensorArray as _ArrowVarTensorArray)
except ImportError as _e:  # pragma: no cover - exercised only without Ray
    raise ImportError(
        f"conveyor.ray needs Ray Data (ray[data]), which could not be imported ({_e}). "
        "Install it with: pip install conveyor[ray]") from _e

from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor import nest as _nest
from conveyor.data import Dataset as _Dataset
from conveyor.io import gfile as _gfile
from conveyor.tensor_spec import TensorSpec as _TensorSpec

__all__ = ["ConveyorDatasource", "read_conveyor", "from_ray"]

#: The rows gathered into one block, unless the bytes reach the context's
#: target block size first.
DEFAULT_ROWS_PER_BLOCK = 1024
_FALLBACK_BLOCK_BYTES = 128 * 1024 * 1024


# -- element structure <-> columns --------------------------------------------

def _column_paths(spec):
    """[(column name, TensorSpec)] of an element_spec, in nest.flatten order."""
    out = []

    def walk(node, path):
        if isinstance(node, _Mapping):
            for key in _nest._sorted_keys(node):
                walk(node[key], path + (str(key),))
        elif isinstance(node, tuple):
            names = getattr(type(node), "_fields", None) or [str(i) for i in range(len(node))]
            for name, child in zip(names, node):
                walk(child, path + (str(name),))
        elif isinstance(node, _TensorSpec):
            out.append(("/".join(path) if path else "item", node))
        else:
            raise TypeError(
                f"conveyor.ray turns dense tensors into Ray columns; the element component "
                f"{'/'.join(path) or 'item'!r} is {node!r}. Convert ragged or sparse values "
                f"to dense tensors in the pipeline (e.g. with .to_tensor()).")

    walk(spec, ())
    names = [name for name, _ in out]
    if len(set(names)) != len(names):
        raise ValueError(f"conveyor.ray: the element's column names are not unique: {names}")
    return out


def _arrow_column(values, spec, batched):
    """One Arrow array from a column: a list of per-row values (unbatched), or
    a single array whose first dimension is the rows (batched)."""
    rank = len(spec.shape) - (1 if batched else 0)
    if spec.dtype == _dtypes.string:
        if rank == 0:
            rows = list(values)
            return _pa.array(rows, _pa.binary())
        return _pa.array([_np.asarray(v, dtype=object).tolist() for v in values])
    np_dtype = _np.dtype(spec.dtype.as_numpy_dtype)
    if rank == 0:
        return _pa.array(_np.asarray(values, dtype=np_dtype))
    if batched:
        return _ArrowTensorArray.from_numpy(_np.asarray(values, dtype=np_dtype))
    rows = [_np.asarray(v, dtype=np_dtype) for v in values]
    if all(r.shape == rows[0].shape for r in rows):
        return _ArrowTensorArray.from_numpy(_np.stack(rows))
    return _ArrowVarTensorArray.from_numpy(rows)  # a variable-shaped tensor column


def _table(columns, names, specs, batched):
    arrays = [_arrow_column(values, spec, batched) for values, spec in zip(columns, specs)]
    return _pa.Table.from_arrays(arrays, names=names)


# -- the datasource -------------------------------------------------------------

def _expand_files(files):
    """A sorted list of paths from a path, a glob pattern, or a list of them."""
    patterns = [files] if isinstance(files, (str, bytes, _os.PathLike)) else list(files)
    if not patterns:
        raise ValueError("conveyor.ray: `files` is empty.")
    names = []
    for pattern in patterns:
        pattern = _os.fsdecode(pattern)
        if _glob.has_magic(pattern):
            matched = _gfile.glob(pattern)  # sorted; any URL the file-system layer knows
            if not matched:
                raise FileNotFoundError(f"conveyor.ray: no files matched the pattern {pattern!r}")
            names.extend(matched)
        else:
            names.append(pattern)
    return names


def _split(files, n):
    """`files` in `n` contiguous shards whose sizes differ by at most one."""
    q, r = divmod(len(files), n)
    shards, start = [], 0
    for i in range(n):
        end = start + q + (1 if i < r else 0)
        shards.append(files[start:end])
        start = end
    return shards


class _ShardReader:
    """The read function of one read task: builds the pipeline on its shard on
    the worker and yields Arrow blocks."""

    def __init__(self, make_pipeline, shard, batched, rows_per_block, block_bytes):
        self.make_pipeline = make_pipeline
        self.shard = shard
        self.batched = batched
        self.rows_per_block = rows_per_block
        self.block_bytes = block_bytes

    def _where(self):
        shown = self.shard if len(self.shard) <= 8 else self.shard[:8] + ["..."]
        return f"conveyor.ray: in the read task over file(s) {', '.join(shown)}"

    def __call__(self):
        try:
            yield from self._blocks()
        except Exception as e:  # the same exception, with a note naming the files
            note = self._where()
            if hasattr(e, "add_note") and note not in getattr(e, "__notes__", ()):
                e.add_note(note)  # Python 3.11+
            raise

    def _blocks(self):
        dataset = self.make_pipeline(list(self.shard))
        if not isinstance(dataset, _Dataset):
            raise TypeError(f"make_pipeline must return a conveyor Dataset, got "
                            f"{type(dataset).__name__}")
        columns = _column_paths(dataset.element_spec)
        names = [name for name, _ in columns]
        specs = [spec for _, spec in columns]
        if self.batched:
            scalars = [name for name, spec in columns if len(spec.shape) == 0]
            if scalars:
                raise ValueError(f"batched=True reads each element as a batch of rows, but the "
                                 f"components {scalars} are scalars; end the pipeline in "
                                 f".batch(n), or read rows with batched=False.")
            for element in dataset.as_numpy_iterator():
                yield _table(_nest.flatten(element), names, specs, True)
            return
        pending = [[] for _ in names]
        rows = nbytes = 0
        for element in dataset.as_numpy_iterator():
            for column, value in zip(pending, _nest.flatten(element)):
                column.append(value)
                nbytes += _approx_nbytes(value)
            rows += 1
            if rows >= self.rows_per_block or nbytes >= self.block_bytes:
                yield _table(pending, names, specs, False)
                pending = [[] for _ in names]
                rows = nbytes = 0
        if rows:
            yield _table(pending, names, specs, False)


def _approx_nbytes(value):
    if isinstance(value, _np.ndarray):
        return value.nbytes
    if isinstance(value, bytes):
        return len(value)
    return 8


class ConveyorDatasource(_Datasource):
    """A Ray Data datasource that runs a conveyor input pipeline in every read task.

    The files (a path, a glob pattern, or a list of them; patterns expand in
    sorted order, on the driver) are cut into contiguous shards, one read
    task per shard; a read task calls ``make_pipeline(shard)`` with its list
    of paths on the Ray worker and streams the resulting
    ``tf.data.Dataset``'s elements out as Arrow blocks. ``make_pipeline``
    must be picklable (a module-level function, a ``functools.partial`` of
    one, or a picklable callable object): conveyor datasets themselves are
    not.

    With ``batched=False`` each element is one row and up to
    ``rows_per_block`` rows make one block (fewer when they reach the
    context's ``target_max_block_size`` bytes first). With ``batched=True``
    each element is already a batch (for instance the pipeline ends in
    ``.batch(n)``): every component's first dimension is the rows, and the
    element becomes one block as it is.

    Read tasks are ``min(parallelism, number of files)``; Ray chooses
    ``parallelism`` unless ``override_num_blocks`` is given to
    ``ray.data.read_datasource``. An exception in a read task (in
    ``make_pipeline`` or in the pipeline) keeps its type and gains a note
    naming the task's files.
    """

    def __init__(self, files, make_pipeline, *, batched=False,
                 rows_per_block=DEFAULT_ROWS_PER_BLOCK):
        super().__init__()
        if not callable(make_pipeline):
            raise TypeError(f"make_pipeline must be callable, got {make_pipeline!r}")
        if int(rows_per_block) < 1:
            raise ValueError(f"rows_per_block must be at least 1, got {rows_per_block}")
        self._files = _expand_files(files)
        self._make_pipeline = make_pipeline
        self._batched = bool(batched)
        self._rows_per_block = int(rows_per_block)

    @property
    def files(self):
        """The expanded list of files, in the order of the shards."""
        return list(self._files)

    def get_name(self):
        return "Conveyor"

    def _file_size(self, path):
        try:
            size = _gfile.stat(path).length
        except (OSError, _errors.OpError):
            return None  # not there, or not reachable (the read task says so)
        return size if size >= 0 else None

    def estimate_inmemory_data_size(self):
        """The files' size on disk (decoded images will be larger); None when unknown."""
        sizes = [self._file_size(f) for f in self._files]
        return None if any(s is None for s in sizes) else sum(sizes)

    def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
        n = max(1, min(int(parallelism), len(self._files)))
        block_bytes = getattr(data_context, "target_max_block_size", None) or \
            _FALLBACK_BLOCK_BYTES
        tasks = []
        for shard in _split(self._files, n):
            sizes = [self._file_size(f) for f in shard]
            metadata = _BlockMetadata(
                num_rows=None,
                size_bytes=None if any(s is None for s in sizes) else sum(sizes),
                exec_stats=None, input_files=tuple(shard))
            reader = _ShardReader(self._make_pipeline, shard, self._batched,
                                  self._rows_per_block, block_bytes)
            tasks.append(_ReadTask(reader, metadata, per_task_row_limit=per_task_row_limit))
        return tasks


def read_conveyor(files, make_pipeline, *, batched=False, rows_per_block=DEFAULT_ROWS_PER_BLOCK,
                  override_num_blocks=None, parallelism=-1, **read_args):
    """A Ray ``Dataset`` read by conveyor pipelines, one per shard of `files`.

    ``make_pipeline(files) -> tf.data.Dataset`` builds the input pipeline of
    one read task on its list of files (see :class:`ConveyorDatasource` for
    `batched`, `rows_per_block` and how elements become rows).
    `override_num_blocks` sets the number of read tasks (at most one per
    file); other keyword arguments (``num_cpus``, ``concurrency``,
    ``ray_remote_args``, ...) go to ``ray.data.read_datasource``.

    Example::

        def make_pipeline(files):
            ds = tf.data.TFRecordDataset(files)
            return ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)

        ds = conveyor.ray.read_conveyor("/data/train-*.tfrecord", make_pipeline)
    """
    source = ConveyorDatasource(files, make_pipeline, batched=batched,
                                rows_per_block=rows_per_block)
    return _ray_data.read_datasource(source, parallelism=parallelism,
                                     override_num_blocks=override_num_blocks, **read_args)


# -- the reverse: Ray Data -> conveyor --------------------------------------------

def _spec_of_arrow(name, arrow_type):
    """The TensorSpec of one row's value of a Ray column (Arrow or NumPy type)."""
    if isinstance(arrow_type, _pa.ExtensionType) and hasattr(arrow_type, "shape"):
        # A Ray tensor column: fixed shape, or None per dimension when variable-shaped.
        return _TensorSpec(tuple(arrow_type.shape), _dtype_of(name, arrow_type.value_type))
    if isinstance(arrow_type, _pa.DataType) and (_pa.types.is_list(arrow_type) or
                                                  _pa.types.is_large_list(arrow_type) or
                                                  _pa.types.is_fixed_size_list(arrow_type)):
        inner = _spec_of_arrow(name, arrow_type.value_type)
        size = arrow_type.list_size if _pa.types.is_fixed_size_list(arrow_type) else None
        return _TensorSpec((size,) + tuple(inner.shape), inner.dtype)
    return _TensorSpec((), _dtype_of(name, arrow_type))


def _dtype_of(name, arrow_type):
    if isinstance(arrow_type, _pa.DataType):
        if (_pa.types.is_string(arrow_type) or _pa.types.is_large_string(arrow_type) or
                _pa.types.is_binary(arrow_type) or _pa.types.is_large_binary(arrow_type)):
            return _dtypes.string
        try:
            np_dtype = _np.dtype(arrow_type.to_pandas_dtype())
        except (NotImplementedError, TypeError):
            np_dtype = None
    else:
        try:
            np_dtype = _np.dtype(arrow_type)
        except TypeError:
            np_dtype = None
    if np_dtype is not None and np_dtype.kind in "biuf":
        return _dtypes.as_dtype(np_dtype)
    raise TypeError(f"conveyor.ray.from_ray cannot infer the dtype of column {name!r} "
                    f"(type {arrow_type}); pass output_signature.")


def _infer_signature(source):
    schema = source.schema()
    if schema is None:
        raise ValueError("conveyor.ray.from_ray: the Ray dataset has no schema (it may be "
                         "empty); pass output_signature.")
    return {name: _spec_of_arrow(name, t) for name, t in zip(schema.names, schema.types)}


def _batched_signature(signature):
    return _nest.map_structure(lambda s: _TensorSpec((None,) + tuple(s.shape), s.dtype),
                               signature)


def from_ray(source, output_signature=None, *, batch_size=None, drop_last=False,
             prefetch_batches=1, read_batch_size=256):
    """A conveyor ``Dataset`` over a Ray Data ``Dataset`` or ``DataIterator``.

    Each element is one row, a dict ``{column: tensor}``; with `batch_size`
    each element is instead a batch of that many rows (the last one smaller
    unless `drop_last`), every component gaining a first dimension.

    `output_signature` (a dict of ``tf.TensorSpec`` per row, as in
    ``Dataset.from_generator``) is inferred from the Ray schema when not
    given: numeric and boolean columns keep their dtype, ``string`` and
    ``binary`` columns are ``tf.string``, tensor columns keep their shape
    (``None`` for the dimensions of variable-shaped ones) and Arrow lists
    are ``[None]``. Inferring it may run the Ray dataset's first block.

    Every iteration of the returned dataset (every epoch) iterates `source`
    again, as ``source.iter_batches`` does. Rows are fetched from Ray in
    NumPy batches of `read_batch_size` (or `batch_size`) rows with
    `prefetch_batches` batches read ahead; the generator runs under the GIL
    like any ``from_generator`` source, so put ``map(...,
    num_parallel_calls=...)`` and ``prefetch`` after it for the parallel work.

    In a Ray Train worker::

        shard = ray.train.get_dataset_shard("train")
        ds = conveyor.ray.from_ray(shard).map(augment, num_parallel_calls=tf.data.AUTOTUNE)
        for batch in ds.batch(32).prefetch(2):
            ...
    """
    if not hasattr(source, "iter_batches") or not hasattr(source, "schema"):
        raise TypeError(f"from_ray expects a ray.data.Dataset or DataIterator, got "
                        f"{type(source).__name__}")
    if batch_size is not None and int(batch_size) < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if int(read_batch_size) < 1:
        raise ValueError(f"read_batch_size must be at least 1, got {read_batch_size}")
    if output_signature is None:
        output_signature = _infer_signature(source)
    if not isinstance(output_signature, dict):
        raise TypeError("from_ray's output_signature must be a dict of TensorSpec per column, "
                        f"got {output_signature!r}")
    names = list(output_signature)
    row_signature = output_signature

    def batches(size, last):
        for batch in source.iter_batches(batch_size=size, batch_format="numpy",
                                         prefetch_batches=prefetch_batches, drop_last=last):
            missing = [n for n in names if n not in batch]
            if missing:
                raise KeyError(f"from_ray: columns {missing} of output_signature are not in "
                               f"the Ray batch (columns {sorted(batch)})")
            yield batch

    if batch_size is not None:
        def generator():
            for batch in batches(int(batch_size), drop_last):
                yield {n: _stack_column(n, batch[n]) for n in names}
        return _Dataset.from_generator(generator,
                                       output_signature=_batched_signature(row_signature))

    def generator():
        for batch in batches(int(read_batch_size), False):
            columns = [batch[n] for n in names]
            for i in range(len(columns[0]) if columns else 0):
                yield {n: c[i] for n, c in zip(names, columns)}
    return _Dataset.from_generator(generator, output_signature=row_signature)


def _stack_column(name, column):
    """A Ray NumPy batch column as one array: object arrays of equal-shaped
    arrays (lists, variable-shaped tensors that happen to agree) are stacked."""
    if column.dtype == object and len(column) and isinstance(column[0], _np.ndarray):
        shapes = {row.shape for row in column}
        if len(shapes) > 1:
            raise _errors.InvalidArgumentError(
                f"from_ray(batch_size=...): the rows of column {name!r} have different shapes "
                f"{sorted(shapes)} and cannot be stacked into one batch; read rows "
                f"(batch_size=None) and use padded_batch or ragged_batch in the pipeline.")
        return _np.stack(list(column))
    return column
