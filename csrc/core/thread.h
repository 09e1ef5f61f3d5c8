/* Threads, locks and waits for the engine.
 *
 * - Worker threads start with every signal blocked, so SIGINT always reaches
 *   Python's main thread.
 * - Consumer-side waits are sliced: cv_wait() waits at most CV_WAIT_SLICE_MS,
 *   then (with the caller's mutex released) calls the thread's interrupt
 *   check, which the Python binding installs around next() to run
 *   PyErr_CheckSignals(). A pending exception ends the wait with
 *   CV_INTERRUPTED. Worker threads have no check and simply wait.
 * - A fork() child marks every iterator of the parent unusable
 *   (cv_fork_generation changes); the binding checks it.
 */
#ifndef CV_THREAD_H
#define CV_THREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "core/clock.h" /* cv_now_ns */
#include "core/status.h"

#define CV_WAIT_SLICE_MS 50

typedef struct CvThread {
    pthread_t handle;
    bool started;
} CvThread;

/* Start fn(arg) on a new thread with all signals blocked, named `name` (at
 * most 15 characters are kept: "cv3-pool" for pipeline 3's pool) where
 * top -H, gdb and py-spy show it. */
CvStatus cv_thread_start(CvThread *t, void *(*fn)(void *), void *arg, const char *name);

/* Called on every engine thread just before it exits (the binding uses it to
 * drop the thread's Python thread state). Set once, at module init. */
void cv_set_thread_exit_hook(void (*hook)(void));
void cv_thread_join(CvThread *t); /* no-op when not started */

/* Returns nonzero when the wait should stop (an exception is pending). Runs
 * with no engine lock held. */
typedef int (*CvInterruptCheck)(void *arg);
typedef struct CvInterruptSlot {
    CvInterruptCheck fn;
    void *arg;
} CvInterruptSlot;
/* Thread-local; returns the previous check so nested users can restore it. */
CvInterruptSlot cv_set_interrupt_check(CvInterruptCheck fn, void *arg);

/* Run this thread's interrupt check now (no lock may be held): true when
 * the wait in progress should stop. False when no check is installed. */
bool cv_interrupt_pending(void);

/* A consumer that runs next() holding a lock of the layer above (the
 * binding keeps the GIL for pipelines without threads) lets go of it around
 * a wait that may last (a read waiting on a pipe): cv_wait_outside_begin()
 * returns what cv_wait_outside_end() needs to take it back. Thread-local
 * hooks, set by that layer; without them, no-ops. */
typedef struct CvOutsideHooks {
    void *(*leave)(void);
    void (*enter)(void *token);
} CvOutsideHooks;
CvOutsideHooks cv_set_outside_hooks(CvOutsideHooks hooks); /* returns the previous ones */
void *cv_wait_outside_begin(void);
void cv_wait_outside_end(void *token);

/* Wait on cond (mu held) for one slice at most. Returns CV_INTERRUPTED status
 * when the interrupt check fired; the caller re-checks its predicate in any
 * case (spurious and timed-out wake-ups are normal). */
CvStatus cv_wait(pthread_cond_t *cond, pthread_mutex_t *mu);

/* Before sleeping on a condition variable, a consumer may spin up to
 * limit_ns (mu released) watching a progress counter: a producer on another
 * core is usually a few microseconds from the next result, and a futex sleep
 * and wake-up costs more than that on every element. Returns true when the
 * counter moved. CV_SPIN_NS is the longest spin worth its CPU. */
#define CV_SPIN_NS 30000
bool cv_spin_for_progress(const uint64_t *counter, uint64_t seen, int64_t limit_ns);
/* Fit a consumer's spin (*spin_ns, its own) to the production interval of
 * recent waits: a spin that fails halves the next one (to none below 1 us),
 * so a slow producer costs no CPU; a wait that ends within CV_SPIN_NS
 * (spinning or asleep) sets it to twice that wait. */
void cv_spin_fit(int64_t *spin_ns, bool progressed);
void cv_spin_fit_wait(int64_t *spin_ns, int64_t waited_ns);

/* Condition variables use CLOCK_MONOTONIC. */
void cv_cond_init(pthread_cond_t *cond);

/* CPUs this process may use, at least 1: its affinity mask, lowered to its
 * cgroup CPU quota (rounded up) where one is set. Reads /proc and /sys on
 * each call: cache it off hot paths. */
int cv_cpu_count(void);



/* The fork guard: a lock that fork() takes first (pthread_atfork's
 * prepare) once cv_fork_guard_install has run, and that the child
 * re-initialises, so that what is done under it is never cut in half by a
 * fork() in another thread (the binding makes Python thread states under
 * it). Never wait for anything while holding it: the forking thread may
 * hold locks (the GIL) the waiter wants. Any thread; install is once-only. */
void cv_fork_guard_install(void);
void cv_fork_guard_lock(void);
void cv_fork_guard_unlock(void);

/* Incremented in the child after fork(). */
unsigned long cv_fork_generation(void);
/* Also run in the child after fork() (the binding resets its counters). Set once. */
void cv_set_fork_child_hook(void (*hook)(void));

#endif
