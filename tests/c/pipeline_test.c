/* The engine driven from C, with no Python: a pipeline is built from
 * kernels, run through core/pipeline.h, saved and restored, stopped
 * mid-epoch, and its statistics and threads checked. Built and run by
 * tests/test_engine_c.py against the engine's sources (csrc/ less
 * csrc/python/); prints "N passed, 0 failed" and exits 0 when every check
 * holds. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/pipeline.h"
#include "core/iterator_state.h"
#include "core/stats.h"
#include "core/thread.h"
#include "kernels/kernels.h"

#include "check.h"

/* map's function: x -> 2 * x (an int64 scalar), a native call on any thread. */
static CvStatus twice(void *ctx, const CvElement *in, const CvElementId *id, CvElement *out)
{
    (void)ctx;
    (void)id;
    CvStatus s = cv_element_init(out, 1);
    if (!s)
        s = cv_tensor_alloc(&out->t[0], CV_INT64, 0, NULL, 0, NULL);
    if (s)
        return s;
    *(int64_t *)out->t[0].data = 2 * *(const int64_t *)in->t[0].data;
    return CV_STATUS_OK;
}

/* range(n).map(twice, AUTOTUNE).batch(batch).prefetch(AUTOTUNE); NULL on error. */
static CvDataset *make_dataset(int64_t n, int64_t batch)
{
    CvDataset *range = NULL, *map = NULL, *batched = NULL, *prefetched = NULL;
    if (!ok(cv_range_dataset(0, n, 1, CV_INT64, &range), "range"))
        return NULL;
    CvFunction fn = {.call = twice};
    if (ok(cv_map_dataset(range, fn, CV_AUTOTUNE, true, &map), "map") &&
        ok(cv_batch_dataset(map, batch, false, 0, true, &batched), "batch"))
        ok(cv_prefetch_dataset(batched, CV_AUTOTUNE, &prefetched), "prefetch");
    cv_dataset_unref(range);
    cv_dataset_unref(map);
    cv_dataset_unref(batched);
    return prefetched;
}

/* make_dataset(n, batch) running in a new pipeline; NULL (and *ds NULL) on
 * error. The caller stops and unrefs both. */
static CvPipeline *start(int64_t n, int64_t batch, const CvPipelineOptions *options, CvDataset **ds)
{
    CvPipeline *p = NULL;
    *ds = make_dataset(n, batch);
    if (*ds && ok(cv_pipeline_new(*ds, options, &p), "pipeline"))
        return p;
    cv_dataset_unref(*ds);
    *ds = NULL;
    return NULL;
}

/* Pull `count` batches (or to the end), checking each value; returns the
 * next value expected, or -1 on a wrong one. */
static int64_t pull(CvPipeline *p, int64_t expected, int count, bool *end)
{
    for (int i = 0; i < count; i++) {
        CvElement e = {0};
        if (!ok(cv_pipeline_wait(p, &e, end), "next") || *end)
            return *end ? expected : -1;
        const int64_t *v = (const int64_t *)e.t[0].data;
        for (int64_t j = 0; j < e.t[0].shape[0]; j++, expected++)
            if (v[j] != 2 * expected) {
                cv_element_clear(&e);
                return -1;
            }
        cv_element_clear(&e);
    }
    return expected;
}

/* Threads of this process whose name starts with prefix. */
static int threads_named(const char *prefix)
{
    DIR *dir = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *d; dir && (d = readdir(dir));) {
        char path[300], name[32] = {0};
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", d->d_name);
        FILE *f = d->d_name[0] != '.' ? fopen(path, "r") : NULL;
        if (f) {
            n += fgets(name, sizeof(name), f) && strncmp(name, prefix, strlen(prefix)) == 0;
            fclose(f);
        }
    }
    if (dir)
        closedir(dir);
    return n;
}

static void test_a_whole_epoch(void)
{
    CvDataset *ds;
    CvPipelineOptions options = {.cpu_budget = 2, .algorithm = CV_AUTOTUNE_MODEL, .statistics = true};
    CvPipeline *p = start(1000, 32, &options, &ds);
    if (!p)
        return;
    bool end = false;
    CHECK(pull(p, 0, 1000, &end) == 1000 && end);
    CHECK(cv_pipeline_may_block(p));
    CHECK(cv_pipeline_cpu_budget(p) == 2);
    /* The end is sticky. */
    CvElement e = {0};
    end = false;
    CHECK(!cv_pipeline_next(p, &e, &end) && end);
    /* Statistics: one node per dataset, root first, counting what came out. */
    CvNodeSnapshot nodes[8];
    int n = cv_stats_snapshot(cv_pipeline_stats(p), nodes, 8);
    CHECK(n == 4);
    CHECK(n > 0 && strcmp(nodes[0].kernel, "Prefetch") == 0 && nodes[0].totals.elements == 32);
    char prefix[16];
    snprintf(prefix, sizeof(prefix), "cv%u-pool", cv_pipeline_id(p));
    int named = threads_named(prefix);
    /* At most the budget plus core/pool.h's CV_POOL_SPARE; none when every
     * AUTOTUNE stage of this cheap map ran inline from its start (issue 26). */
    CHECK(named >= 0 && named <= 2 + 4);
    cv_pipeline_stop(p);
    CHECK(!cv_pipeline_running(p));
    CHECK(cv_pipeline_threads(p) == 0);
    CHECK(threads_named(prefix) == 0); /* joined: nothing was in flight */
    int64_t elapsed = cv_pipeline_elapsed_ns(p);
    CHECK(elapsed > 0 && cv_pipeline_elapsed_ns(p) == elapsed); /* stopped: the clock stops */
    cv_pipeline_unref(p);
    cv_dataset_unref(ds);
}

static void test_save_and_restore(void)
{
    CvDataset *ds;
    CvPipeline *b = NULL;
    CvPipelineOptions options = {.cpu_budget = 0, .algorithm = CV_AUTOTUNE_MODEL, .statistics = false};
    CvPipeline *a = start(500, 10, &options, &ds);
    if (!a)
        return;
    CHECK(cv_pipeline_stats(a) == NULL && cv_pipeline_cpu_budget(a) == cv_cpu_budget(0));
    bool end = false;
    CHECK(pull(a, 0, 7, &end) == 70);
    CvStateWriter w;
    cv_state_writer_init(&w);
    CHECK(ok(cv_pipeline_save(a, &w), "save"));
    cv_pipeline_stop(a);
    cv_pipeline_unref(a);
    if (ok(cv_pipeline_new(ds, &options, &b), "pipeline")) {
        CvStateReader r;
        cv_state_reader_init(&r, w.data, w.len);
        CHECK(ok(cv_pipeline_restore(b, &r), "restore"));
        CHECK(pull(b, 70, 1000, &end) == 500 && end);
        /* A truncated state leaves a fresh iterator, from the start (the
         * checksum over a whole state is the Python layer's). */
        CHECK(ok(cv_pipeline_restart(b), "restart"));
        cv_state_reader_init(&r, w.data, w.len - 1);
        CvStatus s = cv_pipeline_restore(b, &r);
        CHECK(s != NULL);
        cv_status_free(s);
        CHECK(cv_pipeline_running(b) && pull(b, 0, 1000, &end) == 500);
        cv_pipeline_stop(b);
        cv_pipeline_unref(b);
    }
    cv_state_writer_clear(&w);
    cv_dataset_unref(ds);
}

static void test_stopped_mid_epoch(void)
{
    CvDataset *ds;
    CvPipelineOptions options = {.cpu_budget = 2, .algorithm = CV_AUTOTUNE_MODEL, .statistics = true};
    CvPipeline *p = start(1000000, 64, &options, &ds);
    if (!p)
        return;
    bool end = false;
    CHECK(pull(p, 0, 5, &end) == 320);
    CvPipeline *reader = cv_pipeline_ref(p); /* statistics outlive the stop */
    cv_pipeline_stop(p);
    cv_pipeline_unref(p);
    CHECK(cv_stats_consumer_wait_ns(cv_pipeline_stats(reader)) >= 0);
    cv_pipeline_unref(reader);
    cv_dataset_unref(ds);
}

static void test_budgets(void)
{
    CHECK(cv_cpu_budget(3) == 3);
    CHECK(cv_cpu_budget(0) == cv_cpu_count());
    CHECK(cv_autotune_ceiling(4) == 5);
    int workers = 0;
    bool tuned = false;
    CHECK(!cv_parallelism(CV_AUTOTUNE, &workers, &tuned) && tuned &&
          workers == cv_autotune_ceiling(cv_cpu_budget(0)));
    CHECK(!cv_parallelism(-3, &workers, &tuned) && tuned && workers == 3);
    CHECK(!cv_parallelism(0, &workers, &tuned) && !tuned && workers == 0);
}

/* The exit: shutdown_all cancels the registered pipelines, waits for the
 * calls in flight (none here) and settles each still registered. */
static int none_in_flight(void)
{
    return 0;
}

static int settled;

static void settle(void *owner, bool drained)
{
    CvPipeline *p = owner;
    settled += drained;
    cv_pipeline_unregister(p);
    cv_pipeline_stop(p);
}

static void test_shutdown_all(void)
{
    CvDataset *ds[2];
    CvPipelineOptions options = {.cpu_budget = 2, .algorithm = CV_AUTOTUNE_MODEL, .statistics = false};
    CvPipeline *p[2] = {start(1000000, 64, &options, &ds[0]), start(1000, 8, &options, &ds[1])};
    if (!p[0] || !p[1])
        return;
    long before = cv_pipeline_live_count();
    cv_pipeline_register(p[0], p[0]);
    cv_pipeline_register(p[1], p[1]);
    CHECK(cv_pipeline_live_count() == before + 2);
    cv_pipeline_unregister(p[1]);
    cv_pipeline_unregister(p[1]); /* idempotent */
    CHECK(cv_pipeline_live_count() == before + 1);
    cv_pipeline_shutdown_all(1000000000LL, none_in_flight, settle);
    CHECK(settled == 1 && cv_pipeline_live_count() == before);
    CHECK(!cv_pipeline_running(p[0]) && cv_pipeline_running(p[1]));
    for (int i = 0; i < 2; i++) {
        cv_pipeline_unref(p[i]);
        cv_dataset_unref(ds[i]);
    }
}

int main(void)
{
    test_budgets();
    test_a_whole_epoch();
    test_save_and_restore();
    test_stopped_mid_epoch();
    test_shutdown_all();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
