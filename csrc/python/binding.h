/* Shared declarations of the CPython binding (the only C that sees Python.h).
 *
 * Files, bottom to top (a file uses only the files listed before it; no
 * file includes or calls module.c); each file's top comment says more:
 *   binding.h        this header: module state, Dataset unwrapping, CV_UNLOCKED
 *   gil.c            the GIL bridge: entering Python from engine threads
 *   errors.c         status -> exception, exception -> status, reports -> values
 *   handles.c        engine objects as Python handles (capsules): one table of kinds
 *   numpy_dtypes.c   engine dtypes <-> NumPy descrs (bfloat16's given at run time)
 *   device.c         DeviceArrayBase (its Python half: conveyor/device.py), CUDA
 *   convert.c        tensors and elements <-> NumPy
 *   memory.c         RAM budgets; the engine's counters and limits, rows of one table
 *   example.c        tf.train.Example configs (packed by conveyor/io/example.py)
 *   pyfunc.c         Python callables as engine functions and sources
 *   ops.c            element ops, traced programs, map/filter function arguments
 *   iterator_type.c  the Iterator type (its Python half: conveyor/data/iterator_ops.py)
 *   dataset_type.c   the Dataset type (wrapping; the gc rule: core/wrapper.h)
 *   fs_fsspec.c      the fsspec fallback's file-system table (scheme "*")
 *   fs.c             the file-system layer (fs_*) and conveyor.io.gfile's file handles
 *   constructors.c   the dataset constructors: rows over the builder tables
 *   records.c        the TFRecord writer, record indexes, CRC-32C
 *   cache.c          Dataset.cache (a store's hooks: one tuple, cache_op.py's)
 *   module.c         module init: the method and row tables, the set_*_type classes
 *
 * Naming (functions, callbacks, types): docs/development.md, "The binding's names".
 *
 * Ownership: functions returning PyObject* return a new reference or NULL
 * with an exception set; "borrowed" is said where not.
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

#include "core/blocking.h"
#include "core/dataset.h"
#include "core/pipeline.h"
#include "core/report.h"
#include "core/thread.h"
#include "core/wrapper.h"

typedef struct CvModuleState {
    PyTypeObject *dataset_type;
    PyTypeObject *iterator_type;
    PyTypeObject *holder_type;
    PyTypeObject *device_array_type;  /* DeviceArrayBase */
    PyTypeObject *device_array_class; /* its Python subclass (conveyor/device.py) or NULL */
    PyTypeObject *eager_type; /* conveyor.EagerTensor (an ndarray subclass) or NULL until set */
    PyTypeObject *iterator_class; /* iterator_type's Python subclass (iterator_ops.py) or NULL */
    PyObject *error_classes; /* tuple: the exception class of each CvCode */
} CvModuleState;

/* The types' specs, in the files of their types (convert.c's BufferHolder,
 * device.c's DeviceArrayBase); module.c makes each into its field above. */
extern PyType_Spec cv_dataset_spec, cv_iterator_spec, cv_holder_spec, cv_device_array_spec;

static inline CvModuleState *cv_get_state(PyObject *module)
{
    return (CvModuleState *)PyModule_GetState(module);
}

/* The module that made obj's type (borrowed), or NULL with an exception
 * set. Our types are not subclassable, so Py_TYPE(obj) is always the heap
 * type made by PyType_FromModuleAndSpec. */
static inline PyObject *cv_module_of(PyObject *obj)
{
    return PyType_GetModule(Py_TYPE(obj));
}

/* A conveyor._engine.Dataset (its type and methods: dataset_type.c). The
 * layout is here so that the lower files can unwrap one without calling up. */
typedef struct CvDatasetObject {
    PyObject_HEAD
    /* w.ds: owned reference, NULL only after tp_clear; the links that let
     * the gc see through shared engine datasets (core/wrapper.h). Changed
     * under the GIL only. */
    CvWrapper w;
} CvDatasetObject;

/* The engine dataset of a Dataset object (borrowed), or NULL with
 * ValueError set once the gc has cleared it (reachable then only from a
 * finalizer of the same garbage). */
static inline CvDataset *cv_dataset_of(PyObject *obj)
{
    CvDataset *ds = ((CvDatasetObject *)obj)->w.ds;
    if (!ds)
        PyErr_SetString(PyExc_ValueError, "engine Dataset cleared by the garbage collector");
    return ds;
}

/* The engine dataset inside a conveyor._engine.Dataset argument (borrowed),
 * or NULL with TypeError (or ValueError, see above) set. */
static inline CvDataset *cv_dataset_arg(PyObject *module, PyObject *obj)
{
    if (!PyObject_TypeCheck(obj, cv_get_state(module)->dataset_type)) {
        PyErr_Format(PyExc_TypeError, "expected an engine Dataset, got %s", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return cv_dataset_of(obj);
}

/* Run stmt with the GIL released (an engine call that may wait: I/O, a
 * join, the device), so other Python threads and the workers' Python calls
 * go on; the GIL is held again when it returns. stmt touches no Python
 * object. */
#define CV_UNLOCKED(...)                                                                         \
    do {                                                                                         \
        Py_BEGIN_ALLOW_THREADS __VA_ARGS__;                                                      \
        Py_END_ALLOW_THREADS                                                                     \
    } while (0)

/* The function and flags of a PyMethodDef whose function takes keywords
 * (fn(module, args, kwargs)): dataset constructors are called by name. */
#define CV_METHOD_KEYWORDS(fn) (PyCFunction)(void (*)(void))(fn), METH_VARARGS | METH_KEYWORDS

/* Row tables: module functions that share one C function and tell their
 * row apart (a PyMethodDef has no closure): module.c makes each row a
 * builtin whose self is (module, row index), read back by cv_row_of. */
static inline int cv_row_of(PyObject *self, PyObject **module)
{
    *module = PyTuple_GET_ITEM(self, 0); /* borrowed */
    return (int)PyLong_AsLong(PyTuple_GET_ITEM(self, 1));
}
/* Module functions defined in the binding files (NULL-terminated), which
 * module.c adds; constructors.c's rows, one per builder (core/builder.h),
 * are filled by cv_constructors_init. */
extern PyMethodDef cv_constructor_functions[];
int cv_constructors_init(void);
extern PyMethodDef cv_value_functions[]; /* memory.c: rows, the engine's counters, limits, reports */
extern PyMethodDef cv_io_functions[];          /* records.c: TFRecord writer, record indexes, CRC-32C */
extern PyMethodDef cv_cache_functions[];       /* cache.c: Dataset.cache */
extern PyMethodDef cv_example_functions[];     /* example.c: tf.train.Example */
extern PyMethodDef cv_op_functions[];          /* ops.c: element ops and traced programs */
extern PyMethodDef cv_memory_functions[];      /* memory.c: RAM budgets, hash_buffer */
extern PyMethodDef cv_iterator_functions[];    /* iterator_type.c: shutdown */
extern PyMethodDef cv_dtype_functions[];       /* numpy_dtypes.c: set_bfloat16_dtype */
extern PyMethodDef cv_error_functions[];       /* errors.c: set_error_classes */
extern PyMethodDef cv_fs_functions[];         /* fs.c: the file-system layer (fs_*) */
extern PyMethodDef cv_device_functions[];      /* device.c: cuda_load, copy_rate */

/* ---------------------------------------------------------------- gil.c */

/* The GIL bridge (gil.c): every entry into Python from engine code (a
 * worker, or the consumer inside a GIL-released next()) is one pair in one
 * function; begin returns -1, having taken nothing, once Python is
 * unavailable (interpreter exit), and the caller fails or leaks. */
typedef struct CvPythonCall {
    PyGILState_STATE gil;
} CvPythonCall;
int cv_python_begin(CvPythonCall *call);
void cv_python_end(CvPythonCall *call);
/* Drop a reference to a Python object from any thread (a release hook of
 * the engine's: a status payload, an op's capsule), or leak it once Python
 * is unavailable. */
void cv_python_decref(void *object);
/* Call the hook in *slot (read with the GIL; NULL: none) with the
 * arguments Py_BuildValue makes of fmt, from any thread: an exception on
 * its way is set aside around the call, and one the hook raises is
 * reported as unraisable, so the pipeline goes on. take(result, ctx), when
 * given, reads the result with the GIL held. -1: Python is unavailable;
 * 1: no hook; 0: called. */
int cv_python_hook(PyObject *const *slot, void (*take)(PyObject *result, void *ctx), void *ctx,
                   const char *fmt, ...);

extern atomic_int cv_shutting_down; /* set by _engine.shutdown (atexit) */
extern atomic_int cv_python_calls;  /* engine-thread calls into Python in flight */
void cv_gil_install(void);       /* once, at module exec: the thread-exit and fork hooks */
int cv_check_signals(void *arg); /* interrupt check around GIL-released next() */

/* ------------------------------------------------------------- errors.c */

/* Raise the Python exception for a non-OK status and free it; returns NULL. */
PyObject *cv_raise_status(CvModuleState *st, CvStatus s);
/* The current Python exception as a status whose payload keeps it, listed on
 * `raised` unless NULL (core/status.h); `where` names the stage in its note. */
CvStatus cv_status_from_pyerr(const char *where, CvPayloadList *raised);
/* A report's JSON text (core/report.h) as Python values (json.loads), or the
 * exception of s when the report failed; clears r either way. */
PyObject *cv_report_to_python(CvModuleState *st, CvReport *r, CvStatus s);

/* ------------------------------------------------------------ handles.c */

/* Engine objects as Python handles (capsules), by kind. */
typedef enum CvHandleKind {
    CV_HANDLE_MEMORY,         /* CvMemory (a reference) */
    CV_HANDLE_EXAMPLE_CONFIG, /* CvExampleConfig */
    CV_HANDLE_RECORD_WRITER,  /* CvTFRecordWriter (freed without the GIL) */
    CV_HANDLE_CACHE_STORE,    /* CvCacheStore (a reference) */
    CV_HANDLE_PROGRAM,        /* CvProgram (a reference) */
    CV_HANDLE_REGEX,          /* CvRegex */
    CV_HANDLE_FS_FILE,        /* CvFsFile, gfile's open file (freed without the GIL) */
    CV_NUM_HANDLES
} CvHandleKind;
/* A handle owning object (freed here when no handle can be made). */
PyObject *cv_handle_new(CvHandleKind kind, void *object);
/* The object of a handle of this kind (borrowed), or NULL with TypeError. */
void *cv_handle_arg(PyObject *obj, CvHandleKind kind);
bool cv_handle_is(PyObject *obj, CvHandleKind kind);

/* ------------------------------------------------------------- device.c */

/* A DeviceArray over t, a tensor in a device buffer (csrc/device/device.h;
 * a new reference to the buffer): st->device_array_class once the Python
 * layer set it, DeviceArrayBase before. */
PyObject *cv_device_array_new(CvModuleState *st, const CvTensor *t);

/* ------------------------------------------------------------ convert.c */

/* A numpy array (any numeric or string dtype, or a Python value numpy can
 * convert) -> tensor. Shares memory when the array already views an engine
 * buffer; copies otherwise. */
CvStatus cv_tensor_from_pyobject(CvModuleState *st, PyObject *obj, CvTensor *out);
/* A list or tuple of arrays -> element. */
CvStatus cv_element_from_sequence(CvModuleState *st, PyObject *seq, CvElement *out);
/* Tensor -> numpy array (rank >= 1) or numpy scalar / bytes (rank 0).
 * Zero-copy for numeric arrays: the array's base holds the buffer. A tensor
 * in device memory becomes a DeviceArray (device.c), whatever its rank.
 * eager (and st->eager_type set): as that ndarray subclass with numpy(),
 * 0-d instances for scalars and scalar strings (a 0-d numeric is copied,
 * as a scalar is; arrays still view the buffer). */
PyObject *cv_tensor_to_python(CvModuleState *st, const CvTensor *t, bool eager);
/* Element -> tuple of components, as cv_tensor_to_python. */
PyObject *cv_element_to_tuple(CvModuleState *st, const CvElement *e, bool eager);
int cv_dtype_from_descr(PyArray_Descr *d, CvDtype *out);
/* The NumPy descr of engine dtype `dtype`, a new reference; NULL with an
 * exception set for bfloat16 before set_bfloat16_dtype gave its descr
 * (ml_dtypes' type, registered at run time). Needs the GIL. */
PyArray_Descr *cv_descr_for(CvDtype dtype);

/* ------------------------------------------------------------- memory.c */

/* An "O&" converter: a budget capsule (borrowed) or None (NULL, the
 * process default) into *out. */
int cv_memory_arg(PyObject *obj, CvMemory **out);

/* ------------------------------------------------------------- pyfunc.c */

/* Python callables as engine callbacks (their references, threads and gc
 * hooks: pyfunc.c). with_id: fn(epoch, index, *components) (CvElementId). */
CvStatus cv_function_from_python(PyObject *module, PyObject *fn, PyObject *out_convert,
                                 PyObject *name, int with_id, CvFunction *out);
CvStatus cv_source_from_python(PyObject *module, PyObject *factory, PyObject *name, CvSource *out);
/* fn(*components) returns an engine Dataset. */
CvStatus cv_dataset_function_from_python(PyObject *module, PyObject *fn, PyObject *name,
                                         CvDatasetFunction *out);

/* ---------------------------------------------------------------- ops.c */

/* An engine function from a map/filter argument: a compiled program
 * capsule, or a Python callable (see cv_function_from_python). */
CvStatus cv_function_from_arg(PyObject *module, PyObject *fn, PyObject *out_convert,
                              PyObject *name, int with_id, CvFunction *out);

/* ------------------------------------------------------ iterator_type.c */

/* Dataset.make_iterator(structure, ...) (its keywords: iterator_type.c). */
PyObject *cv_make_iterator(PyObject *source, PyObject *args, PyObject *kwargs);

/* ------------------------------------------------------- dataset_type.c */

/* Wrap a new dataset (or raise the status); steals the reference to ds. */
PyObject *cv_wrap_dataset(PyObject *module, CvStatus s, CvDataset *ds);

#endif
