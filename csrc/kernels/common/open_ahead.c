/* Open-ahead (see open_ahead.h). */
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/stage.h" /* cv_stage_put_status / get_status */
#include "io/http.h"    /* cv_io_stats: the I/O budget's request count */
#include "kernels/common/open_ahead.h"

/* A refill that has taken this long hands out what it has (a slow input must
 * not hold back the element already there). */
#define CV_OPEN_AHEAD_REFILL_NS 1000000

void cv_open_ahead_init(CvOpenAhead *a, const CvFunction *fn)
{
    memset(a, 0, sizeof(*a));
    a->mask = fn->opens_args;
}

static void entry_clear(CvOpenAheadEntry *e)
{
    cv_status_free(e->status);
    cv_element_clear(&e->e);
    for (int i = 0; i < CV_OPEN_AHEAD_FILES; i++)
        cv_fs_ahead_drop(e->files[i]);
    memset(e, 0, sizeof(*e));
}

static bool ensure_rings(CvOpenAhead *a)
{
    if (a->q)
        return true;
    CvIoStats st;
    cv_io_stats(&st);
    int64_t depth = st.budget_requests;
    a->depth = depth < 1 ? 1 : depth > 256 ? 256 : (int)depth;
    a->q = calloc((size_t)a->depth, sizeof(*a->q));
    a->linger = calloc((size_t)CV_OPEN_AHEAD_LINGER * CV_OPEN_AHEAD_FILES, sizeof(*a->linger));
    return a->q && a->linger;
}

/* Open the files named by e's masked components (scalar strings; others
 * are left to the function, which says what is wrong with them). Returns
 * how many were opened. */
static int open_files(CvOpenAhead *a, CvOpenAheadEntry *e)
{
    int n = 0;
    for (uint32_t k = 0; k < e->e.n && k < 64 && n < CV_OPEN_AHEAD_FILES; k++) {
        const CvTensor *t = &e->e.t[k];
        if (!(a->mask >> k & 1) || t->dtype != CV_STRING || t->rank != 0)
            continue;
        const CvStringRef *ref = (const CvStringRef *)t->data;
        const char *name = cv_string_data(t, ref);
        char small[512], *path = ref->length < sizeof(small) ? small : malloc(ref->length + 1);
        if (!path)
            continue;
        memcpy(path, name, ref->length);
        path[ref->length] = '\0';
        if (strlen(path) == ref->length && cv_fs_is_remote(path) &&
            (e->files[n] = cv_fs_open_ahead(path)))
            n++;
        if (path != small)
            free(path);
    }
    return n;
}

static CvOpenAheadEntry *push(CvOpenAhead *a)
{
    return &a->q[(a->head + a->len++) % a->depth];
}

static void refill(CvOpenAhead *a, CvIterator *input)
{
    int64_t started = cv_now_ns();
    int pulled = 0;
    while (a->len < a->depth && !(a->len > 0 && a->q[(a->head + a->len - 1) % a->depth].end)) {
        CvOpenAheadEntry *e = push(a);
        e->status = cv_iterator_next(input, &e->e, &e->end);
        /* An element with no remote file to open (a local path, an error)
         * ends the refill: local paths are not pulled ahead at all. */
        if (e->status || e->end || open_files(a, e) == 0)
            break;
        /* Two pulls per call at least: the queue grows by one per element
         * handed out until it is `depth` deep, however slow the input. */
        if (++pulled >= 2 && cv_now_ns() - started > CV_OPEN_AHEAD_REFILL_NS)
            break;
    }
}

CvStatus cv_open_ahead_next(CvOpenAhead *a, CvIterator *input, CvElement *out, bool *end)
{
    if (!a->mask)
        return cv_iterator_next(input, out, end);
    if (!ensure_rings(a))
        return cv_error_nomem();
    refill(a, input);
    CvOpenAheadEntry *e = &a->q[a->head];
    CvStatus s = e->status;
    *end = e->end;
    if (e->end) { /* stays queued: the end is sticky */
        e->status = CV_STATUS_OK;
        return CV_STATUS_OK;
    }
    cv_element_move(out, &e->e);
    /* The files stay open for the function a while (see open_ahead.h). */
    for (int i = 0; i < CV_OPEN_AHEAD_FILES; i++) {
        CvFsAhead **slot = &a->linger[a->linger_next];
        a->linger_next = (a->linger_next + 1) % (CV_OPEN_AHEAD_LINGER * CV_OPEN_AHEAD_FILES);
        cv_fs_ahead_drop(*slot);
        *slot = e->files[i];
        e->files[i] = NULL;
    }
    e->status = CV_STATUS_OK;
    a->head = (a->head + 1) % a->depth;
    a->len--;
    return s;
}

/* [count][each: status, element if OK][the input's frame]; an end pulled
 * ahead is not written (the input's own state says it ended). */
CvStatus cv_open_ahead_save(CvOpenAhead *a, CvIterator *input, CvStateWriter *w)
{
    if (!a->mask)
        return cv_iterator_save(input, w);
    uint64_t n = 0;
    for (int i = 0; i < a->len; i++)
        n += !a->q[(a->head + i) % a->depth].end;
    cv_state_put_u64(w, n);
    for (int i = 0; i < a->len; i++) {
        const CvOpenAheadEntry *e = &a->q[(a->head + i) % a->depth];
        if (e->end)
            continue;
        cv_stage_put_status(w, e->status);
        if (!e->status)
            cv_state_put_element(w, &e->e);
    }
    return cv_iterator_save(input, w);
}

CvStatus cv_open_ahead_restore(CvOpenAhead *a, CvIterator *input, CvStateReader *r)
{
    if (!a->mask)
        return cv_iterator_restore(input, r);
    cv_open_ahead_clear(a);
    if (!ensure_rings(a))
        return cv_error_nomem();
    int64_t n = 0;
    CvStatus s = cv_state_get_range(r, "map's elements pulled ahead", 0, 1 << 20, &n);
    if (!s && n > a->depth) { /* saved under a larger I/O budget */
        CvOpenAheadEntry *q = realloc(a->q, (size_t)n * sizeof(*q));
        if (!q)
            return cv_error_nomem();
        memset(q, 0, (size_t)n * sizeof(*q));
        a->q = q;
        a->depth = (int)n;
    }
    for (int64_t i = 0; !s && i < n; i++) {
        CvOpenAheadEntry *e = push(a);
        if (!(s = cv_stage_get_status(r, &e->status)) && !e->status &&
            !(s = cv_state_get_element(r, &e->e)))
            open_files(a, e);
    }
    return s ? s : cv_iterator_restore(input, r);
}

void cv_open_ahead_clear(CvOpenAhead *a)
{
    for (int i = 0; a->q && i < a->len; i++)
        entry_clear(&a->q[(a->head + i) % a->depth]);
    a->head = a->len = 0;
    for (int i = 0; a->linger && i < CV_OPEN_AHEAD_LINGER * CV_OPEN_AHEAD_FILES; i++)
        cv_fs_ahead_drop(a->linger[i]);
    free(a->q);
    free(a->linger);
    a->q = NULL;
    a->linger = NULL;
    a->linger_next = 0;
}
