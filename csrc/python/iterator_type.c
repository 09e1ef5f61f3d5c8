/* conveyor._engine.Iterator: one pass over an engine dataset, and the
 * atexit hook that stops the live ones (their registry and the shutdown's
 * steps: core/pipeline.h). The pass is a CvPipeline (core/pipeline.h); this
 * file keeps what is Python's: the GIL, the element structure, elements
 * held back by an interrupt, the owner for save and restore, and stats()
 * from the pipeline's report (core/report.h). The methods that are plain
 * Python (get_next, save, restore, state_dict, load_state_dict) are on the
 * subclass set_iterator_type registers (conveyor/data/iterator_ops.py).
 *
 * GIL rules: an iterator whose pipeline may block (worker threads, joins)
 * first asks for an element that is ready now (try_next, with the GIL held:
 * no GIL round trip per element); only when that would block does it run
 * next() with the GIL released, waiting in short slices so Ctrl-C gets
 * through. Other pipelines run next() with the GIL held, which is cheaper.
 * Destroying an iterator always happens with the GIL released, because a
 * worker may be waiting for the GIL to finish a Python map function.
 *
 * Ctrl-C and elements: an interrupt that arrives while next() waits makes it
 * raise with the element left in the pipeline. One that arrives while the
 * element is on its way out would be raised by the eval loop right after
 * next() returns, and the element would be lost; so next() checks signals
 * after converting the element, and if a handler raises, it keeps the
 * element ("held back") and raises instead: the next call returns it. One
 * that a handler raises inside the conversion (structure() and pack() run
 * Python code) keeps the engine element ("pending") to convert again. A
 * real signal that lands in the last few instructions before next()
 * returns can still be raised by the caller's eval loop; interrupts raised
 * from other Python threads cannot (they need the GIL, which next() holds
 * from its check to its return).
 */
#include "python/binding.h"

#include "core/consumer.h"

#include <stddef.h>
#include <structmember.h> /* T_PYSSIZET, READONLY: __weaklistoffset__ (Python >= 3.10) */

typedef struct CvIteratorObject {
    PyObject_HEAD
    CvConsumer c;         /* the pipeline and the consumer's state (core/consumer.h) */
    PyObject *source;     /* strong until released: the engine Dataset the pipeline runs */
    PyObject *describe;  /* strong or NULL: describe(raw) -> what stats() returns */
    PyObject *structure; /* strong until resolved; see make_iterator's doc */
    PyObject *pack;      /* strong, for kind 2 */
    PyObject *held;      /* strong: an element held back by an interrupt, returned next */
    PyObject *owner;     /* strong or NULL: the Python dataset (save/restore), or once
                          * exhausted checkpoint.finished_print of it */
    CvElement pending;   /* owned when has_pending: interrupted while converting */
    bool has_pending;
    int kind;            /* -1 unresolved, 0 single, 1 tuple, 2 pack */
    bool eager;          /* leaves as the module's EagerTensor (plain iteration), else NumPy */
    bool may_block;
    PyObject *module;    /* strong */
    PyObject *weakrefs;  /* weakref.ref(iterator): a monitor never keeps it alive */
} CvIteratorObject;

/* 0: `use` is allowed now; 1: save at the end (nothing to save); -1: refused,
 * raised as the Python error of its kind (core/consumer.h). */
static int refused(CvIteratorObject *self, CvConsumerUse use)
{
    const char *message;
    CvConsumerAnswer answer = cv_consumer_check(&self->c, use, &message);
    if (message)
        PyErr_SetString(answer == CV_CONSUMER_BAD_STATE ? PyExc_ValueError : PyExc_RuntimeError,
                        message);
    return message ? -1 : answer == CV_CONSUMER_END;
}

/* Garbage collection: the running pipeline counts for the source's wrapper
 * (core/consumer.h), and this object reports the source. GIL held. */
static void account(CvIteratorObject *self)
{
    cv_consumer_count(&self->c, self->source ? &((CvDatasetObject *)self->source)->w : NULL);
}

/* Stop the pipeline with the GIL released: a worker may be waiting for the
 * GIL to finish a Python map function (core/pipeline.h bounds the wait). */
static void iterator_release(CvIteratorObject *self)
{
    cv_consumer_uncount(&self->c);
    if (cv_consumer_finish(&self->c)) { /* after fork(): the parent's, never joined */
        CvPipeline *pipeline = self->c.pipeline; /* read with the GIL */
        CV_UNLOCKED(cv_pipeline_stop(pipeline));
    }
    Py_CLEAR(self->source); /* may free the engine Dataset: last, in a consistent state */
}

/* Dataset.make_iterator (dataset_type.c's table; its doc there): a new
 * Iterator over source, an engine Dataset (a new reference is taken);
 * structure is kept until the first element.
 * cpu_budget: the pool's running threads (0: the CPUs this process may use);
 * algorithm: the autotuner's (CvAutotuneAlgorithm); describe: see stats().
 * statistics false: neither statistics nor autotuner, AUTOTUNE stages at
 * their most (their cost, measured by benchmarks/stats_overhead.py);
 * stats() then raises. owner: the Python dataset (or None), handed to
 * conveyor.data.checkpoint by save/restore. */
PyObject *cv_make_iterator(PyObject *source, PyObject *args, PyObject *kwargs)
{
    PyObject *structure, *describe = Py_None, *owner = Py_None;
    int cpu_budget = 0, algorithm = CV_AUTOTUNE_MODEL, statistics = 1;
    static char *keywords[] = {"structure", "cpu_budget", "algorithm", "describe", "statistics",
                               "owner", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|iiOpO:make_iterator", keywords, &structure,
                                     &cpu_budget, &algorithm, &describe, &statistics, &owner))
        return NULL;
    PyObject *module = cv_module_of(source);
    CvDataset *ds = module ? cv_dataset_of(source) : NULL;
    if (!ds)
        return NULL;
    CvModuleState *st = cv_get_state(module);
    if (atomic_load(&cv_shutting_down)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "conveyor: cannot start an iterator while the interpreter is shutting down");
        return NULL;
    }
    CvIteratorObject *self = PyObject_GC_New(CvIteratorObject, st->iterator_class ? st->iterator_class
                                                                                  : st->iterator_type);
    if (!self)
        return NULL;
    /* Every field past the header zero (NULL, false) but those set here. */
    memset((char *)self + sizeof(PyObject), 0, sizeof(*self) - sizeof(PyObject));
    self->c.fork_generation = cv_fork_generation();
    self->source = Py_NewRef(source);
    self->describe = describe == Py_None ? NULL : Py_NewRef(describe);
    self->structure = Py_NewRef(structure);
    self->owner = owner == Py_None ? NULL : Py_NewRef(owner);
    self->kind = -1;
    self->module = Py_NewRef(module);
    PyObject_GC_Track(self);
    CvPipelineOptions options = {cpu_budget, (CvAutotuneAlgorithm)algorithm, statistics != 0};
    CvStatus s = cv_consumer_start(&self->c, ds, &options, self);
    if (s) {
        Py_DECREF(self);
        return cv_raise_status(st, s);
    }
    self->may_block = cv_pipeline_may_block(self->c.pipeline);
    account(self);
    return (PyObject *)self;
}

static int resolve_structure(CvIteratorObject *self)
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

static PyObject *element_to_python(CvIteratorObject *self, CvModuleState *st, CvElement *e)
{
    if (self->kind < 0 && resolve_structure(self) < 0)
        return NULL;
    if (self->kind == 0) {
        if (e->n != 1) {
            PyErr_Format(PyExc_RuntimeError, "conveyor: expected one component, got %u", e->n);
            return NULL;
        }
        return cv_tensor_to_python(st, &e->t[0], self->eager);
    }
    PyObject *tuple = cv_element_to_tuple(st, e, self->eager);
    if (!tuple || self->kind == 1)
        return tuple;
    PyObject *packed = PyObject_CallOneArg(self->pack, tuple);
    Py_DECREF(tuple);
    return packed;
}

/* The element's Python value; takes e. An interrupt during or right after
 * the conversion keeps the element for the next call (see the top). */
static PyObject *convert(CvIteratorObject *self, CvModuleState *st, CvElement *e)
{
    PyObject *result = element_to_python(self, st, e);
    if (!result && !PyErr_ExceptionMatches(PyExc_Exception)) { /* KeyboardInterrupt, SystemExit */
        cv_element_move(&self->pending, e);
        self->has_pending = true;
        return NULL;
    }
    cv_element_clear(e);
    if (result && PyErr_CheckSignals() < 0) {
        self->held = result;
        return NULL;
    }
    return result;
}

/* CvOutsideHooks for a consumer that keeps the GIL in next(). */
static void *gil_leave(void)
{
    return PyEval_SaveThread();
}

static void gil_enter(void *token)
{
    PyEval_RestoreThread(token);
}

/* At the end (or close) the dataset is needed only for the fingerprint of
 * a "finished" state: keep what conveyor.data.checkpoint.finished_print
 * makes of it instead (the fingerprint if known, else the description
 * walked with its arrays by reference, hashed only if the state is saved),
 * so that a finished iterator kept somewhere does not keep the pipeline and
 * the Python objects its functions close over alive, and no array is read
 * at the end of every epoch. Closed: nothing to save. Called with no
 * exception set. */
static void settle_owner(CvIteratorObject *self)
{
    if (!self->owner || PyBytes_Check(self->owner))
        return;
    PyObject *print = NULL;
    if (self->c.exhausted) {
        PyObject *mod = PyImport_ImportModule("conveyor.data.checkpoint");
        print = mod ? PyObject_CallMethod(mod, "finished_print", "O", self->owner) : NULL;
        Py_XDECREF(mod);
        if (!print)
            PyErr_Clear(); /* no fingerprint: a finished state then restores anywhere */
    }
    Py_XSETREF(self->owner, print);
}

static PyObject *iterator_next(PyObject *op)
{
    CvIteratorObject *self = (CvIteratorObject *)op;
    CvModuleState *st = cv_get_state(self->module);
    if (refused(self, CV_USE_NEXT) < 0)
        return NULL;
    if (self->held) { /* held back by an interrupt: it comes first */
        PyObject *held = self->held;
        self->held = NULL;
        return held;
    }
    CvElement e = {0};
    if (self->has_pending) {
        cv_element_move(&e, &self->pending);
        self->has_pending = false;
        return convert(self, st, &e);
    }
    if (!self->c.live)
        return NULL; /* exhausted or closed: StopIteration, sticky */
    bool end = false;
    CvStatus s;
    CvPipeline *pipeline = self->c.pipeline;
    self->c.busy = true;
    /* With the GIL held, only a read waiting on a pipe lets go of it and
     * checks for signals, in slices (io/file.c); so does an AUTOTUNE stage
     * run inline, which answers try_next by running its input. The check
     * stays for wait(), which runs with the GIL released; nested iteration
     * restores the outer one. */
    bool would_block = false;
    CvInterruptSlot outer = cv_set_interrupt_check(cv_check_signals, NULL);
    CvOutsideHooks outer_hooks = cv_set_outside_hooks((CvOutsideHooks){gil_leave, gil_enter});
    s = self->may_block ? cv_pipeline_try_next(pipeline, &e, &end, &would_block)
                        : cv_pipeline_next(pipeline, &e, &end);
    cv_set_outside_hooks(outer_hooks);
    if (!s && would_block)
        CV_UNLOCKED(s = cv_pipeline_wait(pipeline, &e, &end));
    cv_set_interrupt_check(outer.fn, outer.arg);
    self->c.busy = false;
    if (self->c.close_requested || (!s && end)) {
        cv_element_clear(&e);
        self->c.exhausted = !self->c.close_requested;
        iterator_release(self);
        settle_owner(self);
        if (s)
            return cv_raise_status(st, s);
        return NULL;
    }
    if (s)
        return cv_raise_status(st, s);
    return convert(self, st, &e);
}

static PyObject *iterator_close(PyObject *op, PyObject *unused)
{
    (void)unused;
    CvIteratorObject *self = (CvIteratorObject *)op;
    if (self->c.busy) {
        /* Another thread is inside next(): wake it; it frees the engine
         * iterator when it returns. Cancel keeps the GIL: the thread in next()
         * may free the tree as soon as it gets the GIL back, so the tree must
         * not be walked without it. Cancel only takes short engine mutexes,
         * and no engine thread waits for the GIL while holding one. */
        self->c.close_requested = true;
        if (!cv_consumer_forked_away(&self->c))
            cv_pipeline_cancel(self->c.pipeline);
    } else {
        iterator_release(self);
    }
    Py_CLEAR(self->held); /* closed: nothing more comes out */
    if (!self->c.busy)
        Py_CLEAR(self->owner);
    cv_element_clear(&self->pending);
    self->has_pending = false;
    Py_RETURN_NONE;
}

/* Visits what the object holds directly, the source included: the
 * pipeline's callables are reported by the source wrapper while this
 * iterator is accounted for (see account()); the engine iterators, which
 * worker threads make and free without the GIL, are never walked. */
static int iterator_traverse(PyObject *op, visitproc visit, void *arg)
{
    CvIteratorObject *self = (CvIteratorObject *)op;
    Py_VISIT(Py_TYPE(op));
    Py_VISIT(self->source);
    Py_VISIT(self->structure);
    Py_VISIT(self->pack);
    Py_VISIT(self->held);
    Py_VISIT(self->owner);
    Py_VISIT(self->describe);
    Py_VISIT(self->module);
    return 0;
}

/* The gc finalizes its garbage before it clears any: cancel the pipeline,
 * GIL held, so its workers call none of its functions once cleared (pyfunc.c's
 * call_reported). Also runs first in a subclass instance's dealloc. */
static void iterator_finalize(PyObject *op)
{
    CvIteratorObject *self = (CvIteratorObject *)op;
    if (self->c.pipeline && !cv_consumer_forked_away(&self->c))
        cv_pipeline_cancel(self->c.pipeline);
}

/* Then the gc clears it (no thread is in its next(), whose caller holds it):
 * stop the pipeline, letting go of the GIL with a bounded wait
 * (iterator_release), also for a collection on one of its workers. */
static int iterator_clear(PyObject *op)
{
    CvIteratorObject *self = (CvIteratorObject *)op;
    if (!self->c.busy)
        iterator_release(self);
    Py_CLEAR(self->structure);
    Py_CLEAR(self->pack);
    Py_CLEAR(self->held);
    Py_CLEAR(self->owner);
    Py_CLEAR(self->describe);
    return 0;
}

static void iterator_dealloc(PyObject *op)
{
    CvIteratorObject *self = (CvIteratorObject *)op;
    PyTypeObject *tp = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    if (self->weakrefs)
        PyObject_ClearWeakRefs(op);
    iterator_release(self);
    cv_consumer_clear(&self->c);
    cv_element_clear(&self->pending);
    iterator_clear(op);
    Py_CLEAR(self->module);
    tp->tp_free(op);
    Py_DECREF(tp);
}

/* stats(): what the pipeline did so far (core/report.h), passed through
 * describe() when make_iterator got one (the Python layer names the
 * stages). Safe while another thread is in next(): the report reads
 * counters and takes the stages' short locks only. Valid after the end
 * too: the nodes keep the totals of finished iterators. */
static PyObject *iterator_stats(PyObject *op, PyObject *unused)
{
    (void)unused;
    CvIteratorObject *self = (CvIteratorObject *)op;
    if (refused(self, CV_USE_STATS) < 0)
        return NULL;
    CvReport r;
    cv_report_init(&r);
    PyObject *raw = cv_report_to_python(cv_get_state(self->module), &r,
                                        cv_pipeline_report(self->c.pipeline, !self->c.live, &r));
    if (!raw || !self->describe)
        return raw;
    PyObject *described = PyObject_CallOneArg(self->describe, raw);
    Py_DECREF(raw);
    return described;
}

/* ---- exact resume: the engine's part (conveyor/data/checkpoint.py does the rest) */

/* _save_engine() -> bytes: the engine iterator's frames, as of the last
 * element next() returned; None once the end was reached. Kernels may wait
 * for work in flight (a Python function), so the GIL is let go. */
static PyObject *iterator_save_engine(PyObject *op, PyObject *unused)
{
    (void)unused;
    CvIteratorObject *self = (CvIteratorObject *)op;
    int answer = refused(self, CV_USE_SAVE);
    if (answer)
        return answer < 0 ? NULL : Py_NewRef(Py_None); /* at the end: None */
    CvStateWriter w;
    cv_state_writer_init(&w);
    CvStatus s;
    self->c.busy = true;
    CvPipeline *pipeline = self->c.pipeline;
    CV_UNLOCKED(s = cv_pipeline_save(pipeline, &w));
    self->c.busy = false;
    PyObject *result = s ? NULL : PyBytes_FromStringAndSize(w.data, (Py_ssize_t)w.len);
    cv_state_writer_clear(&w);
    return s ? cv_raise_status(cv_get_state(self->module), s) : result;
}

/* _restore_engine(bytes or None): put a new iterator (no next() yet) where
 * the state says; None: at the end. A failed restore leaves a new iterator
 * at the start (never a half-restored one). */
static PyObject *iterator_restore_engine(PyObject *op, PyObject *state)
{
    CvIteratorObject *self = (CvIteratorObject *)op;
    CvModuleState *st = cv_get_state(self->module);
    if (refused(self, CV_USE_RESTORE) < 0)
        return NULL;
    /* Restoring a used iterator (tf.train.Checkpoint.restore mid-epoch):
     * what it holds is dropped; the pipeline restarts its root first. */
    Py_CLEAR(self->held);
    cv_element_clear(&self->pending);
    self->has_pending = false;
    if (state == Py_None) { /* a finished iterator's state */
        self->c.exhausted = true;
        iterator_release(self);
        Py_RETURN_NONE;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(state, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    CvStateReader r;
    cv_state_reader_init(&r, view.buf, (size_t)view.len);
    CvStatus s;
    self->c.busy = true;
    CvPipeline *pipeline = self->c.pipeline;
    cv_consumer_uncount(&self->c); /* a failed restore may stop it */
    CV_UNLOCKED(s = cv_pipeline_restore(pipeline, &r)); /* on failure: fresh, or stopped */
    self->c.busy = false;
    account(self);
    if (s && !cv_pipeline_running(pipeline))
        iterator_release(self); /* no fresh one could be made */
    PyBuffer_Release(&view);
    return s ? cv_raise_status(st, s) : Py_NewRef(Py_None);
}

/* _held() -> the element an interrupt held back (it stays held), or None.
 * _hold(element): make element the first that next() returns. */
static PyObject *iterator_held(PyObject *op, PyObject *unused)
{
    (void)unused;
    CvIteratorObject *self = (CvIteratorObject *)op;
    if (!self->held && self->has_pending) {
        CvElement e = {0};
        cv_element_move(&e, &self->pending);
        self->has_pending = false;
        /* interrupted again: convert keeps it, pending or held */
        PyObject *value = convert(self, cv_get_state(self->module), &e);
        if (!value)
            return NULL;
        self->held = value;
    }
    return Py_NewRef(self->held ? self->held : Py_None);
}

static PyObject *iterator_hold(PyObject *op, PyObject *element)
{
    CvIteratorObject *self = (CvIteratorObject *)op;
    if (refused(self, CV_USE_HOLD) < 0)
        return NULL;
    Py_XSETREF(self->held, Py_NewRef(element));
    Py_RETURN_NONE;
}

static PyMethodDef iterator_methods[] = {
    {"close", iterator_close, METH_NOARGS,
     "Stop the iterator now: cancel its work, join its threads and free its buffers."},
    {"stats", iterator_stats, METH_NOARGS,
     "What the pipeline did so far, per stage (conveyor.data.experimental.PipelineStats)."},
    {"_save_engine", iterator_save_engine, METH_NOARGS, "The engine's frames (bytes) or None at the end."},
    {"_restore_engine", iterator_restore_engine, METH_O, "Restore the engine's frames (or None: the end)."},
    {"_held", iterator_held, METH_NOARGS, "The element an interrupt held back, or None."},
    {"_hold", iterator_hold, METH_O, "Make this the next element returned."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef iterator_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(CvIteratorObject, weakrefs), READONLY, NULL},
    {"_owner", T_OBJECT, offsetof(CvIteratorObject, owner), READONLY,
     "The Python dataset (or, once finished, its fingerprint) for save and restore."},
    {"eager", T_BOOL, offsetof(CvIteratorObject, eager), 0,
     "True: leaves come out as the type set_eager_type() gave (an ndarray subclass with numpy(), "
     "0-d for scalars and scalar strings); False (the default): NumPy arrays, scalars and bytes."},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot iterator_slots[] = {
    {Py_tp_members, iterator_members},
    {Py_tp_dealloc, iterator_dealloc},
    {Py_tp_traverse, iterator_traverse},
    {Py_tp_clear, iterator_clear},
    {Py_tp_finalize, iterator_finalize},
    {Py_tp_iter, PyObject_SelfIter},
    {Py_tp_iternext, iterator_next},
    {Py_tp_methods, iterator_methods},
    {Py_tp_doc, "An iterator over a conveyor dataset; yields NumPy arrays."},
    {0, NULL},
};

PyType_Spec cv_iterator_spec = {
    .name = "conveyor._engine.Iterator",
    .basicsize = sizeof(CvIteratorObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_BASETYPE,
    .slots = iterator_slots,
};

/* ------------------------------------------------------- module functions */

/* The atexit hook, run before finalization: from now on no engine thread
 * may enter Python (cv_shutting_down); then core/pipeline.h's shutdown_all
 * cancels the live pipelines, waits up to `timeout` seconds (GIL released)
 * for Python calls in flight, and settles each (settle_at_exit). */
static int python_calls_in_flight(void)
{
    return atomic_load(&cv_python_calls);
}

/* Stopped here when the calls drained (core/consumer.h says the rest). */
static void settle_at_exit(void *owner, bool drained)
{
    CvIteratorObject *self = owner;
    Py_INCREF(self); /* release lets go of the GIL: another thread may drop it */
    if (cv_consumer_settle_at_exit(&self->c, drained))
        iterator_release(self);
    Py_DECREF(self);
}

static PyObject *iterator_shutdown(PyObject *module, PyObject *args)
{
    (void)module;
    double timeout = 0.5;
    if (!PyArg_ParseTuple(args, "|d:shutdown", &timeout))
        return NULL;
    atomic_store(&cv_shutting_down, 1);
    CvOutsideHooks outer = cv_set_outside_hooks((CvOutsideHooks){gil_leave, gil_enter});
    cv_pipeline_shutdown_all((int64_t)(timeout * 1e9), python_calls_in_flight, settle_at_exit);
    cv_set_outside_hooks(outer);
    Py_RETURN_NONE;
}

PyMethodDef cv_iterator_functions[] = {
    {"shutdown", iterator_shutdown, METH_VARARGS,
     "shutdown(timeout=0.5): stop all live iterators (run at interpreter exit)."},
    {NULL, NULL, 0, NULL},
};
