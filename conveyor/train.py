"""``tf.train``: ``Checkpoint`` for iterators, and the ``Example`` messages, without TensorFlow.

``import conveyor as tf`` then::

    ckpt = tf.train.Checkpoint(iterator=it)      # any name; several objects
    path = ckpt.save("/ckpt/run")                 # "/ckpt/run-1", then -2, ...
    ...
    it = iter(make_dataset())                     # a new process, the same pipeline
    tf.train.Checkpoint(iterator=it).restore(tf.train.latest_checkpoint("/ckpt"))

Tracked objects are conveyor iterators (anything with ``save()`` and
``restore(bytes)``) and ``conveyor.Variable``s (a step counter beside the
iterator). ``CheckpointManager`` numbers saves and keeps the newest few. One checkpoint is one file, ``<prefix>.cvckpt``, written
to a temporary name and renamed, so a crash mid-save leaves the previous one
intact. TensorFlow's checkpoint files (``.index`` / ``.data-*``) are neither
read nor written: a checkpoint of a TensorFlow model lives beside this one.

``tf.train.Example``, ``Features``, ``Feature``, ``BytesList``, ``FloatList``,
``Int64List``, ``SequenceExample``, ``FeatureList`` and ``FeatureLists`` are
plain Python classes with protobuf's message API (see
``conveyor.proto.example_pb``); ``DecodeError`` is what ``FromString`` raises on
bytes that are not a message.
"""
import os
import re
import struct
import zlib

from conveyor import errors
from conveyor.proto.example_pb import (BytesList, DecodeError, Example, Feature, FeatureList,
                                       FeatureLists, Features, FloatList, Int64List,
                                       SequenceExample)

__all__ = ["Checkpoint", "CheckpointManager", "latest_checkpoint", "Example", "Features", "Feature", "BytesList",
           "FloatList", "Int64List", "SequenceExample", "FeatureList", "FeatureLists",
           "DecodeError"]

_MAGIC = b"conveyor-checkpoint\0"
_SUFFIX = ".cvckpt"


class _LoadStatus:
    """What ``Checkpoint.restore`` returns (tf.train's CheckpointLoadStatus)."""

    def __init__(self, restored, missing):
        self._restored, self._missing = restored, missing

    def assert_consumed(self):
        if self._missing:
            raise AssertionError(f"objects not in the checkpoint: {sorted(self._missing)}")
        return self

    def assert_existing_objects_matched(self):
        return self.assert_consumed()

    def expect_partial(self):
        return self


def _state_of(obj):
    save = getattr(obj, "_checkpoint_state", None) or obj.save
    return save()


def _restore_into(obj, data):
    restore = getattr(obj, "_restore_checkpoint_state", None) or obj.restore
    restore(data)


def _checkpointable(obj):
    if callable(getattr(obj, "_checkpoint_state", None)):
        return True
    return callable(getattr(obj, "save", None)) and callable(getattr(obj, "restore", None))


class Checkpoint:
    """Saves and restores the positions of iterators (and ``Variable``s), as
    ``tf.train.Checkpoint``."""

    def __init__(self, **objects):
        for name, obj in objects.items():
            if not _checkpointable(obj):
                raise ValueError(f"Checkpoint: {name}={type(obj).__name__} cannot be checkpointed "
                                 "(conveyor checkpoints iterators, iter(dataset), and "
                                 "conveyor.Variable)")
        self._objects = dict(objects)
        self.save_counter = 0

    def write(self, file_prefix):
        """Write the objects' state to ``file_prefix + '.cvckpt'``; returns file_prefix."""
        file_prefix = os.fspath(file_prefix)
        body = bytearray(_MAGIC + struct.pack("<I", len(self._objects)))
        for name, obj in sorted(self._objects.items()):
            key, data = name.encode(), _state_of(obj)
            body += struct.pack("<I", len(key)) + key + struct.pack("<Q", len(data)) + data
        body += struct.pack("<I", zlib.crc32(body))
        path = file_prefix + _SUFFIX
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return file_prefix

    def save(self, file_prefix):
        """``write`` to ``file_prefix-N`` with N counting saves; returns that path."""
        self.save_counter += 1
        return self.write(f"{os.fspath(file_prefix)}-{self.save_counter}")

    def read(self, save_path):
        """Restore the objects saved at save_path (a prefix that write/save returned)."""
        path = os.fspath(save_path)
        if not path.endswith(_SUFFIX):
            path += _SUFFIX
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise errors.NotFoundError(None, None, f"no checkpoint at {save_path!r} ({path})") from None
        states = _parse(data, path)
        for name, obj in self._objects.items():
            if name in states:
                _restore_into(obj, states[name])
        missing = set(self._objects) - set(states)
        match = re.search(r"-(\d+)$", os.fspath(save_path))
        if match:
            self.save_counter = max(self.save_counter, int(match.group(1)))
        return _LoadStatus(set(states), missing)

    def restore(self, save_path):
        """As ``read``; None (no checkpoint yet) restores nothing, as TensorFlow's."""
        if save_path is None:
            return _LoadStatus(set(), set())
        return self.read(save_path)


def _parse(data, path):
    fixed = len(_MAGIC) + 8
    if len(data) < fixed or not data.startswith(_MAGIC):
        raise errors.DataLossError(None, None, f"{path}: not a conveyor checkpoint")
    (crc,) = struct.unpack_from("<I", data, len(data) - 4)
    if zlib.crc32(data[:-4]) != crc:
        raise errors.DataLossError(None, None, f"{path}: checkpoint damaged (checksum mismatch)")
    (count,) = struct.unpack_from("<I", data, len(_MAGIC))
    pos, states = len(_MAGIC) + 4, {}
    for _ in range(count):
        (n,) = struct.unpack_from("<I", data, pos)
        name = data[pos + 4:pos + 4 + n].decode()
        (size,) = struct.unpack_from("<Q", data, pos + 4 + n)
        start = pos + 12 + n
        states[name] = data[start:start + size]
        pos = start + size
    return states


def latest_checkpoint(checkpoint_dir):
    """The prefix of the newest ``save()`` in checkpoint_dir, or None."""
    best, best_n = None, -1
    try:
        names = os.listdir(checkpoint_dir)
    except FileNotFoundError:
        return None
    for name in names:
        match = re.fullmatch(r"(.*)-(\d+)" + re.escape(_SUFFIX), name)
        if match and int(match.group(2)) > best_n:
            best, best_n = os.path.join(checkpoint_dir, name[:-len(_SUFFIX)]), int(match.group(2))
    return best


class CheckpointManager:
    """Numbered saves of a ``Checkpoint`` in one directory, keeping the newest
    `max_to_keep` (None: all), as ``tf.train.CheckpointManager``.

    ``save()`` writes ``<directory>/<checkpoint_name>-<N>`` and returns that
    prefix; ``latest_checkpoint`` is the newest (also after a restart: the
    directory is scanned when the manager is made), ``checkpoints`` the kept
    ones, oldest first.
    """

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt", step_counter=None, checkpoint_interval=None,
                 init_fn=None):
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"CheckpointManager needs a conveyor.train.Checkpoint, got "
                            f"{type(checkpoint).__name__}")
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError(f"Expected a positive integer or `None` for `max_to_keep`, got "
                             f"{max_to_keep}.")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._checkpoints = self._existing()
        if self._checkpoints:
            last = int(self._checkpoints[-1].rsplit("-", 1)[1])
            checkpoint.save_counter = max(checkpoint.save_counter, last)

    def _existing(self):
        try:
            names = os.listdir(self._directory)
        except FileNotFoundError:
            return []
        base = os.path.basename(self._prefix)
        found = []
        for name in names:
            match = re.fullmatch(re.escape(base) + r"-(\d+)" + re.escape(_SUFFIX), name)
            if match:
                found.append((int(match.group(1)), os.path.join(self._directory,
                                                                name[:-len(_SUFFIX)])))
        return [path for _, path in sorted(found)]

    @property
    def directory(self):
        return self._directory

    @property
    def checkpoints(self):
        return list(self._checkpoints)

    @property
    def latest_checkpoint(self):
        return self._checkpoints[-1] if self._checkpoints else None

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        """Save a new numbered checkpoint (number `checkpoint_number`, else the
        next); deletes the oldest beyond max_to_keep. Returns its prefix."""
        if checkpoint_number is None:
            path = self._checkpoint.save(self._prefix)
        else:
            path = self._checkpoint.write(f"{self._prefix}-{int(checkpoint_number)}")
        if path in self._checkpoints:
            self._checkpoints.remove(path)
        self._checkpoints.append(path)
        while self._max_to_keep is not None and len(self._checkpoints) > self._max_to_keep:
            old = self._checkpoints.pop(0)
            try:
                os.remove(old + _SUFFIX)
            except FileNotFoundError:
                pass
        return path

    def restore_or_initialize(self):
        """Restore the latest checkpoint, if any; returns its prefix or None."""
        latest = self.latest_checkpoint
        if latest is not None:
            self._checkpoint.restore(latest)
        return latest
