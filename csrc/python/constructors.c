/* Module functions that build the core datasets: sources (tensor_slices,
 * tensors, range, generator) and the common transformations (map, batch,
 * interleave, prefetch, shuffle, take, skip, repeat, ignore_errors). The
 * other builders live next to their kind: transform.c, grouping.c, records.c,
 * cache.c. Arguments arrive normalized by conveyor/data/dataset.py and conveyor/data/ops/.
 */
#include "python/binding.h"

#include "device/prefetch_to_device.h"
#include "kernels/kernels.h"

static PyObject *constructors_tensor_slices(PyObject *module, PyObject *components)
{
    CvElement e;
    CvStatus s = cv_element_from_sequence(cv_get_state(module), components, &e);
    if (s)
        return cv_raise_status(cv_get_state(module), s);
    CvDataset *ds = NULL;
    s = cv_tensor_slices_dataset(&e, &ds);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *constructors_tensors(PyObject *module, PyObject *components)
{
    CvElement e;
    CvStatus s = cv_element_from_sequence(cv_get_state(module), components, &e);
    if (s)
        return cv_raise_status(cv_get_state(module), s);
    CvDataset *ds = NULL;
    s = cv_tensors_dataset(&e, &ds);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *constructors_range(PyObject *module, PyObject *args, PyObject *kwargs)
{
    long long start, stop, step;
    int dtype;
    static char *keywords[] = {"start", "stop", "step", "dtype", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "LLLi:range", keywords, &start, &stop, &step,
                                     &dtype))
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_range_dataset(start, stop, step, (CvDtype)dtype, &ds);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *constructors_generator(PyObject *module, PyObject *args)
{
    PyObject *factory, *name;
    if (!PyArg_ParseTuple(args, "OU:generator", &factory, &name))
        return NULL;
    CvSource src;
    CvDataset *ds = NULL;
    CvStatus s = cv_source_from_python(module, factory, name, &src);
    if (!s)
        s = cv_generator_dataset(src, &ds);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *constructors_map(PyObject *module, PyObject *args, PyObject *kwargs)
{
    PyObject *input, *fn, *out_convert, *name;
    long long parallel;
    int deterministic, with_id = 0;
    CvMemory *memory = NULL;
    static char *keywords[] = {"input", "fn", "out_convert", "num_parallel_calls", "deterministic",
                               "name", "with_id", "memory", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOLpU|pO&:map", keywords, &input, &fn,
                                     &out_convert, &parallel, &deterministic, &name, &with_id,
                                     cv_memory_arg, &memory))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvFunction f;
    CvDataset *ds = NULL;
    CvStatus s = cv_function_from_arg(module, fn, out_convert, name, with_id, &f);
    if (!s)
        s = cv_map_dataset(in, f, parallel, deterministic, &ds);
    return cv_wrap_buffering(module, s, ds, memory);
}

static PyObject *constructors_batch(PyObject *module, PyObject *args, PyObject *kwargs)
{
    PyObject *input;
    long long batch_size, parallel;
    int drop_remainder, deterministic;
    CvMemory *memory = NULL;
    static char *keywords[] = {"input", "batch_size", "drop_remainder", "num_parallel_calls",
                               "deterministic", "memory", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OLpLp|O&:batch", keywords, &input, &batch_size,
                                     &drop_remainder, &parallel, &deterministic, cv_memory_arg,
                                     &memory))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_batch_dataset(in, batch_size, drop_remainder, parallel, deterministic, &ds);
    return cv_wrap_buffering(module, s, ds, memory);
}

static PyObject *constructors_interleave(PyObject *module, PyObject *args, PyObject *kwargs)
{
    PyObject *input, *fn, *name;
    long long cycle_length, block_length, parallel;
    int deterministic;
    CvMemory *memory = NULL;
    static char *keywords[] = {"input", "fn", "cycle_length", "block_length", "num_parallel_calls",
                               "deterministic", "name", "memory", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOLLLpU|O&:interleave", keywords, &input, &fn,
                                     &cycle_length, &block_length, &parallel, &deterministic, &name,
                                     cv_memory_arg, &memory))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvDatasetFunction f;
    CvDataset *ds = NULL;
    CvStatus s = cv_dataset_function_from_python(module, fn, name, &f);
    if (!s)
        s = cv_interleave_dataset(in, f, cycle_length, block_length, parallel, deterministic, &ds);
    return cv_wrap_buffering(module, s, ds, memory);
}

static PyObject *constructors_ignore_errors(PyObject *module, PyObject *args)
{
    PyObject *input;
    int log_warning;
    if (!PyArg_ParseTuple(args, "Op:ignore_errors", &input, &log_warning))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_ignore_errors_dataset(in, log_warning, &ds);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *constructors_shuffle(PyObject *module, PyObject *args, PyObject *kwargs)
{
    PyObject *input;
    long long buffer_size, seed, seed2;
    int reshuffle;
    CvMemory *memory = NULL;
    static char *keywords[] = {"input", "buffer_size", "seed", "seed2", "reshuffle_each_iteration",
                               "memory", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OLLLp|O&:shuffle", keywords, &input,
                                     &buffer_size, &seed, &seed2, &reshuffle, cv_memory_arg,
                                     &memory))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_shuffle_dataset(in, buffer_size, seed, seed2, reshuffle, &ds);
    return cv_wrap_buffering(module, s, ds, memory);
}

typedef CvStatus (*CvCountedKernel)(CvDataset *, int64_t, CvDataset **);

static PyObject *counted(PyObject *module, PyObject *args, CvCountedKernel make, const char *fmt)
{
    PyObject *input;
    long long count;
    if (!PyArg_ParseTuple(args, fmt, &input, &count))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = make(in, count, &ds);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *constructors_prefetch(PyObject *module, PyObject *args)
{
    PyObject *input;
    long long buffer_size;
    CvMemory *memory = NULL;
    if (!PyArg_ParseTuple(args, "OL|O&:prefetch", &input, &buffer_size, cv_memory_arg, &memory))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_prefetch_dataset(in, buffer_size, &ds);
    return cv_wrap_buffering(module, s, ds, memory);
}

/* prefetch_to_device(input, kind, index, buffer_size, memory=None): kind 0
 * the host, 1 CUDA (the runtime loaded first by the Python layer). */
static PyObject *constructors_prefetch_to_device(PyObject *module, PyObject *args, PyObject *kwargs)
{
    PyObject *input;
    int kind, index;
    long long buffer_size;
    CvMemory *memory = NULL;
    static char *keywords[] = {"input", "kind", "index", "buffer_size", "memory", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OiiL|O&:prefetch_to_device", keywords, &input,
                                     &kind, &index, &buffer_size, cv_memory_arg, &memory))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    if (!in)
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_prefetch_to_device_dataset(in, kind == 1 ? CV_DEVICE_CUDA : CV_DEVICE_CPU, index,
                                               buffer_size, &ds);
    return cv_wrap_buffering(module, s, ds, memory);
}

static PyObject *constructors_take(PyObject *module, PyObject *args)
{
    return counted(module, args, cv_take_dataset, "OL:take");
}

static PyObject *constructors_skip(PyObject *module, PyObject *args)
{
    return counted(module, args, cv_skip_dataset, "OL:skip");
}

static PyObject *constructors_repeat(PyObject *module, PyObject *args)
{
    return counted(module, args, cv_repeat_dataset, "OL:repeat");
}

static PyObject *constructors_shuffle_batch(PyObject *module, PyObject *args, PyObject *kwargs)
{
    PyObject *shuffle;
    long long batch_size, parallel;
    int drop_remainder, deterministic;
    CvMemory *memory = NULL;
    static char *keywords[] = {"shuffle", "batch_size", "drop_remainder", "num_parallel_calls",
                               "deterministic", "memory", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OLpLp|O&:shuffle_batch", keywords, &shuffle,
                                     &batch_size, &drop_remainder, &parallel, &deterministic,
                                     cv_memory_arg, &memory))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, shuffle);
    if (!in)
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_shuffle_batch_dataset(in, batch_size, drop_remainder, parallel, deterministic,
                                          &ds);
    return cv_wrap_buffering(module, s, ds, memory);
}

static PyObject *constructors_map_batch(PyObject *module, PyObject *args, PyObject *kwargs)
{
    PyObject *map;
    long long batch_size;
    int drop_remainder;
    CvMemory *memory = NULL;
    static char *keywords[] = {"map", "batch_size", "drop_remainder", "memory", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OLp|O&:map_batch", keywords, &map, &batch_size,
                                     &drop_remainder, cv_memory_arg, &memory))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, map);
    if (!in)
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_map_batch_dataset(in, batch_size, drop_remainder, &ds);
    return cv_wrap_buffering(module, s, ds, memory);
}

PyMethodDef cv_constructor_functions[] = {
    {"tensor_slices", constructors_tensor_slices, METH_O, "tensor_slices(list of arrays) -> Dataset"},
    {"tensors", constructors_tensors, METH_O, "tensors(list of arrays) -> Dataset"},
    {"range", CV_METHOD_KEYWORDS(constructors_range), "range(start, stop, step, dtype) -> Dataset"},
    {"generator", constructors_generator, METH_VARARGS, "generator(factory, name) -> Dataset"},
    {"map", CV_METHOD_KEYWORDS(constructors_map),
     "map(input, fn, out_convert, num_parallel_calls, deterministic, name, with_id=False, "
     "memory=None) -> Dataset"},
    {"batch", CV_METHOD_KEYWORDS(constructors_batch),
     "batch(input, batch_size, drop_remainder, num_parallel_calls, deterministic, memory=None) "
     "-> Dataset"},
    {"interleave", CV_METHOD_KEYWORDS(constructors_interleave),
     "interleave(input, fn, cycle_length, block_length, num_parallel_calls, deterministic, name, "
     "memory=None) -> Dataset; fn(*components) returns an engine Dataset"},
    {"ignore_errors", constructors_ignore_errors, METH_VARARGS, "ignore_errors(input, log_warning) -> Dataset"},
    {"prefetch", constructors_prefetch, METH_VARARGS, "prefetch(input, buffer_size, memory=None) -> Dataset"},
    {"prefetch_to_device", CV_METHOD_KEYWORDS(constructors_prefetch_to_device),
     "prefetch_to_device(input, kind, index, buffer_size, memory=None) -> Dataset"},
    {"shuffle", CV_METHOD_KEYWORDS(constructors_shuffle),
     "shuffle(input, buffer_size, seed, seed2, reshuffle_each_iteration, memory=None) -> Dataset"},
    {"shuffle_batch", CV_METHOD_KEYWORDS(constructors_shuffle_batch),
     "shuffle_batch(shuffle, batch_size, drop_remainder, num_parallel_calls, deterministic, "
     "memory=None) -> Dataset: shuffle followed by batch, fused"},
    {"map_batch", CV_METHOD_KEYWORDS(constructors_map_batch),
     "map_batch(map, batch_size, drop_remainder, memory=None) -> Dataset: a parallel map "
     "followed by batch, fused"},
    {"take", constructors_take, METH_VARARGS, "take(input, count) -> Dataset"},
    {"skip", constructors_skip, METH_VARARGS, "skip(input, count) -> Dataset"},
    {"repeat", constructors_repeat, METH_VARARGS, "repeat(input, count) -> Dataset"},
    {NULL, NULL, 0, NULL},
};
