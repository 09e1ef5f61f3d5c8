/* Binding of the tf.train.Example parser (csrc/ops/example.c).
 *
 *   example_config(specs) -> capsule
 *       specs: a sequence of (key: str, kind: int, dtype: int, shape: int64
 *       array, default: array or None), kind a CvFeatureKind and dtype a
 *       CvDtype code. Compiles a CvExampleConfig (immutable; shareable);
 *       the engine checks kinds, dtypes, shapes and defaults.
 *   parse_example(config, serialized, names) -> tuple of arrays
 *       serialized: bytes (one Example, as parse_single_example) or an
 *       object array of bytes; names: None or an object array of bytes as
 *       long as serialized (conveyor/io/example.py checks both). Returns
 *       the outputs in feature order (VarLen: indices, values, dense_shape),
 *       parsed with the GIL released.
 */
#include "python/binding.h"
#include "ops/example.h"

/* The tensors of spec j: its shape (an int64 vector) and default into t[0]
 * and t[1]. */
static CvStatus spec_tensors(CvModuleState *st, PyObject *shape, PyObject *dflt,
                             CvFeatureSpec *spec, CvTensor *t)
{
    CvStatus s = cv_tensor_from_pyobject(st, shape, &t[0]);
    if (!s && t[0].dtype != CV_INT64)
        s = cv_error(CV_INVALID_ARGUMENT, "feature %s: a shape is an int64 vector", spec->key);
    spec->rank = s ? 0 : (int)cv_tensor_num_elements(&t[0]);
    spec->shape = s ? NULL : (const int64_t *)t[0].data;
    if (!s && dflt != Py_None && !(s = cv_tensor_from_pyobject(st, dflt, &t[1])))
        spec->default_value = &t[1];
    return s;
}

static PyObject *example_config(PyObject *module, PyObject *arg)
{
    CvModuleState *st = cv_get_state(module);
    PyObject *seq = PySequence_Fast(arg, "example_config expects a sequence of feature specs");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    CvFeatureSpec *specs = PyMem_Calloc(n ? (size_t)n : 1, sizeof(CvFeatureSpec));
    CvTensor *tensors = PyMem_Calloc(n ? 2 * (size_t)n : 2, sizeof(CvTensor)); /* shape, default */
    CvExampleConfig *cfg = NULL;
    PyObject *result = NULL, *shape, *dflt;
    CvStatus s = specs && tensors ? CV_STATUS_OK : cv_error_nomem();
    int parsed = 1, kind, dtype;
    for (Py_ssize_t j = 0; !s && parsed && j < n; j++) {
        Py_ssize_t key_len;
        parsed = PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, j), "s#iiOO;a feature spec is "
                                  "(key, kind, dtype, shape, default)", &specs[j].key, &key_len,
                                  &kind, &dtype, &shape, &dflt);
        specs[j].key_len = (size_t)key_len;
        specs[j].kind = (CvFeatureKind)kind;
        specs[j].dtype = (CvDtype)dtype;
        if (parsed)
            s = spec_tensors(st, shape, dflt, &specs[j], &tensors[2 * j]);
    }
    if (!s && parsed)
        s = cv_example_config_new(specs, (int)n, &cfg);
    if (s)
        cv_raise_status(st, s);
    else if (parsed)
        result = cv_handle_new(CV_HANDLE_EXAMPLE_CONFIG, cfg);
    for (Py_ssize_t j = 0; tensors && j < 2 * n; j++)
        cv_tensor_clear(&tensors[j]);
    PyMem_Free(specs);
    PyMem_Free(tensors);
    Py_DECREF(seq);
    return result;
}

static PyObject *example_parse(PyObject *module, PyObject *args)
{
    CvModuleState *st = cv_get_state(module);
    PyObject *config, *serialized, *names, *result = NULL;
    if (!PyArg_ParseTuple(args, "OOO:parse_example", &config, &serialized, &names))
        return NULL;
    CvExampleConfig *cfg = cv_handle_arg(config, CV_HANDLE_EXAMPLE_CONFIG);
    if (!cfg)
        return NULL;
    CvTensor data = {0}, name_data = {0};
    CvElement out = {0};
    CvStatus s = cv_tensor_from_pyobject(st, serialized, &data);
    if (!s && names != Py_None)
        s = cv_tensor_from_pyobject(st, names, &name_data);
    if (!s)
        s = cv_element_init(&out, (uint32_t)cv_example_config_num_outputs(cfg));
    if (!s) {
        Py_BEGIN_ALLOW_THREADS
        s = cv_parse_example_tensor(cfg, &data, names != Py_None ? &name_data : NULL, out.t);
        Py_END_ALLOW_THREADS
    }
    result = s ? cv_raise_status(st, s) : cv_element_to_tuple(st, &out, false);
    cv_tensor_clear(&data);
    cv_tensor_clear(&name_data);
    cv_element_clear(&out);
    return result;
}

PyMethodDef cv_example_functions[] = {
    {"example_config", example_config, METH_O,
     "example_config(specs) -> a compiled tf.train.Example feature configuration."},
    {"parse_example", example_parse, METH_VARARGS,
     "parse_example(config, serialized, names) -> tuple of arrays (feature order)."},
    {NULL, NULL, 0, NULL},
};
