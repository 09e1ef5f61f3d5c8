"""``Dataset.cache`` (CacheDataset), in memory or in a file, with its hooks:
``CacheWarning``, the progress bars (tqdm, optional) and the element spec
stored in cache files."""
import array
import collections
import importlib
import json
import warnings

from conveyor import _engine
from conveyor.framework import progress as _progress
from conveyor import dtypes as _dtypes
from conveyor import errors as _errors
from conveyor import nest
from conveyor.data.ops.dataset_base import UnaryUnchangedStructureDataset
from conveyor.tensor_spec import TensorSpec

__all__ = ["CacheDataset", "CacheWarning"]


class CacheWarning(UserWarning):
    """``Dataset.cache`` discarded a partial pass, or could not write its file."""


_TRUNCATION = {"warn": 0, "error": 1, "ignore": 2}  # io/record_reader.h: CvTruncation
_CACHE_PROGRESS_DELAY = 1.0  # seconds of filling before a bar appears


def set_cache_progress(enabled):
    # the one switch of every progress bar (conveyor/framework/progress.py)
    _progress.set_enabled(enabled)


tqdm_class = _progress.tqdm_class


def _cache_warn(message):
    warnings.warn(message, CacheWarning, stacklevel=2)


class _CacheHooks:
    """A store's progress bar (one tqdm bar per filling pass, keyed by the
    engine's token) and its element spec for the file, as bound methods.

    The garbage collector may clear this object while the engine still
    calls its hooks: the store of an inner dataset (interleave) is held by
    the engine only and reports them (its traverse), so a collection that
    finds the pipeline unreachable clears them before the pipeline's
    teardown, which may end a pass (a finished bar, the file's spec). It
    never clears the methods' code or globals, which this module holds (a
    cleared closure would crash the interpreter when called): a hook that
    finds its attributes gone does nothing."""

    def __init__(self, label, input_dataset):
        self.label = label
        self.input_dataset = input_dataset
        self.bars = {}

    def progress(self, token, elements, nbytes, total, state):
        bars, label = getattr(self, "bars", None), getattr(self, "label", None)
        if bars is None or label is None:
            return
        bar = bars.get(token)
        if bar is None:
            if state != 0 or not _progress.active():
                return
            bar = bars[token] = _progress.bar(total if total >= 0 else None, label,
                                              " elements", unit_scale=True)
        bar.set_postfix_str(f"{nbytes / 2**20:.1f} MiB", refresh=False)
        bar.update(elements - bar.n)
        if state != 0:
            if state == 2:
                bar.set_description_str(label + " (discarded)", refresh=False)
            bar.close()
            del bars[token]

    def describe(self):
        input_dataset = getattr(self, "input_dataset", None)
        spec = None if input_dataset is None else input_dataset._known_spec()
        return None if spec is None else _encode_structure(spec)


def _flat_component_specs(spec):
    """The spec's TensorSpec leaves as the engine's int64s (per leaf: dtype
    code, rank or -1, each dim or -1), or None when a leaf is not one."""
    out = []
    for leaf in nest.flatten(spec):
        if not isinstance(leaf, TensorSpec):
            return None
        dims = leaf.shape.dims
        out += [leaf.dtype._code, -1] if dims is None else [
            leaf.dtype._code, len(dims), *(-1 if d is None else d for d in dims)]
    return array.array("q", out)


class _Unencodable(Exception):
    pass


def _encode_structure(spec):
    """The element spec as JSON bytes, stored in cache files (None if it cannot be)."""
    def enc(s):
        if isinstance(s, TensorSpec):
            return {"t": "spec", "dtype": s.dtype.name, "shape": s.shape.dims}
        if type(s) is dict:
            keys = list(s)
            if not all(type(k) in (str, int) for k in keys):
                raise _Unencodable
            return {"t": "dict", "keys": keys, "values": [enc(s[k]) for k in keys]}
        if isinstance(s, tuple) and hasattr(type(s), "_fields"):
            return {"t": "namedtuple", "module": type(s).__module__,
                    "name": type(s).__qualname__, "fields": list(type(s)._fields),
                    "values": [enc(v) for v in s]}
        if type(s) is tuple:
            return {"t": "tuple", "values": [enc(v) for v in s]}
        raise _Unencodable

    try:
        return json.dumps({"conveyor_element_spec": 1, "spec": enc(spec)}).encode()
    except (_Unencodable, TypeError, ValueError):
        return None


def _namedtuple_type(module, name, fields):
    try:
        obj = importlib.import_module(module)
        for part in name.split("."):
            obj = getattr(obj, part)
        if isinstance(obj, type) and issubclass(obj, tuple) and list(obj._fields) == fields:
            return obj
    except Exception:  # noqa: BLE001 - any failure: rebuild the type
        pass
    return collections.namedtuple(name.rsplit(".", 1)[-1], fields)


def _decode_structure(blob):

    def dec(d):
        t = d["t"]
        if t == "spec":
            return TensorSpec(d["shape"], _dtypes.as_dtype(d["dtype"]))
        values = [dec(v) for v in d["values"]]
        if t == "dict":
            return dict(zip(d["keys"], values))
        if t == "namedtuple":
            return _namedtuple_type(d["module"], d["name"], d["fields"])(*values)
        if t == "tuple":
            return tuple(values)
        raise ValueError(t)

    try:
        doc = json.loads(blob.decode())
        return dec(doc["spec"]) if doc.get("conveyor_element_spec") == 1 else None
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        return None


class CacheDataset(UnaryUnchangedStructureDataset):
    def _probe_engine(self, ctx):
        return self._engine(ctx)  # one cache store per pipeline, probes included

    def __init__(self, input_dataset, filename, on_truncation="warn"):
        super().__init__(input_dataset)
        self._filename = filename
        self._file_spec = None
        # The hooks may outlive this object (an iterator keeps only the engine's
        # datasets), and must not refer to it (the store it holds would form a cycle
        # that the garbage collector cannot see through the capsule).
        hooks = _CacheHooks(f"cache {filename}" if filename else "cache (memory)", input_dataset)
        self._store = _engine.cache_store(filename or None,
                                          (_cache_warn, hooks.progress, hooks.describe),
                                          _CACHE_PROGRESS_DELAY, _TRUNCATION[on_truncation])

    def _build(self, ctx, engine_inputs):
        spec = self._inputs[0]._known_spec()
        expected = None if spec is None else _flat_component_specs(spec)
        return _engine.cache(engine_inputs[0], store=self._store, expected=expected,
                             memory=ctx.memory)

    def _spec_from_file(self):
        """The element spec stored in the committed cache file, if there is one."""
        if self._file_spec is None and self._filename:
            try:
                structure = _engine.cache_file_structure(self._store)
            except (_errors.OpError, OSError):
                structure = None  # iterating reports the damaged file
            if structure:
                self._file_spec = _decode_structure(structure)
        return self._file_spec

    def _known_spec(self):
        spec = self._inputs[0]._known_spec()
        return spec if spec is not None else self._spec_from_file()

    def _derive_spec(self):
        spec = self._known_spec()
        return spec if spec is not None else self._inputs[0].element_spec
