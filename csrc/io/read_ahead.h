/* Read-ahead for local files whose reads wait: FUSE, NFS, CIFS/SMB, 9p,
 * Lustre, Ceph... (a network or user-space file system where each read()
 * costs a round trip of milliseconds).
 *
 * A blocking read holds a pool thread for its whole wait, so a pipeline
 * (cpu_budget + a few threads) has only a few reads in flight whatever its
 * interleave's cycle_length. A read-ahead stream instead issues the file's
 * reads asynchronously, from the moment it opens and ahead of its reader, on
 * threads no pool counts: 32 files opened by an interleave have 32+ reads in
 * flight while the pool runs ~5 threads. The reader waits only when the
 * read-ahead has not caught up with it.
 *
 * Where the reads run: one process-wide io_uring (raw system calls: no
 * liburing to build against or ship) whose submissions and completions one
 * thread, "cv-uring", drives, so every read belongs to that thread's
 * io_uring context and none is cancelled when a pool thread exits; the
 * kernel's io-wq workers ("iou-wrk-*") do the waiting. Where io_uring cannot
 * be set up (an old kernel, seccomp, io_uring_disabled), a process-wide set
 * of I/O threads ("cv-io", started as needed, at most 64) does the reads
 * with pread(). CONVEYOR_READ_AHEAD_IO=threads|uring picks one (tests).
 *
 * The window per stream: blocks of 256 KiB, 4 at first, grown up to 16 from
 * the measured read latency and the reader's rate (bytes in flight = rate x
 * latency, with margin), all streams' extra blocks bounded by one
 * process-wide budget (CONVEYOR_READ_AHEAD_BYTES, default 256 MiB; every
 * stream keeps at least one block whatever the budget). A read at another
 * offset drops the window and restarts there.
 *
 * Ownership and thread-safety: a stream belongs to one thread at a time (as
 * an open file does) and borrows its fd, which must stay open until
 * cv_read_ahead_close(). The backend's threads complete blocks under the
 * stream's mutex. Fork: a child starts its own backend at its first stream;
 * a stream opened before the fork gives FAILED_PRECONDITION in the child
 * (its reads belong to the parent) and close() only frees it there. */
#ifndef CV_READ_AHEAD_H
#define CV_READ_AHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct CvReadAhead CvReadAhead;

/* Whether reads of `fd` wait enough to be worth reading ahead: its file
 * system is a network or FUSE one (fstatfs). CONVEYOR_READ_AHEAD=always or
 * never overrides (tests, benchmarks). Thread-safe. */
bool cv_read_ahead_wanted(int fd);

/* A read-ahead stream over `fd` (borrowed; a regular file, else
 * INVALID_ARGUMENT; O_NONBLOCK is cleared on it, which means nothing to a
 * regular file's read() but makes io_uring refuse to wait), which starts
 * reading at offset 0 at once. `path` names the file in errors (copied); `size` is its size at
 * open (blocks are issued up to it; the reader still sees a file that grew
 * or shrank since). */
CvStatus cv_read_ahead_open(int fd, const char *path, uint64_t size, CvReadAhead **out);

/* Up to n bytes at `offset` into dst; *got < n only where the file ends.
 * Reading where the last read stopped is the fast path. Waits (in a blocking
 * section, the GIL let go) only for a block still in flight, and gives up
 * when the pool's work is cancelled (CV_CANCELLED) or the consumer is
 * interrupted (CV_INTERRUPTED), keeping *got as far as it came. I/O errors
 * name the path "(while reading)" (io/file.h). */
CvStatus cv_read_ahead_read(CvReadAhead *ra, uint64_t offset, void *dst, size_t n, size_t *got);

/* Cancels the reads in flight, waits until the backend holds none of the
 * stream's buffers, and frees it. NULL-safe; does not close the fd. */
void cv_read_ahead_close(CvReadAhead *ra);

#endif
