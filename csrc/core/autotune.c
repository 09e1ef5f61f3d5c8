#include "core/autotune.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/thread.h"

/* Headroom: a stage runs at most this busy at the target interval, since a
 * stage at 100% keeps its consumer waiting on every hiccup. */
#define CV_AUTOTUNE_UTILIZATION 0.8
/* At least two turns at once for a stage that may run more: one pulls while
 * another processes. With one, the stage's input stops while it processes
 * (its buffer fills and its producer idles), which the model, counting the
 * pull as serial work, does not see. */
#define CV_AUTOTUNE_MIN_PARALLELISM 2
/* Hysteresis: more workers are given at once; fewer only after this many
 * looks in a row proposed fewer, so noise in one window does not make the
 * choices swing. */
#define CV_AUTOTUNE_FEWER_VOTES 3

struct CvAutotuner {
    CvStats *stats; /* borrowed: the pool owns both */
    int cpu_budget;
    CvAutotuneAlgorithm algorithm;
    _Atomic int64_t next_due; /* cv_now_ns() */
    atomic_flag running;
    /* Written by the thread holding `running`; read under history_mu. */
    int64_t period;
    int64_t last_run;
    int64_t last_consumer_wait;
    pthread_mutex_t history_mu;
    CvAutotuneChoice history[CV_AUTOTUNE_HISTORY];
    int64_t changes; /* choices made in all; the last CV_AUTOTUNE_HISTORY are kept */
    int64_t runs;
    int bottleneck;
};

CvAutotuner *cv_autotuner_new(CvStats *stats, int cpu_budget, CvAutotuneAlgorithm algorithm)
{
    CvAutotuner *tuner = calloc(1, sizeof(*tuner));
    if (!tuner)
        return NULL;
    tuner->stats = stats;
    tuner->cpu_budget = cpu_budget < 1 ? 1 : cpu_budget;
    tuner->algorithm = algorithm;
    tuner->period = CV_AUTOTUNE_FIRST_NS;
    tuner->last_run = cv_stats_started_ns(stats);
    tuner->bottleneck = -1;
    atomic_init(&tuner->next_due, tuner->last_run + tuner->period);
    atomic_flag_clear(&tuner->running);
    pthread_mutex_init(&tuner->history_mu, NULL);
    return tuner;
}

void cv_autotuner_free(CvAutotuner *tuner)
{
    if (!tuner)
        return;
    pthread_mutex_destroy(&tuner->history_mu);
    free(tuner);
}

CvAutotuneAlgorithm cv_autotuner_algorithm(const CvAutotuner *tuner)
{
    return tuner->algorithm;
}

int cv_autotuner_budget(const CvAutotuner *tuner)
{
    return tuner->cpu_budget;
}

/* One stage in the model. */
typedef struct {
    int node;
    _Atomic int *limit; /* the stage's published parallelism (CvGauges) */
    int p, max_p;
    double k; /* units per root element */
    double w; /* ns of work per unit */
} Stage;

typedef struct {
    CvAutotuner *tuner;
    int64_t now;
    double dt;
    double consumer_wait;
} Run;

static double delta(uint64_t now, uint64_t before)
{
    return now > before ? (double)(now - before) : 0.0;
}

/* The nearest node above node j with a parallel stage, or -1. */
static int stage_above(const CvNodeSnapshot *now, int j)
{
    int a = now[j].parent;
    while (a >= 0 && !now[a].gauges.limit)
        a = now[a].parent;
    return a;
}

/* mu of the statistics held (a CvStatsVisit): the model, and the changes. */
static void model(void *arg, CvNode *const *nodes, const CvNodeSnapshot *now, int n)
{
    Run *run = arg;
    CvAutotuner *tuner = run->tuner;
    Stage *stages = calloc((size_t)(n > 0 ? n : 1), sizeof(Stage));
    if (!stages || n == 0)
        goto done;
    /* The root's elements: its totals so far (for the ratios) and in the window. */
    double root_total = (double)now[0].totals.elements;
    double root_window = delta(now[0].totals.elements, nodes[0]->seen.elements);
    int m = 0;
    double cpu_work = 0; /* ns of work per root element, all stages */
    for (int i = 0; i < n; i++) {
        const CvNodeTotals *t = &now[i].totals, *seen = &nodes[i]->seen;
        double units = delta(t->units, seen->units);
        if (!now[i].gauges.limit || units == 0 || root_total == 0)
            continue;
        /* Pulling that was waiting for the parallel stages right below is
         * not this stage's work. */
        double below_wait = 0;
        for (int j = i + 1; j < n; j++)
            if (now[j].gauges.limit && stage_above(now, j) == i)
                below_wait += delta(now[j].totals.wait_ns, nodes[j]->seen.wait_ns);
        double busy = delta(t->busy_ns, seen->busy_ns);
        double input = delta(t->input_ns, seen->input_ns) - below_wait;
        double w = (busy + (input > 0 ? input : 0)) / units;
        /* CPU: less the blocking sections (GIL, Python code, I/O, waits). */
        double cpu = busy + delta(t->input_ns, seen->input_ns) - delta(t->blocked_ns, seen->blocked_ns);
        double k = (double)t->units / root_total;
        cpu_work += k * (cpu > 0 ? cpu : 0) / units;
        if (!now[i].gauges.tuned_parallelism)
            continue;
        int most = now[i].gauges.max_parallelism;
        int least = most < CV_AUTOTUNE_MIN_PARALLELISM ? most : CV_AUTOTUNE_MIN_PARALLELISM;
        stages[m++] = (Stage){i, now[i].gauges.limit, least, most, k, w};
    }
    if (m == 0 || root_window == 0)
        goto done;
    /* The target: the consumer's own time per element, or the CPU floor. */
    double consumer = (run->dt - run->consumer_wait) / root_window;
    double floor = cpu_work / tuner->cpu_budget;
    double target = (consumer > floor ? consumer : floor) * CV_AUTOTUNE_UTILIZATION;
    int bottleneck = -1;
    for (;;) { /* HILL_CLIMB: one worker at a time to the slowest stage */
        int slowest = 0;
        for (int s = 1; s < m; s++)
            if (stages[s].k * stages[s].w / stages[s].p > stages[slowest].k * stages[slowest].w / stages[slowest].p)
                slowest = s;
        Stage *st = &stages[slowest];
        if (bottleneck < 0)
            bottleneck = st->node;
        if (st->k * st->w / st->p <= target || st->p >= st->max_p)
            break;
        st->p++;
    }
    pthread_mutex_lock(&tuner->history_mu);
    tuner->bottleneck = bottleneck;
    bool changed = false;
    for (int s = 0; s < m; s++) {
        int from = now[stages[s].node].gauges.parallelism;
        CvNode *node = nodes[stages[s].node];
        if (stages[s].p >= from)
            node->fewer_votes = 0;
        else if (++node->fewer_votes < CV_AUTOTUNE_FEWER_VOTES)
            continue;
        if (stages[s].p == from)
            continue;
        node->fewer_votes = 0;
        /* Published: the pool reads it at its next pick (the tick's
         * caller wakes a thread when it returns true). */
        atomic_store_explicit(stages[s].limit, stages[s].p, memory_order_relaxed);
        changed = true;
        tuner->history[tuner->changes++ % CV_AUTOTUNE_HISTORY] = (CvAutotuneChoice){
            .at_ns = run->now - cv_stats_started_ns(tuner->stats),
            .node = stages[s].node,
            .from = from,
            .to = stages[s].p,
            .bottleneck = bottleneck,
            .target_ns = target,
            .interval_ns = stages[s].k * stages[s].w / stages[s].p,
        };
    }
    pthread_mutex_unlock(&tuner->history_mu);
    if (changed)
        tuner->period = CV_AUTOTUNE_FIRST_NS;
done:
    for (int i = 0; i < n; i++)
        nodes[i]->seen = now[i].totals;
    free(stages);
}

bool cv_autotuner_tick(CvAutotuner *tuner)
{
    if (!tuner || tuner->algorithm == CV_AUTOTUNE_FIXED)
        return false;
    int64_t now = cv_now_ns();
    if (now < atomic_load_explicit(&tuner->next_due, memory_order_relaxed))
        return false;
    if (atomic_flag_test_and_set_explicit(&tuner->running, memory_order_acquire))
        return false; /* another thread is at it */
    int64_t changes = tuner->changes; /* written by the thread holding `running` only */
    if (now >= atomic_load_explicit(&tuner->next_due, memory_order_relaxed)) {
        int64_t consumer_wait = cv_stats_consumer_wait_ns(tuner->stats);
        Run run = {tuner, now, (double)(now - tuner->last_run), (double)(consumer_wait - tuner->last_consumer_wait)};
        tuner->period = tuner->period * 2 > CV_AUTOTUNE_MAX_NS ? CV_AUTOTUNE_MAX_NS : tuner->period * 2;
        cv_stats_with_nodes(tuner->stats, model, &run);
        tuner->last_run = now;
        tuner->last_consumer_wait = consumer_wait;
        pthread_mutex_lock(&tuner->history_mu);
        tuner->runs++;
        pthread_mutex_unlock(&tuner->history_mu);
        atomic_store_explicit(&tuner->next_due, now + tuner->period, memory_order_relaxed);
    }
    bool published = tuner->changes != changes;
    atomic_flag_clear_explicit(&tuner->running, memory_order_release);
    return published;
}

int64_t cv_autotuner_history(CvAutotuner *tuner, CvAutotuneChoice *out, int cap, int *copied)
{
    pthread_mutex_lock(&tuner->history_mu);
    int64_t total = tuner->changes;
    int64_t kept = total < CV_AUTOTUNE_HISTORY ? total : CV_AUTOTUNE_HISTORY;
    int64_t first = total - (kept < cap ? kept : cap);
    int n = 0;
    for (int64_t i = first; i < total; i++)
        out[n++] = tuner->history[i % CV_AUTOTUNE_HISTORY];
    pthread_mutex_unlock(&tuner->history_mu);
    *copied = n;
    return total;
}

int64_t cv_autotuner_runs(CvAutotuner *tuner)
{
    pthread_mutex_lock(&tuner->history_mu);
    int64_t runs = tuner->runs;
    pthread_mutex_unlock(&tuner->history_mu);
    return runs;
}

int cv_autotuner_bottleneck(CvAutotuner *tuner)
{
    pthread_mutex_lock(&tuner->history_mu);
    int node = tuner->bottleneck;
    pthread_mutex_unlock(&tuner->history_mu);
    return node;
}
