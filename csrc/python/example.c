/* Binding of the tf.train.Example parser (csrc/ops/example.c).
 *
 *   example_config(keys, ints, dims, defaults): the features, packed by
 *       conveyor/io/example.py: keys a tuple of str; ints 4 C ints a
 *       feature (kind a CvFeatureKind, dtype a CvDtype code, rank, the index
 *       of its default in defaults or -1); dims the shapes' int64 dims,
 *       feature after feature; defaults a list of arrays. Compiles a
 *       CvExampleConfig (immutable; shareable); the engine checks kinds,
 *       dtypes, shapes and defaults.
 *   parse_example(config, serialized, names): serialized bytes (one
 *       Example, as parse_single_example) or an object array of bytes;
 *       names None or an object array of bytes as long as serialized
 *       (conveyor/io/example.py checks both). The outputs in feature order
 *       (VarLen: indices, values, dense_shape), parsed without the GIL.
 */
#include "python/binding.h"
#include "ops/example.h"

static PyObject *example_config(PyObject *module, PyObject *args)
{
    CvModuleState *st = cv_get_state(module);
    PyObject *keys, *defaults, *result = NULL;
    Py_buffer ints, dims;
    if (!PyArg_ParseTuple(args, "O!y*y*O:example_config", &PyTuple_Type, &keys, &ints, &dims,
                          &defaults))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(keys), ndims = dims.len / (Py_ssize_t)sizeof(int64_t), at = 0;
    const int *v = ints.buf;
    CvFeatureSpec *specs = PyMem_Calloc(n ? (size_t)n : 1, sizeof(CvFeatureSpec));
    CvElement dflt = {0};
    CvExampleConfig *cfg = NULL;
    CvStatus s = !specs ? cv_error_nomem()
                 : ints.len != n * 4 * (Py_ssize_t)sizeof(int)
                     ? cv_error(CV_INTERNAL, "example_config: not 4 ints a feature")
                     : cv_element_from_sequence(st, defaults, &dflt);
    for (Py_ssize_t j = 0; !s && j < n; j++, v += 4) {
        Py_ssize_t key_len = 0;
        CvFeatureSpec *f = &specs[j];
        f->key = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(keys, j), &key_len);
        f->key_len = (size_t)key_len;
        f->kind = (CvFeatureKind)v[0];
        f->dtype = (CvDtype)v[1];
        f->rank = v[2];
        f->shape = (const int64_t *)dims.buf + at;
        f->default_value = v[3] >= 0 && v[3] < (int)dflt.n ? &dflt.t[v[3]] : NULL;
        if (!f->key || v[2] < 0 || (at += v[2]) > ndims) {
            PyErr_Clear(); /* a key that is no str: the status says so */
            s = cv_error(CV_INTERNAL, "example_config: feature %zd is not packed right", j);
        }
    }
    if (!s)
        s = cv_example_config_new(specs, (int)n, &cfg);
    result = s ? cv_raise_status(st, s) : cv_handle_new(CV_HANDLE_EXAMPLE_CONFIG, cfg);
    cv_element_clear(&dflt);
    PyMem_Free(specs);
    PyBuffer_Release(&ints);
    PyBuffer_Release(&dims);
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
    if (!s)
        CV_UNLOCKED(s = cv_parse_example_tensor(cfg, &data, names != Py_None ? &name_data : NULL,
                                                out.t));
    result = s ? cv_raise_status(st, s) : cv_element_to_tuple(st, &out, false);
    cv_tensor_clear(&data);
    cv_tensor_clear(&name_data);
    cv_element_clear(&out);
    return result;
}

PyMethodDef cv_example_functions[] = {
    {"example_config", example_config, METH_VARARGS,
     "example_config(keys, ints, dims, defaults) -> a compiled tf.train.Example feature "
     "configuration."},
    {"parse_example", example_parse, METH_VARARGS,
     "parse_example(config, serialized, names) -> tuple of arrays (feature order)."},
    {NULL, NULL, 0, NULL},
};
