/* Device arrays: the leaves of elements that prefetch_to_device put on a
 * device (csrc/device/), and the CUDA loader's Python face.
 *
 * DeviceArrayBase is the C half: it owns one reference to a device buffer
 * (shared by the element's components) and describes one tensor in it. Its
 * Python subclass (conveyor.device.DeviceArray, set_device_array_type's,
 * made for every array) checks the protocols' arguments (__dlpack__,
 * __array__, __cuda_array_interface__ v3) and derives the plain attributes
 * from _meta; this file keeps what touches the buffer: the DLPack export,
 * the stream sync and the copy to the host.
 *
 * Lifetimes: a capsule's DLManagedTensor owns its own buffer reference, so
 * the consumer may outlive the DeviceArray; its deleter only drops that
 * reference (no GIL needed: any thread, even after finalization). A
 * capsule never consumed calls the deleter from its destructor.
 *
 * Streams: _dlpack(handle > 0) makes the consumer's stream wait on the event
 * recorded after the copy (no device-wide sync) and remembers it, so that
 * freeing the block waits for the work it queued there (device.h).
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
    PyTypeObject *type = st->device_array_class ? st->device_array_class : st->device_array_type;
    CvDeviceArrayObject *self = (CvDeviceArrayObject *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    if (PyType_IS_GC(type)) /* a Python subclass is; it holds no Python object */
        PyObject_GC_UnTrack(self);
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
    tp->tp_free(op);
    Py_DECREF(tp);
}

static CvDeviceBuffer *buffer_of(CvDeviceArrayObject *self)
{
    return cv_device_buffer_of(self->t.buf);
}

static PyObject *raise(PyObject *op, CvStatus s)
{
    return cv_raise_status(cv_get_state(cv_module_of(op)), s);
}

/* ------------------------------------------------------------ DLPack */

/* Both kinds of capsule: one a consumer took is renamed ("used_..."). */
static void capsule_destructor(PyObject *capsule)
{
    bool versioned = PyCapsule_IsValid(capsule, CV_DLPACK_VERSIONED_CAPSULE);
    const char *name = versioned ? CV_DLPACK_VERSIONED_CAPSULE : CV_DLPACK_CAPSULE;
    if (PyCapsule_IsValid(capsule, name)) /* never consumed */
        cv_dlpack_delete(PyCapsule_GetPointer(capsule, name), versioned);
}

/* _dlpack(handle, versioned, copy): the capsule, its arguments checked by
 * DeviceArray.__dlpack__. handle > 0: a CUDA stream that waits on the copy
 * (1: the legacy default stream); 0 or -1: no synchronization. */
static PyObject *device_array_dlpack(PyObject *op, PyObject *args)
{
    CvDeviceArrayObject *self = (CvDeviceArrayObject *)op;
    long long handle;
    int versioned, copy;
    if (!PyArg_ParseTuple(args, "Lpp:_dlpack", &handle, &versioned, &copy))
        return NULL;
    CvStatus s = CV_STATUS_OK;
    void *managed = NULL;
    if (handle > 0) /* the consumer's stream waits for the copy */
        CV_UNLOCKED(s = cv_device_buffer_use_on(buffer_of(self), (uintptr_t)handle));
    if (!s)
        s = cv_dlpack_export(&self->t, self->dlpack_type, self->index, versioned, copy, &managed);
    if (s)
        return raise(op, s);
    PyObject *capsule = PyCapsule_New(
        managed, versioned ? CV_DLPACK_VERSIONED_CAPSULE : CV_DLPACK_CAPSULE, capsule_destructor);
    if (!capsule)
        cv_dlpack_delete(managed, versioned);
    return capsule;
}

/* _cuda_sync() -> (typestr, copy stream): for __cuda_array_interface__.
 * Syncing the copy stream (the "stream" entry) covers the copy, the only
 * work pending on the memory. Some consumers ignore that entry
 * (torch.as_tensor): the legacy default stream, which the streams of such
 * consumers sync with, waits on the copy too. The block is freed behind the
 * legacy default stream. */
static PyObject *device_array_cuda_sync(PyObject *op, PyObject *unused)
{
    (void)unused;
    CvDeviceArrayObject *self = (CvDeviceArrayObject *)op;
    CvDeviceBuffer *db = buffer_of(self);
    CvStatus s;
    CV_UNLOCKED(s = cv_device_buffer_wait(db, 1));
    if (s)
        return raise(op, s);
    return Py_BuildValue("(sN)", cv_dlpack_typestr(self->t.dtype),
                         PyLong_FromVoidPtr(db->device->stream));
}

/* ------------------------------------------------------------ the rest */

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
    CV_UNLOCKED(s = cv_device_buffer_read(buffer_of(self), t->data,
                                          PyArray_DATA((PyArrayObject *)arr), cv_tensor_nbytes(t)));
    if (s) {
        Py_DECREF(arr);
        return raise(op, s);
    }
    return arr;
}

/* _meta: (DLPack device type, index, shape as native int64s (bytes), dtype
 * name, nbytes, address), what DeviceArray's attributes are derived from. */
static PyObject *device_array_meta(PyObject *op, void *closure)
{
    (void)closure;
    CvDeviceArrayObject *self = (CvDeviceArrayObject *)op;
    return Py_BuildValue("(iiy#snN)", self->dlpack_type, self->index, (const char *)self->t.shape,
                         (Py_ssize_t)self->t.rank * (Py_ssize_t)sizeof(int64_t),
                         cv_dtype_name(self->t.dtype), (Py_ssize_t)cv_tensor_nbytes(&self->t),
                         PyLong_FromVoidPtr(self->t.data));
}

static PyMethodDef device_array_methods[] = {
    {"_dlpack", device_array_dlpack, METH_VARARGS,
     "_dlpack(stream handle, versioned, copy) -> capsule (DeviceArray.__dlpack__ checks)"},
    {"_cuda_sync", device_array_cuda_sync, METH_NOARGS, "_cuda_sync() -> (typestr, stream)"},
    {"numpy", device_array_numpy, METH_NOARGS,
     "The values as a NumPy array: a copy from a CUDA device, a view on the host."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef device_array_getset[] = {
    {"_meta", device_array_meta, NULL,
     "(device type, index, shape as int64 bytes, dtype name, nbytes, address)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot device_array_slots[] = {
    {Py_tp_dealloc, device_array_dealloc},
    {Py_tp_methods, device_array_methods},
    {Py_tp_getset, device_array_getset},
    {Py_tp_doc, "The C half of conveyor.device.DeviceArray: one tensor in device memory."},
    {0, NULL},
};

PyType_Spec cv_device_array_spec = {
    .name = "conveyor._engine.DeviceArrayBase",
    .basicsize = sizeof(CvDeviceArrayObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = device_array_slots,
};

/* ------------------------------------------------------------ functions */

/* cuda_load(candidates) -> None: load the CUDA runtime (the first call's
 * candidates, one a line, are the ones tried), or raise UnavailableError. */
static PyObject *device_cuda_load(PyObject *module, PyObject *arg)
{
    const char *names = PyUnicode_AsUTF8(arg); /* conveyor.device joins the paths */
    CvStatus s;
    if (!names)
        return NULL;
    CV_UNLOCKED(s = cv_cuda_load(names));
    return s ? cv_raise_status(cv_get_state(module), s) : Py_NewRef(Py_None);
}

/* bytes/s from page-locked memory */
static PyObject *device_copy_rate(PyObject *module, PyObject *args)
{
    int kind, index, repeats;
    Py_ssize_t nbytes;
    if (!PyArg_ParseTuple(args, "iini:copy_rate", &kind, &index, &nbytes, &repeats))
        return NULL; /* nbytes, repeats > 0: checked by conveyor.device.copy_bandwidth */
    double rate = 0.0;
    CvStatus s;
    CV_UNLOCKED(s = cv_device_measure_copy_rate(kind == 1 ? CV_DEVICE_CUDA : CV_DEVICE_CPU, index,
                                                (size_t)nbytes, repeats, &rate));
    return s ? cv_raise_status(cv_get_state(module), s) : PyFloat_FromDouble(rate);
}

PyMethodDef cv_device_functions[] = {
    {"cuda_load", device_cuda_load, METH_O, "cuda_load(candidates) -> None"},
    {"copy_rate", device_copy_rate, METH_VARARGS, "copy_rate(kind, index, nbytes, repeats) -> float"},
    {NULL, NULL, 0, NULL},
};
