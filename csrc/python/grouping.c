/* Binding of the kernels that pick among datasets and group elements into
 * windows: choose_from_datasets, Dataset.random, sample_from_datasets'
 * choices, window, the window datasets, group_by_window. Argument checks
 * and structure live in Python (conveyor/data/ops/window_op.py,
 * directed_interleave_op.py). */
#include "python/binding.h"

#include "kernels/kernels.h"

/* A sequence of bools -> a malloc'd array (NULL with an exception set). */
static bool *bool_array(PyObject *seq, uint32_t *n)
{
    PyObject *fast = PySequence_Fast(seq, "expected a sequence of bools");
    if (!fast)
        return NULL;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
    bool *out = len <= (Py_ssize_t)UINT32_MAX ? PyMem_RawMalloc((size_t)(len ? len : 1)) : NULL;
    if (!out) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        int v = PyObject_IsTrue(PySequence_Fast_GET_ITEM(fast, i));
        if (v < 0) {
            Py_DECREF(fast);
            PyMem_RawFree(out);
            return NULL;
        }
        out[i] = v;
    }
    Py_DECREF(fast);
    *n = (uint32_t)len;
    return out;
}

static PyObject *grouping_choose(PyObject *module, PyObject *args)
{
    PyObject *selector, *data;
    int stop;
    if (!PyArg_ParseTuple(args, "OO!p:choose", &selector, &PyList_Type, &data, &stop))
        return NULL;
    CvDataset *sel = cv_dataset_arg(module, selector);
    if (!sel)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(data);
    if (n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many datasets");
        return NULL;
    }
    CvDataset **inputs = PyMem_RawMalloc((size_t)(n ? n : 1) * sizeof(CvDataset *));
    if (!inputs)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!(inputs[i] = cv_dataset_arg(module, PyList_GET_ITEM(data, i)))) {
            PyMem_RawFree(inputs);
            return NULL;
        }
    }
    CvDataset *ds = NULL;
    CvStatus s = cv_choose_dataset(sel, inputs, (int)n, stop, &ds);
    PyMem_RawFree(inputs);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *grouping_random(PyObject *module, PyObject *args)
{
    long long seed, seed2;
    int rerandomize;
    if (!PyArg_ParseTuple(args, "LLp:random", &seed, &seed2, &rerandomize))
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_random_dataset(seed, seed2, rerandomize, &ds);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *grouping_sample_choice(PyObject *module, PyObject *args)
{
    PyObject *random, *weights_dataset, *weights;
    if (!PyArg_ParseTuple(args, "OOO:sample_choice", &random, &weights_dataset, &weights))
        return NULL;
    CvDataset *rnd = cv_dataset_arg(module, random);
    CvDataset *wds = weights_dataset == Py_None ? NULL : cv_dataset_arg(module, weights_dataset);
    if (!rnd || (weights_dataset != Py_None && !wds))
        return NULL;
    CvModuleState *st = cv_get_state(module);
    CvTensor w = {0};
    CvStatus s = CV_STATUS_OK;
    if (weights != Py_None && (s = cv_tensor_from_pyobject(st, weights, &w)))
        return cv_raise_status(st, s);
    CvDataset *ds = NULL;
    s = cv_sample_choice_dataset(rnd, wds, weights == Py_None ? NULL : &w, &ds);
    cv_tensor_clear(&w);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *grouping_window(PyObject *module, PyObject *args, PyObject *kwargs)
{
    PyObject *input, *ragged_seq;
    long long size, shift, stride;
    int drop_remainder;
    static char *keywords[] = {"input", "size", "shift", "stride", "drop_remainder", "ragged",
                              NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OLLLpO:window", keywords, &input, &size, &shift,
                                     &stride, &drop_remainder, &ragged_seq))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    uint32_t ncomp = 0;
    bool *ragged = in ? bool_array(ragged_seq, &ncomp) : NULL;
    if (!ragged)
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_window_dataset(in, size, shift, stride, drop_remainder, ragged, ncomp, &ds);
    PyMem_RawFree(ragged);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *grouping_window_source(PyObject *module, PyObject *args)
{
    PyObject *tensors, *ragged_seq;
    if (!PyArg_ParseTuple(args, "OO:window_source", &tensors, &ragged_seq))
        return NULL;
    uint32_t ncomp = 0;
    bool *ragged = bool_array(ragged_seq, &ncomp);
    if (!ragged)
        return NULL;
    CvModuleState *st = cv_get_state(module);
    CvElement packed;
    CvStatus s = cv_element_from_sequence(st, tensors, &packed);
    CvDataset *ds = NULL;
    if (!s)
        s = cv_window_source_dataset(&packed, ragged, ncomp, &ds);
    PyMem_RawFree(ragged);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *grouping_group_by_window(PyObject *module, PyObject *args, PyObject *kwargs)
{
    PyObject *input, *key_fn, *key_convert, *size_fn, *size_convert, *ragged_seq, *name;
    long long window_size;
    static char *keywords[] = {"input", "key_fn", "key_convert", "size_fn", "size_convert",
                               "window_size", "ragged", "name", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOLOU:group_by_window", keywords, &input,
                                     &key_fn, &key_convert, &size_fn, &size_convert, &window_size,
                                     &ragged_seq, &name))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    uint32_t ncomp = 0;
    bool *ragged = in ? bool_array(ragged_seq, &ncomp) : NULL;
    if (!ragged)
        return NULL;
    CvFunction key = {0}, size = {0};
    CvDataset *ds = NULL;
    CvStatus s = cv_function_from_python(module, key_fn, key_convert, name, 0, &key);
    if (!s && size_fn != Py_None)
        s = cv_function_from_python(module, size_fn, size_convert, name, 0, &size);
    if (!s) {
        s = cv_group_by_window_dataset(in, key, size, window_size, ragged, ncomp, &ds);
    } else if (key.release) {
        key.release(key.ctx);
    }
    PyMem_RawFree(ragged);
    return cv_wrap_dataset(module, s, ds);
}

PyMethodDef cv_grouping_functions[] = {
    {"choose", grouping_choose, METH_VARARGS,
     "choose(selector, [datasets], stop_on_empty_dataset) -> Dataset"},
    {"random", grouping_random, METH_VARARGS, "random(seed, seed2, rerandomize) -> Dataset"},
    {"sample_choice", grouping_sample_choice, METH_VARARGS,
     "sample_choice(random, weights_dataset or None, weights array or None) -> Dataset"},
    {"window", CV_METHOD_KEYWORDS(grouping_window),
     "window(input, size, shift, stride, drop_remainder, ragged) -> Dataset of packed windows"},
    {"window_source", grouping_window_source, METH_VARARGS,
     "window_source([packed tensors], ragged) -> Dataset of the window's elements"},
    {"group_by_window", CV_METHOD_KEYWORDS(grouping_group_by_window),
     "group_by_window(input, key_fn, key_convert, size_fn or None, size_convert, window_size, "
     "ragged, name) -> Dataset of (key, packed window)"},
    {NULL, NULL, 0, NULL},
};
