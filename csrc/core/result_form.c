/* The learned form of a function's results (see result_form.h). */
#include "core/result_form.h"

#include <string.h>

static bool numeric(const CvDtype *dtypes, int n)
{
    for (int i = 0; i < n; i++)
        if (dtypes[i] == CV_STRING || dtypes[i] >= CV_NUM_DTYPES)
            return false;
    return true;
}

void cv_result_form_learn(CvResultForm *f, CvResultFormKind kind, const CvDtype *dtypes, int n)
{
    bool fast = (kind == CV_FORM_SINGLE || kind == CV_FORM_TUPLE) && n >= 0 &&
                n <= CV_RESULT_FORM_MAX && numeric(dtypes, n);
    f->kind = fast ? (int)kind : CV_FORM_NONE;
    f->n = fast ? n : 0;
    if (fast)
        memcpy(f->dtypes, dtypes, (size_t)n * sizeof(*dtypes));
}

bool cv_result_form_matches(const CvResultForm *f, CvResultFormKind kind, const CvDtype *dtypes,
                            int n)
{
    return (f->kind == CV_FORM_SINGLE || f->kind == CV_FORM_TUPLE) && (int)kind == f->kind &&
           n == f->n && memcmp(dtypes, f->dtypes, (size_t)n * sizeof(*dtypes)) == 0;
}
