/* Binding of RAM budgets (core/ram_budget.h), of the process's limits
 * (memory, cgroup, CPU count) and of the engine's counters and reports
 * (buffers in use, the buffer pool, remote I/O, CUDA, the staging cache,
 * live iterators, the CPU budget, the CRC-32C implementation).
 *
 * A budget reaches Python as a handle (handles.c) owning one reference;
 * options_op.py makes one per with_options() that sets
 * options.autotune.ram_budget, for the constructors of the stages that
 * buffer, which record it in their engine dataset. */
#include "python/binding.h"

#include "core/cgroup.h"
#include "core/hash128.h"
#include "core/ram_budget.h"
#include "core/tensor.h"
#include "device/cuda.h"
#include "device/device.h"
#include "io/crc32c.h"
#include "io/http.h"

int cv_memory_arg(PyObject *obj, CvMemory **out)
{
    *out = obj == Py_None ? NULL : cv_handle_arg(obj, CV_HANDLE_MEMORY);
    return obj == Py_None || *out;
}

/* memory_budget(limit > 0, checked by options_op.py) -> a budget handle */
static PyObject *memory_budget(PyObject *module, PyObject *arg)
{
    (void)module;
    long long limit = PyLong_AsLongLong(arg);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    CvMemory *m = cv_memory_new(limit);
    return m ? cv_handle_new(CV_HANDLE_MEMORY, m) : PyErr_NoMemory();
}

/* The engine's counters and limits, one row each of cv_value_functions
 * (cv_row_of); the argument is a budget (None: the process default), an
 * int or a flag where the row takes one. The reports (core/report.h) come
 * first, their makers by row in `reports`. */
enum { POOL, IO_STATS, CUDA_INFO, STAGING_INFO, NUM_REPORTS, USAGE = NUM_REPORTS, PEAK, IN_USE,
       PROCESS_LIMIT, CGROUP, CPU_COUNT, CPU_BUDGET, CEILING, STAGING_EMPTY, CRC_HARDWARE,
       CRC_SOFTWARE, LIVE };

static CvStatus (*const reports[NUM_REPORTS])(CvReport *r) = {
    [POOL] = cv_buffer_pool_report, [IO_STATS] = cv_io_report, /* io/http.h */
    [CUDA_INFO] = cv_cuda_report, [STAGING_INFO] = cv_device_staging_report, /* csrc/device/ */
};

static PyObject *memory_value(PyObject *self, PyObject *arg)
{
    PyObject *module;
    int row = cv_row_of(self, &module);
    CvMemory *m = NULL;
    long n = 0;
    if ((row == USAGE || row == PEAK) && !cv_memory_arg(arg, &m))
        return NULL;
    if ((row == CPU_BUDGET || row == CEILING) && (n = PyLong_AsLong(arg)) == -1 && PyErr_Occurred())
        return NULL;
    if (row == CRC_SOFTWARE && (n = PyObject_IsTrue(arg)) < 0)
        return NULL;
    int64_t bytes = row == CGROUP ? cv_cgroup_memory_limit() : 0;
    double cpus = row == CGROUP ? cv_cgroup_cpu_limit() : 0;
    CvReport r;
    size_t freed;
    if (row < NUM_REPORTS) {
        cv_report_init(&r);
        return cv_report_to_python(cv_get_state(module), &r, reports[row](&r));
    }
    switch (row) {
    case USAGE:
        return Py_BuildValue("LL", (long long)cv_memory_used(m), (long long)cv_memory_limit(m));
    case PEAK:
        return PyLong_FromLongLong((long long)cv_memory_peak(m));
    case IN_USE:
        return PyLong_FromLongLong(cv_memory_in_use());
    case PROCESS_LIMIT:
        return PyLong_FromLongLong(cv_memory_process_limit());
    case CGROUP: /* N steals each value; a NULL one fails the call */
        return Py_BuildValue("NN", bytes < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(bytes),
                             cpus < 0 ? Py_NewRef(Py_None) : PyFloat_FromDouble(cpus));
    case CPU_COUNT:
        return PyLong_FromLong(cv_cpu_count());
    /* The budgets, resolved in one place (core/pipeline.h) for the Python
     * layer too: AUTOTUNE's worker count is fixed when a dataset is built. */
    case CPU_BUDGET:
        return PyLong_FromLong(cv_cpu_budget(n < 0 || n > 65536 ? 0 : (int)n));
    case CEILING:
        return PyLong_FromLong(cv_autotune_ceiling(n < 1 || n > 65536 ? 1 : (int)n));
    case STAGING_EMPTY:
        CV_UNLOCKED(freed = cv_device_staging_trim()); /* cudaFreeHost waits for the device */
        return PyLong_FromSize_t(freed);
    case CRC_HARDWARE:
        return PyBool_FromLong(cv_crc32c_hardware());
    case CRC_SOFTWARE: /* every CRC-32C in the process uses the table (tests) */
        cv_crc32c_force_software((bool)n);
        Py_RETURN_NONE;
    default:
        return PyLong_FromLong(cv_pipeline_live_count());
    }
}

PyMethodDef cv_value_functions[] = {
    [USAGE] = {"memory_budget_usage", memory_value, METH_O,
               "memory_budget_usage(budget or None) -> (bytes charged, limit); None: the process default"},
    [PEAK] = {"memory_budget_peak", memory_value, METH_O,
              "memory_budget_peak(budget or None) -> the most bytes ever charged to it at once"},
    [IN_USE] = {"memory_in_use", memory_value, METH_NOARGS,
                "Bytes that the buffers of all pipelines hold (charged to any budget)."},
    [POOL] = {"buffer_pool_stats", memory_value, METH_NOARGS,
              "{hits, misses, missed_bytes, pooled_buffers, pooled_bytes} of the pool that recycles large buffers."},
    [IO_STATS] = {"io_stats", memory_value, METH_NOARGS, "io_stats() -> dict: the process's remote I/O"},
    [CUDA_INFO] = {"cuda_info", memory_value, METH_NOARGS, "cuda_info() -> dict: what was loaded"},
    [STAGING_INFO] = {"staging_cache_info", memory_value, METH_NOARGS,
                      "staging_cache_info() -> dict: the page-locked staging cache"},
    [PROCESS_LIMIT] = {"process_memory_limit", memory_value, METH_NOARGS,
                       "Bytes this process may use: min(physical RAM, cgroup limit, RLIMIT_AS)."},
    [CGROUP] = {"cgroup_limits", memory_value, METH_NOARGS,
                "(memory bytes or None, CPUs or None) from this process's cgroup, read afresh (tests)."},
    [CPU_COUNT] = {"cpu_count", memory_value, METH_NOARGS, "CPUs this process may use."},
    [CPU_BUDGET] = {"cpu_budget", memory_value, METH_O,
                    "cpu_budget(requested) -> the CPUs a pipeline runs on: requested, or (0) the CPUs "
                    "this process may use."},
    [CEILING] = {"autotune_ceiling", memory_value, METH_O,
                 "autotune_ceiling(budget) -> the most turns an AUTOTUNE stage runs at once on budget CPUs."},
    [STAGING_EMPTY] = {"staging_cache_empty", memory_value, METH_NOARGS,
                       "staging_cache_empty() -> bytes freed"},
    [CRC_HARDWARE] = {"crc32c_hardware", memory_value, METH_NOARGS, "True when CRC-32C uses SSE4.2"},
    [CRC_SOFTWARE] = {"crc32c_force_software", memory_value, METH_O,
                      "crc32c_force_software(on): make every CRC-32C in the process use the table (tests)"},
    [LIVE] = {"live_iterators", memory_value, METH_NOARGS, "Number of open iterators."},
    {NULL, NULL, 0, NULL},
};

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
    if (size >= ((size_t)1 << 16))
        CV_UNLOCKED(cv_hash128(view.buf, size, digest));
    else
        cv_hash128(view.buf, size, digest);
    PyBuffer_Release(&view);
    return PyBytes_FromStringAndSize((const char *)digest, sizeof digest);
}

PyMethodDef cv_memory_functions[] = {
    {"hash_buffer", memory_hash_buffer, METH_O,
     "hash_buffer(obj) -> 16 bytes: a fast 128-bit hash of a C-contiguous buffer's bytes, the "
     "same on every machine (not cryptographic)."},
    {"memory_budget", memory_budget, METH_O,
     "memory_budget(limit_bytes) -> a RAM budget for the stages of one pipeline"},
    {NULL, NULL, 0, NULL},
};
