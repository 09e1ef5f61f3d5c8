/* Binding of Dataset.cache: the store (a capsule around a CvCacheStore whose
 * hooks call Python), the kernel, and the description of a committed cache
 * file. Argument checks and the element structure live in
 * conveyor/data/ops/cache_op.py. */
#include "python/binding.h"

#include "kernels/cache.h"
#include "kernels/kernels.h"

/* A store's hooks: a tuple (warn, progress, describe) of callables
 * (cache_op.py): warn(message); progress(token, elements, bytes, total,
 * state); describe() -> bytes or None. The store owns one reference to the
 * tuple, dropped with cv_python_decref (any thread). The hooks run on any
 * thread through cv_python_hook (gil.c), never when Python is unavailable:
 * an exception a hook raises is reported without disturbing the pipeline. */
static PyObject *const *hook(void *ctx, int i)
{
    return &PySequence_Fast_ITEMS((PyObject *)ctx)[i];
}

static void hooks_warn(void *ctx, const char *message)
{
    cv_python_hook(hook(ctx, 0), NULL, NULL, "(s)", message);
}

static void hooks_progress(void *ctx, uint64_t token, int64_t elements, uint64_t bytes,
                           int64_t total, int state)
{
    cv_python_hook(hook(ctx, 1), NULL, NULL, "(KLKLi)", (unsigned long long)token,
                   (long long)elements, (unsigned long long)bytes, (long long)total, state);
}

typedef struct {
    char *blob;
    size_t len;
} Description;

static void take_description(PyObject *r, void *ctx)
{
    Description *d = ctx;
    size_t n = PyBytes_Check(r) ? (size_t)PyBytes_GET_SIZE(r) : 0;
    if (n && (d->blob = malloc(n))) {
        memcpy(d->blob, PyBytes_AS_STRING(r), n);
        d->len = n;
    }
}

static void hooks_describe(void *ctx, char **blob, size_t *len)
{
    Description d = {NULL, 0};
    cv_python_hook(hook(ctx, 2), take_description, &d, "()");
    *blob = d.blob;
    *len = d.len;
}

/* GIL held, by the gc (see core/wrapper.h; the cache kernel calls this only
 * while one dataset holds the store). */
static int hooks_traverse(void *ctx, CvVisit visit, void *arg)
{
    return visit(ctx, arg);
}

/* cache_store(filename or None, (warn, progress, describe), progress_delay_s,
 * on_truncation) -> store; on_truncation a CvTruncation (cache_op.py maps
 * its names and checks the rest). */
static PyObject *cache_store_new(PyObject *module, PyObject *args)
{
    PyObject *filename, *fns, *path = NULL;
    double delay;
    int truncation;
    if (!PyArg_ParseTuple(args, "OO!di:cache_store", &filename, &PyTuple_Type, &fns, &delay,
                          &truncation))
        return NULL;
    if (PyTuple_GET_SIZE(fns) != 3)
        return PyErr_Format(PyExc_ValueError, "cache_store: the hooks are (warn, progress, describe)");
    if (filename != Py_None && !PyUnicode_FSConverter(filename, &path))
        return NULL;
    CvCacheHooks hooks = {hooks_warn, hooks_progress, hooks_describe, cv_python_decref,
                          Py_NewRef(fns), delay < 0 ? -1 : (int64_t)(delay * 1e9), hooks_traverse};
    CvCacheStore *st = NULL;
    CvStatus s = cv_cache_store_new(path ? PyBytes_AS_STRING(path) : NULL, hooks, &st);
    Py_XDECREF(path);
    if (s)
        return cv_raise_status(cv_get_state(module), s);
    cv_cache_store_set_truncation(st, truncation);
    return cv_handle_new(CV_HANDLE_CACHE_STORE, st);
}

/* cache(input, store, expected or None, memory=None) -> Dataset; expected:
 * the element spec as int64s (kernels.h's cv_cache_dataset), checked there. */
static PyObject *cache_dataset(PyObject *module, PyObject *args, PyObject *kwargs)
{
    PyObject *input, *store, *expected;
    CvMemory *memory = NULL;
    static char *keywords[] = {"input", "store", "expected", "memory", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|O&:cache", keywords, &input, &store,
                                     &expected, cv_memory_arg, &memory))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    CvCacheStore *st = in ? cv_handle_arg(store, CV_HANDLE_CACHE_STORE) : NULL;
    Py_buffer view = {.buf = NULL, .len = -(Py_ssize_t)sizeof(int64_t)}; /* None: -1 ints */
    if (!st || (expected != Py_None && PyObject_GetBuffer(expected, &view, PyBUF_SIMPLE) < 0))
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_cache_dataset(in, st, view.buf, view.len / (Py_ssize_t)sizeof(int64_t), &ds);
    if (expected != Py_None)
        PyBuffer_Release(&view);
    if (!s) /* a memory cache charges what it keeps to this budget */
        cv_dataset_set_memory(ds, memory);
    return cv_wrap_dataset(module, s, ds);
}

/* cache_file_structure(store) -> the element structure a committed cache
 * file records (bytes; empty: a memory store, no committed file). Raises
 * DataLossError & co. for a damaged file. */
static PyObject *cache_file_structure(PyObject *module, PyObject *store)
{
    CvCacheStore *st = cv_handle_arg(store, CV_HANDLE_CACHE_STORE);
    char *blob = NULL;
    size_t len = 0;
    CvStatus s;
    if (!st)
        return NULL;
    CV_UNLOCKED(s = cv_cache_store_file_structure(st, &blob, &len));
    PyObject *result = s ? cv_raise_status(cv_get_state(module), s)
                         : PyBytes_FromStringAndSize(blob ? blob : "", (Py_ssize_t)len);
    free(blob);
    return result;
}

PyMethodDef cv_cache_functions[] = {
    {"cache_store", cache_store_new, METH_VARARGS,
     "cache_store(filename or None, (warn, progress, describe), progress_delay_s, on_truncation)"
     " -> store"},
    {"cache", CV_METHOD_KEYWORDS(cache_dataset),
     "cache(input, store, expected or None, memory=None) -> Dataset"},
    {"cache_file_structure", cache_file_structure, METH_O,
     "cache_file_structure(store) -> the structure bytes of the committed cache file, or b''"},
    {NULL, NULL, 0, NULL},
};
