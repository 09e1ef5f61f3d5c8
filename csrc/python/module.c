/* conveyor._engine: module init, the Dataset and Iterator types, and the
 * functions that build datasets. Argument checking and structure handling
 * live in Python (conveyor/data/dataset.py); this layer takes narrow,
 * already-normalized arguments.
 *
 * GIL rules: an iterator whose pipeline may block (worker threads, joins)
 * runs next() with the GIL released, waiting in short slices so Ctrl-C gets
 * through; other pipelines run next() with the GIL held, which is cheaper.
 * Destroying an iterator always happens with the GIL released, because a
 * worker may be waiting for the GIL to finish a Python map function.
 */
#define CV_IMPORT_ARRAY_HERE
#include "python/binding.h"

#include "kernels/kernels.h"

#include <time.h>

static struct PyModuleDef engine_module;

CvModuleState *cv_get_state(PyObject *module)
{
    return (CvModuleState *)PyModule_GetState(module);
}

/* ------------------------------------------------------------------ Dataset */

typedef struct {
    PyObject_HEAD
    CvDataset *ds; /* owned reference */
} DatasetObject;

PyObject *cv_wrap_dataset(PyObject *module, CvStatus s, CvDataset *ds)
{
    CvModuleState *st = cv_get_state(module);
    if (s)
        return cv_raise_status(st, s);
    DatasetObject *obj = PyObject_New(DatasetObject, st->dataset_type);
    if (!obj) {
        cv_dataset_unref(ds);
        return NULL;
    }
    obj->ds = ds;
    return (PyObject *)obj;
}

/* cv_wrap_dataset for the stages that buffer elements: the new dataset
 * charges `memory` (NULL: the process default budget). */
static PyObject *wrap_buffering(PyObject *module, CvStatus s, CvDataset *ds, CvMemory *memory)
{
    if (!s)
        cv_dataset_set_memory(ds, memory);
    return cv_wrap_dataset(module, s, ds);
}

static void dataset_dealloc(PyObject *op)
{
    DatasetObject *self = (DatasetObject *)op;
    PyTypeObject *tp = Py_TYPE(op);
    CvDataset *ds = self->ds;
    /* Dropping the last reference may release a Python map function, which
     * re-takes the GIL (recursively, which is fine). */
    cv_dataset_unref(ds);
    tp->tp_free(op);
    Py_DECREF(tp);
}

static PyObject *dataset_cardinality(PyObject *op, PyObject *unused)
{
    (void)unused;
    return PyLong_FromLongLong(cv_dataset_cardinality(((DatasetObject *)op)->ds));
}

static PyObject *dataset_kernel_name(PyObject *op, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(((DatasetObject *)op)->ds->kernel->name);
}

static PyObject *dataset_make_iterator(PyObject *op, PyObject *args);

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
    {Py_tp_methods, dataset_methods},
    {Py_tp_getset, dataset_getset},
    {Py_tp_doc, "An engine dataset (immutable); wrapped by conveyor.data.Dataset."},
    {0, NULL},
};

/* Not subclassable, so PyType_GetModuleByDef always finds our module. */
static PyType_Spec dataset_spec = {
    .name = "conveyor._engine.Dataset",
    .basicsize = sizeof(DatasetObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = dataset_slots,
};

/* ----------------------------------------------------------------- Iterator */

struct IteratorObject {
    PyObject_HEAD
    CvIterator *it;      /* owned; NULL once closed or exhausted */
    PyObject *structure; /* strong until resolved; see make_iterator's doc */
    PyObject *pack;      /* strong, for kind 2 */
    int kind;            /* -1 unresolved, 0 single, 1 tuple, 2 pack */
    bool may_block;
    bool busy;            /* inside next() */
    bool close_requested; /* close() arrived while busy */
    unsigned long fork_generation;
    IteratorObject *prev, *next; /* live list in module state */
    PyObject *module;            /* strong */
};

static void live_link(CvModuleState *st, IteratorObject *self)
{
    self->prev = NULL;
    self->next = st->live;
    if (st->live)
        st->live->prev = self;
    st->live = self;
}

static void live_unlink(CvModuleState *st, IteratorObject *self)
{
    if (self->prev)
        self->prev->next = self->next;
    else if (st->live == self)
        st->live = self->next;
    if (self->next)
        self->next->prev = self->prev;
    self->prev = self->next = NULL;
}

static bool forked_away(IteratorObject *self)
{
    return self->fork_generation != cv_fork_generation();
}

/* Stop and free the engine iterator with the GIL released. */
static void iterator_release(IteratorObject *self)
{
    CvIterator *it = self->it;
    self->it = NULL;
    if (!it)
        return;
    if (forked_away(self))
        return; /* its threads and locks belong to the parent: leak, never join */
    Py_BEGIN_ALLOW_THREADS
    cv_iterator_cancel(it);
    cv_iterator_destroy(it);
    Py_END_ALLOW_THREADS
}

static PyObject *dataset_make_iterator(PyObject *op, PyObject *args)
{
    DatasetObject *ds = (DatasetObject *)op;
    PyObject *structure;
    if (!PyArg_ParseTuple(args, "O:make_iterator", &structure))
        return NULL;
    PyObject *module = PyType_GetModuleByDef(Py_TYPE(op), &engine_module);
    if (!module)
        return NULL;
    CvModuleState *st = cv_get_state(module);
    if (atomic_load(&cv_shutting_down)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "conveyor: cannot start an iterator while the interpreter is shutting down");
        return NULL;
    }
    IteratorObject *self = PyObject_GC_New(IteratorObject, st->iterator_type);
    if (!self)
        return NULL;
    self->it = NULL;
    self->structure = Py_NewRef(structure);
    self->pack = NULL;
    self->kind = -1;
    self->may_block = ds->ds->may_block;
    self->busy = false;
    self->close_requested = false;
    self->fork_generation = cv_fork_generation();
    self->module = Py_NewRef(module);
    live_link(st, self);
    PyObject_GC_Track(self);
    CvStatus s = cv_iterator_make(ds->ds, &self->it);
    if (s) {
        Py_DECREF(self);
        return cv_raise_status(st, s);
    }
    return (PyObject *)self;
}

static int resolve_structure(IteratorObject *self)
{
    PyObject *r = PyObject_CallNoArgs(self->structure);
    if (!r)
        return -1;
    int kind;
    PyObject *pack;
    if (!PyArg_ParseTuple(r, "iO", &kind, &pack) || kind < 0 || kind > 2) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "structure() must return (kind, pack)");
        Py_DECREF(r);
        return -1;
    }
    self->kind = kind;
    Py_XSETREF(self->pack, kind == 2 ? Py_NewRef(pack) : NULL);
    Py_CLEAR(self->structure);
    Py_DECREF(r);
    return 0;
}

static PyObject *element_to_python(IteratorObject *self, CvModuleState *st, CvElement *e)
{
    if (self->kind < 0 && resolve_structure(self) < 0)
        return NULL;
    if (self->kind == 0) {
        if (e->n != 1) {
            PyErr_Format(PyExc_RuntimeError, "conveyor: expected one component, got %u", e->n);
            return NULL;
        }
        return cv_tensor_to_python(st, &e->t[0]);
    }
    PyObject *tuple = cv_element_to_tuple(st, e);
    if (!tuple || self->kind == 1)
        return tuple;
    PyObject *packed = PyObject_CallOneArg(self->pack, tuple);
    Py_DECREF(tuple);
    return packed;
}

static PyObject *iterator_next(PyObject *op)
{
    IteratorObject *self = (IteratorObject *)op;
    CvModuleState *st = cv_get_state(self->module);
    if (forked_away(self)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "conveyor: this iterator was created before fork() and cannot be used in "
                        "the child process; create a new iterator (iter(dataset)) in the child");
        return NULL;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError,
                        "conveyor: next() called on an iterator that another thread is using");
        return NULL;
    }
    if (!self->it)
        return NULL; /* exhausted or closed: StopIteration, sticky */
    CvElement e = {0};
    bool end = false;
    CvStatus s;
    self->busy = true;
    if (self->may_block) {
        Py_BEGIN_ALLOW_THREADS
        CvInterruptSlot outer = cv_set_interrupt_check(cv_check_signals, NULL);
        s = cv_iterator_next(self->it, &e, &end);
        cv_set_interrupt_check(outer.fn, outer.arg); /* nested iteration restores the outer one */
        Py_END_ALLOW_THREADS
    } else {
        s = cv_iterator_next(self->it, &e, &end);
    }
    self->busy = false;
    if (self->close_requested || (!s && end)) {
        cv_element_clear(&e);
        iterator_release(self);
        if (s)
            return cv_raise_status(st, s);
        return NULL;
    }
    if (s)
        return cv_raise_status(st, s);
    PyObject *result = element_to_python(self, st, &e);
    cv_element_clear(&e);
    return result;
}

static PyObject *iterator_close(PyObject *op, PyObject *unused)
{
    (void)unused;
    IteratorObject *self = (IteratorObject *)op;
    if (self->busy) {
        /* Another thread is inside next(): wake it; it frees the engine
         * iterator when it returns. Cancel keeps the GIL: the thread in next()
         * may free the tree as soon as it gets the GIL back, so the tree must
         * not be walked without it. Cancel only takes short engine mutexes,
         * and no engine thread waits for the GIL while holding one. */
        self->close_requested = true;
        if (!forked_away(self))
            cv_iterator_cancel(self->it);
    } else {
        iterator_release(self);
    }
    Py_RETURN_NONE;
}

static int iterator_traverse(PyObject *op, visitproc visit, void *arg)
{
    IteratorObject *self = (IteratorObject *)op;
    Py_VISIT(Py_TYPE(op));
    Py_VISIT(self->structure);
    Py_VISIT(self->pack);
    Py_VISIT(self->module);
    return 0;
}

static int iterator_clear(PyObject *op)
{
    IteratorObject *self = (IteratorObject *)op;
    Py_CLEAR(self->structure);
    Py_CLEAR(self->pack);
    return 0;
}

static void iterator_dealloc(PyObject *op)
{
    IteratorObject *self = (IteratorObject *)op;
    PyTypeObject *tp = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    iterator_release(self);
    if (self->module)
        live_unlink(cv_get_state(self->module), self);
    iterator_clear(op);
    Py_CLEAR(self->module);
    tp->tp_free(op);
    Py_DECREF(tp);
}

/* tf.data's Iterator.get_next(): the next element, or OutOfRangeError at the end. */
static PyObject *iterator_get_next(PyObject *op, PyObject *unused)
{
    (void)unused;
    PyObject *element = iterator_next(op);
    if (element || PyErr_Occurred())
        return element;
    IteratorObject *self = (IteratorObject *)op;
    return cv_raise_status(cv_get_state(self->module), cv_error(CV_OUT_OF_RANGE, "End of sequence"));
}

static PyMethodDef iterator_methods[] = {
    {"get_next", iterator_get_next, METH_NOARGS,
     "The next element; raises conveyor.errors.OutOfRangeError at the end (as tf.data's)."},
    {"close", iterator_close, METH_NOARGS,
     "Stop the iterator now: cancel its work, join its threads and free its buffers."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot iterator_slots[] = {
    {Py_tp_dealloc, iterator_dealloc},
    {Py_tp_traverse, iterator_traverse},
    {Py_tp_clear, iterator_clear},
    {Py_tp_iter, PyObject_SelfIter},
    {Py_tp_iternext, iterator_next},
    {Py_tp_methods, iterator_methods},
    {Py_tp_doc, "An iterator over a conveyor dataset; yields NumPy arrays."},
    {0, NULL},
};

static PyType_Spec iterator_spec = {
    .name = "conveyor._engine.Iterator",
    .basicsize = sizeof(IteratorObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = iterator_slots,
};

/* ------------------------------------------------------- module functions */

CvDataset *cv_dataset_arg(PyObject *module, PyObject *obj)
{
    CvModuleState *st = cv_get_state(module);
    if (!PyObject_TypeCheck(obj, st->dataset_type)) {
        PyErr_Format(PyExc_TypeError, "expected an engine Dataset, got %s", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return ((DatasetObject *)obj)->ds;
}

static PyObject *engine_tensor_slices(PyObject *module, PyObject *components)
{
    CvElement e;
    CvStatus s = cv_element_from_sequence(cv_get_state(module), components, &e);
    if (s)
        return cv_raise_status(cv_get_state(module), s);
    CvDataset *ds = NULL;
    s = cv_tensor_slices_dataset(&e, &ds);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *engine_tensors(PyObject *module, PyObject *components)
{
    CvElement e;
    CvStatus s = cv_element_from_sequence(cv_get_state(module), components, &e);
    if (s)
        return cv_raise_status(cv_get_state(module), s);
    CvDataset *ds = NULL;
    s = cv_tensors_dataset(&e, &ds);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *engine_range(PyObject *module, PyObject *args)
{
    long long start, stop, step;
    int dtype;
    if (!PyArg_ParseTuple(args, "LLLi:range", &start, &stop, &step, &dtype))
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_range_dataset(start, stop, step, (CvDtype)dtype, &ds);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *engine_generator(PyObject *module, PyObject *args)
{
    PyObject *factory, *name;
    if (!PyArg_ParseTuple(args, "OU:generator", &factory, &name))
        return NULL;
    CvSource src;
    CvDataset *ds = NULL;
    CvStatus s = cv_source_from_python(module, factory, name, &src);
    if (!s)
        s = cv_generator_dataset(src, &ds);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *engine_map(PyObject *module, PyObject *args)
{
    PyObject *input, *fn, *out_convert, *name;
    long long parallel;
    int deterministic, with_id = 0;
    CvMemory *memory = NULL;
    if (!PyArg_ParseTuple(args, "OOOLpU|pO&:map", &input, &fn, &out_convert, &parallel,
                          &deterministic, &name, &with_id, cv_memory_arg, &memory))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvFunction f;
    CvDataset *ds = NULL;
    CvStatus s = cv_function_from_arg(module, fn, out_convert, name, with_id, &f);
    if (!s)
        s = cv_map_dataset(in, f, parallel, deterministic, &ds);
    return wrap_buffering(module, s, ds, memory);
}

static PyObject *engine_batch(PyObject *module, PyObject *args)
{
    PyObject *input;
    long long batch_size, parallel;
    int drop_remainder, deterministic;
    CvMemory *memory = NULL;
    if (!PyArg_ParseTuple(args, "OLpLp|O&:batch", &input, &batch_size, &drop_remainder, &parallel,
                          &deterministic, cv_memory_arg, &memory))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_batch_dataset(in, batch_size, drop_remainder, parallel, deterministic, &ds);
    return wrap_buffering(module, s, ds, memory);
}

static PyObject *engine_interleave(PyObject *module, PyObject *args)
{
    PyObject *input, *fn, *name;
    long long cycle_length, block_length, parallel;
    int deterministic;
    CvMemory *memory = NULL;
    if (!PyArg_ParseTuple(args, "OOLLLpU|O&:interleave", &input, &fn, &cycle_length, &block_length,
                          &parallel, &deterministic, &name, cv_memory_arg, &memory))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvDatasetFunction f;
    CvDataset *ds = NULL;
    CvStatus s = cv_dataset_function_from_python(module, fn, name, &f);
    if (!s)
        s = cv_interleave_dataset(in, f, cycle_length, block_length, parallel, deterministic, &ds);
    return wrap_buffering(module, s, ds, memory);
}

static PyObject *engine_ignore_errors(PyObject *module, PyObject *args)
{
    PyObject *input;
    int log_warning;
    if (!PyArg_ParseTuple(args, "Op:ignore_errors", &input, &log_warning))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_ignore_errors_dataset(in, log_warning, &ds);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *engine_shuffle(PyObject *module, PyObject *args)
{
    PyObject *input;
    long long buffer_size, seed, seed2;
    int reshuffle;
    CvMemory *memory = NULL;
    if (!PyArg_ParseTuple(args, "OLLLp|O&:shuffle", &input, &buffer_size, &seed, &seed2, &reshuffle,
                          cv_memory_arg, &memory))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_shuffle_dataset(in, buffer_size, seed, seed2, reshuffle, &ds);
    return wrap_buffering(module, s, ds, memory);
}

typedef CvStatus (*CountedKernel)(CvDataset *, int64_t, CvDataset **);

static PyObject *counted(PyObject *module, PyObject *args, CountedKernel make, const char *fmt)
{
    PyObject *input;
    long long count;
    if (!PyArg_ParseTuple(args, fmt, &input, &count))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = make(in, count, &ds);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *engine_prefetch(PyObject *module, PyObject *args)
{
    PyObject *input;
    long long buffer_size;
    CvMemory *memory = NULL;
    if (!PyArg_ParseTuple(args, "OL|O&:prefetch", &input, &buffer_size, cv_memory_arg, &memory))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_prefetch_dataset(in, buffer_size, &ds);
    return wrap_buffering(module, s, ds, memory);
}

static PyObject *engine_take(PyObject *module, PyObject *args)
{
    return counted(module, args, cv_take_dataset, "OL:take");
}

static PyObject *engine_skip(PyObject *module, PyObject *args)
{
    return counted(module, args, cv_skip_dataset, "OL:skip");
}

static PyObject *engine_repeat(PyObject *module, PyObject *args)
{
    return counted(module, args, cv_repeat_dataset, "OL:repeat");
}

static PyObject *engine_set_error_classes(PyObject *module, PyObject *mapping)
{
    if (!PyDict_Check(mapping)) {
        PyErr_SetString(PyExc_TypeError, "expected a dict of code -> exception class");
        return NULL;
    }
    Py_XSETREF(cv_get_state(module)->error_classes, Py_NewRef(mapping));
    Py_RETURN_NONE;
}

/* The atexit hook, run before finalization:
 * 1. From now on no engine thread may enter Python (cv_shutting_down).
 * 2. Cancel every live iterator, which wakes all waits.
 * 3. With the GIL released, give Python calls already running on workers
 *    (a map function mid-call) up to `timeout` seconds to return.
 * 4. Join and free every iterator if they did; otherwise abandon them: their
 *    threads die with the process, and joining a thread stuck in a user
 *    function would hang the exit. */
static PyObject *engine_shutdown(PyObject *module, PyObject *args)
{
    double timeout = 2.0;
    if (!PyArg_ParseTuple(args, "|d:shutdown", &timeout))
        return NULL;
    CvModuleState *st = cv_get_state(module);
    atomic_store(&cv_shutting_down, 1);
    /* A snapshot with strong references: releasing drops the GIL, and other
     * threads may unlink iterators from the live list meanwhile. */
    PyObject *live = PyList_New(0);
    if (!live)
        return NULL;
    for (IteratorObject *self = st->live; self; self = self->next) {
        if (self->it && !forked_away(self) && PyList_Append(live, (PyObject *)self) < 0) {
            Py_DECREF(live);
            return NULL;
        }
    }
    Py_ssize_t n = PyList_GET_SIZE(live);
    for (Py_ssize_t i = 0; i < n; i++) {
        IteratorObject *self = (IteratorObject *)PyList_GET_ITEM(live, i);
        if (self->it)
            cv_iterator_cancel(self->it); /* GIL held: see iterator_close */
    }
    bool drained;
    Py_BEGIN_ALLOW_THREADS
    struct timespec nap = {0, 1000000};
    for (double waited = 0; atomic_load(&cv_python_calls) > 0 && waited < timeout; waited += 1e-3)
        nanosleep(&nap, NULL);
    drained = atomic_load(&cv_python_calls) == 0;
    Py_END_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        IteratorObject *self = (IteratorObject *)PyList_GET_ITEM(live, i);
        if (self->busy)
            self->close_requested = true; /* its next() returns CANCELLED and frees it */
        else if (drained)
            iterator_release(self);
        else
            self->it = NULL; /* abandoned */
    }
    Py_DECREF(live);
    Py_RETURN_NONE;
}

static PyObject *engine_cpu_count(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyLong_FromLong(cv_cpu_count());
}

static PyObject *engine_live_iterators(PyObject *module, PyObject *unused)
{
    (void)unused;
    long n = 0;
    for (IteratorObject *self = cv_get_state(module)->live; self; self = self->next)
        n += self->it != NULL;
    return PyLong_FromLong(n);
}

static PyMethodDef engine_functions[] = {
    {"tensor_slices", engine_tensor_slices, METH_O, "tensor_slices(list of arrays) -> Dataset"},
    {"tensors", engine_tensors, METH_O, "tensors(list of arrays) -> Dataset"},
    {"range", engine_range, METH_VARARGS, "range(start, stop, step, dtype_code) -> Dataset"},
    {"generator", engine_generator, METH_VARARGS, "generator(factory, name) -> Dataset"},
    {"map", engine_map, METH_VARARGS,
     "map(input, fn, out_convert, num_parallel_calls, deterministic, name, with_id=False, "
     "memory=None) -> Dataset"},
    {"batch", engine_batch, METH_VARARGS,
     "batch(input, batch_size, drop_remainder, num_parallel_calls, deterministic, memory=None) "
     "-> Dataset"},
    {"interleave", engine_interleave, METH_VARARGS,
     "interleave(input, fn, cycle_length, block_length, num_parallel_calls, deterministic, name, "
     "memory=None) "
     "-> Dataset; fn(*components) returns an engine Dataset"},
    {"ignore_errors", engine_ignore_errors, METH_VARARGS, "ignore_errors(input, log_warning) -> Dataset"},
    {"prefetch", engine_prefetch, METH_VARARGS, "prefetch(input, buffer_size, memory=None) -> Dataset"},
    {"shuffle", engine_shuffle, METH_VARARGS,
     "shuffle(input, buffer_size, seed, seed2, reshuffle_each_iteration, memory=None) -> Dataset"},
    {"take", engine_take, METH_VARARGS, "take(input, count) -> Dataset"},
    {"skip", engine_skip, METH_VARARGS, "skip(input, count) -> Dataset"},
    {"repeat", engine_repeat, METH_VARARGS, "repeat(input, count) -> Dataset"},
    {"set_error_classes", engine_set_error_classes, METH_O, "Register the conveyor.errors classes."},
    {"shutdown", engine_shutdown, METH_VARARGS,
     "shutdown(timeout=2.0): stop all live iterators (run at interpreter exit)."},
    {"cpu_count", engine_cpu_count, METH_NOARGS, "CPUs this process may use."},
    {"live_iterators", engine_live_iterators, METH_NOARGS, "Number of open iterators."},
    {NULL, NULL, 0, NULL},
};

/* ------------------------------------------------------------ module init */

static int engine_exec(PyObject *module)
{
    CvModuleState *st = cv_get_state(module);
    if (PyArray_ImportNumPyAPI() < 0)
        return -1;
    st->dataset_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &dataset_spec, NULL);
    if (!st->dataset_type || PyModule_AddType(module, st->dataset_type) < 0)
        return -1;
    st->iterator_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &iterator_spec, NULL);
    if (!st->iterator_type || PyModule_AddType(module, st->iterator_type) < 0)
        return -1;
    if (cv_convert_init(module, st) < 0)
        return -1;
    if (PyModule_AddFunctions(module, cv_io_functions) < 0 ||
        PyModule_AddFunctions(module, cv_example_functions) < 0 ||
        PyModule_AddFunctions(module, cv_transform_functions) < 0 ||
        PyModule_AddFunctions(module, cv_grouping_functions) < 0 ||
        PyModule_AddFunctions(module, cv_op_functions) < 0 ||
        PyModule_AddFunctions(module, cv_memory_functions) < 0 ||
        PyModule_AddFunctions(module, cv_cache_functions) < 0)
        return -1;
    (void)cv_fork_generation(); /* installs the pthread_atfork handler */
    cv_set_thread_exit_hook(cv_gil_thread_exit);
    cv_set_fork_child_hook(cv_python_after_fork_child);
    if (PyModule_AddIntConstant(module, "AUTOTUNE", CV_AUTOTUNE) < 0 ||
        PyModule_AddIntConstant(module, "INFINITE_CARDINALITY", CV_INFINITE_CARDINALITY) < 0 ||
        PyModule_AddIntConstant(module, "UNKNOWN_CARDINALITY", CV_UNKNOWN_CARDINALITY) < 0 ||
        PyModule_AddIntConstant(module, "MAX_RANK", CV_MAX_RANK) < 0)
        return -1;
    return 0;
}

static int engine_traverse(PyObject *module, visitproc visit, void *arg)
{
    CvModuleState *st = cv_get_state(module);
    Py_VISIT(st->dataset_type);
    Py_VISIT(st->iterator_type);
    Py_VISIT(st->holder_type);
    Py_VISIT(st->error_classes);
    return 0;
}

static int engine_clear(PyObject *module)
{
    CvModuleState *st = cv_get_state(module);
    Py_CLEAR(st->dataset_type);
    Py_CLEAR(st->iterator_type);
    Py_CLEAR(st->holder_type);
    Py_CLEAR(st->error_classes);
    return 0;
}

static void engine_free(void *module)
{
    engine_clear((PyObject *)module);
}

static PyModuleDef_Slot engine_slots[] = {
    {Py_mod_exec, engine_exec},
    {0, NULL},
};

static struct PyModuleDef engine_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "conveyor._engine",
    .m_doc = "The C engine of conveyor.",
    .m_size = sizeof(CvModuleState),
    .m_methods = engine_functions,
    .m_slots = engine_slots,
    .m_traverse = engine_traverse,
    .m_clear = engine_clear,
    .m_free = engine_free,
};

PyMODINIT_FUNC PyInit__engine(void)
{
    return PyModuleDef_Init(&engine_module);
}
