/* The buffered, inflating input stream (see input_stream.h). */
#include "io/input_stream.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/tensor.h"
#include "io/file.h"
#include "io/fs.h"

struct CvInputStream {
    CvReadFile *file; /* owned; through the file-system layer (io/fs.h) */
    uint64_t raw_offset; /* where the next read of the file starts */
    char *path; /* owned */
    CvCompression compression;
    /* Buffered (decompressed) bytes: buf[pos, len) unread; buf[0] is at
     * uncompressed offset buf_start. */
    unsigned char *buf;
    size_t cap, pos, len;
    /* buf's and in's memory: owned buffers from cv_buffer_new, whose pool
     * (256 KiB and up by default) gives the next stream warm pages; a fresh
     * malloc of that size is mapped, faulted in per 4 KiB and unmapped per
     * file (half a local epoch's page faults of benchmark (b)'s files). */
    CvBuffer *buf_mem, *in_mem;
    /* Uncompressed: bytes per refill (<= cap). Large reads shrink it so that
     * little of the next large record is read ahead into buf: a read of at
     * least fill_size unbuffered bytes goes straight into the caller's
     * memory, one copy instead of two; small reads grow it back. */
    size_t fill_size;
    uint64_t buf_start;
    /* Compressed input. */
    unsigned char *in;
    size_t in_cap;
    z_stream z;
    bool z_init;
    bool raw_eof;     /* read() returned 0 */
    bool stream_done; /* ZLIB stream ended: the rest of the file is ignored */
    bool in_member;   /* inflate is inside a ZLIB stream / GZIP member */
    bool truncated;   /* the file ended inside one (a torn compressed stream) */
};

const char *cv_input_stream_path(const CvInputStream *s)
{
    return s->path;
}

CvCompression cv_input_stream_compression(const CvInputStream *s)
{
    return s->compression;
}

/* The file's info, once its first answer is in (remote files open without
 * waiting). An error is dropped here: the next read returns it. */
static const CvFileInfo *file_info(const CvInputStream *s)
{
    cv_status_free(cv_read_file_info(s->file));
    return &s->file->info;
}

uint64_t cv_input_stream_file_size(const CvInputStream *s)
{
    file_info(s);
    return s->file->info.is_dir ? UINT64_MAX : s->file->info.size;
}

int64_t cv_input_stream_file_mtime_ns(const CvInputStream *s)
{
    return file_info(s)->mtime_ns;
}

const CvFileInfo *cv_input_stream_file_info(const CvInputStream *s)
{
    return file_info(s);
}

bool cv_input_stream_truncated(const CvInputStream *s)
{
    return s->truncated;
}

uint64_t cv_input_stream_offset(const CvInputStream *s)
{
    return s->buf_start + s->pos;
}

/* Read from the file; a short count means it ended (raw_eof). */
static CvStatus raw_read(CvInputStream *s, void *dst, size_t n, size_t *got)
{
    CvStatus st = s->file->methods->read(s->file, s->raw_offset, dst, n, got);
    s->raw_offset += *got;
    if (!st && *got < n)
        s->raw_eof = true;
    return st;
}

void cv_input_stream_close(CvInputStream *s)
{
    if (!s)
        return;
    if (s->file)
        s->file->methods->close(s->file);
    if (s->z_init)
        inflateEnd(&s->z);
    cv_buffer_unref(s->buf_mem);
    cv_buffer_unref(s->in_mem);
    free(s->path);
    free(s);
}

CvStatus cv_input_stream_open(const char *path, CvCompression compression, size_t buffer_size,
                              CvInputStream **out)
{
    CvStatus st = CV_STATUS_OK;
    CvInputStream *s = calloc(1, sizeof(*s));
    if (!s)
        return cv_error_nomem();
    s->compression = compression;
    s->cap = buffer_size ? buffer_size : CV_DEFAULT_READ_BUFFER;
    if (s->cap < 4096)
        s->cap = 4096; /* buffer_size=0 (no buffering) reads the same bytes */
    if (s->cap > ((size_t)64 << 20))
        s->cap = (size_t)64 << 20;
    s->fill_size = s->cap;
    s->path = strdup(path);
    if (!s->path) {
        st = cv_error_nomem();
        goto error;
    }
    if ((st = cv_fs_open_read(path, &s->file)))
        goto error;
    s->buf_mem = cv_buffer_new(s->cap);
    s->buf = s->buf_mem ? (unsigned char *)s->buf_mem->data : NULL;
    if (!s->buf) {
        st = cv_error_nomem();
        goto error;
    }
    if (s->compression != CV_COMPRESSION_NONE) {
        s->in_cap = s->cap;
        s->in_mem = cv_buffer_new(s->in_cap);
        s->in = s->in_mem ? (unsigned char *)s->in_mem->data : NULL;
        if (!s->in) {
            st = cv_error_nomem();
            goto error;
        }
        int wbits = s->compression == CV_COMPRESSION_GZIP ? MAX_WBITS + 16 : MAX_WBITS;
        if (inflateInit2(&s->z, wbits) != Z_OK) {
            st = cv_error(CV_RESOURCE_EXHAUSTED, "%s: could not start zlib's inflate", path);
            goto error;
        }
        s->z_init = true;
    }
    *out = s;
    return CV_STATUS_OK;
error:
    cv_input_stream_close(s);
    return st;
}

/* Refill an empty buffer. *eof when nothing more comes. Errors: I/O, and a
 * damaged compressed stream (DATA_LOSS, message without context). */
static CvStatus fill(CvInputStream *s, bool *eof)
{
    s->buf_start += s->len;
    s->pos = s->len = 0;
    *eof = false;
    if (s->compression == CV_COMPRESSION_NONE) {
        if (s->raw_eof) {
            *eof = true;
            return CV_STATUS_OK;
        }
        CvStatus st = raw_read(s, s->buf, s->fill_size, &s->len);
        if (!st && s->len == 0)
            *eof = true;
        return st;
    }
    for (;;) {
        if (s->stream_done) {
            *eof = true;
            return CV_STATUS_OK;
        }
        s->z.next_out = s->buf;
        s->z.avail_out = (uInt)s->cap;
        int r = inflate(&s->z, Z_NO_FLUSH);
        if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR)
            return cv_error(CV_DATA_LOSS, "inflate() failed with error %d%s%s", r,
                            s->z.msg ? ": " : "", s->z.msg ? s->z.msg : "");
        s->len = s->cap - s->z.avail_out;
        if (r == Z_OK)
            s->in_member = true;
        if (r == Z_STREAM_END) {
            s->in_member = false;
            if (s->compression == CV_COMPRESSION_GZIP)
                inflateReset(&s->z); /* a following gzip member, if any */
            else
                s->stream_done = true;
        }
        if (s->len)
            return CV_STATUS_OK;
        /* No progress: more compressed input. */
        if (s->raw_eof) {
            s->truncated = s->in_member || s->z.avail_in > 0;
            *eof = true;
            return CV_STATUS_OK;
        }
        size_t keep = s->z.avail_in;
        if (keep && s->z.next_in != s->in)
            memmove(s->in, s->z.next_in, keep);
        size_t got = 0;
        CvStatus st = raw_read(s, s->in + keep, s->in_cap - keep, &got);
        if (st)
            return st;
        s->z.next_in = s->in;
        s->z.avail_in = (uInt)(keep + got);
        if (got == 0) {
            s->truncated = s->in_member || s->z.avail_in > 0;
            *eof = true;
            return CV_STATUS_OK;
        }
    }
}

/* Reads of at least this many bytes (uncompressed) shrink the refills to
 * CV_SMALL_FILL, so that large records are read mostly unbuffered. A file
 * whose scheme buffers (CvReadFile.buffered) refills CV_BUFFERED_FILL. */
#define CV_LARGE_READ ((size_t)64 << 10)
#define CV_SMALL_FILL ((size_t)4 << 10)
#define CV_BUFFERED_FILL ((size_t)1 << 10)

CvStatus cv_input_stream_read(CvInputStream *s, void *dst, size_t n, size_t *got)
{
    size_t done = 0;
    CvStatus st = CV_STATUS_OK;
    if (s->compression == CV_COMPRESSION_NONE && s->file->buffered) {
        /* The scheme buffers (a remote stream): a read takes its bytes from
         * there, and refills (small reads: a record's header) stay small, so
         * a record's payload is copied once, not twice. */
        s->fill_size = CV_BUFFERED_FILL;
    } else if (s->compression == CV_COMPRESSION_NONE) {
        if (n >= CV_LARGE_READ)
            s->fill_size = CV_SMALL_FILL < s->cap ? CV_SMALL_FILL : s->cap;
        else if (s->pos + n > s->len && s->fill_size < s->cap) /* small reads that refill */
            s->fill_size = s->fill_size * 2 < s->cap ? s->fill_size * 2 : s->cap;
    }
    while (done < n) {
        if (s->pos < s->len) {
            size_t k = s->len - s->pos;
            if (k > n - done)
                k = n - done;
            memcpy((char *)dst + done, s->buf + s->pos, k);
            s->pos += k;
            done += k;
            continue;
        }
        if (s->compression == CV_COMPRESSION_NONE && n - done >= s->fill_size) {
            /* Big read: straight from the file into dst. */
            size_t r = 0;
            s->buf_start += s->len;
            s->pos = s->len = 0;
            st = raw_read(s, (char *)dst + done, n - done, &r);
            s->buf_start += r;
            done += r;
            break;
        }
        bool eof;
        st = fill(s, &eof);
        if (st || eof)
            break;
    }
    *got = done;
    return st;
}

CvStatus cv_input_stream_skip(CvInputStream *s, uint64_t n, uint64_t *got)
{
    uint64_t done = 0;
    CvStatus st = CV_STATUS_OK;
    while (done < n) {
        if (s->pos < s->len) {
            size_t k = s->len - s->pos;
            if (k > n - done)
                k = (size_t)(n - done);
            s->pos += k;
            done += k;
            continue;
        }
        bool eof;
        st = fill(s, &eof);
        if (st || eof)
            break;
    }
    *got = done;
    return st;
}

CvStatus cv_input_stream_peek(CvInputStream *s, const unsigned char **data, size_t *avail,
                              bool *eof)
{
    *eof = false;
    if (s->pos == s->len) {
        CvStatus st = fill(s, eof);
        if (st || *eof)
            return st;
    }
    *data = s->buf + s->pos;
    *avail = s->len - s->pos;
    return CV_STATUS_OK;
}

void cv_input_stream_consume(CvInputStream *s, size_t n)
{
    s->pos += n;
}

CvStatus cv_input_stream_seek(CvInputStream *s, uint64_t offset, const char *what)
{
    uint64_t at = cv_input_stream_offset(s);
    if (s->compression != CV_COMPRESSION_NONE) {
        if (offset < at)
            return cv_error(CV_INTERNAL, "%s: a backward seek in a %s stream %s", s->path,
                            cv_compression_name(s->compression), what);
        uint64_t got = 0;
        CvStatus st = cv_input_stream_skip(s, offset - at, &got);
        if (st)
            return st;
        if (got < offset - at)
            return cv_error(CV_DATA_LOSS, "%s: the uncompressed %s stream ends at byte %" PRIu64
                            ", before offset %" PRIu64 " %s", s->path,
                            cv_compression_name(s->compression), at + got, offset, what);
        return CV_STATUS_OK;
    }
    if (offset >= s->buf_start && offset <= s->buf_start + s->len) {
        s->pos = (size_t)(offset - s->buf_start); /* inside the buffer: no syscall */
        return CV_STATUS_OK;
    }
    if (s->file->waits) /* a pipe: no going back or ahead but by reading */
        return cv_file_error(ESPIPE, s->path, what);
    s->raw_offset = offset; /* the next read starts there: no syscall now */
    s->buf_start = offset;
    s->pos = s->len = 0;
    s->raw_eof = false; /* a short read before the seek said nothing about here */
    return CV_STATUS_OK;
}
