/* io/read_ahead.h driven from C: byte-identical reads (sequential in many
 * chunk sizes, random offsets, many streams from several threads at once,
 * a file truncated while it is read, an empty file), a fork child, and the
 * backend chosen by CONVEYOR_READ_AHEAD_IO. Run without arguments by
 * tests/test_engine_c.py on plain files; tests/test_read_ahead.py runs it
 * with arguments over the slow FUSE file system (benchmarks/slow_fs.py):
 *
 *   read_ahead_test                      self-test in a temporary directory
 *   read_ahead_test cat FILE...          open every file, read them round-robin
 *                                        in 16 KiB pieces; print "crc size wanted path"
 *   read_ahead_test random FILE SEED     reads at random offsets, checked with pread()
 *   read_ahead_test cancel FILE          a read whose owner cancels it gives CV_CANCELLED
 *
 * Prints "N passed, 0 failed" and exits 0 when every check holds. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "core/blocking.h"
#include "core/status.h"
#include "io/read_ahead.h"

#include "check.h"

#ifdef __SANITIZE_THREAD__
#define UNDER_TSAN 1
#else
#define UNDER_TSAN 0
#endif

static char dir[64];

static char *make_file(const char *name, size_t size, unsigned seed, unsigned char **content)
{
    static char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    unsigned char *data = malloc(size ? size : 1);
    for (size_t i = 0; i < size; i++) {
        seed = seed * 1103515245u + 12345u;
        data[i] = (unsigned char)(seed >> 16);
    }
    FILE *f = fopen(path, "wb");
    fwrite(data, 1, size, f);
    fclose(f);
    *content = data;
    return path;
}

static uint64_t file_size(int fd)
{
    struct stat sb;
    return fstat(fd, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* Read the whole stream in pieces of `chunk`; compare with `want`. */
static void read_all_in(const char *path, const unsigned char *want, size_t size, size_t chunk)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CvReadAhead *ra = NULL;
    if (!ok(cv_read_ahead_open(fd, path, file_size(fd), &ra), "open")) {
        close(fd);
        return;
    }
    unsigned char *buf = malloc(chunk);
    size_t at = 0, got = 0;
    bool same = true;
    do {
        if (!ok(cv_read_ahead_read(ra, at, buf, chunk, &got), "read"))
            break;
        same = same && at + got <= size && memcmp(buf, want + at, got) == 0;
        at += got;
    } while (got == chunk);
    CHECK(same);
    CHECK(at == size);
    free(buf);
    cv_read_ahead_close(ra);
    close(fd);
}

static void test_sequential(void)
{
    size_t sizes[] = {0, 1, 4096, (256u << 10) - 1, 256u << 10, (256u << 10) + 1, 5000000};
    size_t chunks[] = {1, 1000, 16384, 256u << 10, 3u << 20, 8u << 20};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
        unsigned char *want;
        char *path = make_file("seq", sizes[i], (unsigned)i, &want);
        for (size_t c = 0; c < sizeof(chunks) / sizeof(*chunks); c++)
            if (sizes[i] / chunks[c] < 200000) /* 1-byte reads of small files only */
                read_all_in(path, want, sizes[i], chunks[c]);
        free(want);
        unlink(path);
    }
}

/* Reads at random offsets and lengths, checked against pread(). */
static void random_reads(const char *path, unsigned seed, int n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    uint64_t size = file_size(fd);
    CvReadAhead *ra = NULL;
    if (!ok(cv_read_ahead_open(fd, path, size, &ra), "open")) {
        close(fd);
        return;
    }
    unsigned char *a = malloc(1 << 20), *b = malloc(1 << 20);
    int same = 0;
    uint64_t at = 0;
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        unsigned r = seed >> 8;
        if (r % 4 == 0) /* a jump; else carry on from the last read (the fast path) */
            at = size ? (uint64_t)r * 7919u % (size + 100) : 0;
        size_t len = (r % 3 == 0) ? (r % (1u << 20)) : (r % 20000);
        size_t got = 0;
        if (!ok(cv_read_ahead_read(ra, at, a, len, &got), "read"))
            break;
        ssize_t want = pread(fd, b, len, (off_t)at);
        same += want >= 0 && (size_t)want == got && memcmp(a, b, got) == 0;
        at += got;
    }
    CHECK(same == n);
    free(a);
    free(b);
    cv_read_ahead_close(ra);
    close(fd);
}

/* Many streams at once from several threads, each thread closing some
 * streams mid-file (what is in flight is cancelled). */
typedef struct {
    const char *path;
    const unsigned char *want;
    size_t size;
    int thread;
} ManyArg;

static void *many_thread(void *arg)
{
    ManyArg *m = arg;
    enum { STREAMS = 16 };
    int fds[STREAMS];
    CvReadAhead *ra[STREAMS] = {0};
    size_t at[STREAMS] = {0};
    for (int i = 0; i < STREAMS; i++) {
        fds[i] = open(m->path, O_RDONLY | O_CLOEXEC);
        ok(cv_read_ahead_open(fds[i], m->path, m->size, &ra[i]), "open");
    }
    unsigned char buf[16384];
    bool same = true, more = true;
    while (more) {
        more = false;
        for (int i = 0; i < STREAMS; i++) {
            if (!ra[i])
                continue;
            size_t got = 0;
            if (!ok(cv_read_ahead_read(ra[i], at[i], buf, sizeof(buf), &got), "read"))
                got = 0;
            same = same && memcmp(buf, m->want + at[i], got) == 0;
            at[i] += got;
            bool stop_early = (i + m->thread) % 5 == 0 && at[i] > m->size / 3;
            if (got < sizeof(buf) || stop_early) {
                same = same && (stop_early || at[i] == m->size);
                cv_read_ahead_close(ra[i]);
                ra[i] = NULL;
                close(fds[i]);
            } else {
                more = true;
            }
        }
    }
    CHECK(same);
    return NULL;
}

static void test_many(void)
{
    unsigned char *want;
    size_t size = 3000000;
    char *path = make_file("many", size, 7, &want);
    pthread_t t[4];
    ManyArg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (ManyArg){path, want, size, i};
        pthread_create(&t[i], NULL, many_thread, &args[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    free(want);
    unlink(path);
}

/* The file shrinks after the stream opened: the reader gets a prefix of the
 * original bytes, no error, and the end where the file now ends (or where
 * the blocks already read end). */
static void test_truncated(void)
{
    unsigned char *want;
    size_t size = 4000000;
    char *path = make_file("trunc", size, 3, &want);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CvReadAhead *ra = NULL;
    if (ok(cv_read_ahead_open(fd, path, size, &ra), "open")) {
        unsigned char buf[100000];
        size_t got = 0, at = 0;
        ok(cv_read_ahead_read(ra, 0, buf, sizeof(buf), &got), "read");
        at = got;
        CHECK(truncate(path, 1500000) == 0);
        bool same = memcmp(buf, want, got) == 0;
        do {
            if (!ok(cv_read_ahead_read(ra, at, buf, sizeof(buf), &got), "read"))
                break;
            same = same && at + got <= size && memcmp(buf, want + at, got) == 0;
            at += got;
        } while (got == sizeof(buf));
        CHECK(same);
        CHECK(at >= 1500000 && at <= size);
        cv_read_ahead_close(ra);
    }
    close(fd);
    free(want);
    unlink(path);
}

/* A stream opened before fork() refuses reads in the child; a new one works. */
static void test_fork(void)
{
    unsigned char *want;
    size_t size = 1000000;
    char *path = make_file("fork", size, 11, &want);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CvReadAhead *ra = NULL;
    if (!ok(cv_read_ahead_open(fd, path, size, &ra), "open"))
        return;
    pid_t pid = fork();
    if (pid == 0) {
        unsigned char buf[1000];
        size_t got = 1;
        CvStatus s = cv_read_ahead_read(ra, 0, buf, sizeof(buf), &got);
        int bad = !(s && s->code == CV_FAILED_PRECONDITION && got == 0);
        cv_status_free(s);
        cv_read_ahead_close(ra);
        CvReadAhead *mine = NULL;
        s = cv_read_ahead_open(fd, path, size, &mine);
        bad |= s != NULL;
        unsigned char *all = malloc(size);
        if (!s) {
            s = cv_read_ahead_read(mine, 0, all, size, &got);
            bad |= s != NULL || got != size || memcmp(all, want, size) != 0;
            cv_read_ahead_close(mine);
        }
        cv_status_free(s);
        _exit(bad);
    }
    int wstatus = 0;
    CHECK(pid > 0 && waitpid(pid, &wstatus, 0) == pid);
    CHECK(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
    unsigned char *all = malloc(size);
    size_t got = 0;
    if (ok(cv_read_ahead_read(ra, 0, all, size, &got), "read in the parent"))
        CHECK(got == size && memcmp(all, want, size) == 0);
    free(all);
    cv_read_ahead_close(ra);
    close(fd);
    free(want);
    unlink(path);
}

/* Not a regular file: refused. */
static void test_pipe(void)
{
    int p[2];
    CHECK(pipe(p) == 0);
    CvReadAhead *ra = NULL;
    CvStatus s = cv_read_ahead_open(p[0], "a pipe", 0, &ra);
    CHECK(s && s->code == CV_INVALID_ARGUMENT && ra == NULL);
    cv_status_free(s);
    close(p[0]);
    close(p[1]);
}

static void self_test(void)
{
    snprintf(dir, sizeof(dir), "/tmp/cv-read-ahead-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(2);
    }
    test_sequential();
    unsigned char *want;
    char *path = make_file("random", 3333333, 5, &want);
    random_reads(path, 1, 400);
    free(want);
    unlink(path);
    test_many();
    test_truncated();
    test_pipe();
    if (!UNDER_TSAN) /* TSan cannot start threads in a child of a threaded parent */
        test_fork();
    rmdir(dir);
}

/* Open every file at once (as an interleave does), then read them in turn. */
static void cat(int n, char **paths)
{
    int *fds = calloc((size_t)n, sizeof(int));
    CvReadAhead **ra = calloc((size_t)n, sizeof(*ra));
    uLong *crc = calloc((size_t)n, sizeof(uLong));
    size_t *at = calloc((size_t)n, sizeof(size_t));
    bool *wanted = calloc((size_t)n, sizeof(bool));
    for (int i = 0; i < n; i++) {
        fds[i] = open(paths[i], O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* as io/file.c opens */
        CHECK(fds[i] >= 0);
        wanted[i] = cv_read_ahead_wanted(fds[i]);
        ok(cv_read_ahead_open(fds[i], paths[i], file_size(fds[i]), &ra[i]), "open");
    }
    unsigned char buf[16384];
    for (bool more = true; more;) {
        more = false;
        for (int i = 0; i < n; i++) {
            if (!ra[i])
                continue;
            size_t got = 0;
            ok(cv_read_ahead_read(ra[i], at[i], buf, sizeof(buf), &got), "read");
            crc[i] = crc32(crc[i], buf, (uInt)got);
            at[i] += got;
            if (got < sizeof(buf)) {
                cv_read_ahead_close(ra[i]);
                ra[i] = NULL;
            } else {
                more = true;
            }
        }
    }
    for (int i = 0; i < n; i++) {
        printf("%lu %zu %d %s\n", crc[i], at[i], wanted[i], paths[i]);
        close(fds[i]);
    }
    free(fds), free(ra), free(crc), free(at), free(wanted);
}

static bool always(void *owner)
{
    (void)owner;
    return true;
}

/* The read's owner gave the work up: the read stops waiting for the block. */
static void cancel_test(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CvReadAhead *ra = NULL;
    if (!ok(cv_read_ahead_open(fd, path, file_size(fd), &ra), "open"))
        return;
    cv_blocking_set_hooks((CvBlockingHooks){.cancelled = always});
    unsigned char buf[1000];
    size_t got = 1;
    CvStatus s = cv_read_ahead_read(ra, 0, buf, sizeof(buf), &got);
    CHECK(s && s->code == CV_CANCELLED && got == 0);
    CHECK(s && strstr(s->message, path));
    cv_status_free(s);
    cv_blocking_set_hooks((CvBlockingHooks){0});
    cv_read_ahead_close(ra);
    close(fd);
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "cat") == 0)
        cat(argc - 2, argv + 2);
    else if (argc == 4 && strcmp(argv[1], "random") == 0)
        random_reads(argv[2], (unsigned)atoi(argv[3]), 200);
    else if (argc == 3 && strcmp(argv[1], "cancel") == 0)
        cancel_test(argv[2]);
    else
        self_test();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
