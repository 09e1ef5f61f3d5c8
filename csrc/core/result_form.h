/* CvResultForm: the form a user function's results took the first time,
 * one numeric tensor or a plain tuple of them, by dtype, so that a front
 * end can take later results of the same form straight in and skip its
 * slower structure check (the binding: a Python map function's results,
 * pyfunc.c). Strings and unknown dtypes (CV_NUM_DTYPES) never qualify.
 *
 * Threads: learned once, on the first call, under the front end's lock
 * (the binding: the GIL); read-only after. */
#ifndef CV_RESULT_FORM_H
#define CV_RESULT_FORM_H

#include <stdbool.h>

#include "core/tensor.h"

#define CV_RESULT_FORM_MAX 64 /* the most components of a form */

typedef struct CvResultForm {
    int kind; /* CV_FORM_UNKNOWN until learned (CvResultFormKind) */
    int n;
    CvDtype dtypes[CV_RESULT_FORM_MAX];
} CvResultForm;

typedef enum CvResultFormKind {
    CV_FORM_UNKNOWN, /* no result seen yet */
    CV_FORM_SINGLE,  /* one tensor */
    CV_FORM_TUPLE,   /* a plain tuple of n tensors */
    CV_FORM_NONE     /* the first result had no fast form */
} CvResultFormKind;

/* Learn the form of the first result: kind CV_FORM_SINGLE or
 * CV_FORM_TUPLE with n dtypes (n < 0: neither, e.g. a list or a dict). */
void cv_result_form_learn(CvResultForm *f, CvResultFormKind kind, const CvDtype *dtypes, int n);
/* Whether a result of this kind and dtypes has the learned form. */
bool cv_result_form_matches(const CvResultForm *f, CvResultFormKind kind, const CvDtype *dtypes,
                            int n);

#endif
