/* Record files: input stream, readers, the per-file iterator and the writer.
 *
 * The inflating stream follows TensorFlow's ZlibInputStream step by step
 * (inflate into an empty output buffer; read more input only when inflate
 * made no progress; a GZIP stream may hold several members), so a damaged or
 * truncated compressed file yields the same records and errors as in
 * TensorFlow.
 */
#include "ops/record_io.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "ops/crc32c.h"

/* ------------------------------------------------------------------ errors */

static CvCode errno_code(int e)
{
    switch (e) {
    case ENOENT:
    case ENOTDIR:
        return CV_NOT_FOUND;
    case EACCES:
    case EPERM:
    case EROFS:
        return CV_PERMISSION_DENIED;
    case EISDIR:
        return CV_FAILED_PRECONDITION;
    case EEXIST:
        return CV_ALREADY_EXISTS;
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case ENOSPC:
        return CV_RESOURCE_EXHAUSTED;
    case ENAMETOOLONG:
    case EINVAL:
        return CV_INVALID_ARGUMENT;
    default:
        return CV_UNKNOWN;
    }
}

/* "<path>; No such file or directory", as TensorFlow words it. */
static CvStatus errno_error(int e, const char *path, const char *what)
{
    return cv_error(errno_code(e), "%s; %s%s%s", path, strerror(e), what ? " " : "", what ? what : "");
}

CvStatus cv_file_error(int e, const char *path, const char *what)
{
    return errno_error(e, path, what);
}

static const char *compression_name(CvCompression c)
{
    return c == CV_COMPRESSION_ZLIB ? "ZLIB" : c == CV_COMPRESSION_GZIP ? "GZIP" : "uncompressed";
}

/* ------------------------------------------------------------ input stream */

typedef struct InStream {
    int fd;
    char *path; /* owned */
    CvCompression compression;
    uint64_t file_size; /* at open */
    /* Buffered (decompressed) bytes: buf[pos, len) unread; buf[0] is at
     * uncompressed offset buf_start. */
    unsigned char *buf;
    size_t cap, pos, len;
    uint64_t buf_start;
    /* Compressed input. */
    unsigned char *in;
    size_t in_cap;
    z_stream z;
    bool z_init;
    bool raw_eof;     /* read() returned 0 */
    bool stream_done; /* ZLIB stream ended: the rest of the file is ignored */
} InStream;

static inline uint64_t stream_offset(const InStream *s)
{
    return s->buf_start + s->pos;
}

static CvStatus raw_read(InStream *s, void *dst, size_t n, size_t *got)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = read(s->fd, (char *)dst + done, n - done);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            *got = done;
            return errno_error(errno, s->path, "(while reading)");
        }
        if (r == 0) {
            s->raw_eof = true;
            break;
        }
        done += (size_t)r;
    }
    *got = done;
    return CV_STATUS_OK;
}

static void stream_close(InStream *s)
{
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    if (s->z_init)
        inflateEnd(&s->z);
    free(s->buf);
    free(s->in);
    free(s->path);
    free(s);
}

static CvStatus stream_open(const char *path, const CvReadOptions *o, InStream **out)
{
    CvStatus st = CV_STATUS_OK;
    InStream *s = calloc(1, sizeof(*s));
    if (!s)
        return cv_error_nomem();
    s->fd = -1;
    s->compression = o->compression;
    s->cap = o->buffer_size ? o->buffer_size : CV_DEFAULT_READ_BUFFER;
    if (s->cap < 4096)
        s->cap = 4096; /* buffer_size=0 (no buffering) reads the same bytes */
    if (s->cap > ((size_t)64 << 20))
        s->cap = (size_t)64 << 20;
    s->path = strdup(path);
    if (!s->path) {
        st = cv_error_nomem();
        goto error;
    }
    s->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (s->fd < 0) {
        st = errno_error(errno, path, NULL);
        goto error;
    }
    struct stat sb;
    if (fstat(s->fd, &sb) < 0) {
        st = errno_error(errno, path, NULL);
        goto error;
    }
    if (S_ISDIR(sb.st_mode)) {
        st = errno_error(EISDIR, path, NULL);
        goto error;
    }
    s->file_size = S_ISREG(sb.st_mode) ? (uint64_t)sb.st_size : UINT64_MAX;
    (void)posix_fadvise(s->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    s->buf = malloc(s->cap);
    if (!s->buf) {
        st = cv_error_nomem();
        goto error;
    }
    if (s->compression != CV_COMPRESSION_NONE) {
        s->in_cap = s->cap;
        s->in = malloc(s->in_cap);
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
    stream_close(s);
    return st;
}

/* Refill an empty buffer. *eof when nothing more comes. Errors: I/O, and a
 * damaged compressed stream (DATA_LOSS, message without context). */
static CvStatus stream_fill(InStream *s, bool *eof)
{
    s->buf_start += s->len;
    s->pos = s->len = 0;
    *eof = false;
    if (s->compression == CV_COMPRESSION_NONE) {
        if (s->raw_eof) {
            *eof = true;
            return CV_STATUS_OK;
        }
        CvStatus st = raw_read(s, s->buf, s->cap, &s->len);
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
        if (r == Z_STREAM_END) {
            if (s->compression == CV_COMPRESSION_GZIP)
                inflateReset(&s->z); /* a following gzip member, if any */
            else
                s->stream_done = true;
        }
        if (s->len)
            return CV_STATUS_OK;
        /* No progress: more compressed input. */
        if (s->raw_eof) {
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
            *eof = true;
            return CV_STATUS_OK;
        }
    }
}

/* Read up to n bytes; *got < n only at end of stream. */
static CvStatus stream_read(InStream *s, void *dst, size_t n, size_t *got)
{
    size_t done = 0;
    CvStatus st = CV_STATUS_OK;
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
        if (s->compression == CV_COMPRESSION_NONE && n - done >= s->cap) {
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
        st = stream_fill(s, &eof);
        if (st || eof)
            break;
    }
    *got = done;
    return st;
}

/* Skip up to n bytes; *got < n only at end of stream. */
static CvStatus stream_skip(InStream *s, uint64_t n, uint64_t *got)
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
        st = stream_fill(s, &eof);
        if (st || eof)
            break;
    }
    *got = done;
    return st;
}

/* ----------------------------------------------------------------- readers */

struct CvRecordReader {
    CvReaderParams p;
    InStream *s;
    uint64_t index; /* records returned so far */
    /* Text lines: the line being assembled. Fixed-length compressed: the
     * lookahead (record + footer). */
    unsigned char *scratch;
    size_t scratch_len, scratch_cap;
    uint64_t limit; /* fixed-length uncompressed: offset where the footer starts */
};

void cv_record_reader_close(CvRecordReader *r)
{
    if (!r)
        return;
    stream_close(r->s);
    free(r->scratch);
    free(r);
}

/* A scalar string tensor of n bytes; *blob receives the bytes' address. */
static CvStatus string_alloc(CvTensor *out, size_t n, unsigned char **blob)
{
    char *b;
    CvStatus st = cv_tensor_alloc(out, CV_STRING, 0, NULL, n, &b);
    if (st)
        return st;
    CvStringRef *ref = (CvStringRef *)out->data;
    ref->offset = (uint64_t)(b - out->buf->data);
    ref->length = n;
    *blob = (unsigned char *)b;
    return CV_STATUS_OK;
}

static CvStatus scratch_reserve(CvRecordReader *r, size_t need)
{
    if (need <= r->scratch_cap)
        return CV_STATUS_OK;
    size_t cap = r->scratch_cap ? r->scratch_cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    unsigned char *p = realloc(r->scratch, cap);
    if (!p)
        return cv_error(CV_RESOURCE_EXHAUSTED, "out of memory growing a record buffer to %zu bytes", cap);
    r->scratch = p;
    r->scratch_cap = cap;
    return CV_STATUS_OK;
}

/* Context for an error from the stream (a damaged compressed stream, I/O). */
static CvStatus stream_error(CvRecordReader *r, CvStatus st, uint64_t offset)
{
    if (st->code == CV_DATA_LOSS)
        return cv_status_prefix(st, "%s: %s stream is corrupted (reading record %" PRIu64
                                " at offset %" PRIu64 "): ", r->s->path,
                                compression_name(r->s->compression), r->index, offset);
    return st;
}

static CvStatus record_error(CvRecordReader *r, const char *what, uint64_t offset)
{
    return cv_error(CV_DATA_LOSS, "%s record at %" PRIu64 " in \"%s\" (record %" PRIu64 ")%s%s",
                    what, offset, r->s->path, r->index,
                    r->s->compression != CV_COMPRESSION_NONE ? ", " : "",
                    r->s->compression != CV_COMPRESSION_NONE ? compression_name(r->s->compression) : "");
}

static inline uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static inline uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#define GROW_START ((size_t)1 << 20)

static CvStatus tfrecord_next(CvRecordReader *r, CvTensor *out, bool *eof)
{
    InStream *s = r->s;
    uint64_t start = stream_offset(s);
    unsigned char hdr[12], foot[4];
    size_t got;
    CvStatus st = stream_read(s, hdr, sizeof(hdr), &got);
    if (st)
        return stream_error(r, st, start);
    if (got < sizeof(hdr)) {
        /* TensorFlow (2.x) ends the file quietly at a partial header too: its
         * header read reports OutOfRange, which the dataset takes as the end. */
        *eof = true;
        return CV_STATUS_OK;
    }
    if (cv_crc32c_masked(hdr, 8) != le32(hdr + 8))
        return record_error(r, "corrupted", start);
    uint64_t len = le64(hdr);
    if (s->compression == CV_COMPRESSION_NONE && stream_offset(s) <= s->file_size &&
        len > s->file_size - stream_offset(s))
        return record_error(r, "truncated", start); /* before allocating anything */
    if (len > r->p.options.max_record_bytes || len > SIZE_MAX - 64)
        return cv_error(CV_DATA_LOSS, "record size too large: corrupted record at %" PRIu64
                        " in \"%s\" (record %" PRIu64 ") declares %" PRIu64 " bytes, more than "
                        "max_record_bytes (%" PRIu64 ")", start, s->path, r->index, len,
                        r->p.options.max_record_bytes);
    unsigned char *blob = NULL;
    size_t n = (size_t)len;
    if (s->compression == CV_COMPRESSION_NONE || n <= GROW_START) {
        st = string_alloc(out, n, &blob);
        if (st)
            return st;
        st = stream_read(s, blob, n, &got);
    } else {
        /* A compressed stream: grow the buffer as the data actually arrives,
         * so a forged length costs nothing until its bytes exist. */
        size_t target = GROW_START;
        got = 0;
        for (;;) {
            if (target > n)
                target = n;
            if ((st = scratch_reserve(r, target)))
                break;
            size_t k = 0;
            st = stream_read(s, r->scratch + got, target - got, &k);
            got += k;
            if (st || got < target || got == n)
                break;
            target *= 2;
        }
        if (!st && got == n) {
            st = string_alloc(out, n, &blob);
            if (!st)
                memcpy(blob, r->scratch, n);
        }
        if (r->scratch_cap > 4 * GROW_START) { /* do not keep a huge buffer */
            free(r->scratch);
            r->scratch = NULL;
            r->scratch_cap = 0;
        }
        if (st)
            return stream_error(r, st, start);
        if (got < n)
            return record_error(r, "truncated", start);
    }
    if (!st && got == n)
        st = stream_read(s, foot, sizeof(foot), &got);
    else if (!st)
        got = 0;
    if (st || got < sizeof(foot)) {
        cv_tensor_clear(out);
        return st ? stream_error(r, st, start) : record_error(r, "truncated", start);
    }
    if (cv_crc32c_masked(blob, n) != le32(foot)) {
        cv_tensor_clear(out);
        return record_error(r, "corrupted", start + sizeof(hdr)); /* TF: the data's offset */
    }
    r->index++;
    return CV_STATUS_OK;
}

/* Append bytes to the line, dropping every '\r' (tf.data's ReadLine). */
static CvStatus line_append(CvRecordReader *r, const unsigned char *p, size_t n)
{
    CvStatus st = scratch_reserve(r, r->scratch_len + n);
    if (st)
        return st;
    const unsigned char *end = p + n;
    while (p < end) {
        const unsigned char *cr = memchr(p, '\r', (size_t)(end - p));
        size_t k = (size_t)((cr ? cr : end) - p);
        memcpy(r->scratch + r->scratch_len, p, k);
        r->scratch_len += k;
        p += k + (cr ? 1 : 0);
    }
    return CV_STATUS_OK;
}

static CvStatus emit(CvTensor *out, const unsigned char *p, size_t n)
{
    unsigned char *blob;
    CvStatus st = string_alloc(out, n, &blob);
    if (!st && n)
        memcpy(blob, p, n);
    return st;
}

static CvStatus text_line_next(CvRecordReader *r, CvTensor *out, bool *eof)
{
    InStream *s = r->s;
    r->scratch_len = 0;
    uint64_t start = stream_offset(s);
    for (;;) {
        if (s->pos == s->len) {
            bool end;
            CvStatus st = stream_fill(s, &end);
            if (st)
                return stream_error(r, st, start);
            if (end) {
                if (r->scratch_len == 0) { /* a last segment is a line only if non-empty */
                    *eof = true;
                    return CV_STATUS_OK;
                }
                st = emit(out, r->scratch, r->scratch_len);
                if (!st)
                    r->index++;
                return st;
            }
        }
        const unsigned char *p = s->buf + s->pos;
        size_t avail = s->len - s->pos;
        const unsigned char *nl = memchr(p, '\n', avail);
        size_t seg = nl ? (size_t)(nl - p) : avail;
        CvStatus st;
        if (nl && r->scratch_len == 0 && !memchr(p, '\r', seg)) {
            st = emit(out, p, seg); /* the common case: one copy */
        } else {
            st = line_append(r, p, seg);
            if (!st && nl)
                st = emit(out, r->scratch, r->scratch_len);
        }
        if (st)
            return st;
        s->pos += seg + (nl ? 1 : 0);
        if (nl) {
            r->index++;
            return CV_STATUS_OK;
        }
    }
}

static CvStatus fixed_length_next(CvRecordReader *r, CvTensor *out, bool *eof)
{
    InStream *s = r->s;
    const CvReaderParams *p = &r->p;
    uint64_t start = stream_offset(s);
    size_t rec = (size_t)p->record_bytes, foot = (size_t)p->footer_bytes;
    size_t got;
    CvStatus st;
    if (s->compression == CV_COMPRESSION_NONE) {
        if (start >= r->limit) {
            *eof = true;
            return CV_STATUS_OK;
        }
        unsigned char *blob;
        if ((st = string_alloc(out, rec, &blob)))
            return st;
        st = stream_read(s, blob, rec, &got);
        if (st || got < rec) {
            cv_tensor_clear(out);
            return st ? st : record_error(r, "truncated", start); /* the file shrank */
        }
        r->index++;
        return CV_STATUS_OK;
    }
    /* Compressed: the size is unknown, so keep `footer_bytes` of lookahead. */
    st = stream_read(s, r->scratch + r->scratch_len, rec + foot - r->scratch_len, &got);
    if (st)
        return stream_error(r, st, start);
    r->scratch_len += got;
    if (r->scratch_len < rec + foot) {
        if (r->scratch_len == foot) {
            *eof = true;
            return CV_STATUS_OK;
        }
        uint64_t body = stream_offset(s) - p->header_bytes - p->footer_bytes;
        return cv_error(CV_DATA_LOSS, "Excluding the header (%" PRIu64 " bytes) and footer (%" PRIu64
                        " bytes), input file \"%s\" has body length %" PRIu64 " bytes, which is not "
                        "an exact multiple of the record length (%" PRIu64 " bytes).",
                        p->header_bytes, p->footer_bytes, s->path, body, p->record_bytes);
    }
    if ((st = emit(out, r->scratch, rec)))
        return st;
    memmove(r->scratch, r->scratch + rec, foot);
    r->scratch_len = foot;
    r->index++;
    return CV_STATUS_OK;
}

static CvStatus fixed_length_start(CvRecordReader *r)
{
    InStream *s = r->s;
    const CvReaderParams *p = &r->p;
    uint64_t hf = p->header_bytes + p->footer_bytes, got;
    CvStatus st;
    if (s->compression == CV_COMPRESSION_NONE) {
        if (s->file_size < hf)
            return cv_error(CV_INVALID_ARGUMENT, "input file \"%s\" has %" PRIu64 " bytes, fewer than "
                            "the header (%" PRIu64 " bytes) and footer (%" PRIu64 " bytes)",
                            s->path, s->file_size, p->header_bytes, p->footer_bytes);
        uint64_t body = s->file_size - hf;
        if (body % p->record_bytes)
            return cv_error(CV_INVALID_ARGUMENT, "Excluding the header (%" PRIu64 " bytes) and footer (%"
                            PRIu64 " bytes), input file \"%s\" has body length %" PRIu64 " bytes, "
                            "which is not an exact multiple of the record length (%" PRIu64 " bytes).",
                            p->header_bytes, p->footer_bytes, s->path, body, p->record_bytes);
        r->limit = s->file_size - p->footer_bytes;
        if (p->header_bytes && lseek(s->fd, (off_t)p->header_bytes, SEEK_SET) < 0)
            return errno_error(errno, s->path, "(seeking past the header)");
        s->buf_start = p->header_bytes;
        return CV_STATUS_OK;
    }
    if (p->record_bytes + p->footer_bytes > SIZE_MAX / 2)
        return cv_error(CV_INVALID_ARGUMENT, "record_bytes + footer_bytes is too large");
    if ((st = scratch_reserve(r, (size_t)(p->record_bytes + p->footer_bytes))))
        return st;
    if ((st = stream_skip(s, p->header_bytes, &got)))
        return stream_error(r, st, 0);
    size_t n = 0;
    if (got == p->header_bytes && (st = stream_read(s, r->scratch, (size_t)p->footer_bytes, &n)))
        return stream_error(r, st, got);
    if (got < p->header_bytes || n < p->footer_bytes)
        return cv_error(CV_DATA_LOSS, "input file \"%s\" has %" PRIu64 " bytes (uncompressed), fewer "
                        "than the header (%" PRIu64 " bytes) and footer (%" PRIu64 " bytes)",
                        s->path, got + n, p->header_bytes, p->footer_bytes);
    r->scratch_len = n;
    return CV_STATUS_OK;
}

CvStatus cv_record_reader_open(const char *path, const CvReaderParams *params, CvRecordReader **out)
{
    CvRecordReader *r = calloc(1, sizeof(*r));
    if (!r)
        return cv_error_nomem();
    r->p = *params;
    if (!r->p.options.max_record_bytes)
        r->p.options.max_record_bytes = CV_DEFAULT_MAX_RECORD_BYTES;
    CvStatus st = stream_open(path, &r->p.options, &r->s);
    if (!st && r->p.format == CV_FORMAT_FIXED_LENGTH)
        st = fixed_length_start(r);
    if (st) {
        cv_record_reader_close(r);
        return st;
    }
    *out = r;
    return CV_STATUS_OK;
}

CvStatus cv_record_reader_next(CvRecordReader *r, CvTensor *out, bool *eof)
{
    *eof = false;
    switch (r->p.format) {
    case CV_FORMAT_TFRECORD:
        return tfrecord_next(r, out, eof);
    case CV_FORMAT_TEXT_LINE:
        return text_line_next(r, out, eof);
    case CV_FORMAT_FIXED_LENGTH:
        return fixed_length_next(r, out, eof);
    }
    return cv_error(CV_INTERNAL, "unknown record format %d", (int)r->p.format);
}

/* ---------------------------------------------------- records of many files */

void cv_file_records_free_params(CvDataset *ds)
{
    free(ds->params);
}

CvStatus cv_file_records_dataset(const CvKernel *kernel, CvDataset *input,
                                 const CvReaderParams *params, CvDataset **out)
{
    const CvReadOptions *o = &params->options;
    if (o->compression != CV_COMPRESSION_NONE && o->compression != CV_COMPRESSION_ZLIB &&
        o->compression != CV_COMPRESSION_GZIP)
        return cv_error(CV_INVALID_ARGUMENT, "unknown compression code %d", (int)o->compression);
    if (params->format == CV_FORMAT_FIXED_LENGTH && params->record_bytes == 0)
        return cv_error(CV_INVALID_ARGUMENT, "`record_bytes` must be > 0");
    if (params->header_bytes > INT64_MAX || params->record_bytes > INT64_MAX ||
        params->footer_bytes > INT64_MAX || params->header_bytes + params->footer_bytes > INT64_MAX)
        return cv_error(CV_INVALID_ARGUMENT, "header_bytes/record_bytes/footer_bytes are too large");
    CvReaderParams *p = malloc(sizeof(*p));
    if (!p)
        return cv_error_nomem();
    *p = *params;
    return cv_dataset_new(kernel, &input, 1, p, false, out);
}

CvStatus cv_file_records_make_iterator(const CvDataset *ds, CvIterator **out)
{
    CvStatus st = cv_unary_iterator_new(ds, sizeof(CvFileRecordsIterator), out);
    if (!st)
        atomic_init(&((CvFileRecordsIterator *)*out)->cancelled, false);
    return st;
}

/* The filename in a scalar string element, as a new NUL-terminated string. */
static CvStatus filename_of(const CvElement *e, char **out)
{
    if (e->n != 1 || e->t[0].dtype != CV_STRING || e->t[0].rank != 0)
        return cv_error(CV_INVALID_ARGUMENT, "a file reader's input must be scalar strings (filenames)");
    const CvStringRef *ref = (const CvStringRef *)e->t[0].data;
    const char *p = e->t[0].buf->data + ref->offset;
    if (memchr(p, '\0', ref->length))
        return cv_error(CV_INVALID_ARGUMENT, "a filename contains a NUL byte");
    char *name = malloc(ref->length + 1);
    if (!name)
        return cv_error_nomem();
    memcpy(name, p, ref->length);
    name[ref->length] = '\0';
    *out = name;
    return CV_STATUS_OK;
}

CvStatus cv_file_records_next(CvIterator *base, CvElement *out, bool *end)
{
    CvFileRecordsIterator *it = (CvFileRecordsIterator *)base;
    const CvReaderParams *params = base->dataset->params;
    for (;;) {
        if (atomic_load_explicit(&it->cancelled, memory_order_relaxed))
            return cv_error(CV_CANCELLED, "%s was cancelled", base->kernel->name);
        if (it->done) {
            *end = true;
            return CV_STATUS_OK;
        }
        if (!it->reader) {
            CvElement fe = {0, NULL};
            CvStatus st = cv_iterator_next(it->base.input, &fe, end);
            if (st)
                return st;
            if (*end) {
                it->done = true;
                return CV_STATUS_OK;
            }
            char *name = NULL;
            st = filename_of(&fe, &name);
            cv_element_clear(&fe);
            if (!st)
                st = cv_record_reader_open(name, params, &it->reader);
            free(name);
            if (st)
                return st; /* the next call goes on with the next file */
        }
        CvTensor t;
        bool eof = false;
        CvStatus st = cv_record_reader_next(it->reader, &t, &eof);
        if (st || eof) {
            cv_record_reader_close(it->reader);
            it->reader = NULL;
            if (st)
                return st;
            continue;
        }
        st = cv_element_init(out, 1);
        if (st) {
            cv_tensor_clear(&t);
            return st;
        }
        out->t[0] = t;
        *end = false;
        return CV_STATUS_OK;
    }
}

void cv_file_records_cancel(CvIterator *base)
{
    CvFileRecordsIterator *it = (CvFileRecordsIterator *)base;
    atomic_store(&it->cancelled, true);
    cv_unary_iterator_cancel(base);
}

void cv_file_records_destroy(CvIterator *base)
{
    CvFileRecordsIterator *it = (CvFileRecordsIterator *)base;
    cv_record_reader_close(it->reader);
    it->reader = NULL;
    cv_unary_iterator_destroy(base);
}

/* ------------------------------------------------------------------ writer */

#define WRITE_BUFFER (256u << 10)

struct CvTFRecordWriter {
    pthread_mutex_t mu;
    int fd;
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
    const char *c = p;
    while (n) {
        ssize_t r = write(w->fd, c, n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return errno_error(errno, w->path, "(while writing)");
        }
        c += r;
        n -= (size_t)r;
    }
    return CV_STATUS_OK;
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
    return w->compression == CV_COMPRESSION_NONE ? put_plain(w, p, n) : deflate_some(w, p, n, Z_NO_FLUSH);
}

CvStatus cv_tfrecord_writer_open(const char *path, const CvRecordWriterOptions *o, CvTFRecordWriter **out)
{
    CvStatus st = CV_STATUS_OK;
    if (o->compression != CV_COMPRESSION_NONE && o->compression != CV_COMPRESSION_ZLIB &&
        o->compression != CV_COMPRESSION_GZIP)
        return cv_error(CV_INVALID_ARGUMENT, "unknown compression code %d", (int)o->compression);
    CvTFRecordWriter *w = calloc(1, sizeof(*w));
    if (!w)
        return cv_error_nomem();
    pthread_mutex_init(&w->mu, NULL);
    w->fd = -1;
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
    w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (w->fd < 0) {
        st = errno_error(errno, path, NULL);
        goto error;
    }
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
    if (w->fd >= 0) {
        if (w->compression != CV_COMPRESSION_NONE)
            st = deflate_some(w, NULL, 0, Z_FINISH);
        if (!st)
            st = out_flush(w);
        if (close(w->fd) < 0 && !st)
            st = errno_error(errno, w->path, "(while closing)");
        w->fd = -1;
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
