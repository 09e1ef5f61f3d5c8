/* Shared declarations of the CPython binding (the only C that sees Python.h).
 *
 * Ownership conventions: functions returning PyObject* return a new
 * reference or NULL with an exception set; "borrowed" is said where not.
 */
#ifndef CV_BINDING_H
#define CV_BINDING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define PY_ARRAY_UNIQUE_SYMBOL CV_ARRAY_API
#ifndef CV_IMPORT_ARRAY_HERE
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include "core/dataset.h"
#include "core/thread.h"

typedef struct IteratorObject IteratorObject;

typedef struct CvModuleState {
    PyTypeObject *dataset_type;
    PyTypeObject *iterator_type;
    PyTypeObject *holder_type;
    PyObject *error_classes; /* dict: CvCode (int) -> exception class */
    IteratorObject *live;    /* intrusive list of open iterators (GIL-guarded) */
} CvModuleState;

CvModuleState *cv_get_state(PyObject *module);

/* module.c */
/* Wrap a new dataset (or raise the status); steals the reference to ds. */
PyObject *cv_wrap_dataset(PyObject *module, CvStatus s, CvDataset *ds);
/* The engine dataset inside a conveyor._engine.Dataset (borrowed), or NULL
 * with TypeError set. */
CvDataset *cv_dataset_arg(PyObject *module, PyObject *obj);

/* Module functions defined in other binding files (NULL-terminated). */
extern PyMethodDef cv_io_functions[];      /* io.c: record files */
extern PyMethodDef cv_example_functions[]; /* example.c: tf.train.Example */
extern PyMethodDef cv_transform_functions[]; /* transform.c: filter, zip, unbatch, ... */
extern PyMethodDef cv_grouping_functions[]; /* grouping.c: choose, sample, window, group_by_window */
extern PyMethodDef cv_cache_functions[];   /* cache.c: Dataset.cache */
extern PyMethodDef cv_op_functions[];      /* ops.c: element ops and traced programs */
extern PyMethodDef cv_memory_functions[];  /* memory.c: RAM budgets, process limits */

/* ops.c: an engine function from a map/filter argument: a compiled program
 * capsule, or a Python callable (see cv_function_from_python). */
CvStatus cv_function_from_arg(PyObject *module, PyObject *fn, PyObject *out_convert,
                              PyObject *name, int with_id, CvFunction *out);

/* errors.c */
/* Raise the Python exception for a non-OK status and free it; returns NULL. */
PyObject *cv_raise_status(CvModuleState *st, CvStatus s);
/* Capture the current Python exception into a status whose payload keeps
 * the exception object; `where` names the stage for the note added to it. */
CvStatus cv_status_from_pyerr(const char *where);

/* convert.c */
int cv_convert_init(PyObject *module, CvModuleState *st);
/* A numpy array (any numeric or string dtype, or a Python value numpy can
 * convert) -> tensor. Shares memory when the array already views an engine
 * buffer; copies otherwise. */
CvStatus cv_tensor_from_pyobject(CvModuleState *st, PyObject *obj, CvTensor *out);
/* A list or tuple of arrays -> element. */
CvStatus cv_element_from_sequence(CvModuleState *st, PyObject *seq, CvElement *out);
/* Tensor -> numpy array (rank >= 1) or numpy scalar / bytes (rank 0).
 * Zero-copy for numeric arrays: the array's base holds the buffer. */
PyObject *cv_tensor_to_python(CvModuleState *st, const CvTensor *t);
/* Element -> tuple of components. */
PyObject *cv_element_to_tuple(CvModuleState *st, const CvElement *e);
int cv_dtype_from_descr(PyArray_Descr *d, CvDtype *out);

/* pyfunc.c */
extern atomic_int cv_shutting_down;
extern atomic_int cv_python_calls; /* engine-thread calls into Python in flight */
/* True when Python code must no longer be entered from engine threads. */
int cv_python_unavailable(void);
/* Every entry into Python from engine code is bracketed by these, so the
 * atexit hook can wait for calls in flight: enter returns -1 (and counts
 * nothing) once Python is unavailable. */
int cv_python_enter(void);
void cv_python_leave(void);
void cv_python_after_fork_child(void);
/* with_id: fn is called as fn(epoch, index, *components) (see CvElementId). */
CvStatus cv_function_from_python(PyObject *module, PyObject *fn, PyObject *out_convert,
                                 PyObject *name, int with_id, CvFunction *out);
CvStatus cv_source_from_python(PyObject *module, PyObject *factory, PyObject *name, CvSource *out);
CvStatus cv_dataset_function_from_python(PyObject *module, PyObject *fn, PyObject *name,
                                         CvDatasetFunction *out);
/* PyGILState_Ensure for any thread; engine threads keep their thread state
 * until they exit. Pair with PyGILState_Release. */
PyGILState_STATE cv_gil_acquire(void);
/* The engine's thread-exit hook: releases a pinned thread state. */
void cv_gil_thread_exit(void);
/* Installed around GIL-released next() calls on the consumer thread. */
int cv_check_signals(void *arg);

/* memory.c: an "O&" converter: a budget capsule (borrowed) or None (NULL,
 * the process default) into *out. */
int cv_memory_arg(PyObject *obj, CvMemory **out);

/* example.c: the CvExampleConfig inside a capsule from
 * _engine.example_config (borrowed), or NULL with TypeError set. */
struct CvExampleConfig;
struct CvExampleConfig *cv_example_config_arg(PyObject *obj);

#endif
