#!/usr/bin/env python3
"""A FUSE file system whose every read waits: a read-only pass-through over a
source directory where each read() sleeps --latency seconds (default 10 ms)
before it returns the bytes, as a network or FUSE file system does.

Concurrent reads overlap (libfuse's multi-threaded loop with up to
--max-threads threads, each read sleeping without the GIL), so the storage's
own limit is high: 16 `cat`s at once take about as long as one. The mount uses
direct_io, so the kernel keeps no page cache for it (every read reaches the
file system and waits, round after round) and issues one read per request of
the caller's size (up to the kernel's FUSE request size, 1 MiB here): `dd
bs=4k` of a 1 MB file waits 256 times, `bs=1M` once.

    python benchmarks/slow_fs.py SOURCE MOUNTPOINT [--latency 0.01]   # until Ctrl-C

From Python (mounts in a temporary directory, in a child process, and
unmounts with fusermount3 -u at exit):

    with SlowFS(source, latency=0.01) as mount:
        open(os.path.join(mount, "file"), "rb").read()

Needs /dev/fuse, fusermount3 and mfusepy; usable() says why not."""
import argparse
import contextlib
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import time


def usable():
    """None when a SlowFS can be mounted here, else why not (for pytest.skip)."""
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "/dev/fuse is not readable and writable by this user"
    if shutil.which("fusermount3") is None:
        return "no fusermount3 (apt-get install fuse3)"
    try:
        import mfusepy  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any import failure means "cannot"
        return f"mfusepy cannot be imported: {type(e).__name__}: {e}"
    return None


def _operations(source, latency):
    import mfusepy

    class Slow(mfusepy.Operations):
        """Read-only pass-through; read() sleeps `latency` first."""
        use_ns = True

        def _full(self, path):
            return os.path.join(source, path.lstrip("/"))

        def init_with_config(self, conn_info, config_3):
            if conn_info is not None:
                # Asynchronous reads (io_uring's, the kernel's read-ahead) are
                # "background" requests, 12 at a time by default: let many
                # through, so the limit is the storage's, not the queue's.
                conn_info.max_background = 512
                conn_info.congestion_threshold = 384
            if config_3 is not None:
                config_3.direct_io = 1

        def getattr(self, path, fh=None):
            try:
                st = os.lstat(self._full(path))
            except OSError as e:
                raise mfusepy.FuseOSError(e.errno) from None
            keys = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_atime_ns",
                    "st_mtime_ns", "st_ctime_ns")
            out = {k: getattr(st, k) for k in keys}
            for k in ("st_atime", "st_mtime", "st_ctime"):
                out[k] = out.pop(k + "_ns")
            return out

        def readdir(self, path, fh):
            return [".", ".."] + sorted(os.listdir(self._full(path)))

        def open(self, path, flags):
            if flags & (os.O_WRONLY | os.O_RDWR):
                raise mfusepy.FuseOSError(errno.EROFS)
            try:
                return os.open(self._full(path), os.O_RDONLY)
            except OSError as e:
                raise mfusepy.FuseOSError(e.errno) from None

        def read(self, path, size, offset, fh):
            time.sleep(latency)  # the storage's wait; other reads proceed meanwhile
            return os.pread(fh, size, offset)

        def release(self, path, fh):
            os.close(fh)
            return 0

        def statfs(self, path):
            st = os.statvfs(source)
            return {k: getattr(st, k) for k in ("f_bsize", "f_frsize", "f_blocks", "f_bfree",
                                                 "f_bavail", "f_files", "f_ffree", "f_namemax")}

    return Slow()


def serve(source, mountpoint, latency, max_threads=64):
    """Mount and serve in this process until unmounted (fusermount3 -u) or
    interrupted."""
    import mfusepy
    mfusepy.FUSE(_operations(os.path.abspath(source), latency), mountpoint, foreground=True,
                 ro=True, direct_io=True, fsname="slowfs",
                 max_threads=max_threads, max_idle_threads=max_threads)


def _mounted(mountpoint):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == mountpoint for line in f)


class SlowFS:
    """Mount `source` read-only with `latency` seconds per read, in a child
    process, at a temporary directory; yields the mount point. Unmounts and
    stops the child at exit (also when the body raised)."""

    def __init__(self, source, latency=0.01, max_threads=64, timeout=30.0):
        self.source = os.path.abspath(source)
        self.latency = latency
        self.max_threads = max_threads
        self.timeout = timeout
        self.proc = None
        self.mountpoint = None

    def __enter__(self):
        why = usable()
        if why:
            raise RuntimeError(f"cannot mount a slow FUSE file system: {why}")
        self.mountpoint = tempfile.mkdtemp(prefix="slowfs-")
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), self.source,
                                      self.mountpoint, "--latency", str(self.latency),
                                      "--max-threads", str(self.max_threads)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + self.timeout
        while not _mounted(self.mountpoint):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self._stop()
                raise RuntimeError(f"the slow FUSE file system did not mount: {err}")
            time.sleep(0.02)
        return self.mountpoint

    def _stop(self):
        err = ""
        if self.mountpoint and _mounted(self.mountpoint):
            subprocess.run(["fusermount3", "-u", "-z", self.mountpoint], capture_output=True,
                           timeout=self.timeout)
        if self.proc is not None:
            try:
                self.proc.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=self.timeout)
            err = self.proc.stderr.read().decode(errors="replace").strip()
            self.proc.stderr.close()
            self.proc = None
        if self.mountpoint:
            with contextlib.suppress(OSError):
                os.rmdir(self.mountpoint)
            self.mountpoint = None
        return err

    def __exit__(self, *exc):
        self._stop()
        return False


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("source")
    p.add_argument("mountpoint")
    p.add_argument("--latency", type=float, default=0.01, help="seconds per read (default 0.01)")
    p.add_argument("--max-threads", type=int, default=64,
                   help="libfuse threads serving requests at once (default 64)")
    args = p.parse_args(argv)
    why = usable()
    if why:
        sys.exit(f"slow_fs: {why}")
    serve(args.source, args.mountpoint, args.latency, args.max_threads)


if __name__ == "__main__":
    main()
