/* Open-ahead (io/fs_ahead.h): files opened before anyone asks for them,
 * kept in a process-wide list until the op that reads one takes it by its
 * URL (cv_fs_take_ahead).
 *
 * Why: a remote open starts its GET at once (on the cv-io thread), so a
 * kernel that knows which file an element will read (a map whose traced
 * program read_file's an input component) opens it when it pulls the
 * element, and the op that later reads the same URL on a worker takes that
 * file, its bytes (nearly) there, instead of holding the worker for the
 * first byte.
 *
 * Ownership: a CvFsAhead belongs to the kernel that opened it (one thread at
 * a time); its file belongs to the list until taken (then to the taker) or
 * until cv_fs_ahead_drop closes it. Thread-safety: one mutex guards the
 * list; files are opened and closed outside it. The list is a cache: a file
 * not found there is simply opened, so a dropped entry costs a request, never
 * a result. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "io/fs_ahead.h"

struct CvFsAhead {
    CvReadFile *file; /* NULL once taken (or never opened) */
    struct CvFsAhead *prev, *next; /* in the list while file is there */
    bool listed;
    unsigned gen; /* ahead_gen when listed: a forked child's list lacks older entries */
};

static pthread_mutex_t ahead_mu = PTHREAD_MUTEX_INITIALIZER;
static CvFsAhead *ahead_head; /* guarded by ahead_mu */
static _Atomic int ahead_count; /* entries listed: lets cv_fs_take_ahead skip the lock */
static unsigned ahead_gen;      /* guarded by ahead_mu; +1 in a forked child */

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* A forked child does not take the parent's open files (their transfers
 * belong to the parent's I/O thread): it forgets the list. The entries stay
 * the parent's iterators' (a child that touches those gets a clear error
 * elsewhere, core/pipeline.h). */
static void after_fork_child(void)
{
    pthread_mutex_init(&ahead_mu, NULL);
    ahead_head = NULL;
    ahead_gen++;
    atomic_store(&ahead_count, 0);
}

static void install_atfork(void)
{
    pthread_atfork(NULL, NULL, after_fork_child);
}

static void unlink_locked(CvFsAhead *a)
{
    if (a->prev)
        a->prev->next = a->next;
    else
        ahead_head = a->next;
    if (a->next)
        a->next->prev = a->prev;
    a->prev = a->next = NULL;
    a->listed = false;
    atomic_fetch_sub_explicit(&ahead_count, 1, memory_order_relaxed);
}

CvFsAhead *cv_fs_open_ahead(const char *url)
{
    if (!cv_fs_is_remote(url))
        return NULL; /* a local open starts no read: nothing to gain */
    pthread_once(&atfork_once, install_atfork);
    CvFsAhead *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    const CvFileSystem *fs;
    CvStatus s = cv_fs_find(url, &fs);
    if (!s)
        s = fs->open_read(url, &a->file);
    if (s) { /* the op's own open will say it again, in its turn */
        cv_status_free(s);
        free(a);
        return NULL;
    }
    pthread_mutex_lock(&ahead_mu);
    a->next = ahead_head;
    if (ahead_head)
        ahead_head->prev = a;
    ahead_head = a;
    a->listed = true;
    a->gen = ahead_gen;
    atomic_fetch_add_explicit(&ahead_count, 1, memory_order_relaxed);
    pthread_mutex_unlock(&ahead_mu);
    return a;
}

void cv_fs_ahead_drop(CvFsAhead *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&ahead_mu);
    CvReadFile *f = a->file;
    a->file = NULL;
    if (a->listed && a->gen == ahead_gen)
        unlink_locked(a);
    pthread_mutex_unlock(&ahead_mu);
    if (f) /* never taken: drops its GET */
        f->methods->close(f);
    free(a);
}

bool cv_fs_take_ahead(const char *url, CvReadFile **out)
{
    if (atomic_load_explicit(&ahead_count, memory_order_relaxed) == 0)
        return false;
    CvReadFile *f = NULL;
    pthread_mutex_lock(&ahead_mu);
    /* The oldest entry for the URL: its GET started first. */
    CvFsAhead *found = NULL;
    for (CvFsAhead *a = ahead_head; a; a = a->next)
        if (strcmp(a->file->url, url) == 0)
            found = a;
    if (found) {
        f = found->file;
        found->file = NULL;
        unlink_locked(found);
    }
    pthread_mutex_unlock(&ahead_mu);
    *out = f;
    return f != NULL;
}
