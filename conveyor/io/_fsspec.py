"""The fsspec fallback's Python half: what csrc/python/fs_fsspec.c asks of
fsspec's answers, in plain values the C file-system table (io/fs.h) takes.

Called by the engine with the GIL held, from any thread, with an fsspec file
system object and its path (``fsspec.core.url_to_fs``); exceptions go back to
the engine as they are and become statuses naming the URL there.
"""

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


def info(fs, path):
    """fs.info(path) as ``entry``."""
    return entry(fs.info(path))


def listing(fs, path, recursive):
    """[(name, size, mtime_ns, is_dir, version)] of fs.find (recursive) or
    fs.ls, names relative to path without a trailing '/', sorted by name; the
    directory itself is left out."""
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
        out.append((full.rstrip("/"),) + entry(d))
    out.sort(key=lambda e: e[0].encode("utf-8", "surrogatepass"))
    return out


def make_dir(fs, path):
    """One level: fs.mkdir(path, create_parents=False)."""
    fs.mkdir(path, create_parents=False)
