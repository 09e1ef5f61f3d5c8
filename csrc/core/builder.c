/* The builder tables' helpers for front ends (core/builder.h). */
#include "core/builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cv_builder_num_args(const CvBuilder *b)
{
    int n = 0;
    while (n < CV_BUILDER_MAX_ARGS && b->args[n].kind != CV_ARG_END)
        n++;
    return n;
}

int cv_builder_arg_index(const CvBuilder *b, const char *keyword)
{
    for (int i = 0; i < cv_builder_num_args(b); i++)
        if (strcmp(b->args[i].keyword, keyword) == 0)
            return i;
    return -1;
}

void cv_build_args_release(const CvBuilder *b, CvBuildArg *a, const bool *taken)
{
    for (int i = 0; i < cv_builder_num_args(b); i++) {
        CvArgKind kind = b->args[i].kind;
        if (!taken[i])
            continue;
        if (kind == CV_ARG_ELEMENT)
            cv_element_clear(&a[i].element);
        else if ((kind == CV_ARG_FUNCTION || kind == CV_ARG_FUNCTION_OR_NONE) && a[i].fn.release)
            a[i].fn.release(a[i].fn.ctx);
        else if (kind == CV_ARG_DATASET_FUNCTION && a[i].dataset_fn.release)
            a[i].dataset_fn.release(a[i].dataset_fn.ctx);
        else if (kind == CV_ARG_SOURCE && a[i].source.release)
            a[i].source.release(a[i].source.ctx);
    }
}

void cv_builder_signature(const CvBuilder *b, char *buf, size_t size)
{
    int n = cv_builder_num_args(b);
    size_t at = (size_t)snprintf(buf, size, "%s(", b->name);
    for (int j = 0; j < n && at < size; j++)
        at += (size_t)snprintf(buf + at, size - at, "%s%s%s", j ? ", " : "",
                               j == b->required ? "[" : "", b->args[j].keyword);
    if (at < size)
        snprintf(buf + at, size - at, "%s) -> Dataset%s%s", b->required < n ? "]" : "",
                 *b->doc ? ": " : "", b->doc);
}

void *cv_build_arg_list(CvBuildArg *a, CvArgKind kind, size_t n)
{
    size_t size = kind == CV_ARG_DATASETS ? sizeof(CvDataset *)
                  : kind == CV_ARG_INTS   ? sizeof(int64_t)
                                          : sizeof(bool);
    void *v = n <= INT32_MAX ? calloc(n ? n : 1, size) : NULL;
    if (kind == CV_ARG_DATASETS)
        a->datasets.v = v, a->datasets.n = (int)n;
    else if (kind == CV_ARG_INTS)
        a->ints.v = v, a->ints.n = (int64_t)n;
    else
        a->bools.v = v, a->bools.n = (uint32_t)n;
    return v;
}
