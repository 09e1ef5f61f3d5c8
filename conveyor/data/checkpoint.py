"""Exact resume: an iterator's position as bytes, and back.

``it.save()`` returns the position of an iterator right after the last element
it returned; ``it2.restore(data)`` puts a new iterator of the same pipeline
(in this process or another) there, so that ``it2`` returns exactly the
elements ``it`` would have returned next: none lost, none repeated, also
with parallel and prefetching stages. ``it.state_dict()`` /
``it.load_state_dict(d)`` are the same in torchdata's naming (a dict that
drops into a PyTorch checkpoint); :class:`conveyor.train.Checkpoint` is the
``tf.train.Checkpoint(iterator=it)`` pattern.

The bytes hold (see docs/resume.md):

* a header: magic, format version, a fingerprint of the pipeline;
* the engine's frames (csrc/core/iterator_state.h): one per iterator of the
  pipeline, with its kernel's position (source cursors, counters, RNG
  counters, and buffer contents only where they cannot be recomputed);
* the element an interrupt (Ctrl-C) held back inside ``next()``, if any;
* a CRC-32 of all of it, so a damaged state raises instead of restoring
  somewhere else.

The fingerprint hashes the pipeline's description: each dataset's class and
arguments, array contents (file lists included; numeric arrays by a fast
128-bit hash in C, cv_hash128), functions' code, and seeds given explicitly.
It is computed when a state is saved or restored (or a snapshot named),
never while iterating: a finished iterator keeps a recipe
(:func:`finished_print`) and hashes it only if its state is saved. Restoring into a pipeline whose fingerprint differs raises
:class:`conveyor.errors.FailedPreconditionError`, as does a state whose
frames do not fit the pipeline.
"""
import hashlib
import io
import struct
import types
import weakref
import zlib

import numpy as np

from conveyor import _engine, errors, nest

__all__ = ["save", "restore", "state_dict", "load_state_dict", "fingerprint"]

_MAGIC = b"conveyor-iterator\0"
_VERSION = 2  # 2: arrays hashed by cv_hash128 in the fingerprint (1: BLAKE2b)
_FINISHED, _HELD = 1, 2
_HEADER = struct.Struct("<I16sB")  # version, fingerprint, flags

# Dataset attributes that are caches or derived values, not the description.
_SKIP = frozenset({"_engine_cache", "_lock", "_element_spec", "_spec", "_probe_spec",
                   "_first_inner", "_first_run", "_handle", "_recorded", "_variants", "_np_dtypes",
                   "_structure_key", "_static_batch", "_flat_shapes", "_flat_values",
                   "_dataset_shape", "_memory", "_store", "_file_spec", "_fingerprint",
                   "base_seed",  # drawn at random when unseeded: its state is the engine's
                   "spec", "flat_specs"})  # a Python function's: set by its first call


def fingerprint(dataset):
    """16 bytes that change when the pipeline's description changes (kept
    on the dataset: a dataset never changes). Computed only when a state is
    saved or restored or a snapshot is named, never on iteration."""
    cached = getattr(dataset, "_fingerprint", None)
    if cached is None:
        h = _Hasher()
        _feed(h, dataset, {})
        cached = h.digest()
        try:
            dataset._fingerprint = cached
        except AttributeError:
            pass
    return cached


def finished_print(dataset):
    """What a finished iterator keeps instead of its dataset (the binding,
    csrc/python/iterator_type.c, calls this when an iterator reaches its
    end): the fingerprint if it is known already, else a :class:`_Recipe`,
    the description walked now with the arrays kept by reference, hashed
    only if the finished state is ever saved. The walk costs what the
    description costs (no array is read); the recipe keeps no dataset and
    no Python callable alive, only the arrays' data."""
    if isinstance(dataset, (bytes, _Recipe)):
        return dataset
    cached = getattr(dataset, "_fingerprint", None)
    if cached is not None:
        return cached
    recipe = _Recipe()
    _feed(recipe, dataset, {})
    return recipe


def _print_of(owner):
    """The fingerprint of what an iterator holds: its dataset, a finished
    iterator's bytes or recipe, or None (no check)."""
    if owner is None or isinstance(owner, bytes):
        return owner
    if isinstance(owner, _Recipe):
        return owner.digest()
    return fingerprint(owner)


_hash_buffer = _engine.hash_buffer  # cv_hash128: one pass, without the GIL
_DIGESTS = {}  # id(array) -> (weakref, digest): read-only arrays only


def _frozen(array):
    """Whether array's bytes cannot change: it and every base it views
    are read-only arrays (or immutable bytes)."""
    while isinstance(array, np.ndarray):
        if array.flags.writeable:
            return False
        array = array.base
    return array is None or isinstance(array, bytes)


def _array_digest(array):
    """16 bytes of the array's contents (the caller feeds its dtype and
    shape). Numbers: cv_hash128 of the C-order bytes; objects (file names,
    strings): the description of each item. Remembered for arrays whose
    bytes cannot change; a writable one is hashed again by each new dataset
    (once: the dataset keeps its fingerprint)."""
    if array.dtype == object:
        h = _Hasher()
        seen = {}
        for item in array.ravel():
            _feed(h, item, seen)
        return h.digest()
    frozen = _frozen(array)
    if frozen:
        entry = _DIGESTS.get(id(array))
        if entry is not None and entry[0]() is array:
            return entry[1]
    digest = _hash_buffer(np.ascontiguousarray(array).reshape(-1).view(np.uint8))
    if frozen:
        key = id(array)
        _DIGESTS[key] = (weakref.ref(array, lambda _, key=key: _DIGESTS.pop(key, None)), digest)
    return digest


class _Hasher:
    """The sink _feed writes to: BLAKE2b over the description, a 16-byte
    digest standing for each array."""

    def __init__(self):
        self._h = hashlib.blake2b(digest_size=16)
        self.update = self._h.update

    def array(self, array):
        self._h.update(_array_digest(array))

    def digest(self):
        return self._h.digest()


class _Recipe:
    """A description walked but not hashed: its bytes, and the arrays in
    their places. digest() equals fingerprint() of the dataset it was
    walked from."""

    __slots__ = ("_parts", "_tail", "_digest")

    def __init__(self):
        self._parts, self._tail, self._digest = [], bytearray(), None

    def update(self, data):
        self._tail += data

    def array(self, array):
        self._parts += [bytes(self._tail), array]
        self._tail = bytearray()

    def digest(self):
        if self._digest is None:
            h = _Hasher()
            for part in self._parts:
                (h.update if isinstance(part, bytes) else h.array)(part)
            h.update(self._tail)
            self._digest = h.digest()
            self._parts = self._tail = None  # the arrays may go now
        return self._digest


def _feed(h, value, seen):
    """Hash value's description into h; seen: id -> index, for shared objects."""
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        h.update(f"{type(value).__name__}:{value!r};".encode())
        return
    if isinstance(value, (bytes, bytearray)):
        h.update(b"bytes:%d:" % len(value))
        h.update(value)
        return
    if isinstance(value, np.generic):
        value = np.asarray(value)
    if isinstance(value, np.ndarray):
        h.update(f"array:{value.dtype.str}:{value.shape};".encode())
        h.array(value)
        return
    if id(value) in seen:  # a dataset or object met before (shared input)
        h.update(b"ref:%d;" % seen[id(value)])
        return
    seen[id(value)] = len(seen)
    if isinstance(value, (list, tuple)):
        h.update(f"{type(value).__name__}:{len(value)}[".encode())
        for item in value:
            _feed(h, item, seen)
        h.update(b"]")
        return
    if isinstance(value, dict):
        h.update(b"dict:%d{" % len(value))
        for key in sorted(value, key=repr):
            _feed(h, key, seen)
            _feed(h, value[key], seen)
        h.update(b"}")
        return
    if isinstance(value, types.FunctionType):
        h.update(f"function:{value.__module__}.{value.__qualname__};".encode())
        _feed_code(h, value.__code__)
        # What the code sees besides its globals: default arguments and the
        # constants it closes over (a scale factor, a vocabulary array, another
        # function). Mutable containers and other objects count by type only:
        # a closure over a counter or a stats dict must not change the pipeline.
        for item in (value.__defaults__ or ()) + tuple(
                (value.__kwdefaults__ or {}).values()):
            _feed_captured(h, item, seen)
        for cell in value.__closure__ or ():
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell
                h.update(b"empty-cell;")
                continue
            _feed_captured(h, contents, seen)
        return
    if isinstance(value, (types.MethodType, types.BuiltinFunctionType, type)):
        h.update(f"{type(value).__name__}:{getattr(value, '__qualname__', '')};".encode())
        return
    if isinstance(value, __import__("functools").partial):
        _feed(h, value.func, seen)
        _feed(h, value.args, seen)
        _feed(h, value.keywords, seen)
        return
    cls = type(value)
    h.update(f"object:{cls.__module__}.{cls.__qualname__};".encode())
    if cls.__module__ == "conveyor.data.options" and cls.__name__ == "Options":
        # Of the options only `deterministic` changes what comes out: threads,
        # autotuning and RAM budgets may differ between the run that saved
        # and the one that restores (another machine). An option that changes
        # the engine's kernels (a fusion) is caught by the frames' names.
        _feed(h, value.deterministic, seen)
        return
    if cls.__module__.startswith("conveyor") and hasattr(value, "__dict__"):
        for key in sorted(vars(value)):
            if key not in _SKIP:
                h.update(key.encode())
                _feed(h, vars(value)[key], seen)


def _feed_captured(h, value, seen):
    """A value a function captures: constants by value, others by type."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes, np.generic,
                                           np.ndarray, types.FunctionType)):
        _feed(h, value, seen)
    elif isinstance(value, tuple):
        h.update(b"captured-tuple:%d[" % len(value))
        for item in value:
            _feed_captured(h, item, seen)
        h.update(b"]")
    elif type(value).__module__.startswith("conveyor"):
        _feed(h, value, seen)  # a dataset, a dtype, a feature spec
    else:
        h.update(f"captured:{type(value).__module__}.{type(value).__qualname__};".encode())


def _feed_code(h, code):
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _feed_code(h, const)
        else:
            h.update(repr(const).encode())


# -- the held-back element: flat leaves as NumPy .npy records (no pickle) ----

def _encode_element(element):
    out = io.BytesIO()
    leaves = nest.flatten(element)
    out.write(struct.pack("<I", len(leaves)))
    for leaf in leaves:
        if isinstance(leaf, bytes):
            out.write(b"b" + struct.pack("<Q", len(leaf)) + leaf)
            continue
        buf = io.BytesIO()
        np.save(buf, np.asarray(leaf), allow_pickle=False)
        scalar = not isinstance(leaf, np.ndarray)
        out.write((b"s" if scalar else b"a") + struct.pack("<Q", buf.tell()) + buf.getvalue())
    return out.getvalue()


def _corrupt(what):
    return errors.DataLossError(None, None, f"corrupt iterator state: {what}")


def _decode_element(data, structure):
    """The held-back element; any malformed byte is DataLossError (a state can
    be forged with a correct CRC: nothing here trusts a length or a header)."""
    try:
        leaves = _decode_leaves(data)
        if structure is None:
            return leaves[0] if len(leaves) == 1 else tuple(leaves)
        return nest.pack_sequence_as(structure, leaves)
    except errors.DataLossError:
        raise
    except Exception as e:  # NumPy's header parser, nest: a shape they refuse
        raise _corrupt(f"held element: {type(e).__name__}: {e}") from None


def _decode_leaves(data):
    if len(data) < 4:
        raise _corrupt("held element cut short")
    (count,) = struct.unpack_from("<I", data)
    if count > (len(data) - 4) // 9:
        raise _corrupt(f"held element of {count} leaves in {len(data)} bytes")
    pos, leaves = 4, []
    for _ in range(count):
        if len(data) - pos < 9:
            raise _corrupt("held element cut short")
        kind = data[pos:pos + 1]
        (size,) = struct.unpack_from("<Q", data, pos + 1)
        if kind not in (b"b", b"s", b"a") or size > len(data) - pos - 9:
            raise _corrupt(f"held element: leaf kind {kind!r}, {size} bytes")
        raw = data[pos + 9:pos + 9 + size]
        pos += 9 + size
        leaves.append(bytes(raw) if kind == b"b" else _decode_npy(raw, kind == b"s"))
    if pos != len(data):
        raise _corrupt("bytes are left after the held element")
    return leaves


def _decode_npy(raw, scalar):
    """A .npy record (what np.save wrote, no pickle); its sizes are checked
    against the bytes before any array is made."""
    from numpy.lib import format as npy
    f = io.BytesIO(raw)
    major, _ = npy.read_magic(f)
    if major not in (1, 2, 3):
        raise _corrupt(f"held element: .npy version {major}")
    read = npy.read_array_header_1_0 if major == 1 else npy.read_array_header_2_0
    shape, fortran, dtype = read(f)
    if dtype.hasobject or dtype.itemsize == 0 or (scalar and shape != ()):
        raise _corrupt(f"held element: array of {dtype} {shape}")
    count = 1
    for dim in shape:
        count *= dim
    if count * dtype.itemsize != len(raw) - f.tell():
        raise _corrupt(f"held element: {dtype} {shape} in {len(raw) - f.tell()} bytes")
    array = np.frombuffer(raw, dtype, count, f.tell()).reshape(shape, order="F" if fortran else "C")
    array = array.copy(order="K")  # writable, as np.load's
    return array[()] if scalar else array


# -- the API ----------------------------------------------------------------

def save(iterator, dataset):
    """The bytes of ``iterator.save()``."""
    engine = iterator._save_engine()
    flags, held = 0, b""
    if engine is None:
        flags, engine = _FINISHED, b""
    element = iterator._held()
    if element is not None:
        flags |= _HELD
        held = _encode_element(element)
    # dataset: the Python dataset, or (once the iterator finished) its
    # fingerprint or recipe (finished_print), or None.
    print_ = _print_of(dataset) or bytes(16)
    body = (_MAGIC + _HEADER.pack(_VERSION, print_, flags) + struct.pack("<Q", len(held)) + held
            + engine)
    return body + struct.pack("<I", zlib.crc32(body))


def _parse(data):
    """(fingerprint, flags, held bytes, engine bytes) of a state; every field a
    forged state could get wrong raises DataLossError (FailedPreconditionError
    for a format version this conveyor does not read)."""
    data = bytes(data)
    fixed = len(_MAGIC) + _HEADER.size + 8 + 4
    if len(data) < fixed or not data.startswith(_MAGIC):
        raise _corrupt("not a conveyor iterator state (no header)")
    (crc,) = struct.unpack_from("<I", data, len(data) - 4)
    if zlib.crc32(data[:-4]) != crc:
        raise _corrupt("checksum mismatch (the bytes were damaged or cut short)")
    version, print_, flags = _HEADER.unpack_from(data, len(_MAGIC))
    if version == 1:
        raise errors.FailedPreconditionError(
            None, None, "iterator state format 1 was saved by an older conveyor, whose pipeline "
            "fingerprint hashed arrays differently; this conveyor reads format 2. Restart the "
            "iterator from the beginning (or restore with the conveyor that saved it).")
    if version != _VERSION:
        raise errors.FailedPreconditionError(
            None, None, f"iterator state format {version} is not supported (this conveyor reads "
            f"format {_VERSION})")
    if flags & ~(_FINISHED | _HELD):
        raise _corrupt(f"unknown flags {flags:#x}")
    pos = len(_MAGIC) + _HEADER.size
    (held_len,) = struct.unpack_from("<Q", data, pos)
    pos += 8
    if held_len > len(data) - 4 - pos:
        raise _corrupt("held element too long")
    if bool(held_len) != bool(flags & _HELD):
        raise _corrupt(f"{held_len} bytes of held element with flags {flags:#x}")
    held = data[pos:pos + held_len]
    engine = data[pos + held_len:-4]
    if bool(flags & _FINISHED) == bool(engine):
        raise _corrupt("a finished state with engine frames, or an unfinished one without")
    return print_, flags, held, engine


def restore(iterator, dataset, data):
    """``iterator.restore(data)``. Everything is parsed before the engine is
    touched, and a failed engine restore leaves a fresh iterator (the binding's
    _restore_engine), so any error leaves the iterator as iter(dataset) made it."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"restore() takes the bytes that save() returned, not {type(data).__name__}")
    print_, flags, held, engine = _parse(data)
    current = _print_of(dataset)
    if current is not None and print_ != bytes(16) and print_ != current:
        raise errors.FailedPreconditionError(
            None, None, "the saved iterator state is of a different pipeline: its fingerprint "
            "(ops, arguments, file lists, functions, seeds) does not match this one. Rebuild the "
            "same pipeline to restore into it.")
    element = None
    if flags & _HELD:
        structure = (None if dataset is None or isinstance(dataset, (bytes, _Recipe))
                     else dataset.element_spec)
        element = _decode_element(held, structure)
    iterator._restore_engine(None if flags & _FINISHED else engine)
    if flags & _HELD:
        iterator._hold(element)


def state_dict(iterator, dataset):
    """``iterator.state_dict()``: a dict of plain values (torch.save-able)."""
    return {"format": "conveyor.data.Iterator", "version": _VERSION,
            "state": save(iterator, dataset)}


def load_state_dict(iterator, dataset, state):
    """``iterator.load_state_dict(state)``."""
    if not isinstance(state, dict) or "state" not in state:
        raise TypeError("load_state_dict() takes the dict that state_dict() returned")
    restore(iterator, dataset, state["state"])
