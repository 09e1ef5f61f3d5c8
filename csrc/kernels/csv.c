/* CsvDataset: the CSV records of each file named by the input (scalar
 * strings), one after the other, as tf.data.experimental.CsvDataset reads
 * them. Each record becomes one element of ncols scalars (the selected
 * fields, converted as io/csv.h says).
 *
 * Framing: a record ends at '\n', '\r\n' or a lone '\r' outside quotes, or
 * at the end of the file (an empty line is a record of one empty field).
 * With quotes, a field starting with '"' runs to the next lone '"' and may
 * hold delimiters and newlines; '""' stands for '"'. A quote followed by
 * anything but '"', the delimiter or a newline, and a '"' inside an
 * unquoted field, make the record invalid (the record is still read to its
 * end, so the next one starts where tf.data starts it); a file ending inside
 * quotes is an error and the file ends. The header record, when asked for,
 * is skipped (an empty file then is InvalidArgument; a header with a bad
 * quote is reported, then its records follow). Errors are
 * INVALID_ARGUMENT naming the file, the record and its line; the next call
 * goes on with the next record, as tf.data does.
 *
 * Files are read through io/input_stream.h (GZIP/ZLIB on the fly). Exact
 * resume is the record readers' (kernels/common/file_records.h): the open
 * file's name and its position, here its uncompressed offset, record and
 * line counts and what the file was (size, mtime); a restore reopens it and
 * seeks, refusing a file that changed. Never needs the GIL.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/iterator_state.h"
#include "io/input_stream.h"
#include "kernels/common/file_records.h"
#include "kernels/readers.h"

typedef struct CsvParams {
    CvCsvParams p; /* arrays below are owned copies */
    CvCsvColumn *cols;
    int64_t *sel; /* select or exclude */
    char *na;
    char *strings;
} CsvParams;

typedef struct Span {
    size_t off, len;
} Span;

enum { ERR_NONE, ERR_QUOTE_UNQUOTED, ERR_QUOTE_GARBAGE, ERR_EOF_QUOTE };

typedef struct CsvIterator {
    CvUnaryIterator base;
    CvInputStream *s; /* owned; NULL between files */
    char *name;       /* owned; the open file's name */
    bool done;
    atomic_bool cancelled;
    uint64_t record, line; /* of the next record: index in the file (after the header), 1-based line */
    /* One record's selected fields. */
    char *buf;
    size_t len, cap;
    Span *fields;
    size_t nfields;
    uint64_t found; /* selected fields seen */
    int err;
    uint64_t lines; /* line ends inside the record */
} CsvIterator;

static void csv_free_params(CvDataset *ds)
{
    CsvParams *p = ds->params;
    if (!p)
        return;
    free(p->cols);
    free(p->sel);
    free(p->na);
    free(p->strings);
    free(p);
}

static int64_t csv_cardinality(const CvDataset *ds)
{
    (void)ds;
    return CV_UNKNOWN_CARDINALITY;
}

static void csv_destroy(CvIterator *base);

static CvStatus csv_make_iterator(const CvDataset *ds, CvIterator **out)
{
    CvStatus st = cv_unary_iterator_new(ds, sizeof(CsvIterator), out);
    if (st)
        return st;
    CsvIterator *it = (CsvIterator *)*out;
    atomic_init(&it->cancelled, false);
    const CsvParams *p = ds->params;
    it->fields = calloc((size_t)p->p.ncols, sizeof(Span));
    if (!it->fields) {
        csv_destroy(*out);
        *out = NULL;
        return cv_error_nomem();
    }
    return CV_STATUS_OK;
}

static void close_file(CsvIterator *it)
{
    cv_input_stream_close(it->s);
    it->s = NULL;
    free(it->name);
    it->name = NULL;
}

/* Is field `index` selected? `pos` walks the select/exclude list. */
static bool selected(const CvCsvParams *p, uint64_t index, int *pos)
{
    if (p->nselect) {
        while (*pos < p->nselect && (uint64_t)p->select[*pos] < index)
            (*pos)++;
        return *pos < p->nselect && (uint64_t)p->select[*pos] == index;
    }
    while (*pos < p->nexclude && (uint64_t)p->exclude[*pos] < index)
        (*pos)++;
    return !(*pos < p->nexclude && (uint64_t)p->exclude[*pos] == index);
}

static CvStatus stream_error(CsvIterator *it, CvStatus st)
{
    if (st->code == CV_DATA_LOSS)
        return cv_status_prefix(st, "%s: %s stream is corrupted (reading CSV record %" PRIu64
                                ", line %" PRIu64 "): ", it->name,
                                cv_compression_name(cv_input_stream_compression(it->s)),
                                it->record, it->line);
    return st;
}

/* Read one record's fields (it->fields, it->found, it->err, it->lines), or
 * *eof when the file has no byte left. */
static CvStatus read_record(CsvIterator *it, bool *eof)
{
    const CvCsvParams *p = &((const CsvParams *)it->base.base.dataset->params)->p;
    const unsigned char delim = (unsigned char)p->delim;
    const bool quotes = p->quotes;
    enum { START, UNQUOTED, QUOTED, QUOTE_SEEN } state = START;
    int pos = 0;
    uint64_t index = 0;
    bool keep = selected(p, 0, &pos), any = false;
    size_t start = 0;
    it->len = 0;
    it->nfields = 0;
    it->found = 0;
    it->err = ERR_NONE;
    it->lines = 0;
    *eof = false;
#define FINISH_FIELD()                                                                             \
    do {                                                                                           \
        if (keep) {                                                                                \
            if (it->nfields < (size_t)p->ncols) {                                                  \
                it->fields[it->nfields].off = start;                                               \
                it->fields[it->nfields].len = it->len - start;                                     \
                it->nfields++;                                                                     \
            }                                                                                      \
            it->found++;                                                                           \
        }                                                                                          \
        index++;                                                                                   \
        keep = selected(p, index, &pos);                                                           \
        start = it->len;                                                                           \
    } while (0)
    for (;;) {
        const unsigned char *d = NULL;
        size_t avail = 0;
        bool end = false;
        CvStatus st = cv_input_stream_peek(it->s, &d, &avail, &end);
        if (st)
            return stream_error(it, st);
        if (end) {
            if (!any) {
                *eof = true;
                return CV_STATUS_OK;
            }
            if (state == QUOTED)
                it->err = ERR_EOF_QUOTE;
            FINISH_FIELD();
            return CV_STATUS_OK;
        }
        any = true;
        if (!cv_array_reserve((void **)&it->buf, &it->cap, it->len + avail, 1, 4096))
            return cv_error(CV_RESOURCE_EXHAUSTED, "out of memory reading a CSV record of \"%s\"",
                            it->name);
        char *out = it->buf;
        size_t n = it->len;
        for (size_t i = 0; i < avail; i++) {
            unsigned char c = d[i];
            if (state == QUOTED) {
                if (c == '"') {
                    state = QUOTE_SEEN;
                    continue;
                }
                if (c == '\n')
                    it->lines++;
                if (keep)
                    out[n++] = (char)c;
                continue;
            }
            if (state == QUOTE_SEEN && c == '"') {
                if (keep)
                    out[n++] = '"';
                state = QUOTED;
                continue;
            }
            if (c == delim) {
                it->len = n;
                FINISH_FIELD();
                state = START;
                continue;
            }
            if (c == '\n' || c == '\r') {
                it->len = n;
                FINISH_FIELD();
                cv_input_stream_consume(it->s, i + 1);
                it->lines++;
                if (c == '\r') { /* '\r\n' is one line end */
                    if ((st = cv_input_stream_peek(it->s, &d, &avail, &end)))
                        return stream_error(it, st);
                    if (!end && d[0] == '\n')
                        cv_input_stream_consume(it->s, 1);
                }
                return CV_STATUS_OK;
            }
            if (state == QUOTE_SEEN) { /* a lone quote inside a quoted field */
                if (!it->err)
                    it->err = ERR_QUOTE_GARBAGE;
                state = QUOTED;
                if (keep)
                    out[n++] = (char)c;
                continue;
            }
            if (c == '"' && quotes) {
                if (state == START) {
                    state = QUOTED;
                    continue;
                }
                if (!it->err)
                    it->err = ERR_QUOTE_UNQUOTED;
            }
            state = UNQUOTED;
            if (keep)
                out[n++] = (char)c;
        }
        it->len = n;
        cv_input_stream_consume(it->s, avail);
    }
#undef FINISH_FIELD
}

/* Pull the next filename, open it and skip its header, or *end. */
static CvStatus open_next_file(CsvIterator *it, bool *end)
{
    const CsvParams *p = it->base.base.dataset->params;
    CvElement fe = {0};
    CvStatus st = cv_iterator_next(it->base.input, &fe, end);
    if (st)
        return st;
    if (*end) {
        it->done = true;
        return CV_STATUS_OK;
    }
    if (fe.n != 1 || fe.t[0].dtype != CV_STRING || fe.t[0].rank != 0) {
        cv_element_clear(&fe);
        return cv_error(CV_INVALID_ARGUMENT, "CsvDataset's filenames must be scalar strings");
    }
    const CvStringRef *ref = (const CvStringRef *)fe.t[0].data;
    const char *src = cv_string_data(&fe.t[0], ref);
    char *name = NULL;
    if (memchr(src, '\0', ref->length))
        st = cv_error(CV_INVALID_ARGUMENT, "a filename contains a NUL byte");
    else if (!(name = malloc(ref->length + 1)))
        st = cv_error_nomem();
    else {
        memcpy(name, src, ref->length);
        name[ref->length] = '\0';
    }
    cv_element_clear(&fe);
    if (st)
        return st;
    it->name = name;
    it->record = 0;
    it->line = 1;
    if ((st = cv_input_stream_open(name, p->p.options.compression, p->p.options.buffer_size, &it->s))) {
        close_file(it);
        return st;
    }
    if (p->p.header) {
        bool eof = false;
        st = read_record(it, &eof);
        if (!st && eof)
            st = cv_error(CV_INVALID_ARGUMENT, "Can't read header of file \"%s\": it is empty", name);
        if (st) {
            close_file(it);
            return st;
        }
        it->line += it->lines;
        /* A bad header is reported (as tf.data does); the records after it follow. */
        if (it->err == ERR_EOF_QUOTE)
            st = cv_error(CV_INVALID_ARGUMENT, "Reached end of file without closing quoted field "
                          "in the header of \"%s\"", name);
        else if (it->err == ERR_QUOTE_GARBAGE)
            st = cv_error(CV_INVALID_ARGUMENT, "Quote inside a string has to be escaped by "
                          "another quote in the header of \"%s\"", name);
        else if (it->err == ERR_QUOTE_UNQUOTED)
            st = cv_error(CV_INVALID_ARGUMENT, "Unquoted fields cannot have quotes inside in the "
                          "header of \"%s\"", name);
        if (it->err == ERR_EOF_QUOTE)
            close_file(it); /* the header runs to the end of the file */
        return st;
    }
    return CV_STATUS_OK;
}

static CvStatus record_error(CsvIterator *it, const char *what, uint64_t rec, uint64_t line)
{
    return cv_error(CV_INVALID_ARGUMENT, "%s in record %" PRIu64 " (line %" PRIu64 ") of \"%s\"",
                    what, rec, line, it->name);
}

static CvStatus make_element(CsvIterator *it, uint64_t rec, uint64_t line, CvElement *out)
{
    const CsvParams *p = it->base.base.dataset->params;
    const int k = p->p.ncols;
    CvStatus st = cv_element_init(out, (uint32_t)k);
    if (st)
        return st;
    for (int j = 0; j < k; j++) {
        const CvCsvColumn *c = &p->p.cols[j];
        const char *fp = it->buf ? it->buf + it->fields[j].off : "";
        size_t fl = it->fields[j].len;
        CvCsvValue v;
        CvCsvResult r = cv_csv_value(c, fp, fl, p->p.na, p->p.na_len, &v);
        if (r == CV_CSV_MISSING) {
            st = cv_error(CV_INVALID_ARGUMENT, "Field %d is required but missing in record %"
                          PRIu64 " (line %" PRIu64 ") of \"%s\"!", j, rec, line, it->name);
            break;
        }
        if (r == CV_CSV_INVALID) {
            st = cv_error(CV_INVALID_ARGUMENT, "Field %d in record %" PRIu64 " (line %" PRIu64
                          ") of \"%s\" is not a valid %s: %.*s", j, rec, line, it->name,
                          cv_csv_dtype_name(c->dtype), (int)(fl < 256 ? fl : 256), fp);
            break;
        }
        if (c->dtype == CV_STRING) {
            char *b = NULL;
            if ((st = cv_tensor_alloc_scalar_string(&out->t[j], v.s_len, &b)))
                break;
            if (v.s_len)
                memcpy(b, v.s, v.s_len);
        } else {
            if ((st = cv_tensor_alloc(&out->t[j], c->dtype, 0, NULL, 0, NULL)))
                break;
            cv_csv_store(c->dtype, &v, out->t[j].data);
        }
    }
    if (st)
        cv_element_clear(out);
    return st;
}

static CvStatus csv_next(CvIterator *base, CvElement *out, bool *end)
{
    CsvIterator *it = (CsvIterator *)base;
    const CvCsvParams *p = &((const CsvParams *)base->dataset->params)->p;
    for (;;) {
        if (atomic_load_explicit(&it->cancelled, memory_order_relaxed))
            return cv_error(CV_CANCELLED, "CsvDataset was cancelled");
        if (it->done) {
            *end = true;
            return CV_STATUS_OK;
        }
        if (!it->s) {
            CvStatus st = open_next_file(it, end);
            if (st || *end)
                return st;
            if (!it->s)
                continue;
        }
        bool eof = false;
        CvStatus st = read_record(it, &eof);
        if (st || eof) {
            close_file(it);
            if (st)
                return st;
            continue;
        }
        uint64_t rec = it->record++, line = it->line;
        it->line += it->lines;
        *end = false;
        switch (it->err) {
        case ERR_EOF_QUOTE:
            st = record_error(it, "Reached end of file without closing quoted field", rec, line);
            close_file(it);
            return st;
        case ERR_QUOTE_GARBAGE:
            return record_error(it, "Quote inside a string has to be escaped by another quote",
                                rec, line);
        case ERR_QUOTE_UNQUOTED:
            return record_error(it, "Unquoted fields cannot have quotes inside", rec, line);
        default:
            break;
        }
        if (p->nselect ? it->found < (uint64_t)p->ncols : it->found != (uint64_t)p->ncols) {
            char what[96];
            if (it->found > (uint64_t)p->ncols)
                snprintf(what, sizeof(what), "Expect %d fields but have more", p->ncols);
            else
                snprintf(what, sizeof(what), "Expect %d fields but have %" PRIu64, p->ncols,
                         it->found);
            return record_error(it, what, rec, line);
        }
        return make_element(it, rec, line, out);
    }
}

/* -- exact resume (kernels/common/file_records.h's frame) ------------------ */

/* Where the open file stands: its uncompressed offset, the next record's
 * index and line, and what the file was when it was opened. */
typedef struct CsvPosition {
    uint64_t offset, record, line, size;
    int64_t mtime;
} CsvPosition;

static void put_csv_position(const CvIterator *base, CvStateWriter *w)
{
    const CsvIterator *it = (const CsvIterator *)base;
    cv_state_put_u64(w, cv_input_stream_offset(it->s));
    cv_state_put_u64(w, it->record);
    cv_state_put_u64(w, it->line);
    cv_state_put_u64(w, cv_input_stream_file_size(it->s));
    cv_state_put_i64(w, cv_input_stream_file_mtime_ns(it->s));
}

static CvStatus get_csv_position(CvStateReader *r, void *position)
{
    CsvPosition *pos = position;
    CvStatus st = cv_state_get_u64(r, &pos->offset);
    if (!st)
        st = cv_state_get_u64(r, &pos->record);
    if (!st)
        st = cv_state_get_u64(r, &pos->line);
    if (!st)
        st = cv_state_get_u64(r, &pos->size);
    if (!st)
        st = cv_state_get_i64(r, &pos->mtime);
    return st;
}

/* Reopens the file and seeks, refusing a file that changed since the save. */
static CvStatus reopen_csv(CvIterator *base, char *path, const void *position)
{
    CsvIterator *it = (CsvIterator *)base;
    const CsvParams *p = base->dataset->params;
    const CsvPosition *pos = position;
    it->name = path;
    it->record = pos->record;
    it->line = pos->line;
    CvStatus st = cv_input_stream_open(path, p->p.options.compression, p->p.options.buffer_size,
                                       &it->s);
    if (!st) {
        uint64_t now = cv_input_stream_file_size(it->s);
        if (now == UINT64_MAX || now != pos->size || cv_input_stream_file_mtime_ns(it->s) != pos->mtime)
            st = cv_error(CV_FAILED_PRECONDITION, "cannot restore the position in \"%s\" (CSV "
                          "record %" PRIu64 " at byte %" PRIu64 "): the file changed since the "
                          "state was saved", path, pos->record, pos->offset);
        else if (cv_input_stream_compression(it->s) == CV_COMPRESSION_NONE && pos->offset > now)
            st = cv_state_corrupt("a CSV offset past the end of its file");
        else
            st = cv_input_stream_seek(it->s, pos->offset, "(restoring a CSV position)");
    }
    if (st)
        close_file(it);
    return st;
}

static const CvFileResume csv_resume = {
    .reader = "CSV reader",
    .put_position = put_csv_position,
    .get_position = get_csv_position,
    .reopen = reopen_csv,
};

static CvStatus csv_save(CvIterator *base, CvStateWriter *w)
{
    CsvIterator *it = (CsvIterator *)base;
    return cv_file_resume_save(base, w, &csv_resume, it->done, it->s ? it->name : NULL);
}

static CvStatus csv_restore(CvIterator *base, CvStateReader *r)
{
    CsvPosition pos = {0};
    return cv_file_resume_restore(base, r, &csv_resume, &pos, &((CsvIterator *)base)->done);
}

static void csv_cancel(CvIterator *base)
{
    atomic_store(&((CsvIterator *)base)->cancelled, true);
    cv_unary_iterator_cancel(base);
}

static void csv_destroy(CvIterator *base)
{
    CsvIterator *it = (CsvIterator *)base;
    close_file(it);
    free(it->buf);
    free(it->fields);
    cv_unary_iterator_destroy(base);
}

const CvKernel cv_kernel_csv = {
    .name = "CSVDataset",
    .make_iterator = csv_make_iterator,
    .cardinality = csv_cardinality,
    .free_dataset = csv_free_params,
    .next = csv_next,
    .cancel = csv_cancel,
    .destroy = csv_destroy,
    .save = csv_save,
    .restore = csv_restore,
};

static bool increasing(const int64_t *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i] < 0 || (i && v[i] <= v[i - 1]))
            return false;
    return true;
}

CvStatus cv_csv_dataset(CvDataset *filenames, const CvCsvParams *params, CvDataset **out)
{
    const CvCsvParams *in = params;
    if (in->ncols < 1 || (in->nselect && in->nexclude) || in->nselect < 0 || in->nexclude < 0 ||
        (in->nselect && in->nselect != in->ncols) || !increasing(in->select, in->nselect) ||
        !increasing(in->exclude, in->nexclude) ||
        in->options.compression < CV_COMPRESSION_NONE || in->options.compression > CV_COMPRESSION_GZIP)
        return cv_error(CV_INVALID_ARGUMENT, "invalid CsvDataset arguments (columns, "
                        "select_cols/exclude_cols or compression)");
    size_t strings = in->na_len;
    for (int j = 0; j < in->ncols; j++) {
        if (!cv_csv_dtype_ok(in->cols[j].dtype))
            return cv_error(CV_INVALID_ARGUMENT, "CsvDataset column %d has an unsupported dtype", j);
        strings += in->cols[j].s_len;
    }
    CsvParams *p = calloc(1, sizeof(*p));
    int nsel = in->nselect ? in->nselect : in->nexclude;
    if (!p)
        return cv_error_nomem();
    p->p = *in;
    p->cols = malloc((size_t)in->ncols * sizeof(CvCsvColumn));
    p->sel = malloc(((size_t)nsel + 1) * sizeof(int64_t));
    p->na = malloc(in->na_len + 1);
    p->strings = malloc(strings + 1);
    if (!p->cols || !p->sel || !p->na || !p->strings) {
        CvDataset tmp = {.params = p};
        csv_free_params(&tmp);
        return cv_error_nomem();
    }
    memcpy(p->cols, in->cols, (size_t)in->ncols * sizeof(CvCsvColumn));
    if (nsel)
        memcpy(p->sel, in->nselect ? in->select : in->exclude, (size_t)nsel * sizeof(int64_t));
    if (in->na_len)
        memcpy(p->na, in->na, in->na_len);
    p->na[in->na_len] = '\0';
    size_t at = 0;
    for (int j = 0; j < in->ncols; j++) {
        if (p->cols[j].s_len)
            memcpy(p->strings + at, in->cols[j].s, p->cols[j].s_len);
        p->cols[j].s = p->strings + at;
        at += p->cols[j].s_len;
    }
    p->p.cols = p->cols;
    p->p.na = p->na;
    p->p.select = in->nselect ? p->sel : NULL;
    p->p.exclude = in->nexclude ? p->sel : NULL;
    return cv_dataset_new(&cv_kernel_csv, &filenames, 1, p, false, out);
}
