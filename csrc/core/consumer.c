/* The consumer's side of a pass: state and refusals (see consumer.h). */
#include "core/consumer.h"

#include "core/thread.h"

CvStatus cv_consumer_start(CvConsumer *c, const CvDataset *ds, const CvPipelineOptions *options,
                           void *owner)
{
    *c = (CvConsumer){.fork_generation = cv_fork_generation()};
    CvStatus s = cv_pipeline_new(ds, options, &c->pipeline);
    if (s)
        goto done;
    c->live = true;
    cv_pipeline_register(c->pipeline, owner);
done:
    return s;
}

bool cv_consumer_forked_away(const CvConsumer *c)
{
    return c->fork_generation != cv_fork_generation();
}

/* The refusals of a use by another process or thread; the verb names the use. */
static const char *const forked_messages[] = {
    [CV_USE_NEXT] = "conveyor: this iterator was created before fork() and cannot be used in the "
                    "child process; create a new iterator (iter(dataset)) in the child",
    [CV_USE_SAVE] = "conveyor: cannot save an iterator created before fork()",
    [CV_USE_RESTORE] = "conveyor: cannot restore an iterator created before fork()",
    [CV_USE_HOLD] = "conveyor: cannot restore an iterator created before fork()",
    [CV_USE_STATS] = "conveyor: this iterator has no statistics (created before fork())",
};
static const char *const busy_messages[] = {
    [CV_USE_NEXT] = "conveyor: next() called on an iterator that another thread is using",
    [CV_USE_SAVE] = "conveyor: cannot save an iterator while another thread is inside its next()",
    [CV_USE_RESTORE] = "conveyor: cannot restore an iterator while another thread is inside its "
                       "next()",
    [CV_USE_HOLD] = "conveyor: cannot restore an iterator while another thread is inside its next()",
};

CvConsumerAnswer cv_consumer_check(const CvConsumer *c, CvConsumerUse use, const char **message)
{
    *message = NULL;
    if (cv_consumer_forked_away(c))
        *message = forked_messages[use];
    else if (use == CV_USE_STATS) /* counters and short locks: safe while busy, and after the end */
        *message = c->pipeline && cv_pipeline_stats(c->pipeline)
                       ? NULL
                       : "conveyor: this iterator was made with statistics off";
    else if (c->busy)
        *message = busy_messages[use];
    if (*message)
        return CV_CONSUMER_MISUSE;
    /* Only save and restore need a running pass; next() at the end returns
     * the end, after what an interrupt held back. */
    if (c->live || (use != CV_USE_SAVE && use != CV_USE_RESTORE))
        return CV_CONSUMER_GO;
    if (use == CV_USE_SAVE && c->exhausted)
        return CV_CONSUMER_END;
    if (use == CV_USE_SAVE)
        *message = "conveyor: cannot save a closed iterator";
    else
        *message = c->exhausted ? "conveyor: cannot restore an iterator that reached its end; "
                                  "restore into a new one (iter(dataset))"
                                : "conveyor: cannot restore a closed iterator";
    return CV_CONSUMER_BAD_STATE;
}

void cv_consumer_count(CvConsumer *c, CvWrapper *root)
{
    if (c->counted || !root || !c->live || cv_consumer_forked_away(c) ||
        !cv_pipeline_running(c->pipeline))
        return;
    root->pipelines++;
    c->counted = root;
}

void cv_consumer_uncount(CvConsumer *c)
{
    if (c->counted)
        c->counted->pipelines--;
    c->counted = NULL;
}

bool cv_consumer_finish(CvConsumer *c)
{
    bool was_live = c->live;
    c->live = false;
    cv_pipeline_unregister(c->pipeline);
    return was_live && c->pipeline && !cv_consumer_forked_away(c);
}

void cv_consumer_abandon(CvConsumer *c)
{
    c->live = false;
    cv_pipeline_unregister(c->pipeline);
    cv_pipeline_abandon(c->pipeline);
    c->pipeline = NULL;
}

bool cv_consumer_settle_at_exit(CvConsumer *c, bool drained)
{
    if (c->busy) {
        c->close_requested = true;
    } else if (!drained) {
        cv_consumer_uncount(c);
        cv_consumer_abandon(c);
    }
    return !c->busy && drained;
}

void cv_consumer_clear(CvConsumer *c)
{
    if (!cv_consumer_forked_away(c))
        cv_pipeline_unref(c->pipeline);
    c->pipeline = NULL;
}
