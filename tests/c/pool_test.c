/* The worker pool driven from C (core/pool.h): a task made inline (its
 * limit set to 0) while its consumer waits tells the consumer, through
 * CvTask.drained, as its last turn ends; a task that stays parallel is
 * never told. Built and run by tests/test_engine_c.py; prints "N passed,
 * 0 failed" and exits 0 when every check holds. Every wait has a timeout. */
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "core/pool.h"

#include "check.h"

typedef struct {
    CvTask task;
    _Atomic int turns;
    _Atomic int drained;
    int last_turn; /* the turn that ends the task (0: none) */
    int inline_at; /* the turn that sets the limit to 0, as the autotuner would (0: none) */
} Job;

static CvTurn job_turn(void *arg)
{
    Job *job = arg;
    int turn = ++job->turns;
    if (turn == job->inline_at)
        atomic_store_explicit(&job->task.limit, 0, memory_order_relaxed);
    return turn == job->last_turn ? CV_TURN_DONE : CV_TURN_AGAIN;
}

static void job_drained(void *arg)
{
    Job *job = arg;
    job->drained++;
}

/* Poll until *flag is at least `want` or 5 s passed. */
static bool wait_for(_Atomic int *flag, int want)
{
    struct timespec ms = {0, 1000000L};
    for (int i = 0; i < 5000 && *flag < want; i++)
        nanosleep(&ms, NULL);
    return *flag >= want;
}

static void test_made_inline_while_running_tells_the_consumer(void)
{
    CvPool *pool = cv_pool_new(2);
    CHECK(pool != NULL);
    if (!pool)
        return;
    Job job = {.inline_at = 1};
    cv_task_attach(&job.task, pool, job_turn, &job, "inline", 2);
    job.task.drained = job_drained;
    cv_task_submit(&job.task);
    CHECK(wait_for(&job.drained, 1));
    /* At limit 2 a second turn may have started before the first set the
     * limit to 0; after that no turn starts. */
    int turns = job.turns;
    struct timespec settle = {0, 20000000L};
    nanosleep(&settle, NULL);
    CHECK(turns >= 1 && turns <= 2 && job.turns == turns);
    cv_task_remove(&job.task);
    cv_pool_unref(pool);
}

static void test_a_parallel_task_is_never_told(void)
{
    CvPool *pool = cv_pool_new(2);
    CHECK(pool != NULL);
    if (!pool)
        return;
    Job job = {.last_turn = 50};
    cv_task_attach(&job.task, pool, job_turn, &job, "parallel", 2);
    job.task.drained = job_drained;
    cv_task_submit(&job.task);
    CHECK(wait_for(&job.turns, 50));
    cv_task_remove(&job.task); /* waits for the running turns */
    CHECK(job.drained == 0);
    cv_pool_unref(pool);
}

int main(void)
{
    test_made_inline_while_running_tells_the_consumer();
    test_a_parallel_task_is_never_told();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
