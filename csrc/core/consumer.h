/* CvConsumer: the consumer's side of one pass (core/pipeline.h has the
 * rest), as the front end's iterator sees it: whether the pass runs, whether
 * a thread is inside next(), whether close() came meanwhile, whether the
 * end was reached, and the process it was made in. It answers whether a
 * use asked for now is allowed, with the message of a refusal, so every
 * front end refuses the same way; the front end maps the answer to its
 * error types (the binding: RuntimeError and ValueError).
 *
 * Ownership: holds the pipeline's first reference. Threads: not
 * thread-safe; one lock of the front end's (the binding: the GIL) guards
 * it, as it does cv_pipeline_register. */
#ifndef CV_CONSUMER_H
#define CV_CONSUMER_H

#include <stdbool.h>

#include "core/pipeline.h"
#include "core/wrapper.h"

typedef enum CvConsumerUse {
    CV_USE_NEXT,    /* next() */
    CV_USE_SAVE,    /* save the engine's frames */
    CV_USE_RESTORE, /* restore them */
    CV_USE_HOLD,    /* hold back an element for the next next() (part of a restore) */
    CV_USE_STATS,   /* read the statistics */
} CvConsumerUse;

typedef enum CvConsumerAnswer {
    CV_CONSUMER_GO,       /* allowed now */
    CV_CONSUMER_END,      /* save: the end was reached, nothing to save */
    CV_CONSUMER_MISUSE,   /* refused: another thread, another process, no statistics */
    CV_CONSUMER_BAD_STATE /* refused: the iterator is closed or finished */
} CvConsumerAnswer;

typedef struct CvConsumer {
    CvPipeline *pipeline; /* owned reference, NULL once abandoned; kept after the end for stats */
    bool live;            /* the pipeline runs: not closed, exhausted or abandoned */
    bool busy;            /* a thread is inside next(), save or restore */
    bool close_requested; /* close() arrived while busy */
    bool exhausted;       /* the end was reached (not closed): saves as "finished" */
    unsigned long fork_generation;
    CvWrapper *counted; /* the root's wrapper while this pass is one of its pipelines, else NULL */
} CvConsumer;

/* Make ds's pipeline and register it for owner (core/pipeline.h's live
 * registry); c is set up first, so a failed start leaves it not live. */
CvStatus cv_consumer_start(CvConsumer *c, const CvDataset *ds, const CvPipelineOptions *options,
                           void *owner);
/* Made in another process (before a fork()): its threads and locks are the
 * parent's, never touched here. */
bool cv_consumer_forked_away(const CvConsumer *c);
/* Whether `use` is allowed now; a refusal's message in *message (static). */
CvConsumerAnswer cv_consumer_check(const CvConsumer *c, CvConsumerUse use, const char **message);
/* The pass is over (the end, close, restore at the end): not live and off
 * the registry. True when the pipeline must still be stopped
 * (cv_pipeline_stop, which may wait: the front end lets go of its lock). */
bool cv_consumer_finish(CvConsumer *c);
/* At exit, with calls into the front end's code still in flight: drop the
 * running part without joining it (cv_pipeline_abandon). */
void cv_consumer_abandon(CvConsumer *c);
/* At exit (cv_pipeline_shutdown_all's settle), with the front end's lock:
 * a pass inside next() on another thread is asked to close (its next()
 * returns CANCELLED and frees it); else true when the calls into the front
 * end's code drained and the front end must stop it now, or, with calls
 * still in flight, it is abandoned: its threads die with the process, never
 * joined. */
bool cv_consumer_settle_at_exit(CvConsumer *c, bool drained);
/* Garbage collection (core/wrapper.h, rule 2). A running pipeline holds a
 * structural reference to its root dataset until its last engine iterator
 * is freed; the root's wrapper counts it as its own (`pipelines`) while the
 * pass is counted, which lets the wrapper report the callables the
 * pipeline runs, and the front end's iterator reports the root's object:
 * if the collector finds the callables unreachable, the iterator is too,
 * and its clear stops the pipeline. Counted only while the pipeline runs,
 * and taken off before anything that may stop it, so the count never
 * exceeds the pipelines holding the root; one too low only makes the
 * wrapper a non-owner (nothing reported). root NULL: none (released). */
void cv_consumer_count(CvConsumer *c, CvWrapper *root);
void cv_consumer_uncount(CvConsumer *c);
/* Drop the pipeline reference (leaked after fork(): the parent's). */
void cv_consumer_clear(CvConsumer *c);

#endif
