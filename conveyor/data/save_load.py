"""Datasets to and from files beyond the readers: ``Dataset.save`` /
``Dataset.load`` (put on the Dataset class when this module is imported, as
``conveyor.data`` does: they build on the readers, which build on Dataset), ``tf.data.experimental.TFRecordWriter``,
``make_batched_features_dataset``, and ``group_by_reducer``.

``save`` writes conveyor's own layout, not tf.data's snapshot format (which
only TensorFlow reads): a directory with ``element_spec.json`` and one
TFRecord file per shard (``shard-00000.tfrecord`` ...), each record one
element as the TensorProto bytes of its components (``tf.io.serialize_tensor``)
behind their lengths. ``load`` reads it back with TFRecordDataset and a
Python map (docs/differences.md).
"""
import json
import os

import numpy as np

from conveyor.io import gfile as _gfile
from conveyor import dtypes as _dtypes
from conveyor import errors, nest
from conveyor.data.dataset import Dataset, _add_methods
from conveyor.data.readers import TFRecordDataset
from conveyor.io import tfrecord as _tfrecord
from conveyor.io._tensor_proto import parse_tensor, serialize_tensor
from conveyor.tensor_spec import TensorShape, TensorSpec
from conveyor.framework.tracing import Tensor, _PlainPython
from conveyor.proto.wire import _read_varint, _varint

__all__ = ["save", "load", "TFRecordWriter", "make_batched_features_dataset", "Reducer",
           "group_by_reducer"]

_SPEC_FILE = "element_spec.json"


# -- element specs as JSON --------------------------------------------------------

def _spec_to_json(spec):
    if isinstance(spec, TensorSpec):
        return {"tensor": spec.dtype.name, "shape": spec.shape.as_list()
                if spec.shape.rank is not None else None}
    if isinstance(spec, dict):
        return {"dict": [[k, _spec_to_json(v)] for k, v in spec.items()]}
    if isinstance(spec, tuple) and hasattr(spec, "_fields"):
        raise TypeError("Dataset.save: namedtuple elements are not supported (use a dict)")
    if isinstance(spec, (tuple, list)):
        return {"tuple" if isinstance(spec, tuple) else "list": [_spec_to_json(s) for s in spec]}
    raise TypeError(f"Dataset.save: components of type {spec!r} are not supported")


def _spec_from_json(obj):
    if "tensor" in obj:
        return TensorSpec(TensorShape(obj["shape"]), _dtypes.as_dtype(obj["tensor"]))
    if "dict" in obj:
        return {k: _spec_from_json(v) for k, v in obj["dict"]}
    if "tuple" in obj:
        return tuple(_spec_from_json(s) for s in obj["tuple"])
    return [_spec_from_json(s) for s in obj["list"]]


# -- save / load ----------------------------------------------------------------------

def _encode_element(element):
    parts = [bytes(serialize_tensor(leaf)) for leaf in nest.flatten(element)]
    return b"".join(_varint(len(p)) + p for p in parts)


def _compression(compression):
    if compression not in (None, "", "GZIP", "ZLIB"):
        raise ValueError(f"compression must be None, 'GZIP' or 'ZLIB', got {compression!r}")
    return compression or None


def save(dataset, path, compression=None, shard_func=None, checkpoint_args=None):
    """``dataset.save(path)``: write every element under directory `path`."""
    compression = _compression(compression)
    if checkpoint_args is not None:
        raise errors.UnimplementedError(None, None, "Dataset.save: checkpoint_args is not "
                                        "supported; the save runs in one pass")
    path = os.fspath(path)
    spec = dataset.element_spec
    spec_json = _spec_to_json(spec)
    _gfile.makedirs(path)
    writers = {}
    try:
        for element in dataset.as_numpy_iterator():
            shard = 0
            if shard_func is not None:
                shard = int(np.asarray(shard_func(*element) if type(element) is tuple
                                       else shard_func(element)))
                if shard < 0:
                    raise errors.InvalidArgumentError(
                        f"Dataset.save: shard_func returned {shard}, a negative shard index")
            writer = writers.get(shard)
            if writer is None:
                writer = writers[shard] = _tfrecord.TFRecordWriter(
                    _gfile.join(path, f"shard-{shard:05d}.tfrecord"), compression)
            writer.write(_encode_element(element))
    finally:
        for writer in writers.values():
            writer.close()
    meta = {"format": "conveyor.data.save", "version": 1, "element_spec": spec_json,
            "compression": compression, "shards": sorted(writers)}
    with _gfile.GFile(_gfile.join(path, _SPEC_FILE), "w") as f:  # appears whole at close
        f.write(json.dumps(meta))


def _decoder(specs, structure):
    dtypes = [s.dtype for s in specs]

    def decode(record):
        data = record.numpy() if hasattr(record, "numpy") else record
        data = bytes(data)
        pos, leaves = 0, []
        for dtype in dtypes:
            n, pos = _read_varint(data, pos, len(data))
            leaves.append(parse_tensor(data[pos:pos + n], dtype))
            pos += n
        if pos != len(data) or len(leaves) != len(dtypes):
            raise errors.DataLossError(None, None, "Dataset.load: a damaged record")
        return nest.pack_sequence_as(structure, leaves)
    return decode


def load(path, element_spec=None, compression=None, reader_func=None):
    """``Dataset.load(path)``: the elements ``Dataset.save`` wrote under `path`,
    with the saved element spec (shapes included)."""
    path = os.fspath(path)
    try:
        with _gfile.GFile(_gfile.join(path, _SPEC_FILE)) as f:
            meta = json.loads(f.read())
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"Dataset.load: {path!r} holds no saved dataset "
                                   f"(no {_SPEC_FILE}; was the save finished?)") from None
    if meta.get("format") != "conveyor.data.save":
        raise errors.InvalidArgumentError(f"Dataset.load: {path!r} is not a conveyor save")
    spec = _spec_from_json(meta["element_spec"])
    if element_spec is not None:
        nest.assert_same_structure(element_spec, spec)
    if reader_func is not None:
        raise errors.UnimplementedError(None, None, "Dataset.load: reader_func is not supported; "
                                        "the shards are read in order")
    if not meta["shards"]:
        return Dataset.from_generator(lambda: iter(()), output_signature=spec)
    files = [_gfile.join(path, f"shard-{s:05d}.tfrecord") for s in meta["shards"]]
    compression = meta.get("compression") if compression is None else _compression(compression)
    decode = _PythonDecode(_decoder(nest.flatten(spec), spec))
    loaded = TFRecordDataset(files, compression_type=compression).map(decode)
    return loaded.map(_StaticShapes(spec))


class _PythonDecode:
    """The records' decoding: Python (parse_tensor is), called per element."""

    __name__ = "Dataset.load"

    def __init__(self, decode):
        self._decode = decode

    def __call__(self, record):
        if isinstance(record, Tensor):  # tracing: run per element, deliberately
            raise _PlainPython("Dataset.load decodes its records in Python")
        return self._decode(record)


class _StaticShapes:
    """A traced map giving the decoded elements the saved static shapes."""

    __name__ = "Dataset.load"

    def __init__(self, spec):
        self._spec = spec

    def __call__(self, *args):
        from conveyor.ops.array_ops import ensure_shape
        element = args if type(self._spec) is tuple else args[0]
        return nest.map_structure(lambda t, s: ensure_shape(t, s.shape), element, self._spec)


# -- tf.data.experimental.TFRecordWriter ------------------------------------------

class TFRecordWriter:
    """Writes a dataset of scalar strings to a TFRecord file
    (``tf.data.experimental.TFRecordWriter``): ``TFRecordWriter(filename,
    compression_type=None).write(dataset)`` writes every element, in order."""

    def __init__(self, filename, compression_type=None):
        self._filename = os.fspath(filename)
        self._compression = _compression(compression_type)

    def write(self, dataset):
        if not isinstance(dataset, Dataset):
            raise TypeError(f"Invalid `dataset.` Expected a `tf.data.Dataset` object but got "
                            f"{type(dataset)}.")
        spec = dataset.element_spec
        if not (isinstance(spec, TensorSpec) and spec.dtype == _dtypes.string
                and spec.shape.rank in (0, None)):
            raise TypeError(f"Invalid `dataset`. `dataset` should produce scalar `string` "
                            f"elements, but got {spec}.")
        with _tfrecord.TFRecordWriter(self._filename, self._compression) as writer:
            for record in dataset.as_numpy_iterator():
                writer.write(record)


# -- make_batched_features_dataset -------------------------------------------------

def make_batched_features_dataset(file_pattern, batch_size, features, reader=None,
                                  label_key=None, reader_args=None, num_epochs=None,
                                  shuffle=True, shuffle_buffer_size=10000, shuffle_seed=None,
                                  prefetch_buffer_size=None, reader_num_threads=None,
                                  parser_num_threads=None, sloppy_ordering=False,
                                  drop_final_batch=False):
    """Batches of parsed ``Example`` records from the files matching
    `file_pattern`, as tf.data's: the files (sorted unless `shuffle`), read
    `reader_num_threads` at a time (default 1), shuffled (`shuffle`), repeated
    `num_epochs` times (None: forever), batched, parsed with `features` by
    ``parse_example`` (natively), with `label_key` popped into ``(features,
    label)``, and prefetched."""
    from conveyor.data.dataset import AUTOTUNE
    from conveyor.io.example import parse_example
    reader = TFRecordDataset if reader is None else reader
    reader_args = list(reader_args or [])
    if label_key is not None and label_key not in features:
        raise ValueError(f"The `label_key` provided ({label_key}) must be one of the "
                         f"`features` keys.")
    files = Dataset.list_files(file_pattern, shuffle=shuffle, seed=shuffle_seed)
    threads = 1 if reader_num_threads in (None, 0) else reader_num_threads
    if threads == 1:
        dataset = files.flat_map(lambda f: reader(f, *reader_args))
    else:
        dataset = files.interleave(lambda f: reader(f, *reader_args), cycle_length=threads,
                                   num_parallel_calls=threads,
                                   deterministic=not sloppy_ordering)
    if shuffle:
        dataset = dataset.shuffle(shuffle_buffer_size, seed=shuffle_seed)
    if num_epochs != 1:
        dataset = dataset.repeat(num_epochs)
    dataset = dataset.batch(batch_size, drop_remainder=drop_final_batch)

    def parse(serialized):
        parsed = parse_example(serialized, features)
        if label_key is None:
            return parsed
        label = parsed.pop(label_key)
        return parsed, label
    dataset = dataset.map(parse, num_parallel_calls=parser_num_threads or AUTOTUNE)
    return dataset.prefetch(prefetch_buffer_size or AUTOTUNE)


# -- group_by_reducer ------------------------------------------------------------------

class Reducer:
    """How ``group_by_reducer`` folds a group (``tf.data.experimental.Reducer``):
    ``init_func(key)`` makes a group's first state, ``reduce_func(state,
    element)`` the next, ``finalize_func(state)`` the group's element."""

    def __init__(self, init_func, reduce_func, finalize_func):
        self._init_func = init_func
        self._reduce_func = reduce_func
        self._finalize_func = finalize_func

    @property
    def init_func(self):
        return self._init_func

    @property
    def reduce_func(self):
        return self._reduce_func

    @property
    def finalize_func(self):
        return self._finalize_func


def _call(fn, element):
    return fn(*element) if type(element) is tuple else fn(element)


def group_by_reducer(key_func, reducer):
    """A transformation (for ``Dataset.apply``) that groups the elements by
    ``key_func(element)`` (a scalar int64) and yields one element per group,
    ``finalize_func`` of its reduced state, once the input has ended, groups in
    the order their keys first appeared. The reduction runs in Python on the
    consumer's thread (docs/differences.md)."""
    def _apply_fn(dataset):
        def groups():
            states = {}
            for element in dataset:
                key = np.asarray(_call(key_func, element))
                if key.shape != () or key.dtype != np.int64:
                    raise errors.InvalidArgumentError(
                        f"group_by_reducer: key_func must return a scalar int64, got "
                        f"{key.dtype}{list(key.shape)}")
                key = int(key)
                state = states[key] if key in states else reducer.init_func(np.int64(key))
                states[key] = reducer.reduce_func(state, element)
            for state in states.values():
                yield reducer.finalize_func(state)

        probe = reducer.finalize_func(reducer.init_func(np.int64(0)))
        signature = nest.map_structure(
            lambda leaf: TensorSpec([None] * np.ndim(leaf), _dtypes.as_dtype(
                np.asarray(leaf).dtype if not isinstance(leaf, (bytes, str)) else object)),
            probe)
        return Dataset.from_generator(groups, output_signature=signature)
    return _apply_fn


# -- Dataset.save / Dataset.load ----------------------------------------------------

class _SaveLoadMethods:
    def save(self, path, compression=None, shard_func=None, checkpoint_args=None):
        """Write every element under directory `path`, for ``Dataset.load``.

        `compression`: None, ``"GZIP"`` or ``"ZLIB"``. `shard_func(element)`
        (a Python function returning an int) picks each element's shard file;
        default one. The layout is conveyor's own (docs/differences.md); the
        spec file is written last, so a crashed save is not loadable.
        """
        save(self, path, compression, shard_func, checkpoint_args)

    @staticmethod
    def load(path, element_spec=None, compression=None, reader_func=None):
        """The dataset that ``save`` wrote under `path`, with its element spec
        (the shards in order; `element_spec`, when given, must match)."""
        return load(path, element_spec, compression, reader_func)


_add_methods(_SaveLoadMethods, Dataset)
