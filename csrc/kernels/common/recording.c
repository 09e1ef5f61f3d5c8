/* The memory cache's recording: see recording.h. */
#include "kernels/common/recording.h"

#include <inttypes.h>
#include <stdlib.h>

#include "core/array.h"
#include "core/thread.h"

#define CACHE_KNOB "cache to a file (cache(filename))"

CvRecording *cv_recording_new(CvMemory *memory)
{
    CvRecording *m = calloc(1, sizeof(CvRecording));
    if (m) {
        m->memory = cv_memory_ref(memory);
        m->generation = cv_fork_generation();
        cv_memory_holder_list(&m->holder, memory, "Cache", CACHE_KNOB);
    }
    return m;
}

void cv_recording_free(CvRecording *m)
{
    if (!m)
        return;
    for (uint32_t c = 0; c < m->ncomp; c++) {
        CvRecordedColumn *col = &m->cols[c];
        for (size_t i = 0; i < col->n_runs; i++)
            cv_buffer_unref(col->runs[i].buf);
        free(col->runs);
        free(col->forms);
    }
    free(m->cols);
    free(m->start);
    if (m->generation == cv_fork_generation()) /* a fork child's budgets start at zero */
        cv_memory_holder_release(&m->holder, m->charged);
    cv_memory_holder_unlist(&m->holder);
    cv_memory_unref(m->memory);
    free(m);
}

static bool form_matches(const int64_t *f, const CvTensor *t)
{
    if (f[0] != (int64_t)t->dtype || f[1] != t->rank)
        return false;
    for (int i = 0; i < t->rank; i++)
        if (f[2 + i] != t->shape[i])
            return false;
    return true;
}

/* Record one more element by reference, charging its bytes (the element
 * may share them with its source, but the cache keeps them alive). */
CvStatus cv_recording_add(CvRecording *m, const CvElement *e, size_t bytes)
{
    if (!cv_memory_holder_try_charge(&m->holder, bytes))
        return cv_memory_holder_exceeded(&m->holder, bytes);
    m->charged += bytes;
    if (!m->cols) {
        m->cols = calloc(e->n ? e->n : 1, sizeof(CvRecordedColumn));
        if (!m->cols)
            return cv_error_nomem();
        m->ncomp = e->n;
    }
    if (e->n != m->ncomp)
        return cv_error(CV_INTERNAL, "Dataset.cache: element %" PRId64 " has %u components, the "
                        "first had %u", m->count, e->n, m->ncomp);
    for (uint32_t c = 0; c < e->n; c++) {
        const CvTensor *t = &e->t[c];
        CvRecordedColumn *col = &m->cols[c];
        CvRecordedRun *r = col->n_runs ? &col->runs[col->n_runs - 1] : NULL;
        if (r && r->buf == t->buf && r->count < UINT32_MAX && form_matches(col->forms + r->form, t)) {
            intptr_t step = (intptr_t)t->data - (intptr_t)r->data;
            if (r->count == 1) {
                r->stride = step;
                r->count = 2;
                continue;
            }
            if (step == (intptr_t)(r->stride * (int64_t)r->count)) {
                r->count++;
                continue;
            }
        }
        uint32_t form = col->last_form;
        if (!col->forms_len || !form_matches(col->forms + form, t)) {
            size_t need = col->forms_len + 2 + (size_t)t->rank;
            if (need > UINT32_MAX)
                return cv_error(CV_RESOURCE_EXHAUSTED, "Dataset.cache: too many element shapes");
            if (!cv_array_reserve((void **)&col->forms, &col->forms_cap, need, sizeof(int64_t),
                                  16))
                return cv_error_nomem();
            form = (uint32_t)col->forms_len;
            col->forms[col->forms_len++] = t->dtype;
            col->forms[col->forms_len++] = t->rank;
            for (int i = 0; i < t->rank; i++)
                col->forms[col->forms_len++] = t->shape[i];
            col->last_form = form;
        }
        if (!cv_array_reserve((void **)&col->runs, &col->cap_runs, col->n_runs + 1, sizeof(CvRecordedRun), 16))
            return cv_error_nomem();
        col->runs[col->n_runs++] = (CvRecordedRun){cv_buffer_ref(t->buf), t->data, 0, 1, form};
    }
    m->count++;
    return CV_STATUS_OK;
}

/* Element `index` of a recording read in order through cursors. */
CvStatus cv_recording_replay(const CvRecording *m, CvRecordingCursor *cursors, CvElement *out)
{
    CvStatus s = cv_element_init(out, m->ncomp);
    if (s)
        return s;
    for (uint32_t c = 0; c < m->ncomp; c++) {
        const CvRecordedColumn *col = &m->cols[c];
        CvRecordingCursor *cur = &cursors[c];
        const CvRecordedRun *r = &col->runs[cur->run];
        const int64_t *f = col->forms + r->form;
        CvTensor *t = &out->t[c];
        t->dtype = (CvDtype)f[0];
        t->rank = (int)f[1];
        for (int i = 0; i < t->rank; i++)
            t->shape[i] = f[2 + i];
        t->data = (char *)((intptr_t)r->data + (intptr_t)(r->stride * (int64_t)cur->offset));
        t->buf = cv_buffer_ref(r->buf);
        if (++cur->offset == r->count) {
            cur->run++;
            cur->offset = 0;
        }
    }
    return CV_STATUS_OK;
}
