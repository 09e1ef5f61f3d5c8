"""``conveyor.io.gfile``: ``tf.io.gfile`` over the engine's file-system layer.

Every function takes a local path, a ``file://`` URL or a URL of any scheme the
engine knows (``gs://``, ``s3://``, ``http(s)://`` read-only, and whatever
fsspec implements, when it is installed). Errors are conveyor's
``tf.errors`` classes: a missing path raises ``NotFoundError`` (also a
``FileNotFoundError``), as TensorFlow does.

Differences from TensorFlow, all deliberate: a file written through
``GFile(..., "w")`` appears under its name only complete, at ``close()``,
locally too (it is written to a temporary name and renamed), so ``flush()``
does not make it visible early; ``listdir`` and ``glob`` return sorted lists.
"""
import operator as _operator
import os as _os

from conveyor import _engine
from conveyor import errors as _errors

__all__ = ["GFile", "copy", "exists", "glob", "isdir", "join", "listdir", "makedirs", "mkdir",
           "remove", "rename", "rmtree", "stat", "walk"]


def _path(p):
    p = _os.fspath(p)
    return p.decode() if isinstance(p, bytes) else p


def _is_url(path):
    return "://" in path[1:]


class _EngineFile:
    """An open file of the engine's file-system layer (csrc/python/fs.c: its
    handle). Used by one thread at a time: a second thread calling while a
    call is in flight gets RuntimeError (the engine checks too)."""
    __slots__ = ("_handle", "_closed", "_busy")

    def _open(self, url, mode):
        """Open `url` ('r', 'w' or 'a'); returns its size (-1: unknown or writing)."""
        self._handle, size = _engine.fs_open(url, mode)
        self._closed = self._busy = False
        return size

    def _check(self, busy=True):
        if self._closed:
            raise ValueError("I/O operation on a closed file")
        if busy and self._busy:
            raise RuntimeError("the file is in use by another thread")

    def _call(self, function, *args):
        self._check()
        self._busy = True
        try:
            return function(self._handle, *args)
        finally:
            self._busy = False

    def _finish(self, commit):
        self._check(busy=not self._closed)
        self._closed = True
        _engine.fs_close(self._handle, commit)

    def close(self):
        """Close; a writer commits: its file appears, complete."""
        self._finish(True)


def _shown(url):
    """`url` as an error may show it: no user:password@, no query (a signed
    URL's query carries its signature), as the engine's messages do."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    rest, query, _ = rest.partition("?")
    host, slash, path = rest.partition("/")
    return f"{scheme}://{host.rpartition('@')[2]}{slash}{path}{'?...' if query else ''}"


class FsReader(_EngineFile):
    """A file read at a position of its own; GFile reads through one."""
    __slots__ = ("_size", "_url", "_position")

    def __init__(self, url):
        self._size = self._open(url, "r")
        self._url, self._position = url, 0

    def read(self, n=-1):
        """Up to `n` bytes from the position (-1: to the end)."""
        data = self._call(_engine.fs_read_at, self._position, n)
        self._position += len(data)
        return data

    def seek(self, position):
        """Move to `position` (GFile resolves whence); returns it."""
        position = _operator.index(position)
        self._check()
        if position < 0:
            raise ValueError(f"seek to {position} is not possible in {_shown(self._url)}")
        self._position = position
        return position

    def tell(self):
        """The read position."""
        self._check(busy=False)
        return self._position

    def size(self):
        """Bytes, or None when unknown."""
        self._check(busy=False)
        return None if self._size < 0 else self._size


class FsWriter(_EngineFile):
    """A file written whole: it appears, complete, at close() and never when
    aborted or dropped unclosed."""
    __slots__ = ()

    def __init__(self, url, append=False):
        self._open(url, "a" if append else "w")

    def write(self, data):
        """Append a bytes-like object."""
        self._call(_engine.fs_write, data)

    def abort(self):
        """Nothing appears."""
        self._finish(False)


class GFile:
    """A file for reading or writing: ``tf.io.gfile.GFile``.

    Modes ``r``, ``rb``, ``w``, ``wb``, ``a``, ``ab``. The file is opened at the
    first read or write, as TensorFlow's is (so a missing file raises there).
    Text modes decode and encode UTF-8; ``read(n)`` counts bytes, as
    TensorFlow's does.
    """

    _CHUNK = 1 << 20

    def __init__(self, name, mode="r"):
        if mode not in ("r", "rb", "w", "wb", "a", "ab"):
            raise ValueError(f"GFile: mode {mode!r} is not one of r, rb, w, wb, a, ab")
        self._name = _path(name)
        self._mode = mode
        self._binary = "b" in mode
        self._reading = mode[0] == "r"
        self._reader = None
        self._writer = None
        self._buffer = b""  # read ahead of the position by readline
        self._written = 0
        self._closed = False

    name = property(lambda self: self._name)
    mode = property(lambda self: self._mode)

    def _value(self, data):
        return data if self._binary else data.decode("utf-8")

    def _open_reader(self):
        if self._closed:
            raise ValueError("I/O operation on a closed file")
        if not self._reading:
            raise _errors.PermissionDeniedError(None, None, "File isn't open for reading")
        if self._reader is None:
            self._reader = FsReader(self._name)
        return self._reader

    def _open_writer(self):
        if self._closed:
            raise ValueError("I/O operation on a closed file")
        if self._reading:
            raise _errors.PermissionDeniedError(None, None, "File isn't open for writing")
        if self._writer is None:
            self._writer = FsWriter(self._name, self._mode[0] == "a")
        return self._writer

    def size(self):
        """The file's length in bytes."""
        return stat(self._name).length

    def read(self, n=-1):
        """`n` bytes from the position (all that is left when n is -1)."""
        reader = self._open_reader()
        if n is None or n < 0:
            data, self._buffer = self._buffer + reader.read(-1), b""
        elif n <= len(self._buffer):
            data, self._buffer = self._buffer[:n], self._buffer[n:]
        else:
            data, self._buffer = self._buffer + reader.read(n - len(self._buffer)), b""
        return self._value(data)

    def readline(self):
        """The next line, with its newline ('' / b'' at the end)."""
        reader = self._open_reader()
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line, self._buffer = self._buffer[:end + 1], self._buffer[end + 1:]
                return self._value(line)
            more = reader.read(self._CHUNK)
            if not more:
                line, self._buffer = self._buffer, b""
                return self._value(line)
            self._buffer += more

    def readlines(self):
        """Every line left."""
        lines = []
        for line in self:
            lines.append(line)
        return lines

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def seek(self, offset=None, whence=0, position=None):
        """Move the read position (whence 0: start, 1: here, 2: end)."""
        if offset is None and position is None:
            raise TypeError("seek(): offset argument required")
        if offset is not None and position is not None:
            raise TypeError("seek(): offset and position may not be set simultaneously.")
        offset = position if offset is None else offset
        reader = self._open_reader()
        if whence == 1:
            offset += self.tell()
        elif whence == 2:
            offset += self.size()
        elif whence != 0:
            raise _errors.InvalidArgumentError(
                None, None, f"Invalid whence argument: {whence}. Valid values are 0, 1, or 2.")
        self._buffer = b""
        reader.seek(offset)

    def tell(self):
        """The read position, or the bytes written so far."""
        if self._reading:
            return self._open_reader().tell() - len(self._buffer)
        self._open_writer()
        return self._written

    def write(self, file_content):
        """Append `file_content` (str is encoded as UTF-8)."""
        writer = self._open_writer()
        data = file_content.encode("utf-8") if isinstance(file_content, str) else file_content
        writer.write(data)
        self._written += len(memoryview(data).cast("B"))

    def flush(self):
        """Nothing to do: the file appears complete at close()."""

    def close(self):
        """Close the file; a written file appears under its name now."""
        self._closed = True
        reader, self._reader = self._reader, None
        writer, self._writer = self._writer, None
        if reader is not None:
            reader.close()
        if writer is not None:
            writer.close()

    def seekable(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()

    def __del__(self):
        if getattr(self, "_writer", None) is not None:
            try:
                self.close()  # a file object's data is written when it is collected
            except Exception:  # noqa: BLE001 (nowhere to raise from a finalizer)
                pass


def glob(pattern):
    """The paths matching `pattern` (``*``, ``?``, ``[...]`` within one component), sorted.

    `pattern` may be a list of patterns (their matches are concatenated). Hidden
    files match ``*`` as in TensorFlow.
    """
    if isinstance(pattern, (list, tuple)):
        return [m for p in pattern for m in glob(p)]
    pattern = _path(pattern)
    matches = _engine.fs_list(pattern, False, True)
    if not _is_url(pattern) and "/" not in pattern and any(c in pattern for c in "*?["):
        matches = ["./" + m for m in matches]  # as TensorFlow writes a bare pattern's matches
    return matches


def exists(path):
    """True when `path` exists."""
    try:
        _engine.fs_stat(_path(path))
    except _errors.NotFoundError:
        return False
    return True


def isdir(path):
    """True when `path` is a directory (a prefix with objects under it, on object stores)."""
    try:
        return _engine.fs_stat(_path(path))[2]
    except _errors.NotFoundError:
        return False


def listdir(path):
    """The names of the entries of directory `path`, sorted (no '.' and '..')."""
    path = _path(path)
    if not isdir(path):
        raise _errors.NotFoundError(None, None, f"Could not find directory {path}")
    return _engine.fs_list(path, False)


def join(path, *paths):
    """Join path components: ``os.path.join`` for local paths, '/' for URLs."""
    path = _path(path)
    if not _is_url(path):
        return _os.path.join(path, *paths)
    for p in paths:
        p = _path(p)
        if p.startswith("/"):
            path = p
        else:
            path = (path if path.endswith("/") else path + "/") + p
    return path


def walk(top, topdown=True, onerror=None):
    """(directory, subdirectory names, file names) for `top` and every directory below."""
    top = _path(top)
    try:
        listing = listdir(top)
    except _errors.NotFoundError as err:
        if onerror:
            onerror(err)
        return
    subdirs, files = [], []
    for item in listing:
        (subdirs if isdir(join(top, item)) else files).append(item)
    here = (top, subdirs, files)
    if topdown:
        yield here
    for subdir in subdirs:
        yield from walk(join(top, subdir), topdown, onerror)
    if not topdown:
        yield here


def makedirs(path):
    """Create `path` and its missing parents; no error if it exists."""
    path = _path(path).rstrip("/") or "/"
    if isdir(path):
        return
    parent = path.rsplit("/", 1)[0] if "/" in path else ""
    if parent and not parent.endswith(":/") and not parent.endswith(":"):
        makedirs(parent)
    _engine.fs_path_op("make_dir", path)


def mkdir(path):
    """Create the directory `path` (its parent must exist); no error if it exists."""
    _engine.fs_path_op("make_dir", _path(path))


def remove(path):
    """Delete the file `path`."""
    _engine.fs_path_op("remove", _path(path))


def rmtree(path):
    """Delete the directory `path` and everything under it."""
    path = _path(path)
    if not exists(path):
        raise _errors.NotFoundError(None, None, f"{path}; No such file or directory")
    for top, subdirs, files in walk(path, topdown=False):
        for name in files:
            _engine.fs_path_op("remove", join(top, name))
        _engine.fs_path_op("remove_dir", top)


def rename(src, dst, overwrite=False):
    """Rename `src` to `dst`; AlreadyExistsError when `dst` exists and not `overwrite`."""
    _engine.fs_path_op("rename", _path(src), _path(dst), bool(overwrite))


def copy(src, dst, overwrite=False):
    """Copy the file `src` to `dst`; AlreadyExistsError when `dst` exists and not `overwrite`."""
    _engine.fs_path_op("copy", _path(src), _path(dst), bool(overwrite))


class FileStatistics:
    """What :func:`stat` returns: ``length``, ``mtime_nsec``, ``is_directory``."""

    __slots__ = ("length", "mtime_nsec", "is_directory")

    def __init__(self, length, mtime_nsec, is_directory):
        self.length = length
        self.mtime_nsec = mtime_nsec
        self.is_directory = is_directory

    def __repr__(self):
        return (f"FileStatistics(length={self.length}, mtime_nsec={self.mtime_nsec}, "
                f"is_directory={self.is_directory})")


def stat(path):
    """The file's ``FileStatistics`` (NotFoundError when there is nothing there)."""
    size, mtime_ns, is_dir, _ = _engine.fs_stat(_path(path))
    return FileStatistics(size, mtime_ns, is_dir)
