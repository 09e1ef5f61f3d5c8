/* The GIL bridge: how engine threads enter Python. A map function, a
 * generator or a hook runs on whichever thread calls it (a worker or the
 * consumer), which takes the GIL for the call only, through
 * cv_python_begin/cv_python_end; no engine lock is held across the call
 * (core/stage.h).
 *
 * Shutdown: once the interpreter starts finalizing, a thread that asks for
 * the GIL may hang or be killed. cv_shutting_down is set by the atexit hook
 * (_engine.shutdown, iterator_type.c) before live iterators are closed; from
 * then on cv_python_begin refuses, and callers fail with CV_CANCELLED or
 * leak what they would have released.
 */
#include <stdarg.h>

#include "python/binding.h"

#include "core/thread.h"

atomic_int cv_shutting_down;
atomic_int cv_python_calls;

/* True when Python code must no longer be entered from engine threads. */
static int python_unavailable(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    return atomic_load(&cv_shutting_down) || Py_IsFinalizing();
#else
    return atomic_load(&cv_shutting_down) || _Py_IsFinalizing();
#endif
}

/* Engine threads keep one Python thread state for their whole life. Without
 * this, every PyGILState_Ensure/Release pair on a thread Python does not
 * know creates and destroys a thread state (an mmap, a munmap and a page
 * fault per element). The pin is one extra Ensure; the engine's thread-exit
 * hook undoes it, which deletes the thread state. */
static _Thread_local int pinned;

static PyGILState_STATE gil_acquire(void)
{
    if (PyGILState_GetThisThreadState() != NULL)
        return PyGILState_Ensure();
    /* A thread Python does not know: make its state, bound to this thread
     * as PyGILState_Ensure would. A new state's count of Ensure calls starts
     * at one: that is the pin. Then take the GIL with it. */
    cv_fork_guard_lock();
    PyThreadState *state = PyThreadState_New(PyInterpreterState_Main());
    cv_fork_guard_unlock();
    if (!state)
        Py_FatalError("conveyor: cannot make a Python thread state for an engine thread");
    pinned = 1;
    return PyGILState_Ensure();
}

/* One pair per entry (binding.h). begin counts the call, refuses once Python
 * is unavailable, and takes the GIL, pinning a thread state on threads Python
 * does not know. The count goes up before the shutdown check, so the atexit
 * hook, which sets the flag and then waits for the count to drain, never
 * misses a call on its way in. */
int cv_python_begin(CvPythonCall *call)
{
    atomic_fetch_add(&cv_python_calls, 1);
    if (python_unavailable()) {
        atomic_fetch_sub(&cv_python_calls, 1);
        return -1;
    }
    cv_blocking_begin();
    int64_t asked = cv_now_ns(); /* the wait for the GIL: the tuner's contention (core/blocking.h) */
    call->gil = gil_acquire();
    cv_blocking_contended(cv_now_ns() - asked);
    return 0;
}

void cv_python_end(CvPythonCall *call)
{
    PyGILState_Release(call->gil);
    cv_blocking_end();
    atomic_fetch_sub(&cv_python_calls, 1);
}

void cv_python_decref(void *object)
{
    CvPythonCall call;
    if (cv_python_begin(&call) < 0)
        return; /* leak rather than touch a finalizing interpreter */
    Py_DECREF((PyObject *)object);
    cv_python_end(&call);
}

int cv_python_hook(PyObject *const *slot, void (*take)(PyObject *result, void *ctx), void *ctx,
                   const char *fmt, ...)
{
    CvPythonCall call;
    if (cv_python_begin(&call) < 0)
        return -1;
    PyObject *hook = *slot ? Py_NewRef(*slot) : NULL;
    if (hook) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb); /* an iterator freed while unwinding */
        va_list ap;
        va_start(ap, fmt);
        PyObject *args = Py_VaBuildValue(fmt, ap);
        va_end(ap);
        PyObject *r = args ? PyObject_CallObject(hook, args) : NULL;
        if (!r)
            PyErr_WriteUnraisable(hook); /* a warnings filter set to "error", a broken bar */
        else if (take)
            take(r, ctx);
        Py_XDECREF(r);
        Py_XDECREF(args);
        PyErr_Restore(type, value, tb);
        Py_DECREF(hook);
    }
    cv_python_end(&call);
    return hook ? 0 : 1;
}

/* In a fork() child no engine thread exists: nothing is inside Python. */
static void after_fork_child(void)
{
    atomic_store(&cv_python_calls, 0);
}

/* A thread's exit: releases its pinned thread state. */
static void gil_thread_exit(void)
{
    if (!pinned)
        return;
    /* Counted like a call, but without gil_acquire: this drops the pin. */
    atomic_fetch_add(&cv_python_calls, 1);
    if (python_unavailable()) {
        atomic_fetch_sub(&cv_python_calls, 1);
        return; /* at finalization the interpreter frees thread states itself */
    }
    pinned = 0;
    PyGILState_STATE g = PyGILState_Ensure();
    PyGILState_Release(PyGILState_LOCKED); /* drop the pin, keep the GIL */
    PyGILState_Release(g);                 /* the last one: deletes the thread state */
    atomic_fetch_sub(&cv_python_calls, 1);
}

/* Runs on the consumer thread, which Python knows; not counted, so that
 * Ctrl-C still reaches a next() that runs while shutdown is under way. */
int cv_check_signals(void *arg)
{
    (void)arg;
    PyGILState_STATE g = PyGILState_Ensure();
    int stop = PyErr_CheckSignals() < 0;
    PyGILState_Release(g);
    return stop;
}

/* The bridge's engine hooks (core/thread.h), installed once at module
 * exec, and the fork guard.
 *
 * The fork guard: fork() against a thread state being made.
 * PyThreadState_New takes the runtime's head lock without the GIL; a fork()
 * in another thread at that moment leaves the lock held in the child, where CPython before 3.13
 * deadlocks in PyOS_AfterFork_Child before any Python code runs. So an engine
 * thread makes its state under the fork guard (core/thread.h), which fork()
 * takes first. Holding it never waits for the GIL, so the forking thread,
 * which holds the GIL, cannot deadlock on it. From 3.13 on, os.fork() itself
 * holds the head lock across fork(): there the guard would deadlock against
 * a thread waiting for that lock under the guard, and is not needed, so it
 * is not installed. */
void cv_gil_install(void)
{
    (void)cv_fork_generation(); /* installs the pthread_atfork handler */
    cv_set_thread_exit_hook(gil_thread_exit);
    cv_set_fork_child_hook(after_fork_child);
#if PY_VERSION_HEX < 0x030D0000
    cv_fork_guard_install();
#endif
}
