/* Front-end handles and their ownership rule (core/wrapper.h). */
#include "core/wrapper.h"

#include <stdlib.h>

/* Checking rule 2 walks the parents; this bounds the walk in a pathological
 * graph (beyond it: not an owner, which is safe). */
#define OWNER_CHECK_BUDGET 10000

static int parents_add(CvWrapper *w, CvWrapper *parent)
{
    if (w->num_parents == w->cap_parents) {
        long cap = w->cap_parents ? 2 * w->cap_parents : 4;
        CvWrapper **p = realloc(w->parents, (size_t)cap * sizeof(*p));
        if (!p)
            return -1;
        w->parents = p;
        w->cap_parents = cap;
    }
    w->parents[w->num_parents++] = parent;
    return 0;
}

static void parents_remove(CvWrapper *w, CvWrapper *parent)
{
    for (long i = 0; i < w->num_parents; i++) {
        if (w->parents[i] == parent) {
            w->parents[i] = w->parents[--w->num_parents];
            return;
        }
    }
}

void cv_wrapper_init(CvWrapper *w, CvDataset *ds)
{
    *w = (CvWrapper){.ds = ds};
    if (!ds->wrapper)
        ds->wrapper = w;
    if (ds->num_inputs <= 0)
        return;
    w->inputs = calloc((size_t)ds->num_inputs, sizeof(*w->inputs));
    for (int i = 0; w->inputs && i < ds->num_inputs; i++) {
        CvWrapper *in = ds->inputs[i]->wrapper;
        if (in && parents_add(in, w) == 0)
            w->inputs[w->num_inputs++] = in;
    }
}

/* Rule 2. */
static bool is_owner(const CvWrapper *w, int *budget)
{
    if (!w->ds || --*budget < 0)
        return false;
    if (cv_dataset_structural_refs(w->ds) != 1 + w->num_parents + w->pipelines)
        return false;
    for (long i = 0; i < w->num_parents; i++)
        if (!is_owner(w->parents[i], budget))
            return false;
    return true;
}

int cv_wrapper_traverse(const CvWrapper *w, CvVisit visit, void *arg)
{
    int budget = OWNER_CHECK_BUDGET;
    if (!is_owner(w, &budget))
        return 0;
    return cv_dataset_traverse_owned(w->ds, 1 + w->num_parents + w->pipelines, visit, arg);
}

CvDataset *cv_wrapper_detach(CvWrapper *w, CvWrapper ***inputs, int *n)
{
    CvDataset *ds = w->ds;
    if (ds && ds->wrapper == w)
        ds->wrapper = NULL;
    *inputs = w->inputs;
    *n = w->num_inputs;
    w->inputs = NULL;
    w->num_inputs = 0;
    for (int i = 0; i < *n; i++)
        parents_remove((*inputs)[i], w);
    w->ds = NULL;
    return ds;
}

void cv_wrapper_free(CvWrapper *w)
{
    free(w->parents);
    w->parents = NULL;
    w->num_parents = w->cap_parents = 0;
}
