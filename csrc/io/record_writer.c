/* The TFRecord writer (see record_writer.h): framing, buffered output, and
 * zlib's deflate with TensorFlow's flush points, so the bytes match. */
#include "io/record_writer.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "io/crc32c.h"
#include "io/fs.h"

#define WRITE_BUFFER (256u << 10)

struct CvTFRecordWriter {
    pthread_mutex_t mu;
    /* Through the file-system layer: the file (or object) appears whole at
     * close, as the layer's writers do; NULL once closed. */
    CvWriteFile *file;
    char *path;
    CvCompression compression;
    z_stream z;
    bool z_init;
    bool closed;
    unsigned char *out; /* WRITE_BUFFER bytes: pending output */
    size_t out_len;
};

static CvStatus write_all(CvTFRecordWriter *w, const void *p, size_t n)
{
    return w->file->methods->append(w->file, p, n);
}

static CvStatus out_flush(CvTFRecordWriter *w)
{
    CvStatus st = write_all(w, w->out, w->out_len);
    w->out_len = 0;
    return st;
}

/* Uncompressed: through the output buffer (big pieces go straight out). */
static CvStatus put_plain(CvTFRecordWriter *w, const void *p, size_t n)
{
    if (n > WRITE_BUFFER - w->out_len) {
        CvStatus st = out_flush(w);
        if (st)
            return st;
        if (n >= WRITE_BUFFER)
            return write_all(w, p, n);
    }
    memcpy(w->out + w->out_len, p, n);
    w->out_len += n;
    return CV_STATUS_OK;
}

static CvStatus deflate_some(CvTFRecordWriter *w, const void *p, size_t n, int flush)
{
    w->z.next_in = (Bytef *)(uintptr_t)p;
    do {
        uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
        w->z.avail_in = chunk;
        n -= chunk;
        int last = n == 0;
        for (;;) {
            if (w->out_len == WRITE_BUFFER) {
                CvStatus st = out_flush(w);
                if (st)
                    return st;
            }
            w->z.next_out = w->out + w->out_len;
            w->z.avail_out = (uInt)(WRITE_BUFFER - w->out_len);
            int r = deflate(&w->z, last ? flush : Z_NO_FLUSH);
            w->out_len = WRITE_BUFFER - w->z.avail_out;
            if (r == Z_STREAM_ERROR)
                return cv_error(CV_INTERNAL, "%s: deflate() failed", w->path);
            if (r == Z_STREAM_END || (w->z.avail_out != 0 && w->z.avail_in == 0))
                break;
        }
    } while (n);
    return CV_STATUS_OK;
}

static CvStatus put(CvTFRecordWriter *w, const void *p, size_t n)
{
    return w->compression == CV_COMPRESSION_NONE ? put_plain(w, p, n)
                                                 : deflate_some(w, p, n, Z_NO_FLUSH);
}

CvStatus cv_tfrecord_writer_open(const char *path, const CvRecordWriterOptions *o,
                                 CvTFRecordWriter **out)
{
    CvStatus st = CV_STATUS_OK;
    if (!cv_compression_valid(o->compression))
        return cv_error(CV_INVALID_ARGUMENT, "unknown compression code %d", (int)o->compression);
    CvTFRecordWriter *w = calloc(1, sizeof(*w));
    if (!w)
        return cv_error_nomem();
    pthread_mutex_init(&w->mu, NULL);
    w->compression = o->compression;
    w->path = strdup(path);
    w->out = malloc(WRITE_BUFFER);
    if (!w->path || !w->out) {
        st = cv_error_nomem();
        goto error;
    }
    if (w->compression != CV_COMPRESSION_NONE) {
        int wbits = w->compression == CV_COMPRESSION_GZIP ? MAX_WBITS + 16 : MAX_WBITS;
        int r = deflateInit2(&w->z, o->level, Z_DEFLATED, wbits, o->mem_level, o->strategy);
        if (r != Z_OK) {
            st = cv_error(r == Z_STREAM_ERROR ? CV_INVALID_ARGUMENT : CV_RESOURCE_EXHAUSTED,
                          "invalid zlib options (level %d, mem_level %d, strategy %d)", o->level,
                          o->mem_level, o->strategy);
            goto error;
        }
        w->z_init = true;
    }
    if ((st = cv_fs_open_write(path, false, &w->file)))
        goto error;
    *out = w;
    return CV_STATUS_OK;
error:
    cv_tfrecord_writer_free(w);
    return st;
}

static CvStatus closed_error(CvTFRecordWriter *w)
{
    return cv_error(CV_FAILED_PRECONDITION, "the TFRecordWriter for \"%s\" is closed", w->path);
}

CvStatus cv_tfrecord_writer_write(CvTFRecordWriter *w, const void *data, size_t n)
{
    unsigned char hdr[12], foot[4];
    uint64_t len = n;
    for (int i = 0; i < 8; i++)
        hdr[i] = (unsigned char)(len >> (8 * i));
    uint32_t c = cv_crc32c_masked(hdr, 8);
    for (int i = 0; i < 4; i++)
        hdr[8 + i] = (unsigned char)(c >> (8 * i));
    c = cv_crc32c_masked(data, n);
    for (int i = 0; i < 4; i++)
        foot[i] = (unsigned char)(c >> (8 * i));
    pthread_mutex_lock(&w->mu);
    CvStatus st = w->closed ? closed_error(w) : put(w, hdr, sizeof(hdr));
    if (!st)
        st = put(w, data, n);
    if (!st)
        st = put(w, foot, sizeof(foot));
    pthread_mutex_unlock(&w->mu);
    return st;
}

CvStatus cv_tfrecord_writer_flush(CvTFRecordWriter *w)
{
    pthread_mutex_lock(&w->mu);
    CvStatus st = CV_STATUS_OK;
    if (w->closed)
        st = closed_error(w);
    else if (w->compression != CV_COMPRESSION_NONE)
        st = deflate_some(w, NULL, 0, Z_PARTIAL_FLUSH); /* as TensorFlow's ZlibOutputBuffer::Flush */
    if (!st)
        st = out_flush(w);
    pthread_mutex_unlock(&w->mu);
    return st;
}

static CvStatus writer_close_locked(CvTFRecordWriter *w)
{
    if (w->closed)
        return CV_STATUS_OK;
    w->closed = true;
    CvStatus st = CV_STATUS_OK;
    if (w->file) {
        if (w->compression != CV_COMPRESSION_NONE)
            st = deflate_some(w, NULL, 0, Z_FINISH);
        if (!st)
            st = out_flush(w);
        if (st) /* a write failed: nothing half-written appears */
            w->file->methods->abort(w->file);
        else
            st = w->file->methods->commit(w->file);
        w->file = NULL;
    }
    if (w->z_init) {
        deflateEnd(&w->z);
        w->z_init = false;
    }
    return st;
}

CvStatus cv_tfrecord_writer_close(CvTFRecordWriter *w)
{
    pthread_mutex_lock(&w->mu);
    CvStatus st = writer_close_locked(w);
    pthread_mutex_unlock(&w->mu);
    return st;
}

void cv_tfrecord_writer_free(CvTFRecordWriter *w)
{
    if (!w)
        return;
    cv_status_free(cv_tfrecord_writer_close(w));
    pthread_mutex_destroy(&w->mu);
    free(w->out);
    free(w->path);
    free(w);
}
