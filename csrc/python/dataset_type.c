/* conveyor._engine.Dataset: an immutable engine dataset (CvDataset) as a
 * Python object, wrapped in turn by conveyor.data.Dataset. Argument checking
 * and structure handling live in Python (conveyor/data/dataset.py).
 *
 * Garbage collection. A pipeline can sit on a reference cycle: a map
 * function whose closure refers to the conveyor Dataset that holds this
 * object, which holds the CvDataset, which holds the function. The gc can
 * only break such a cycle if this type's tp_traverse reports the Python
 * objects reachable through its CvDataset. But engine datasets are shared:
 * one may be the input of several others, held by several wrappers, and
 * held by live iterators whose worker threads take and drop references
 * without the GIL. Reporting a shared callable from more than one wrapper,
 * or from a graph another thread is changing, would over-count references
 * and corrupt the gc. The rule:
 *
 *   tp_traverse reports only the part of the engine graph this object owns
 *   alone: its CvDataset if its refcount is 1 (this object's reference),
 *   then, recursively, each input whose refcount is 1
 *   (cv_dataset_traverse_exclusive). Each callback there reports its own
 *   Python references through the engine's traverse hooks (pyfunc.c,
 *   cache.c). Anything shared is reported by no one: conservative, it only
 *   keeps objects alive.
 *
 * The counts in the owned part cannot change while the gc runs: a new
 * reference to a dataset needs an existing one, and the only path to the
 * owned part goes through this object, under the GIL. An iterator holds its
 * dataset (count >= 2), so a dataset being iterated, and everything below
 * it, is never reported, whatever its threads do. tp_clear drops this
 * object's reference to the CvDataset, which releases the callables.
 *
 * Limit: conveyor.data.Dataset keeps the engine dataset of every stage it
 * built, so a stage with a built stage above it is shared (its wrapper and
 * the dataset above) and its callables are reported by no one: a cycle
 * through such a callable is not collected (tests/test_gc.py, xfail).
 */
#include "python/binding.h"

PyObject *cv_wrap_dataset(PyObject *module, CvStatus s, CvDataset *ds)
{
    CvModuleState *st = cv_get_state(module);
    if (s)
        return cv_raise_status(st, s);
    CvDatasetObject *obj = PyObject_GC_New(CvDatasetObject, st->dataset_type);
    if (!obj) {
        cv_dataset_unref(ds);
        return NULL;
    }
    obj->ds = ds;
    PyObject_GC_Track(obj);
    return (PyObject *)obj;
}

PyObject *cv_wrap_buffering(PyObject *module, CvStatus s, CvDataset *ds, CvMemory *memory)
{
    if (!s)
        cv_dataset_set_memory(ds, memory);
    return cv_wrap_dataset(module, s, ds);
}

static int dataset_traverse(PyObject *op, visitproc visit, void *arg)
{
    CvDatasetObject *self = (CvDatasetObject *)op;
    Py_VISIT(Py_TYPE(op));
    if (!self->ds)
        return 0;
    CvPyVisit v = {visit, arg};
    return cv_dataset_traverse_exclusive(self->ds, cv_py_visit, &v);
}

static int dataset_clear(PyObject *op)
{
    CvDatasetObject *self = (CvDatasetObject *)op;
    CvDataset *ds = self->ds;
    self->ds = NULL;
    /* Dropping the last reference may release a Python map function, which
     * re-takes the GIL (recursively, which is fine). */
    cv_dataset_unref(ds);
    return 0;
}

static void dataset_dealloc(PyObject *op)
{
    PyTypeObject *tp = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    dataset_clear(op);
    tp->tp_free(op);
    Py_DECREF(tp);
}

/* The engine dataset of self, or NULL with ValueError set (cleared by the
 * gc: reachable only from a finalizer of the same garbage). */
static CvDataset *dataset_of(PyObject *op)
{
    CvDataset *ds = ((CvDatasetObject *)op)->ds;
    if (!ds)
        PyErr_SetString(PyExc_ValueError, "this engine Dataset was cleared by the garbage collector");
    return ds;
}

static PyObject *dataset_cardinality(PyObject *op, PyObject *unused)
{
    (void)unused;
    CvDataset *ds = dataset_of(op);
    return ds ? PyLong_FromLongLong(cv_dataset_cardinality(ds)) : NULL;
}

static PyObject *dataset_kernel_name(PyObject *op, void *closure)
{
    (void)closure;
    CvDataset *ds = dataset_of(op);
    return ds ? PyUnicode_FromString(ds->kernel->name) : NULL;
}

static PyObject *dataset_make_iterator(PyObject *op, PyObject *args)
{
    PyObject *structure;
    if (!PyArg_ParseTuple(args, "O:make_iterator", &structure))
        return NULL;
    PyObject *module = cv_module_of(op);
    CvDataset *ds = module ? dataset_of(op) : NULL;
    if (!ds)
        return NULL;
    return cv_iterator_object_new(module, ds, structure);
}

static PyMethodDef dataset_methods[] = {
    {"cardinality", dataset_cardinality, METH_NOARGS, "Number of elements, or -1 (infinite) / -2 (unknown)."},
    {"make_iterator", dataset_make_iterator, METH_VARARGS,
     "make_iterator(structure) -> Iterator. structure() is called once, at the first element, "
     "and returns (kind, pack): kind 0 = one component, 1 = a plain tuple, 2 = pack(tuple)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef dataset_getset[] = {
    {"kernel", dataset_kernel_name, NULL, "Name of the engine kernel", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot dataset_slots[] = {
    {Py_tp_dealloc, dataset_dealloc},
    {Py_tp_traverse, dataset_traverse},
    {Py_tp_clear, dataset_clear},
    {Py_tp_methods, dataset_methods},
    {Py_tp_getset, dataset_getset},
    {Py_tp_doc, "An engine dataset (immutable); wrapped by conveyor.data.Dataset."},
    {0, NULL},
};

/* Not subclassable, so cv_module_of always finds our module. */
static PyType_Spec dataset_spec = {
    .name = "conveyor._engine.Dataset",
    .basicsize = sizeof(CvDatasetObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = dataset_slots,
};

int cv_dataset_type_init(PyObject *module, CvModuleState *st)
{
    st->dataset_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &dataset_spec, NULL);
    if (!st->dataset_type || PyModule_AddType(module, st->dataset_type) < 0)
        return -1;
    return 0;
}
