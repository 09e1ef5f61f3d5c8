/* Binding of the tf.train.Example parser (csrc/ops/example.c).
 *
 *   example_config(specs) -> capsule
 *       specs: a sequence of (key: str, kind: int, dtype: int, shape: tuple
 *       of ints, default: array or None), kind a CvFeatureKind and dtype a
 *       CvDtype code. Compiles a CvExampleConfig (immutable; shareable).
 *   parse_example(config, serialized, names, single) -> list of arrays
 *       serialized: bytes (single=True) or a list of bytes; names: None or
 *       a list of bytes as long as serialized. Returns the outputs in
 *       feature order (VarLen: indices, values, dense_shape). Large batches
 *       are parsed with the GIL released.
 */
#include "python/binding.h"
#include "ops/example.h"

#define CONFIG_CAPSULE "conveyor._engine.ExampleConfig"

static void config_capsule_free(PyObject *cap)
{
    cv_example_config_free(PyCapsule_GetPointer(cap, CONFIG_CAPSULE));
}

CvExampleConfig *cv_example_config_arg(PyObject *obj)
{
    if (!PyCapsule_IsValid(obj, CONFIG_CAPSULE)) {
        PyErr_Format(PyExc_TypeError, "expected an Example configuration from "
                     "example_config(), got %s", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return PyCapsule_GetPointer(obj, CONFIG_CAPSULE);
}

static PyObject *example_config(PyObject *module, PyObject *arg)
{
    CvModuleState *st = cv_get_state(module);
    PyObject *seq = PySequence_Fast(arg, "example_config expects a sequence of feature specs");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    CvFeatureSpec *specs = PyMem_Calloc(n ? (size_t)n : 1, sizeof(CvFeatureSpec));
    int64_t(*shapes)[CV_MAX_RANK] = PyMem_Calloc(n ? (size_t)n : 1, sizeof(*shapes));
    CvTensor *defaults = PyMem_Calloc(n ? (size_t)n : 1, sizeof(CvTensor));
    PyObject *result = NULL;
    CvStatus s = CV_STATUS_OK;
    if (!specs || !shapes || !defaults) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *key, *shape, *dflt;
        int kind, dtype;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, j), "UiiOO;a feature spec is (key, "
                              "kind, dtype, shape, default)", &key, &kind, &dtype, &shape, &dflt))
            goto done;
        Py_ssize_t klen;
        specs[j].key = PyUnicode_AsUTF8AndSize(key, &klen);
        if (!specs[j].key)
            goto done;
        specs[j].key_len = (size_t)klen;
        specs[j].kind = (CvFeatureKind)kind;
        if (dtype < 0 || dtype >= CV_NUM_DTYPES) {
            PyErr_Format(PyExc_ValueError, "invalid dtype code %d", dtype);
            goto done;
        }
        specs[j].dtype = (CvDtype)dtype;
        PyObject *dims = PySequence_Fast(shape, "a feature shape must be a sequence of ints");
        if (!dims)
            goto done;
        Py_ssize_t rank = PySequence_Fast_GET_SIZE(dims);
        if (rank > CV_MAX_RANK) {
            Py_DECREF(dims);
            PyErr_Format(PyExc_ValueError, "feature shape of rank %zd exceeds conveyor's limit "
                         "of %d", rank, CV_MAX_RANK);
            goto done;
        }
        for (Py_ssize_t k = 0; k < rank; k++) {
            long long d = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(dims, k));
            if (d == -1 && PyErr_Occurred()) {
                Py_DECREF(dims);
                goto done;
            }
            shapes[j][k] = d;
        }
        Py_DECREF(dims);
        specs[j].rank = (int)rank;
        specs[j].shape = shapes[j];
        if (dflt != Py_None) {
            if ((s = cv_tensor_from_pyobject(st, dflt, &defaults[j])))
                goto done;
            specs[j].default_value = &defaults[j];
        }
    }
    CvExampleConfig *cfg;
    if ((s = cv_example_config_new(specs, (int)n, &cfg)))
        goto done;
    result = PyCapsule_New(cfg, CONFIG_CAPSULE, config_capsule_free);
    if (!result)
        cv_example_config_free(cfg);
done:
    if (s)
        result = cv_raise_status(st, s);
    if (defaults)
        for (Py_ssize_t j = 0; j < n; j++)
            if (defaults[j].buf)
                cv_tensor_clear(&defaults[j]);
    PyMem_Free(specs);
    PyMem_Free(shapes);
    PyMem_Free(defaults);
    Py_DECREF(seq);
    return result;
}

/* Views of a list of bytes objects (kept alive by the list). */
static int bytes_views(PyObject *seq, CvBytesView *views, const char *what, size_t *total)
{
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyBytes_Check(b)) {
            PyErr_Format(PyExc_TypeError, "%s[%zd] is a %s; expected bytes", what, i,
                         Py_TYPE(b)->tp_name);
            return -1;
        }
        views[i].data = PyBytes_AS_STRING(b);
        views[i].size = (size_t)PyBytes_GET_SIZE(b);
        *total += views[i].size;
    }
    return 0;
}

static PyObject *example_parse(PyObject *module, PyObject *args)
{
    CvModuleState *st = cv_get_state(module);
    PyObject *config, *serialized, *names;
    int single;
    if (!PyArg_ParseTuple(args, "OOOp:parse_example", &config, &serialized, &names, &single))
        return NULL;
    CvExampleConfig *cfg = cv_example_config_arg(config);
    if (!cfg)
        return NULL;
    PyObject *seq = NULL, *name_seq = NULL, *result = NULL;
    CvBytesView *views = NULL, *name_views = NULL;
    CvTensor *outs = NULL;
    int nout = cv_example_config_num_outputs(cfg);
    Py_ssize_t n;
    size_t total = 0;
    CvBytesView one;
    if (single) {
        if (!PyBytes_Check(serialized)) {
            PyErr_Format(PyExc_TypeError, "serialized must be bytes, got %s",
                         Py_TYPE(serialized)->tp_name);
            return NULL;
        }
        one.data = PyBytes_AS_STRING(serialized);
        one.size = (size_t)PyBytes_GET_SIZE(serialized);
        total = one.size;
        n = 1;
    } else {
        seq = PySequence_Fast(serialized, "serialized must be a list of bytes");
        if (!seq)
            return NULL;
        n = PySequence_Fast_GET_SIZE(seq);
        views = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(CvBytesView));
        if (!views) {
            PyErr_NoMemory();
            goto done;
        }
        if (bytes_views(seq, views, "serialized", &total) < 0)
            goto done;
        if (names != Py_None) {
            size_t ignored = 0;
            name_seq = PySequence_Fast(names, "example_names must be a list of bytes");
            if (!name_seq)
                goto done;
            if (PySequence_Fast_GET_SIZE(name_seq) != n) {
                PyErr_Format(PyExc_ValueError, "example_names has %zd names for %zd examples",
                             PySequence_Fast_GET_SIZE(name_seq), n);
                goto done;
            }
            name_views = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(CvBytesView));
            if (!name_views) {
                PyErr_NoMemory();
                goto done;
            }
            if (bytes_views(name_seq, name_views, "example_names", &ignored) < 0)
                goto done;
        }
    }
    outs = PyMem_Calloc(nout ? (size_t)nout : 1, sizeof(CvTensor));
    if (!outs) {
        PyErr_NoMemory();
        goto done;
    }
    CvStatus s;
    const CvBytesView *in = single ? &one : views;
    if (total >= (64u << 10) || n >= 64) {
        Py_BEGIN_ALLOW_THREADS
        s = cv_parse_examples(cfg, in, n, name_views, single, outs);
        Py_END_ALLOW_THREADS
    } else {
        s = cv_parse_examples(cfg, in, n, name_views, single, outs);
    }
    if (s) {
        cv_raise_status(st, s);
        goto done;
    }
    result = PyList_New(nout);
    for (int k = 0; result && k < nout; k++) {
        PyObject *v = cv_tensor_to_python(st, &outs[k]);
        if (!v)
            Py_CLEAR(result);
        else
            PyList_SET_ITEM(result, k, v);
    }
    for (int k = 0; k < nout; k++)
        cv_tensor_clear(&outs[k]);
done:
    PyMem_Free(outs);
    PyMem_Free(views);
    PyMem_Free(name_views);
    Py_XDECREF(seq);
    Py_XDECREF(name_seq);
    return result;
}

PyMethodDef cv_example_functions[] = {
    {"example_config", example_config, METH_O,
     "example_config(specs) -> a compiled tf.train.Example feature configuration."},
    {"parse_example", example_parse, METH_VARARGS,
     "parse_example(config, serialized, names, single) -> list of arrays (feature order)."},
    {NULL, NULL, 0, NULL},
};
