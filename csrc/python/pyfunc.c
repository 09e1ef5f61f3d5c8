/* Python callables as engine functions, dataset functions and sources. A
 * map function or generator runs on whichever thread calls it (a worker or
 * the consumer), inside the GIL bridge (gil.c): the thread takes the GIL
 * for the call only, converts the element in and the result out, and lets
 * go. Once Python is unavailable (interpreter exit) calls fail with
 * CV_CANCELLED and references are leaked rather than dropped. Every wrapper
 * reports the Python objects it holds through its callback's traverse hook,
 * so a cycle through a pipeline can be collected (when it may be called:
 * core/wrapper.h). */
#include "python/binding.h"

#include "core/result_form.h"

/* The head of every wrapper of Python callables. */
typedef struct {
    PyObject *module; /* strong: keeps the module state alive */
    char *name;       /* stage name for messages, owned (malloc) */
    PyObject *fn;     /* strong: the function, or a source's factory */
    PyObject *aux;    /* strong or NULL: an element function's out_convert */
    CvPayloadList raised; /* the exceptions its calls raised that statuses hold */
} CvPyCallable;

/* A map function, filter predicate or group_by_window key/size function:
 * element in, element out. base.fn is called as fn(*components), or
 * fn(epoch, index, *components); base.aux converts its result to a list of
 * arrays, checking the structure. */
typedef struct {
    CvPyCallable base;
    int with_id; /* pass the element's CvElementId first */
    /* Results of the first result's form skip base.aux (core/result_form.h);
     * learned under the GIL on the first call only. */
    CvResultForm form;
} CvPyElementFunction;

static CvStatus python_gone(const char *name)
{
    return cv_error(CV_CANCELLED, "%s: the Python interpreter is shutting down", name);
}

/* The engine dtype of an array or NumPy scalar: CV_NUM_DTYPES for any
 * other object or a dtype the engine lacks. */
static CvDtype dtype_of(PyObject *o)
{
    CvDtype d = CV_NUM_DTYPES;
    PyArray_Descr *descr = PyArray_Check(o) ? PyArray_DESCR((PyArrayObject *)o) : NULL;
    Py_XINCREF(descr); /* one new reference, as a scalar's is */
    if (!descr && PyArray_IsScalar(o, Generic) && !(descr = PyArray_DescrFromScalar(o)))
        PyErr_Clear(); /* a scalar without a descr: not an engine dtype */
    if (descr && cv_dtype_from_descr(descr, &d) < 0)
        d = CV_NUM_DTYPES;
    Py_XDECREF(descr);
    return d;
}

/* The kind and dtypes of a result as core/result_form.h compares them: one
 * array or NumPy scalar, or a plain tuple; the number of dtypes, or -1 for
 * anything else. */
static int result_kind(PyObject *result, CvResultFormKind *kind, CvDtype *dtypes)
{
    if (PyArray_Check(result) || PyArray_IsScalar(result, Generic)) {
        *kind = CV_FORM_SINGLE;
        dtypes[0] = dtype_of(result);
        return 1;
    }
    *kind = CV_FORM_TUPLE;
    if (!PyTuple_CheckExact(result) || PyTuple_GET_SIZE(result) > CV_RESULT_FORM_MAX)
        return -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(result); i++)
        dtypes[i] = dtype_of(PyTuple_GET_ITEM(result, i));
    return (int)PyTuple_GET_SIZE(result);
}

/* fn(*argv), GIL held, for an fn a wrapper reports. A collection that finds
 * fn garbage cancels the pipelines calling it (their Iterators' finalizers)
 * before it clears fn and may let go of the GIL: a cancelled thread does not
 * call (NULL, no exception: CV_CANCELLED). A reference no traverse reports
 * keeps fn, and all it refers to, reachable during the call. */
static PyObject *call_reported(PyObject *fn, PyObject *const *argv, size_t n)
{
    if (cv_blocking_cancelled())
        return NULL;
    Py_INCREF(fn);
    PyObject *r = PyObject_Vectorcall(fn, argv, n, NULL);
    Py_DECREF(fn);
    return r;
}

/* (epoch, index, *components), GIL held: one tuple, every Python map
 * function's arguments. */
static PyObject *args_with_id(CvModuleState *st, const CvElement *in, const CvElementId *id)
{
    PyObject *head = Py_BuildValue("(KK)", (unsigned long long)id->epoch,
                                   (unsigned long long)id->index);
    PyObject *components = head ? cv_element_to_tuple(st, in, false) : NULL;
    PyObject *args = components ? PySequence_Concat(head, components) : NULL;
    Py_XDECREF(head);
    Py_XDECREF(components);
    return args;
}

/* One call, GIL held. */
static CvStatus call_locked(CvPyElementFunction *f, CvModuleState *st, const CvElement *in,
                            const CvElementId *id, CvElement *out)
{
    CvStatus s = CV_STATUS_OK;
    PyObject *args = NULL, *result = NULL, *converted = NULL;
    args = f->with_id ? args_with_id(st, in, id) : cv_element_to_tuple(st, in, false);
    if (!args)
        goto pyerror;
    result = call_reported(f->base.fn, &PyTuple_GET_ITEM(args, 0), (size_t)PyTuple_GET_SIZE(args));
    if (!result)
        goto pyerror;
    CvResultFormKind kind = CV_FORM_NONE;
    CvDtype dtypes[CV_RESULT_FORM_MAX];
    int n = f->form.kind == CV_FORM_NONE ? -1 : result_kind(result, &kind, dtypes);
    if (cv_result_form_matches(&f->form, kind, dtypes, n)) {
        if (kind == CV_FORM_SINGLE) {
            if (!(s = cv_element_init(out, 1)))
                s = cv_tensor_from_pyobject(st, result, &out->t[0]);
        } else {
            s = cv_element_from_sequence(st, result, out);
        }
    } else {
        int first = f->form.kind == CV_FORM_UNKNOWN;
        converted = call_reported(f->base.aux, &result, 1);
        if (!converted)
            goto pyerror;
        s = cv_element_from_sequence(st, converted, out);
        if (!s && first)
            cv_result_form_learn(&f->form, kind, dtypes, n);
    }
    if (s) {
        cv_element_clear(out);
        s = cv_status_prefix(s, "%s (element %llu): ", f->base.name,
                             (unsigned long long)id->index);
    }
    goto done;
pyerror: {
    /* The element's index in its pass, as a native op's error names it (ops/program.c). */
    char where[512];
    snprintf(where, sizeof(where), "%s (element %llu)", f->base.name,
             (unsigned long long)id->index);
    s = cv_status_from_pyerr(where, &f->base.raised);
}
done:
    Py_XDECREF(args);
    Py_XDECREF(result);
    Py_XDECREF(converted);
    return s;
}

static void element_function_call_chunk(void *ctx, const CvElement *in, const CvElementId *ids,
                                CvElement *out, CvStatus *status, int n)
{
    CvPyElementFunction *f = ctx;
    CvPythonCall call;
    if (cv_python_begin(&call) < 0) {
        for (int i = 0; i < n; i++)
            status[i] = python_gone(f->base.name);
        return;
    }
    CvModuleState *st = cv_get_state(f->base.module);
    for (int i = 0; i < n; i++)
        status[i] = call_locked(f, st, &in[i], &ids[i], &out[i]);
    cv_python_end(&call);
}

static CvStatus element_function_call(void *ctx, const CvElement *in, const CvElementId *id,
                              CvElement *out)
{
    CvStatus s;
    element_function_call_chunk(ctx, in, id, out, &s, 1);
    return s;
}

/* The release hook of every wrapper: drop its references from any thread,
 * or leak them once Python is no longer available (interpreter exit), then
 * free the name and the struct. */
static void wrapper_release(void *ctx)
{
    CvPyCallable *w = ctx;
    CvPythonCall call;
    if (cv_python_begin(&call) == 0) {
        Py_XDECREF(w->fn);
        Py_XDECREF(w->aux);
        Py_XDECREF(w->module);
        cv_python_end(&call);
    }
    cv_payload_list_orphan(&w->raised);
    free(w->name);
    PyMem_RawFree(w);
}

/* The traverse hook: called with the GIL held, by the gc (see
 * core/wrapper.h). Visits the wrapper's references. */
static int wrapper_traverse(void *ctx, CvVisit visit, void *arg)
{
    CvPyCallable *w = ctx;
    int rc = visit(w->fn, arg);
    if (!rc && w->aux)
        rc = visit(w->aux, arg);
    if (!rc && w->module)
        rc = visit(w->module, arg);
    return rc ? rc : cv_payload_list_visit(&w->raised, visit, arg);
}

/* Allocate a zeroed wrapper of `size` bytes holding module, fn, aux (may
 * be NULL) and a copy of name; NULL (with *error set) on failure. */
static void *wrapper_new(size_t size, PyObject *module, PyObject *name, PyObject *fn,
                         PyObject *aux, CvStatus *error)
{
    const char *text = PyUnicode_AsUTF8(name);
    if (!text) {
        PyErr_Clear();
        *error = cv_error(CV_INVALID_ARGUMENT, "stage name must be a str");
        return NULL;
    }
    CvPyCallable *w = PyMem_RawCalloc(1, size);
    char *copy = strdup(text);
    if (!w || !copy) {
        PyMem_RawFree(w);
        free(copy);
        *error = cv_error_nomem();
        return NULL;
    }
    w->name = copy;
    w->module = Py_NewRef(module);
    w->fn = Py_NewRef(fn);
    w->aux = Py_XNewRef(aux);
    return w;
}

CvStatus cv_function_from_python(PyObject *module, PyObject *fn, PyObject *out_convert,
                                 PyObject *name, int with_id, CvFunction *out)
{
    CvStatus s = CV_STATUS_OK;
    CvPyElementFunction *f = wrapper_new(sizeof(*f), module, name, fn, out_convert, &s);
    if (!f)
        return s;
    f->with_id = with_id;
    *out = (CvFunction){element_function_call, element_function_call_chunk, wrapper_release, f,
                        wrapper_traverse};
    return CV_STATUS_OK;
}

/* Dataset functions (interleave's map_func): fn(*components) returns an
 * engine Dataset (the Python layer unwraps the user's conveyor Dataset). */
static CvStatus dataset_function_call(void *ctx, const CvElement *in, CvDataset **out)
{
    CvPyCallable *f = ctx;
    CvStatus s = CV_STATUS_OK;
    CvPythonCall call;
    if (cv_python_begin(&call) < 0)
        return python_gone(f->name);
    PyObject *args = cv_element_to_tuple(cv_get_state(f->module), in, false);
    PyObject *result = args ? call_reported(f->fn, &PyTuple_GET_ITEM(args, 0),
                                            (size_t)PyTuple_GET_SIZE(args)) : NULL;
    CvDataset *ds = result ? cv_dataset_arg(f->module, result) : NULL;
    if (ds)
        *out = cv_dataset_ref(ds);
    else
        s = cv_status_from_pyerr(f->name, &f->raised);
    Py_XDECREF(args);
    Py_XDECREF(result);
    cv_python_end(&call);
    return s;
}

CvStatus cv_dataset_function_from_python(PyObject *module, PyObject *fn, PyObject *name,
                                         CvDatasetFunction *out)
{
    CvStatus s = CV_STATUS_OK;
    CvPyCallable *f = wrapper_new(sizeof(*f), module, name, fn, NULL, &s);
    if (!f)
        return s;
    *out = (CvDatasetFunction){dataset_function_call, wrapper_release, f, wrapper_traverse};
    return CV_STATUS_OK;
}

/* Sources: factory() returns a Python iterator whose items are lists of
 * arrays already checked against the element signature. Each engine
 * iterator's Python iterator (a generator, often a method's, holding its
 * object) is a state on the source's list, so that the traverse hook can
 * report it with the factory: when the wrapper reports this source's
 * callables, every engine iterator of it belongs to a pipeline the gc
 * accounts for (core/wrapper.h). The list changes under the GIL, as traverse reads it. */
typedef struct SourceState SourceState;
struct SourceState {
    PyObject *it;  /* strong */
    SourceState *next;
};

typedef struct {
    CvPyCallable base; /* base.fn: the factory */
    SourceState *states; /* live states, GIL-guarded */
} CvPySource;

static CvStatus source_open(void *ctx, void **state)
{
    CvPySource *src = ctx;
    CvPythonCall call;
    if (cv_python_begin(&call) < 0)
        return python_gone(src->base.name);
    CvStatus s = CV_STATUS_OK;
    PyObject *it = call_reported(src->base.fn, NULL, 0);
    if (it)
        Py_SETREF(it, PyObject_GetIter(it));
    SourceState *st = it ? PyMem_RawCalloc(1, sizeof(*st)) : NULL;
    if (!it) {
        s = cv_status_from_pyerr(src->base.name, &src->base.raised);
    } else if (!st) {
        Py_DECREF(it);
        s = cv_error_nomem();
    } else {
        *st = (SourceState){it, src->states};
        src->states = st;
    }
    *state = st;
    cv_python_end(&call);
    return s;
}

static CvStatus source_next(void *ctx, void *state, CvElement *out, bool *end)
{
    CvPySource *src = ctx;
    CvPythonCall call;
    if (cv_python_begin(&call) < 0)
        return python_gone(src->base.name);
    CvStatus s = CV_STATUS_OK;
    SourceState *st = state;
    bool cancelled = cv_blocking_cancelled(); /* once: an end stays an end */
    Py_INCREF(st->it); /* as call_reported's: reachable while it runs on this thread */
    PyObject *item = cancelled ? NULL : PyIter_Next(st->it);
    Py_DECREF(st->it);
    *end = false;
    if (!item) {
        if (PyErr_Occurred() || cancelled)
            s = cv_status_from_pyerr(src->base.name, &src->base.raised);
        else
            *end = true;
    } else {
        s = cv_element_from_sequence(cv_get_state(src->base.module), item, out);
        if (s)
            s = cv_status_prefix(s, "%s: ", src->base.name);
        Py_DECREF(item);
    }
    cv_python_end(&call);
    return s;
}

/* Python gone: the state stays on the list, leaked (nothing traverses it). */
static void source_close(void *ctx, void *state)
{
    CvPySource *src = ctx;
    SourceState *st = state;
    CvPythonCall call;
    if (!st || cv_python_begin(&call) < 0)
        return;
    SourceState **link = &src->states; /* a few states: one per engine iterator */
    while (*link != st)
        link = &(*link)->next;
    *link = st->next;
    PyObject *it = st->it;
    PyMem_RawFree(st);
    Py_DECREF(it); /* last: may run Python code (a generator's finally) */
    cv_python_end(&call);
}

static int source_traverse(void *ctx, CvVisit visit, void *arg)
{
    CvPySource *src = ctx;
    int rc = wrapper_traverse(&src->base, visit, arg);
    for (SourceState *st = src->states; !rc && st; st = st->next)
        rc = visit(st->it, arg);
    return rc;
}

CvStatus cv_source_from_python(PyObject *module, PyObject *factory, PyObject *name, CvSource *out)
{
    CvStatus s = CV_STATUS_OK;
    CvPySource *src = wrapper_new(sizeof(*src), module, name, factory, NULL, &s);
    if (!src)
        return s;
    *out = (CvSource){source_open, source_next, source_close, wrapper_release, src, source_traverse};
    return CV_STATUS_OK;
}
