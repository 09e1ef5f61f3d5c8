/* Tensors <-> NumPy. Engine -> Python is zero-copy for numeric tensors: the
 * array points into the engine buffer and its base is a BufferHolder that
 * owns one buffer reference; it is writable only when nothing else in the
 * engine shares the buffer (so a user writing into a batch cannot corrupt a
 * cached or sliced source). Strings are copied into bytes objects.
 * Python -> engine copies into a fresh buffer, except when the array
 * already views an engine buffer (a map function returning its input or a
 * slice of it), which is shared. */
#include <string.h>

#include "python/binding.h"

#include "device/device.h"

typedef struct {
    PyObject_HEAD
    CvBuffer *buf; /* owned reference */
} CvBufferHolder;

static void holder_dealloc(PyObject *op)
{
    CvBufferHolder *self = (CvBufferHolder *)op;
    PyTypeObject *tp = Py_TYPE(op);
    cv_buffer_unref(self->buf);
    tp->tp_free(op);
    Py_DECREF(tp);
}

static PyType_Slot holder_slots[] = {
    {Py_tp_dealloc, holder_dealloc},
    {Py_tp_doc, "Keeps a conveyor engine buffer alive while NumPy arrays view it."},
    {0, NULL},
};

PyType_Spec cv_holder_spec = {
    .name = "conveyor._engine.BufferHolder",
    .basicsize = sizeof(CvBufferHolder),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = holder_slots,
};

/* Bytes of item i of a string-like array: 'S' (trailing NULs dropped, as
 * numpy does), 'U' (UTF-8 encoded) or object (bytes or str). For 'U' and
 * object arrays *tmp receives a new reference that keeps *data alive. */
static CvStatus string_item(PyArrayObject *arr, npy_intp i, const char **data, Py_ssize_t *len,
                            PyObject **tmp)
{
    PyArray_Descr *d = PyArray_DESCR(arr);
    char *p = (char *)PyArray_DATA(arr) + i * PyDataType_ELSIZE(d);
    *tmp = NULL;
    if (d->kind == 'S') {
        Py_ssize_t n = (Py_ssize_t)PyDataType_ELSIZE(d);
        while (n > 0 && p[n - 1] == '\0')
            n--;
        *data = p;
        *len = n;
        return CV_STATUS_OK;
    }
    PyObject *item;
    if (d->kind == 'O') {
        memcpy(&item, p, sizeof(item));
        Py_XINCREF(item);
    } else {
        item = PyArray_GETITEM(arr, p); /* a str */
    }
    if (item && PyArray_Check(item) && PyArray_NDIM((PyArrayObject *)item) == 0 &&
        PyArray_DESCR((PyArrayObject *)item)->type_num == NPY_OBJECT) {
        /* a scalar string from plain iteration (a 0-d EagerTensor): its bytes */
        PyObject *inner;
        memcpy(&inner, PyArray_DATA((PyArrayObject *)item), sizeof(inner));
        Py_XINCREF(inner);
        Py_SETREF(item, inner);
    }
    if (!item)
        return cv_error(CV_INVALID_ARGUMENT, "could not read string item %zd", (Py_ssize_t)i);
    if (PyBytes_Check(item)) {
        *data = PyBytes_AS_STRING(item);
        *len = PyBytes_GET_SIZE(item);
        *tmp = item;
        return CV_STATUS_OK;
    }
    if (PyUnicode_Check(item)) {
        *data = PyUnicode_AsUTF8AndSize(item, len);
        if (!*data) {
            PyErr_Clear();
            Py_DECREF(item);
            return cv_error(CV_INVALID_ARGUMENT, "string item %zd is not valid Unicode", (Py_ssize_t)i);
        }
        *tmp = item;
        return CV_STATUS_OK;
    }
    CvStatus s = cv_error(CV_INVALID_ARGUMENT,
                          "item %zd of a string tensor is a %s; expected bytes or str",
                          (Py_ssize_t)i, Py_TYPE(item)->tp_name);
    Py_DECREF(item);
    return s;
}

/* A string array's items packed into a string tensor. */
static CvStatus strings_from_array(PyArrayObject *arr, CvTensor *out)
{
    npy_intp n = PyArray_SIZE(arr);
    size_t slots = n ? (size_t)n : 1;
    const char **data = PyMem_Calloc(slots, sizeof(char *));
    size_t *len = PyMem_Calloc(slots, sizeof(size_t));
    PyObject **keep = PyMem_Calloc(slots, sizeof(PyObject *)); /* what keeps data[i] alive */
    int64_t shape[CV_MAX_RANK];
    CvStatus s = data && len && keep ? CV_STATUS_OK : cv_error_nomem();
    for (npy_intp i = 0; !s && i < n; i++) {
        Py_ssize_t item_len;
        s = string_item(arr, i, &data[i], &item_len, &keep[i]);
        len[i] = (size_t)item_len;
    }
    for (int k = 0; k < PyArray_NDIM(arr); k++)
        shape[k] = PyArray_DIM(arr, k);
    if (!s)
        s = cv_tensor_strings(out, PyArray_NDIM(arr), shape, data, len);
    for (npy_intp i = 0; keep && i < n; i++)
        Py_XDECREF(keep[i]);
    PyMem_Free(data);
    PyMem_Free(len);
    PyMem_Free(keep);
    return s;
}

/* The engine buffer an array views, or NULL. */
static CvBuffer *viewed_buffer(CvModuleState *st, PyArrayObject *arr)
{
    PyObject *base = PyArray_BASE(arr);
    while (base && PyArray_Check(base))
        base = PyArray_BASE((PyArrayObject *)base);
    if (!base || Py_TYPE(base) != st->holder_type)
        return NULL;
    return ((CvBufferHolder *)base)->buf;
}

CvStatus cv_tensor_from_pyobject(CvModuleState *st, PyObject *obj, CvTensor *out)
{
    CvStatus s = CV_STATUS_OK;
    PyArrayObject *arr = NULL;
    memset(out, 0, sizeof(*out));
    if (PyBytes_Check(obj)) { /* a scalar string: no numpy round trip */
        const char *data = PyBytes_AS_STRING(obj);
        size_t len = (size_t)PyBytes_GET_SIZE(obj);
        return cv_tensor_strings(out, 0, NULL, &data, &len);
    }
    arr = (PyArrayObject *)PyArray_FROM_OF(obj, 0);
    if (!arr) {
        PyErr_Clear();
        return cv_error(CV_INVALID_ARGUMENT, "could not convert a %s to a tensor",
                        Py_TYPE(obj)->tp_name);
    }
    CvDtype dtype;
    if (cv_dtype_from_descr(PyArray_DESCR(arr), &dtype) < 0) {
        PyObject *r = PyObject_Repr((PyObject *)PyArray_DESCR(arr));
        s = cv_error(CV_INVALID_ARGUMENT, "unsupported dtype %s (conveyor supports bool, "
                     "int8..int64, uint8..uint64, float16/32/64 and strings)",
                     r ? PyUnicode_AsUTF8(r) : "?");
        Py_XDECREF(r);
        PyErr_Clear();
        goto done;
    }
    if (PyArray_NDIM(arr) > CV_MAX_RANK) {
        s = cv_error(CV_INVALID_ARGUMENT, "array of rank %d exceeds conveyor's limit of %d",
                     PyArray_NDIM(arr), CV_MAX_RANK);
        goto done;
    }
    if (dtype == CV_STRING) {
        Py_SETREF(arr, PyArray_GETCONTIGUOUS(arr)); /* item i at data + i * itemsize */
        s = arr ? strings_from_array(arr, out) : cv_error_nomem();
        PyErr_Clear();
        goto done;
    }
    out->dtype = dtype;
    out->rank = PyArray_NDIM(arr);
    for (int k = 0; k < out->rank; k++)
        out->shape[k] = PyArray_DIM(arr, k);
    CvBuffer *viewed = viewed_buffer(st, arr);
    if (viewed && PyArray_IS_C_CONTIGUOUS(arr) && PyArray_ISNOTSWAPPED(arr)) {
        out->data = PyArray_DATA(arr);
        out->buf = cv_buffer_ref(viewed);
        goto done;
    }
    if ((s = cv_tensor_alloc(out, dtype, out->rank, out->shape, 0, NULL)))
        goto done;
    size_t nbytes = cv_tensor_nbytes(out);
    if (PyArray_IS_C_CONTIGUOUS(arr) && PyArray_ISNOTSWAPPED(arr)) {
        if (nbytes >= (1u << 20)) /* large copies run without the GIL */
            CV_UNLOCKED(memcpy(out->data, PyArray_DATA(arr), nbytes));
        else
            memcpy(out->data, PyArray_DATA(arr), nbytes);
    } else {
        /* Strided or byte-swapped: let numpy copy into a view of our buffer. */
        npy_intp dims[CV_MAX_RANK];
        for (int k = 0; k < out->rank; k++)
            dims[k] = (npy_intp)out->shape[k];
        PyArray_Descr *descr = cv_descr_for(dtype);
        PyObject *dst = descr ? PyArray_NewFromDescr(&PyArray_Type, descr, out->rank, dims, NULL,
                                                     out->data, NPY_ARRAY_CARRAY, NULL)
                              : NULL;
        if (!dst || PyArray_CopyInto((PyArrayObject *)dst, arr) < 0) {
            PyErr_Clear();
            cv_tensor_clear(out);
            s = cv_error(CV_INTERNAL, "could not copy an array into engine memory");
        }
        Py_XDECREF(dst);
    }
done:
    Py_XDECREF(arr);
    return s;
}

CvStatus cv_element_from_sequence(CvModuleState *st, PyObject *seq, CvElement *out)
{
    PyObject *fast = PySequence_Fast(seq, "expected a list or tuple of arrays");
    if (!fast) {
        PyErr_Clear();
        return cv_error(CV_INVALID_ARGUMENT, "expected a list or tuple of arrays, got %s",
                        Py_TYPE(seq)->tp_name);
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    CvStatus s = cv_element_init(out, (uint32_t)n);
    for (Py_ssize_t i = 0; !s && i < n; i++) {
        s = cv_tensor_from_pyobject(st, PySequence_Fast_GET_ITEM(fast, i), &out->t[i]);
        if (s)
            s = cv_status_prefix(s, "component %zd: ", i);
    }
    if (s)
        cv_element_clear(out);
    Py_DECREF(fast);
    return s;
}

static PyObject *string_scalar(const CvTensor *t, const CvStringRef *ref)
{
    return PyBytes_FromStringAndSize(cv_string_data(t, ref), (Py_ssize_t)ref->length);
}

PyObject *cv_tensor_to_python(CvModuleState *st, const CvTensor *t, bool eager)
{
    PyTypeObject *subtype = eager && st->eager_type ? st->eager_type : NULL;
    if (t->dtype != CV_STRING && cv_device_buffer_of(t->buf))
        return cv_device_array_new(st, t);
    npy_intp dims[CV_MAX_RANK];
    for (int k = 0; k < t->rank; k++)
        dims[k] = (npy_intp)t->shape[k];
    if (t->dtype == CV_STRING) {
        const CvStringRef *refs = (const CvStringRef *)t->data;
        if (t->rank == 0 && !subtype)
            return string_scalar(t, refs);
        PyObject *arr = PyArray_NewFromDescr(subtype ? subtype : &PyArray_Type,
                                             PyArray_DescrFromType(NPY_OBJECT), t->rank, dims,
                                             NULL, NULL, 0, NULL);
        if (!arr)
            return NULL;
        PyObject **items = PyArray_DATA((PyArrayObject *)arr);
        int64_t n = cv_tensor_num_elements(t);
        for (int64_t i = 0; i < n; i++) {
            PyObject *b = string_scalar(t, &refs[i]);
            if (!b) {
                Py_DECREF(arr);
                return NULL;
            }
            Py_XSETREF(items[i], b); /* slots of a new object array may be NULL */
        }
        return arr;
    }
    PyArray_Descr *descr = cv_descr_for(t->dtype);
    if (!descr)
        return NULL;
    if (t->rank == 0 && subtype) { /* a copy, as a scalar is: no holder to allocate */
        PyObject *arr = PyArray_NewFromDescr(subtype, descr, 0, NULL, NULL, NULL, 0, NULL);
        if (arr)
            memcpy(PyArray_DATA((PyArrayObject *)arr), t->data, cv_dtype_size(t->dtype));
        return arr;
    }
    if (t->rank == 0) {
        PyObject *scalar = PyArray_Scalar(t->data, descr, NULL);
        Py_DECREF(descr);
        return scalar;
    }
    int flags = NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED;
    if (cv_buffer_is_unique(t->buf))
        flags |= NPY_ARRAY_WRITEABLE;
    PyObject *arr = PyArray_NewFromDescr(subtype ? subtype : &PyArray_Type, descr, t->rank, dims,
                                         NULL, t->data, flags, NULL);
    if (!arr)
        return NULL;
    CvBufferHolder *holder = PyObject_New(CvBufferHolder, st->holder_type);
    if (!holder) {
        Py_DECREF(arr);
        return NULL;
    }
    holder->buf = cv_buffer_ref(t->buf);
    if (PyArray_SetBaseObject((PyArrayObject *)arr, (PyObject *)holder) < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

PyObject *cv_element_to_tuple(CvModuleState *st, const CvElement *e, bool eager)
{
    PyObject *tuple = PyTuple_New(e->n);
    if (!tuple)
        return NULL;
    for (uint32_t i = 0; i < e->n; i++) {
        PyObject *v = cv_tensor_to_python(st, &e->t[i], eager);
        if (!v) {
            Py_DECREF(tuple);
            return NULL;
        }
        PyTuple_SET_ITEM(tuple, i, v);
    }
    return tuple;
}
