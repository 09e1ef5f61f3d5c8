/* Read-ahead streams over local files whose reads wait (see read_ahead.h). */
#include "io/read_ahead.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "core/blocking.h"
#include "core/thread.h"
#include "io/file.h"

#define BLOCK ((size_t)256 << 10)
#define START_BLOCKS 4
#define MAX_BLOCKS 16
/* Slots: the window's blocks, plus room for blocks dropped while in flight
 * (a restart elsewhere) that the backend still writes into. */
#define SLOTS (2 * MAX_BLOCKS)
#define DEFAULT_BUDGET ((size_t)256 << 20)
#define MAX_IO_THREADS 64
#define RING_ENTRIES 256

enum { SLOT_FREE, SLOT_BUSY, SLOT_READY, SLOT_DROPPED };

typedef struct Slot {
    struct CvReadAhead *ra;
    unsigned char *buf; /* BLOCK bytes, owned; allocated at first use */
    uint64_t off;
    int state;
    bool charged;   /* counted in the process-wide budget */
    ssize_t res;    /* READY: bytes read, or -errno */
    int64_t issued_ns;
    struct Slot *next; /* the I/O threads' queue */
} Slot;

struct CvReadAhead {
    int fd;
    char *path; /* owned */
    uint64_t size;
    pid_t pid; /* the process whose backend holds the reads */
    pthread_mutex_t mu; /* guards everything below and the slots' state and res */
    pthread_cond_t cond;
    Slot slots[SLOTS];
    int window[MAX_BLOCKS]; /* slot indices in file order */
    int count;
    uint64_t next_off;  /* where the next block is issued */
    bool at_end;        /* a block came back short: issue nothing after it */
    int busy;           /* slots the backend holds (BUSY or DROPPED) */
    uint64_t completions; /* reads completed: what a waiting reader watches */
    int want;           /* window size in blocks */
    int64_t latency_ns; /* moving average of the blocks' read times */
    int64_t opened_ns, waited_ns;
    uint64_t consumed;
};

/* ---- the process-wide backend ------------------------------------------ */

enum { BACKEND_NONE, BACKEND_URING, BACKEND_THREADS };

static struct {
    pthread_mutex_t mu; /* guards the fields below (a leaf: no stream lock is taken under it) */
    pthread_cond_t cond; /* I/O threads: work queued */
    int kind;
    pid_t pid;
    /* io_uring */
    int ring_fd, event_fd;
    unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
    unsigned *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
    unsigned sq_entries;
    Slot *overflow, *overflow_tail; /* reads waiting for room in the SQ */
    uint64_t *cancels; /* user_data to cancel, waiting for room */
    size_t ncancels, cancels_cap;
    /* I/O threads */
    Slot *queue, *queue_tail;
    int threads, idle;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .ring_fd = -1, .event_fd = -1};

static uint64_t event_value; /* the eventfd read's buffer (the kernel writes it) */
static bool event_armed;      /* an eventfd read is in the ring (g.mu) */
static atomic_size_t budget_used;
static size_t budget_limit;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void complete(Slot *s, ssize_t res);

/* After fork: the parent's threads and ring are not ours. The child starts a
 * backend of its own at its first stream. */
static void after_fork_child(void)
{
    pthread_mutex_init(&g.mu, NULL);
    cv_cond_init(&g.cond);
    if (g.ring_fd >= 0)
        close(g.ring_fd);
    if (g.event_fd >= 0)
        close(g.event_fd);
    g.ring_fd = g.event_fd = -1;
    event_armed = false;
    g.kind = BACKEND_NONE;
    g.overflow = g.overflow_tail = g.queue = g.queue_tail = NULL;
    g.ncancels = 0;
    g.threads = g.idle = 0;
    atomic_store(&budget_used, 0);
}

static void init_once(void)
{
    cv_cond_init(&g.cond);
    const char *b = getenv("CONVEYOR_READ_AHEAD_BYTES");
    char *end = NULL;
    unsigned long long v = b ? strtoull(b, &end, 10) : 0;
    budget_limit = b && end != b ? (size_t)v : DEFAULT_BUDGET;
    pthread_atfork(NULL, NULL, after_fork_child);
}

/* -- io_uring (raw system calls) -- */

static int uring_enter(unsigned submit, unsigned min_complete, unsigned flags)
{
    return (int)syscall(__NR_io_uring_enter, g.ring_fd, submit, min_complete, flags, NULL, 0);
}

/* Room in the SQ (g.mu held), or NULL. The SQ's array maps index i to SQE i. */
static struct io_uring_sqe *sqe_get(void)
{
    unsigned head = __atomic_load_n(g.sq_head, __ATOMIC_ACQUIRE);
    unsigned tail = *g.sq_tail;
    if (tail - head >= g.sq_entries)
        return NULL;
    struct io_uring_sqe *e = &g.sqes[tail & *g.sq_mask];
    memset(e, 0, sizeof(*e));
    return e;
}

static void sqe_push(void)
{
    __atomic_store_n(g.sq_tail, *g.sq_tail + 1, __ATOMIC_RELEASE);
}

#define TAG_EVENT 1u
#define TAG_CANCEL 2u

static bool arm_event(void)
{
    struct io_uring_sqe *e = sqe_get();
    if (!e)
        return false;
    e->opcode = IORING_OP_READ;
    e->fd = g.event_fd;
    e->addr = (uint64_t)(uintptr_t)&event_value;
    e->len = sizeof(event_value);
    e->user_data = TAG_EVENT;
    sqe_push();
    return true;
}

/* Move the eventfd read (first: without it cv-uring could sleep through new
 * work), queued cancels and reads into the SQ (g.mu held). */
static void uring_fill_sq(void)
{
    if (!event_armed && !(event_armed = arm_event()))
        return;
    while (g.ncancels) {
        struct io_uring_sqe *e = sqe_get();
        if (!e)
            return;
        e->opcode = IORING_OP_ASYNC_CANCEL;
        e->fd = -1;
        e->addr = g.cancels[--g.ncancels];
        e->user_data = TAG_CANCEL;
        sqe_push();
    }
    while (g.overflow) {
        struct io_uring_sqe *e = sqe_get();
        if (!e)
            return;
        Slot *s = g.overflow;
        g.overflow = s->next;
        if (!g.overflow)
            g.overflow_tail = NULL;
        e->opcode = IORING_OP_READ;
        e->fd = s->ra->fd;
        e->off = s->off;
        e->addr = (uint64_t)(uintptr_t)s->buf;
        e->len = (unsigned)BLOCK;
        e->user_data = (uint64_t)(uintptr_t)s;
        sqe_push();
    }
}

/* cv-uring: submits what the streams queued and completes what the kernel
 * finished. Its io_uring context owns every read (io-wq workers are its). */
static void *uring_main(void *arg)
{
    (void)arg;
    unsigned limits[2] = {256, 0}; /* io-wq workers for file reads (default: 4 per CPU) */
    (void)syscall(__NR_io_uring_register, g.ring_fd, IORING_REGISTER_IOWQ_MAX_WORKERS, limits, 2);
    for (;;) {
        pthread_mutex_lock(&g.mu);
        uring_fill_sq();
        unsigned pending = *g.sq_tail - __atomic_load_n(g.sq_head, __ATOMIC_ACQUIRE);
        pthread_mutex_unlock(&g.mu);
        int r = uring_enter(pending, 1, IORING_ENTER_GETEVENTS);
        if (r < 0 && errno != EINTR && errno != EAGAIN && errno != EBUSY)
            usleep(1000); /* should not happen; do not spin */
        unsigned head = *g.cq_head;
        unsigned tail = __atomic_load_n(g.cq_tail, __ATOMIC_ACQUIRE);
        for (; head != tail; head++) {
            struct io_uring_cqe *c = &g.cqes[head & *g.cq_mask];
            if (c->user_data == TAG_EVENT) {
                pthread_mutex_lock(&g.mu);
                event_armed = false;
                pthread_mutex_unlock(&g.mu);
            } else if (c->user_data != TAG_CANCEL) {
                complete((Slot *)(uintptr_t)c->user_data, c->res);
            }
        }
        __atomic_store_n(g.cq_head, head, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void wake_uring(void)
{
    uint64_t one = 1;
    while (write(g.event_fd, &one, sizeof(one)) < 0 && errno == EINTR)
        ;
}

/* Set up the ring and its thread (g.mu held). False: use I/O threads. */
static bool uring_start(void)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof(p));
    int fd = (int)syscall(__NR_io_uring_setup, RING_ENTRIES, &p);
    if (fd < 0)
        return false;
    if (!(p.features & IORING_FEAT_NODROP) || !(p.features & IORING_FEAT_SINGLE_MMAP) ||
        !(p.features & IORING_FEAT_RW_CUR_POS)) {
        close(fd); /* before Linux 5.6 (IORING_OP_READ): use threads */
        return false;
    }
    size_t sq_size = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_size = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    size_t ring_size = sq_size > cq_size ? sq_size : cq_size;
    void *ring = mmap(NULL, ring_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                      IORING_OFF_SQ_RING);
    void *sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
    int efd = eventfd(0, EFD_CLOEXEC);
    if (ring == MAP_FAILED || sqes == MAP_FAILED || efd < 0)
        goto fail;
    char *r = ring;
    g.sq_head = (unsigned *)(r + p.sq_off.head);
    g.sq_tail = (unsigned *)(r + p.sq_off.tail);
    g.sq_mask = (unsigned *)(r + p.sq_off.ring_mask);
    g.sq_array = (unsigned *)(r + p.sq_off.array);
    g.cq_head = (unsigned *)(r + p.cq_off.head);
    g.cq_tail = (unsigned *)(r + p.cq_off.tail);
    g.cq_mask = (unsigned *)(r + p.cq_off.ring_mask);
    g.cqes = (struct io_uring_cqe *)(r + p.cq_off.cqes);
    g.sqes = sqes;
    g.sq_entries = p.sq_entries;
    for (unsigned i = 0; i < p.sq_entries; i++)
        g.sq_array[i] = i;
    g.ring_fd = fd;
    g.event_fd = efd;
    CvThread t = {0};
    CvStatus st = cv_thread_start(&t, uring_main, NULL, "cv-uring");
    if (st) { /* the mappings stay: a thread that may have started reads them */
        cv_status_free(st);
        g.ring_fd = g.event_fd = -1;
        close(efd);
        close(fd);
        return false;
    }
    pthread_detach(t.handle); /* runs for the life of the process */
    return true;
fail:
    if (ring != MAP_FAILED)
        munmap(ring, ring_size);
    if (sqes != MAP_FAILED)
        munmap(sqes, p.sq_entries * sizeof(struct io_uring_sqe));
    if (efd >= 0)
        close(efd);
    close(fd);
    return false;
}

/* -- I/O threads -- */

static void *io_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g.mu);
    for (;;) {
        while (!g.queue) {
            g.idle++;
            pthread_cond_wait(&g.cond, &g.mu);
            g.idle--;
        }
        Slot *s = g.queue;
        g.queue = s->next;
        if (!g.queue)
            g.queue_tail = NULL;
        pthread_mutex_unlock(&g.mu);
        ssize_t r;
        do
            r = pread(s->ra->fd, s->buf, BLOCK, (off_t)s->off);
        while (r < 0 && errno == EINTR);
        complete(s, r < 0 ? -errno : r);
        pthread_mutex_lock(&g.mu);
    }
    return NULL;
}

/* The backend for this process, started at the first stream. */
static int backend(void)
{
    pthread_once(&once, init_once);
    pthread_mutex_lock(&g.mu);
    if (g.kind == BACKEND_NONE || g.pid != getpid()) {
        const char *io = getenv("CONVEYOR_READ_AHEAD_IO");
        bool threads = io && strcmp(io, "threads") == 0;
        g.kind = !threads && uring_start() ? BACKEND_URING : BACKEND_THREADS;
        g.pid = getpid();
    }
    int kind = g.kind;
    pthread_mutex_unlock(&g.mu);
    return kind;
}

/* Hand a BUSY slot to the backend (no stream lock held). */
static void submit(Slot *s)
{
    s->next = NULL;
    pthread_mutex_lock(&g.mu);
    if (g.kind == BACKEND_URING) {
        if (g.overflow_tail)
            g.overflow_tail->next = s;
        else
            g.overflow = s;
        g.overflow_tail = s;
        pthread_mutex_unlock(&g.mu);
        wake_uring();
        return;
    }
    if (g.queue_tail)
        g.queue_tail->next = s;
    else
        g.queue = s;
    g.queue_tail = s;
    if (g.idle)
        pthread_cond_signal(&g.cond);
    else if (g.threads < MAX_IO_THREADS) {
        CvThread t = {0};
        CvStatus st = cv_thread_start(&t, io_main, NULL, "cv-io");
        if (!st) {
            pthread_detach(t.handle); /* runs for the life of the process */
            g.threads++;
        }
        cv_status_free(st); /* without a new thread, the running ones take it */
    }
    pthread_mutex_unlock(&g.mu);
}

/* Ask the backend to give up a slot's read (no stream lock held). A read
 * still queued completes with -ECANCELED at once; one running finishes (or
 * the kernel interrupts it). Either way complete() runs once. */
static void cancel(Slot *s)
{
    Slot *dropped = NULL;
    pthread_mutex_lock(&g.mu);
    Slot **q = g.kind == BACKEND_URING ? &g.overflow : &g.queue;
    Slot **tail = g.kind == BACKEND_URING ? &g.overflow_tail : &g.queue_tail;
    Slot *prev = NULL;
    for (Slot *p = *q; p; prev = p, p = p->next) {
        if (p != s)
            continue;
        if (prev)
            prev->next = p->next;
        else
            *q = p->next;
        if (*tail == p)
            *tail = prev;
        dropped = p;
        break;
    }
    if (!dropped && g.kind == BACKEND_URING) {
        if (g.ncancels == g.cancels_cap) {
            size_t cap = g.cancels_cap ? 2 * g.cancels_cap : 64;
            uint64_t *c = realloc(g.cancels, cap * sizeof(*c));
            if (c) {
                g.cancels = c;
                g.cancels_cap = cap;
            }
        }
        if (g.ncancels < g.cancels_cap) /* without memory the read just finishes */
            g.cancels[g.ncancels++] = (uint64_t)(uintptr_t)s;
    }
    bool wake = !dropped && g.kind == BACKEND_URING;
    pthread_mutex_unlock(&g.mu);
    if (dropped)
        complete(dropped, -ECANCELED);
    else if (wake)
        wake_uring();
}

/* ---- streams ----------------------------------------------------------- */

static void uncharge(Slot *s)
{
    if (s->charged)
        atomic_fetch_sub(&budget_used, BLOCK);
    s->charged = false;
}

/* The backend finished a slot's read (any thread; no lock held). A read
 * still wanted that was cancelled or interrupted is issued again: an
 * io_uring cancel meant for a completed read whose slot's address was
 * reused since can hit the wrong read. */
static void complete(Slot *s, ssize_t res)
{
    CvReadAhead *ra = s->ra;
    pthread_mutex_lock(&ra->mu);
    if (s->state == SLOT_BUSY && (res == -ECANCELED || res == -EINTR)) {
        pthread_mutex_unlock(&ra->mu);
        submit(s);
        return;
    }
    ra->busy--;
    ra->completions++;
    if (s->state == SLOT_DROPPED) {
        s->state = SLOT_FREE;
        uncharge(s);
    } else {
        s->state = SLOT_READY;
        s->res = res;
        int64_t took = cv_now_ns() - s->issued_ns;
        ra->latency_ns = ra->latency_ns ? (7 * ra->latency_ns + took) / 8 : took;
    }
    pthread_cond_broadcast(&ra->cond);
    pthread_mutex_unlock(&ra->mu);
}

/* The window size for the reader's rate and the reads' latency: the bytes
 * that arrive during one read's wait at the reader's pace, plus margin. */
static int window_blocks(const CvReadAhead *ra)
{
    int64_t busy_ns = cv_now_ns() - ra->opened_ns - ra->waited_ns;
    if (ra->consumed < 4 * BLOCK || busy_ns <= 0 || ra->latency_ns <= 0)
        return START_BLOCKS;
    double rate = (double)ra->consumed / (double)busy_ns; /* bytes per ns, unwaited */
    double ahead = rate * (double)ra->latency_ns * 2.0 + (double)BLOCK;
    int n = (int)(ahead / (double)BLOCK) + 1;
    return n < START_BLOCKS ? START_BLOCKS : n > MAX_BLOCKS ? MAX_BLOCKS : n;
}

/* Issue blocks up to the window (mu held); the slots to submit go to
 * out[] (submitted by the caller after unlocking). The first block of an
 * empty window is issued whatever the budget and the size, so a reader
 * always gets one read (a file that grew is read past its size at open). */
static int fill(CvReadAhead *ra, Slot **out)
{
    int n = 0;
    ra->want = window_blocks(ra);
    while (ra->count < ra->want && !ra->at_end && (ra->next_off < ra->size || ra->count == 0)) {
        int free_slot = -1;
        for (int i = 0; i < SLOTS && free_slot < 0; i++)
            if (ra->slots[i].state == SLOT_FREE)
                free_slot = i;
        if (free_slot < 0)
            break; /* dropped reads still hold the slots */
        Slot *s = &ra->slots[free_slot];
        bool charge = ra->count > 0;
        if (charge && atomic_fetch_add(&budget_used, BLOCK) + BLOCK > budget_limit) {
            atomic_fetch_sub(&budget_used, BLOCK);
            break;
        }
        if (!s->buf && !(s->buf = malloc(BLOCK))) {
            if (charge)
                atomic_fetch_sub(&budget_used, BLOCK);
            break; /* the reader reports it if the window is empty */
        }
        s->charged = charge;
        s->state = SLOT_BUSY;
        s->off = ra->next_off;
        s->issued_ns = cv_now_ns();
        ra->next_off += BLOCK;
        ra->busy++;
        ra->window[ra->count++] = free_slot;
        out[n++] = s;
    }
    return n;
}

/* Forget the window's first block (mu held). A block in flight is dropped:
 * its slot frees itself when the read completes; *cancel_out gets it. */
static void pop_first(CvReadAhead *ra, Slot **cancel_out, int *ncancel)
{
    Slot *s = &ra->slots[ra->window[0]];
    if (s->state == SLOT_BUSY) {
        s->state = SLOT_DROPPED;
        cancel_out[(*ncancel)++] = s;
    } else {
        s->state = SLOT_FREE;
        uncharge(s);
    }
    memmove(ra->window, ra->window + 1, (size_t)(ra->count - 1) * sizeof(int));
    ra->count--;
}

/* Drop the whole window and read from `offset` next (mu held). */
static void restart(CvReadAhead *ra, uint64_t offset, Slot **cancel_out, int *ncancel)
{
    while (ra->count)
        pop_first(ra, cancel_out, ncancel);
    ra->next_off = offset;
    ra->at_end = false;
}

static bool forked(const CvReadAhead *ra)
{
    return ra->pid != getpid();
}

CvStatus cv_read_ahead_open(int fd, const char *path, uint64_t size, CvReadAhead **out)
{
    struct stat sb;
    if (fstat(fd, &sb) < 0)
        return cv_file_error(errno, path, NULL);
    if (!S_ISREG(sb.st_mode))
        return cv_error(CV_INVALID_ARGUMENT, "%s: read-ahead needs a regular file", path);
    /* io_uring would give EAGAIN for an O_NONBLOCK file that cannot read
     * without waiting; on a regular file the flag means nothing to read(). */
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0 && (flags & O_NONBLOCK) && fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
        return cv_file_error(errno, path, NULL);
    CvReadAhead *ra = calloc(1, sizeof(*ra));
    if (!ra || !(ra->path = strdup(path))) {
        free(ra);
        return cv_error_nomem();
    }
    backend();
    ra->fd = fd;
    ra->size = size;
    ra->pid = getpid();
    ra->opened_ns = cv_now_ns();
    pthread_mutex_init(&ra->mu, NULL);
    cv_cond_init(&ra->cond);
    for (int i = 0; i < SLOTS; i++)
        ra->slots[i].ra = ra;
    Slot *issue[MAX_BLOCKS];
    pthread_mutex_lock(&ra->mu);
    int n = fill(ra, issue);
    pthread_mutex_unlock(&ra->mu);
    for (int i = 0; i < n; i++)
        submit(issue[i]);
    *out = ra;
    return CV_STATUS_OK;
}

/* Wait one slice at most for a read to complete (mu held on entry and
 * exit), letting the pool run another thread and the consumer's GIL go
 * meanwhile. The caller then checks for cancellation and interrupts. */
static void wait_slice(CvReadAhead *ra)
{
    int64_t t0 = cv_now_ns();
    uint64_t seen = ra->completions;
    pthread_mutex_unlock(&ra->mu);
    cv_blocking_begin();
    void *outside = cv_wait_outside_begin();
    pthread_mutex_lock(&ra->mu);
    if (ra->completions == seen) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += (long)CV_WAIT_SLICE_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&ra->cond, &ra->mu, &ts);
    }
    pthread_mutex_unlock(&ra->mu);
    cv_wait_outside_end(outside);
    cv_blocking_end();
    pthread_mutex_lock(&ra->mu);
    ra->waited_ns += cv_now_ns() - t0;
}

CvStatus cv_read_ahead_read(CvReadAhead *ra, uint64_t offset, void *dst, size_t n, size_t *got)
{
    CvStatus st = CV_STATUS_OK;
    size_t done = 0;
    if (forked(ra)) {
        *got = 0;
        return cv_error(CV_FAILED_PRECONDITION,
                        "%s: read-ahead opened before fork() cannot be read in the child", ra->path);
    }
    Slot *issue[MAX_BLOCKS], *drop[SLOTS];
    int nissue = 0, ndrop = 0;
    pthread_mutex_lock(&ra->mu);
    while (done < n && !st) {
        /* Find the block holding `offset`: drop the ones before it, or the
         * whole window when it is elsewhere. */
        if (ra->count) {
            uint64_t first = ra->slots[ra->window[0]].off;
            if (offset < first || offset >= first + (uint64_t)ra->count * BLOCK)
                restart(ra, offset, drop, &ndrop);
            else
                while (offset >= ra->slots[ra->window[0]].off + BLOCK)
                    pop_first(ra, drop, &ndrop);
        } else if (offset != ra->next_off) {
            restart(ra, offset, drop, &ndrop);
        }
        nissue = fill(ra, issue);
        if (nissue || ndrop) { /* hand over and cancel outside the stream's lock */
            pthread_mutex_unlock(&ra->mu);
            for (int i = 0; i < nissue; i++)
                submit(issue[i]);
            for (int i = 0; i < ndrop; i++)
                cancel(drop[i]);
            nissue = ndrop = 0;
            pthread_mutex_lock(&ra->mu);
        }
        if (!ra->count && !ra->busy) { /* nothing could be issued */
            st = cv_error_nomem();
            break;
        }
        Slot *s = ra->count ? &ra->slots[ra->window[0]] : NULL;
        if (!s || s->state == SLOT_BUSY) { /* in flight, or no slot free yet */
            uint64_t seen = ra->completions;
            wait_slice(ra);
            if (ra->completions != seen)
                continue;
            pthread_mutex_unlock(&ra->mu);
            if (cv_blocking_cancelled())
                st = cv_error(CV_CANCELLED, "%s: the read was cancelled", ra->path);
            else if (cv_interrupt_pending())
                st = cv_error(CV_INTERRUPTED, "interrupted");
            pthread_mutex_lock(&ra->mu);
            continue;
        }
        if (s->res < 0) {
            st = cv_file_error((int)-s->res, ra->path, "(while reading)");
            restart(ra, offset, drop, &ndrop); /* a retry reads again */
            break;
        }
        uint64_t valid_end = s->off + (uint64_t)s->res;
        if (offset >= valid_end) {
            /* A short block: the end of the file where it ends at (or past)
             * its size at open, or nothing was there; else it shrank, or the
             * read was short: read again from here to be sure. */
            if (s->res == 0 || valid_end >= ra->size) {
                ra->at_end = true;
                break;
            }
            restart(ra, offset, drop, &ndrop);
            continue;
        }
        size_t k = (size_t)(valid_end - offset);
        if (k > n - done)
            k = n - done;
        memcpy((char *)dst + done, s->buf + (offset - s->off), k);
        done += k;
        offset += k;
        ra->consumed += k;
    }
    pthread_mutex_unlock(&ra->mu);
    for (int i = 0; i < ndrop; i++)
        cancel(drop[i]);
    *got = done;
    return st;
}

void cv_read_ahead_close(CvReadAhead *ra)
{
    if (!ra)
        return;
    if (!forked(ra)) {
        Slot *drop[SLOTS];
        int ndrop = 0;
        pthread_mutex_lock(&ra->mu);
        restart(ra, 0, drop, &ndrop);
        pthread_mutex_unlock(&ra->mu);
        for (int i = 0; i < ndrop; i++)
            cancel(drop[i]);
        pthread_mutex_lock(&ra->mu);
        while (ra->busy)
            pthread_cond_wait(&ra->cond, &ra->mu); /* the backend still writes into a buffer */
        pthread_mutex_unlock(&ra->mu);
        pthread_mutex_destroy(&ra->mu);
        pthread_cond_destroy(&ra->cond);
    }
    for (int i = 0; i < SLOTS; i++) {
        if (!forked(ra)) /* a child's budget never counted the parent's blocks */
            uncharge(&ra->slots[i]);
        free(ra->slots[i].buf);
    }
    free(ra->path);
    free(ra);
}

/* Magic numbers of statfs' f_type (linux/magic.h and the file systems'
 * own headers). */
bool cv_read_ahead_wanted(int fd)
{
    const char *env = getenv("CONVEYOR_READ_AHEAD");
    if (env && strcmp(env, "always") == 0)
        return true;
    if (env && strcmp(env, "never") == 0)
        return false;
    struct statfs sf;
    if (fstatfs(fd, &sf) < 0)
        return false;
    switch ((unsigned long)sf.f_type & 0xffffffffUL) {
    case 0x65735546UL: /* FUSE (fuseblk too) */
    case 0x6969UL:     /* NFS */
    case 0x517BUL:     /* SMB */
    case 0xFF534D42UL: /* CIFS */
    case 0xFE534D42UL: /* SMB2 */
    case 0x01021997UL: /* 9p (v9fs) */
    case 0x0BD00BD0UL: /* Lustre */
    case 0x00C36400UL: /* Ceph */
    case 0x47504653UL: /* GPFS */
    case 0x5346414FUL: /* AFS */
    case 0x6B414653UL: /* kAFS */
    case 0x19830326UL: /* BeeGFS (fhgfs) */
    case 0x013111A8UL: /* IBM/Panasas PanFS */
        return true;
    default:
        return false;
    }
}
