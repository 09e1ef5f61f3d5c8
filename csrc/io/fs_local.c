/* Local files as a file-system table (fs.h): plain paths and file:// URLs.
 *
 * Reading keeps the speed the readers had before the layer: a read where the
 * last one stopped is read(2) at the descriptor's position (io/file.h's
 * page-cache-first loop, no lseek), any other offset is one pread. FIFOs and
 * devices open without blocking and wait in slices (cv_file_read_waiting).
 * Writing goes to a temporary file next to the target, fsync'd and renamed
 * over it at commit, so a file appears only complete; append writes the
 * file itself. Writes are unbuffered: the engine's writers buffer already.
 * Thread-safety: the table's functions are reentrant; a file belongs to one
 * thread at a time (fs.h). */
/* _GNU_SOURCE comes from the build (renameat2, posix_fadvise). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/array.h"
#include "io/file.h"
#include "io/fs.h"
#include "io/read_ahead.h"

/* The path of a local URL: "file://" stripped, else the URL itself. */
static const char *local_path(const char *url)
{
    return strncmp(url, "file://", 7) == 0 ? url + 7 : url;
}

static void info_from_stat(const struct stat *sb, CvFileInfo *out)
{
    memset(out, 0, sizeof(*out));
    out->is_dir = S_ISDIR(sb->st_mode);
    out->size = S_ISREG(sb->st_mode) || out->is_dir ? (uint64_t)sb->st_size : UINT64_MAX;
    out->mtime_ns = (int64_t)sb->st_mtim.tv_sec * 1000000000 + (int64_t)sb->st_mtim.tv_nsec;
    /* The status-change time too: a rewrite in place that puts the mtime
     * back (utime) still moves it, and nothing can set it back. */
    int64_t ctime_ns = (int64_t)sb->st_ctim.tv_sec * 1000000000 + (int64_t)sb->st_ctim.tv_nsec;
    snprintf(out->version, sizeof(out->version), "%" PRIx64 "-%" PRIx64 "-%" PRIx64 "-%" PRIx64,
             (uint64_t)sb->st_ino, (uint64_t)sb->st_size, (uint64_t)out->mtime_ns,
             (uint64_t)ctime_ns);
}

/* ---- reading ----------------------------------------------------------- */

typedef struct LocalRead {
    CvReadFile base;
    int fd;
    uint64_t position; /* the descriptor's file position */
    /* Owned; set on file systems whose reads wait (FUSE, NFS, SMB, ...):
     * reads are issued ahead of the reader asynchronously (io/read_ahead.h),
     * so a worker waits only when the read-ahead has not caught up. */
    CvReadAhead *ahead;
} LocalRead;

static CvStatus local_read(CvReadFile *base, uint64_t offset, void *dst, size_t n, size_t *got)
{
    LocalRead *f = (LocalRead *)base;
    const char *url = base->url;
    CvStatus s;
    if (f->ahead)
        return cv_read_ahead_read(f->ahead, offset, dst, n, got);
    if (base->waits) /* a pipe or device: no offsets, reads wait in slices */
        s = cv_file_read_waiting(f->fd, url, dst, n, got);
    else if (offset == f->position)
        s = cv_file_read(f->fd, url, dst, n, got);
    else
        return cv_file_read_at(f->fd, url, dst, n, offset, got); /* position unchanged */
    f->position += *got;
    return s;
}

static void local_read_close(CvReadFile *base)
{
    LocalRead *f = (LocalRead *)base;
    cv_read_ahead_close(f->ahead); /* before the descriptor it borrows */
    if (f->fd >= 0)
        close(f->fd);
    free(base->url);
    free(f);
}

static const CvReadFileMethods local_read_methods = {local_read, local_read_close};

static CvStatus local_open_read(const char *url, CvReadFile **out)
{
    LocalRead *f = calloc(1, sizeof(*f));
    CvStatus s = CV_STATUS_OK;
    if (!f || !(f->base.url = strdup(url))) {
        free(f);
        return cv_error_nomem();
    }
    f->base.methods = &local_read_methods;
    f->fd = -1;
    struct stat sb;
    if ((s = cv_file_open_read(local_path(url), url, &f->fd, &f->base.waits)))
        goto error;
    if (fstat(f->fd, &sb) < 0) {
        s = cv_file_error(errno, url, NULL);
        goto error;
    }
    info_from_stat(&sb, &f->base.info);
    if (S_ISREG(sb.st_mode))
        (void)posix_fadvise(f->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    if (S_ISREG(sb.st_mode) && cv_read_ahead_wanted(f->fd) &&
        (s = cv_read_ahead_open(f->fd, url, f->base.info.size, &f->ahead)))
        goto error;
    *out = &f->base;
    return CV_STATUS_OK;
error:
    local_read_close(&f->base);
    return s;
}

/* ---- writing ----------------------------------------------------------- */

typedef struct LocalWrite {
    CvWriteFile base;
    int fd;
    char *temp; /* NULL when appending to the file itself */
} LocalWrite;

static atomic_uint temp_counter;

static CvStatus local_append(CvWriteFile *base, const void *src, size_t n)
{
    LocalWrite *f = (LocalWrite *)base;
    return cv_file_write(f->fd, f->temp ? f->temp : local_path(base->url), src, n);
}

static void local_write_free(LocalWrite *f)
{
    if (f->fd >= 0)
        close(f->fd);
    free(f->temp);
    free(f->base.url);
    free(f);
}

static void local_abort(CvWriteFile *base)
{
    LocalWrite *f = (LocalWrite *)base;
    if (f->temp) {
        close(f->fd);
        f->fd = -1;
        unlink(f->temp); /* a partial file never stays behind */
    }
    local_write_free(f);
}

/* fsync the directory holding `path`: the rename's durability. A failure
 * changes nothing the caller could act on, so it is not reported. */
static void sync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : NULL;
    int fd = open(dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

static CvStatus local_commit(CvWriteFile *base)
{
    LocalWrite *f = (LocalWrite *)base;
    const char *path = local_path(base->url);
    CvStatus s = CV_STATUS_OK;
    if (f->temp && fsync(f->fd) != 0) /* durable before the rename publishes it */
        s = cv_file_error(errno, base->url, "(while syncing)");
    else if (close(f->fd) != 0)
        s = cv_file_error(errno, base->url, "(while closing)");
    f->fd = -1;
    if (!s && f->temp) {
        if (rename(f->temp, path) != 0)
            s = cv_file_error(errno, base->url, "(renaming the finished file over it)");
        else
            sync_parent(path);
    }
    if (s && f->temp)
        unlink(f->temp);
    local_write_free(f);
    return s;
}

static const CvWriteFileMethods local_write_methods = {local_append, local_commit, local_abort};

static CvStatus local_open_write(const char *url, bool append, CvWriteFile **out)
{
    const char *path = local_path(url);
    size_t n = strlen(path) + 64;
    LocalWrite *f = calloc(1, sizeof(*f));
    CvStatus s = CV_STATUS_OK;
    if (!f || !(f->base.url = strdup(url)) || (!append && !(f->temp = malloc(n)))) {
        if (f)
            free(f->base.url);
        free(f);
        return cv_error_nomem();
    }
    f->base.methods = &local_write_methods;
    f->fd = -1;
    if (append) {
        if ((f->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666)) < 0)
            s = cv_file_error(errno, url, NULL);
    } else {
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            s = cv_file_error(EISDIR, url, NULL);
            goto done;
        }
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        for (int attempt = 0; attempt < 16 && f->fd < 0; attempt++) {
            unsigned seq = atomic_fetch_add(&temp_counter, 1);
            unsigned noise = (unsigned)(now.tv_nsec ^ (long)(uintptr_t)f ^ (attempt * 7919));
            snprintf(f->temp, n, "%s.tmp-%ld-%u-%08x", path, (long)getpid(), seq, noise);
            f->fd = open(f->temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            if (f->fd < 0 && errno != EEXIST)
                break;
        }
        if (f->fd < 0) /* the temporary's errno is the target's (same directory) */
            s = cv_file_error(errno, url, NULL);
    }
done:
    if (s) {
        free(f->temp);
        f->temp = NULL;
        local_write_free(f);
        return s;
    }
    *out = &f->base;
    return CV_STATUS_OK;
}

/* ---- the rest of the table --------------------------------------------- */

static CvStatus local_stat(const char *url, CvFileInfo *out)
{
    struct stat sb;
    if (stat(local_path(url), &sb) != 0)
        return cv_file_error(errno, url, NULL);
    info_from_stat(&sb, out);
    return CV_STATUS_OK;
}

typedef struct Names {
    char **data;
    size_t len, cap;
} Names;

static void names_free(Names *a)
{
    for (size_t i = 0; i < a->len; i++)
        free(a->data[i]);
    free(a->data);
}

static bool names_push(Names *a, char *name)
{
    if (!cv_array_reserve((void **)&a->data, &a->cap, a->len + 1, sizeof(char *), 64))
        return false;
    a->data[a->len++] = name;
    return true;
}

/* "a/b" in a new string (NULL: no memory). */
static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", a, b);
    return p;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Append the entries of directory `dir` (names prefixed by `rel`) to *out;
 * recursive: the files below it instead of its directories. */
static CvStatus collect(const char *url, const char *dir, const char *rel, bool recursive,
                        Names *out)
{
    CvStatus s = CV_STATUS_OK;
    DIR *d = opendir(dir);
    if (!d)
        return cv_file_error(errno, url, NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *name = rel[0] ? join(rel, e->d_name) : strdup(e->d_name);
        if (!name) {
            s = cv_error_nomem();
            break;
        }
        bool is_dir = e->d_type == DT_DIR;
        if (recursive && (e->d_type == DT_UNKNOWN || e->d_type == DT_LNK)) {
            struct stat sb;
            char *full = join(dir, e->d_name);
            is_dir = full && stat(full, &sb) == 0 && S_ISDIR(sb.st_mode);
            free(full);
        }
        if (recursive && is_dir) {
            char *sub = join(dir, e->d_name);
            s = sub ? collect(url, sub, name, true, out) : cv_error_nomem();
            free(sub);
            free(name);
            if (s)
                break;
            continue;
        }
        if (!names_push(out, name)) {
            free(name);
            s = cv_error_nomem();
            break;
        }
    }
    closedir(d);
    return s;
}

static CvStatus local_list(const char *url, bool recursive, CvFsListFn each, void *ctx)
{
    Names names = {0};
    const char *dir = local_path(url);
    CvStatus s = collect(url, dir[0] ? dir : ".", "", recursive, &names);
    if (!s && names.len)
        qsort(names.data, names.len, sizeof(char *), compare_names);
    for (size_t i = 0; !s && i < names.len; i++) {
        char *full = join(dir[0] ? dir : ".", names.data[i]);
        struct stat sb;
        CvFileInfo info = {0};
        if (!full) {
            s = cv_error_nomem();
            break;
        }
        if (stat(full, &sb) == 0)
            info_from_stat(&sb, &info);
        free(full); /* an entry removed meanwhile is listed with an empty info */
        if (each(ctx, names.data[i], &info))
            break;
    }
    names_free(&names);
    return s;
}

static CvStatus local_remove(const char *url)
{
    const char *path = local_path(url);
    struct stat sb;
    if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return cv_file_error(EISDIR, url, NULL); /* unlink says EPERM */
    return unlink(path) == 0 ? CV_STATUS_OK : cv_file_error(errno, url, NULL);
}

static CvStatus local_make_dir(const char *url)
{
    const char *path = local_path(url);
    struct stat sb;
    if (mkdir(path, 0777) == 0 || (errno == EEXIST && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)))
        return CV_STATUS_OK;
    return cv_file_error(errno, url, NULL);
}

static CvStatus local_remove_dir(const char *url)
{
    return rmdir(local_path(url)) == 0 ? CV_STATUS_OK : cv_file_error(errno, url, NULL);
}

static CvStatus local_rename(const char *from, const char *to, bool overwrite)
{
    const char *a = local_path(from), *b = local_path(to);
    if (overwrite)
        return rename(a, b) == 0 ? CV_STATUS_OK : cv_file_error(errno, from, NULL);
#if defined(SYS_renameat2) && defined(RENAME_NOREPLACE)
    if (syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_NOREPLACE) == 0)
        return CV_STATUS_OK;
    if (errno != EINVAL && errno != ENOSYS) /* a file system without it: link + unlink */
        return cv_file_error(errno, errno == EEXIST ? to : from, NULL);
#endif
    if (link(a, b) != 0)
        return cv_file_error(errno, errno == EEXIST ? to : from, NULL);
    return unlink(a) == 0 ? CV_STATUS_OK : cv_file_error(errno, from, NULL);
}

/* copy is NULL: cv_fs_copy copies the bytes through open_read/open_write,
 * which is what a local copy would do too (and gives the same atomicity). */
const CvFileSystem cv_fs_local = {
    .scheme = "",
    .open_read = local_open_read,
    .open_write = local_open_write,
    .stat = local_stat,
    .list = local_list,
    .remove = local_remove,
    .make_dir = local_make_dir,
    .remove_dir = local_remove_dir,
    .rename = local_rename,
    .copy = NULL,
};
