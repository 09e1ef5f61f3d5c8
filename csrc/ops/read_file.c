/* ReadFile(filename): the bytes of a file as a scalar string (tf.io.read_file).
 *
 * Through the file-system layer (io/fs.h), so any URL it knows works. A
 * file of known size is read straight into the output tensor (sized at open; a
 * file that shrinks meanwhile gives the bytes that were there); anything
 * else (a pipe, /proc) is read to its end. Errors name the file with
 * TensorFlow's codes: NOT_FOUND, PERMISSION_DENIED, FAILED_PRECONDITION for a
 * directory. The output's buffer carries the path as its origin (core/tensor.h),
 * so an op that fails on these bytes in a traced program names the file. A
 * map may have opened the file ahead (opens_input0, io/fs_ahead.h): it
 * takes that open file instead of opening another. No attributes. */
#include <stdlib.h>
#include <string.h>

#include "io/fs.h"
#include "io/fs_ahead.h"
#include "ops/op.h"

/* A file of unknown size (a pipe, /proc, an object without a length): read
 * the open file to its end into a growing buffer, then copy. (Not
 * cv_fs_read_all: a FIFO must not be closed and opened again.) */
static CvStatus read_stream(CvReadFile *f, CvTensor *out)
{
    size_t cap = 1 << 16, len = 0, got;
    char *buf = malloc(cap), *blob;
    CvStatus s = CV_STATUS_OK;
    if (!buf)
        return cv_error_nomem();
    for (;;) {
        if ((s = f->methods->read(f, len, buf + len, cap - len, &got)))
            goto done;
        len += got;
        if (len < cap)
            break;
        char *bigger = realloc(buf, cap * 2);
        if (!bigger) {
            s = cv_error(CV_RESOURCE_EXHAUSTED, "%s: out of memory after reading %zu bytes",
                         f->url, len);
            goto done;
        }
        buf = bigger;
        cap *= 2;
    }
    if ((s = cv_tensor_alloc_scalar_string(out, len, &blob)))
        goto done;
    memcpy(blob, buf, len);
done:
    free(buf);
    return s;
}

static CvStatus read_file_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                              CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)attrs;
    (void)num_in;
    (void)num_out;
    (void)ctx;
    if (in[0].dtype != CV_STRING || in[0].rank != 0) {
        char shape[64];
        return cv_error(CV_INVALID_ARGUMENT,
                        "Input filename tensor must be a scalar string, but had %s shape: %s",
                        cv_dtype_name(in[0].dtype),
                        cv_shape_str(in[0].shape, in[0].rank, shape, sizeof(shape)));
    }
    const CvStringRef *ref = (const CvStringRef *)in[0].data;
    size_t n = (size_t)ref->length;
    const char *name = cv_string_data(&in[0], ref);
    char *path = malloc(n + 1);
    if (!path)
        return cv_error_nomem();
    memcpy(path, name, n);
    path[n] = '\0';
    CvStatus s = CV_STATUS_OK;
    CvReadFile *file = NULL;
    if (memchr(path, '\0', n)) {
        s = cv_error(CV_NOT_FOUND, "%s...; a filename cannot contain a NUL byte", path);
        goto done;
    }
    if (!cv_fs_take_ahead(path, &file) && (s = cv_fs_open_read(path, &file)))
        goto done;
    if ((s = cv_read_file_info(file)))
        goto done;
    if (file->waits || file->info.size == UINT64_MAX || file->info.size == 0) {
        s = read_stream(file, out); /* size unknown (a pipe, /proc): read to the end */
        goto done;
    }
    char *blob;
    size_t got;
    if ((s = cv_tensor_alloc_scalar_string(out, (size_t)file->info.size, &blob)))
        goto done;
    if ((s = file->methods->read(file, 0, blob, (size_t)file->info.size, &got))) {
        cv_tensor_clear(out);
        goto done;
    }
    ((CvStringRef *)out->data)->length = got; /* the file may have shrunk */
done:
    if (!s) { /* the path, for the errors of ops that decode these bytes */
        CvOrigin *origin = cv_origin_new(path);
        cv_buffer_set_origin(out->buf, origin, CV_ORIGIN_WHOLE_FILE);
        cv_origin_unref(origin);
    }
    if (file)
        file->methods->close(file);
    free(path);
    return s;
}

const CvOp cv_op_read_file = {
    .name = "ReadFile", .min_inputs = 1, .max_inputs = 1, .run = read_file_run, .opens_input0 = true};
