/* conveyor._engine: module init only (multi-phase, per-module state). The
 * types and functions live in the other binding files (see binding.h for
 * the map); this file assembles them and owns the state's lifetime. No
 * other file includes or calls into this one.
 */
#define CV_IMPORT_ARRAY_HERE
#include "python/binding.h"

#include "io/fs.h"

extern const CvFileSystem cv_fs_fsspec; /* fs_fsspec.c */

/* set_eager_type(cls), set_iterator_type(cls), set_device_array_type(cls):
 * the Python classes the engine makes, kept in the module state (a new
 * reference): an ndarray subclass, or one of our types' with __slots__ = (). */
enum { EAGER, ITERATOR, DEVICE_ARRAY };

static PyObject *module_set_class(PyObject *self, PyObject *type)
{
    PyObject *module;
    int which = cv_row_of(self, &module);
    CvModuleState *st = cv_get_state(module);
    PyTypeObject *base = which == EAGER      ? &PyArray_Type
                         : which == ITERATOR ? st->iterator_type
                                             : st->device_array_type;
    PyTypeObject **slot = which == EAGER      ? &st->eager_type
                          : which == ITERATOR ? &st->iterator_class
                                              : &st->device_array_class;
    if (!PyType_Check(type) || !PyType_IsSubtype((PyTypeObject *)type, base) ||
        (which != EAGER && ((PyTypeObject *)type)->tp_basicsize != base->tp_basicsize))
        return PyErr_Format(PyExc_TypeError, "expected a subclass of %s%s", base->tp_name,
                            which == EAGER ? "" : " with __slots__ = ()");
    Py_XSETREF(*slot, (PyTypeObject *)Py_NewRef(type));
    if (which == DEVICE_ARRAY && PyModule_AddObjectRef(module, "DeviceArray", type) < 0)
        return NULL; /* the class is conveyor.device.DeviceArray and _engine.DeviceArray */
    Py_RETURN_NONE;
}

static PyMethodDef module_functions[] = {
    [EAGER] = {"set_eager_type", module_set_class, METH_O,
     "set_eager_type(cls): the ndarray subclass an iterator with eager=True yields "
     "(conveyor.EagerTensor)."},
    [ITERATOR] = {"set_iterator_type", module_set_class, METH_O,
     "set_iterator_type(cls): the subclass of Iterator (with __slots__ = ()) that make_iterator "
     "makes: its methods in Python (conveyor/data/iterator_ops.py)."},
    [DEVICE_ARRAY] = {"set_device_array_type", module_set_class, METH_O,
     "set_device_array_type(cls): the subclass of DeviceArrayBase (with __slots__ = ()) made "
     "for device arrays: conveyor.device.DeviceArray."},
    {NULL, NULL, 0, NULL},
};

/* The module functions, file by file; then the row tables (binding.h). */
static PyMethodDef *const module_function_tables[] = {
    cv_io_functions,       cv_cache_functions, cv_example_functions, cv_op_functions,
    cv_memory_functions,   cv_iterator_functions, cv_error_functions, cv_device_functions,
    cv_fs_functions,       cv_dtype_functions,
};
static PyMethodDef *const module_row_tables[] = {
    cv_constructor_functions, cv_value_functions, module_functions,
};

/* Each row a builtin whose self is (module, row index), as cv_row_of reads it. */
static int add_rows(PyObject *module, PyMethodDef *rows)
{
    PyObject *name = PyModule_GetNameObject(module);
    int rc = name ? 0 : -1;
    for (int i = 0; rc == 0 && rows[i].ml_name; i++) {
        PyObject *self = Py_BuildValue("(Oi)", module, i);
        PyObject *fn = self ? PyCFunction_NewEx(&rows[i], self, name) : NULL;
        rc = fn ? PyModule_AddObjectRef(module, rows[i].ml_name, fn) : -1;
        Py_XDECREF(self);
        Py_XDECREF(fn);
    }
    Py_XDECREF(name);
    return rc;
}

#define REF(field) offsetof(CvModuleState, field)

/* The types, each made from its spec into its field of the state; a public
 * one is a module attribute too. */
static const struct {
    PyType_Spec *spec;
    size_t field;
    bool public;
} module_types[] = {
    {&cv_dataset_spec, REF(dataset_type), true},
    {&cv_iterator_spec, REF(iterator_type), true},
    {&cv_holder_spec, REF(holder_type), false},
    {&cv_device_array_spec, REF(device_array_type), true},
};

static int module_exec(PyObject *module)
{
    CvModuleState *st = cv_get_state(module);
    if (PyArray_ImportNumPyAPI() < 0)
        return -1;
    for (size_t i = 0; i < sizeof(module_types) / sizeof(module_types[0]); i++) {
        PyObject *type = PyType_FromModuleAndSpec(module, module_types[i].spec, NULL);
        *(PyObject **)((char *)st + module_types[i].field) = type;
        if (!type || (module_types[i].public && PyModule_AddType(module, (PyTypeObject *)type) < 0))
            return -1;
    }
    if (cv_constructors_init() < 0)
        return -1;
    cv_fs_register(&cv_fs_fsspec); /* every scheme without a table of its own */
    for (size_t i = 0; i < sizeof(module_function_tables) / sizeof(module_function_tables[0]); i++)
        if (PyModule_AddFunctions(module, module_function_tables[i]) < 0)
            return -1;
    for (size_t i = 0; i < sizeof(module_row_tables) / sizeof(module_row_tables[0]); i++)
        if (add_rows(module, module_row_tables[i]) < 0)
            return -1;
    cv_gil_install();
    if (PyModule_AddIntConstant(module, "AUTOTUNE", CV_AUTOTUNE) < 0 ||
        PyModule_AddIntConstant(module, "INFINITE_CARDINALITY", CV_INFINITE_CARDINALITY) < 0 ||
        PyModule_AddIntConstant(module, "UNKNOWN_CARDINALITY", CV_UNKNOWN_CARDINALITY) < 0 ||
        PyModule_AddIntConstant(module, "MAX_RANK", CV_MAX_RANK) < 0)
        return -1;
    return 0;
}

/* The module state's references (binding.h), for traverse and clear. */
static const size_t module_refs[] = {
    REF(dataset_type),  REF(iterator_type),  REF(holder_type),        REF(device_array_type),
    REF(eager_type),    REF(iterator_class), REF(device_array_class), REF(error_classes),
};
#define NUM_REFS (sizeof(module_refs) / sizeof(module_refs[0]))

static int module_traverse(PyObject *module, visitproc visit, void *arg)
{
    for (size_t i = 0; i < NUM_REFS; i++)
        Py_VISIT(*(PyObject **)((char *)cv_get_state(module) + module_refs[i]));
    return 0;
}

static int module_clear(PyObject *module)
{
    for (size_t i = 0; i < NUM_REFS; i++)
        Py_CLEAR(*(PyObject **)((char *)cv_get_state(module) + module_refs[i]));
    return 0;
}

static void module_free(void *module)
{
    module_clear((PyObject *)module);
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
#ifdef Py_mod_multiple_interpreters /* Python 3.12+ */
    /* One module per process: the engine's state is process-wide (the
     * shutdown flag and the count of calls in flight, the thread-exit and
     * fork hooks, worker threads pinned to one interpreter's thread states
     * through PyGILState, which supports only the main interpreter). */
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "conveyor._engine",
    .m_doc = "The C engine of conveyor.",
    .m_size = sizeof(CvModuleState),
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__engine(void)
{
    return PyModuleDef_Init(&module_def);
}
