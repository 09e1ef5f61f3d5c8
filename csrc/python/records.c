/* Binding of the TFRecord writer, record indexes and CRC-32C (the readers
 * are builder table entries: kernels/common/builders.c). Argument checks
 * live in Python (conveyor/io/tfrecord.py); these functions take normalized
 * arguments. The writer releases the GIL while compressing and writing. */
#include "python/binding.h"

#include "io/crc32c.h"
#include "io/record_index.h"
#include "io/record_writer.h"

/* ------------------------------------------------------------------ writer */

static PyObject *io_writer_open(PyObject *module, PyObject *args)
{
    PyObject *path;
    CvRecordWriterOptions o;
    int compression;
    if (!PyArg_ParseTuple(args, "O&iiii:tfrecord_writer_open", PyUnicode_FSConverter, &path,
                          &compression, &o.level, &o.mem_level, &o.strategy))
        return NULL;
    o.compression = (CvCompression)compression;
    const char *p = PyBytes_AS_STRING(path);
    CvTFRecordWriter *w = NULL;
    CvStatus s;
    CV_UNLOCKED(s = cv_tfrecord_writer_open(p, &o, &w));
    Py_DECREF(path);
    return s ? cv_raise_status(cv_get_state(module), s) : cv_handle_new(CV_HANDLE_RECORD_WRITER, w);
}

static PyObject *io_writer_write(PyObject *module, PyObject *args)
{
    PyObject *handle;
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "Oy*:tfrecord_writer_write", &handle, &data))
        return NULL;
    CvTFRecordWriter *w = cv_handle_arg(handle, CV_HANDLE_RECORD_WRITER);
    if (!w) {
        PyBuffer_Release(&data);
        return NULL;
    }
    CvStatus s;
    if (data.len < (1 << 16)) /* small records: not worth a GIL hand-off */
        s = cv_tfrecord_writer_write(w, data.buf, (size_t)data.len);
    else
        CV_UNLOCKED(s = cv_tfrecord_writer_write(w, data.buf, (size_t)data.len));
    PyBuffer_Release(&data);
    return s ? cv_raise_status(cv_get_state(module), s) : Py_NewRef(Py_None);
}

static PyObject *io_writer_flush(PyObject *module, PyObject *args)
{
    PyObject *handle;
    int close = 0;
    if (!PyArg_ParseTuple(args, "O|p:tfrecord_writer_flush", &handle, &close))
        return NULL;
    CvTFRecordWriter *w = cv_handle_arg(handle, CV_HANDLE_RECORD_WRITER);
    if (!w)
        return NULL;
    CvStatus s;
    CV_UNLOCKED(s = close ? cv_tfrecord_writer_close(w) : cv_tfrecord_writer_flush(w));
    return s ? cv_raise_status(cv_get_state(module), s) : Py_NewRef(Py_None);
}

/* -------------------------------------------------------------- record index */

static PyObject *io_tfrecord_index(PyObject *module, PyObject *args)
{
    PyObject *path;
    Py_ssize_t buffer_size = 0; /* >= 0: checked by conveyor/tools/index.py */
    if (!PyArg_ParseTuple(args, "O&|n:tfrecord_index", PyUnicode_FSConverter, &path, &buffer_size))
        return NULL;
    uint64_t records = 0;
    CvStatus s;
    const char *p = PyBytes_AS_STRING(path);
    CV_UNLOCKED(s = cv_record_index_write(p, (size_t)buffer_size, &records));
    Py_DECREF(path);
    return s ? cv_raise_status(cv_get_state(module), s) : PyLong_FromUnsignedLongLong(records);
}

/* ------------------------------------------------------------------- crc32c */

static PyObject *io_crc32c(PyObject *module, PyObject *args)
{
    (void)module;
    Py_buffer data;
    int software = 0;
    unsigned int crc = 0;
    if (!PyArg_ParseTuple(args, "y*|pI:crc32c", &data, &software, &crc))
        return NULL;
    uint32_t c;
    CV_UNLOCKED(c = software ? cv_crc32c_extend_software(crc, data.buf, (size_t)data.len)
                             : cv_crc32c_extend(crc, data.buf, (size_t)data.len));
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(c);
}

PyMethodDef cv_io_functions[] = {
    {"tfrecord_writer_open", io_writer_open, METH_VARARGS,
     "tfrecord_writer_open(path, compression, level, mem_level, strategy) -> handle"},
    {"tfrecord_writer_write", io_writer_write, METH_VARARGS, "tfrecord_writer_write(handle, bytes)"},
    {"tfrecord_writer_flush", io_writer_flush, METH_VARARGS,
     "tfrecord_writer_flush(handle, close=False): flush, or close the file"},
    {"tfrecord_index", io_tfrecord_index, METH_VARARGS,
     "tfrecord_index(path, buffer_size >= 0) -> records: write <path>.cvindex (io/record_index.h)"},
    {"crc32c", io_crc32c, METH_VARARGS,
     "crc32c(data, software=False, crc=0) -> int: CRC-32C (unmasked), extending crc"},
    {NULL, NULL, 0, NULL},
};
