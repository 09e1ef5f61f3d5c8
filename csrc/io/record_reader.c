/* Record framing of TFRecord, text-line and fixed-length files (see
 * record_reader.h), over the buffered input stream (io/input_stream.h).
 */
#include "io/record_reader.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/iterator_state.h"
#include "io/crc32c.h"
#include "io/input_stream.h"
#include "io/record_index.h"

struct CvRecordReader {
    CvReaderParams p;
    CvInputStream *s;
    const char *path;          /* the stream's */
    CvCompression compression; /* p.options.compression */
    uint64_t index; /* records returned so far */
    /* Text lines: the line being assembled. Fixed-length compressed: the
     * lookahead (record + footer). */
    unsigned char *scratch;
    size_t scratch_len, scratch_cap;
    uint64_t limit; /* fixed-length uncompressed: offset where the whole records end */
    bool torn_tail; /* fixed-length uncompressed: a partial record follows `limit` */
    bool torn_told; /* text lines: the cut stream was reported (its last line follows) */
    CvOrigin *origin; /* the path, for the records' buffers (NULL when out of memory) */
    CvRecordIndex *idx; /* owned; looked up at the first skip (idx_tried) */
    bool idx_tried;
    bool idx_seeked; /* the position came from an index seek once: a bad entry
                        sends the reader back to the start */
    bool verify;     /* the record `verify_index` was sought with the index: */
    uint64_t verify_index; /* its footer must be `verify_crc` */
    uint32_t verify_crc;
};

void cv_record_reader_close(CvRecordReader *r)
{
    if (!r)
        return;
    cv_input_stream_close(r->s);
    cv_record_index_close(r->idx);
    cv_origin_unref(r->origin);
    free(r->scratch);
    free(r);
}

/* A scalar string tensor of n bytes; *blob receives the bytes' address. */
static CvStatus string_alloc(CvTensor *out, size_t n, unsigned char **blob)
{
    char *b = NULL;
    CvStatus st = cv_tensor_alloc_scalar_string(out, n, &b);
    *blob = (unsigned char *)b;
    return st;
}

static CvStatus scratch_reserve(CvRecordReader *r, size_t need)
{
    if (!cv_array_reserve((void **)&r->scratch, &r->scratch_cap, need, 1, 256))
        return cv_error(CV_RESOURCE_EXHAUSTED, "out of memory growing a record buffer to %zu bytes",
                        need);
    return CV_STATUS_OK;
}

/* Context for an error from the stream (a damaged compressed stream, I/O). */
static CvStatus stream_error(CvRecordReader *r, CvStatus st, uint64_t offset)
{
    if (st->code == CV_DATA_LOSS)
        return cv_status_prefix(st, "%s: %s stream is corrupted (reading record %" PRIu64
                                " at offset %" PRIu64 "): ", r->path,
                                cv_compression_name(r->compression), r->index, offset);
    return st;
}

static CvStatus record_error(CvRecordReader *r, const char *what, uint64_t offset)
{
    return cv_error(CV_DATA_LOSS, "%s record at %" PRIu64 " in \"%s\" (record %" PRIu64 ")%s%s",
                    what, offset, r->path, r->index,
                    r->compression != CV_COMPRESSION_NONE ? ", " : "",
                    r->compression != CV_COMPRESSION_NONE ? cv_compression_name(r->compression) : "");
}

static const char *format_name(CvRecordFormat f)
{
    return f == CV_FORMAT_TFRECORD ? "TFRecord" : f == CV_FORMAT_TEXT_LINE ? "Text" : "Fixed-length record";
}

/* The file ends inside the record that starts at `start` (a torn tail): as
 * options.on_truncation says. Every record before it has been returned. */
static CvStatus torn(CvRecordReader *r, uint64_t start, bool *eof, bool keep_partial)
{
    switch (r->p.options.on_truncation) {
    case CV_TRUNCATION_ERROR:
        return cv_error(CV_DATA_LOSS, "truncated record at %" PRIu64 " in \"%s\" (record %" PRIu64
                        ")%s%s: the file ends inside this record (a torn tail)", start, r->path,
                        r->index, r->compression != CV_COMPRESSION_NONE ? ", " : "",
                        r->compression != CV_COMPRESSION_NONE ? cv_compression_name(r->compression)
                                                              : "");
    case CV_TRUNCATION_WARN:
        cv_warn(CV_WARNING_DATA_LOSS,
                "%s file \"%s\" ends inside record %" PRIu64 ", which starts at byte offset %"
                PRIu64 "%s%s%s (a torn tail: the file was cut short); the %" PRIu64 " record%s "
                "before it %s read%s. Pass on_truncation=\"error\" to raise DataLossError "
                "instead.",
                format_name(r->p.format), r->path,
                r->index, start, r->compression != CV_COMPRESSION_NONE ? " of the uncompressed " : "",
                r->compression != CV_COMPRESSION_NONE ? cv_compression_name(r->compression) : "",
                r->compression != CV_COMPRESSION_NONE ? " stream" : "", r->index,
                r->index == 1 ? "" : "s", r->index == 1 ? "was" : "were",
                keep_partial ? " and its incomplete last line is kept" : " and the partial record is skipped");
        break;
    case CV_TRUNCATION_IGNORE:
        break;
    }
    *eof = true;
    return CV_STATUS_OK;
}

/* Record r->index's provenance on its buffer, and count it. */
static void record_done(CvRecordReader *r, CvTensor *out)
{
    cv_buffer_set_origin(out->buf, r->origin, r->index);
    r->index++;
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
#define TFRECORD_HEADER_BYTES 12 /* length (8), its masked CRC-32C (4) */

/* Read and check the header of the record at `start` (the stream's
 * position): *len its data's length, or *eof at a clean end. A cut inside
 * the header: TensorFlow (2.x) ends the file quietly; a compressed stream
 * cut at a record boundary is torn too. */
static CvStatus tfrecord_header(CvRecordReader *r, uint64_t start, uint64_t *len, bool *eof)
{
    unsigned char hdr[TFRECORD_HEADER_BYTES];
    size_t got = 0;
    CvStatus st = cv_input_stream_read(r->s, hdr, sizeof(hdr), &got);
    if (st)
        return stream_error(r, st, start);
    if (got < sizeof(hdr) && (got > 0 || cv_input_stream_truncated(r->s)))
        return torn(r, start, eof, false);
    if (got == 0) {
        *eof = true;
        return CV_STATUS_OK;
    }
    if (cv_crc32c_masked(hdr, 8) != le32(hdr + 8))
        return record_error(r, "corrupted", start);
    *len = le64(hdr);
    return CV_STATUS_OK;
}

static CvStatus index_mismatch_reread(CvRecordReader *r, CvTensor *out, bool *eof);

static CvStatus tfrecord_next(CvRecordReader *r, CvTensor *out, bool *eof)
{
    CvInputStream *s = r->s;
    uint64_t start = cv_input_stream_offset(s), len = 0;
    unsigned char foot[4];
    size_t got;
    CvStatus st = tfrecord_header(r, start, &len, eof);
    if (st || *eof)
        return st;
    uint64_t at = cv_input_stream_offset(s), size = cv_input_stream_file_size(s);
    if (r->compression == CV_COMPRESSION_NONE && at <= size && len > size - at)
        return torn(r, start, eof, false); /* before allocating anything */
    if (len > r->p.options.max_record_bytes || len > SIZE_MAX - 64)
        return cv_error(CV_DATA_LOSS, "record size too large: corrupted record at %" PRIu64
                        " in \"%s\" (record %" PRIu64 ") declares %" PRIu64 " bytes, more than "
                        "max_record_bytes (%" PRIu64 ")", start, r->path, r->index, len,
                        r->p.options.max_record_bytes);
    unsigned char *blob = NULL;
    size_t n = (size_t)len;
    if (r->compression == CV_COMPRESSION_NONE || n <= GROW_START) {
        st = string_alloc(out, n, &blob);
        if (st)
            return st;
        st = cv_input_stream_read(s, blob, n, &got);
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
            st = cv_input_stream_read(s, r->scratch + got, target - got, &k);
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
            return torn(r, start, eof, false);
    }
    if (!st && got == n)
        st = cv_input_stream_read(s, foot, sizeof(foot), &got);
    else if (!st)
        got = 0;
    if (st || got < sizeof(foot)) {
        cv_tensor_clear(out);
        return st ? stream_error(r, st, start) : torn(r, start, eof, false);
    }
    if (cv_crc32c_masked(blob, n) != le32(foot)) {
        cv_tensor_clear(out);
        return record_error(r, "corrupted", start + TFRECORD_HEADER_BYTES); /* TF: the data's offset */
    }
    if (r->verify && r->verify_index == r->index) {
        r->verify = false;
        if (r->verify_crc != le32(foot)) { /* not the record indexed: read from the start */
            cv_tensor_clear(out);
            return index_mismatch_reread(r, out, eof);
        }
    }
    record_done(r, out);
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
    CvInputStream *s = r->s;
    r->scratch_len = 0;
    uint64_t start = cv_input_stream_offset(s);
    for (;;) {
        const unsigned char *p = NULL;
        size_t avail = 0;
        bool end;
        CvStatus st = cv_input_stream_peek(s, &p, &avail, &end);
        if (st)
            return stream_error(r, st, start);
        if (end) {
            /* A compressed stream cut short: its last line may be incomplete. */
            if (cv_input_stream_truncated(s) && !r->torn_told &&
                r->p.options.on_truncation != CV_TRUNCATION_IGNORE) {
                r->torn_told = true;
                bool last = r->scratch_len > 0 && r->p.options.on_truncation == CV_TRUNCATION_WARN;
                st = torn(r, start, eof, last);
                if (st || !last)
                    return st;
                *eof = false; /* warned: the partial line is still a line, as in TensorFlow */
            }
            if (r->scratch_len == 0) { /* a last segment is a line only if non-empty */
                *eof = true;
                return CV_STATUS_OK;
            }
            st = emit(out, r->scratch, r->scratch_len);
            if (!st)
                record_done(r, out);
            return st;
        }
        const unsigned char *nl = memchr(p, '\n', avail);
        size_t seg = nl ? (size_t)(nl - p) : avail;
        if (nl && r->scratch_len == 0 && !memchr(p, '\r', seg)) {
            st = emit(out, p, seg); /* the common case: one copy */
        } else {
            st = line_append(r, p, seg);
            if (!st && nl)
                st = emit(out, r->scratch, r->scratch_len);
        }
        if (st)
            return st;
        cv_input_stream_consume(s, seg + (nl ? 1 : 0));
        if (nl) {
            record_done(r, out);
            return CV_STATUS_OK;
        }
    }
}

static CvStatus fixed_length_next(CvRecordReader *r, CvTensor *out, bool *eof)
{
    CvInputStream *s = r->s;
    const CvReaderParams *p = &r->p;
    uint64_t start = cv_input_stream_offset(s);
    size_t rec = (size_t)p->record_bytes, foot = (size_t)p->footer_bytes;
    size_t got;
    CvStatus st;
    if (r->compression == CV_COMPRESSION_NONE) {
        if (start >= r->limit) {
            if (r->torn_tail) {
                r->torn_tail = false;
                return torn(r, start, eof, false);
            }
            *eof = true;
            return CV_STATUS_OK;
        }
        unsigned char *blob;
        if ((st = string_alloc(out, rec, &blob)))
            return st;
        st = cv_input_stream_read(s, blob, rec, &got);
        if (st || got < rec) {
            cv_tensor_clear(out);
            return st ? st : record_error(r, "truncated", start); /* the file shrank */
        }
        record_done(r, out);
        return CV_STATUS_OK;
    }
    /* Compressed: the size is unknown, so keep `footer_bytes` of lookahead. */
    start -= r->scratch_len;
    st = cv_input_stream_read(s, r->scratch + r->scratch_len, rec + foot - r->scratch_len, &got);
    if (st)
        return stream_error(r, st, start);
    r->scratch_len += got;
    if (r->scratch_len < rec + foot) {
        if (r->scratch_len == foot && !cv_input_stream_truncated(s)) {
            *eof = true;
            return CV_STATUS_OK;
        }
        if (p->options.on_truncation != CV_TRUNCATION_ERROR)
            return torn(r, start, eof, false);
        uint64_t body = cv_input_stream_offset(s) - p->header_bytes - p->footer_bytes;
        return cv_error(CV_DATA_LOSS, "truncated record at %" PRIu64 " in \"%s\" (record %"
                        PRIu64 "), %s: the file ends inside this record (a torn tail): excluding the "
                        "header (%" PRIu64 " bytes) and footer (%" PRIu64 " bytes), it has body "
                        "length %" PRIu64 " bytes, which is not an exact multiple of the record "
                        "length (%" PRIu64 " bytes).", start, r->path, r->index,
                        cv_compression_name(r->compression), p->header_bytes, p->footer_bytes,
                        body, p->record_bytes);
    }
    if ((st = emit(out, r->scratch, rec)))
        return st;
    memmove(r->scratch, r->scratch + rec, foot);
    r->scratch_len = foot;
    record_done(r, out);
    return CV_STATUS_OK;
}

static CvStatus fixed_length_start(CvRecordReader *r)
{
    CvInputStream *s = r->s;
    const CvReaderParams *p = &r->p;
    uint64_t hf = p->header_bytes + p->footer_bytes, got;
    CvStatus st;
    if (r->compression == CV_COMPRESSION_NONE) {
        if (cv_input_stream_file_size(s) < hf)
            return cv_error(CV_INVALID_ARGUMENT, "input file \"%s\" has %" PRIu64 " bytes, fewer than "
                            "the header (%" PRIu64 " bytes) and footer (%" PRIu64 " bytes)",
                            r->path, cv_input_stream_file_size(s), p->header_bytes, p->footer_bytes);
        uint64_t body = cv_input_stream_file_size(s) - hf;
        /* A body that is not a whole number of records ends in a torn record:
         * the whole ones come first (TensorFlow refuses the file at open). */
        r->torn_tail = body % p->record_bytes != 0;
        r->limit = p->header_bytes + body - body % p->record_bytes;
        return cv_input_stream_seek(s, p->header_bytes, "(seeking past the header)");
    }
    if (p->record_bytes + p->footer_bytes > SIZE_MAX / 2)
        return cv_error(CV_INVALID_ARGUMENT, "record_bytes + footer_bytes is too large");
    if ((st = scratch_reserve(r, (size_t)(p->record_bytes + p->footer_bytes))))
        return st;
    if ((st = cv_input_stream_skip(s, p->header_bytes, &got)))
        return stream_error(r, st, 0);
    size_t n = 0;
    if (got == p->header_bytes &&
        (st = cv_input_stream_read(s, r->scratch, (size_t)p->footer_bytes, &n)))
        return stream_error(r, st, got);
    if (got < p->header_bytes || n < p->footer_bytes)
        return cv_error(CV_DATA_LOSS, "input file \"%s\" has %" PRIu64 " bytes (uncompressed), fewer "
                        "than the header (%" PRIu64 " bytes) and footer (%" PRIu64 " bytes)",
                        r->path, got + n, p->header_bytes, p->footer_bytes);
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
    r->compression = r->p.options.compression;
    CvStatus st = cv_input_stream_open(path, r->compression, r->p.options.buffer_size, &r->s);
    if (!st) {
        r->path = cv_input_stream_path(r->s);
        r->origin = cv_origin_new(r->path); /* NULL (out of memory): no provenance */
    }
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

CvStatus cv_reader_params_check(const CvReaderParams *params)
{
    const CvReadOptions *o = &params->options;
    if (!cv_compression_valid(o->compression))
        return cv_error(CV_INVALID_ARGUMENT, "unknown compression code %d", (int)o->compression);
    if (!cv_truncation_valid((int)o->on_truncation))
        return cv_error(CV_INVALID_ARGUMENT, "unknown truncation mode %d", (int)o->on_truncation);
    if (params->format == CV_FORMAT_FIXED_LENGTH && params->record_bytes == 0)
        return cv_error(CV_INVALID_ARGUMENT, "`record_bytes` must be > 0");
    if (params->header_bytes > INT64_MAX || params->record_bytes > INT64_MAX ||
        params->footer_bytes > INT64_MAX || params->header_bytes + params->footer_bytes > INT64_MAX)
        return cv_error(CV_INVALID_ARGUMENT, "header_bytes/record_bytes/footer_bytes are too large");
    return CV_STATUS_OK;
}

/* ------------------------------------------------------------ skip, resume */

#define FLAG_TORN_TOLD 1u /* CvRecordPosition.flags */

/* Drop the index after a warning saying why (an entry that disagrees with
 * the file, or `why` alone when entry is NO_ENTRY); the caller reads
 * instead. */
#define NO_ENTRY UINT64_MAX
static void index_distrust(CvRecordReader *r, const char *why, uint64_t entry)
{
    char what[64] = "";
    if (entry != NO_ENTRY)
        snprintf(what, sizeof(what), "its entry for record %" PRIu64 " ", entry);
    cv_warn(CV_WARNING_DATA_LOSS_EACH, "TFRecord index \"%s\" is ignored: %s%s. Records of \"%s\" "
            "are read to skip them%s; rebuild the index with `python -m conveyor.tools.index %s`.",
            cv_record_index_path(r->idx), what, why, r->path,
            r->idx_seeked ? ", from the start" : "", r->path);
    cv_record_index_close(r->idx);
    r->idx = NULL;
    r->verify = false;
}

/* The TFRECORD_HEADER_BYTES at `at` (uncompressed file) into hdr; *ok when
 * they are a TFRecord header whose length passes its CRC; the stream is
 * left at `at`. */
static CvStatus header_at(CvRecordReader *r, uint64_t at, bool *ok, unsigned char *hdr)
{
    size_t got = 0;
    CvStatus st = cv_input_stream_seek(r->s, at, "(checking a record header)");
    if (!st)
        st = cv_input_stream_read(r->s, hdr, TFRECORD_HEADER_BYTES, &got);
    if (!st)
        st = cv_input_stream_seek(r->s, at, "(checking a record header)");
    *ok = !st && got == TFRECORD_HEADER_BYTES && cv_crc32c_masked(hdr, 8) == le32(hdr + 8);
    return st;
}

static CvStatus tfrecord_skip_one(CvRecordReader *r, bool *eof);

/* After an index entry was found wrong: the position this reader reached
 * through the index is not trusted either, so go back to the start and
 * read up to the same record count (correct records, whatever the index
 * said). A file with fewer records than that is DATA_LOSS. */
static CvStatus reread_from_start(CvRecordReader *r, const atomic_bool *stop)
{
    uint64_t want = r->index;
    bool eof = false;
    CvStatus st = cv_input_stream_seek(r->s, 0, "(reading from the start after a bad index entry)");
    r->index = 0;
    while (!st && r->index < want) {
        if (stop && r->index % 4096 == 4095 && atomic_load_explicit(stop, memory_order_relaxed))
            return cv_error(CV_CANCELLED, "skipping records of \"%s\" was cancelled", r->path);
        st = tfrecord_skip_one(r, &eof);
        if (!st && eof)
            st = cv_error(CV_DATA_LOSS, "\"%s\" has %" PRIu64 " records, fewer than the %" PRIu64
                          " its index had led to; the file changed", r->path, r->index, want);
    }
    return st;
}

/* Distrust the index (see index_distrust) and put the reader where reading
 * alone would have it. */
static CvStatus index_fail(CvRecordReader *r, const char *why, uint64_t entry, uint64_t here,
                           const atomic_bool *stop)
{
    bool back = r->idx_seeked;
    index_distrust(r, why, entry);
    if (back)
        return reread_from_start(r, stop);
    return cv_input_stream_seek(r->s, here, "(going back after a bad index entry)");
}

/* The record read after an index seek is not the one the index recorded
 * there: drop the index, read up to the same record from the start, and
 * return that one. */
static CvStatus index_mismatch_reread(CvRecordReader *r, CvTensor *out, bool *eof)
{
    index_distrust(r, "does not match the record found there (its data CRC differs)", r->index);
    CvStatus st = reread_from_start(r, NULL);
    return st ? st : tfrecord_next(r, out, eof);
}

/* Seek over up to n records with the index; *skipped is how many (0 when the
 * index is dropped). Every entry used is checked: its block's CRC (in
 * cv_record_index_entry), the header it points at (its length CRC as
 * indexed), for the end the last record ending there; the footer of the
 * record then read is checked by tfrecord_next (r->verify). */
static CvStatus index_skip(CvRecordReader *r, uint64_t n, uint64_t *skipped,
                           const atomic_bool *stop)
{
    uint64_t count = cv_record_index_count(r->idx);
    uint64_t size = cv_input_stream_file_size(r->s), now = cv_input_stream_offset(r->s);
    CvRecordIndexEntry here, there, last;
    unsigned char hdr[TFRECORD_HEADER_BYTES];
    *skipped = 0;
    if (r->index > count)
        return index_fail(r, "is missing (the file has more records than the index)", r->index,
                          now, stop);
    uint64_t target = r->index + (n < count - r->index ? n : count - r->index);
    if (target == r->index)
        return CV_STATUS_OK;
    CvStatus st = cv_record_index_entry(r->idx, r->index, &here);
    if (!st)
        st = cv_record_index_entry(r->idx, target, &there);
    if (!st && target == count && count > 0)
        st = cv_record_index_entry(r->idx, count - 1, &last);
    if (st) {
        CvStatus back = index_fail(r, st->message, NO_ENTRY, now, stop);
        cv_status_free(st);
        return back;
    }
    if (here.offset != now || there.offset < here.offset || there.offset > size)
        return index_fail(r, "does not match the file", here.offset != now ? r->index : target,
                          now, stop);
    bool ok = true;
    if (target < count) {
        if ((st = header_at(r, there.offset, &ok, hdr)))
            return st;
        ok = ok && le32(hdr + 8) == there.header_crc && there.offset + 16 <= size &&
             le64(hdr) <= size - there.offset - 16;
    } else if (count > 0) {
        /* The end: the last record must start at its entry and end there. */
        if ((st = header_at(r, last.offset, &ok, hdr)))
            return st;
        ok = ok && le32(hdr + 8) == last.header_crc && last.offset < there.offset &&
             le64(hdr) == there.offset - last.offset - 16;
    }
    if (!ok)
        return index_fail(r, "does not point at the record header it indexed", target, now, stop);
    if ((st = cv_input_stream_seek(r->s, there.offset, "(seeking to an indexed record)")))
        return st;
    *skipped = target - r->index;
    r->index = target;
    r->idx_seeked = true;
    r->verify = target < count;
    r->verify_index = target;
    r->verify_crc = there.data_crc;
    return CV_STATUS_OK;
}

/* One TFRecord passed over as tf.data's SkipRecords does: the header read
 * and its length checked, the data and footer skipped unread. Torn tails as
 * in tfrecord_next. */
static CvStatus tfrecord_skip_one(CvRecordReader *r, bool *eof)
{
    CvInputStream *s = r->s;
    uint64_t start = cv_input_stream_offset(s), len = 0;
    CvStatus st = tfrecord_header(r, start, &len, eof);
    if (st || *eof)
        return st;
    uint64_t at = cv_input_stream_offset(s), size = cv_input_stream_file_size(s);
    if (r->compression == CV_COMPRESSION_NONE && at <= size && (len > size - at || size - at - len < 4))
        return torn(r, start, eof, false);
    uint64_t passed = 0;
    if (len > UINT64_MAX - 4)
        return torn(r, start, eof, false);
    if ((st = cv_input_stream_skip(s, len + 4, &passed)))
        return stream_error(r, st, start);
    if (passed < len + 4)
        return torn(r, start, eof, false);
    r->index++;
    return CV_STATUS_OK;
}

#define STOP_POLL 4096 /* records between polls of `stop` */

CvStatus cv_record_reader_skip(CvRecordReader *r, uint64_t n, uint64_t *skipped, bool *eof,
                               const atomic_bool *stop)
{
    *skipped = 0;
    *eof = false;
    if (n && r->p.format == CV_FORMAT_TFRECORD && r->compression == CV_COMPRESSION_NONE &&
        cv_input_stream_file_size(r->s) != UINT64_MAX) {
        if (!r->idx_tried) {
            r->idx_tried = true;
            r->idx = cv_record_index_open(r->path, cv_input_stream_file_info(r->s));
        }
        if (r->idx) {
            CvStatus st = index_skip(r, n, skipped, stop);
            if (st)
                return st;
        }
    }
    /* Without an index, and to find the end after the last indexed record
     * (which may be a torn tail): pass over records one by one. */
    while (*skipped < n) {
        if (stop && *skipped % STOP_POLL == STOP_POLL - 1 &&
            atomic_load_explicit(stop, memory_order_relaxed))
            return cv_error(CV_CANCELLED, "skipping records of \"%s\" was cancelled", r->path);
        CvStatus st;
        if (r->p.format == CV_FORMAT_TFRECORD) {
            st = tfrecord_skip_one(r, eof);
        } else {
            CvTensor t;
            st = cv_record_reader_next(r, &t, eof);
            if (!st && !*eof)
                cv_tensor_clear(&t);
        }
        if (st || *eof)
            return st;
        ++*skipped;
    }
    return CV_STATUS_OK;
}

void cv_record_reader_position(const CvRecordReader *r, CvRecordPosition *pos)
{
    pos->offset = cv_input_stream_offset(r->s);
    if (r->p.format == CV_FORMAT_FIXED_LENGTH && r->compression != CV_COMPRESSION_NONE)
        pos->offset -= r->scratch_len; /* the footer-sized lookahead */
    pos->index = r->index;
    pos->file_size = cv_input_stream_file_size(r->s);
    pos->mtime_ns = cv_input_stream_file_mtime_ns(r->s);
    pos->flags = r->torn_told ? FLAG_TORN_TOLD : 0;
}

static CvStatus not_a_boundary(CvRecordReader *r, const CvRecordPosition *pos, const char *why)
{
    return cv_error(CV_DATA_LOSS, "cannot restore the position in \"%s\" (record %" PRIu64
                    " at byte %" PRIu64 "%s%s): %s; the file changed or the saved state is "
                    "corrupt", r->path, pos->index, pos->offset,
                    r->compression != CV_COMPRESSION_NONE ? " of the uncompressed " : "",
                    r->compression != CV_COMPRESSION_NONE ? cv_compression_name(r->compression) : "",
                    why);
}

/* Fixed-length, compressed: the stream stands `footer` bytes past the
 * record at `from`, which are in scratch; move that window to `to`. */
static CvStatus lookahead_to(CvRecordReader *r, uint64_t from, uint64_t to)
{
    size_t foot = (size_t)r->p.footer_bytes, got = 0;
    uint64_t d = to - from;
    CvStatus st;
    if (d >= foot) {
        st = cv_input_stream_seek(r->s, to, "(restoring a position)");
        if (!st)
            st = cv_input_stream_read(r->s, r->scratch, foot, &got);
        if (!st && got < foot)
            st = cv_error(CV_DATA_LOSS, "%s: the stream ends before byte %" PRIu64, r->path, to + foot);
        return st;
    }
    memmove(r->scratch, r->scratch + d, foot - (size_t)d);
    st = cv_input_stream_read(r->s, r->scratch + foot - d, (size_t)d, &got);
    if (!st && got < d)
        st = cv_error(CV_DATA_LOSS, "%s: the stream ends before byte %" PRIu64, r->path, to + foot);
    return st;
}

CvStatus cv_record_reader_seek(CvRecordReader *r, const CvRecordPosition *pos)
{
    uint64_t size = cv_input_stream_file_size(r->s);
    CvStatus st = CV_STATUS_OK;
    if (size == UINT64_MAX)
        return cv_error(CV_FAILED_PRECONDITION, "cannot restore a position inside \"%s\": it is not "
                        "a regular file", r->path);
    if (size != pos->file_size || cv_input_stream_file_mtime_ns(r->s) != pos->mtime_ns)
        return cv_error(CV_FAILED_PRECONDITION, "cannot restore the position in \"%s\" (record %"
                        PRIu64 " at byte %" PRIu64 "): the file changed since the state was saved "
                        "(%" PRIu64 " bytes then, %" PRIu64 " now%s)", r->path, pos->index,
                        pos->offset, pos->file_size, size,
                        size == pos->file_size ? ", and its modification time differs" : "");
    if (pos->flags & ~(uint64_t)FLAG_TORN_TOLD)
        return cv_state_corrupt("unknown record reader flags");
    bool uncompressed = r->compression == CV_COMPRESSION_NONE;
    if (uncompressed && pos->offset > size)
        return not_a_boundary(r, pos, "the offset is past the end of the file");
    switch (r->p.format) {
    case CV_FORMAT_TFRECORD: {
        if ((st = cv_input_stream_seek(r->s, pos->offset, "(restoring a position)")))
            return st;
        bool ok = true;
        unsigned char hdr[TFRECORD_HEADER_BYTES];
        if (uncompressed && pos->offset + 12 <= size) {
            if ((st = header_at(r, pos->offset, &ok, hdr)))
                return st;
        } else if (!uncompressed) {
            /* The header, when it is buffered already: a compressed stream
             * cannot step back, and next() checks it anyway. */
            const unsigned char *p = NULL;
            size_t avail = 0;
            bool eof = false;
            if ((st = cv_input_stream_peek(r->s, &p, &avail, &eof)))
                return st;
            ok = eof || avail < 12 || cv_crc32c_masked(p, 8) == le32(p + 8);
        }
        if (!ok)
            return not_a_boundary(r, pos, "no record header starts there");
        break;
    }
    case CV_FORMAT_TEXT_LINE:
        if (pos->offset > 0) {
            /* A line starts after '\n' (or the stream ended: a last line
             * without one). */
            unsigned char c = 0;
            size_t got = 0;
            if ((st = cv_input_stream_seek(r->s, pos->offset - 1, "(restoring a position)")) ||
                (st = cv_input_stream_read(r->s, &c, 1, &got)))
                return st;
            const unsigned char *p = NULL;
            size_t avail = 0;
            bool eof = false;
            if (got == 1 && c != '\n' && !(st = cv_input_stream_peek(r->s, &p, &avail, &eof)) && !eof)
                return not_a_boundary(r, pos, "no line starts there");
            if (st)
                return st;
            if (got < 1)
                return not_a_boundary(r, pos, "the stream ends before it");
        }
        r->torn_told = (pos->flags & FLAG_TORN_TOLD) != 0;
        break;
    case CV_FORMAT_FIXED_LENGTH: {
        uint64_t h = r->p.header_bytes;
        if (pos->offset < h || (pos->offset - h) % r->p.record_bytes != 0 ||
            (uncompressed && pos->offset > r->limit))
            return not_a_boundary(r, pos, "no record starts there");
        st = uncompressed ? cv_input_stream_seek(r->s, pos->offset, "(restoring a position)")
                          : lookahead_to(r, h, pos->offset);
        if (st)
            return st;
        break;
    }
    }
    r->index = pos->index;
    return CV_STATUS_OK;
}
