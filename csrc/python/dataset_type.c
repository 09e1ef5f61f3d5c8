/* conveyor._engine.Dataset: an immutable engine dataset (CvDataset) as a
 * Python object, wrapped in turn by conveyor.data.Dataset. Argument checking
 * and structure handling live in Python (conveyor/data/dataset.py and the
 * op classes in conveyor/data/ops/).
 *
 * Garbage collection (a map function whose closure refers to the Dataset
 * that runs it is a cycle): the object embeds a CvWrapper, whose rule
 * (core/wrapper.h) says when it may report the Python objects its CvDataset
 * reaches; tp_traverse reports the input objects and, through the
 * callbacks' traverse hooks (pyfunc.c, cache.c), those; tp_clear drops the
 * CvDataset and the inputs, releasing the callables. An Iterator counts its
 * running pipeline for its source (iterator_type.c: account()).
 */
#include "python/binding.h"

static PyObject *object_of(CvWrapper *w)
{
    return (PyObject *)((char *)w - offsetof(CvDatasetObject, w));
}

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
    cv_wrapper_init(&obj->w, ds);
    for (int i = 0; i < obj->w.num_inputs; i++) /* held until detached (rule 1) */
        Py_INCREF(object_of(obj->w.inputs[i]));
    PyObject_GC_Track(obj);
    return (PyObject *)obj;
}

/* The CvVisit the callbacks' traverse hooks get (core/wrapper.h): it
 * forwards to the gc's visitproc; arg points to this. */
typedef struct CvPyVisit {
    visitproc visit;
    void *arg;
} CvPyVisit;

static int py_visit(void *object, void *arg)
{
    CvPyVisit *v = arg;
    return v->visit((PyObject *)object, v->arg);
}

static int dataset_traverse(PyObject *op, visitproc visit, void *arg)
{
    CvDatasetObject *self = (CvDatasetObject *)op;
    Py_VISIT(Py_TYPE(op));
    for (int i = 0; i < self->w.num_inputs; i++)
        Py_VISIT(object_of(self->w.inputs[i]));
    CvPyVisit v = {visit, arg};
    return cv_wrapper_traverse(&self->w, py_visit, &v);
}

/* Leaves the object consistent at each step that may run Python code
 * (releasing a callable, dropping an input wrapper), in case a collection
 * runs meanwhile: the links go first, then the dataset, then the inputs. */
static int dataset_clear(PyObject *op)
{
    CvWrapper **inputs;
    int n;
    CvDataset *ds = cv_wrapper_detach(&((CvDatasetObject *)op)->w, &inputs, &n);
    /* Dropping the last reference may release a Python map function, which
     * re-takes the GIL (recursively, which is fine). */
    cv_dataset_unref(ds);
    for (int i = 0; i < n; i++)
        Py_DECREF(object_of(inputs[i]));
    free(inputs);
    return 0;
}

static void dataset_dealloc(PyObject *op)
{
    PyTypeObject *tp = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    dataset_clear(op);
    cv_wrapper_free(&((CvDatasetObject *)op)->w); /* parents hold this object: none is left */
    tp->tp_free(op);
    Py_DECREF(tp);
}

static PyObject *dataset_cardinality(PyObject *op, PyObject *unused)
{
    (void)unused;
    CvDataset *ds = cv_dataset_of(op);
    return ds ? PyLong_FromLongLong(cv_dataset_cardinality(ds)) : NULL;
}

static PyObject *dataset_kernel_name(PyObject *op, void *closure)
{
    (void)closure;
    CvDataset *ds = cv_dataset_of(op);
    return ds ? PyUnicode_FromString(ds->kernel->name) : NULL;
}

/* What the statistics' "dataset" field (core/stats.h) gives for this one. */
static PyObject *dataset_wrapper_id(PyObject *op, void *closure)
{
    (void)closure;
    return PyLong_FromVoidPtr(&((CvDatasetObject *)op)->w);
}

static PyMethodDef dataset_methods[] = {
    {"cardinality", dataset_cardinality, METH_NOARGS, "Number of elements, or -1 (infinite) / -2 (unknown)."},
    {"make_iterator", CV_METHOD_KEYWORDS(cv_make_iterator), /* iterator_type.c */
     "make_iterator(structure, cpu_budget=0) -> Iterator. structure() is called once, at the first "
     "element, and returns (kind, pack): kind 0 = one component, 1 = a plain tuple, 2 = "
     "pack(tuple). cpu_budget: the pool's running threads (0: the CPUs this process may use); "
     "algorithm: the autotuner's (0 model, 1 fixed); describe(raw) -> what Iterator.stats() returns; "
     "statistics=False: no statistics and no autotuner (to measure their cost); owner: the "
     "Python dataset, for the iterator's save/restore (conveyor.data.checkpoint)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef dataset_getset[] = {
    {"kernel", dataset_kernel_name, NULL, "Name of the engine kernel", NULL},
    {"wrapper_id", dataset_wrapper_id, NULL, "What the statistics' nodes name this dataset by", NULL},
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
PyType_Spec cv_dataset_spec = {
    .name = "conveyor._engine.Dataset",
    .basicsize = sizeof(CvDatasetObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = dataset_slots,
};
