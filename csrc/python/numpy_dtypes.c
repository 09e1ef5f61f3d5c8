/* The NumPy dtypes of engine dtypes, both ways: a leaf that the
 * conversions (convert.c) and device arrays (device.c) share. bfloat16's
 * NumPy type is ml_dtypes', registered with NumPy at run time: the Python
 * layer hands its descr over (set_bfloat16_dtype) when ml_dtypes is there. */
#include "python/binding.h"

static const int npy_types[CV_NUM_DTYPES] = {
    [CV_BOOL] = NPY_BOOL,       [CV_INT8] = NPY_INT8,       [CV_INT16] = NPY_INT16,
    [CV_INT32] = NPY_INT32,     [CV_INT64] = NPY_INT64,     [CV_UINT8] = NPY_UINT8,
    [CV_UINT16] = NPY_UINT16,   [CV_UINT32] = NPY_UINT32,   [CV_UINT64] = NPY_UINT64,
    [CV_FLOAT16] = NPY_FLOAT16, [CV_FLOAT32] = NPY_FLOAT32, [CV_FLOAT64] = NPY_FLOAT64,
    [CV_STRING] = NPY_OBJECT,
};

/* ml_dtypes.bfloat16's descr: process-wide as NumPy's registry of types is;
 * read and written under the GIL only; one reference, kept until exit. */
static PyArray_Descr *bfloat16_descr;

/* set_bfloat16_dtype(dtype): the Python layer passes it when ml_dtypes is installed. */
static PyObject *dtypes_set_bfloat16(PyObject *module, PyObject *dtype)
{
    (void)module;
    PyArray_Descr *d = NULL;
    if (!PyArray_DescrConverter(dtype, &d))
        return NULL;
    if (PyDataType_ELSIZE(d) != 2) {
        Py_DECREF(d);
        PyErr_SetString(PyExc_TypeError, "set_bfloat16_dtype: expected a 2-byte dtype");
        return NULL;
    }
    Py_XSETREF(bfloat16_descr, d);
    Py_RETURN_NONE;
}

PyMethodDef cv_dtype_functions[] = {
    {"set_bfloat16_dtype", dtypes_set_bfloat16, METH_O,
     "set_bfloat16_dtype(dtype): the NumPy dtype of bfloat16 tensors (ml_dtypes.bfloat16)."},
    {NULL, NULL, 0, NULL},
};

PyArray_Descr *cv_descr_for(CvDtype dtype)
{
    if (dtype != CV_BFLOAT16)
        return PyArray_DescrFromType(npy_types[dtype]);
    if (!bfloat16_descr) {
        PyErr_SetString(PyExc_ImportError, "bfloat16 tensors need the ml_dtypes package "
                        "(pip install ml_dtypes) for their NumPy type");
        return NULL;
    }
    Py_INCREF(bfloat16_descr);
    return bfloat16_descr;
}

int cv_dtype_from_descr(PyArray_Descr *d, CvDtype *out)
{
    if (bfloat16_descr && d->type_num == bfloat16_descr->type_num) {
        *out = CV_BFLOAT16;
        return 0;
    }
    int size = (int)PyDataType_ELSIZE(d);
    switch (d->kind) {
    case 'b': *out = CV_BOOL; return 0;
    case 'i':
        *out = size == 1 ? CV_INT8 : size == 2 ? CV_INT16 : size == 4 ? CV_INT32 : CV_INT64;
        return size == 1 || size == 2 || size == 4 || size == 8 ? 0 : -1;
    case 'u':
        *out = size == 1 ? CV_UINT8 : size == 2 ? CV_UINT16 : size == 4 ? CV_UINT32 : CV_UINT64;
        return size == 1 || size == 2 || size == 4 || size == 8 ? 0 : -1;
    case 'f':
        *out = size == 2 ? CV_FLOAT16 : size == 4 ? CV_FLOAT32 : CV_FLOAT64;
        return size == 2 || size == 4 || size == 8 ? 0 : -1;
    case 'S': case 'U': case 'O':
        *out = CV_STRING;
        return 0;
    }
    return -1;
}

