/* The file-system layer: one const method table per URL scheme, as SQLite's
 * VFS and TensorFlow's modular file systems are built. Every path the engine
 * opens, lists, writes or removes goes through cv_fs_find(): record readers
 * and writers, read_file, caches, snapshots, .cvindex sidecars, resume and
 * gfile.
 *
 * Schemes: local paths (no scheme, or file://), gs://, s3://, http:// and
 * https:// (read-only), and whatever the binding registers for other schemes
 * (the fsspec fallback, csrc/python/). A URL names an object; "directories"
 * on object stores are prefixes ending in '/'.
 *
 * Ownership: cv_fs_find() returns a static table (never freed). Open files
 * belong to the caller, one thread at a time, until their close method.
 * Thread-safety: every table method may be called from any thread at once;
 * a file's methods from one thread at a time. Methods may wait (network,
 * slow disks): they wait in blocking sections (core/blocking.h) and give up
 * with CV_CANCELLED / CV_INTERRUPTED as io/file.h's waiting reads do.
 *
 * Errors name the URL (never a credential) and map as TensorFlow's file
 * systems do: NOT_FOUND, PERMISSION_DENIED (saying where the credentials came
 * from), FAILED_PRECONDITION (a directory where a file was wanted),
 * UNAVAILABLE (the store kept failing: the attempts are listed), UNIMPLEMENTED
 * (the store cannot do it: rename on S3 is a copy and a delete, say). */
#ifndef CV_FS_H
#define CV_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct CvFileInfo {
    uint64_t size;    /* bytes; UINT64_MAX when unknown (a pipe) */
    int64_t mtime_ns; /* modification time, nanoseconds since the epoch; 0 when unknown */
    bool is_dir;      /* a directory, or an object-store prefix with objects under it */
    /* An opaque version of the object's contents when the store has one (a
     * GCS generation, an S3 ETag, a local file's inode, size, mtime and
     * status-change time): resume and the
     * sidecar index compare it to notice a file rewritten in place. "" when
     * unknown. */
    char version[64];
} CvFileInfo;

/* ---- reading ----------------------------------------------------------- */

typedef struct CvReadFile CvReadFile;
typedef struct CvReadFileMethods {
    /* Up to n bytes from `offset` into dst; *got < n only where the file
     * ends. Reading where the last read stopped is the fast path: a scheme
     * reads ahead after it (remote: a streaming ranged GET kept ahead of the
     * reader within the I/O budget), and a read elsewhere costs one new
     * request. */
    CvStatus (*read)(CvReadFile *f, uint64_t offset, void *dst, size_t n, size_t *got);
    /* Frees the file (read-ahead in flight is dropped). */
    void (*close)(CvReadFile *f);
    /* Optional (NULL: `info` is filled by open_read). Remote schemes open
     * without a round trip: open_read starts the first ranged GET and
     * returns, and `info` comes with its answer. This waits for it (the
     * first read's wait, not a second request) and fills `info`, or returns
     * what open_read used to (NOT_FOUND, PERMISSION_DENIED, ...); the first
     * read returns the same error. Use cv_read_file_info(). */
    CvStatus (*wait_info)(CvReadFile *f);
} CvReadFileMethods;

/* The base of every scheme's open file (the scheme's struct starts with it). */
struct CvReadFile {
    const CvReadFileMethods *methods;
    char *url;       /* owned by the file, as given to open_read */
    CvFileInfo info; /* at open; remote: after cv_read_file_info() or a read */
    /* Reads may wait without end (a pipe, a character device): the readers
     * then read in slices (local files only). */
    bool waits;
    /* The scheme keeps what it read ahead in memory (remote: the stream's
     * buffer): a reader takes bytes from it with one copy and need not
     * buffer them again (io/input_stream.c then refills little). */
    bool buffered;
};

/* ---- writing ----------------------------------------------------------- */

typedef struct CvWriteFile CvWriteFile;
typedef struct CvWriteFileMethods {
    /* Append n bytes (buffered; remote: sent in parts as they fill). */
    CvStatus (*append)(CvWriteFile *f, const void *src, size_t n);
    /* Make everything appended so far durable and visible under the final
     * name, and free the file. A file or object appears only complete: local
     * files are written to a temporary name and renamed, objects are
     * uploaded by one request or a multipart upload completed here. The file
     * is freed whatever the result. */
    CvStatus (*commit)(CvWriteFile *f);
    /* Give the write up: nothing appears under the final name (a temporary
     * file is removed, a multipart upload aborted). Frees the file. */
    void (*abort)(CvWriteFile *f);
} CvWriteFileMethods;

struct CvWriteFile {
    const CvWriteFileMethods *methods;
    char *url; /* owned by the file */
};

/* ---- the table --------------------------------------------------------- */

/* What list() reports per entry: `name` relative to the listed directory
 * (with '/' inside for recursive listings; a directory's name carries no
 * trailing '/'). Return nonzero to stop the listing early (not an error). */
typedef int (*CvFsListFn)(void *ctx, const char *name, const CvFileInfo *info);

typedef struct CvFileSystem {
    const char *scheme; /* "" for local paths, else "gs", "s3", "http", ... */
    CvStatus (*open_read)(const char *url, CvReadFile **out);
    /* A new (or truncated, or replaced) file; append keeps what is there
     * (UNIMPLEMENTED on object stores). */
    CvStatus (*open_write)(const char *url, bool append, CvWriteFile **out);
    /* NOT_FOUND when there is neither a file nor a directory there. */
    CvStatus (*stat)(const char *url, CvFileInfo *out);
    /* The entries of directory `url` (with or without a trailing '/'); with
     * `recursive`, every file below it and no directory entries (object
     * stores: one prefix listing, page after page). Order: sorted by name. */
    CvStatus (*list)(const char *url, bool recursive, CvFsListFn each, void *ctx);
    CvStatus (*remove)(const char *url);      /* a file or object */
    CvStatus (*make_dir)(const char *url);    /* object stores: OK, nothing to make */
    CvStatus (*remove_dir)(const char *url);  /* an empty directory */
    /* NULL where the store cannot (cv_fs_rename/copy then copy and remove,
     * or say UNIMPLEMENTED). Replaces `to` when `overwrite`, else
     * ALREADY_EXISTS. */
    CvStatus (*rename)(const char *from, const char *to, bool overwrite);
    CvStatus (*copy)(const char *from, const char *to, bool overwrite);
} CvFileSystem;

/* The table for `url`'s scheme, and in *path where the scheme's own part
 * starts (local: file:// stripped). UNIMPLEMENTED naming the scheme when no
 * table is registered for it. */
CvStatus cv_fs_find(const char *url, const CvFileSystem **fs);
/* Register a table (the binding's fsspec fallback registers scheme "*",
 * which takes every scheme without a table of its own). Not thread-safe
 * against cv_fs_find: call it at module initialisation. */
void cv_fs_register(const CvFileSystem *fs);
/* Whether `url` names a remote object (any scheme but local). */
bool cv_fs_is_remote(const char *url);

/* Conveniences over the table: find the scheme, call the method. */
CvStatus cv_fs_open_read(const char *url, CvReadFile **out);
CvStatus cv_fs_open_write(const char *url, bool append, CvWriteFile **out);
CvStatus cv_fs_stat(const char *url, CvFileInfo *out);
/* rename/copy across schemes, or where the table has none: copy the bytes,
 * then (rename) remove the source. */
CvStatus cv_fs_rename(const char *from, const char *to, bool overwrite);
CvStatus cv_fs_copy(const char *from, const char *to, bool overwrite);
/* Every file or directory matching `pattern` (tf.io.gfile.glob's rules:
 * '*', '?', '[...]' within one path component), sorted; object stores list
 * the longest literal prefix once. each() gets the full URL. */
CvStatus cv_fs_glob(const char *pattern, CvFsListFn each, void *ctx);

/* Wait until f->info is known (see CvReadFileMethods.wait_info; at once for
 * local files). On an error f->info says size UINT64_MAX, and the next read
 * returns the error again. */
CvStatus cv_read_file_info(CvReadFile *f);

/* Read a whole file into a malloc'd buffer (*data, *size; NUL-terminated
 * past the end for text parsers). */
CvStatus cv_fs_read_all(const char *url, void **data, size_t *size);

#endif
