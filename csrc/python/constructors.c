/* Module functions that build datasets: one generic function walks a
 * builder's arguments (core/builder.h; the tables: kernels/common/builders.c and
 * device/prefetch_to_device.c), converts each Python value by its kind and
 * calls the builder. Arguments arrive checked by conveyor/data/ (no second
 * check here); cache keeps its own functions (cache.c). */
#include "python/binding.h"

#include "device/prefetch_to_device.h"
#include "kernels/common/builders.h"

/* The builders, in the order of the rows of cv_constructor_functions. */
static const CvBuilder *builder_at(int index)
{
    for (int i = 0; cv_kernel_builders[i].name; i++)
        if (i == index)
            return &cv_kernel_builders[i];
    return &cv_prefetch_to_device_builder;
}

/* One call's arguments: the Python values (borrowed; NULL where an optional
 * one was left out), what they became, and what the call must free. */
typedef struct Call {
    const CvBuilder *b;
    int n;
    PyObject *given[CV_BUILDER_MAX_ARGS];
    CvBuildArg a[CV_BUILDER_MAX_ARGS];
    bool taken[CV_BUILDER_MAX_ARGS]; /* converted, for build to take */
    void *list[CV_BUILDER_MAX_ARGS]; /* malloc'd: DATASETS, INTS, BOOLS */
    CvTensor tensor[CV_BUILDER_MAX_ARGS];
    CvMemory *memory;
} Call;

/* The value given for `keyword` (borrowed), or NULL. */
static PyObject *given_for(const Call *c, const char *keyword)
{
    int i = cv_builder_arg_index(c->b, keyword);
    return i < 0 ? NULL : c->given[i];
}

/* A list of datasets, int64s or bools (core/builder.h's array). */
static int list_arg(PyObject *module, Call *c, int i, CvArgKind kind)
{
    PyObject *seq = PySequence_Fast(c->given[i], "expected a list");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    char *v = c->list[i] = cv_build_arg_list(&c->a[i], kind, (size_t)n);
    int rc = v ? 0 : -1;
    if (!v)
        PyErr_NoMemory();
    for (Py_ssize_t k = 0; rc == 0 && k < n; k++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, k);
        if (kind == CV_ARG_DATASETS) {
            rc = (((CvDataset **)v)[k] = cv_dataset_arg(module, item)) ? 0 : -1;
        } else if (kind == CV_ARG_INTS) {
            ((int64_t *)v)[k] = PyLong_AsLongLong(item);
            rc = PyErr_Occurred() ? -1 : 0;
        } else {
            int truth = PyObject_IsTrue(item);
            ((bool *)v)[k] = truth > 0;
            rc = truth < 0 ? -1 : 0;
        }
    }
    Py_DECREF(seq);
    return rc;
}

/* Convert argument i by its kind; -1 with an exception set. A function
 * takes the argument after it as its converter and the call's "name" and
 * "with_id". */
static int convert_arg(PyObject *module, Call *c, int i)
{
    CvModuleState *st = cv_get_state(module);
    PyObject *o = c->given[i], *name = given_for(c, "name"), *with_id = given_for(c, "with_id");
    CvBuildArg *a = &c->a[i];
    CvArgKind kind = c->b->args[i].kind;
    CvStatus s = CV_STATUS_OK;
    int rc = 0, truth;
    if (!o || (o == Py_None && (kind == CV_ARG_DATASET_OR_NONE || kind == CV_ARG_TENSOR_OR_NONE ||
                                kind == CV_ARG_FUNCTION_OR_NONE)))
        return 0; /* left out or none: zero */
    switch (kind) {
    case CV_ARG_DATASET:
    case CV_ARG_DATASET_OR_NONE:
        rc = (a->dataset = cv_dataset_arg(module, o)) ? 0 : -1;
        break;
    case CV_ARG_INT:
        rc = (a->i = PyLong_AsLongLong(o)) == -1 && PyErr_Occurred() ? -1 : 0;
        break;
    case CV_ARG_BOOL:
        truth = PyObject_IsTrue(o);
        a->b = truth > 0;
        rc = truth < 0 ? -1 : 0;
        break;
    case CV_ARG_DATASETS:
    case CV_ARG_INTS:
    case CV_ARG_BOOLS:
        rc = list_arg(module, c, i, kind);
        break;
    case CV_ARG_MEMORY:
        rc = cv_memory_arg(o, &c->memory) ? 0 : -1;
        break;
    case CV_ARG_TENSOR_OR_NONE: /* the call's: cleared after build */
        if (!(s = cv_tensor_from_pyobject(st, o, &c->tensor[i])))
            a->tensor = &c->tensor[i];
        break;
    case CV_ARG_ELEMENT:
        if (!(s = cv_element_from_sequence(st, o, &a->element)))
            c->taken[i] = true;
        break;
    case CV_ARG_FUNCTION:
    case CV_ARG_FUNCTION_OR_NONE:
        if ((truth = with_id ? PyObject_IsTrue(with_id) : 0) < 0)
            rc = -1;
        else if (!(s = cv_function_from_arg(module, o, c->given[i + 1], name, truth, &a->fn)))
            c->taken[i] = true;
        break;
    case CV_ARG_DATASET_FUNCTION:
        if (!(s = cv_dataset_function_from_python(module, o, name, &a->dataset_fn)))
            c->taken[i] = true;
        break;
    case CV_ARG_SOURCE:
        if (!(s = cv_source_from_python(module, o, name, &a->source)))
            c->taken[i] = true;
        break;
    default: /* CV_ARG_AUX: read with another argument */
        break;
    }
    if (s) {
        cv_raise_status(st, s);
        rc = -1;
    }
    return rc;
}

/* Free what the call made; what build did not take (it failed before). */
static void call_clear(Call *c)
{
    for (int i = 0; i < c->n; i++) {
        free(c->list[i]);
        cv_tensor_clear(&c->tensor[i]);
    }
    cv_build_args_release(c->b, c->a, c->taken);
}

/* Every row's function: the row is the builder's index (cv_row_of). */
static PyObject *construct(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *module;
    Call c;
    memset(&c, 0, sizeof(c));
    c.b = builder_at(cv_row_of(self, &module));
    char *keywords[CV_BUILDER_MAX_ARGS + 1] = {0}, format[CV_BUILDER_MAX_ARGS + 80];
    int k = 0;
    bool buffering = false;
    c.n = cv_builder_num_args(c.b);
    for (int i = 0; i < c.n; i++) {
        if (i == c.b->required)
            format[k++] = '|';
        format[k++] = 'O';
        keywords[i] = (char *)c.b->args[i].keyword;
        buffering |= c.b->args[i].kind == CV_ARG_MEMORY;
    }
    snprintf(format + k, sizeof(format) - (size_t)k, ":%s", c.b->name);
    PyObject **g = c.given;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, format, keywords, &g[0], &g[1], &g[2], &g[3],
                                     &g[4], &g[5], &g[6], &g[7], &g[8], &g[9], &g[10]))
        return NULL;
    PyObject *result = NULL;
    int rc = 0;
    for (int i = 0; rc == 0 && i < c.n; i++)
        rc = convert_arg(module, &c, i);
    if (rc == 0) {
        CvDataset *ds = NULL;
        CvStatus s = c.b->build(c.a, &ds);
        memset(c.taken, 0, sizeof(c.taken)); /* build took them, also when it failed */
        if (!s && buffering) /* a stage that buffers charges its budget (NULL: the default) */
            cv_dataset_set_memory(ds, c.memory);
        result = cv_wrap_dataset(module, s, ds);
    }
    call_clear(&c);
    return result;
}

#define MAX_CONSTRUCTORS 64

PyMethodDef cv_constructor_functions[MAX_CONSTRUCTORS + 1];
static char docs[MAX_CONSTRUCTORS][320];

int cv_constructors_init(void)
{
    int n = 0;
    while (cv_kernel_builders[n].name)
        n++;
    if (n + 1 > MAX_CONSTRUCTORS) {
        PyErr_SetString(PyExc_SystemError, "conveyor: more dataset builders than MAX_CONSTRUCTORS");
        return -1;
    }
    for (int i = 0; i <= n; i++) {
        cv_builder_signature(builder_at(i), docs[i], sizeof(docs[i]));
        cv_constructor_functions[i] =
            (PyMethodDef){builder_at(i)->name, CV_METHOD_KEYWORDS(construct), docs[i]};
    }
    cv_constructor_functions[n + 1] = (PyMethodDef){NULL, NULL, 0, NULL};
    return 0;
}
