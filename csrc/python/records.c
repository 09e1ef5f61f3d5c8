/* Binding of the record-file readers and writers (TFRecord, text lines,
 * fixed-length records). Argument checks live in Python
 * (conveyor/data/readers.py, conveyor/io/tfrecord.py); these functions take
 * normalized arguments. The readers never need the GIL; the writer releases
 * it while compressing and writing. */
#include "python/binding.h"

#include "io/crc32c.h"
#include "io/record_index.h"
#include "io/record_writer.h"
#include "kernels/readers.h"

#define WRITER_CAPSULE "conveyor._engine.TFRecordWriter"

/* The engine checks the compression and truncation codes
 * (cv_reader_params_check); here only what the casts need. */
static int read_options(int compression, long long buffer_size, long long max_record_bytes,
                        int on_truncation, CvReadOptions *o)
{
    if (buffer_size < 0 || max_record_bytes < 0) {
        PyErr_SetString(PyExc_ValueError, "buffer_size and max_record_bytes must be >= 0");
        return -1;
    }
    *o = (CvReadOptions){(CvCompression)compression, (CvTruncation)on_truncation,
                         (size_t)buffer_size, (uint64_t)max_record_bytes};
    return 0;
}

static PyObject *io_tfrecord(PyObject *module, PyObject *args, PyObject *kwargs)
{
    PyObject *input;
    int compression;
    long long buffer_size, max_record_bytes;
    int truncation = CV_TRUNCATION_WARN;
    static char *keywords[] = {"filenames", "compression", "buffer_size", "max_record_bytes",
                               "on_truncation", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OiLL|i:tfrecord", keywords, &input,
                                     &compression, &buffer_size, &max_record_bytes, &truncation))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    CvReadOptions o;
    if (!in || read_options(compression, buffer_size, max_record_bytes, truncation, &o) < 0)
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_tfrecord_dataset(in, &o, &ds);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *io_text_line(PyObject *module, PyObject *args, PyObject *kwargs)
{
    PyObject *input;
    int compression;
    long long buffer_size;
    int truncation = CV_TRUNCATION_WARN;
    static char *keywords[] = {"filenames", "compression", "buffer_size", "on_truncation", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OiL|i:text_line", keywords, &input,
                                     &compression, &buffer_size, &truncation))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    CvReadOptions o;
    if (!in || read_options(compression, buffer_size, 0, truncation, &o) < 0)
        return NULL;
    CvDataset *ds = NULL;
    CvStatus s = cv_text_line_dataset(in, &o, &ds);
    return cv_wrap_dataset(module, s, ds);
}

static PyObject *io_fixed_length_record(PyObject *module, PyObject *args, PyObject *kwargs)
{
    PyObject *input;
    int compression;
    long long header, record, footer, buffer_size;
    int truncation = CV_TRUNCATION_WARN;
    static char *keywords[] = {"filenames", "header_bytes", "record_bytes", "footer_bytes",
                               "compression", "buffer_size", "on_truncation", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OLLLiL|i:fixed_length_record", keywords, &input,
                                     &header, &record, &footer, &compression, &buffer_size,
                                     &truncation))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    CvReadOptions o;
    if (!in || read_options(compression, buffer_size, 0, truncation, &o) < 0)
        return NULL;
    if (header < 0 || record <= 0 || footer < 0) {
        PyErr_SetString(PyExc_ValueError, "header_bytes and footer_bytes must be >= 0 and "
                        "record_bytes > 0");
        return NULL;
    }
    CvDataset *ds = NULL;
    CvStatus s = cv_fixed_length_record_dataset(in, (uint64_t)header, (uint64_t)record,
                                                (uint64_t)footer, &o, &ds);
    return cv_wrap_dataset(module, s, ds);
}

/* csv(filenames, compression, buffer_size, header, delim, use_quote, na, select, exclude,
 *     dtypes, defaults): defaults[j] is None (required), an int, a float or bytes. */
static int int64_list(PyObject *seq, int64_t **out, int *n)
{
    PyObject *f = PySequence_Fast(seq, "expected a sequence of ints");
    if (!f)
        return -1;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(f);
    *out = PyMem_Malloc(((size_t)len + 1) * sizeof(int64_t));
    if (!*out || len > INT32_MAX) {
        Py_DECREF(f);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        (*out)[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(f, i));
        if ((*out)[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(f);
            return -1;
        }
    }
    *n = (int)len;
    Py_DECREF(f);
    return 0;
}

static PyObject *io_csv(PyObject *module, PyObject *args, PyObject *kwargs)
{
    PyObject *input, *select, *exclude, *dtypes, *defaults;
    int compression, header, delim, quotes;
    long long buffer_size;
    const char *na;
    Py_ssize_t na_len;
    static char *keywords[] = {"filenames", "compression", "buffer_size", "header", "delim",
                               "use_quote", "na", "select", "exclude", "dtypes", "defaults", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OiLpipy#OOOO:csv", keywords, &input,
                                     &compression, &buffer_size, &header, &delim, &quotes, &na,
                                     &na_len, &select, &exclude, &dtypes, &defaults))
        return NULL;
    CvDataset *in = cv_dataset_arg(module, input);
    CvReadOptions o;
    if (!in || read_options(compression, buffer_size, 0, CV_TRUNCATION_IGNORE, &o) < 0)
        return NULL;
    CvCsvParams p = {.options = o, .header = header != 0, .quotes = quotes != 0,
                     .delim = (char)delim, .na = na, .na_len = (size_t)na_len};
    int64_t *sel = NULL, *exc = NULL;
    CvCsvColumn *cols = NULL;
    PyObject *dt = NULL, *df = NULL, *result = NULL;
    if (int64_list(select, &sel, &p.nselect) < 0 || int64_list(exclude, &exc, &p.nexclude) < 0)
        goto done;
    dt = PySequence_Fast(dtypes, "dtypes must be a sequence");
    df = dt ? PySequence_Fast(defaults, "defaults must be a sequence") : NULL;
    if (!df)
        goto done;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(dt);
    if (k < 1 || k > INT32_MAX || PySequence_Fast_GET_SIZE(df) != k) {
        PyErr_SetString(PyExc_ValueError, "csv: one default per dtype, at least one");
        goto done;
    }
    cols = PyMem_Calloc((size_t)k, sizeof(*cols));
    if (!cols) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < k; j++) {
        long code = PyLong_AsLong(PySequence_Fast_GET_ITEM(dt, j));
        if (code == -1 && PyErr_Occurred())
            goto done;
        if (code < 0 || code >= CV_NUM_DTYPES) { /* the engine checks what csv takes */
            PyErr_SetString(PyExc_ValueError, "csv: unsupported dtype code");
            goto done;
        }
        cols[j].dtype = (CvDtype)code;
        PyObject *v = PySequence_Fast_GET_ITEM(df, j);
        if (v == Py_None)
            continue;
        cols[j].has_default = true;
        if (cols[j].dtype == CV_STRING) {
            char *b;
            Py_ssize_t bl;
            if (PyBytes_AsStringAndSize(v, &b, &bl) < 0)
                goto done;
            cols[j].s = b;
            cols[j].s_len = (size_t)bl;
        } else if (cols[j].dtype == CV_FLOAT32 || cols[j].dtype == CV_FLOAT64) {
            cols[j].f = PyFloat_AsDouble(v);
            if (cols[j].f == -1.0 && PyErr_Occurred())
                goto done;
        } else {
            cols[j].i = PyLong_AsLongLong(v);
            if (cols[j].i == -1 && PyErr_Occurred())
                goto done;
        }
    }
    p.ncols = (int)k;
    p.cols = cols;
    p.select = sel;
    p.exclude = exc;
    CvDataset *ds = NULL;
    CvStatus s = cv_csv_dataset(in, &p, &ds);
    result = cv_wrap_dataset(module, s, ds);
done:
    Py_XDECREF(dt);
    Py_XDECREF(df);
    PyMem_Free(sel);
    PyMem_Free(exc);
    PyMem_Free(cols);
    return result;
}

/* ------------------------------------------------------------------ writer */

static void writer_capsule_free(PyObject *capsule)
{
    CvTFRecordWriter *w = PyCapsule_GetPointer(capsule, WRITER_CAPSULE);
    if (!w) {
        PyErr_Clear();
        return;
    }
    Py_BEGIN_ALLOW_THREADS
    cv_tfrecord_writer_free(w);
    Py_END_ALLOW_THREADS
}

static CvTFRecordWriter *writer_arg(PyObject *obj)
{
    if (!PyCapsule_IsValid(obj, WRITER_CAPSULE)) {
        PyErr_SetString(PyExc_TypeError, "expected a TFRecordWriter handle");
        return NULL;
    }
    return PyCapsule_GetPointer(obj, WRITER_CAPSULE);
}

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
    Py_BEGIN_ALLOW_THREADS
    s = cv_tfrecord_writer_open(p, &o, &w);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (s)
        return cv_raise_status(cv_get_state(module), s);
    PyObject *cap = PyCapsule_New(w, WRITER_CAPSULE, writer_capsule_free);
    if (!cap)
        cv_tfrecord_writer_free(w);
    return cap;
}

static PyObject *io_writer_write(PyObject *module, PyObject *args)
{
    PyObject *handle;
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "Oy*:tfrecord_writer_write", &handle, &data))
        return NULL;
    CvTFRecordWriter *w = writer_arg(handle);
    if (!w) {
        PyBuffer_Release(&data);
        return NULL;
    }
    CvStatus s;
    if (data.len < (1 << 16)) { /* small records: not worth a GIL hand-off */
        s = cv_tfrecord_writer_write(w, data.buf, (size_t)data.len);
    } else {
        Py_BEGIN_ALLOW_THREADS
        s = cv_tfrecord_writer_write(w, data.buf, (size_t)data.len);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&data);
    if (s)
        return cv_raise_status(cv_get_state(module), s);
    Py_RETURN_NONE;
}

typedef CvStatus (*CvWriterOp)(CvTFRecordWriter *);

static PyObject *writer_op(PyObject *module, PyObject *handle, CvWriterOp op)
{
    CvTFRecordWriter *w = writer_arg(handle);
    if (!w)
        return NULL;
    CvStatus s;
    Py_BEGIN_ALLOW_THREADS
    s = op(w);
    Py_END_ALLOW_THREADS
    if (s)
        return cv_raise_status(cv_get_state(module), s);
    Py_RETURN_NONE;
}

static PyObject *io_writer_flush(PyObject *module, PyObject *handle)
{
    return writer_op(module, handle, cv_tfrecord_writer_flush);
}

static PyObject *io_writer_close(PyObject *module, PyObject *handle)
{
    return writer_op(module, handle, cv_tfrecord_writer_close);
}

/* -------------------------------------------------------------- record index */

static PyObject *io_tfrecord_index(PyObject *module, PyObject *args)
{
    PyObject *path;
    Py_ssize_t buffer_size = 0;
    if (!PyArg_ParseTuple(args, "O&|n:tfrecord_index", PyUnicode_FSConverter, &path, &buffer_size))
        return NULL;
    if (buffer_size < 0) {
        Py_DECREF(path);
        PyErr_SetString(PyExc_ValueError, "buffer_size must be >= 0");
        return NULL;
    }
    uint64_t records = 0;
    CvStatus s;
    const char *p = PyBytes_AS_STRING(path);
    Py_BEGIN_ALLOW_THREADS
    s = cv_record_index_write(p, (size_t)buffer_size, &records);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (s)
        return cv_raise_status(cv_get_state(module), s);
    return PyLong_FromUnsignedLongLong(records);
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
    Py_BEGIN_ALLOW_THREADS
    c = software ? cv_crc32c_extend_software(crc, data.buf, (size_t)data.len)
                 : cv_crc32c_extend(crc, data.buf, (size_t)data.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(c);
}

static PyObject *io_crc32c_hardware(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyBool_FromLong(cv_crc32c_hardware());
}

static PyObject *io_crc32c_force_software(PyObject *module, PyObject *arg)
{
    (void)module;
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    cv_crc32c_force_software(on);
    Py_RETURN_NONE;
}

PyMethodDef cv_io_functions[] = {
    {"tfrecord", CV_METHOD_KEYWORDS(io_tfrecord),
     "tfrecord(filenames, compression, buffer_size, max_record_bytes[, on_truncation]) -> Dataset"},
    {"csv", CV_METHOD_KEYWORDS(io_csv), "csv(filenames, compression, buffer_size, header, delim, "
     "use_quote, na, select, exclude, dtypes, defaults) -> Dataset"},
    {"text_line", CV_METHOD_KEYWORDS(io_text_line), "text_line(filenames, compression, buffer_size[, on_truncation]) -> Dataset"},
    {"fixed_length_record", CV_METHOD_KEYWORDS(io_fixed_length_record),
     "fixed_length_record(filenames, header, record, footer, compression, buffer_size"
     "[, on_truncation]) -> Dataset"},
    {"tfrecord_writer_open", io_writer_open, METH_VARARGS,
     "tfrecord_writer_open(path, compression, level, mem_level, strategy) -> handle"},
    {"tfrecord_writer_write", io_writer_write, METH_VARARGS, "tfrecord_writer_write(handle, bytes)"},
    {"tfrecord_writer_flush", io_writer_flush, METH_O, "tfrecord_writer_flush(handle)"},
    {"tfrecord_writer_close", io_writer_close, METH_O, "tfrecord_writer_close(handle)"},
    {"tfrecord_index", io_tfrecord_index, METH_VARARGS,
     "tfrecord_index(path, buffer_size=0) -> records: write <path>.cvindex (io/record_index.h)"},
    {"crc32c", io_crc32c, METH_VARARGS,
     "crc32c(data, software=False, crc=0) -> int: CRC-32C (unmasked), extending crc"},
    {"crc32c_hardware", io_crc32c_hardware, METH_NOARGS, "True when CRC-32C uses SSE4.2"},
    {"crc32c_force_software", io_crc32c_force_software, METH_O,
     "crc32c_force_software(on): make every CRC-32C in the process use the table (tests)"},
    {NULL, NULL, 0, NULL},
};
