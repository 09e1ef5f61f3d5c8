/* Blocking sections: a thread about to block (take the GIL, run Python code,
 * read a file, wait for another stage's element) says so, so that the
 * worker pool it belongs to can run another thread in its place
 * (core/pool.h says how). This file sits below thread.c and the pool: it
 * keeps each thread's nesting depth and time spent blocked, and calls the
 * hooks that the pool installs on its own threads. On other threads (the
 * consumer's, a detached teardown) sections are counted and cost nothing
 * else.
 *
 * Thread-safety: everything here is thread-local. */
#ifndef CV_BLOCKING_H
#define CV_BLOCKING_H

#include <stdbool.h>
#include <stdint.h>

/* What a section's outermost begin and end tell the thread's owner. Both run
 * with no engine lock of the caller's layer assumed (the pool takes its own
 * mutex, a leaf). */
typedef struct CvBlockingHooks {
    void (*enter)(void *owner); /* the thread stops counting as running */
    void (*leave)(void *owner); /* it runs again */
    bool (*cancelled)(void *owner); /* the owner gave the work up (a wait may stop) */
    void *owner;
} CvBlockingHooks;

/* Install this thread's hooks (a pool thread, once, as it starts); a
 * zeroed struct removes them. */
void cv_blocking_set_hooks(CvBlockingHooks hooks);
/* Whether the thread is inside a section now. */
int cv_blocking_depth(void);

/* Whether the thread's owner cancelled its work (a read waiting on a pipe
 * gives up). False where no hooks are installed. */
bool cv_blocking_cancelled(void);

/* Nested sections count once: only the outermost calls the hooks. */
void cv_blocking_begin(void);
void cv_blocking_end(void);
/* Nanoseconds this thread has spent in sections where hooks were
 * installed (pool threads; 0 elsewhere): a turn's share is the difference
 * across it. */
int64_t cv_blocking_ns(void);

/* Contention (issue 26): time this thread waited to enter a section that
 * admits one thread of the process at a time (the GIL). The caller times
 * its wait and reports it; counted on every thread. A stage's turns add up
 * theirs (CvStageCounters.contended_ns): the autotuner's measure of the
 * parallelism its workers lose to that section (core/autotune.h). */
void cv_blocking_contended(int64_t ns);
int64_t cv_blocking_contended_ns(void);

#endif
