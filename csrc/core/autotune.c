#include "core/autotune.h"

#include <math.h>
#include <stddef.h>
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
/* Inline (autotune.h): a stage goes inline below INLINE_NS of work per
 * unit, and back above PARALLEL_NS (4x: no flapping around one value), on
 * a window of at least INLINE_UNITS units (or, going back, EVIDENCE_NS of
 * work: a few slow units say enough). */
#define CV_AUTOTUNE_INLINE_NS 2000.0
#define CV_AUTOTUNE_PARALLEL_NS 8000.0
#define CV_AUTOTUNE_INLINE_UNITS 64.0
#define CV_AUTOTUNE_INLINE_EVIDENCE_NS 1000000.0
/* Going back, the window holds at least this many (scaled) units: four
 * timed ones at one in CV_STAGE_INLINE_SAMPLE (64; a timed unit that costs
 * twice the others brings the distance back to 64 from up to 256), or two
 * with EVIDENCE_NS of work; one descheduled sample is not enough. */
#define CV_AUTOTUNE_BACK_UNITS 256.0
#define CV_AUTOTUNE_PARALLEL_VOTES 2
/* The hand-off rule (autotune.h): tried on a stage whose work per root
 * element is below HANDOFF_MAX_NS (above it, parallel work pays for any
 * hand-off this engine has: a futex wake-up on a VM is tens of us). The
 * trial lasts TRIAL_NS and TRIAL_ROOTS root elements at least; inline must
 * not be slower than TRIAL_SLACK x the parallel interval. A refused stage
 * is tried again after RETRY_NS, doubled at each refusal up to
 * RETRY_MAX_NS. */
#define CV_AUTOTUNE_HANDOFF_MAX_NS 25000.0
#define CV_AUTOTUNE_TRIAL_NS 2000000LL
#define CV_AUTOTUNE_TRIAL_ROOTS 64
#define CV_AUTOTUNE_TRIAL_SLACK 1.05
#define CV_AUTOTUNE_RETRY_NS 20000000LL
#define CV_AUTOTUNE_RETRY_MAX_NS 2000000000LL

/* The gain rule (autotune.h): a window says the root's interval after
 * GAIN_NS and GAIN_ROOTS root elements at one parallelism; a stage is
 * tried with fewer (one turn, or inline) when its turns spent half their
 * time in blocking sections and some of it waiting for the GIL. The next try
 * comes after GAIN_RETRY_NS, doubled at each refusal up to
 * GAIN_RETRY_MAX_NS. */
#define CV_AUTOTUNE_GAIN_NS 5000000LL
#define CV_AUTOTUNE_GAIN_ROOTS 16
/* Fewer workers are kept unless the pipeline is slower by this factor, more
 * only when it is faster by it: windows of 5 ms on a shared machine differ
 * by 10-20% at one parallelism, and within that the fewer threads cost less
 * CPU. */
#define CV_AUTOTUNE_GAIN_SLACK 1.25
#define CV_AUTOTUNE_GAIN_SPAN 8 /* a window with no trial starts again after this many GAIN_NS */
#define CV_AUTOTUNE_GAIN_RETRY_NS 50000000LL
#define CV_AUTOTUNE_GAIN_RETRY_MAX_NS 10000000000LL
/* A stage whose turns waited for the GIL this share of their time is
 * tried at one turn again GAIN_SOON_NS after a refusal (a loaded machine's
 * window, not the function): such contention is the mark of GIL-bound work. */
#define CV_AUTOTUNE_GAIN_CONTENDED 0.1
/* The least share of their time a stage's turns waited for the GIL for the
 * rule to try it with fewer: turns that wait on I/O and call Python now and
 * then (a TFRecord interleave's map_func per file, a sleeping Python map)
 * waited 0.03-0.7% (an interleave at one turn read 30-50% slower while the
 * trial lasted). */
#define CV_AUTOTUNE_GAIN_HINT 0.02
#define CV_AUTOTUNE_GAIN_SOON_NS 20000000LL
/* A contended stage whose pipeline takes this long per root element (a
 * batch of a Python map) is tried inline at once instead of at one turn. */
#define CV_AUTOTUNE_GAIN_DIRECT_NS 100000.0
/* A trial of the most is refused as soon as it is slower than the slack
 * allows for the root elements so far, after this long (a GIL-bound stage
 * at its most costs most: its turns take the GIL from each other). While
 * a trial runs the tuner looks every CV_AUTOTUNE_QUICK_NS. */
#define CV_AUTOTUNE_GAIN_EARLY_NS 1000000LL

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
    bool trial_running; /* the gain rule's: looks are quick ones, every CV_AUTOTUNE_QUICK_NS */
    _Atomic uint64_t looks_done; /* cv_stats_looks_wanted when a look began */
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
    atomic_init(&tuner->next_due, tuner->last_run + CV_AUTOTUNE_QUICK_NS);
    atomic_flag_clear(&tuner->running);
    atomic_init(&tuner->looks_done, 0);
    pthread_mutex_init(&tuner->history_mu, NULL);
    if (algorithm == CV_AUTOTUNE_MODEL) /* stages may start inline: this tuner gives the verdicts */
        cv_stats_allow_inline_start(stats);
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
    bool quick; /* a look in the first period: inline decisions only (cv_autotuner_tick) */
    double roots;  /* root elements in the window (since the start in a quick look) */
    uint64_t root_total;
    /* ns per root element if every stage ran inline: the consumer's own time
     * (its next() calls less the waits) plus every stage's work */
    double sequential;
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

/* Whether node j (after i: snapshots list a node before its subtree) is in
 * node i's subtree. */
static bool in_subtree(const CvNodeSnapshot *now, int j, int i)
{
    int a = now[j].parent;
    while (a > i)
        a = now[a].parent;
    return a == i;
}

/* Whether a node below node i (in its subtree) runs turns of its own. */
static bool parallel_below(const CvNodeSnapshot *now, const int *par, int i, int n)
{
    for (int j = i + 1; j < n; j++)
        if (now[j].gauges.limit && par[j] != 0 && in_subtree(now, j, i))
            return true;
    return false;
}

/* history_mu held: record a change and publish it; probe: the verdict of
 * a start probe. */
static void publish_probe(CvAutotuner *tuner, const Run *run, _Atomic int *limit, int node, int from, int to,
                          int bottleneck, double target, double interval, bool probe)
{
    /* Published: the pool reads it at its next pick (the tick's caller
     * wakes a thread when it returns true); an inline stage's consumer at
     * its next next(). */
    atomic_store_explicit(limit, to, memory_order_relaxed);
    tuner->history[tuner->changes++ % CV_AUTOTUNE_HISTORY] = (CvAutotuneChoice){
        .at_ns = run->now - cv_stats_started_ns(tuner->stats),
        .node = node,
        .from = from,
        .to = to,
        .bottleneck = bottleneck,
        .target_ns = target,
        .interval_ns = interval,
        .probe = probe,
    };
}

/* history_mu held: record a change and publish it. */
static void publish(CvAutotuner *tuner, const Run *run, _Atomic int *limit, int node, int from, int to,
                    int bottleneck, double target, double interval)
{
    publish_probe(tuner, run, limit, node, from, to, bottleneck, target, interval, false);
}

/* The hand-off rule's test (autotune.h): parallel work of `per_root` ns
 * per root element may not pay for its hand-off, as the root's interval is
 * no shorter than the sequential estimate. */
static bool handoff_may_lose(const Run *run, double per_root)
{
    if (run->roots < CV_AUTOTUNE_TRIAL_ROOTS || per_root >= CV_AUTOTUNE_HANDOFF_MAX_NS)
        return false;
    return run->dt / run->roots * CV_AUTOTUNE_TRIAL_SLACK >= run->sequential;
}

/* history_mu held: a stage on trial inline (the hand-off rule): -1 while
 * the trial runs, 1 when inline proved no slower than parallel (the trial
 * ends), 0 when it was slower (the stage goes back, refused for a while). */
static int trial_verdict(const Run *run, CvNode *node)
{
    double elapsed = (double)(run->now - node->trial_at);
    double roots = run->root_total > node->trial_root ? (double)(run->root_total - node->trial_root) : 0;
    if (elapsed < CV_AUTOTUNE_TRIAL_NS || roots < CV_AUTOTUNE_TRIAL_ROOTS)
        return -1;
    bool kept = elapsed / roots <= CV_AUTOTUNE_TRIAL_SLACK * node->trial_interval;
    node->trial_interval = 0;
    if (!kept) {
        int64_t wait = CV_AUTOTUNE_RETRY_NS << (node->refusals < 10 ? node->refusals : 10);
        node->retry_at = run->now + (wait < CV_AUTOTUNE_RETRY_MAX_NS ? wait : CV_AUTOTUNE_RETRY_MAX_NS);
        node->refusals++;
    }
    return kept;
}

/* Whether a stage below node i (in its subtree) is still probing. */
static bool probing_below(const CvNodeSnapshot *now, int i, int n)
{
    for (int j = i + 1; j < n; j++)
        if (now[j].gauges.limit && now[j].gauges.probe_state == CV_PROBE_RUNNING && in_subtree(now, j, i))
            return true;
    return false;
}

/* history_mu held: the verdict on node i's start probe (autotune.h, "The
 * start probe"), stages below first (par[] has theirs). Returns whether it
 * gave one: false while a stage below still probes, or when the stage
 * decided alone (its compare-and-swap won). */
static bool decide_probe(const Run *run, CvNode *const *nodes, const CvNodeSnapshot *now, int n, int i, int *par)
{
    const CvGauges *g = &now[i].gauges;
    double w = g->probe_work_ns, units = (double)now[i].totals.units, inputs = 0;
    if (probing_below(now, i, n))
        return false; /* its verdict first: its work is part of ours */
    /* Its own work: less the inline stages right below, run inside its
     * pulls; per input element (a batch's unit has many); per root element. */
    double own = w;
    for (int j = i + 1; j < n; j++)
        if (now[j].gauges.limit && par[j] == 0 && stage_above(now, j) == i && units > 0)
            own -= nodes[j]->inline_work * (double)now[j].totals.units / units;
    /* Its input's elements: the first input's, below the nodes fused into
     * it (no iterator of their own: MapAndBatch's map). */
    for (int c = i, j = i + 1; j < n; j++) {
        if (now[j].parent != c)
            continue;
        if (now[j].live > 0) {
            inputs = (double)now[j].totals.elements;
            break;
        }
        c = j;
    }
    own = own > 0 ? own : 0;
    double per_input = inputs > units && units > 0 ? own * units / inputs : own;
    double ratio = now[0].totals.elements > 0 && units > 0 ? units / (double)now[0].totals.elements : 1;
    bool below = g->max_parallelism <= 1 && parallel_below(now, par, i, n);
    /* A buffer hides its input's work behind the consumer's: worth a
     * hand-off above PARALLEL_NS of work of its own (over inline stages its
     * own includes their kernels' glue, a microsecond or two). */
    double least = g->max_parallelism <= 1 ? CV_AUTOTUNE_PARALLEL_NS : CV_AUTOTUNE_INLINE_NS;
    /* Parallel: at its most, as a stage that never started inline (the climb
     * then gives back what it does not need). */
    int to = below || per_input >= least || ratio * own >= CV_AUTOTUNE_HANDOFF_MAX_NS ? g->max_parallelism : 0;
    int posted = CV_PROBE_POSTED;
    if (!atomic_compare_exchange_strong(g->probe, &posted, CV_PROBE_DONE))
        return false;
    CvNode *node = nodes[i];
    node->inline_work = w; /* the way back to parallel is relative to it */
    node->trial_interval = 0;
    node->fewer_votes = 0;
    publish_probe(run->tuner, run, g->limit, i, 0, to, run->tuner->bottleneck,
                  run->roots > 0 ? run->dt / run->roots : 0, ratio * own / (to ? to : 1), true);
    par[i] = to;
    return true;
}

/* history_mu held: the inline decisions (see Inline in autotune.h), stages
 * below first, so that a prefetch sees what its input was made. par[i]:
 * each node's parallelism, updated. Returns whether one changed. */
static bool decide_inline(const Run *run, CvNode *const *nodes, const CvNodeSnapshot *now, int n,
                          const double *work, const double *measured, const double *ratio, int *par)
{
    CvAutotuner *tuner = run->tuner;
    bool changed = false;
    for (int i = n - 1; i >= 0; i--) {
        const CvGauges *g = &now[i].gauges;
        CvNode *node = nodes[i];
        /* One live iterator: the limit is that stage's own (an inner node
         * or a dataset used twice shares one node among several). */
        if (!g->limit || !g->may_inline || now[i].live != 1 || now[i].inner)
            continue;
        if (g->probe_state == CV_PROBE_POSTED)
            changed |= decide_probe(run, nodes, now, n, i, par);
        if (g->probe_state == CV_PROBE_RUNNING || g->probe_state == CV_PROBE_POSTED || work[i] < 0)
            continue; /* no other rule before the probe's verdict */
        double units = delta(now[i].totals.units, node->seen.units);
        int back = g->max_parallelism < CV_AUTOTUNE_MIN_PARALLELISM ? g->max_parallelism
                                                                    : CV_AUTOTUNE_MIN_PARALLELISM;
        /* A buffer over parallel work below stays: it hides that work's bursts. */
        bool below = g->max_parallelism <= 1 && parallel_below(now, par, i, n);
        int to = par[i];
        bool trial = false;
        if (par[i] > 0 && units >= CV_AUTOTUNE_INLINE_UNITS && !below) {
            if (work[i] < CV_AUTOTUNE_INLINE_NS)
                to = 0;
            else if (run->now >= node->retry_at && handoff_may_lose(run, ratio[i] * work[i]))
                to = 0, trial = true;
        } else if (par[i] == 0 && node->trial_interval > 0) {
            int verdict = trial_verdict(run, node);
            if (verdict == 0)
                to = back; /* inline was slower: the hand-off pays */
        } else if (par[i] == 0 && g->max_parallelism <= 1 && !node->gain_carried && parallel_below(now, par, i, n)) {
            to = back; /* a stage below went back to parallel: buffer it again (the gain rule's: gain_carry) */
        } else if (par[i] == 0 && !node->gain_carried &&
                   work[i] > (4 * node->inline_work > CV_AUTOTUNE_PARALLEL_NS ? 4 * node->inline_work
                                                                              : CV_AUTOTUNE_PARALLEL_NS) &&
                   (units >= CV_AUTOTUNE_BACK_UNITS ||
                    (units >= CV_AUTOTUNE_BACK_UNITS / 2 && measured[i] >= CV_AUTOTUNE_INLINE_EVIDENCE_NS))) {
            /* Inline work is sampled: one unit descheduled while timed
             * counts for up to CV_STAGE_INLINE_SAMPLE_MAX. Two looks in a
             * row must agree. */
            if (++node->fewer_votes >= CV_AUTOTUNE_PARALLEL_VOTES)
                to = back;
        } else if (par[i] == 0) {
            node->fewer_votes = 0;
        }
        if (to == par[i])
            continue;
        node->fewer_votes = 0;
        double interval = run->roots > 0 ? run->dt / run->roots : 0;
        if (to == 0) {
            node->inline_work = work[i];
            node->trial_interval = trial ? interval : 0;
            node->trial_at = run->now;
            node->trial_root = run->root_total;
        } else {
            node->trial_interval = 0;
            node->gain_carried = false;
        }
        /* target: the root's interval when the choice was made */
        publish(tuner, run, g->limit, i, par[i], to, tuner->bottleneck, interval,
                ratio[i] * work[i] / (to ? to : 1));
        par[i] = to;
        changed = true;
    }
    return changed;
}

/* The window since node->gain_at, at one parallelism: the root's ns per
 * element, or 0 while it holds too little to say. */
static double gain_interval(const Run *run, const CvNode *node)
{
    double elapsed = (double)(run->now - node->gain_at);
    double roots = run->root_total > node->gain_root ? (double)(run->root_total - node->gain_root) : 0;
    return elapsed >= CV_AUTOTUNE_GAIN_NS && roots >= CV_AUTOTUNE_GAIN_ROOTS ? elapsed / roots : 0;
}

/* Whether a stage's turns in the window since node->gain_seen spent most of
 * their time in blocking sections and some of it waiting for the GIL:
 * workers that may gain nothing (autotune.h, "The gain rule"). How much
 * they waited says little: a thread the interpreter makes drop the GIL
 * waits for it again inside the function, where no engine clock sees it. */
static bool gain_hint(const CvNodeTotals *t, const CvNodeTotals *seen)
{
    double turns = delta(t->busy_ns, seen->busy_ns) + delta(t->input_ns, seen->input_ns);
    return turns >= CV_AUTOTUNE_GAIN_NS && delta(t->blocked_ns, seen->blocked_ns) >= 0.5 * turns &&
           delta(t->contended_ns, seen->contended_ns) >= CV_AUTOTUNE_GAIN_HINT * turns;
}

/* The next try's time: `base` doubled at each refusal. */
static int64_t gain_retry(const Run *run, int64_t base, int refusals)
{
    int64_t wait = base << (refusals < 10 ? refusals : 10);
    return run->now + (wait < CV_AUTOTUNE_GAIN_RETRY_MAX_NS ? wait : CV_AUTOTUNE_GAIN_RETRY_MAX_NS);
}

/* Whether a stage's turns since `seen` waited for the GIL at least
 * GAIN_CONTENDED of their time. */
static bool gain_contended(const CvNodeTotals *t, const CvNodeTotals *seen)
{
    double turns = delta(t->busy_ns, seen->busy_ns) + delta(t->input_ns, seen->input_ns);
    return turns > 0 && delta(t->contended_ns, seen->contended_ns) >= CV_AUTOTUNE_GAIN_CONTENDED * turns;
}

/* history_mu held: the gain rule moved stage i (par[i] updated): an
 * AUTOTUNE buffer right above it (a prefetch) follows. Inline, it would
 * run the stage on its own thread, passing the GIL back and forth with
 * its consumer for every element (0.89x the sequential pipeline for a
 * GIL-bound map); so it goes inline with the stage when nothing else below
 * it runs turns, and back to its most when the stage leaves inline. */
static bool gain_carry(const Run *run, CvNode *const *nodes, const CvNodeSnapshot *now, int n, int i, int *par)
{
    bool changed = false;
    for (int a = stage_above(now, i); a >= 0; a = stage_above(now, a)) {
        const CvGauges *g = &now[a].gauges;
        CvNode *node = nodes[a];
        int probe = g->probe ? atomic_load_explicit(g->probe, memory_order_relaxed) : CV_PROBE_OFF;
        if (!g->may_inline || g->max_parallelism > 1 || now[a].live != 1 || now[a].inner ||
            probe == CV_PROBE_RUNNING || probe == CV_PROBE_POSTED) /* its verdict may come in this look */
            break;
        int to = par[a];
        bool long_roots = nodes[i]->gain_before >= CV_AUTOTUNE_GAIN_DIRECT_NS;
        if (par[i] == 0 && par[a] > 0 && long_roots && !parallel_below(now, par, a, n))
            to = 0;
        else if (par[i] > 0 && nodes[i]->gain_trial <= 0 && par[a] == 0 && node->gain_carried)
            to = g->max_parallelism; /* not for a trial of the most: it is tried with the buffer inline */
        if (to == par[a]) { /* inline already (its start probe's verdict): it follows from now on */
            node->gain_carried = node->gain_carried || (par[i] == 0 && par[a] == 0 && long_roots);
            break;
        }
        node->gain_carried = to == 0;
        node->trial_interval = 0;
        node->fewer_votes = 0;
        publish(run->tuner, run, g->limit, a, par[a], to, run->tuner->bottleneck, run->roots > 0 ? run->dt / run->roots : 0, 0);
        run->tuner->history[(run->tuner->changes - 1) % CV_AUTOTUNE_HISTORY].gain = true;
        par[a] = to;
        changed = true;
    }
    return changed;
}

/* history_mu held: the gain rule (autotune.h), every look, on a parallel
 * AUTOTUNE stage: a trial at one turn against the root's interval at p,
 * and later at its most against the interval at the cap. par[i] updated;
 * returns whether a stage changed. */
static bool decide_gain(const Run *run, CvNode *const *nodes, const CvNodeSnapshot *now, int n, const double *work,
                        int *par, bool *trials)
{
    CvAutotuner *tuner = run->tuner;
    bool changed = false;
    for (int i = 0; i < n; i++) {
        const CvGauges *g = &now[i].gauges;
        CvNode *node = nodes[i];
        if (!g->limit || !g->tuned_parallelism || now[i].live != 1 || now[i].inner || g->max_parallelism < 2)
            continue;
        const CvNodeTotals *t = &now[i].totals;
        bool gain_inline = par[i] == 0 && (node->gain_inline || node->gain_trial == -2);
        if ((par[i] <= 0 && !gain_inline) || par[i] != node->gain_p || t->units < node->gain_seen.units) {
            if (node->gain_trial) /* another rule moved it: the trial says nothing */
                node->retry_gain_at = gain_retry(run, CV_AUTOTUNE_GAIN_RETRY_NS, node->gain_refusals);
            if (par[i] != node->gain_p && (par[i] > node->gain_cap || node->gain_inline))
                node->gain_cap = 0; /* another rule gave it more (its work grew): start over */
            node->gain_inline = node->gain_again = node->gain_lost_inline = false;
            node->gain_trial = 0;
            node->gain_p = par[i]; /* a new window, at this parallelism */
            node->gain_at = run->now;
            node->gain_root = run->root_total;
            node->gain_seen = *t;
            continue;
        }
        double interval = gain_interval(run, node);
        int to = par[i];
        double elapsed = (double)(run->now - node->gain_at);
        double roots = run->root_total > node->gain_root ? (double)(run->root_total - node->gain_root) : 0;
        if (node->gain_trial < 0 && elapsed >= CV_AUTOTUNE_GAIN_NS &&
            elapsed > CV_AUTOTUNE_GAIN_SLACK * node->gain_before * (roots + 1))
            interval = elapsed / (roots + 1); /* slower already: a slow stage at one turn costs most */
        if (node->gain_trial > 0 && elapsed >= CV_AUTOTUNE_GAIN_EARLY_NS &&
            elapsed > CV_AUTOTUNE_GAIN_SLACK * node->gain_before * (roots + 1))
            interval = elapsed / (roots + 1); /* the most, slower already: refused now */
        if (node->gain_trial && interval > 0) {
            bool fewer = node->gain_trial < 0;
            /* Fewer: kept unless slower by the slack; more: kept when faster by it. */
            bool kept = fewer ? interval <= CV_AUTOTUNE_GAIN_SLACK * node->gain_before
                              : interval * CV_AUTOTUNE_GAIN_SLACK < node->gain_before;
            int trial = node->gain_trial;
            node->gain_trial = 0;
            if (kept && trial == -1 && g->may_inline) { /* one turn: now inline against it */
                node->gain_cap = 1;
                node->gain_trial = -2, to = 0;
                node->gain_before = interval;
                node->gain_from = 1;
                node->inline_work = work[i] > 0 ? work[i] : node->inline_work; /* decide_inline's way back */
                node->trial_interval = 0;
            } else if (kept && fewer) {
                node->gain_cap = 1;
                node->gain_inline = par[i] == 0;
            } else if (kept) {
                node->gain_cap = 0, node->gain_refusals = 0, node->gain_inline = false; /* the climb decides */
            } else if (trial == -2 && node->gain_from == 1) {
                to = 1; /* inline lost to one turn: keep that; the next tries alternate */
                node->gain_again = !node->gain_lost_inline; /* after the first loss: inline first */
                node->gain_lost_inline = true;
                node->gain_refusals++;
            } else {
                to = node->gain_from, node->gain_refusals++;
                node->gain_again = to == 1 && node->gain_lost_inline; /* then inline again */
            }
            /* A refused trial of fewer of a GIL-contended stage: soon again. */
            bool refused = !kept && (trial == -1 || (trial == -2 && node->gain_from > 1));
            int64_t base = refused && node->gain_contended ? CV_AUTOTUNE_GAIN_SOON_NS : CV_AUTOTUNE_GAIN_RETRY_NS;
            node->retry_gain_at = gain_retry(run, base, node->gain_refusals);
        } else if (!node->gain_trial && interval > 0 && run->now >= node->retry_gain_at) {
            if (node->gain_cap == 0 && par[i] > 1 && gain_hint(t, &node->gain_seen)) {
                node->gain_contended = gain_contended(t, &node->gain_seen);
                node->gain_trial = -1, to = 1;
                if (node->gain_contended && g->may_inline && interval >= CV_AUTOTUNE_GAIN_DIRECT_NS) {
                    /* Straight inline: one turn would still pass the GIL back
                     * and forth with its consumer, which waits for it up to
                     * the interpreter's switch interval (5 ms) each time.
                     * (Root elements of a few us: the hand-off rule tries
                     * inline, after one turn.) */
                    node->gain_trial = -2, to = 0;
                    node->inline_work = work[i] > 0 ? work[i] : node->inline_work;
                    node->trial_interval = 0;
                }
            } else if (node->gain_again && par[i] == 1 && node->gain_cap == 1 && g->may_inline) {
                /* inline lost once (a window on a busy machine): tried again,
                 * in turn with the most */
                node->gain_trial = -2, to = 0, node->gain_again = false;
                node->inline_work = work[i] > 0 ? work[i] : node->inline_work;
                node->trial_interval = 0;
            } else if (node->gain_cap > 0 && (par[i] == node->gain_cap || gain_inline)) {
                node->gain_trial = 1, to = g->max_parallelism;
            }
            node->gain_before = interval;
            node->gain_from = par[i];
        }
        *trials |= node->gain_trial != 0;
        if (to == par[i] && !node->gain_trial && elapsed >= CV_AUTOTUNE_GAIN_SPAN * CV_AUTOTUNE_GAIN_NS) {
            node->gain_at = run->now; /* the window slides: a trial compares with the recent past */
            node->gain_root = run->root_total;
            node->gain_seen = *t;
        }
        if (to == par[i]) {
            /* A buffer above that went parallel meanwhile (its start probe's
             * verdict, given while the stage below ran turns): inline again. */
            if ((par[i] == 0 && (node->gain_inline || node->gain_trial == -2)) || (par[i] > 0 && !node->gain_trial))
                changed |= gain_carry(run, nodes, now, n, i, par); /* and back when a trial of the most was kept */
            continue;
        }
        node->fewer_votes = 0;
        node->gain_p = to;
        node->gain_at = run->now;
        node->gain_root = run->root_total;
        node->gain_seen = *t;
        publish(tuner, run, g->limit, i, par[i], to, tuner->bottleneck, interval, 0);
        tuner->history[(tuner->changes - 1) % CV_AUTOTUNE_HISTORY].gain = true;
        par[i] = to;
        changed = true;
        gain_carry(run, nodes, now, n, i, par);
    }
    return changed;
}

/* mu of the statistics held (a CvStatsVisit): the model, and the changes. */
static void model(void *arg, CvNode *const *nodes, const CvNodeSnapshot *now, int n)
{
    Run *run = arg;
    CvAutotuner *tuner = run->tuner;
    size_t count = (size_t)(n > 0 ? n : 1);
    Stage *stages = calloc(count, sizeof(Stage));
    double *work = calloc(count, sizeof(double)), *measured = calloc(count, sizeof(double));
    double *ratio = calloc(count, sizeof(double));
    int *par = calloc(count, sizeof(int));
    bool changed = false, inline_now = false, trials = false;
    if (!stages || !work || !measured || !ratio || !par || n == 0)
        goto done;
    /* The root's elements: its totals so far (for the ratios) and in the window. */
    double root_total = (double)now[0].totals.elements;
    double root_window = delta(now[0].totals.elements, nodes[0]->seen.elements);
    double cpu_work = 0; /* ns of work per root element, all stages */
    for (int i = 0; i < n; i++) {
        const CvNodeTotals *t = &now[i].totals, *seen = &nodes[i]->seen;
        double units = delta(t->units, seen->units);
        work[i] = -1;
        par[i] = now[i].gauges.parallelism;
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
        measured[i] = busy + (input > 0 ? input : 0);
        work[i] = measured[i] / units;
        /* CPU: less the blocking sections (GIL, Python code, I/O, waits). */
        double cpu = busy + delta(t->input_ns, seen->input_ns) - delta(t->blocked_ns, seen->blocked_ns);
        ratio[i] = (double)t->units / root_total;
        cpu_work += ratio[i] * (cpu > 0 ? cpu : 0) / units;
    }
    run->roots = root_window;
    double own = root_window > 0 ? (run->dt - run->consumer_wait) / root_window : 0;
    run->sequential = own > 0 ? own : 0;
    for (int i = 0; i < n; i++)
        if (work[i] >= 0)
            run->sequential += ratio[i] * work[i];
    run->root_total = now[0].totals.elements;
    pthread_mutex_lock(&tuner->history_mu);
    changed = decide_inline(run, nodes, now, n, work, measured, ratio, par);
    changed |= decide_gain(run, nodes, now, n, work, par, &trials);
    pthread_mutex_unlock(&tuner->history_mu);
    /* While a stage runs inline, look every first period: work that grows
     * gets its threads back within two looks. */
    for (int i = 0; i < n; i++)
        inline_now |= now[i].gauges.limit && now[i].gauges.may_inline && par[i] == 0;
    if (run->quick || root_window == 0)
        goto done;
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (work[i] < 0 || !now[i].gauges.tuned_parallelism || par[i] == 0 || nodes[i]->gain_trial)
            continue; /* inline stages and the gain rule's trials take no part in the climb */
        int most = now[i].gauges.max_parallelism;
        if (nodes[i]->gain_cap > 0 && nodes[i]->gain_cap < most)
            most = nodes[i]->gain_cap; /* more turns gained nothing (the gain rule) */
        int least = most < CV_AUTOTUNE_MIN_PARALLELISM ? most : CV_AUTOTUNE_MIN_PARALLELISM;
        stages[m++] = (Stage){i, now[i].gauges.limit, least, most, ratio[i], work[i]};
    }
    if (m == 0)
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
    for (int s = 0; s < m; s++) {
        int from = par[stages[s].node]; /* as decide_inline left it */
        CvNode *node = nodes[stages[s].node];
        if (stages[s].p >= from)
            node->fewer_votes = 0;
        else if (++node->fewer_votes < CV_AUTOTUNE_FEWER_VOTES)
            continue;
        if (stages[s].p == from)
            continue;
        node->fewer_votes = 0;
        publish(tuner, run, stages[s].limit, stages[s].node, from, stages[s].p, bottleneck, target,
                stages[s].k * stages[s].w / stages[s].p);
        changed = true;
    }
    pthread_mutex_unlock(&tuner->history_mu);
done:
    if (changed || inline_now)
        tuner->period = CV_AUTOTUNE_FIRST_NS;
    tuner->trial_running = trials; /* quick looks: a trial's verdict as soon as its window says enough */
    for (int i = 0; i < n && !run->quick; i++)
        nodes[i]->seen = now[i].totals;
    free(stages);
    free(work);
    free(measured);
    free(ratio);
    free(par);
}

bool cv_autotuner_tick(CvAutotuner *tuner)
{
    if (!tuner || tuner->algorithm == CV_AUTOTUNE_FIXED)
        return false;
    int64_t now = cv_now_ns();
    /* A stage posted its start probe: look now (cv_stats_want_look). */
    uint64_t wanted = cv_stats_looks_wanted(tuner->stats);
    bool asked = wanted != atomic_load_explicit(&tuner->looks_done, memory_order_relaxed);
    if (now < atomic_load_explicit(&tuner->next_due, memory_order_relaxed) && !asked)
        return false;
    if (atomic_flag_test_and_set_explicit(&tuner->running, memory_order_acquire))
        return false; /* another thread is at it */
    int64_t changes = tuner->changes; /* written by the thread holding `running` only */
    bool due = now >= atomic_load_explicit(&tuner->next_due, memory_order_relaxed);
    if (due || asked) {
        atomic_store_explicit(&tuner->looks_done, wanted, memory_order_relaxed);
        int64_t consumer_wait = cv_stats_consumer_wait_ns(tuner->stats);
        /* Quick looks, every CV_AUTOTUNE_QUICK_NS in the first period (and
         * any asked for before its time): the inline decisions only, on
         * everything since the start or the last full look (they keep no
         * window: the first full look's is the whole first period). */
        bool quick = now - cv_stats_started_ns(tuner->stats) < CV_AUTOTUNE_FIRST_NS || !due || tuner->trial_running;
        Run run = {tuner, now, (double)(now - tuner->last_run), (double)(consumer_wait - tuner->last_consumer_wait),
                   quick};
        if (!quick)
            tuner->period = tuner->period * 2 > CV_AUTOTUNE_MAX_NS ? CV_AUTOTUNE_MAX_NS : tuner->period * 2;
        cv_stats_with_nodes(tuner->stats, model, &run);
        if (!quick) {
            tuner->last_run = now;
            tuner->last_consumer_wait = consumer_wait;
        }
        pthread_mutex_lock(&tuner->history_mu);
        tuner->runs++;
        pthread_mutex_unlock(&tuner->history_mu);
        if (due)
            atomic_store_explicit(&tuner->next_due,
                                  now + (quick || tuner->trial_running ? CV_AUTOTUNE_QUICK_NS : tuner->period),
                                  memory_order_relaxed);
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

#define CHOICE(name, kind) {#name, kind, offsetof(CvAutotuneChoice, name)}

const CvField cv_autotune_choice_fields[] = {
    CHOICE(at_ns, CV_FIELD_I64),
    CHOICE(node, CV_FIELD_INT),
    CHOICE(from, CV_FIELD_INT),
    CHOICE(to, CV_FIELD_INT),
    CHOICE(bottleneck, CV_FIELD_INT),
    CHOICE(target_ns, CV_FIELD_DOUBLE),
    CHOICE(interval_ns, CV_FIELD_DOUBLE),
    CHOICE(probe, CV_FIELD_BOOL),
    CHOICE(gain, CV_FIELD_BOOL),
    {NULL, CV_FIELD_INT, 0},
};
