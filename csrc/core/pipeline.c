#include "core/pipeline.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <time.h>

#include "core/pool.h"
#include "core/thread.h"

struct CvPipeline {
    atomic_int refs;
    unsigned id;
    int cpu_budget;
    bool may_block;
    bool fresh; /* the root iterator was not asked or restored since made (consumer's) */
    /* The running part, owned until stop(). `it` is the consumer's; `pool`
     * is also read by the statistics accessors, so stop() takes it away
     * under mu. */
    CvIterator *it;
    CvPassThrough through; /* the consumer's: the root's grant (CvKernel.pass_through), none when units is 0 */
    CvPool *pool;
    /* A structural reference to the root dataset, dropped once the last
     * iterator is freed (teardown): while any of them lives, the binding's
     * gc sees this holder (core/wrapper.h). */
    CvDataset *root;
    pthread_mutex_t mu; /* guards pool and ended_ns; a leaf above the pool's mutex */
    int64_t ended_ns;   /* when stop() ran; 0 while running */
    /* Owned; freed with the last reference (stats() after the end). */
    CvStats *stats;
    CvAutotuner *tuner;
    /* The live registry's (under the front end's lock): the front end's
     * object while registered, else NULL; the fork generation it was made in. */
    void *owner;
    CvPipeline *live_prev, *live_next;
    unsigned long fork_generation;
};

static atomic_uint pipelines_made;

int cv_cpu_budget(int requested)
{
    return requested > 0 ? requested : cv_cpu_count();
}

int cv_autotune_ceiling(int budget)
{
    return (budget < 1 ? 1 : budget) + 1;
}

CvStatus cv_parallelism(int64_t num_parallel_calls, int *workers, bool *autotune)
{
    *autotune = num_parallel_calls < 0;
    if (num_parallel_calls == -1)
        num_parallel_calls = cv_autotune_ceiling(cv_cpu_budget(0));
    else if (num_parallel_calls < 0)
        num_parallel_calls = -num_parallel_calls;
    *workers = num_parallel_calls > 1024 ? 1024 : (int)num_parallel_calls;
    return CV_STATUS_OK;
}

/* The pool's watcher: every iterator made in the pipeline joins its node
 * of the statistics (core/stats.h). */
static void attach(void *stats, CvIterator *it)
{
    cv_stats_attach(stats, it);
}

/* The pool's tick: the autotuner between turns (core/pool.h). */
static bool tune(void *arg)
{
    return cv_autotuner_tick(arg);
}

CvStatus cv_pipeline_new(const CvDataset *ds, const CvPipelineOptions *options, CvPipeline **out)
{
    *out = NULL;
    CvStatus s = CV_STATUS_OK;
    CvPipeline *p = calloc(1, sizeof(*p));
    if (!p)
        return cv_error_nomem();
    atomic_init(&p->refs, 1);
    pthread_mutex_init(&p->mu, NULL);
    p->id = atomic_fetch_add(&pipelines_made, 1) + 1;
    p->fork_generation = cv_fork_generation();
    p->cpu_budget = cv_cpu_budget(options->cpu_budget);
    p->may_block = ds->may_block;
    p->root = cv_dataset_ref((CvDataset *)ds);
    p->pool = cv_pool_new(p->cpu_budget);
    if (!p->pool) {
        s = cv_error_nomem();
        goto fail;
    }
    char name[16];
    snprintf(name, sizeof(name), "cv%u-pool", p->id);
    cv_pool_set_name(p->pool, name);
    if (options->statistics) {
        p->stats = cv_stats_new();
        p->tuner = p->stats ? cv_autotuner_new(p->stats, p->cpu_budget, options->algorithm) : NULL;
        if (!p->tuner) {
            s = cv_error_nomem();
            goto fail;
        }
        s = cv_stats_add_pipeline(p->stats, ds);
        if (s)
            goto fail;
        cv_pool_set_watcher(p->pool, (CvPoolWatcher){attach, p->stats});
        cv_pool_set_tick(p->pool, (CvPoolTick){tune, p->tuner});
    }
    CvPool *outer = cv_pool_set_current(p->pool);
    s = cv_iterator_make(ds, &p->it);
    p->fresh = true;
    cv_pool_set_current(outer);
    if (s)
        goto fail;
    *out = p;
    return CV_STATUS_OK;
fail:
    cv_pipeline_unref(p);
    return s;
}

CvPipeline *cv_pipeline_ref(CvPipeline *p)
{
    if (p)
        atomic_fetch_add(&p->refs, 1);
    return p;
}

void cv_pipeline_unref(CvPipeline *p)
{
    if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
        return;
    cv_pipeline_stop(p); /* nobody else holds it: waits, never detaches */
    cv_autotuner_free(p->tuner);
    cv_stats_free(p->stats);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

bool cv_pipeline_running(const CvPipeline *p)
{
    return p->it != NULL;
}

bool cv_pipeline_may_block(const CvPipeline *p)
{
    return p->may_block;
}

/* Consumer: the root's input when the root's grant covers this element
 * (CvKernel.pass_through: an inline prefetch at the root costs no call). */
static CvIterator *passing(CvPipeline *p)
{
    if (p->through.units <= 0 || atomic_load_explicit(p->through.gate, memory_order_relaxed) != 0)
        return NULL;
    p->through.units--;
    return p->through.input;
}

/* Consumer: after a call of the root itself, take its next grant. */
static void regrant(CvPipeline *p)
{
    if (!p->it->kernel->pass_through || !p->it->kernel->pass_through(p->it, &p->through))
        p->through.units = 0;
}

/* Consumer: count an element taken through the grant as the root's; at
 * the end the root is called again (it sees its input's end itself). */
static void passed(CvPipeline *p, CvStatus s, bool end)
{
    if (s)
        cv_iterator_count(&p->it->errors);
    else if (end)
        p->through.units = 0;
    else
        cv_iterator_count(&p->it->elements);
}

/* Iterators made during next (interleave's, repeat's) join this pool. */
CvStatus cv_pipeline_next(CvPipeline *p, CvElement *out, bool *end)
{
    p->fresh = false;
    CvPool *outer = cv_pool_set_current(p->pool);
    CvIterator *input = passing(p);
    CvStatus s;
    if (input) {
        s = cv_iterator_next(input, out, end);
        passed(p, s, *end);
    } else {
        s = cv_iterator_next(p->it, out, end);
        regrant(p);
    }
    cv_pool_set_current(outer);
    return s;
}

CvStatus cv_pipeline_try_next(CvPipeline *p, CvElement *out, bool *end, bool *would_block)
{
    p->fresh = false;
    CvPool *outer = cv_pool_set_current(p->pool);
    CvIterator *input = passing(p);
    CvStatus s;
    if (!input) {
        s = cv_iterator_try_next(p->it, out, end, would_block);
        regrant(p);
    } else if (p->through.may_block) {
        s = cv_iterator_try_next(input, out, end, would_block);
        if (!s && *would_block)
            p->through.units++; /* nothing taken */
        else
            passed(p, s, *end);
    } else {
        *would_block = false;
        s = cv_iterator_next(input, out, end);
        passed(p, s, *end);
    }
    cv_pool_set_current(outer);
    return s;
}

CvStatus cv_pipeline_wait(CvPipeline *p, CvElement *out, bool *end)
{
    int64_t started = cv_now_ns();
    CvStatus s = cv_pipeline_next(p, out, end);
    if (p->stats)
        cv_stats_consumer_wait(p->stats, cv_now_ns() - started);
    return s;
}

void cv_pipeline_cancel(CvPipeline *p)
{
    cv_iterator_cancel(p->it);
    pthread_mutex_lock(&p->mu);
    if (p->pool)
        cv_pool_cancel(p->pool); /* its threads' cv_blocking_cancelled */
    pthread_mutex_unlock(&p->mu);
}

/* The running part of a pipeline, freed on the thread that ends it. */
typedef struct Teardown {
    CvPipeline *owner; /* a reference when detached: the statistics outlive the pool */
    CvIterator *it;
    CvPool *pool;
    CvDataset *root; /* owned: released after the iterators */
} Teardown;

static void teardown(Teardown *t)
{
    CvPool *outer = cv_pool_set_current(t->pool);
    cv_iterator_destroy(t->it);
    cv_pool_set_current(outer);
    cv_pool_unref(t->pool); /* after the iterators: joins the pool's threads */
    cv_dataset_unref(t->root);
}

static void *teardown_detached(void *arg)
{
    Teardown *t = arg;
    teardown(t);
    cv_pipeline_unref(t->owner);
    free(t);
    return NULL;
}

void cv_pipeline_stop(CvPipeline *p)
{
    pthread_mutex_lock(&p->mu);
    Teardown t = {p, p->it, p->pool, p->root};
    p->it = NULL;
    p->through.units = 0;
    p->pool = NULL;
    p->root = NULL;
    if (!p->ended_ns)
        p->ended_ns = cv_now_ns(); /* the statistics' rates stop here */
    pthread_mutex_unlock(&p->mu);
    if (!t.it && !t.pool) {
        cv_dataset_unref(t.root);
        return;
    }
    cv_iterator_cancel(t.it);
    cv_pool_cancel(t.pool); /* reads waiting on pipes give up */
    if (!cv_pool_wait_idle(t.pool, CV_PIPELINE_RELEASE_WAIT_NS) && atomic_load(&p->refs) > 0) {
        Teardown *d = malloc(sizeof(*d));
        if (d) {
            char name[16];
            snprintf(name, sizeof(name), "cv%u-stop", p->id);
            *d = t;
            d->owner = cv_pipeline_ref(p);
            CvThread thread;
            CvStatus s = cv_thread_start(&thread, teardown_detached, d, name);
            if (!s) {
                pthread_detach(thread.handle);
                return;
            }
            cv_status_free(s);
            cv_pipeline_unref(p); /* not the last: the caller holds one */
            free(d);
        }
    }
    teardown(&t); /* no memory or thread for a detached teardown: wait */
}

void cv_pipeline_abandon(CvPipeline *p)
{
    /* No lock: a parent's thread may have held mu at the fork, and the
     * child has no other thread. */
    p->it = NULL;
    p->through.units = 0;
    p->pool = NULL;
    p->root = NULL; /* leaked with the rest */
}

CvStatus cv_pipeline_save(CvPipeline *p, CvStateWriter *w)
{
    p->through.units = 0; /* the root's own path from here on */
    CvPool *outer = cv_pool_set_current(p->pool);
    CvStatus s = cv_iterator_save(p->it, w);
    cv_pool_set_current(outer);
    return s;
}

/* A fresh root iterator in place of the current one. */
static CvStatus remake(CvPipeline *p)
{
    CvDataset *ds = cv_dataset_ref(p->it->dataset);
    CvPool *outer = cv_pool_set_current(p->pool);
    p->through.units = 0;
    cv_iterator_destroy(p->it);
    p->it = NULL;
    CvStatus s = cv_iterator_make(ds, &p->it);
    p->fresh = true;
    cv_pool_set_current(outer);
    cv_dataset_unref(ds);
    if (s)
        p->it = NULL;
    return s;
}

CvStatus cv_pipeline_restart(CvPipeline *p)
{
    CvStatus s = remake(p);
    if (s)
        cv_pipeline_stop(p);
    return s;
}

/* Put p->it at the state in r, in p's pool. */
static CvStatus restore_in_pool(CvPipeline *p, CvStateReader *r)
{
    p->through.units = 0;
    CvPool *outer = cv_pool_set_current(p->pool);
    CvStatus s = cv_iterator_restore(p->it, r);
    cv_pool_set_current(outer);
    if (!s && r->pos != r->len)
        s = cv_state_corrupt("bytes are left after the pipeline's state");
    return s;
}

/* The fresh iterator's own state is saved first: a failed restore may have
 * moved dataset-wide state (a shuffle's seed generator, epoch counters), and
 * making another fresh iterator draws from it again, so the one made in its
 * place is put back at that state. A pipeline that cannot be saved (a Python
 * generator) can still fail over to a plainly remade iterator. */
CvStatus cv_pipeline_restore(CvPipeline *p, CvStateReader *r)
{
    if (!p->fresh) { /* asked or restored already: a fresh root takes the state */
        CvStatus restarted = cv_pipeline_restart(p);
        if (restarted)
            return restarted;
    }
    p->fresh = false;
    CvStateWriter fresh;
    cv_state_writer_init(&fresh);
    CvStatus saved = cv_pipeline_save(p, &fresh);
    CvStatus s = restore_in_pool(p, r);
    if (!s)
        goto cleanup;
    CvStatus remade = remake(p); /* start over from a fresh iterator */
    if (!remade && !saved) {
        CvStateReader back;
        cv_state_reader_init(&back, fresh.data, fresh.len);
        remade = restore_in_pool(p, &back);
        if (remade) { /* not expected: still never a half-restored iterator */
            cv_status_free(remade);
            remade = remake(p);
        }
    }
    if (remade)
        cv_status_free(remade);
cleanup:
    if (saved)
        cv_status_free(saved);
    cv_state_writer_clear(&fresh);
    return s;
}

CvStats *cv_pipeline_stats(const CvPipeline *p)
{
    return p->stats;
}

CvAutotuner *cv_pipeline_autotuner(const CvPipeline *p)
{
    return p->tuner;
}

int cv_pipeline_cpu_budget(const CvPipeline *p)
{
    return p->cpu_budget;
}

int cv_pipeline_threads(CvPipeline *p)
{
    pthread_mutex_lock(&p->mu);
    int n = p->pool ? cv_pool_threads(p->pool) : 0;
    pthread_mutex_unlock(&p->mu);
    return n;
}

int cv_pipeline_running_turns(CvPipeline *p)
{
    pthread_mutex_lock(&p->mu);
    int n = p->pool ? cv_pool_running(p->pool) : 0;
    pthread_mutex_unlock(&p->mu);
    return n;
}

int64_t cv_pipeline_elapsed_ns(CvPipeline *p)
{
    if (!p->stats)
        return 0;
    pthread_mutex_lock(&p->mu);
    int64_t end = p->ended_ns ? p->ended_ns : cv_now_ns();
    pthread_mutex_unlock(&p->mu);
    return end - cv_stats_started_ns(p->stats);
}

unsigned cv_pipeline_id(const CvPipeline *p)
{
    return p->id;
}

/* ---- the live registry (see pipeline.h: the front end's lock guards it) */

static CvPipeline *live_head;

void cv_pipeline_register(CvPipeline *p, void *owner)
{
    p->owner = owner;
    p->live_prev = NULL;
    p->live_next = live_head;
    if (live_head)
        live_head->live_prev = p;
    live_head = p;
}

void cv_pipeline_unregister(CvPipeline *p)
{
    if (!p || !p->owner)
        return;
    if (p->live_prev)
        p->live_prev->live_next = p->live_next;
    else
        live_head = p->live_next;
    if (p->live_next)
        p->live_next->live_prev = p->live_prev;
    p->live_prev = p->live_next = NULL;
    p->owner = NULL;
}

long cv_pipeline_live_count(void)
{
    long n = 0;
    for (CvPipeline *p = live_head; p; p = p->live_next)
        n++;
    return n;
}

void cv_pipeline_shutdown_all(int64_t timeout_ns, int (*in_flight)(void),
                              void (*settle)(void *owner, bool drained))
{
    /* A snapshot with references: settle() and the wait let go of the
     * front end's lock, and other threads may unregister pipelines then;
     * one is settled only while still registered. */
    long n = 0, cap = cv_pipeline_live_count();
    CvPipeline **live = calloc(cap ? (size_t)cap : 1, sizeof(*live));
    for (CvPipeline *p = live_head; live && p; p = p->live_next)
        if (p->fork_generation == cv_fork_generation()) {
            cv_pipeline_cancel(p);
            live[n++] = cv_pipeline_ref(p);
        }
    void *token = cv_wait_outside_begin();
    struct timespec nap = {0, 1000000};
    for (int64_t waited = 0; in_flight() > 0 && waited < timeout_ns; waited += nap.tv_nsec)
        nanosleep(&nap, NULL);
    bool drained = in_flight() == 0;
    cv_wait_outside_end(token);
    for (long i = 0; i < n; i++) {
        if (live[i]->owner)
            settle(live[i]->owner, drained);
        cv_pipeline_unref(live[i]);
    }
    free(live); /* NULL (no memory): nothing was cancelled or settled */
}
