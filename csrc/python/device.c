/* Device arrays: the leaves of elements that prefetch_to_device put on a
 * device (csrc/device/), and the CUDA loader's Python face.
 *
 * A DeviceArray owns one reference to a device buffer (shared by the
 * element's components) and describes one tensor in it. Consumers take it
 * without a copy through DLPack (__dlpack__ / __dlpack_device__: legacy
 * "dltensor" and versioned "dltensor_versioned" capsules) or CUDA's
 * __cuda_array_interface__ v3. numpy() copies to the host (the host kind:
 * a zero-copy view).
 *
 * Lifetimes: a capsule's DLManagedTensor owns its own buffer reference, so
 * the consumer may outlive the DeviceArray; its deleter only drops that
 * reference (no GIL needed: any thread, even after finalization). A
 * capsule never consumed calls the deleter from its destructor.
 *
 * Streams: __dlpack__(stream=s) makes s wait on the event recorded after
 * the copy (no device-wide sync) and remembers s, so that freeing the
 * block waits for the work s queued on it (device.h).
 */
#include <string.h>

#include "python/binding.h"

#include "device/cuda.h"
#include "device/device.h"
#include "device/dlpack.h"

typedef struct {
    PyObject_HEAD
    CvTensor t; /* owns one reference to its (device) buffer */
    int dlpack_type;
    int index;
} CvDeviceArrayObject;

PyObject *cv_device_array_new(CvModuleState *st, const CvTensor *t)
{
    CvDeviceBuffer *db = cv_device_buffer_of(t->buf);
    CvDeviceArrayObject *self = PyObject_New(CvDeviceArrayObject, st->device_array_type);
    if (!self)
        return NULL;
    cv_tensor_copy_ref(&self->t, t);
    self->dlpack_type = db->device->methods->dlpack_type;
    self->index = db->device->index;
    return (PyObject *)self;
}

static void device_array_dealloc(PyObject *op)
{
    CvDeviceArrayObject *self = (CvDeviceArrayObject *)op;
    PyTypeObject *tp = Py_TYPE(op);
    cv_tensor_clear(&self->t); /* the buffer's release needs no GIL */
    PyObject_Free(op);
    Py_DECREF(tp);
}

static CvDeviceBuffer *buffer_of(CvDeviceArrayObject *self)
{
    return cv_device_buffer_of(self->t.buf);
}

static PyObject *shape_tuple(const CvTensor *t)
{
    PyObject *shape = PyTuple_New(t->rank);
    for (int k = 0; shape && k < t->rank; k++) {
        PyObject *dim = PyLong_FromLongLong(t->shape[k]);
        if (!dim) {
            Py_CLEAR(shape);
            break;
        }
        PyTuple_SET_ITEM(shape, k, dim);
    }
    return shape;
}

/* ------------------------------------------------------------ DLPack */

static void legacy_capsule_destructor(PyObject *capsule)
{
    if (PyCapsule_IsValid(capsule, CV_DLPACK_CAPSULE)) /* never consumed */
        cv_dlpack_delete(PyCapsule_GetPointer(capsule, CV_DLPACK_CAPSULE), false);
}

static void versioned_capsule_destructor(PyObject *capsule)
{
    if (PyCapsule_IsValid(capsule, CV_DLPACK_VERSIONED_CAPSULE))
        cv_dlpack_delete(PyCapsule_GetPointer(capsule, CV_DLPACK_VERSIONED_CAPSULE), true);
}

/* The stream argument as a CUDA stream handle (1: legacy default), or -1
 * for "do not synchronize"; -2 with an exception set. */
static long long stream_arg(CvDeviceArrayObject *self, PyObject *stream)
{
    if (self->dlpack_type != CV_DLPACK_CUDA) {
        if (stream != Py_None) {
            PyErr_SetString(PyExc_ValueError, "__dlpack__: stream must be None for a CPU array");
            return -2;
        }
        return 0;
    }
    if (stream == Py_None)
        return 1;
    long long v = PyLong_AsLongLong(stream);
    if (v == -1 && PyErr_Occurred())
        return -2;
    if (v == 0 || v < -1) {
        PyErr_Format(PyExc_ValueError,
                     "__dlpack__: stream %lld is not valid for CUDA (None or 1: the legacy default "
                     "stream, 2: the per-thread default stream, -1: no synchronization, or a "
                     "stream handle)", v);
        return -2;
    }
    return v;
}

static int device_tuple_arg(PyObject *obj, int *type, int *id)
{
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 2) {
        PyErr_SetString(PyExc_TypeError, "__dlpack__: dl_device must be a (device_type, device_id) tuple");
        return -1;
    }
    *type = (int)PyLong_AsLong(PyTuple_GET_ITEM(obj, 0));
    *id = (int)PyLong_AsLong(PyTuple_GET_ITEM(obj, 1));
    return PyErr_Occurred() ? -1 : 0;
}

static PyObject *device_array_dlpack(PyObject *op, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    CvDeviceArrayObject *self = (CvDeviceArrayObject *)op;
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream,
                                     &max_version, &dl_device, &copy))
        return NULL;
    long long handle = stream_arg(self, stream);
    if (handle == -2)
        return NULL;
    if (dl_device != Py_None) {
        int type = 0, id = 0;
        if (device_tuple_arg(dl_device, &type, &id) < 0)
            return NULL;
        if (type != self->dlpack_type || id != self->index) {
            PyErr_Format(PyExc_BufferError,
                         "__dlpack__: the array is on device (%d, %d), not (%d, %d); conveyor "
                         "exports device arrays only where they are (numpy() copies to the host)",
                         self->dlpack_type, self->index, type, id);
            return NULL;
        }
    }
    int want_copy = copy == Py_None ? 0 : PyObject_IsTrue(copy);
    if (want_copy < 0)
        return NULL;
    if (want_copy && self->dlpack_type != CV_DLPACK_CPU) {
        PyErr_SetString(PyExc_BufferError,
                        "__dlpack__(copy=True) is not supported for CUDA arrays; the consumer "
                        "gets the array itself (every element has memory of its own)");
        return NULL;
    }
    bool versioned = false;
    if (max_version != Py_None) {
        if (!PyTuple_Check(max_version) || PyTuple_GET_SIZE(max_version) < 1) {
            PyErr_SetString(PyExc_TypeError, "__dlpack__: max_version must be a (major, minor) tuple");
            return NULL;
        }
        long major = PyLong_AsLong(PyTuple_GET_ITEM(max_version, 0));
        if (major == -1 && PyErr_Occurred())
            return NULL;
        versioned = major >= CV_DLPACK_MAJOR;
    }
    CvStatus s = CV_STATUS_OK;
    void *managed = NULL;
    if (handle > 0) { /* the consumer's stream waits for the copy */
        Py_BEGIN_ALLOW_THREADS
        s = cv_device_buffer_use_on(buffer_of(self), (uintptr_t)handle);
        Py_END_ALLOW_THREADS
    }
    if (!s)
        s = cv_dlpack_export(&self->t, self->dlpack_type, self->index, versioned, want_copy,
                             &managed);
    if (s)
        return cv_raise_status(cv_get_state(cv_module_of(op)), s);
    PyObject *capsule =
        versioned ? PyCapsule_New(managed, CV_DLPACK_VERSIONED_CAPSULE, versioned_capsule_destructor)
                  : PyCapsule_New(managed, CV_DLPACK_CAPSULE, legacy_capsule_destructor);
    if (!capsule)
        cv_dlpack_delete(managed, versioned);
    return capsule;
}

static PyObject *device_array_dlpack_device(PyObject *op, PyObject *unused)
{
    (void)unused;
    CvDeviceArrayObject *self = (CvDeviceArrayObject *)op;
    return Py_BuildValue("(ii)", self->dlpack_type, self->index);
}

/* ------------------------------------------------------------ the rest */

static PyObject *device_array_cai(PyObject *op, void *closure)
{
    (void)closure;
    CvDeviceArrayObject *self = (CvDeviceArrayObject *)op;
    if (self->dlpack_type != CV_DLPACK_CUDA) {
        PyErr_SetString(PyExc_AttributeError,
                        "__cuda_array_interface__: the array is on the host (cpu), not on a CUDA device");
        return NULL;
    }
    CvDeviceBuffer *db = buffer_of(self);
    /* Syncing the copy stream (the "stream" entry) covers the copy, the only
     * work pending on the memory. Some consumers ignore that entry
     * (torch.as_tensor): the legacy default stream, which the streams of
     * such consumers sync with, waits on the copy too. The block is freed
     * behind the legacy default stream. */
    CvStatus s;
    Py_BEGIN_ALLOW_THREADS
    s = cv_device_buffer_wait(db, 1);
    Py_END_ALLOW_THREADS
    if (s)
        return cv_raise_status(cv_get_state(cv_module_of(op)), s);
    PyObject *shape = shape_tuple(&self->t);
    if (!shape)
        return NULL;
    return Py_BuildValue("{s:N,s:s,s:(NO),s:i,s:O,s:N}", "shape", shape, "typestr",
                         cv_dlpack_typestr(self->t.dtype), "data",
                         PyLong_FromVoidPtr(self->t.data), Py_False, "version", 3, "strides",
                         Py_None, "stream", PyLong_FromVoidPtr(db->device->stream));
}

static PyObject *device_array_numpy(PyObject *op, PyObject *unused)
{
    (void)unused;
    CvDeviceArrayObject *self = (CvDeviceArrayObject *)op;
    const CvTensor *t = &self->t;
    npy_intp dims[CV_MAX_RANK];
    for (int k = 0; k < t->rank; k++)
        dims[k] = (npy_intp)t->shape[k];
    PyArray_Descr *descr = cv_descr_for(t->dtype); /* stolen by the array's maker */
    if (!descr)
        return NULL;
    if (self->dlpack_type == CV_DLPACK_CPU) { /* a view; this object keeps the memory */
        PyObject *arr = PyArray_NewFromDescr(
            &PyArray_Type, descr, t->rank, dims, NULL, t->data,
            NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE, NULL);
        if (arr && PyArray_SetBaseObject((PyArrayObject *)arr, Py_NewRef(op)) < 0)
            Py_CLEAR(arr);
        return arr;
    }
    PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, descr, t->rank, dims, NULL, NULL, 0, NULL);
    if (!arr)
        return NULL;
    CvStatus s;
    Py_BEGIN_ALLOW_THREADS
    s = cv_device_buffer_read(buffer_of(self), t->data, PyArray_DATA((PyArrayObject *)arr),
                              cv_tensor_nbytes(t));
    Py_END_ALLOW_THREADS
    if (s) {
        Py_DECREF(arr);
        return cv_raise_status(cv_get_state(cv_module_of(op)), s);
    }
    return arr;
}

/* The plain attributes: one getter, the attribute in its closure. */
enum { ATTR_SHAPE, ATTR_DTYPE, ATTR_NDIM, ATTR_SIZE, ATTR_NBYTES, ATTR_DEVICE, ATTR_DATA_PTR };

static PyObject *device_array_attr(PyObject *op, void *closure)
{
    CvDeviceArrayObject *self = (CvDeviceArrayObject *)op;
    switch ((int)(intptr_t)closure) {
    case ATTR_SHAPE:
        return shape_tuple(&self->t);
    case ATTR_DTYPE:
        return (PyObject *)cv_descr_for(self->t.dtype);
    case ATTR_NDIM:
        return PyLong_FromLong(self->t.rank);
    case ATTR_SIZE:
        return PyLong_FromLongLong(cv_tensor_num_elements(&self->t));
    case ATTR_NBYTES:
        return PyLong_FromSize_t(cv_tensor_nbytes(&self->t));
    case ATTR_DEVICE:
        return PyUnicode_FromFormat("%s:%d", self->dlpack_type == CV_DLPACK_CUDA ? "cuda" : "cpu",
                                    self->index);
    default:
        return PyLong_FromVoidPtr(self->t.data);
    }
}

/* NumPy 2's protocol: copy=True always gives memory of its own (np.array's
 * default), False never copies (ValueError where one is needed: a CUDA
 * array, a cast), None copies only where needed (a view on the host). */
static PyObject *device_array_array(PyObject *op, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"dtype", "copy", NULL};
    CvDeviceArrayObject *self = (CvDeviceArrayObject *)op;
    PyObject *dtype = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:__array__", kwlist, &dtype, &copy))
        return NULL;
    int want_copy = copy == Py_None ? -1 : PyObject_IsTrue(copy);
    if (copy != Py_None && want_copy < 0)
        return NULL;
    PyArray_Descr *descr = NULL;
    if (dtype != Py_None && !PyArray_DescrConverter(dtype, &descr))
        return NULL;
    PyArray_Descr *own = cv_descr_for(self->t.dtype);
    if (!own) {
        Py_XDECREF(descr);
        return NULL;
    }
    bool cast = descr && !PyArray_EquivTypes(descr, own);
    Py_DECREF(own);
    if (want_copy == 0 && (cast || self->dlpack_type != CV_DLPACK_CPU)) {
        Py_XDECREF(descr);
        PyErr_SetString(PyExc_ValueError,
                        self->dlpack_type != CV_DLPACK_CPU
                            ? "__array__(copy=False): a CUDA array cannot be read from the host "
                              "without a copy (numpy() copies it)"
                            : "__array__(copy=False): a cast to another dtype needs a copy");
        return NULL;
    }
    PyObject *arr = device_array_numpy(op, NULL); /* host: a view; CUDA: a copy */
    if (arr && cast)
        Py_SETREF(arr, PyArray_CastToType((PyArrayObject *)arr, descr, 0)); /* steals descr */
    else
        Py_XDECREF(descr);
    if (arr && !cast && want_copy == 1 && self->dlpack_type == CV_DLPACK_CPU)
        Py_SETREF(arr, PyArray_NewCopy((PyArrayObject *)arr, NPY_CORDER));
    return arr;
}

static Py_ssize_t device_array_len(PyObject *op)
{
    CvDeviceArrayObject *self = (CvDeviceArrayObject *)op;
    if (self->t.rank == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d device array");
        return -1;
    }
    return (Py_ssize_t)self->t.shape[0];
}

static PyObject *device_array_repr(PyObject *op)
{
    CvDeviceArrayObject *self = (CvDeviceArrayObject *)op;
    char shape[256];
    cv_shape_str(self->t.shape, self->t.rank, shape, sizeof(shape));
    return PyUnicode_FromFormat("<conveyor.DeviceArray shape=%s dtype=%s device=%s:%d>", shape,
                                cv_dtype_name(self->t.dtype),
                                self->dlpack_type == CV_DLPACK_CUDA ? "cuda" : "cpu", self->index);
}

static PyMethodDef device_array_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))device_array_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) -> capsule\n\n"
     "A DLPack capsule over the array's memory (no copy). For CUDA, `stream` is the consumer's\n"
     "stream (None or 1: legacy default, 2: per-thread default, a handle, -1: no sync): it\n"
     "waits on the copy's event. max_version >= (1, 0) gives a versioned capsule."},
    {"__dlpack_device__", device_array_dlpack_device, METH_NOARGS,
     "(device_type, device_id): (2, N) for cuda:N, (1, 0) for the host."},
    {"numpy", device_array_numpy, METH_NOARGS,
     "The values as a NumPy array: a copy from a CUDA device, a view on the host."},
    {"__array__", (PyCFunction)(void (*)(void))device_array_array, METH_VARARGS | METH_KEYWORDS,
     "np.asarray(array): as numpy()."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef device_array_getset[] = {
    {"__cuda_array_interface__", device_array_cai, NULL, "CUDA Array Interface v3 (CUDA arrays only).", NULL},
#define ATTR(name, which, doc) {name, device_array_attr, NULL, doc, (void *)(intptr_t)(which)}
    ATTR("shape", ATTR_SHAPE, "The shape, a tuple of ints."),
    ATTR("dtype", ATTR_DTYPE, "The NumPy dtype."),
    ATTR("ndim", ATTR_NDIM, "The rank."),
    ATTR("size", ATTR_SIZE, "The number of values."),
    ATTR("nbytes", ATTR_NBYTES, "Bytes of the values."),
    ATTR("device", ATTR_DEVICE, "Where the memory is: 'cuda:N' or 'cpu:0'."),
    ATTR("data_ptr", ATTR_DATA_PTR, "The address of the first value (device memory)."),
#undef ATTR
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot device_array_slots[] = {
    {Py_tp_dealloc, device_array_dealloc},
    {Py_tp_repr, device_array_repr},
    {Py_tp_methods, device_array_methods},
    {Py_tp_getset, device_array_getset},
    {Py_sq_length, device_array_len},
    {Py_mp_length, device_array_len},
    {Py_tp_doc, "An array in device memory, from prefetch_to_device / copy_to_device.\n\n"
                "Hand it to a framework without a copy: torch.from_dlpack(x), "
                "jax.dlpack.from_dlpack(x), cupy.asarray(x) (or cupy.from_dlpack); numpy() "
                "copies it to the host."},
    {0, NULL},
};

static PyType_Spec device_array_spec = {
    .name = "conveyor._engine.DeviceArray",
    .basicsize = sizeof(CvDeviceArrayObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = device_array_slots,
};

int cv_device_init(PyObject *module, CvModuleState *st)
{
    st->device_array_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &device_array_spec, NULL);
    if (!st->device_array_type || PyModule_AddObjectRef(module, "DeviceArray", (PyObject *)st->device_array_type) < 0)
        return -1;
    return 0;
}

/* ------------------------------------------------------------ functions */

/* cuda_load(candidates) -> None: load the CUDA runtime (the first call's
 * candidates are the ones tried), or raise UnavailableError. */
static PyObject *device_cuda_load(PyObject *module, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "cuda_load: expected a list of library paths");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    const char *names[16];
    if (n > 16)
        n = 16;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!(names[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i)))) {
            Py_DECREF(seq);
            return NULL;
        }
    CvStatus s;
    Py_BEGIN_ALLOW_THREADS
    s = cv_cuda_load(names, (int)n);
    Py_END_ALLOW_THREADS
    Py_DECREF(seq);
    if (s)
        return cv_raise_status(cv_get_state(module), s);
    Py_RETURN_NONE;
}

static PyObject *device_cuda_info(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    int runtime = 0, driver = 0, count = cv_cuda_device_count();
    if (count > 0) {
        cv_cuda()->RuntimeGetVersion(&runtime);
        cv_cuda()->DriverGetVersion(&driver);
    }
    return Py_BuildValue("{s:s,s:i,s:i,s:i}", "library", cv_cuda_library(), "device_count", count,
                         "runtime_version", runtime, "driver_version", driver);
}

/* copy_rate(kind, index, nbytes, repeats) -> bytes/s from page-locked memory. */
static PyObject *device_copy_rate(PyObject *module, PyObject *args)
{
    int kind, index, repeats;
    Py_ssize_t nbytes;
    if (!PyArg_ParseTuple(args, "iini:copy_rate", &kind, &index, &nbytes, &repeats))
        return NULL;
    if (nbytes <= 0 || repeats <= 0) {
        PyErr_SetString(PyExc_ValueError, "copy_rate: nbytes and repeats must be > 0");
        return NULL;
    }
    double rate = 0.0;
    CvStatus s;
    Py_BEGIN_ALLOW_THREADS
    s = cv_device_measure_copy_rate(kind == 1 ? CV_DEVICE_CUDA : CV_DEVICE_CPU, index,
                                    (size_t)nbytes, repeats, &rate);
    Py_END_ALLOW_THREADS
    if (s)
        return cv_raise_status(cv_get_state(module), s);
    return PyFloat_FromDouble(rate);
}

/* staging_cache_info() -> dict: the page-locked staging cache (device.h). */
static PyObject *device_staging_cache_info(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    CvStagingStats st = cv_device_staging_stats();
    return Py_BuildValue("{s:K,s:K,s:n,s:n}", "hits", (unsigned long long)st.hits, "misses",
                         (unsigned long long)st.misses, "cached_bytes", (Py_ssize_t)st.cached_bytes,
                         "cached_blocks", (Py_ssize_t)st.cached_blocks);
}

/* staging_cache_empty() -> bytes freed. */
static PyObject *device_staging_cache_empty(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    size_t freed;
    Py_BEGIN_ALLOW_THREADS /* cudaFreeHost waits for the device */
    freed = cv_device_staging_trim();
    Py_END_ALLOW_THREADS
    return PyLong_FromSize_t(freed);
}

PyMethodDef cv_device_functions[] = {
    {"staging_cache_info", device_staging_cache_info, METH_NOARGS, "staging_cache_info() -> dict"},
    {"staging_cache_empty", device_staging_cache_empty, METH_NOARGS, "staging_cache_empty() -> int"},
    {"cuda_load", device_cuda_load, METH_O, "cuda_load(candidates) -> None"},
    {"cuda_info", device_cuda_info, METH_NOARGS, "cuda_info() -> dict"},
    {"copy_rate", device_copy_rate, METH_VARARGS, "copy_rate(kind, index, nbytes, repeats) -> float"},
    {NULL, NULL, 0, NULL},
};
