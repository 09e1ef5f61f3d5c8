/* Python callables as engine functions and sources.
 *
 * A map function or generator runs on whichever thread calls it (a worker
 * or the consumer). The thread takes the GIL for the call only, converts
 * the element in and the result out, and lets go. No engine lock is held
 * across these calls (see core/stage.h).
 *
 * Shutdown: once the interpreter starts finalizing, a thread that asks for
 * the GIL may hang or be killed. cv_shutting_down is set by the atexit hook
 * (_engine.shutdown) before live iterators are closed; from then on engine
 * threads never enter Python, and calls fail with CV_CANCELLED.
 */
#include "python/binding.h"

atomic_int cv_shutting_down;
atomic_int cv_python_calls;

/* Enter/leave a call into Python from an engine thread. The count goes up
 * before the shutdown check, so the atexit hook, which sets the flag and then
 * waits for the count to drain, never misses a call on its way in. */
int cv_python_enter(void)
{
    atomic_fetch_add(&cv_python_calls, 1);
    if (cv_python_unavailable()) {
        atomic_fetch_sub(&cv_python_calls, 1);
        return -1;
    }
    return 0;
}

void cv_python_leave(void)
{
    atomic_fetch_sub(&cv_python_calls, 1);
}

/* In a fork() child no engine thread exists: nothing is inside Python. */
void cv_python_after_fork_child(void)
{
    atomic_store(&cv_python_calls, 0);
}

int cv_python_unavailable(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    return atomic_load(&cv_shutting_down) || Py_IsFinalizing();
#else
    return atomic_load(&cv_shutting_down) || _Py_IsFinalizing();
#endif
}

int cv_check_signals(void *arg)
{
    (void)arg;
    PyGILState_STATE g = PyGILState_Ensure();
    int stop = PyErr_CheckSignals() < 0;
    PyGILState_Release(g);
    return stop;
}

/* Engine threads keep one Python thread state for their whole life. Without
 * this, every PyGILState_Ensure/Release pair on a thread Python does not
 * know creates and destroys a thread state (an mmap, a munmap and a page
 * fault per element). The pin is one extra Ensure; the engine's thread-exit
 * hook undoes it, which deletes the thread state. */
static _Thread_local int pinned;

PyGILState_STATE cv_gil_acquire(void)
{
    int fresh = PyGILState_GetThisThreadState() == NULL;
    PyGILState_STATE g = PyGILState_Ensure();
    if (fresh) {
        (void)PyGILState_Ensure();
        pinned = 1;
    }
    return g;
}

void cv_gil_thread_exit(void)
{
    if (!pinned || cv_python_enter() < 0)
        return; /* at finalization the interpreter frees thread states itself */
    pinned = 0;
    PyGILState_STATE g = PyGILState_Ensure();
    PyGILState_Release(PyGILState_LOCKED); /* drop the pin, keep the GIL */
    PyGILState_Release(g);                 /* the last one: deletes the thread state */
    cv_python_leave();
}

/* How results can skip the Python-level converter once the first result has
 * shown their form: a single array, or a plain tuple of arrays, of the same
 * dtypes as the first. */
enum { FAST_UNKNOWN, FAST_SINGLE, FAST_TUPLE, FAST_NONE };

/* The head of every wrapped Python callable. */
typedef struct {
    PyObject *module; /* strong: keeps the module state alive */
    char *name;       /* stage name for messages, owned */
} PyWrapper;

typedef struct {
    PyWrapper base;
    PyObject *fn;          /* strong: called as fn(*components), or fn(epoch, index, *components) */
    PyObject *out_convert; /* strong: result -> list of arrays, checks structure */
    int with_id;           /* pass the element's CvElementId first */
    /* Written under the GIL on the first call only. */
    int fast;
    Py_ssize_t fast_n;
    CvDtype fast_dtypes[64];
} PyFunction;

static CvStatus python_gone(const char *name)
{
    return cv_error(CV_CANCELLED, "%s: the Python interpreter is shutting down", name);
}

static int is_array_like(PyObject *o)
{
    return PyArray_Check(o) || PyArray_IsScalar(o, Generic);
}

static CvDtype dtype_of(PyObject *o)
{
    CvDtype d = CV_NUM_DTYPES;
    PyArray_Descr *descr = PyArray_Check(o) ? PyArray_DESCR((PyArrayObject *)o) : NULL;
    if (descr) {
        if (cv_dtype_from_descr(descr, &d) < 0)
            d = CV_NUM_DTYPES;
        return d;
    }
    descr = PyArray_DescrFromScalar(o);
    if (descr) {
        if (cv_dtype_from_descr(descr, &d) < 0)
            d = CV_NUM_DTYPES;
        Py_DECREF(descr);
    } else {
        PyErr_Clear();
    }
    return d;
}

/* Does `result` match the learned fast form? Only numeric dtypes qualify. */
static int fast_match(PyFunction *f, PyObject *result)
{
    if (f->fast == FAST_SINGLE)
        return is_array_like(result) && dtype_of(result) == f->fast_dtypes[0];
    if (f->fast != FAST_TUPLE || !PyTuple_CheckExact(result) || PyTuple_GET_SIZE(result) != f->fast_n)
        return 0;
    for (Py_ssize_t i = 0; i < f->fast_n; i++) {
        PyObject *o = PyTuple_GET_ITEM(result, i);
        if (!is_array_like(o) || dtype_of(o) != f->fast_dtypes[i])
            return 0;
    }
    return 1;
}

static void learn_fast_form(PyFunction *f, PyObject *result)
{
    f->fast = FAST_NONE;
    if (is_array_like(result)) {
        CvDtype d = dtype_of(result);
        if (d != CV_STRING && d != CV_NUM_DTYPES) {
            f->fast = FAST_SINGLE;
            f->fast_dtypes[0] = d;
        }
        return;
    }
    if (!PyTuple_CheckExact(result) || PyTuple_GET_SIZE(result) > 64)
        return;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(result); i++) {
        PyObject *o = PyTuple_GET_ITEM(result, i);
        CvDtype d = is_array_like(o) ? dtype_of(o) : CV_NUM_DTYPES;
        if (d == CV_STRING || d == CV_NUM_DTYPES)
            return;
        f->fast_dtypes[i] = d;
    }
    f->fast = FAST_TUPLE;
    f->fast_n = PyTuple_GET_SIZE(result);
}

/* One call, GIL held. */
/* (epoch, index, *components) */
static PyObject *args_with_id(CvModuleState *st, const CvElement *in, const CvElementId *id)
{
    PyObject *args = PyTuple_New((Py_ssize_t)in->n + 2);
    if (!args)
        return NULL;
    PyObject *epoch = PyLong_FromUnsignedLongLong(id->epoch);
    PyObject *index = PyLong_FromUnsignedLongLong(id->index);
    PyTuple_SET_ITEM(args, 0, epoch);
    PyTuple_SET_ITEM(args, 1, index);
    if (!epoch || !index)
        goto fail;
    for (uint32_t i = 0; i < in->n; i++) {
        PyObject *item = cv_tensor_to_python(st, &in->t[i]);
        if (!item)
            goto fail;
        PyTuple_SET_ITEM(args, (Py_ssize_t)i + 2, item);
    }
    return args;
fail:
    Py_DECREF(args);
    return NULL;
}

/* One call, GIL held. */
static CvStatus call_locked(PyFunction *f, CvModuleState *st, const CvElement *in,
                            const CvElementId *id, CvElement *out)
{
    CvStatus s = CV_STATUS_OK;
    PyObject *args = NULL, *result = NULL, *converted = NULL;
    args = f->with_id ? args_with_id(st, in, id) : cv_element_to_tuple(st, in);
    if (!args)
        goto pyerror;
    result = PyObject_Call(f->fn, args, NULL);
    if (!result)
        goto pyerror;
    if (fast_match(f, result)) {
        if (f->fast == FAST_SINGLE) {
            if (!(s = cv_element_init(out, 1)))
                s = cv_tensor_from_pyobject(st, result, &out->t[0]);
        } else {
            s = cv_element_from_sequence(st, result, out);
        }
    } else {
        int first = f->fast == FAST_UNKNOWN;
        converted = PyObject_CallOneArg(f->out_convert, result);
        if (!converted)
            goto pyerror;
        s = cv_element_from_sequence(st, converted, out);
        if (!s && first)
            learn_fast_form(f, result);
    }
    if (s) {
        cv_element_clear(out);
        s = cv_status_prefix(s, "%s: ", f->base.name);
    }
    goto done;
pyerror:
    s = cv_status_from_pyerr(f->base.name);
done:
    Py_XDECREF(args);
    Py_XDECREF(result);
    Py_XDECREF(converted);
    return s;
}

static void function_call_chunk(void *ctx, const CvElement *in, const CvElementId *ids,
                                CvElement *out, CvStatus *status, int n)
{
    PyFunction *f = ctx;
    if (cv_python_enter() < 0) {
        for (int i = 0; i < n; i++)
            status[i] = python_gone(f->base.name);
        return;
    }
    PyGILState_STATE g = cv_gil_acquire();
    CvModuleState *st = cv_get_state(f->base.module);
    for (int i = 0; i < n; i++)
        status[i] = call_locked(f, st, &in[i], &ids[i], &out[i]);
    PyGILState_Release(g);
    cv_python_leave();
}

static CvStatus function_call(void *ctx, const CvElement *in, const CvElementId *id,
                              CvElement *out)
{
    CvStatus s;
    function_call_chunk(ctx, in, id, out, &s, 1);
    return s;
}

/* Free a wrapper: drop its references (module, a, b; NULLs skipped) from
 * any thread, or leak them once Python is no longer available (interpreter
 * exit), then free the name and the struct. */
static void wrapper_free(PyWrapper *w, PyObject *a, PyObject *b)
{
    if (cv_python_enter() == 0) {
        PyGILState_STATE g = cv_gil_acquire();
        Py_XDECREF(a);
        Py_XDECREF(b);
        Py_XDECREF(w->module);
        PyGILState_Release(g);
        cv_python_leave();
    }
    PyMem_RawFree(w->name);
    PyMem_RawFree(w);
}

static void function_release(void *ctx)
{
    PyFunction *f = ctx;
    wrapper_free(&f->base, f->fn, f->out_convert);
}

/* Allocate a zeroed wrapper of `size` bytes holding module and a copy of
 * name; NULL (with *error set) on failure. */
static void *wrapper_new(size_t size, PyObject *module, PyObject *name, CvStatus *error)
{
    const char *text = PyUnicode_AsUTF8(name);
    if (!text) {
        PyErr_Clear();
        *error = cv_error(CV_INVALID_ARGUMENT, "stage name must be a str");
        return NULL;
    }
    size_t n = strlen(text) + 1;
    PyWrapper *w = PyMem_RawCalloc(1, size);
    char *copy = PyMem_RawMalloc(n);
    if (!w || !copy) {
        PyMem_RawFree(w);
        PyMem_RawFree(copy);
        *error = cv_error_nomem();
        return NULL;
    }
    memcpy(copy, text, n);
    w->name = copy;
    w->module = Py_NewRef(module);
    return w;
}

CvStatus cv_function_from_python(PyObject *module, PyObject *fn, PyObject *out_convert,
                                 PyObject *name, int with_id, CvFunction *out)
{
    CvStatus s = CV_STATUS_OK;
    PyFunction *f = wrapper_new(sizeof(*f), module, name, &s);
    if (!f)
        return s;
    f->fn = Py_NewRef(fn);
    f->out_convert = Py_NewRef(out_convert);
    f->with_id = with_id;
    *out = (CvFunction){function_call, function_call_chunk, function_release, f};
    return CV_STATUS_OK;
}

/* Dataset functions (interleave's map_func): fn(*components) returns an
 * engine Dataset (the Python layer unwraps the user's conveyor Dataset). */
typedef struct {
    PyWrapper base;
    PyObject *fn;
} PyDatasetFunction;

static CvStatus dataset_function_call(void *ctx, const CvElement *in, CvDataset **out)
{
    PyDatasetFunction *f = ctx;
    CvStatus s = CV_STATUS_OK;
    if (cv_python_enter() < 0)
        return python_gone(f->base.name);
    PyGILState_STATE g = cv_gil_acquire();
    PyObject *args = cv_element_to_tuple(cv_get_state(f->base.module), in);
    PyObject *result = args ? PyObject_Call(f->fn, args, NULL) : NULL;
    CvDataset *ds = result ? cv_dataset_arg(f->base.module, result) : NULL;
    if (ds)
        *out = cv_dataset_ref(ds);
    else
        s = cv_status_from_pyerr(f->base.name);
    Py_XDECREF(args);
    Py_XDECREF(result);
    PyGILState_Release(g);
    cv_python_leave();
    return s;
}

static void dataset_function_release(void *ctx)
{
    PyDatasetFunction *f = ctx;
    wrapper_free(&f->base, f->fn, NULL);
}

CvStatus cv_dataset_function_from_python(PyObject *module, PyObject *fn, PyObject *name,
                                         CvDatasetFunction *out)
{
    CvStatus s = CV_STATUS_OK;
    PyDatasetFunction *f = wrapper_new(sizeof(*f), module, name, &s);
    if (!f)
        return s;
    f->fn = Py_NewRef(fn);
    *out = (CvDatasetFunction){dataset_function_call, dataset_function_release, f};
    return CV_STATUS_OK;
}

/* Sources: factory() returns a Python iterator whose items are lists of
 * arrays already checked against the element signature. */
typedef struct {
    PyWrapper base;
    PyObject *factory;
} PySource;

static CvStatus source_open(void *ctx, void **state)
{
    PySource *src = ctx;
    if (cv_python_enter() < 0)
        return python_gone(src->base.name);
    PyGILState_STATE g = cv_gil_acquire();
    CvStatus s = CV_STATUS_OK;
    PyObject *it = PyObject_CallNoArgs(src->factory);
    if (it)
        Py_SETREF(it, PyObject_GetIter(it));
    if (!it)
        s = cv_status_from_pyerr(src->base.name);
    *state = it;
    PyGILState_Release(g);
    cv_python_leave();
    return s;
}

static CvStatus source_next(void *ctx, void *state, CvElement *out, bool *end)
{
    PySource *src = ctx;
    if (cv_python_enter() < 0)
        return python_gone(src->base.name);
    PyGILState_STATE g = cv_gil_acquire();
    CvStatus s = CV_STATUS_OK;
    PyObject *item = PyIter_Next((PyObject *)state);
    *end = false;
    if (!item) {
        if (PyErr_Occurred())
            s = cv_status_from_pyerr(src->base.name);
        else
            *end = true;
    } else {
        s = cv_element_from_sequence(cv_get_state(src->base.module), item, out);
        if (s)
            s = cv_status_prefix(s, "%s: ", src->base.name);
        Py_DECREF(item);
    }
    PyGILState_Release(g);
    cv_python_leave();
    return s;
}

static void source_close(void *ctx, void *state)
{
    (void)ctx;
    if (!state || cv_python_enter() < 0)
        return;
    PyGILState_STATE g = cv_gil_acquire();
    Py_DECREF((PyObject *)state);
    PyGILState_Release(g);
    cv_python_leave();
}

static void source_release(void *ctx)
{
    PySource *src = ctx;
    wrapper_free(&src->base, src->factory, NULL);
}

CvStatus cv_source_from_python(PyObject *module, PyObject *factory, PyObject *name, CvSource *out)
{
    CvStatus s = CV_STATUS_OK;
    PySource *src = wrapper_new(sizeof(*src), module, name, &s);
    if (!src)
        return s;
    src->factory = Py_NewRef(factory);
    *out = (CvSource){source_open, source_next, source_close, source_release, src};
    return CV_STATUS_OK;
}
