"""Auto-sharding (tf.data's auto_shard optimization, for
``conveyor.sharding.shard``): where in a pipeline the shard goes.

``FILE``: the shard is inserted after each source of file names, before any
shuffle of the names and before the files are read, and every dataset
downstream of one is copied with its new inputs (``Dataset.with_inputs``).
``DATA``: ``dataset.shard(num_shards, index)`` at the end. ``AUTO``: ``FILE``
where the pipeline reads a list of files, else ``DATA``. ``OFF``: unchanged.
The policies' arguments are checked by conveyor/sharding.py, the public
API; this module only rewrites the graph.
"""
import warnings

from conveyor import errors as _errors
from conveyor.data.csv_readers import _CsvReader
from conveyor.data.ops.cache_op import CacheDataset
from conveyor.data.ops.dataset_base import SourceDataset
from conveyor.data.ops.from_tensors_op import TensorDataset, TensorSliceDataset
from conveyor.data.ops.interleave_op import InterleaveDataset
from conveyor.data.ops.shuffle_op import ShuffleDataset
from conveyor.data.readers import _ReaderDataset

__all__ = ["AUTO", "FILE", "DATA", "OFF", "Unshardable", "rewrite", "file_sharded"]

AUTO, FILE, DATA, OFF = "auto", "file", "data", "off"

_READERS = (_ReaderDataset, _CsvReader)


class Unshardable(Exception):
    """Why FILE sharding cannot apply to a pipeline."""


def _walk(dataset, visit):
    """Calls visit(ds) once for each dataset in `dataset`'s graph, from the
    output towards the sources; goes on into ds's inputs when visit returns
    True."""
    seen, stack = set(), [dataset]
    while stack:
        ds = stack.pop()
        if id(ds) in seen:
            continue
        seen.add(id(ds))
        if visit(ds):
            stack.extend(ds.inputs())


def _reads_files(dataset):
    """Whether a reader (TFRecord, text line, fixed length, CSV) is in `dataset`'s graph."""
    found = []

    def visit(ds):
        if isinstance(ds, _READERS):
            found.append(ds)
        return not found

    _walk(dataset, visit)
    return bool(found)


def _file_lists(dataset):
    """The datasets of file names that the pipeline's readers read: a reader's
    filenames input, or the input of an interleave / flat_map whose function
    returns a dataset that reads files (tf.data looks into the function; here
    the first dataset it returned is inspected, which runs the function on the
    first file name, as ``element_spec`` does)."""
    found = []

    def visit(ds):
        if isinstance(ds, _READERS):
            names = ds.inputs()[0]
            # A reader of the one file an interleave function got: the interleave's
            # input is the file list (handled there).
            if not isinstance(names, TensorDataset):
                found.append(names)
                return False
        elif isinstance(ds, InterleaveDataset):
            if ds.first_inner_dataset() is None:
                try:
                    ds.element_spec  # runs map_func on the first element
                except Exception:  # noqa: BLE001 - an input without elements: nothing to read
                    pass
            inner = ds.first_inner_dataset()
            if inner is not None and _reads_files(inner):
                found.append(ds.inputs()[0])
                return False
        return True

    _walk(dataset, visit)
    return found


def _list_sources(file_list):
    """The source datasets a file list is made from (where the shard goes: before
    any shuffle of the names, so every rank shards the same sorted list)."""
    sources = []

    def visit(ds):
        if isinstance(ds, (TensorSliceDataset, TensorDataset)):
            sources.append(ds)
            return False
        if isinstance(ds, CacheDataset):
            raise Unshardable("the list of file names goes through cache(), which would "
                              "be shared by every shard")
        if isinstance(ds, SourceDataset) or not ds.inputs():
            raise Unshardable(f"the file names come from {type(ds).__name__}, not from a "
                              "list of names (from_tensor_slices, list_files or a reader's "
                              "`filenames`)")
        return True

    _walk(file_list, visit)
    return sources


def _replaced(dataset, replace):
    """`dataset` with the datasets in `replace` (id -> new dataset) replaced:
    every dataset downstream of one is copied with its new inputs (datasets are
    immutable descriptions; the caller's pipeline is not changed)."""
    memo = dict(replace)

    def visit(ds):
        if id(ds) in memo:
            return memo[id(ds)]
        old_inputs = ds.inputs()
        new_inputs = [visit(i) for i in old_inputs]
        if all(a is b for a, b in zip(new_inputs, old_inputs)):
            result = ds
        else:
            if isinstance(ds, CacheDataset):
                raise Unshardable("cache() sits between the files and the output: its "
                                  "store would be shared by every shard; shard before cache()")
            result = ds.with_inputs(new_inputs)
        memo[id(ds)] = result
        return result

    return visit(dataset)


def file_sharded(dataset, num_shards, index):
    """FILE policy: the shard inserted after each file-name source. Raises
    Unshardable (no file source) or InvalidArgumentError (too few files)."""
    lists = _file_lists(dataset)
    if not lists:
        raise Unshardable("no reader of files (TFRecordDataset, TextLineDataset, "
                          "FixedLengthRecordDataset, CsvDataset, or an interleave / flat_map "
                          "over file names) was found in the pipeline")
    sources = []
    for file_list in lists:
        for source in _list_sources(file_list):
            if all(source is not s for s in sources):
                sources.append(source)
    for source in sources:
        files = int(source.cardinality())
        if files < num_shards:
            raise _errors.InvalidArgumentError(
                f"Could not apply FILE based sharding: the dataset only has {files} file(s), "
                f"which is not enough for the required {num_shards} shards/workers. Write more "
                "files, or shard by element with policy='data' "
                "(AutoShardPolicy.DATA).")
    return _replaced(dataset, {id(s): s.shard(num_shards, index) for s in sources})


def rewrite(dataset, num_shards, index, policy):
    """(dataset sharded by `policy`, the policy that applied). `policy` is
    one of AUTO, FILE, DATA, OFF; num_shards and index are checked."""
    if policy == OFF or num_shards == 1 and policy != FILE:
        return dataset, policy if policy == OFF else DATA
    if policy in (FILE, AUTO):
        try:
            return file_sharded(dataset, num_shards, index), FILE
        except Unshardable as e:
            if policy == FILE:
                raise _errors.NotFoundError(
                    None, None, f"Found an unshardable source dataset for FILE based "
                    f"sharding: {e}. Use policy='data' (AutoShardPolicy.DATA) to shard by "
                    "element.") from None
    _warn_unseeded_shuffle(dataset)
    return dataset.shard(num_shards, index), DATA


def _warn_unseeded_shuffle(dataset):
    """DATA sharding keeps every n-th element of the order each worker sees: an
    unseeded shuffle (or list_files) draws another order on every worker, and
    the shards overlap."""
    unseeded = []

    def visit(ds):
        if isinstance(ds, ShuffleDataset) and ds.arg("seed") == 0 and ds.arg("seed2") == 0:
            unseeded.append(ds)
        return not unseeded

    _walk(dataset, visit)
    if unseeded:
        # stacklevel 4: this function, rewrite(), conveyor.sharding.shard(), its caller.
        warnings.warn(
            "Sharding by element (DATA) after a shuffle without a seed: every worker "
            "shuffles differently, so the shards overlap and miss elements. Give "
            "shuffle()/list_files() a seed, the same on every worker (see "
            "conveyor.sharding.ShardedDataset for a new seed per epoch).",
            RuntimeWarning, stacklevel=4)
