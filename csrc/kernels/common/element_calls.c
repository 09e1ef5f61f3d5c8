/* Element ids and predicate verdicts (see element_calls.h). */
#include "kernels/common/element_calls.h"

void cv_epochs_note_restored(atomic_uint_least64_t *epochs, uint64_t epoch)
{
    uint64_t seen = atomic_load(epochs);
    while (seen <= epoch && !atomic_compare_exchange_weak(epochs, &seen, epoch + 1))
        ;
}

CvStatus cv_predicate_verdict(const CvFunction *predicate, const CvElement *in,
                              const CvElementId *id, const char *stage, bool *verdict)
{
    CvElement result = {0};
    CvStatus s = predicate->call(predicate->ctx, in, id, &result);
    if (s)
        return s;
    const CvTensor *t = result.n == 1 ? &result.t[0] : NULL;
    if (!t || t->dtype != CV_BOOL || t->rank != 0)
        s = cv_error(CV_INVALID_ARGUMENT,
                     "%s: the predicate must return a scalar bool, but it returned "
                     "%u component(s), the first of dtype %s and rank %d.",
                     stage, result.n, result.n ? cv_dtype_name(result.t[0].dtype) : "-",
                     result.n ? result.t[0].rank : 0);
    else
        *verdict = *(const bool *)t->data;
    cv_element_clear(&result);
    return s;
}
