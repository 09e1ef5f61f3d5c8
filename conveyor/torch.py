"""PyTorch hand-off: a conveyor pipeline as a ``torch.utils.data.IterableDataset``.

conveyor already runs the pipeline's stages in parallel on its own threads
(``map(num_parallel_calls=...)``, ``interleave``, ``prefetch``), so the
simplest use needs no ``DataLoader`` at all::

    import conveyor as tf
    import conveyor.torch

    ds = tf.data.TFRecordDataset(files).map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(64).prefetch(tf.data.AUTOTUNE)
    for images, labels in conveyor.torch.loader(ds):   # torch tensors
        ...

Elements come out with their structure (tuples, dicts, namedtuples) and
``torch.Tensor`` leaves that share memory with the NumPy arrays the engine
produced (``torch.from_numpy``: no copy); scalar strings stay ``bytes`` and
string tensors become (nested) lists of ``bytes``, as ``DataLoader``'s
collation leaves strings.

Inside a ``DataLoader`` (``batch_size=None``: the pipeline batches), each
worker reads its own shard; under DDP each rank too (see
:class:`IterableDataset`). ``state_dict()`` / ``load_state_dict()`` resume
exactly (docs/resume.md), with torchdata's ``StatefulDataLoader`` protocol.
See docs/frameworks.md.
"""
import numpy as np

try:
    import torch as _torch
    from torch.utils import data as _torch_data
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise ImportError("conveyor.torch needs PyTorch, which is not installed: "
                      "pip install conveyor[torch]") from _e

from conveyor import nest
from conveyor import sharding as _sharding
from conveyor.data.dataset import Dataset

__all__ = ["IterableDataset", "loader", "to_torch"]


def _leaf(x):
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "OSU":
            return x.tolist()  # strings: (nested) lists of bytes
        if not x.flags.writeable:  # torch tensors are always writable: copy
            x = x.copy()
        try:
            return _torch.from_numpy(x)
        except TypeError:  # a dtype torch does not have
            return _torch.as_tensor(x.astype(_promoted(x.dtype)))
    if isinstance(x, (bytes, str)):
        return x
    if isinstance(x, np.generic):
        if isinstance(x, (np.bytes_, np.str_)):
            return x.item()
        return _leaf(np.asarray(x))
    return x


def _promoted(dtype):
    return np.int64 if dtype.kind in "iu" else np.float64


def to_torch(element):
    """One element (a structure of NumPy arrays, NumPy scalars and ``bytes``,
    as ``Dataset.as_numpy_iterator()`` yields) with ``torch.Tensor`` leaves.

    Numeric and boolean arrays become tensors sharing their memory
    (``torch.from_numpy``; 0-d tensors for scalars); strings stay ``bytes``
    (lists of ``bytes`` for string tensors). The structure is kept.
    """
    return nest.map_structure(_leaf, element)


class IterableDataset(_torch_data.IterableDataset):
    """A conveyor pipeline as a ``torch.utils.data.IterableDataset`` of torch tensors.

    Args:
      dataset: a ``conveyor.data.Dataset`` (its whole, unsharded pipeline), or
        a function ``seed -> Dataset`` that builds it with that seed; it is
        called with ``seed + epoch`` (see ``set_epoch``).
      num_shards, index: this process's rank and the number of ranks. ``None``
        reads them with ``conveyor.sharding.detect_world()`` when the adapter
        is made (as ``DistributedSampler`` does: make it after
        ``init_process_group``). ``num_shards=1`` turns rank sharding off.
      policy, equal, num_elements: as ``conveyor.sharding.shard``: where the
        shard goes (``"auto"``, ``"file"``, ``"data"``, tf.data's
        ``AutoShardPolicy``), and whether all shards have the same length
        (``"truncate"``, or ``"pad"``: elements become ``(element, is_real)``).
      seed: the base seed handed to a `dataset` function.

    Sharding: with ``W`` ``DataLoader`` workers (``num_workers=W``, read from
    ``torch.utils.data.get_worker_info()``) on ``size`` ranks, worker ``w`` of
    rank ``r`` reads shard ``r * W + w`` of ``size * W``: every element is
    read exactly once across all workers and ranks. Use ``batch_size=None``
    in the ``DataLoader``: batch in the pipeline, where it is parallel and
    native. Iterated directly (no ``DataLoader``), it reads the rank's shard.

    DataLoader workers started by fork (Linux's default) get the adapter as it
    is; workers started by spawn or forkserver get a pickled copy, which needs
    `dataset` to be a function defined at module level (a ``Dataset`` cannot
    be pickled: ``TypeError``).

    Resume: ``state_dict()`` is the position of the iteration in progress in
    this process (right after the last element it yielded), with the epoch;
    ``load_state_dict(state)`` makes the next iteration continue from there,
    exactly (conveyor's iterator save/restore, docs/resume.md). This is the
    protocol torchdata's ``StatefulDataLoader`` calls in every worker.
    """

    def __init__(self, dataset, num_shards=None, index=None, *, policy="auto", equal=None,
                 num_elements=None, seed=0):
        super().__init__()
        if not isinstance(dataset, Dataset) and not callable(dataset):
            raise TypeError("`dataset` must be a conveyor Dataset or a function seed -> "
                            f"Dataset, got {type(dataset).__name__}.")
        self._make = dataset
        self.num_shards, self.index = _sharding._shard_args(num_shards, index)
        self.policy = _sharding._policy(policy)
        if equal not in (None, "truncate", "pad"):
            raise ValueError(f"`equal` must be None, 'truncate' or 'pad', got {equal!r}.")
        self.equal, self.num_elements = equal, num_elements
        self.seed = _sharding._int_arg(seed, "seed")
        self.epoch = 0
        self._iterator = None
        self._pending = None

    def set_epoch(self, epoch):
        """Build the next iterations with ``seed + epoch`` (call it on every
        rank before each epoch, as ``DistributedSampler.set_epoch``)."""
        self.epoch = _sharding._int_arg(epoch, "epoch")

    def _shard(self):
        """(num_shards, index) of this process and DataLoader worker."""
        info = _torch_data.get_worker_info()
        workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        return self.num_shards * workers, self.index * workers + worker

    def dataset(self):
        """The conveyor ``Dataset`` this process (and DataLoader worker) reads
        in the current epoch."""
        num_shards, index = self._shard()
        return _sharding.ShardedDataset(self._make, num_shards, index, policy=self.policy,
                                        equal=self.equal, num_elements=self.num_elements,
                                        seed=self.seed).dataset(self.epoch)

    def __iter__(self):
        it = self.dataset().as_numpy_iterator()
        if self._pending is not None:
            state, self._pending = self._pending, None
            it.load_state_dict(state)
        self._iterator = it
        return self._generate(it)

    @staticmethod
    def _generate(it):
        for element in it:
            yield to_torch(element)

    def __len__(self):
        """The number of elements this process reads (its shard; all DataLoader
        workers together), when the cardinality is known."""
        if _torch_data.get_worker_info() is not None:
            raise TypeError("len() of the adapter is its length in the main process.")
        return len(self.dataset())

    def state_dict(self):
        """The epoch and the position of the iteration in progress (a dict of
        plain values: ``torch.save`` it with the model)."""
        it = self._iterator
        state = it.state_dict() if it is not None else self._pending
        return {"format": "conveyor.torch.IterableDataset", "epoch": self.epoch,
                "iterator": state}

    def load_state_dict(self, state):
        """Continue the next iteration from `state` (what ``state_dict()`` returned)."""
        if not isinstance(state, dict) or state.get("format") != "conveyor.torch.IterableDataset":
            raise TypeError("load_state_dict() takes the dict that "
                            "conveyor.torch.IterableDataset.state_dict() returned.")
        self.epoch = state["epoch"]
        self._pending = state["iterator"]
        self._iterator = None

    def __getstate__(self):
        if isinstance(self._make, Dataset):
            raise TypeError(
                "A conveyor Dataset cannot be pickled, as DataLoader workers started by spawn "
                "or forkserver need: pass a function seed -> Dataset defined at module level "
                "instead, or DataLoader(..., multiprocessing_context='fork').")
        state = dict(self.__dict__)
        state["_iterator"] = None  # a live engine iterator stays in its process
        return state


def loader(dataset, num_shards=None, index=None, *, policy="auto", equal=None,
           num_elements=None, seed=0):
    """Iterate a conveyor pipeline as torch tensors, in place of a ``DataLoader``.

    ``for batch in conveyor.torch.loader(ds): ...`` gives the elements of this
    rank's shard of `ds` (batched and prefetched by the pipeline itself:
    ``ds.batch(n).prefetch(AUTOTUNE)``) with ``torch.Tensor`` leaves. It
    returns an :class:`IterableDataset` (same arguments), so ``set_epoch``,
    ``state_dict`` and ``load_state_dict`` work on it as on a
    ``StatefulDataLoader``.
    """
    return IterableDataset(dataset, num_shards, index, policy=policy, equal=equal,
                           num_elements=num_elements, seed=seed)
