/* The one place where a status becomes a Python exception. */
#include "python/binding.h"

PyObject *cv_raise_status(CvModuleState *st, CvStatus s)
{
    if (s->code == CV_INTERRUPTED && PyErr_Occurred()) {
        cv_status_free(s); /* KeyboardInterrupt (or whatever the handler raised) */
        return NULL;
    }
    if (s->payload) { /* an exception raised by user code: re-raise it as it was */
        PyObject *exc = s->payload;
        s->payload = NULL;
        cv_status_free(s);
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
        return NULL;
    }
    PyObject *cls = NULL;
    if (st->error_classes) {
        PyObject *key = PyLong_FromLong((long)s->code);
        if (key) {
            cls = PyDict_GetItemWithError(st->error_classes, key); /* borrowed */
            Py_DECREF(key);
        }
        if (!cls && PyErr_Occurred()) {
            cv_status_free(s);
            return NULL;
        }
    }
    PyErr_SetString(cls ? cls : PyExc_RuntimeError, s->message);
    cv_status_free(s);
    return NULL;
}

static void payload_free(void *payload)
{
    if (cv_python_enter() < 0)
        return; /* leak rather than touch a finalizing interpreter */
    PyGILState_STATE g = cv_gil_acquire();
    Py_DECREF((PyObject *)payload);
    PyGILState_Release(g);
    cv_python_leave();
}

static int payload_ref(void *payload)
{
    if (cv_python_enter() < 0)
        return -1;
    PyGILState_STATE g = cv_gil_acquire();
    Py_INCREF((PyObject *)payload);
    PyGILState_Release(g);
    cv_python_leave();
    return 0;
}

CvStatus cv_status_from_pyerr(const char *where)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (!value) {
        Py_XDECREF(type);
        Py_XDECREF(tb);
        return cv_error(CV_INTERNAL, "%s failed without an exception", where);
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
    PyObject *note = PyUnicode_FromFormat("conveyor: raised in %s", where);
    if (note) {
        PyObject *r = PyObject_CallMethod(value, "add_note", "O", note);
        Py_XDECREF(r);
        Py_DECREF(note);
    }
    PyErr_Clear();
    if (s == cv_error_nomem()) {
        Py_DECREF(value);
        return s;
    }
    s->payload = value;
    s->payload_free = payload_free;
    s->payload_ref = payload_ref;
    return s;
}
