/* CvStats: what the iterators of one pipeline did, per stage.
 *
 * DESIGN
 * Each pipeline (core/pipeline.h) has one CvStats, which it owns. When the
 * pipeline starts, every dataset of its graph gets a *node*, in depth-first
 * order from the root (a dataset used twice has one node). Every iterator
 * made while the pipeline's pool is current (cv_pool_current) is attached
 * to the node of its dataset (the pipeline makes cv_stats_attach the pool's
 * watcher, and attaching sets the iterator's unwatch to cv_stats_detach); iterators of datasets made at run
 * time (interleave's and flat_map's inner datasets) share one node per
 * kernel name, marked `inner`. So a node counts over all its iterators:
 * repeat()'s epochs, interleave's inner datasets, zip(ds, ds)'s two passes.
 *
 * What is measured, and what it costs:
 *  - elements and errors handed out: the iterator's consumer counts in
 *    cv_iterator_next (a relaxed store of its own counter: no lock, no
 *    shared cache line);
 *  - for parallel stages, their CvStageCounters (once per turn) and gauges
 *    (parallelism, buffer, bytes held), through the kernel's measure hook;
 *  - the consumer's time waiting in the root's next() (the binding).
 * An iterator is attached once made (cv_iterator_make) and detached before
 * it is destroyed, when its counts are folded into its node: a reader
 * never sees one half made or freed (inner iterators are made and freed on
 * pool threads while stats() and the autotuner read).
 *
 * Locks: mu guards the nodes and their live lists. It is taken before a
 * stage's mu (measure hooks), never after it; attach and detach are called with no
 * stage lock held.
 */
#ifndef CV_STATS_H
#define CV_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/dataset.h"

/* Counters: only grow. */
typedef struct CvNodeTotals {
    uint64_t elements; /* handed out by next() */
    uint64_t errors;   /* non-OK statuses handed out */
    uint64_t units;    /* units processed by a parallel stage's turns */
    uint64_t turns;
    uint64_t busy_ns;  /* processing */
    uint64_t input_ns; /* pulling from the input, waits included */
    uint64_t full_ns;  /* buffer full: waiting for the consumer */
    uint64_t wait_ns;  /* the stage's consumer waiting for a result */
    uint64_t waits;
    uint64_t blocked_ns; /* turns inside blocking sections (GIL, Python code, I/O, waits) */
    uint64_t contended_ns; /* of which waiting to enter a one-thread section (the GIL) */
    /* A device stage (csrc/device/): host-to-device copies, their bytes,
     * and the time the device spent on them. */
    uint64_t copies;
    uint64_t copy_bytes;
    uint64_t copy_ns;
    /* Of those elements: copied from the batch's own page-locked buffers
     * (built in place), and packed into a staging slot first (a host
     * memcpy); bytes of their numeric components. */
    uint64_t inplace_batches;
    uint64_t inplace_bytes;
    uint64_t staged_copies;
    uint64_t staged_bytes;
} CvNodeTotals;

/* Values now, summed over a node's live iterators. */
typedef struct CvGauges {
    int parallelism;     /* turns at once allowed now; 0: runs on its consumer's thread */
    int max_parallelism;
    bool tuned_parallelism; /* AUTOTUNE: the autotuner moves it */
    bool may_inline;     /* AUTOTUNE: the autotuner may run it on its consumer's thread (parallelism 0) */
    int buffer;          /* elements in flight or buffered, at most (now) */
    int max_buffer;
    bool tuned_buffer;
    int64_t buffered;    /* elements in flight or buffered */
    int64_t bytes;       /* bytes of buffered elements (charged to the RAM budget) */
    int pulling;         /* turns pulling from the input now */
    int processing;      /* turns processing now */
    /* A device stage: staging ring slots, those with a copy in flight, the
     * ring's page-locked bytes, and device memory held (handed out or cached). */
    int ring_slots;
    int ring_busy;
    int64_t staging_bytes;
    int64_t device_bytes;
    int64_t pinned_bytes; /* page-locked batches its input built, out now (device/pinned.h: budget) */
    /* The stage's parallelism as a shared parameter (tf.data's model
     * parameter): the autotuner publishes a value, the pool reads it before
     * each turn. The stage's own; valid under mu only. NULL: not a parallel
     * stage. */
    _Atomic int *limit;
    /* The probe of a stage that started inline (core/stage.h, "Inline"):
     * its state (CvProbe) when measured, the stage's own (the tuner moves
     * it from POSTED to DONE with a compare-and-swap, under mu only), and
     * its work per unit, valid when POSTED. */
    int probe_state;
    _Atomic int *probe;
    double probe_work_ns;
} CvGauges;

/* A stage's start probe: RUNNING while it times its first units inline,
 * POSTED when its work per unit awaits the autotuner's verdict, DONE once
 * the tuner (or, when no tuner answers, the stage) gave it. */
typedef enum CvProbe { CV_PROBE_OFF = 0, CV_PROBE_RUNNING, CV_PROBE_POSTED, CV_PROBE_DONE } CvProbe;

typedef struct CvNode {
    /* Borrowed, for identity only: the pipeline's datasets outlive its
     * iterators, and no iterator is attached after those end. Holding
     * references would keep Python callables alive for the garbage
     * collector's ownership rule (core/dataset.h). NULL for an inner node. */
    const CvDataset *dataset;
    const void *wrapper;      /* the dataset's wrapper when the pipeline started, never dereferenced */
    const char *kernel;       /* the kernel's name */
    int parent;               /* index of the node whose dataset uses this one; -1: root or inner */
    bool inner;
    int live_count;
    CvIterator *live;         /* attached iterators (it->node_next) */
    CvNodeTotals retired;     /* of detached iterators */
    CvGauges last;            /* of the last one detached: shown while none is live (no task) */
    /* The autotuner's, under mu: totals at its last look, and how many
     * looks in a row proposed fewer workers than the stage has (inline:
     * proposed it go back to parallel). */
    CvNodeTotals seen;
    int fewer_votes;
    /* The hand-off rule's trial (core/autotune.c), under mu: the root's ns
     * per element while parallel (0: no trial running), when the trial
     * began and the root's elements then; the work per unit when the stage
     * went inline (its way back is relative to it); refusals so far and when
     * the rule may try again. */
    double trial_interval;
    int64_t trial_at;
    uint64_t trial_root;
    double inline_work;
    int refusals;
    int64_t retry_at;
    /* The gain rule (core/autotune.c), under mu: the most turns the climb
     * may give the stage (0: no cap); a trial running (-1: at one turn, 1:
     * at its most; 0: none), the parallelism before it and the root's
     * interval then; refusals so far and when the next trial may start;
     * the window at parallelism gain_p: since gain_at, the root's elements
     * then, the stage's totals then. */
    int gain_cap;
    bool gain_inline; /* the rule made it inline (one turn was no faster) */
    bool gain_carried; /* a buffer the rule made inline with the stage below it */
    bool gain_contended; /* its turns waited for the GIL (gain_contended) before the trial at one */
    bool gain_lost_inline; /* inline lost to one turn once: later tries alternate inline / most */
    bool gain_again; /* the next try is inline again */
    int gain_trial; /* -2: inline against one turn */
    int gain_from;
    double gain_before;
    int gain_refusals;
    int64_t retry_gain_at;
    int gain_p;
    int64_t gain_at;
    uint64_t gain_root;
    CvNodeTotals gain_seen;
} CvNode;

typedef struct CvStats CvStats;

CvStats *cv_stats_new(void);
void cv_stats_free(CvStats *stats);
/* Give the datasets of root's graph their nodes (root first). Call once,
 * before the root iterator is made. */
CvStatus cv_stats_add_pipeline(CvStats *stats, const CvDataset *root);
/* Attach a new iterator to its node (sets it->unwatch); detach one
 * (idempotent). */
void cv_stats_attach(CvStats *stats, CvIterator *it);
void cv_stats_detach(CvIterator *it);

/* Start inline (core/stage.h, "Inline"): the autotuner says, once, that it
 * runs stages inline (its model, not MAX_PARALLELISM); whether an
 * iterator's stage may then start inline and probe: its node is the
 * tuner's to decide (not inner, the only live iterator). Any thread. */
void cv_stats_allow_inline_start(CvStats *stats);
bool cv_stats_may_start_inline(const CvIterator *it);
/* A stage posted its probe: the tuner's next tick looks at once, whatever
 * its period (cv_stats_looks_wanted counts the requests). Any thread. */
void cv_stats_want_look(CvStats *stats);
uint64_t cv_stats_looks_wanted(CvStats *stats);

/* The consumer of the root waited `ns` in next() (the binding). */
void cv_stats_consumer_wait(CvStats *stats, int64_t ns);

/* A snapshot of one node. */
typedef struct CvNodeSnapshot {
    const void *wrapper;
    const char *kernel;
    int parent;
    bool inner;
    int live;
    CvNodeTotals totals;
    CvGauges gauges;
} CvNodeSnapshot;

/* Fill up to `cap` snapshots (node order); returns the number of nodes. */
int cv_stats_snapshot(CvStats *stats, CvNodeSnapshot *out, int cap);
/* The consumer's total wait in next() and when the pipeline started. */
int64_t cv_stats_consumer_wait_ns(CvStats *stats);
int64_t cv_stats_started_ns(const CvStats *stats);

/* For the autotuner (core/autotune.c): run fn under mu with the nodes
 * measured now (live iterators' totals and gauges added). */
typedef void (*CvStatsVisit)(void *arg, CvNode *const *nodes, const CvNodeSnapshot *now, int n);
void cv_stats_with_nodes(CvStats *stats, CvStatsVisit fn, void *arg);

/* A struct's fields by name, in the order a report lists them (core/report.h
 * writes any such table). ADDRESS: a pointer, reported as a number (NULL:
 * none); SIZE: a size_t. */
typedef enum CvFieldKind {
    CV_FIELD_U64,
    CV_FIELD_I64,
    CV_FIELD_INT,
    CV_FIELD_BOOL,
    CV_FIELD_STRING,
    CV_FIELD_ADDRESS,
    CV_FIELD_DOUBLE,
    CV_FIELD_SIZE,
} CvFieldKind;

typedef struct CvField {
    const char *name;
    CvFieldKind kind;
    size_t offset; /* in the struct the table describes */
} CvField;

extern const CvField cv_node_fields[]; /* CvNodeSnapshot's; ends with a NULL name */

#endif
