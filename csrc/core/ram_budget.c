#include "core/ram_budget.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/blocking.h"
#include "core/cgroup.h"

struct CvMemory {
    _Atomic int64_t used;
    _Atomic int64_t peak; /* the most `used` has been (tests, statistics) */
    int64_t limit;
    atomic_long refcount;
    CvMemory *prev, *next; /* the registry of live budgets; guarded by registry_mu */
    bool unlisted; /* not in the registry (not RAM: cv_memory_new_unlisted) */
    pthread_mutex_t holders_mu; /* guards `holders`; never held across a call out */
    CvMemoryHolder *holders;    /* the stages charging it (CvMemoryHolder) */
    /* Stages waiting for room (cv_memory_holder_wait): a release wakes them
     * only when `waiters` says some sleep, so a charge costs no lock. */
    atomic_int waiters;
    pthread_mutex_t wait_mu;
    pthread_cond_t wait_cv;
};

/* Live budgets, for cv_memory_in_use. Taken only when a budget is created or
 * freed, and by cv_memory_in_use: never on a charge. */
static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static CvMemory *registry;

static CvMemory default_memory = {.refcount = 1, .holders_mu = PTHREAD_MUTEX_INITIALIZER,
                                  .wait_mu = PTHREAD_MUTEX_INITIALIZER,
                                  .wait_cv = PTHREAD_COND_INITIALIZER};
static pthread_once_t default_once = PTHREAD_ONCE_INIT;
/* &default_memory once its limit is known: the charge path's fast check. */
static CvMemory *_Atomic default_ready;

static void registry_add(CvMemory *m)
{
    pthread_mutex_lock(&registry_mu);
    m->prev = NULL;
    m->next = registry;
    if (registry)
        registry->prev = m;
    registry = m;
    pthread_mutex_unlock(&registry_mu);
}

static void default_init(void)
{
    int64_t limit = (int64_t)((double)cv_memory_process_limit() * CV_MEMORY_DEFAULT_FRACTION);
    default_memory.limit = limit > 0 ? limit : INT64_MAX;
    registry_add(&default_memory);
    atomic_store_explicit(&default_ready, &default_memory, memory_order_release);
}

CvMemory *cv_memory_default(void)
{
    pthread_once(&default_once, default_init);
    return &default_memory;
}

static inline CvMemory *resolve(const CvMemory *m)
{
    if (m)
        return (CvMemory *)m;
    CvMemory *ready = atomic_load_explicit(&default_ready, memory_order_acquire);
    return ready ? ready : cv_memory_default();
}

CvMemory *cv_memory_new(int64_t limit)
{
    if (limit <= 0)
        return NULL;
    CvMemory *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->limit = limit;
    atomic_init(&m->refcount, 1);
    pthread_mutex_init(&m->holders_mu, NULL);
    pthread_mutex_init(&m->wait_mu, NULL);
    pthread_cond_init(&m->wait_cv, NULL);
    registry_add(m);
    return m;
}

CvMemory *cv_memory_ref(CvMemory *m)
{
    if (m)
        atomic_fetch_add_explicit(&m->refcount, 1, memory_order_relaxed);
    return m;
}

CvMemory *cv_memory_new_unlisted(void)
{
    CvMemory *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->limit = INT64_MAX;
    m->unlisted = true;
    atomic_init(&m->refcount, 1);
    pthread_mutex_init(&m->holders_mu, NULL);
    pthread_mutex_init(&m->wait_mu, NULL);
    pthread_cond_init(&m->wait_cv, NULL);
    return m;
}

void cv_memory_unref(CvMemory *m)
{
    if (!m || m == &default_memory ||
        atomic_fetch_sub_explicit(&m->refcount, 1, memory_order_acq_rel) != 1)
        return;
    if (!m->unlisted) {
        pthread_mutex_lock(&registry_mu);
        if (m->prev)
            m->prev->next = m->next;
        else
            registry = m->next;
        if (m->next)
            m->next->prev = m->prev;
        pthread_mutex_unlock(&registry_mu);
    }
    pthread_mutex_destroy(&m->holders_mu);
    pthread_mutex_destroy(&m->wait_mu);
    pthread_cond_destroy(&m->wait_cv);
    free(m);
}

int64_t cv_memory_limit(const CvMemory *m)
{
    return resolve(m)->limit;
}

int64_t cv_memory_used(const CvMemory *m)
{
    return atomic_load_explicit(&resolve(m)->used, memory_order_relaxed);
}

/* "1.5 GiB" style, into buf. */
static const char *human(int64_t bytes, char *buf, size_t size)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, size, "%lld bytes", (long long)bytes);
    else
        snprintf(buf, size, "%.1f %s", v, units[u]);
    return buf;
}

/* Raise m's peak to `used` (a CAS loop: peaks only grow). */
static void note_peak(CvMemory *m, int64_t used)
{
    int64_t peak = atomic_load_explicit(&m->peak, memory_order_relaxed);
    while (used > peak && !atomic_compare_exchange_weak_explicit(&m->peak, &peak, used,
                                                                 memory_order_relaxed,
                                                                 memory_order_relaxed)) {
    }
}

int64_t cv_memory_peak(const CvMemory *m)
{
    return atomic_load_explicit(&resolve(m)->peak, memory_order_relaxed);
}

bool cv_memory_try_charge(CvMemory *m, size_t bytes)
{
    m = resolve(m);
    int64_t used = atomic_load_explicit(&m->used, memory_order_relaxed);
    /* A compare-and-swap loop, so concurrent charges never fail for room
     * that exists (a fetch_add and undo would, transiently). */
    while (used <= m->limit && (int64_t)bytes <= m->limit - used) {
        if (atomic_compare_exchange_weak_explicit(&m->used, &used, used + (int64_t)bytes,
                                                  memory_order_relaxed, memory_order_relaxed)) {
            note_peak(m, used + (int64_t)bytes);
            return true;
        }
    }
    return false;
}

CvStatus cv_memory_charge(CvMemory *m, size_t bytes, const char *stage, size_t held,
                          const char *knob)
{
    if (cv_memory_try_charge(m, bytes))
        return CV_STATUS_OK;
    return cv_memory_exceeded(m, bytes, stage, held, knob);
}

CvStatus cv_memory_exceeded(CvMemory *m, size_t bytes, const char *stage, size_t held,
                            const char *knob)
{
    m = resolve(m);
    int64_t used = atomic_load_explicit(&m->used, memory_order_relaxed);
    char b_held[32], b_need[32], b_used[32], b_limit[32], b_process[32], b_top[32];
    bool is_default = m == &default_memory;
    char why[96] = "options.autotune.ram_budget";
    if (is_default)
        snprintf(why, sizeof(why), "the default: half of the %s this process may use",
                 human(cv_memory_process_limit(), b_process, sizeof(b_process)));
    /* The stage listed on this budget that holds the most, when it is not
     * the one asking: its name and knob are copied under the lock (a stage
     * of another thread may be destroyed right after). */
    char top[256] = "";
    pthread_mutex_lock(&m->holders_mu);
    const CvMemoryHolder *most = NULL;
    int64_t most_held = (int64_t)held;
    for (const CvMemoryHolder *h = m->holders; h; h = h->next) {
        int64_t b = atomic_load_explicit(&h->held, memory_order_relaxed);
        if (b > most_held) {
            most = h;
            most_held = b;
        }
    }
    if (most)
        snprintf(top, sizeof(top), " %s holds the most: %s. To fix: %s, ", most->stage,
                 human(most_held, b_top, sizeof(b_top)), most->knob);
    pthread_mutex_unlock(&m->holders_mu);
    return cv_error(CV_RESOURCE_EXHAUSTED,
                    "%s: RAM budget exceeded: this stage holds %s and needs %s more, but the "
                    "pipeline's buffers already hold %s of their %s budget (%s).%s%s%s or "
                    "raise options.autotune.ram_budget.",
                    stage, human((int64_t)held, b_held, sizeof(b_held)),
                    human((int64_t)bytes, b_need, sizeof(b_need)), human(used, b_used, sizeof(b_used)),
                    human(m->limit, b_limit, sizeof(b_limit)), why, top[0] ? top : " To fix: ",
                    knob, top[0] ? " here," : "");
}

void cv_memory_holder_list(CvMemoryHolder *h, CvMemory *m, const char *stage, const char *knob)
{
    if (h->memory)
        return;
    m = resolve(m);
    h->stage = stage;
    h->knob = knob;
    atomic_init(&h->held, 0);
    pthread_mutex_lock(&m->holders_mu);
    h->prev = NULL;
    h->next = m->holders;
    if (m->holders)
        m->holders->prev = h;
    m->holders = h;
    pthread_mutex_unlock(&m->holders_mu);
    h->memory = m;
}

void cv_memory_holder_unlist(CvMemoryHolder *h)
{
    if (!h || !h->memory)
        return;
    CvMemory *m = h->memory;
    pthread_mutex_lock(&m->holders_mu);
    if (h->prev)
        h->prev->next = h->next;
    else
        m->holders = h->next;
    if (h->next)
        h->next->prev = h->prev;
    pthread_mutex_unlock(&m->holders_mu);
    h->memory = NULL;
}

bool cv_memory_holder_try_charge(CvMemoryHolder *h, size_t bytes)
{
    if (!cv_memory_try_charge(h->memory, bytes))
        return false;
    atomic_fetch_add_explicit(&h->held, (int64_t)bytes, memory_order_relaxed);
    return true;
}

void cv_memory_holder_release(CvMemoryHolder *h, size_t bytes)
{
    if (!bytes)
        return;
    atomic_fetch_sub_explicit(&h->held, (int64_t)bytes, memory_order_relaxed);
    cv_memory_release(h->memory, bytes);
}

void cv_memory_holder_set(CvMemoryHolder *h, size_t held)
{
    atomic_store_explicit(&h->held, (int64_t)held, memory_order_relaxed);
}

CvStatus cv_memory_holder_exceeded(CvMemoryHolder *h, size_t bytes)
{
    int64_t held = atomic_load_explicit(&h->held, memory_order_relaxed);
    return cv_memory_exceeded(h->memory, bytes, h->stage, held > 0 ? (size_t)held : 0, h->knob);
}

void cv_memory_release(CvMemory *m, size_t bytes)
{
    if (!bytes)
        return;
    m = resolve(m);
    /* seq_cst with the waiter's count and check (cv_memory_holder_wait):
     * either the waiter sees these bytes gone, or we see the waiter. */
    atomic_fetch_sub_explicit(&m->used, (int64_t)bytes, memory_order_seq_cst);
    if (atomic_load_explicit(&m->waiters, memory_order_seq_cst) > 0)
        cv_memory_wake(m);
}

void cv_memory_wake(CvMemory *m)
{
    m = resolve(m);
    pthread_mutex_lock(&m->wait_mu);
    pthread_cond_broadcast(&m->wait_cv);
    pthread_mutex_unlock(&m->wait_mu);
}

void cv_memory_holder_force_charge(CvMemoryHolder *h, size_t bytes)
{
    int64_t used = atomic_fetch_add_explicit(&h->memory->used, (int64_t)bytes, memory_order_relaxed);
    note_peak(h->memory, used + (int64_t)bytes);
    atomic_fetch_add_explicit(&h->held, (int64_t)bytes, memory_order_relaxed);
}

void cv_memory_holder_wait(CvMemoryHolder *h, size_t bytes, int64_t timeout_ns)
{
    CvMemory *m = h->memory;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += (time_t)(timeout_ns / 1000000000);
    deadline.tv_nsec += (long)(timeout_ns % 1000000000);
    if (deadline.tv_nsec >= 1000000000) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000;
    }
    atomic_fetch_add_explicit(&m->waiters, 1, memory_order_seq_cst);
    pthread_mutex_lock(&m->wait_mu);
    int64_t used = atomic_load_explicit(&m->used, memory_order_seq_cst);
    if (used > m->limit || (int64_t)bytes > m->limit - used)
        pthread_cond_timedwait(&m->wait_cv, &m->wait_mu, &deadline);
    pthread_mutex_unlock(&m->wait_mu);
    atomic_fetch_sub_explicit(&m->waiters, 1, memory_order_seq_cst);
}

size_t cv_element_bytes(const CvElement *e)
{
    size_t bytes = 0;
    for (uint32_t i = 0; i < e->n; i++) {
        const CvTensor *t = &e->t[i];
        size_t n = 1;
        for (int d = 0; d < t->rank; d++)
            n *= (size_t)t->shape[d];
        if (t->dtype != CV_STRING) {
            bytes += n * cv_dtype_size(t->dtype);
            continue;
        }
        const CvStringRef *refs = (const CvStringRef *)t->data;
        bytes += n * sizeof(CvStringRef);
        for (size_t k = 0; k < n; k++)
            bytes += refs[k].length;
    }
    return bytes;
}

int64_t cv_memory_in_use(void)
{
    (void)cv_memory_default();
    int64_t total = 0;
    pthread_mutex_lock(&registry_mu);
    for (CvMemory *m = registry; m; m = m->next)
        total += atomic_load_explicit(&m->used, memory_order_relaxed);
    pthread_mutex_unlock(&registry_mu);
    return total;
}

void cv_memory_after_fork(void)
{
    /* A parent thread may have held the lock at fork(): it is not ours. */
    pthread_mutex_init(&registry_mu, NULL);
    for (CvMemory *m = registry; m; m = m->next) {
        atomic_store_explicit(&m->used, 0, memory_order_relaxed);
        atomic_store_explicit(&m->waiters, 0, memory_order_relaxed);
        pthread_mutex_init(&m->holders_mu, NULL);
        pthread_mutex_init(&m->wait_mu, NULL);
        pthread_cond_init(&m->wait_cv, NULL);
        for (CvMemoryHolder *h = m->holders; h; h = h->next)
            atomic_store_explicit(&h->held, 0, memory_order_relaxed);
    }
}

int64_t cv_memory_process_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    int64_t limit = pages > 0 && page > 0 ? (int64_t)pages * page : INT64_MAX;
    int64_t cgroup = cv_cgroup_memory_limit();
    if (cgroup > 0 && cgroup < limit)
        limit = cgroup;
    struct rlimit as;
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY &&
        (uint64_t)as.rlim_cur < (uint64_t)limit)
        limit = (int64_t)as.rlim_cur;
    return limit;
}

bool cv_memory_holder_charge_waiting(CvMemoryHolder *h, size_t bytes, int64_t poll_ns,
                                     int (*may_wait)(void *ctx), void *ctx)
{
    bool charged = false, blocking = false;
    for (;;) {
        if (cv_memory_holder_try_charge(h, bytes)) {
            charged = true;
            break;
        }
        int may = blocking && cv_blocking_cancelled() ? -1 : may_wait(ctx);
        if (may < 0)
            break;
        if (may == 0) { /* the oldest result: over the limit by it, unless it never fits */
            if ((int64_t)bytes <= h->memory->limit) {
                cv_memory_holder_force_charge(h, bytes);
                charged = true;
            }
            break;
        }
        if (!blocking) {
            cv_blocking_begin();
            blocking = true;
        }
        cv_memory_holder_wait(h, bytes, poll_ns);
    }
    if (blocking)
        cv_blocking_end();
    return charged;
}
