"""The fsspec fallback's Python half: the fsspec calls behind the C file-system
table of csrc/python/fs_fsspec.c (io/fs.h, scheme "*"), with fsspec's answers
in plain values the table takes.

Called by the engine with the GIL held, from any thread, with the URL (each
function finds the file system object with ``fsspec.core.url_to_fs``);
the engine calls them through ``call``, which gives an exception back as the
engine's error code and a message naming the URL.
"""
from conveyor import errors as _errors

# The engine's error code of an exception raised here or by fsspec, first match.
_CODES = ((FileNotFoundError, _errors.NOT_FOUND), (PermissionError, _errors.PERMISSION_DENIED),
          (FileExistsError, _errors.ALREADY_EXISTS),
          ((IsADirectoryError, NotADirectoryError), _errors.FAILED_PRECONDITION),
          (NotImplementedError, _errors.UNIMPLEMENTED))


class _Status(Exception):
    """An error of the fallback itself: its code and whole message."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code, self.message = code, message


def status(exc, url, what):
    """(code, message) of `exc`, raised while doing `what` for `url`."""
    if isinstance(exc, _Status):
        return exc.code, exc.message
    code = next((c for types, c in _CODES if isinstance(exc, types)), _errors.UNKNOWN)
    if what == "url_to_fs" and code == _errors.UNKNOWN:
        code = _errors.UNIMPLEMENTED  # ValueError("Protocol not known"), a driver's ImportError
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - no text is still an error
        text = None
    detail = f"{type(exc).__name__}: {text}" if text is not None else type(exc).__name__
    return code, f"{url}; {detail} (fsspec, {what})"


def call(fn, url, what, args):
    """(0, fn(*args)) for the function named `fn`, or (code, message) of what it
    raised doing `what` for `url`."""
    try:
        return 0, globals()[fn](*args)
    except Exception as e:  # noqa: BLE001 - every error goes back as a status
        return status(e, url, what)


def close(f):
    """Close an open file (the engine ignores an error)."""
    f.close()


def _resolve(url):
    """fsspec's (file system, path) for `url`."""
    try:
        import fsspec.core
    except ImportError:
        scheme = url.split("://")[0] if "://" in url else ""
        raise _Status(_errors.UNIMPLEMENTED,
                      f"{url}: no file system is registered for the scheme '{scheme}://'; "
                      "install fsspec (pip install fsspec) and an implementation of the "
                      "scheme") from None
    try:
        return fsspec.core.url_to_fs(url)
    except Exception as e:  # noqa: BLE001 - named as url_to_fs's
        raise _Status(*status(e, url, "url_to_fs")) from None


_TIMES = ("mtime", "LastModified", "updated", "modified", "created")
_VERSIONS = ("generation", "ETag", "etag", "VersionId", "version_id")


def _seconds(value):
    """A number, or a datetime's timestamp(); None for anything else."""
    if not isinstance(value, (str, bytes, bytearray)) and hasattr(type(value), "__float__"):
        return float(value)
    timestamp = getattr(value, "timestamp", None)
    seconds = timestamp() if timestamp is not None else None
    return seconds if isinstance(seconds, float) else None


def entry(d):
    """An fsspec info dict as (size or -1, mtime_ns or 0, is_dir, version or "");
    the C side cuts the version to its 63 bytes."""
    if not isinstance(d, dict):
        return -1, 0, False, ""
    size = d.get("size")
    size = size if isinstance(size, int) and size >= 0 else -1
    mtime_ns = 0
    for key in _TIMES:
        if mtime_ns or key not in d:
            continue
        try:
            seconds = _seconds(d[key])
        except Exception:  # noqa: BLE001 - an odd field is no time, as in C
            seconds = None
        if seconds is not None:
            mtime_ns = int(seconds * 1e9)
    version = ""
    for key in _VERSIONS:
        if not version and key in d:
            try:
                version = str(d[key])
            except Exception:  # noqa: BLE001
                pass
    return size, mtime_ns, d.get("type") == "directory", version


def info(url):
    """fs.info as ``entry``."""
    fs, path = _resolve(url)
    return entry(fs.info(path))


def listing(url, recursive):
    """[(size, mtime_ns, is_dir, version, name)] of fs.find (recursive) or
    fs.ls, names relative to the path without a trailing '/', sorted by name;
    the directory itself is left out."""
    fs, path = _resolve(url)
    r = fs.find(path, detail=True) if recursive else fs.ls(path, detail=True)
    items = list(r.values()) if isinstance(r, dict) else list(r)
    base = path.rstrip("/")
    out = []
    for d in items:
        full = d.get("name") if isinstance(d, dict) else None
        if not isinstance(full, str):
            continue
        if full.startswith(base + "/"):
            full = full[len(base) + 1:]
        elif full == base:
            continue  # the directory itself, or a file listed as itself
        out.append(entry(d) + (full.rstrip("/"),))
    out.sort(key=lambda e: e[4].encode("utf-8", "surrogatepass"))
    return out


def open_read(url):
    """fs.open(path, "rb")."""
    fs, path = _resolve(url)
    return fs.open(path, "rb")


def read(f, offset, n, url):
    """Up to `n` bytes at `offset` of `url`'s open file (fewer only at the end)."""
    if f.tell() != offset:
        f.seek(offset)
    chunks, got = [], 0
    while got < n:  # read(k) may give fewer bytes before the end
        data = f.read(n - got)
        if not isinstance(data, bytes):
            raise _Status(_errors.INTERNAL, f"{url}: fsspec's read() gave no bytes")
        if not data:
            break
        chunks.append(data)
        got += len(data)
    return b"".join(chunks)[:n]


def put(url, local):
    """Upload the local file `local` to `url` (a staged write's commit)."""
    fs, path = _resolve(url)
    fs.put_file(local, path)


def get(url, local):
    """Download `url` into the local file `local` (a staged append's start)."""
    fs, path = _resolve(url)
    fs.get_file(path, local)


def remove(url):
    fs, path = _resolve(url)
    fs.rm_file(path)


def make_dir(url):
    """One level: fs.mkdir(path, create_parents=False); an existing directory is fine."""
    fs, path = _resolve(url)
    try:
        if entry(fs.info(path))[2]:
            return
    except Exception:  # noqa: BLE001 - not there (or unreadable): mkdir says
        pass
    fs.mkdir(path, create_parents=False)


def remove_dir(url):
    fs, path = _resolve(url)
    fs.rmdir(path)


def two_urls(method, src, dst, overwrite):
    """fs.mv / fs.copy (`method`) within one fsspec file system object; the target
    must not exist unless `overwrite`."""
    if not overwrite:
        try:
            info(dst)
        except Exception:  # noqa: BLE001 - not there: go on
            pass
        else:
            raise _Status(_errors.ALREADY_EXISTS, f"{dst}; the target exists")
    fs, path = _resolve(src)
    other, target = _resolve(dst)
    if other is not fs:
        raise _Status(_errors.UNIMPLEMENTED,
                      f"{src} -> {dst}: {method} across two fsspec file systems")
    getattr(fs, method)(path, target)
