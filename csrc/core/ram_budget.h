/* RAM budgets: how much memory a pipeline's buffers may hold.
 *
 * DESIGN
 * A CvMemory is a budget: a limit in bytes and an atomic count of the bytes
 * charged to it. Every stage that keeps elements between calls (shuffle's
 * buffer, the results queued by prefetch / parallel map / parallel batch,
 * interleave's read-ahead, cache) charges the bytes of each element it keeps
 * (cv_element_bytes) and releases them when the element leaves it. A charge
 * that would take the budget over its limit fails, without charging, with
 * RESOURCE_EXHAUSTED naming the stage, the bytes it holds, the budget and
 * the knob to turn, long before the kernel's OOM killer would act.
 *
 * Which budget: CvDataset.memory, set when the dataset is built for a
 * pipeline (options.autotune.ram_budget: one budget per with_options() call
 * that sets it, shared by every stage and every iterator under it). NULL
 * means the process-wide default budget, shared by all pipelines without a
 * ram_budget: CV_MEMORY_DEFAULT_FRACTION of the memory this process may use
 * (cv_memory_process_limit: physical RAM, cgroup limit, RLIMIT_AS).
 *
 * Usage in a kernel (m = it->base.dataset->memory, NULL is fine):
 *     size_t bytes = cv_element_bytes(&e);
 *     if ((s = cv_memory_charge(m, bytes, "Shuffle", held, "lower shuffle's buffer_size")))
 *         return s;                       // nothing was charged
 *     held += bytes; ...keep e...
 *     cv_memory_release(m, bytes);        // when e leaves the stage (or is freed)
 * A stage releases exactly what it charged: it remembers each element's
 * bytes, or recomputes them from the same (unchanged) element.
 *
 * Cost: one atomic add per charge and one per release; stages charge per
 * element or per chunk of elements, never per byte. All functions are
 * thread-safe.
 */
#ifndef CV_RAM_BUDGET_H
#define CV_RAM_BUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "core/tensor.h"

/* The default budget is this fraction of what the process may use (as
 * tf.data's default ram_budget: half of the RAM). */
#define CV_MEMORY_DEFAULT_FRACTION 0.5

typedef struct CvMemory CvMemory;

/* A new budget of `limit` bytes (> 0), with one reference; NULL when out of
 * memory. */
CvMemory *cv_memory_new(int64_t limit);
/* A count of bytes that are not RAM (a device's memory, csrc/device/):
 * no limit, and left out of cv_memory_in_use. */
CvMemory *cv_memory_new_unlisted(void);
CvMemory *cv_memory_ref(CvMemory *m);  /* NULL-safe; returns m */
void cv_memory_unref(CvMemory *m);     /* NULL-safe */
/* The process-wide default budget (never freed). */
CvMemory *cv_memory_default(void);

/* m == NULL means the default budget in all of these. */
int64_t cv_memory_limit(const CvMemory *m);
int64_t cv_memory_used(const CvMemory *m);

/* Charge `bytes` to m. On RESOURCE_EXHAUSTED nothing is charged; the
 * message names `stage` (tf.data's name: "Shuffle", "Prefetch"), the bytes
 * the stage holds already (`held`), the budget, and says "<knob> or raise
 * options.autotune.ram_budget" (knob: "lower shuffle's buffer_size"). */
CvStatus cv_memory_charge(CvMemory *m, size_t bytes, const char *stage, size_t held,
                          const char *knob);
/* The same in two steps: charge if it fits (true), or nothing; and the
 * error cv_memory_charge would return for a charge that did not fit. When
 * another stage listed on the budget (CvMemoryHolder) holds more than
 * `held`, the error names it, what it holds and its knob first. */
bool cv_memory_try_charge(CvMemory *m, size_t bytes);
CvStatus cv_memory_exceeded(CvMemory *m, size_t bytes, const char *stage, size_t held,
                            const char *knob);
/* Give back bytes charged earlier (0 is a no-op); wakes the stages waiting
 * for room (cv_memory_holder_wait). */
void cv_memory_release(CvMemory *m, size_t bytes);
/* The most bytes ever charged to m at once (tests: every stage stays
 * within its budget). */
int64_t cv_memory_peak(const CvMemory *m);
/* Wake every stage waiting for room on m (a cancelled iterator's). */
void cv_memory_wake(CvMemory *m);

/* A stage's share of a budget, listed on it so that an error can name the
 * stage holding the most bytes and its knob (the one that asks is often a
 * victim: a map that cannot add a result because a prefetch downstream
 * holds most of the budget). A stage embeds one, lists it before its first
 * charge and unlists it when it is destroyed (after releasing what it
 * holds); it charges and releases through it. Thread-safe; listing takes
 * the budget's holder lock, charging does not. */
typedef struct CvMemoryHolder {
    const char *stage;      /* borrowed, outlives the holder ("Prefetch") */
    const char *knob;       /* borrowed ("lower prefetch's buffer_size") */
    _Atomic int64_t held;   /* bytes charged through this holder */
    CvMemory *memory;       /* the budget it is listed on (resolved); NULL: not listed */
    struct CvMemoryHolder *prev, *next; /* guarded by the budget's holder lock */
} CvMemoryHolder;

/* List h on m (NULL: the default budget); a no-op when it is listed. */
void cv_memory_holder_list(CvMemoryHolder *h, CvMemory *m, const char *stage, const char *knob);
void cv_memory_holder_unlist(CvMemoryHolder *h); /* NULL-safe, idempotent */
/* cv_memory_try_charge / cv_memory_release on h's budget, counted on h. */
bool cv_memory_holder_try_charge(CvMemoryHolder *h, size_t bytes);
void cv_memory_holder_release(CvMemoryHolder *h, size_t bytes);
/* Back-pressure (an AUTOTUNE stage waits for room instead of failing):
 * sleep until a release on h's budget may have made room for `bytes`, or
 * timeout_ns passed; the caller then tries to charge again. A blocking
 * wait: the caller says so (core/blocking.h) and holds no lock. */
void cv_memory_holder_wait(CvMemoryHolder *h, size_t bytes, int64_t timeout_ns);
/* Charge h's budget even over its limit: only for a stage's oldest result,
 * which nothing ahead of it can make room for (waiting would deadlock). */
void cv_memory_holder_force_charge(CvMemoryHolder *h, size_t bytes);
/* Back-pressure in one call: charge `bytes` through h, waiting for room
 * (cv_memory_holder_wait, in a blocking section, polling every poll_ns)
 * while may_wait(ctx) answers 1 (asked after each failed try, with no lock
 * of the caller held). 0: charge it over the limit (force) unless it alone
 * exceeds the budget; -1 (or the thread's owner cancelled): give up.
 * Returns whether the bytes were charged. */
#define CV_MEMORY_POLL_NS (20 * 1000 * 1000) /* a sensible poll_ns: a release wakes sooner */
bool cv_memory_holder_charge_waiting(CvMemoryHolder *h, size_t bytes, int64_t poll_ns,
                                     int (*may_wait)(void *ctx), void *ctx);
/* For a stage that counts its bytes itself (charging the budget directly):
 * what it holds now. */
void cv_memory_holder_set(CvMemoryHolder *h, size_t held);
/* cv_memory_exceeded for h (its stage, what it holds, its knob). */
CvStatus cv_memory_holder_exceeded(CvMemoryHolder *h, size_t bytes);

/* Bytes an element holds: each tensor's nbytes, plus the string bytes its
 * refs point to. */
size_t cv_element_bytes(const CvElement *e);

/* Bytes charged to all live budgets of the process (tests, statistics). */
int64_t cv_memory_in_use(void);

/* In a fork() child: every count restarts at zero (the parent's iterators
 * are never destroyed in the child, so their charges would never be
 * released). */
void cv_memory_after_fork(void);

/* Bytes this process may use: min(physical RAM, cgroup memory limit,
 * RLIMIT_AS when set). Read afresh on each call. */
int64_t cv_memory_process_limit(void);

#endif
