/* conveyor._engine.Dataset: an immutable engine dataset (CvDataset) as a
 * Python object, wrapped in turn by conveyor.data.Dataset. Argument checking
 * and structure handling live in Python (conveyor/data/dataset.py and the
 * op classes in conveyor/data/ops/).
 *
 * Garbage collection. A pipeline can sit on a reference cycle: a map
 * function whose closure refers to the conveyor Dataset that holds this
 * object, which holds the CvDataset, which holds the function. The gc can
 * only break such a cycle if tp_traverse reports the Python objects
 * reachable through the CvDataset. But engine datasets are shared: one may
 * be the input of several others, held by several wrappers, and held by
 * live iterators whose worker threads take and drop references without the
 * GIL. Reporting a callable from more than one wrapper, or from a graph
 * another thread may be using, would over-count references, or let the gc
 * free a function a pipeline still runs. The rules:
 *
 *  1. Each wrapper holds the wrappers of its inputs (strong, reported), and
 *     each wrapper knows the wrappers that hold it (its parents). Every
 *     CvDataset has at most one wrapper (ds->wrapper), the one made with it.
 *  2. A wrapper W is an owner when its CvDataset's structural count
 *     (core/dataset.h: engine iterators are counted apart) is exactly 1 +
 *     its number of parent links + its accounted iterators (W's reference,
 *     one per parent's CvDataset holding it, one per running pipeline made
 *     from W: iterator_type.c, account()), and every parent is an owner
 *     too (so nothing above holds the chain either).
 *  3. An owner reports the callables of its CvDataset and, recursively, of
 *     the inputs whose structural count is 1 (held by nothing but that part
 *     of the graph: cv_dataset_traverse_owned); each callback reports its
 *     Python references through the engine's traverse hooks (pyfunc.c,
 *     cache.c), a from_generator's live Python iterators included.
 *     A non-owner reports only its input wrappers and its type.
 *
 * Each callable is so reported by at most one wrapper: the wrapper of the
 * dataset holding it, or, for a dataset without a wrapper, the owner of the
 * only dataset holding it. And it is reported only when everything that
 * holds it is a Python object the gc sees: if the gc finds the function
 * unreachable, so are the wrappers that hold it, all wrappers above them (a
 * parent holds its inputs' wrappers), and every Iterator running a pipeline
 * over any of them (an accounted Iterator holds its source wrapper). Engine
 * iterators are not counted, but each lives in a pipeline whose root holds
 * it structurally: a pipeline (core/pipeline.h, until its last iterator is
 * freed) or an interleave slot (its inner dataset). When the structural
 * counts match, every dataset holding one of the owned part is itself in
 * it, so each such root is an owned dataset held by an accounted pipeline;
 * a root held otherwise (a pipeline no longer accounted, a detached
 * teardown, an inner dataset) is a holder no one accounts for, and nothing
 * is reported. iterator_clear stops those pipelines (iterator_type.c).
 * Anything else is reported by no one, which only keeps
 * objects alive. The structural counts cannot go up while the gc runs: a
 * new reference needs an existing one, and in an owned part all of them
 * belong to wrappers or accounted pipelines, changed under the GIL; an
 * unaccounted holder dropping its reference meanwhile is one the wrappers
 * never relied on. tp_clear drops the CvDataset and the input wrappers,
 * which releases the callables.
 */
#include "python/binding.h"

/* Checking rule 2 walks the parents; this bounds the walk in a pathological
 * graph (beyond it: not an owner, which is safe). */
#define OWNER_CHECK_BUDGET 10000

static int parents_add(CvDatasetObject *self, CvDatasetObject *parent)
{
    if (self->num_parents == self->cap_parents) {
        Py_ssize_t cap = self->cap_parents ? 2 * self->cap_parents : 4;
        CvDatasetObject **p = PyMem_Realloc(self->parents, (size_t)cap * sizeof(*p));
        if (!p)
            return -1;
        self->parents = p;
        self->cap_parents = cap;
    }
    self->parents[self->num_parents++] = parent;
    return 0;
}

static void parents_remove(CvDatasetObject *self, CvDatasetObject *parent)
{
    for (Py_ssize_t i = 0; i < self->num_parents; i++) {
        if (self->parents[i] == parent) {
            self->parents[i] = self->parents[--self->num_parents];
            return;
        }
    }
}

/* Rule 1: link obj to the wrappers of its CvDataset's inputs. A link that
 * cannot be made (no memory) is left out: the input then counts a holder
 * it cannot explain, and is never an owner (safe). */
static void link_inputs(CvDatasetObject *obj)
{
    CvDataset *ds = obj->ds;
    if (ds->num_inputs <= 0)
        return;
    obj->inputs = PyMem_Calloc((size_t)ds->num_inputs, sizeof(*obj->inputs));
    for (int i = 0; obj->inputs && i < ds->num_inputs; i++) {
        CvDatasetObject *in = ds->inputs[i]->wrapper;
        if (in && parents_add(in, obj) == 0)
            obj->inputs[obj->num_inputs++] = (CvDatasetObject *)Py_NewRef((PyObject *)in);
    }
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
    obj->ds = ds;
    obj->inputs = NULL;
    obj->num_inputs = 0;
    obj->parents = NULL;
    obj->num_parents = obj->cap_parents = 0;
    obj->iterators = 0;
    if (!ds->wrapper)
        ds->wrapper = obj;
    link_inputs(obj);
    PyObject_GC_Track(obj);
    return (PyObject *)obj;
}

PyObject *cv_wrap_buffering(PyObject *module, CvStatus s, CvDataset *ds, CvMemory *memory)
{
    if (!s)
        cv_dataset_set_memory(ds, memory);
    return cv_wrap_dataset(module, s, ds);
}

/* Rule 2. */
static bool is_owner(const CvDatasetObject *self, int *budget)
{
    if (!self->ds || --*budget < 0)
        return false;
    if (cv_dataset_structural_refs(self->ds) != 1 + self->num_parents + self->iterators)
        return false;
    for (Py_ssize_t i = 0; i < self->num_parents; i++)
        if (!is_owner(self->parents[i], budget))
            return false;
    return true;
}

static int dataset_traverse(PyObject *op, visitproc visit, void *arg)
{
    CvDatasetObject *self = (CvDatasetObject *)op;
    Py_VISIT(Py_TYPE(op));
    for (int i = 0; i < self->num_inputs; i++)
        Py_VISIT((PyObject *)self->inputs[i]);
    int budget = OWNER_CHECK_BUDGET;
    if (!is_owner(self, &budget))
        return 0;
    CvPyVisit v = {visit, arg};
    return cv_dataset_traverse_owned(self->ds, 1 + (long)(self->num_parents + self->iterators),
                                     cv_py_visit, &v);
}

/* Leaves the object consistent at each step that may run Python code
 * (releasing a callable, dropping an input wrapper), in case a collection
 * runs meanwhile: the links go first, then the dataset, then the inputs. */
static int dataset_clear(PyObject *op)
{
    CvDatasetObject *self = (CvDatasetObject *)op;
    CvDataset *ds = self->ds;
    CvDatasetObject **inputs = self->inputs;
    int n = self->num_inputs;
    if (ds && ds->wrapper == self)
        ds->wrapper = NULL;
    self->inputs = NULL;
    self->num_inputs = 0;
    for (int i = 0; i < n; i++)
        parents_remove(inputs[i], self);
    self->ds = NULL;
    /* Dropping the last reference may release a Python map function, which
     * re-takes the GIL (recursively, which is fine). */
    cv_dataset_unref(ds);
    for (int i = 0; i < n; i++)
        Py_DECREF((PyObject *)inputs[i]);
    PyMem_Free(inputs);
    return 0;
}

static void dataset_dealloc(PyObject *op)
{
    CvDatasetObject *self = (CvDatasetObject *)op;
    PyTypeObject *tp = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    dataset_clear(op);
    /* Parents hold this object: none is left once it is freed. */
    PyMem_Free(self->parents);
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

static PyObject *dataset_make_iterator(PyObject *op, PyObject *args, PyObject *kwargs)
{
    PyObject *structure, *describe = Py_None, *owner = Py_None;
    int cpu_budget = 0, algorithm = CV_AUTOTUNE_MODEL, statistics = 1;
    static char *keywords[] = {"structure", "cpu_budget", "algorithm", "describe", "statistics",
                               "owner", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|iiOpO:make_iterator", keywords, &structure,
                                     &cpu_budget, &algorithm, &describe, &statistics, &owner))
        return NULL;
    PyObject *module = cv_module_of(op);
    if (!module)
        return NULL;
    return cv_iterator_object_new(module, op, structure, cpu_budget, algorithm, describe, statistics,
                                  owner);
}

static PyMethodDef dataset_methods[] = {
    {"cardinality", dataset_cardinality, METH_NOARGS, "Number of elements, or -1 (infinite) / -2 (unknown)."},
    {"make_iterator", CV_METHOD_KEYWORDS(dataset_make_iterator),
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
