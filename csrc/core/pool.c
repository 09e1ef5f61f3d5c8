#include "core/pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/blocking.h"

struct CvPool {
    atomic_int refcount;
    int budget;      /* turns running outside blocking sections, at most */
    int max_threads; /* budget + CV_POOL_SPARE */
    pthread_mutex_t mu;
    pthread_cond_t work_cv;    /* idle threads wait here */
    pthread_cond_t removed_cv; /* cv_task_remove waits here for running turns */
    pthread_cond_t idle_cv;    /* cv_pool_wait_idle waits here */
    atomic_bool cancelled;
    /* Guarded by mu. */
    CvTask *tasks;  /* attached tasks */
    CvTask *cursor; /* where the next pick starts: round robin */
    int running;    /* turns running outside blocking sections */
    int idle;       /* threads waiting on work_cv */
    int signaled;   /* of those, already signalled and not yet awake */
    bool spinning;  /* an idle thread spins for spin_ns before waiting */
    bool spin_claimed; /* a wake-up went to the spinning thread */
    int64_t spin_ns;   /* fitted to the gaps between submits, like a stage's */
    uint64_t spin_wakes; /* bumped to wake the spinning thread; atomic reads */
    int started;    /* threads[0, started) were started */
    int exited;
    bool shutdown;
    CvThread *threads;
    CvPoolWatcher watcher; /* none for a stage's private pool */
    CvPoolTick tick;      /* between turns; none for a stage's private pool */
    char name[16];        /* its threads' name */
};

/* The pool whose iterators this thread makes, and the pool this thread
 * works for (pool threads only). */
static _Thread_local CvPool *current_pool;
static _Thread_local CvPool *worker_pool;

CvPool *cv_pool_current(void)
{
    return current_pool;
}

bool cv_pool_on_worker(void)
{
    return worker_pool != NULL;
}

CvPool *cv_pool_set_current(CvPool *pool)
{
    CvPool *previous = current_pool;
    current_pool = pool;
    return previous;
}

CvPool *cv_pool_new(int budget)
{
    CvPool *pool = calloc(1, sizeof(*pool));
    if (!pool)
        return NULL;
    pool->budget = budget < 1 ? 1 : budget;
    pool->max_threads = pool->budget + CV_POOL_SPARE;
    pool->threads = calloc((size_t)pool->max_threads, sizeof(CvThread));
    if (!pool->threads) {
        free(pool);
        return NULL;
    }
    atomic_init(&pool->refcount, 1);
    pthread_mutex_init(&pool->mu, NULL);
    cv_cond_init(&pool->work_cv);
    cv_cond_init(&pool->removed_cv);
    cv_cond_init(&pool->idle_cv);
    atomic_init(&pool->cancelled, false);
    pool->spin_ns = CV_POOL_SPIN_NS;
    cv_pool_set_name(pool, "cv-pool");
    return pool;
}

void cv_pool_set_watcher(CvPool *pool, CvPoolWatcher watcher)
{
    pool->watcher = watcher;
}

CvPoolWatcher cv_pool_watcher(const CvPool *pool)
{
    return pool->watcher;
}

void cv_pool_set_name(CvPool *pool, const char *name)
{
    snprintf(pool->name, sizeof(pool->name), "%s", name);
}

void cv_pool_set_tick(CvPool *pool, CvPoolTick tick)
{
    pool->tick = tick;
}

CvPool *cv_pool_ref(CvPool *pool)
{
    atomic_fetch_add_explicit(&pool->refcount, 1, memory_order_relaxed);
    return pool;
}

int cv_pool_budget(const CvPool *pool)
{
    return pool->budget;
}

int cv_pool_threads(CvPool *pool)
{
    pthread_mutex_lock(&pool->mu);
    int n = pool->started - pool->exited;
    pthread_mutex_unlock(&pool->mu);
    return n;
}

int cv_pool_running(CvPool *pool)
{
    pthread_mutex_lock(&pool->mu);
    int n = pool->running;
    pthread_mutex_unlock(&pool->mu);
    return n;
}

/* mu held: the next task with a turn to run, round robin. */
static CvTask *pick(CvPool *pool)
{
    CvTask *start = pool->cursor ? pool->cursor : pool->tasks;
    CvTask *t = start;
    if (!t)
        return NULL;
    do {
        CvTask *after = t->next ? t->next : pool->tasks;
        if (t->queued && t->running < atomic_load_explicit(&t->limit, memory_order_relaxed)) {
            pool->cursor = after;
            return t;
        }
        t = after;
    } while (t != start);
    return NULL;
}

static void wake_one(CvPool *pool, int most);
static bool has_runnable(CvPool *pool);

/* mu held: run one turn of t (picked: queued, below its limit) with mu
 * released. `counted`: the thread takes a place among the running turns
 * (a helper already holds one, for the turn it is inside). */
static void run_turn(CvPool *pool, CvTask *t, bool counted)
{
    t->running++;
    pool->running += counted;
    /* More turns could run beside this one: get a peer on them (it does the
     * same as it starts, so the pool ramps up to the stages' parallelism).
     * Submits and blocking sections wake one thread each, too few alone. */
    if (counted && pool->running < pool->budget && has_runnable(pool))
        wake_one(pool, pool->budget);
    uint64_t submits = t->submits;
    pthread_mutex_unlock(&pool->mu);
    CvTurn r = t->turn(t->owner);
    bool retuned = pool->tick.fn && pool->tick.fn(pool->tick.arg); /* between turns: no lock held */
    pthread_mutex_lock(&pool->mu);
    if (t->drained && t->running == 1 && atomic_load_explicit(&t->limit, memory_order_relaxed) == 0) {
        /* Made inline (limit 0, no turn starts now) and this was its last
         * turn: its consumer may wait for results none will bring. Still
         * counted running, so the task is not removed meanwhile. */
        pthread_mutex_unlock(&pool->mu);
        t->drained(t->owner);
        pthread_mutex_lock(&pool->mu);
    }
    if (retuned && pool->running < pool->budget && has_runnable(pool))
        wake_one(pool, pool->budget); /* a raised limit: more turns can run */
    pool->running -= counted;
    t->running--;
    if (r == CV_TURN_DONE)
        t->done = true;
    if (t->done || (r == CV_TURN_IDLE && t->submits == submits))
        t->queued = false;
    else if (r == CV_TURN_AGAIN)
        t->queued = true;
    if (t->done && t->running == 0)
        pthread_cond_broadcast(&pool->removed_cv);
}

/* mu held: a thread got work `gap_ns` after it went idle (spinning or
 * waiting): a gap shorter than CV_POOL_SPIN_NS sets the spin to twice it. */
static void note_gap(CvPool *pool, int64_t gap_ns)
{
    if (gap_ns < CV_POOL_SPIN_NS) {
        int64_t fit = 2 * gap_ns + 1000;
        pool->spin_ns = fit > CV_POOL_SPIN_NS ? CV_POOL_SPIN_NS : fit;
    }
}

/* mu held: an idle thread with nothing to pick spins (mu released) for
 * spin_ns, so a submit a few microseconds away reaches it with no futex
 * wake-up. On a VM a wake-up costs the waker and the woken tens of
 * microseconds (an IPI through the hypervisor), more than producing a
 * buffer of small elements: a prefetch(64) of range() spent a third of its
 * time waking its worker and being woken. One thread spins at a time (as
 * in Eigen's pool under tf.data, and Go's scheduler); a spin that gets no
 * work halves the next (none below 1 us), so an idle pipeline costs no
 * CPU. */
static void spin_for_work(CvPool *pool)
{
    pool->spinning = true;
    pool->spin_claimed = false;
    uint64_t seen = pool->spin_wakes;
    int64_t limit = pool->spin_ns;
    int64_t started = cv_now_ns();
    pthread_mutex_unlock(&pool->mu);
    cv_spin_for_progress(&pool->spin_wakes, seen, limit);
    pthread_mutex_lock(&pool->mu);
    pool->spinning = false;
    if (pool->spin_claimed)
        note_gap(pool, cv_now_ns() - started);
    else
        pool->spin_ns = pool->spin_ns / 2 < 1000 ? 0 : pool->spin_ns / 2;
}

static void blocking_enter(void *owner);
static void blocking_leave(void *owner);
static bool blocking_cancelled(void *owner);

static void *pool_worker(void *arg)
{
    CvPool *pool = arg;
    worker_pool = current_pool = pool;
    cv_blocking_set_hooks((CvBlockingHooks){blocking_enter, blocking_leave, blocking_cancelled, pool});
    bool may_spin = true; /* once between two waits or turns */
    pthread_mutex_lock(&pool->mu);
    while (!pool->shutdown) {
        /* Over budget (a thread came back from a blocking section): park. */
        CvTask *t = pool->running < pool->budget ? pick(pool) : NULL;
        if (t) {
            run_turn(pool, t, true);
            may_spin = true;
            continue;
        }
        if (may_spin && !pool->spinning && pool->spin_ns > 0 && pool->running < pool->budget) {
            may_spin = false;
            spin_for_work(pool);
            continue; /* mu was released: pick again */
        }
        may_spin = true;
        pool->idle++;
        if (pool->idle == pool->started - pool->exited)
            pthread_cond_broadcast(&pool->idle_cv);
        int64_t slept = cv_now_ns();
        pthread_cond_wait(&pool->work_cv, &pool->mu);
        pool->idle--;
        if (pool->signaled > 0) {
            pool->signaled--;
            note_gap(pool, cv_now_ns() - slept);
        }
    }
    pool->exited++;
    pthread_mutex_unlock(&pool->mu);
    return NULL;
}

/* mu held: get a thread to run a turn: wake an idle one, or start one while
 * the pool has fewer than `most` threads. */
static void wake_one(CvPool *pool, int most)
{
    if (pool->spinning && !pool->spin_claimed) {
        pool->spin_claimed = true;
        __atomic_add_fetch(&pool->spin_wakes, 1, __ATOMIC_RELEASE);
        return;
    }
    /* An idle thread signalled a moment ago counts in `idle` until it has
     * the mutex back: a second signal would find no waiter and be lost, so
     * the second turn would wait for the first to end instead of running
     * beside it. */
    if (pool->idle > pool->signaled) {
        pool->signaled++;
        pthread_cond_signal(&pool->work_cv);
        return;
    }
    if (pool->started < most && !pool->shutdown) {
        CvStatus s = cv_thread_start(&pool->threads[pool->started], pool_worker, pool, pool->name);
        if (s)
            cv_status_free(s); /* run with the threads there are; there is at least the caller's */
        else
            pool->started++;
    }
}

/* mu held: is there a turn that a thread could start now? */
static bool has_runnable(CvPool *pool)
{
    for (CvTask *t = pool->tasks; t; t = t->next)
        if (t->queued && t->running < atomic_load_explicit(&t->limit, memory_order_relaxed))
            return true;
    return false;
}

void cv_task_attach(CvTask *t, CvPool *pool, CvTurn (*turn)(void *), void *owner, const char *name,
                    int limit)
{
    t->turn = turn;
    t->owner = owner;
    t->name = name;
    atomic_init(&t->limit, limit < 1 ? 1 : limit);
    t->submits = 0;
    t->running = 0;
    t->queued = t->done = t->paused = false;
    t->drained = NULL;
    t->prev = NULL;
    t->pool = cv_pool_ref(pool);
    pthread_mutex_lock(&pool->mu);
    t->next = pool->tasks;
    if (pool->tasks)
        pool->tasks->prev = t;
    pool->tasks = t;
    pthread_mutex_unlock(&pool->mu);
}

void cv_task_submit(CvTask *t)
{
    CvPool *pool = t->pool;
    pthread_mutex_lock(&pool->mu);
    t->submits++;
    if (!t->done && !t->paused) {
        t->queued = true;
        if (pool->running < pool->budget && t->running < atomic_load_explicit(&t->limit, memory_order_relaxed))
            wake_one(pool, pool->budget);
    }
    pthread_mutex_unlock(&pool->mu);
}

bool cv_task_help(CvTask *t)
{
    CvPool *pool = t->pool;
    if (!pool || pool != worker_pool || cv_blocking_depth() > 0)
        return false;
    pthread_mutex_lock(&pool->mu);
    bool runnable = t->queued && t->running < atomic_load_explicit(&t->limit, memory_order_relaxed);
    if (runnable)
        run_turn(pool, t, false);
    pthread_mutex_unlock(&pool->mu);
    return runnable;
}

bool cv_task_pause(CvTask *t)
{
    CvPool *pool = t->pool;
    pthread_mutex_lock(&pool->mu);
    bool idle = t->running == 0;
    if (idle) {
        t->paused = true;
        t->queued = false;
    }
    pthread_mutex_unlock(&pool->mu);
    return idle;
}

void cv_task_resume(CvTask *t)
{
    CvPool *pool = t->pool;
    pthread_mutex_lock(&pool->mu);
    t->paused = false;
    pthread_mutex_unlock(&pool->mu);
    cv_task_submit(t);
}

void cv_pool_run_tick(CvPool *pool)
{
    if (!pool->tick.fn || !pool->tick.fn(pool->tick.arg))
        return;
    pthread_mutex_lock(&pool->mu);
    if (pool->running < pool->budget && has_runnable(pool))
        wake_one(pool, pool->budget);
    pthread_mutex_unlock(&pool->mu);
}

void cv_task_remove(CvTask *t)
{
    CvPool *pool = t->pool;
    if (!pool)
        return;
    pthread_mutex_lock(&pool->mu);
    t->done = true;
    t->queued = false;
    if (t->running > 0) {
        pthread_mutex_unlock(&pool->mu);
        cv_blocking_begin();
        pthread_mutex_lock(&pool->mu);
        while (t->running > 0)
            pthread_cond_wait(&pool->removed_cv, &pool->mu);
        pthread_mutex_unlock(&pool->mu);
        cv_blocking_end();
        pthread_mutex_lock(&pool->mu);
    }
    if (pool->cursor == t)
        pool->cursor = t->next;
    if (t->prev)
        t->prev->next = t->next;
    else
        pool->tasks = t->next;
    if (t->next)
        t->next->prev = t->prev;
    t->prev = t->next = NULL;
    pthread_mutex_unlock(&pool->mu);
    t->pool = NULL;
    cv_pool_unref(pool);
}

/* The hooks of this pool's threads (core/blocking.h): a thread blocking
 * gives up its place among the running turns, and another thread takes it
 * while there is work; one coming back runs over budget until its turn
 * ends. */
static void blocking_enter(void *owner)
{
    CvPool *pool = owner;
    pthread_mutex_lock(&pool->mu);
    pool->running--;
    if (has_runnable(pool))
        wake_one(pool, pool->max_threads);
    pthread_mutex_unlock(&pool->mu);
}

static void blocking_leave(void *owner)
{
    CvPool *pool = owner;
    pthread_mutex_lock(&pool->mu);
    pool->running++;
    pthread_mutex_unlock(&pool->mu);
}

void cv_pool_cancel(CvPool *pool)
{
    atomic_store(&pool->cancelled, true);
}

static bool blocking_cancelled(void *owner)
{
    CvPool *pool = owner;
    return atomic_load_explicit(&pool->cancelled, memory_order_relaxed);
}

bool cv_pool_wait_idle(CvPool *pool, int64_t timeout_ns)
{
    int64_t deadline = cv_now_ns() + timeout_ns;
    struct timespec at = {deadline / 1000000000, deadline % 1000000000};
    pthread_mutex_lock(&pool->mu);
    while (pool->idle < pool->started - pool->exited &&
           pthread_cond_timedwait(&pool->idle_cv, &pool->mu, &at) != ETIMEDOUT) {
    }
    bool idle = pool->idle >= pool->started - pool->exited;
    pthread_mutex_unlock(&pool->mu);
    return idle;
}

void cv_pool_unref(CvPool *pool)
{
    if (!pool || atomic_fetch_sub_explicit(&pool->refcount, 1, memory_order_acq_rel) != 1)
        return;
    /* The owner (the binding's Iterator) drops the last reference after
     * destroying the pipeline, never a turn: a pool thread cannot join
     * itself, so it would leak the pool instead. */
    if (worker_pool == pool)
        return;
    pthread_mutex_lock(&pool->mu);
    pool->shutdown = true;
    __atomic_add_fetch(&pool->spin_wakes, 1, __ATOMIC_RELEASE); /* a spinning thread */
    pthread_cond_broadcast(&pool->work_cv);
    int started = pool->started;
    pthread_mutex_unlock(&pool->mu);
    for (int i = 0; i < started; i++)
        cv_thread_join(&pool->threads[i]);
    pthread_mutex_destroy(&pool->mu);
    pthread_cond_destroy(&pool->work_cv);
    pthread_cond_destroy(&pool->removed_cv);
    pthread_cond_destroy(&pool->idle_cv);
    free(pool->threads);
    free(pool);
}
