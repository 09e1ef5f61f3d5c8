/* Dataset builders: one const table entry per dataset constructor (its
 * name, its arguments' keywords and kinds, and the function that builds
 * the node), in the style of SQLite's method tables. The engine layers own
 * the tables (kernels/common/builders.c, device/prefetch_to_device.c); a front end
 * (the binding: csrc/python/constructors.c) walks an entry's arguments once,
 * converts each by its kind and calls build. The front end has checked the
 * values (conveyor/data/): build only forwards them to the kernel.
 *
 * Ownership: build takes the arguments of the kinds ELEMENT, FUNCTION,
 * FUNCTION_OR_NONE, DATASET_FUNCTION and SOURCE, also when it fails; the
 * others (datasets, lists, a tensor) stay the caller's and are only read.
 */
#ifndef CV_CORE_BUILDER_H
#define CV_CORE_BUILDER_H

#include "core/dataset.h"

typedef enum CvArgKind {
    CV_ARG_END = 0,          /* ends the argument list */
    CV_ARG_DATASET,          /* .dataset (borrowed) */
    CV_ARG_DATASET_OR_NONE,  /* .dataset, NULL for none */
    CV_ARG_DATASETS,         /* .datasets: a list (borrowed) */
    CV_ARG_INT,              /* .i */
    CV_ARG_BOOL,             /* .b */
    CV_ARG_INTS,             /* .ints: a list of int64 */
    CV_ARG_BOOLS,            /* .bools: a list of bools */
    CV_ARG_ELEMENT,          /* .element: a list of tensors (taken) */
    CV_ARG_TENSOR_OR_NONE,   /* .tensor, NULL for none (borrowed) */
    CV_ARG_FUNCTION,         /* .fn: an element function (taken); the next argument is its
                              * front end's converter, "name" and "with_id" its name and form */
    CV_ARG_FUNCTION_OR_NONE, /* .fn, zeroed for none */
    CV_ARG_DATASET_FUNCTION, /* .dataset_fn: element -> dataset (taken); named by "name" */
    CV_ARG_SOURCE,           /* .source (taken); named by "name" */
    CV_ARG_AUX,              /* read by the front end with another argument (a converter, a name) */
    CV_ARG_MEMORY,           /* the RAM budget the new dataset charges (front end's) */
} CvArgKind;

/* One converted argument; the member is named by the kind. */
typedef union CvBuildArg {
    int64_t i;
    bool b;
    CvDataset *dataset;
    struct {
        CvDataset *const *v;
        int n;
    } datasets;
    struct {
        const int64_t *v;
        int64_t n;
    } ints;
    struct {
        const bool *v;
        uint32_t n;
    } bools;
    CvElement element;
    const CvTensor *tensor;
    CvFunction fn;
    CvDatasetFunction dataset_fn;
    CvSource source;
} CvBuildArg;

#define CV_BUILDER_MAX_ARGS 11

typedef struct CvBuilderArg {
    const char *keyword;
    CvArgKind kind;
} CvBuilderArg;

typedef struct CvBuilder {
    const char *name;
    CvBuilderArg args[CV_BUILDER_MAX_ARGS]; /* ends at the first CV_ARG_END */
    int required;                           /* the first `required` must be given; the rest
                                             * default to zero (false, none) */
    CvStatus (*build)(CvBuildArg *args, CvDataset **out);
    const char *doc; /* what it makes, after the call's signature */
} CvBuilder;

/* For front ends: the number of b's arguments; the index of the one named
 * `keyword` (-1: none); b's signature and doc as a docstring ("name(a, b[,
 * c]) -> Dataset: doc", cut to size). */
int cv_builder_num_args(const CvBuilder *b);
int cv_builder_arg_index(const CvBuilder *b, const char *keyword);
void cv_builder_signature(const CvBuilder *b, char *buf, size_t size);
/* For front ends: the zeroed array of a list argument of n items (kind
 * CV_ARG_DATASETS, CV_ARG_INTS or CV_ARG_BOOLS), set into *a; the caller
 * fills it and frees it with free() after build. NULL: out of memory. */
void *cv_build_arg_list(CvBuildArg *a, CvArgKind kind, size_t n);
/* Release the arguments of the taken kinds that taken[i] marks: what a
 * front end converted when it fails before build took them. */
void cv_build_args_release(const CvBuilder *b, CvBuildArg *a, const bool *taken);

#endif
