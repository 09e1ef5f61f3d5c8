/* Binding of RAM budgets (core/ram_budget.h) and of the process's limits
 * (memory, cgroup, CPU count).
 *
 * A budget reaches Python as a handle (handles.c) owning one reference; conveyor/data/ops/options_op.py creates one per with_options() call
 * that sets options.autotune.ram_budget and passes it to the constructors of
 * the stages that buffer, which record it in their engine dataset. */
#include "python/binding.h"

#include "core/cgroup.h"
#include "core/hash128.h"
#include "core/ram_budget.h"
#include "core/tensor.h"

int cv_memory_arg(PyObject *obj, CvMemory **out)
{
    *out = obj == Py_None ? NULL : cv_handle_arg(obj, CV_HANDLE_MEMORY);
    return obj == Py_None || *out;
}

static PyObject *memory_budget(PyObject *module, PyObject *arg)
{
    (void)module;
    long long limit = PyLong_AsLongLong(arg);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    if (limit <= 0) {
        PyErr_Format(PyExc_ValueError, "a RAM budget must be positive, got %lld", limit);
        return NULL;
    }
    CvMemory *m = cv_memory_new(limit);
    return m ? cv_handle_new(CV_HANDLE_MEMORY, m) : PyErr_NoMemory();
}

static PyObject *memory_budget_usage(PyObject *module, PyObject *arg)
{
    (void)module;
    CvMemory *m;
    if (!cv_memory_arg(arg, &m))
        return NULL;
    return Py_BuildValue("LL", (long long)cv_memory_used(m), (long long)cv_memory_limit(m));
}

static PyObject *memory_budget_peak(PyObject *module, PyObject *arg)
{
    (void)module;
    CvMemory *m;
    if (!cv_memory_arg(arg, &m))
        return NULL;
    return PyLong_FromLongLong((long long)cv_memory_peak(m));
}

static PyObject *memory_in_use(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyLong_FromLongLong(cv_memory_in_use());
}

static PyObject *buffer_pool_stats(PyObject *module, PyObject *unused)
{
    (void)unused;
    CvReport r;
    cv_report_init(&r);
    return cv_report_to_python(cv_get_state(module), &r, cv_buffer_pool_report(&r));
}

static PyObject *memory_process_limit(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyLong_FromLongLong(cv_memory_process_limit());
}

static PyObject *memory_cgroup_limits(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    int64_t bytes = cv_cgroup_memory_limit();
    double cpus = cv_cgroup_cpu_limit();
    PyObject *b = bytes < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(bytes);
    PyObject *c = cpus < 0 ? Py_NewRef(Py_None) : PyFloat_FromDouble(cpus);
    if (!b || !c) {
        Py_XDECREF(b);
        Py_XDECREF(c);
        return NULL;
    }
    return Py_BuildValue("NN", b, c);
}

static PyObject *memory_cpu_count(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyLong_FromLong(cv_cpu_count());
}

/* hash_buffer(obj) -> 16 bytes: cv_hash128 of a C-contiguous buffer, without
 * the GIL for large ones (the pipeline fingerprint's arrays). */
static PyObject *memory_hash_buffer(PyObject *module, PyObject *obj)
{
    (void)module;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    unsigned char digest[16];
    size_t size = (size_t)view.len;
    if (size >= ((size_t)1 << 16)) {
        Py_BEGIN_ALLOW_THREADS
        cv_hash128(view.buf, size, digest);
        Py_END_ALLOW_THREADS
    } else {
        cv_hash128(view.buf, size, digest);
    }
    PyBuffer_Release(&view);
    return PyBytes_FromStringAndSize((const char *)digest, sizeof digest);
}

PyMethodDef cv_memory_functions[] = {
    {"hash_buffer", memory_hash_buffer, METH_O,
     "hash_buffer(obj) -> 16 bytes: a fast 128-bit hash of a C-contiguous buffer's bytes, the "
     "same on every machine (not cryptographic)."},
    {"memory_budget", memory_budget, METH_O,
     "memory_budget(limit_bytes) -> a RAM budget for the stages of one pipeline"},
    {"memory_budget_usage", memory_budget_usage, METH_O,
     "memory_budget_usage(budget or None) -> (bytes charged, limit); None: the process default"},
    {"memory_budget_peak", memory_budget_peak, METH_O,
     "memory_budget_peak(budget or None) -> the most bytes ever charged to it at once"},
    {"memory_in_use", memory_in_use, METH_NOARGS,
     "Bytes that the buffers of all pipelines hold (charged to any budget)."},
    {"buffer_pool_stats", buffer_pool_stats, METH_NOARGS,
     "{hits, misses, missed_bytes, pooled_buffers, pooled_bytes} of the pool that recycles large buffers."},
    {"process_memory_limit", memory_process_limit, METH_NOARGS,
     "Bytes this process may use: min(physical RAM, cgroup limit, RLIMIT_AS)."},
    {"cgroup_limits", memory_cgroup_limits, METH_NOARGS,
     "(memory bytes or None, CPUs or None) from this process's cgroup, read afresh (tests)."},
    {"cpu_count", memory_cpu_count, METH_NOARGS, "CPUs this process may use."},
    {NULL, NULL, 0, NULL},
};
