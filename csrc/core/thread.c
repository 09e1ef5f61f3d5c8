#include "core/thread.h"

#include "core/blocking.h"
#include "core/blocks.h"
#include "core/cgroup.h"
#include "core/ram_budget.h"
#include "core/tensor.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Thread_local CvInterruptCheck interrupt_check;
static _Thread_local void *interrupt_arg;
static atomic_ulong fork_generation;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void (*_Atomic fork_child_hook)(void);

void cv_set_fork_child_hook(void (*hook)(void))
{
    atomic_store(&fork_child_hook, hook);
}

static void after_fork_child(void)
{
    atomic_fetch_add(&fork_generation, 1);
    cv_buffer_pool_after_fork();
    cv_blocks_after_fork();
    cv_memory_after_fork();
    cv_payload_lists_after_fork();
    void (*hook)(void) = atomic_load(&fork_child_hook);
    if (hook)
        hook();
}

static void install_atfork(void)
{
    pthread_atfork(cv_blocks_before_fork, cv_blocks_after_fork_parent, after_fork_child);
}

static pthread_mutex_t fork_guard = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fork_guard_once = PTHREAD_ONCE_INIT;

void cv_fork_guard_lock(void)
{
    pthread_mutex_lock(&fork_guard);
}

void cv_fork_guard_unlock(void)
{
    pthread_mutex_unlock(&fork_guard);
}

static void fork_guard_child(void)
{
    pthread_mutex_init(&fork_guard, NULL);
}

static void fork_guard_register(void)
{
    pthread_atfork(cv_fork_guard_lock, cv_fork_guard_unlock, fork_guard_child);
}

void cv_fork_guard_install(void)
{
    pthread_once(&fork_guard_once, fork_guard_register);
}

unsigned long cv_fork_generation(void)
{
    pthread_once(&atfork_once, install_atfork);
    return atomic_load(&fork_generation);
}

static void (*_Atomic thread_exit_hook)(void);

void cv_set_thread_exit_hook(void (*hook)(void))
{
    atomic_store(&thread_exit_hook, hook);
}

typedef struct {
    void *(*fn)(void *);
    void *arg;
    char name[16];
} ThreadStart;

static void *thread_main(void *p)
{
    ThreadStart start = *(ThreadStart *)p;
    free(p);
    pthread_setname_np(pthread_self(), start.name);
    void *result = start.fn(start.arg);
    void (*hook)(void) = atomic_load(&thread_exit_hook);
    if (hook)
        hook();
    return result;
}

CvStatus cv_thread_start(CvThread *t, void *(*fn)(void *), void *arg, const char *name)
{
    ThreadStart *start = malloc(sizeof(*start));
    if (!start)
        return cv_error_nomem();
    *start = (ThreadStart){fn, arg, {0}};
    snprintf(start->name, sizeof(start->name), "%s", name);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&t->handle, NULL, thread_main, start);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        CvStatus s = cv_error(CV_RESOURCE_EXHAUSTED, "could not start engine thread %s: %s", start->name,
                              strerror(rc));
        free(start);
        return s;
    }
    t->started = true;
    return CV_STATUS_OK;
}

void cv_thread_join(CvThread *t)
{
    if (t->started) {
        pthread_join(t->handle, NULL);
        t->started = false;
    }
}

static _Thread_local CvOutsideHooks outside_hooks;

CvOutsideHooks cv_set_outside_hooks(CvOutsideHooks hooks)
{
    CvOutsideHooks previous = outside_hooks;
    outside_hooks = hooks;
    return previous;
}

void *cv_wait_outside_begin(void)
{
    return outside_hooks.leave ? outside_hooks.leave() : NULL;
}

void cv_wait_outside_end(void *token)
{
    if (outside_hooks.enter)
        outside_hooks.enter(token);
}

bool cv_interrupt_pending(void)
{
    return interrupt_check && interrupt_check(interrupt_arg);
}

CvInterruptSlot cv_set_interrupt_check(CvInterruptCheck fn, void *arg)
{
    CvInterruptSlot previous = {interrupt_check, interrupt_arg};
    interrupt_check = fn;
    interrupt_arg = arg;
    return previous;
}

void cv_cond_init(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
}

CvStatus cv_wait(pthread_cond_t *cond, pthread_mutex_t *mu)
{
    if (!interrupt_check) { /* a pool thread's wait lets another thread run (core/pool.h) */
        cv_blocking_begin();
        pthread_cond_wait(cond, mu);
        cv_blocking_end();
        return CV_STATUS_OK;
    }
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_nsec += CV_WAIT_SLICE_MS * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec += 1;
        deadline.tv_nsec -= 1000000000L;
    }
    if (pthread_cond_timedwait(cond, mu, &deadline) != ETIMEDOUT)
        return CV_STATUS_OK;
    /* Never call into Python with an engine lock held: a worker holding the
     * GIL may be waiting for this very mutex. */
    pthread_mutex_unlock(mu);
    int stop = interrupt_check(interrupt_arg);
    pthread_mutex_lock(mu);
    return stop ? cv_error(CV_INTERRUPTED, "interrupted") : CV_STATUS_OK;
}

int cv_cpu_count(void)
{
    int n = 0;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        n = CPU_COUNT(&set);
    if (n <= 0) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        n = online > 0 ? (int)online : 1;
    }
    /* A cgroup CPU quota of 1.5 CPUs lets two threads run (in turns). */
    double quota = cv_cgroup_cpu_limit();
    if (quota > 0 && quota < n) {
        int allowed = (int)quota;
        n = allowed < quota ? allowed + 1 : allowed;
    }
    return n > 0 ? n : 1;
}

void cv_spin_fit(int64_t *spin_ns, bool progressed)
{
    if (!progressed)
        *spin_ns = *spin_ns / 2 < 1000 ? 0 : *spin_ns / 2;
}

void cv_spin_fit_wait(int64_t *spin_ns, int64_t waited_ns)
{
    if (waited_ns < CV_SPIN_NS) {
        int64_t fit = 2 * waited_ns + 1000;
        if (fit > *spin_ns)
            *spin_ns = fit > CV_SPIN_NS ? CV_SPIN_NS : fit;
    }
}

bool cv_spin_for_progress(const uint64_t *counter, uint64_t seen, int64_t limit_ns)
{
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int i = 0;; i++) {
        if (__atomic_load_n(counter, __ATOMIC_ACQUIRE) != seen)
            return true;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if ((i & 63) == 63) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            if ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) > limit_ns)
                return false;
        }
    }
}
