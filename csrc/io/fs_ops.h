/* Whole operations over the file-system tables (io/fs.h), as gfile calls
 * them: a listing or glob gathered into a list of names, a byte range read
 * into one buffer, the one-URL methods, and an open file of either
 * direction (gfile's FsReader and FsWriter hold one).
 *
 * Nothing here needs the GIL: the binding runs each call with it released
 * and converts the results after. Ownership: a CvNameList and a range's
 * buffer belong to the caller (cv_name_list_free, free). Thread-safety: as
 * fs.h (any thread; one open file from one thread at a time).
 */
#ifndef CV_IO_FS_OPS_H
#define CV_IO_FS_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "io/fs.h"

typedef struct CvNameList {
    char **v; /* each malloc'd */
    size_t len, cap;
} CvNameList;

void cv_name_list_free(CvNameList *n);
/* The names of directory `url`'s entries (fs.h's list order and rules). */
CvStatus cv_fs_list_names(const char *url, bool recursive, CvNameList *out);
/* The URLs matching `pattern` (cv_fs_glob), sorted. */
CvStatus cv_fs_glob_names(const char *pattern, CvNameList *out);

/* The one-URL methods: find the scheme's table, call the method. */
CvStatus cv_fs_remove(const char *url);
CvStatus cv_fs_make_dir(const char *url); /* one level */
CvStatus cv_fs_remove_dir(const char *url); /* an empty directory */

/* Open for reading and wait for the size (a remote file's first answer):
 * readers clamp and seek by it. */
CvStatus cv_fs_open_read_sized(const char *url, CvReadFile **out);
/* Up to `size` bytes (-1: to the end) at `offset` of an open file into a
 * new malloc'd buffer (*data, *len; *data may be NULL when *len is 0). */
CvStatus cv_read_file_range(CvReadFile *f, uint64_t offset, int64_t size, char **data,
                            size_t *len);

/* An open file: a reader's or a writer's, both NULL once finished. `busy`
 * is the holder's (the binding marks a call in flight with it). */
typedef struct CvFsFile {
    CvReadFile *reader;
    CvWriteFile *writer;
    bool busy;
} CvFsFile;

/* mode 'r' reads (cv_fs_open_read_sized), 'w' writes, 'a' appends. */
CvStatus cv_fs_file_open(const char *url, char mode, CvFsFile **out);
/* Close a reader; commit (the file appears, complete) or abort (nothing
 * appears; an aborted upload is a request) a writer. The file stays,
 * finished; may wait (reads in flight, an upload). */
CvStatus cv_fs_file_finish(CvFsFile *f, bool commit);
/* Aborts what is still open (a writer's file does not appear), frees. */
void cv_fs_file_free(CvFsFile *f);

#endif
