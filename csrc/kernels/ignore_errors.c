/* ignore_errors(log_warning): drop the elements whose production failed, as
 * tf.data's IgnoreErrorsDataset does, and go on with the next. A cancelled or
 * interrupted next() is not an element's error and is passed through. */
#include <stdio.h>
#include <stdlib.h>

#include "kernels/kernels.h"

typedef struct {
    CvUnaryIterator base;
} IgnoreErrorsIterator;

static bool log_warning(const CvDataset *ds)
{
    return *(const bool *)ds->params;
}

static void ignore_errors_free(CvDataset *ds)
{
    free(ds->params);
}

static int64_t ignore_errors_cardinality(const CvDataset *ds)
{
    int64_t n = cv_dataset_cardinality(ds->inputs[0]);
    return n == CV_INFINITE_CARDINALITY ? n : CV_UNKNOWN_CARDINALITY;
}

static CvStatus ignore_errors_make_iterator(const CvDataset *ds, CvIterator **out)
{
    return cv_unary_iterator_new(ds, sizeof(IgnoreErrorsIterator), out);
}

static CvStatus ignore_errors_next(CvIterator *base, CvElement *out, bool *end)
{
    IgnoreErrorsIterator *it = (IgnoreErrorsIterator *)base;
    for (;;) {
        CvStatus s = cv_iterator_next(it->base.input, out, end);
        if (!s || s->code == CV_CANCELLED || s->code == CV_INTERRUPTED)
            return s;
        if (log_warning(base->dataset))
            fprintf(stderr, "conveyor: ignore_errors dropped an element: %s: %s\n",
                    cv_code_name(s->code), s->message);
        cv_status_free(s);
    }
}

const CvKernel cv_kernel_ignore_errors = {
    .name = "IgnoreErrors",
    .make_iterator = ignore_errors_make_iterator,
    .cardinality = ignore_errors_cardinality,
    .free_dataset = ignore_errors_free,
    .next = ignore_errors_next,
    .cancel = cv_unary_iterator_cancel,
    .destroy = cv_unary_iterator_destroy,
    /* The input's position alone: a dropped error is behind it. */
    .save = cv_unary_iterator_save,
    .restore = cv_unary_iterator_restore,
};

CvStatus cv_ignore_errors_dataset(CvDataset *input, bool log, CvDataset **out)
{
    bool *p = malloc(sizeof(*p));
    if (!p)
        return cv_error_nomem();
    *p = log;
    return cv_dataset_new(&cv_kernel_ignore_errors, &input, 1, p, false, out);
}
