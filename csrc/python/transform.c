/* Binding of the structural transformations: filter, take_while, scan,
 * unique, zip, concatenate, shard, unbatch, rebatch, padded_batch. Argument
 * checks and element specs live in Python (conveyor/data/dataset.py,
 * conveyor/data/ops/); these functions take normalized arguments. */
#include "python/binding.h"

#include "kernels/kernels.h"

typedef CvStatus (*CvPredicateKernel)(CvDataset *, CvFunction, CvDataset **);

/* filter / take_while(input, predicate, out_convert, name[, with_id]): the
 * predicate is taken as map's function is (cv_function_from_arg: a compiled
 * program or a Python callable), so whatever runs a map function runs a
 * predicate. */
static PyObject *predicate_dataset(PyObject *module, PyObject *args, PyObject *kwargs,
                                   const char *format, CvPredicateKernel make)
{
    PyObject *input, *fn, *out_convert, *name;
    int with_id = 0;
    static char *keywords[] = {"input", "predicate", "out_convert", "name", "with_id", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, format, keywords, &input, &fn, &out_convert,
                                     &name, &with_id))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvFunction f;
    CvDataset *ds = NULL;
    CvStatus s = cv_function_from_arg(module, fn, out_convert, name, with_id, &f);
    if (!s)
        s = make(in, f, &ds);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *transform_filter(PyObject *module, PyObject *args, PyObject *kwargs)
{
    return predicate_dataset(module, args, kwargs, "OOOU|p:filter", cv_filter_dataset);
}

static PyObject *transform_take_while(PyObject *module, PyObject *args, PyObject *kwargs)
{
    return predicate_dataset(module, args, kwargs, "OOOU|p:take_while", cv_take_while_dataset);
}

/* scan(input, initial_state, fn, out_convert, name[, with_id]):
 * initial_state is the list of the state's flat arrays; fn takes the state's
 * components then the element's and returns the new state's then the
 * output's. */
static PyObject *transform_scan(PyObject *module, PyObject *args, PyObject *kwargs)
{
    PyObject *input, *initial, *fn, *out_convert, *name;
    int with_id = 0;
    static char *keywords[] = {"input", "initial_state", "fn", "out_convert", "name", "with_id",
                              NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOU|p:scan", keywords, &input, &initial, &fn,
                                     &out_convert, &name, &with_id))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvElement state = {0};
    CvStatus s = cv_element_from_sequence(cv_get_state(module), initial, &state);
    if (s)
        return cv_wrap_dataset(module, s, NULL);
    CvFunction f;
    CvDataset *ds = NULL;
    s = cv_function_from_arg(module, fn, out_convert, name, with_id, &f);
    if (!s)
        s = cv_scan_dataset(in, &state, f, &ds);
    else
        cv_element_clear(&state);
    return cv_wrap_dataset(module, s, ds);
}

/* unique(input) */
static PyObject *transform_unique(PyObject *module, PyObject *input)
{
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_unique_dataset(in, &ds);
    return cv_wrap_dataset(module, s, ds);
}

typedef CvStatus (*CvMultiKernel)(CvDataset *const *, int, CvDataset **);

/* A list of engine datasets -> a dataset over all of them. */
static PyObject *multi(PyObject *module, PyObject *list, CvMultiKernel make)
{
    PyObject *seq = PySequence_Fast(list, "expected a list of engine Datasets");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > INT_MAX) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    CvDataset **inputs = PyMem_Calloc(n ? (size_t)n : 1, sizeof(CvDataset *));
    PyObject *result = NULL;
    if (!inputs) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (!(inputs[i] = cv_dataset_arg(module, PySequence_Fast_GET_ITEM(seq, i))))
            goto done;
    CvDataset *ds = NULL;
    CvStatus s = make(inputs, (int)n, &ds);
    result = cv_wrap_dataset(module, s, ds);
done:
    PyMem_Free(inputs);
    Py_DECREF(seq);
    return result;
}

static PyObject *transform_zip(PyObject *module, PyObject *list)
{
    return multi(module, list, cv_zip_dataset);
}

static PyObject *transform_concatenate(PyObject *module, PyObject *list)
{
    return multi(module, list, cv_concatenate_dataset);
}

static PyObject *transform_shard(PyObject *module, PyObject *args)
{
    PyObject *input;
    long long num_shards, index;
    if (!PyArg_ParseTuple(args, "OLL:shard", &input, &num_shards, &index))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_shard_dataset(in, num_shards, index, &ds);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *transform_unbatch(PyObject *module, PyObject *args)
{
    PyObject *input;
    long long batch_size;
    if (!PyArg_ParseTuple(args, "OL:unbatch", &input, &batch_size))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_unbatch_dataset(in, batch_size, &ds);
    return cv_wrap_dataset(module, s, ds);
}

/* rebatch(input, batch_sizes (list of int), drop_remainder, empty (list of
 * zero-row arrays, one per component)). */
static PyObject *transform_rebatch(PyObject *module, PyObject *args, PyObject *kwargs)
{
    PyObject *input, *sizes_obj, *empty_obj;
    int drop_remainder;
    static char *keywords[] = {"input", "batch_sizes", "drop_remainder", "empty_components", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOpO:rebatch", keywords, &input, &sizes_obj,
                                     &drop_remainder, &empty_obj))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    PyObject *sizes = in ? PySequence_Fast(sizes_obj, "batch sizes must be a list") : NULL;
    if (!sizes)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(sizes);
    int64_t *values = PyMem_Calloc(n ? (size_t)n : 1, sizeof(int64_t));
    PyObject *result = NULL;
    if (!values) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        values[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(sizes, i));
        if (values[i] == -1 && PyErr_Occurred())
            goto done;
    }
    CvModuleState *st = cv_get_state(module);
    CvElement empty;
    CvStatus s = cv_element_from_sequence(st, empty_obj, &empty);
    if (s) {
        result = cv_raise_status(st, s);
        goto done;
    }
    CvDataset *ds = NULL;
    s = cv_rebatch_dataset(in, values, n, drop_remainder, &empty, &ds);
    result = cv_wrap_dataset(module, s, ds);
done:
    PyMem_Free(values);
    Py_DECREF(sizes);
    return result;
}

/* padded_batch(input, batch_size, padded_shapes (list of int64 vectors),
 * padding_values (list of scalars), drop_remainder). */
static PyObject *transform_padded_batch(PyObject *module, PyObject *args, PyObject *kwargs)
{
    PyObject *input, *shapes_obj, *values_obj;
    long long batch_size;
    int drop_remainder;
    static char *keywords[] = {"input", "batch_size", "padded_shapes", "padding_values",
                               "drop_remainder", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OLOOp:padded_batch", keywords, &input,
                                     &batch_size, &shapes_obj, &values_obj, &drop_remainder))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvModuleState *st = cv_get_state(module);
    CvElement shapes = {0}, values = {0};
    CvStatus s = cv_element_from_sequence(st, shapes_obj, &shapes);
    if (!s)
        s = cv_element_from_sequence(st, values_obj, &values);
    if (s) {
        cv_element_clear(&shapes);
        return cv_raise_status(st, s);
    }
    CvDataset *ds = NULL;
    s = cv_padded_batch_dataset(in, batch_size, &shapes, &values, drop_remainder, &ds);
    return cv_wrap_dataset(module, s, ds);
}

PyMethodDef cv_transform_functions[] = {
    {"take_while", CV_METHOD_KEYWORDS(transform_take_while),
     "take_while(input, predicate, out_convert, name, with_id=False) -> Dataset"},
    {"scan", CV_METHOD_KEYWORDS(transform_scan),
     "scan(input, initial_state, fn, out_convert, name, with_id=False) -> Dataset"},
    {"unique", transform_unique, METH_O, "unique(input) -> Dataset"},
    {"filter", CV_METHOD_KEYWORDS(transform_filter),
     "filter(input, predicate, out_convert, name, with_id=False) -> Dataset; the predicate (as "
     "map's fn) returns a scalar bool"},
    {"zip", transform_zip, METH_O, "zip(list of Datasets) -> Dataset"},
    {"concatenate", transform_concatenate, METH_O, "concatenate(list of Datasets) -> Dataset"},
    {"shard", transform_shard, METH_VARARGS, "shard(input, num_shards, index) -> Dataset"},
    {"unbatch", transform_unbatch, METH_VARARGS, "unbatch(input, static_batch_size) -> Dataset"},
    {"rebatch", CV_METHOD_KEYWORDS(transform_rebatch),
     "rebatch(input, batch_sizes, drop_remainder, empty_components) -> Dataset"},
    {"padded_batch", CV_METHOD_KEYWORDS(transform_padded_batch),
     "padded_batch(input, batch_size, padded_shapes, padding_values, drop_remainder) -> Dataset"},
    {NULL, NULL, 0, NULL},
};
