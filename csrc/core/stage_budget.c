/* A stage's results against its RAM budget (core/stage.h, "Memory"):
 * back-pressure for AUTOTUNE stages. Split from stage.c, which calls it;
 * it reads the stage's bookkeeping under st->mu and calls nothing there. */
#include "core/stage.h"

#include "core/blocking.h"
#include "core/ram_budget.h"

/* How long a waiting turn sleeps before it looks again (a release wakes it
 * sooner; cancellation and the consumer's progress are seen at most this
 * late). */
#define STAGE_ROOM_WAIT_NS (20 * 1000 * 1000)

static bool adaptive(const CvStage *st)
{
    return st->autotune || st->tune_workers;
}

bool cv_stage_budget_has_room(const CvStage *st)
{
    uint64_t buffered = st->issued - st->consumed;
    size_t average = buffered ? st->held / buffered : 0;
    return cv_memory_used(st->memory) + (int64_t)average <= cv_memory_limit(st->memory);
}

bool cv_stage_pull_waits_for_room(const CvStage *st)
{
    return adaptive(st) && st->issued > st->consumed && !cv_stage_budget_has_room(st);
}

/* Whether a result of the turn that pulled from first_seq may wait: an older
 * result of this stage is still to be taken, so the consumer frees room by
 * going on. The oldest one may not (its consumer waits for it: a deadlock),
 * nor one run by the consumer itself (cv_task_help). */
static bool others_ahead(const CvStage *st, uint64_t first_seq)
{
    return st->deterministic ? first_seq > st->consumed : st->completed > st->consumed;
}

bool cv_stage_charge_waiting(CvStage *st, uint64_t first_seq, size_t total, bool may_wait)
{
    if (!adaptive(st) || total == 0)
        return false;
    bool charged = false, blocking = false;
    pthread_mutex_lock(&st->mu);
    cv_memory_holder_list(&st->holder, st->memory, st->name, st->memory_knob);
    for (;;) {
        if (cv_memory_holder_try_charge(&st->holder, total)) {
            charged = true;
            break;
        }
        if (st->cancelled || (blocking && cv_blocking_cancelled()))
            break;
        if (!may_wait || !others_ahead(st, first_seq)) {
            /* The oldest result: over the budget by this one result, unless
             * it can never fit (then the error, as for a fixed stage). */
            if ((int64_t)total <= cv_memory_limit(st->memory)) {
                cv_memory_holder_force_charge(&st->holder, total);
                charged = true;
            }
            break;
        }
        pthread_mutex_unlock(&st->mu);
        if (!blocking) {
            cv_blocking_begin();
            blocking = true;
        }
        cv_memory_holder_wait(&st->holder, total, STAGE_ROOM_WAIT_NS);
        pthread_mutex_lock(&st->mu);
    }
    if (charged)
        st->held += total;
    pthread_mutex_unlock(&st->mu);
    if (blocking)
        cv_blocking_end();
    return charged;
}
