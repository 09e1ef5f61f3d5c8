"""Data-parallel sharding: each worker (rank) reads its own part of a pipeline.

In tf.data's vocabulary: a *shard* is every ``num_shards``-th element of a
dataset, starting at ``index`` (``Dataset.shard``); *auto-sharding* chooses
where in the pipeline the shard goes. This module gives that to training
loops that run outside ``tf.distribute`` (PyTorch DDP, JAX multi-process,
plain multi-process jobs):

* :func:`detect_world` reads this process's rank and the number of
  processes from ``torch.distributed``, JAX, or the launcher's environment
  variables;
* :func:`shard` shards a dataset for a rank, with tf.data's policies
  (``FILE``: each rank reads only its files; ``DATA``: each rank keeps
  every ``num_shards``-th element; ``AUTO``: ``FILE`` where the pipeline
  reads files, else ``DATA``), and optionally makes every shard the same
  length (``equal="truncate"`` or ``"pad"``) so that no rank waits forever
  for the others at the end of an epoch;
* :class:`ShardedDataset` rebuilds the pipeline every epoch with the seed
  ``seed + epoch`` on every rank (``set_epoch``, as
  ``torch.utils.data.DistributedSampler.set_epoch``): a new order each
  epoch, the same on all ranks, so shards stay disjoint and complete.

See docs/frameworks.md. Importing this module imports neither torch nor JAX:
they are read only when the program has imported them already.
"""
import collections
import copy
import os
import sys
import threading
import warnings

import numpy as np

from conveyor import errors as _errors

__all__ = ["World", "detect_world", "shard", "ShardedDataset", "FILE", "DATA", "AUTO", "OFF"]

World = collections.namedtuple("World", ["rank", "size", "source"])
World.__doc__ = """This process's place among the processes that train together.

``rank`` is in ``[0, size)``; ``source`` says where it was read
("torch.distributed", "jax", the environment variables, or "single process").
"""

AUTO, FILE, DATA, OFF = "auto", "file", "data", "off"

# Launchers' environment variables, (rank, size), in the order they are tried:
# torchrun / torch.distributed.launch, Slurm's srun, Open MPI, MPICH / Intel MPI.
_ENV_PAIRS = (("RANK", "WORLD_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS"),
              ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE"))


# -- who am I -------------------------------------------------------------------


def _env_int(name, value):
    try:
        return int(value.strip())
    except (ValueError, AttributeError):
        raise ValueError(f"Environment variable {name}={value!r} is not an integer.") from None


def _checked_world(rank, size, source, rank_name="rank", size_name="size"):
    if size < 1:
        raise ValueError(f"{size_name}={size} ({source}) must be at least 1.")
    if not 0 <= rank < size:
        raise ValueError(f"{rank_name}={rank} ({source}) must be in [0, {size_name}={size}).")
    return World(rank, size, source)


def detect_world():
    """This process's ``World(rank, size, source)``, read in this order:

    1. ``torch.distributed``, when the program has imported torch and
       initialized a process group (``get_rank()``, ``get_world_size()``);
    2. JAX, when the program has imported ``jax`` and runs more than one
       process (``jax.process_index()``, ``jax.process_count()``);
    3. the launcher's environment variables: ``RANK``/``WORLD_SIZE``
       (torchrun), ``SLURM_PROCID``/``SLURM_NTASKS``,
       ``OMPI_COMM_WORLD_RANK``/``OMPI_COMM_WORLD_SIZE``,
       ``PMI_RANK``/``PMI_SIZE``: the first pair whose rank variable is set;
    4. otherwise ``World(0, 1, "single process")``.

    Neither torch nor JAX is imported by this function. A variable that is
    not an integer, or a rank outside ``[0, size)``, raises ``ValueError``
    naming the variable.
    """
    dist = sys.modules.get("torch.distributed")
    if dist is not None:
        try:
            ready = dist.is_available() and dist.is_initialized()
        except Exception:  # noqa: BLE001 - a half-imported torch
            ready = False
        if ready:
            return _checked_world(int(dist.get_rank()), int(dist.get_world_size()),
                                  "torch.distributed")
    jax = sys.modules.get("jax")
    if jax is not None and hasattr(jax, "process_count"):
        count = int(jax.process_count())
        if count > 1:
            return _checked_world(int(jax.process_index()), count, "jax")
    for rank_name, size_name in _ENV_PAIRS:
        if rank_name in os.environ:
            if size_name not in os.environ:
                raise ValueError(f"Environment variable {rank_name} is set but {size_name} is not.")
            rank = _env_int(rank_name, os.environ[rank_name])
            size = _env_int(size_name, os.environ[size_name])
            return _checked_world(rank, size, f"environment {rank_name}/{size_name}",
                                  rank_name, size_name)
    return World(0, 1, "single process")


# -- arguments --------------------------------------------------------------------


def _policy(policy):
    """'auto' / 'file' / 'data' / 'off' from a string or tf.data's AutoShardPolicy."""
    from conveyor.data.options import AutoShardPolicy
    if isinstance(policy, AutoShardPolicy) or (isinstance(policy, int)
                                                and not isinstance(policy, bool)):
        try:
            policy = AutoShardPolicy(int(policy))
        except ValueError:
            raise ValueError(f"Unknown auto-shard policy {policy!r}.") from None
        if policy == AutoShardPolicy.HINT:
            raise ValueError("AutoShardPolicy.HINT is not supported here: call "
                             "Dataset.shard(num_shards, index) where the shard should go.")
        return {AutoShardPolicy.OFF: OFF, AutoShardPolicy.AUTO: AUTO,
                AutoShardPolicy.FILE: FILE, AutoShardPolicy.DATA: DATA}[policy]
    if isinstance(policy, str) and policy.lower() in (AUTO, FILE, DATA, OFF):
        return policy.lower()
    raise ValueError(f"`policy` must be 'auto', 'file', 'data', 'off' or a "
                     f"tf.data.experimental.AutoShardPolicy, got {policy!r}.")


def _int_arg(value, what):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"`{what}` must be an int, got {value!r} ({type(value).__name__}).")
    return int(value)


def _shard_args(num_shards, index):
    if num_shards is None or index is None:
        world = detect_world()
        num_shards = world.size if num_shards is None else num_shards
        index = world.rank if index is None else index
    num_shards, index = _int_arg(num_shards, "num_shards"), _int_arg(index, "index")
    if num_shards <= 0:
        raise _errors.InvalidArgumentError(
            f"Number of shards must be greater than zero (currently num_shards = {num_shards}).")
    if not 0 <= index < num_shards:
        raise _errors.InvalidArgumentError(
            f"Index must be between 0 and {num_shards - 1} (currently index = {index}).")
    return num_shards, index


# -- finding the file source ----------------------------------------------------


class _Unshardable(Exception):
    """Why FILE sharding cannot apply to a pipeline."""


def _reader_classes():
    from conveyor.data.csv_readers import _CsvReader
    from conveyor.data.readers import _ReaderDataset
    return (_ReaderDataset, _CsvReader)


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
            stack.extend(ds._inputs)


def _reads_files(dataset):
    """Whether a reader (TFRecord, text line, fixed length, CSV) is in `dataset`'s graph."""
    readers = _reader_classes()
    found = []

    def visit(ds):
        if isinstance(ds, readers):
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
    from conveyor.data.ops.from_tensors_op import TensorDataset
    from conveyor.data.ops.interleave_op import InterleaveDataset
    readers = _reader_classes()
    found = []

    def visit(ds):
        if isinstance(ds, readers):
            names = ds._inputs[0]
            # A reader of the one file an interleave function got: the interleave's
            # input is the file list (handled there).
            if not isinstance(names, TensorDataset):
                found.append(names)
                return False
        elif isinstance(ds, InterleaveDataset):
            if ds._first_inner is None:
                try:
                    ds.element_spec  # runs map_func on the first element
                except Exception:  # noqa: BLE001 - an input without elements: nothing to read
                    pass
            if ds._first_inner is not None and _reads_files(ds._first_inner):
                found.append(ds._inputs[0])
                return False
        return True

    _walk(dataset, visit)
    return found


def _list_sources(file_list):
    """The source datasets a file list is made from (where the shard goes: before
    any shuffle of the names, so every rank shards the same sorted list)."""
    from conveyor.data.ops.cache_op import CacheDataset
    from conveyor.data.ops.dataset_base import SourceDataset
    from conveyor.data.ops.from_tensors_op import TensorDataset, TensorSliceDataset
    sources = []

    def visit(ds):
        if isinstance(ds, (TensorSliceDataset, TensorDataset)):
            sources.append(ds)
            return False
        if isinstance(ds, CacheDataset):
            raise _Unshardable("the list of file names goes through cache(), which would "
                               "be shared by every shard")
        if isinstance(ds, SourceDataset) or not ds._inputs:
            raise _Unshardable(f"the file names come from {type(ds).__name__}, not from a "
                               "list of names (from_tensor_slices, list_files or a reader's "
                               "`filenames`)")
        return True

    _walk(file_list, visit)
    return sources


def _swap(value, table):
    if id(value) in table:
        return table[id(value)]
    if type(value) in (tuple, list):
        items = [_swap(v, table) for v in value]
        if any(a is not b for a, b in zip(items, value)):
            return type(value)(items)
    elif type(value) is dict:
        items = {k: _swap(v, table) for k, v in value.items()}
        if any(items[k] is not value[k] for k in value):
            return items
    return value


def _rewrite(dataset, replace):
    """`dataset` with the datasets in `replace` (id -> new dataset) replaced:
    every dataset downstream of one is copied with its new inputs (datasets are
    immutable descriptions; the caller's pipeline is not changed)."""
    from conveyor.data.ops.cache_op import CacheDataset
    memo = dict(replace)

    def visit(ds):
        if id(ds) in memo:
            return memo[id(ds)]
        new_inputs = [visit(i) for i in ds._inputs]
        if all(a is b for a, b in zip(new_inputs, ds._inputs)):
            result = ds
        else:
            if isinstance(ds, CacheDataset):
                raise _Unshardable("cache() sits between the files and the output: its "
                                   "store would be shared by every shard; shard before cache()")
            result = copy.copy(ds)
            table = {id(old): new for old, new in zip(ds._inputs, new_inputs)}
            for key, value in list(vars(result).items()):
                result.__dict__[key] = _swap(value, table)
            result._inputs = tuple(new_inputs)
            result._engine_cache = {}
            result._lock = threading.Lock()
            result.__dict__.pop("_fingerprint", None)
        memo[id(ds)] = result
        return result

    return visit(dataset)


def _file_sharded(dataset, num_shards, index):
    """FILE policy: the shard inserted after each file-name source. Raises
    _Unshardable (no file source) or InvalidArgumentError (too few files)."""
    lists = _file_lists(dataset)
    if not lists:
        raise _Unshardable("no reader of files (TFRecordDataset, TextLineDataset, "
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
    return _rewrite(dataset, {id(s): s.shard(num_shards, index) for s in sources})


def _sharded(dataset, num_shards, index, policy):
    """(dataset sharded by `policy`, the policy that applied)."""
    if policy == OFF or num_shards == 1 and policy != FILE:
        return dataset, policy if policy == OFF else DATA
    if policy in (FILE, AUTO):
        try:
            return _file_sharded(dataset, num_shards, index), FILE
        except _Unshardable as e:
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
    from conveyor.data.ops.shuffle_op import ShuffleDataset
    unseeded = []

    def visit(ds):
        if isinstance(ds, ShuffleDataset) and ds._args["seed"] == 0 and ds._args["seed2"] == 0:
            unseeded.append(ds)
        return not unseeded

    _walk(dataset, visit)
    if unseeded:
        warnings.warn(
            "Sharding by element (DATA) after a shuffle without a seed: every worker "
            "shuffles differently, so the shards overlap and miss elements. Give "
            "shuffle()/list_files() a seed, the same on every worker (see "
            "conveyor.sharding.ShardedDataset for a new seed per epoch).",
            RuntimeWarning, stacklevel=4)


# -- equal lengths --------------------------------------------------------------


def _count(dataset):
    n = 0
    for _ in dataset.as_numpy_iterator():
        n += 1
    return n


def _known(cardinality):
    n = int(cardinality)
    if n == -1:
        raise ValueError("Equal-length shards need a finite dataset, but this one is infinite: "
                         "apply repeat() after shard(), or take(n) before it.")
    return None if n < 0 else n


def _shard_lengths(dataset, num_shards, index, applied, num_elements):
    """The length of every shard, for equal="truncate"/"pad"."""
    if applied != FILE:
        n = _known(dataset.cardinality())
        if n is None:
            if isinstance(num_elements, str) and num_elements == "count":
                n = _count(dataset)
            elif num_elements is not None and not isinstance(num_elements, str) \
                    and not hasattr(num_elements, "__len__"):
                n = _int_arg(num_elements, "num_elements")
            elif num_elements is not None and hasattr(num_elements, "__len__") \
                    and not isinstance(num_elements, str):
                return _lengths_arg(num_elements, num_shards)
            else:
                raise ValueError(
                    "Equal-length shards need the number of elements, and this dataset's "
                    "cardinality is unknown (a filter, an interleave or a reader): pass "
                    "num_elements=<int> (the total), or num_elements='count' to count them "
                    "with one pass over the dataset (it reads all of it), or use "
                    "assert_cardinality(n).")
        if n < 0:
            raise ValueError(f"`num_elements` must be >= 0, got {n}.")
        return [max(0, -(-(n - j) // num_shards)) for j in range(num_shards)]
    if num_elements is not None and not isinstance(num_elements, str):
        if not hasattr(num_elements, "__len__"):
            raise ValueError("With FILE sharding the shards' lengths depend on the files: pass "
                             "num_elements as a list of the length of every shard, or "
                             "num_elements='count'.")
        return _lengths_arg(num_elements, num_shards)
    lengths = []
    for j in range(num_shards):
        part = _file_sharded(dataset, num_shards, j)
        n = _known(part.cardinality())
        if n is None:
            if num_elements != "count":
                raise ValueError(
                    "Equal-length shards need every shard's length, and with FILE sharding "
                    "it is unknown until the files are read: pass num_elements='count' to "
                    "count every shard (every rank then reads all the files once), or "
                    "num_elements=[length of shard 0, ...], or policy='data' on a dataset of "
                    "known cardinality.")
            n = _count(part)
        lengths.append(n)
    return lengths


def _lengths_arg(lengths, num_shards):
    lengths = [_int_arg(n, "num_elements") for n in lengths]
    if len(lengths) != num_shards or any(n < 0 for n in lengths):
        raise ValueError(f"`num_elements` as a list must hold the {num_shards} shards' lengths "
                         f"(each >= 0), got {lengths}.")
    return lengths


def _flag(value):
    from conveyor.data.dataset import Dataset
    return Dataset.from_tensors(np.bool_(value)).repeat()


def _equalized(dataset, part, num_shards, index, applied, equal, num_elements):
    from conveyor.data.dataset import Dataset
    lengths = _shard_lengths(dataset, num_shards, index, applied, num_elements)
    if equal == "truncate":
        return part.take(min(lengths))
    target, mine = max(lengths), lengths[index]
    real = Dataset.zip((part, _flag(True)))
    missing = target - mine
    if missing == 0:
        return real
    if applied == FILE:
        pads = (part if mine > 0 else dataset).repeat().take(missing)
    else:
        # torch's DistributedSampler: the padded index list wraps around to the
        # start of the whole dataset; this shard's missing position is `mine`.
        n = sum(lengths)
        pads = dataset.skip((mine * num_shards + index - n) % n).take(1)
    return real.concatenate(Dataset.zip((pads, _flag(False))))


# -- the public helpers -----------------------------------------------------------


def shard(dataset, num_shards=None, index=None, *, policy=AUTO, equal=None,
          num_elements=None):
    """This worker's shard of `dataset`, as tf.data's auto-sharding would make it.

    Args:
      dataset: a ``conveyor.data.Dataset``.
      num_shards, index: how many workers share the data and which one this
        is; ``None`` reads them from :func:`detect_world` (``size``, ``rank``).
      policy: where the shard goes, as ``tf.data.experimental.AutoShardPolicy``
        (its values, or the strings ``"auto"``, ``"file"``, ``"data"``,
        ``"off"``):

        * ``"file"``: the list of file names is sharded at its source, before
          any shuffle of the names and before the files are read (the
          ``filenames`` of ``TFRecordDataset``/``TextLineDataset``/
          ``FixedLengthRecordDataset``/``CsvDataset``, or the input of an
          ``interleave``/``flat_map`` whose function reads files, such as
          ``list_files``). Each worker reads only its files. Fewer files than
          shards raises ``InvalidArgumentError``; a pipeline without such a
          file list raises ``NotFoundError``.
        * ``"data"``: ``dataset.shard(num_shards, index)``: every worker reads
          everything and keeps every ``num_shards``-th element.
        * ``"auto"`` (default): ``"file"`` when the pipeline reads a list of
          files, else ``"data"`` (as tf.data; too few files raises, as in
          tf.data).
        * ``"off"``: the dataset unchanged.
      equal: ``None`` (shards may differ in length by the remainder; by more,
        with ``"file"``), ``"truncate"`` (every shard is cut to the shortest:
        with ``"data"``, ``n // num_shards`` elements, dropping the last
        ``n % num_shards`` of the input) or ``"pad"`` (every shard gets as many
        elements as the longest: ``ceil(n / num_shards)`` with ``"data"``; the
        shorter shards repeat elements, as torch's ``DistributedSampler``
        pads: from the start of the dataset with ``"data"``, from the start of
        the shard with ``"file"``). With ``"pad"`` each element becomes
        ``(element, is_real)``, ``is_real`` a scalar ``tf.bool`` that is False
        on the padding, so the loss can mask it out.
      num_elements: for `equal`, when the cardinality is unknown (after
        ``filter``, an interleave or a reader): the total number of elements
        (``"data"``), a list of every shard's length, or ``"count"`` to count
        them with one pass over the data (with ``"file"``: every shard is
        counted, so every worker reads all the files once). Without it, an
        unknown cardinality raises ``ValueError``: shards are never silently
        unequal when `equal` is given.

    Returns:
      The worker's ``Dataset``. Shuffle the file names or elements with the
      same seed on every worker (see :class:`ShardedDataset`) so that the
      shards stay disjoint.
    """
    from conveyor.data.dataset import Dataset
    if not isinstance(dataset, Dataset):
        raise TypeError(f"`dataset` must be a conveyor.data.Dataset, got "
                        f"{type(dataset).__name__}.")
    num_shards, index = _shard_args(num_shards, index)
    policy = _policy(policy)
    if equal not in (None, "truncate", "pad"):
        raise ValueError(f"`equal` must be None, 'truncate' or 'pad', got {equal!r}.")
    part, applied = _sharded(dataset, num_shards, index, policy)
    if equal is None:
        return part
    if applied == OFF:
        num_shards, index = 1, 0
    return _equalized(dataset, part, num_shards, index, applied, equal, num_elements)


class ShardedDataset:
    """A pipeline rebuilt every epoch with a new seed, then sharded for this worker.

    The PyTorch pattern of ``DistributedSampler`` + ``set_epoch``::

        def make_dataset(seed):
            files = tf.data.Dataset.list_files("train-*.tfrecord", seed=seed)
            return files.interleave(tf.data.TFRecordDataset).shuffle(10_000, seed=seed)

        data = conveyor.sharding.ShardedDataset(make_dataset, seed=42, equal="pad")
        for epoch in range(epochs):
            data.set_epoch(epoch)
            for element, is_real in data:
                ...

    `make_dataset(seed)` builds the whole (unsharded) pipeline; it is called
    with ``seed + epoch``, the same on every worker, so every worker's
    ``shuffle`` and ``list_files`` order is the same and the shards stay
    disjoint and complete, while each epoch gets a new order. A ``Dataset``
    may be passed instead of a function (then ``set_epoch`` changes nothing).
    The other arguments are those of :func:`shard`.
    """

    def __init__(self, make_dataset, num_shards=None, index=None, *, policy=AUTO, equal=None,
                 num_elements=None, seed=0):
        from conveyor.data.dataset import Dataset
        if not isinstance(make_dataset, Dataset) and not callable(make_dataset):
            raise TypeError("`make_dataset` must be a Dataset or a function seed -> Dataset, "
                            f"got {type(make_dataset).__name__}.")
        self._make = make_dataset
        self.num_shards, self.index = _shard_args(num_shards, index)
        self.policy = _policy(policy)
        self.equal, self.num_elements = equal, num_elements
        self.seed = _int_arg(seed, "seed")
        self.epoch = 0
        self._built = {}

    def set_epoch(self, epoch):
        """Use ``seed + epoch`` for the following iterations (call it on every worker)."""
        self.epoch = _int_arg(epoch, "epoch")

    def dataset(self, epoch=None):
        """This worker's ``Dataset`` for `epoch` (default: the current one)."""
        epoch = self.epoch if epoch is None else _int_arg(epoch, "epoch")
        built = self._built.get(epoch)
        if built is None:
            from conveyor.data.dataset import Dataset
            full = self._make if isinstance(self._make, Dataset) else self._make(self.seed + epoch)
            if not isinstance(full, Dataset):
                raise TypeError(f"`make_dataset` must return a Dataset, got "
                                f"{type(full).__name__}.")
            built = shard(full, self.num_shards, self.index, policy=self.policy,
                          equal=self.equal, num_elements=self.num_elements)
            self._built = {epoch: built}  # keep only the current epoch's
        return built

    def __iter__(self):
        return iter(self.dataset())

    def __len__(self):
        return len(self.dataset())

    def __repr__(self):
        return (f"<ShardedDataset shard {self.index} of {self.num_shards}, policy={self.policy}, "
                f"equal={self.equal}, seed={self.seed}, epoch={self.epoch}>")
