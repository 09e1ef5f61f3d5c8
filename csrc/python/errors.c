/* The one place where a status becomes a Python exception, and where a
 * Python exception becomes a status (kept as the status's payload); and
 * engine reports (core/report.h) as Python values. */
#include "python/binding.h"

PyObject *cv_raise_status(CvModuleState *st, CvStatus s)
{
    if (s->code == CV_INTERRUPTED && PyErr_Occurred()) {
        cv_status_free(s); /* KeyboardInterrupt (or whatever the handler raised) */
        return NULL;
    }
    PyObject *holder = cv_status_take_payload(s); /* [exception], or [] (see below) */
    PyObject *exc = holder && PyList_GET_SIZE(holder) ? Py_NewRef(PyList_GET_ITEM(holder, 0)) : NULL;
    Py_XDECREF(holder);
    if (exc) { /* an exception raised by user code: re-raise it as it was */
        cv_status_free(s);
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
        return NULL;
    }
    PyObject *cls = PyExc_RuntimeError; /* borrowed: a code errors.py does not know */
    if (st->error_classes && (Py_ssize_t)s->code < PyTuple_GET_SIZE(st->error_classes))
        cls = PyTuple_GET_ITEM(st->error_classes, (Py_ssize_t)s->code);
    /* A message may quote bytes that are not UTF-8 (a record, a damaged
     * iterator state): replace them rather than raise UnicodeDecodeError. */
    PyObject *message = PyUnicode_DecodeUTF8(s->message, (Py_ssize_t)strlen(s->message), "replace");
    if (message) {
        PyErr_SetObject(cls, message);
        Py_DECREF(message);
    }
    cv_status_free(s);
    return NULL;
}

PyObject *cv_report_to_python(CvModuleState *st, CvReport *r, CvStatus s)
{
    PyObject *json = s ? NULL : PyImport_ImportModule("json");
    PyObject *value = json ? PyObject_CallMethod(json, "loads", "s#", r->text, (Py_ssize_t)r->len) : NULL;
    Py_XDECREF(json);
    cv_report_clear(r);
    return s ? cv_raise_status(st, s) : value;
}

/* Payload hooks (the free one: cv_python_decref, gil.c): statuses travel
 * between engine threads. */
static int payload_ref(void *payload)
{
    CvPythonCall call;
    if (cv_python_begin(&call) < 0)
        return -1;
    Py_INCREF((PyObject *)payload);
    cv_python_end(&call);
    return 0;
}

CvStatus cv_status_from_pyerr(const char *where, CvPayloadList *raised)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (!value) { /* a call refused in a cancelled pipeline (pyfunc.c's call_reported) */
        Py_XDECREF(type);
        Py_XDECREF(tb);
        return cv_error(CV_CANCELLED, "%s: not called: the pipeline was cancelled", where);
    }
    if (tb)
        PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    if (PyErr_GivenExceptionMatches(value, PyExc_StopIteration)) {
        /* Re-raised as is, it would end the caller's for-loop: data silently
         * lost. tf.data refuses too (preserve_cardinality); so does PEP 479. */
        Py_DECREF(value);
        return cv_error(CV_INVALID_ARGUMENT, "%s: the function raised StopIteration; a function "
                        "cannot end the dataset (return a value or raise another exception)", where);
    }
    PyObject *text = PyObject_Str(value);
    const char *msg = text ? PyUnicode_AsUTF8(text) : NULL;
    CvStatus s = cv_error(CV_UNKNOWN, "%s: %s: %s", where, Py_TYPE(value)->tp_name, msg ? msg : "?");
    if (!msg)
        PyErr_Clear();
    Py_XDECREF(text);
    /* Name the stage on the exception itself (PEP 678 note). */
    Py_XDECREF(PyObject_CallMethod(value, "add_note", "N",
                                   PyUnicode_FromFormat("conveyor: raised in %s", where)));
    /* The payload is [exception]: a collection that finds it garbage while a
     * status holds it (a report core/wrapper.h could not rule out) empties the
     * list (the error is then s's text), and never leaves the exception cleared. */
    PyObject *holder = s == cv_error_nomem() ? NULL : Py_BuildValue("[O]", value);
    Py_DECREF(value); /* the list's, if any */
    PyErr_Clear();
    if (!holder)
        return s;
    s->payload = holder;
    s->payload_free = cv_python_decref;
    s->payload_ref = payload_ref;
    return cv_status_list_payload(s, raised);
}

static PyObject *errors_set_error_classes(PyObject *module, PyObject *mapping)
{
    if (!PyTuple_Check(mapping)) {
        PyErr_SetString(PyExc_TypeError, "expected a tuple of exception classes indexed by code");
        return NULL;
    }
    Py_XSETREF(cv_get_state(module)->error_classes, Py_NewRef(mapping));
    Py_RETURN_NONE;
}

/* Engine warnings (core/status.h) go to one Python callable, handler(kind,
 * message), registered by conveyor/__init__.py; process-wide like the rest
 * of the engine's state (the module supports one interpreter). The call may
 * come from any thread; an exception it raises (a warnings filter set to
 * "error") is reported as unraisable: the warning never fails the pipeline. */
static PyObject *warning_handler; /* owned; NULL: stderr */

static void python_warning(CvWarningKind kind, const char *message)
{
    /* Python is finalizing, or no handler: stderr. */
    if (cv_python_hook(&warning_handler, NULL, NULL, "(is)", (int)kind, message) != 0)
        fprintf(stderr, "conveyor: warning: %s\n", message);
}

/* handler: conveyor.errors._engine_warning (conveyor/__init__.py) or None;
 * a handler that cannot be called is reported as unraisable, as above. */
static PyObject *errors_set_warning_handler(PyObject *module, PyObject *handler)
{
    (void)module;
    Py_XSETREF(warning_handler, handler == Py_None ? NULL : Py_NewRef(handler));
    cv_set_warning_handler(python_warning);
    Py_RETURN_NONE;
}

PyMethodDef cv_error_functions[] = {
    {"set_error_classes", errors_set_error_classes, METH_O, "Register the conveyor.errors classes."},
    {"set_warning_handler", errors_set_warning_handler, METH_O,
     "set_warning_handler(handler(kind, message) or None): where engine warnings go."},
    {NULL, NULL, 0, NULL},
};
