"""Index TFRecord files: ``python -m conveyor.tools.index FILES...``.

For each (uncompressed) TFRecord file ``F`` this writes ``F.cvindex`` next to
it: the byte offset and both CRC-32Cs of every record, in checksummed blocks,
plus the size, modification time, file version (a local file's inode and
status-change time) and a checksum of the first and last 4 KiB of ``F`` as
they were when indexed. Every record is read once, both CRC-32Cs checked; a
corrupt file gets no index. Readers check each entry they use against its
block's checksum and the record it points at, and fall back to reading with a
``conveyor.errors.DataLossWarning`` when one does not match.

With an index, ``TFRecordDataset(files).skip(n)`` and ``.shard(num, index)``
seek over the records they pass instead of reading them, file by file. An
index whose data file changed since (size, mtime, version or checksums
differ; copying the file changes its version too: index after copying) is
*stale*: readers ignore it with a ``conveyor.errors.DataLossWarning`` naming
it and read instead; run this tool again to refresh it. Compressed files
(GZIP/ZLIB) cannot be indexed: a deflate stream has no random access.

The tool shows a progress bar over the bytes of all files (``--progress``;
by default when tqdm is installed and stderr is a terminal).

Indexes are written only by this tool (or :func:`write_index`), never behind
the user's back while reading: a read-only dataset directory stays untouched.
See docs/resume.md.
"""
import argparse
import os
import sys

from conveyor import errors as _errors
from conveyor.io import gfile as _gfile
from conveyor import _engine
from conveyor.framework import progress as _progress

__all__ = ["INDEX_SUFFIX", "index_path", "write_index", "main"]

INDEX_SUFFIX = ".cvindex"  # io/record_index.h: CV_RECORD_INDEX_SUFFIX


def index_path(path):
    """The index sidecar of TFRecord file ``path``: ``path + ".cvindex"``."""
    return os.fsdecode(os.fspath(path)) + INDEX_SUFFIX


def write_index(path, buffer_size=0):
    """Index one uncompressed TFRecord file; returns its number of records.

    Writes ``index_path(path)`` atomically (a temporary file renamed over it).
    Raises ``DataLossError`` for a corrupt record (no index is written),
    ``NotFoundError`` for a missing file, ``AbortedError`` when the file
    changes while it is read. A file that ends in a torn record is indexed up
    to that record (the reader handles the torn tail as usual).
    """
    buffer_size = int(buffer_size)
    if buffer_size < 0:
        raise ValueError("buffer_size must be >= 0")
    return _engine.tfrecord_index(os.fspath(path), buffer_size)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m conveyor.tools.index",
        description="Write <file>.cvindex record-offset sidecars for uncompressed TFRecord "
                    "files, so skip/shard/restore seek instead of reading.")
    parser.add_argument("files", nargs="+", metavar="FILE", help="TFRecord files to index")
    parser.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="a progress bar (bytes read) on stderr (default: when tqdm is "
                             "installed and stderr is a terminal)")
    args = parser.parse_args(argv)
    sizes = []
    for f in args.files:
        try:
            sizes.append(max(_gfile.stat(f).length, 0))
        except (OSError, _errors.OpError):
            sizes.append(0)  # write_index reports it
    failed = 0
    with _progress.bar(sum(sizes), "index", "B", args.progress, unit_scale=True,
                       unit_divisor=1024) as bar:
        for f, size in zip(args.files, sizes):
            bar.set_postfix_str(os.path.basename(f))
            try:
                n = write_index(f)
            except Exception as e:  # noqa: BLE001 - report every file, then fail
                failed += 1
                bar.write(f"{f}: not indexed: {type(e).__name__}: {e}", file=sys.stderr)
                continue
            finally:
                bar.update(size)
            if not args.quiet:
                bar.write(f"{f}: {n} records -> {index_path(f)}", file=sys.stdout)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
