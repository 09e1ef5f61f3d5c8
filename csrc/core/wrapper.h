/* CvWrapper: a front end's handle on an engine dataset (the binding's
 * conveyor._engine.Dataset embeds one), and the rule for when the handle
 * may report the callables its dataset holds to a tracing garbage
 * collector, so that a reference cycle through a pipeline (a map function
 * whose closure refers to the dataset that runs it) can be broken.
 *
 * Engine datasets are shared: one may be the input of several others, held
 * by several handles, and held by running pipelines whose worker threads
 * take and drop references without the collector's lock. Reporting a
 * callable from more than one handle, or from a graph another thread may be
 * using, would over-count references, or let the collector free a function
 * a pipeline still runs. The rules:
 *
 *  1. Each wrapper links the wrappers of its dataset's inputs (the front
 *     end holds and reports each), and each wrapper knows the wrappers that
 *     link it (its parents). Every CvDataset has at most one wrapper
 *     (ds->wrapper), the first made with it.
 *  2. A wrapper W is an owner when its dataset's structural count
 *     (core/dataset.h: engine iterators are counted apart) is exactly 1 +
 *     its parents + its counted pipelines (W's reference, one per parent's
 *     dataset holding it, one per running pipeline over it that the front
 *     end counts for W: its Iterator, while it runs), and every parent is
 *     an owner too (so nothing above holds the chain either).
 *  3. An owner reports the callables of its dataset and, recursively, of
 *     the inputs whose structural count is 1 (cv_dataset_traverse_owned);
 *     each callback reports its foreign references through its traverse
 *     hook (a from_generator's live Python iterators included). A non-owner
 *     reports nothing here (the front end still reports its inputs).
 *
 * Each callable is so reported by at most one wrapper: the wrapper of the
 * dataset holding it, or, for a dataset without one, the owner of the only
 * dataset holding it. And it is reported only when everything that holds it
 * is an object the collector sees: if the collector finds the function
 * unreachable, so are the wrappers that hold it, all wrappers above them (a
 * parent's object holds its inputs' objects), and every Iterator running a
 * pipeline over any of them (a counted Iterator holds its source's object).
 * Engine iterators are not counted, but each lives in a pipeline whose root
 * holds it structurally: a pipeline (core/pipeline.h, until its last
 * iterator is freed) or an interleave slot (its inner dataset). When the
 * structural counts match, every dataset holding one of the owned part is
 * itself in it, so each such root is an owned dataset held by a counted
 * pipeline; a root held otherwise (a pipeline no longer counted, a detached
 * teardown, an inner dataset) is a holder no one accounts for, and nothing
 * is reported; the front end stops the counted pipelines when the collector
 * clears their Iterators. Anything else is reported by no one, which only
 * keeps objects alive. The structural counts cannot go up while the
 * collector runs: a new reference needs an existing one, and in an owned
 * part all of them belong to wrappers or counted pipelines.
 *
 * Threads: every function here, and every change of `pipelines`, runs under
 * the front end's one lock (the binding: the GIL), as the collector does. */
#ifndef CV_WRAPPER_H
#define CV_WRAPPER_H

#include "core/dataset.h"

typedef struct CvWrapper CvWrapper;
struct CvWrapper {
    CvDataset *ds;       /* owned reference; NULL once detached */
    CvWrapper **inputs;  /* the wrappers of ds's inputs linked by this one (malloc) */
    int num_inputs;
    CvWrapper **parents; /* the wrappers that link this one (borrowed, malloc) */
    long num_parents, cap_parents;
    long pipelines; /* running pipelines over ds counted for this wrapper (rule 2) */
};

/* Take ds (a reference), become its wrapper when it has none, and link the
 * wrappers of its inputs (rule 1): w->inputs then lists those the front end
 * must hold until cv_wrapper_detach. A link that cannot be made (no memory)
 * is left out: the input then counts a holder it cannot explain, and is
 * never an owner (safe). */
void cv_wrapper_init(CvWrapper *w, CvDataset *ds);
/* Rules 2 and 3: when w is an owner, visit the foreign references its part
 * of the graph holds; 0 or the first nonzero visit. */
int cv_wrapper_traverse(const CvWrapper *w, CvVisit visit, void *arg);
/* Unlink w: it is no longer ds's wrapper nor its inputs' parent. Hands over
 * the dataset reference (NULL when already detached) and the linked inputs
 * (*inputs, *n: the front end drops its holds, then frees the array). Each
 * step leaves the graph consistent, so the caller may run code that
 * collects between dropping them. */
CvDataset *cv_wrapper_detach(CvWrapper *w, CvWrapper ***inputs, int *n);
/* Frees the parents list; once no parent links w (w's object is gone). */
void cv_wrapper_free(CvWrapper *w);

#endif
