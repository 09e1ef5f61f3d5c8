"""``conveyor.io.gfile``: the parts of ``tf.io.gfile`` that apply to local files.

Missing paths raise ``NotFoundError`` (a ``FileNotFoundError``) as TensorFlow does.
"""
import glob as _glob
import os
import shutil
import sys

from conveyor import errors as _errors

__all__ = ["glob", "exists", "isdir", "listdir", "makedirs", "mkdir", "remove", "rmtree",
           "stat"]


def _path(p):
    p = os.fspath(p)
    return p.decode() if isinstance(p, bytes) else p


def glob(pattern):
    """The paths matching `pattern` (``*``, ``?``, ``[...]``), sorted as ``tf.io.gfile.glob``.

    `pattern` may be a string or a list of strings (their matches are
    concatenated). Hidden files match ``*`` as in TensorFlow.
    """
    if isinstance(pattern, (list, tuple)):
        return [m for p in pattern for m in glob(p)]
    pattern = _path(pattern)
    return sorted(_glob.glob(pattern, include_hidden=True) if _has_include_hidden()
                  else _glob.glob(pattern))


def _has_include_hidden():
    return sys.version_info >= (3, 11)


def exists(path):
    """True when `path` exists."""
    return os.path.exists(_path(path))


def isdir(path):
    """True when `path` is a directory."""
    return os.path.isdir(_path(path))


def listdir(path):
    """The entries of directory `path` (not sorted, without '.' and '..')."""
    path = _path(path)
    if not os.path.isdir(path):
        raise _errors.NotFoundError(f"Could not find directory {path}")
    return os.listdir(path)


def makedirs(path):
    """Create `path` and its missing parents; no error if it exists."""
    os.makedirs(_path(path), exist_ok=True)


def mkdir(path):
    """Create the directory `path` (its parent must exist)."""
    path = _path(path)
    try:
        os.mkdir(path)
    except FileExistsError:
        raise _errors.AlreadyExistsError(f"{path}; File exists") from None
    except FileNotFoundError:
        raise _errors.NotFoundError(f"{path}; No such file or directory") from None


def remove(path):
    """Delete the file `path`."""
    path = _path(path)
    try:
        os.remove(path)
    except FileNotFoundError:
        raise _errors.NotFoundError(f"{path}; No such file or directory") from None


def rmtree(path):
    """Delete the directory `path` and everything under it."""
    path = _path(path)
    if not os.path.exists(path):
        raise _errors.NotFoundError(f"{path}; No such file or directory")
    shutil.rmtree(path)


def stat(path):
    """A ``FileStatistics``-like object: ``length``, ``mtime_nsec``, ``is_directory``."""
    path = _path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise _errors.NotFoundError(f"{path}; No such file or directory") from None

    class FileStatistics:
        length = st.st_size
        mtime_nsec = st.st_mtime_ns
        is_directory = os.path.isdir(path)
    return FileStatistics()
