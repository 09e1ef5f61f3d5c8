/* DecodeCSV(records, select_cols, default_0, ..., default_{k-1}): split
 * each string of `records` (any shape) into CSV fields and convert them
 * (tf.io.decode_csv). Output j has records' shape and default_j's dtype
 * (int32, int64, float32, float64 or string).
 *
 * Inputs: [0] records (strings); [1] select_cols (int64 vector, strictly
 * increasing field indices, or empty: every field); [2 + j] column j's
 * default: one value, or none (the column is required).
 * ints: [0] field delimiter byte, [1] use_quote_delim. string: na_value
 * (NULL or "": none).
 *
 * A record: fields separated by the delimiter ("" has no field; '\r' and
 * '\n' where a field would start are passed over, and a record ending in
 * the delimiter ends with an empty field). With
 * use_quote_delim a field starting with '"' is quoted: '""' inside stands
 * for '"', and its closing quote must be followed by the delimiter or the
 * record's end. An unquoted field holds no '\r' or '\n' (and no '"' with
 * use_quote_delim). Without select_cols a record has exactly k fields; with
 * it, every selected index must exist. Every error is INVALID_ARGUMENT
 * naming the record (its flat index) and the field. Outputs are owned by
 * the caller; nothing is kept between calls. */
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "io/csv.h"
#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { DECODE_CSV_FIELD_DELIM, DECODE_CSV_USE_QUOTE_DELIM, DECODE_CSV_NUM_INTS };
static const char *const decode_csv_int_attrs[] = {"field_delim", "use_quote_delim", NULL};
CV_ATTR_NAMES_MATCH(decode_csv_int_attrs, DECODE_CSV_NUM_INTS);

typedef struct Span {
    size_t off, len;
} Span;

typedef struct Scratch {
    char *bytes; /* unquoted field bytes of one record */
    size_t len, cap;
    Span *fields;
    size_t nfields, fcap;
} Scratch;

static CvStatus put_bytes(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
    if (n > SIZE_MAX - *len || !cv_array_reserve((void **)buf, cap, *len + n, 1, 256))
        return cv_error_nomem();
    if (n)
        memcpy(*buf + *len, p, n);
    *len += n;
    return CV_STATUS_OK;
}

static CvStatus add_field(Scratch *s, size_t off)
{
    if (!cv_array_reserve((void **)&s->fields, &s->fcap, s->nfields + 1, sizeof(Span), 16))
        return cv_error_nomem();
    s->fields[s->nfields].off = off;
    s->fields[s->nfields].len = s->len - off;
    s->nfields++;
    return CV_STATUS_OK;
}

/* The fields of record (p, n) into s. */
static CvStatus split(const char *p, size_t n, char delim, bool quotes, Scratch *s, int64_t rec)
{
    s->len = 0;
    s->nfields = 0;
    if (n == 0)
        return CV_STATUS_OK;
    size_t pos = 0;
    for (;;) {
        while (pos < n && (p[pos] == '\r' || p[pos] == '\n'))
            pos++; /* line ends before a field are passed over */
        if (pos >= n)
            break;
        size_t off = s->len;
        CvStatus st;
        if (quotes && p[pos] == '"') {
            size_t i = pos + 1;
            for (;;) {
                if (i >= n)
                    return cv_error(CV_INVALID_ARGUMENT, "Quoted field has to end with quote "
                                    "followed by delim or end (record %lld)", (long long)rec);
                size_t run = i;
                while (run < n && p[run] != '"')
                    run++;
                if ((st = put_bytes(&s->bytes, &s->len, &s->cap, p + i, run - i)))
                    return st;
                i = run;
                if (i >= n)
                    continue;
                if (i + 1 < n && p[i + 1] == '"') {
                    if ((st = put_bytes(&s->bytes, &s->len, &s->cap, "\"", 1)))
                        return st;
                    i += 2;
                    continue;
                }
                if (i + 1 == n) {
                    pos = n + 1;
                    break;
                }
                if (p[i + 1] != delim)
                    return cv_error(CV_INVALID_ARGUMENT, "Quote inside a string has to be escaped "
                                    "by another quote (record %lld)", (long long)rec);
                pos = i + 2;
                break;
            }
        } else {
            size_t end = pos;
            while (end < n && p[end] != delim) {
                char c = p[end];
                if (c == '\r' || c == '\n' || (quotes && c == '"'))
                    return cv_error(CV_INVALID_ARGUMENT, "Unquoted fields cannot have "
                                    "quotes/CRLFs inside (record %lld)", (long long)rec);
                end++;
            }
            if ((st = put_bytes(&s->bytes, &s->len, &s->cap, p + pos, end - pos)))
                return st;
            pos = end + 1;
        }
        if ((st = add_field(s, off)))
            return st;
        if (pos > n)
            return CV_STATUS_OK;
    }
    /* A record ending in the delimiter ends with an empty field. */
    return p[n - 1] == delim ? add_field(s, s->len) : CV_STATUS_OK;
}

static CvStatus decode_csv_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                               CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)ctx;
    if (attrs->num_ints < DECODE_CSV_NUM_INTS || num_in != num_out + 2 || num_out < 1)
        return cv_error(CV_INVALID_ARGUMENT, "DecodeCSV needs records, select_cols and one "
                        "default per output");
    const char delim = (char)attrs->ints[DECODE_CSV_FIELD_DELIM];
    const bool quotes = attrs->ints[DECODE_CSV_USE_QUOTE_DELIM] != 0;
    const char *na = attrs->string ? attrs->string : "";
    const size_t na_len = strlen(na);
    const CvTensor *rec = &in[0], *sel = &in[1];
    if (rec->dtype != CV_STRING)
        return cv_error(CV_INVALID_ARGUMENT, "DecodeCSV records must be strings, got %s",
                        cv_dtype_name(rec->dtype));
    if (sel->dtype != CV_INT64 || sel->rank != 1)
        return cv_error(CV_INVALID_ARGUMENT, "DecodeCSV select_cols must be an int64 vector");
    const int64_t nsel = sel->shape[0];
    const int64_t *selv = (const int64_t *)sel->data;
    if (nsel && nsel != num_out)
        return cv_error(CV_INVALID_ARGUMENT, "select_cols should match output size");
    for (int64_t j = 0; j < nsel; j++)
        if (selv[j] < 0 || (j && selv[j] <= selv[j - 1]))
            return cv_error(CV_INVALID_ARGUMENT, "select_cols should be strictly increasing "
                            "non-negative indices");
    const int k = num_out;
    CvCsvColumn *cols = calloc((size_t)k, sizeof(*cols));
    size_t *str_total = calloc((size_t)k, sizeof(size_t));
    Scratch s = {0};
    Span *spans = NULL;  /* string columns: record i, column j at [i * k + j] */
    char *arena = NULL;  /* their bytes */
    size_t arena_len = 0, arena_cap = 0;
    CvStatus st = CV_STATUS_OK;
    if (!cols || !str_total) {
        st = cv_error_nomem();
        goto cleanup;
    }
    bool any_string = false;
    for (int j = 0; j < k; j++) {
        const CvTensor *d = &in[2 + j];
        int64_t count = cv_tensor_num_elements(d);
        if (!cv_csv_dtype_ok(d->dtype) || d->rank > 1) {
            st = cv_error(CV_INVALID_ARGUMENT, "record_defaults[%d] must be a scalar or vector "
                          "of float32, float64, int32, int64 or string", j);
            goto cleanup;
        }
        if (count > 1) {
            st = cv_error(CV_INVALID_ARGUMENT, "There should only be 1 default per field but "
                          "field %d has %lld", j, (long long)count);
            goto cleanup;
        }
        cols[j].dtype = d->dtype;
        cols[j].has_default = count == 1;
        if (count == 1) {
            switch (d->dtype) {
            case CV_INT32: {
                int32_t v;
                memcpy(&v, d->data, sizeof(v));
                cols[j].i = v;
                break;
            }
            case CV_INT64:
                memcpy(&cols[j].i, d->data, sizeof(int64_t));
                break;
            case CV_FLOAT32: {
                float v;
                memcpy(&v, d->data, sizeof(v));
                cols[j].f = v;
                break;
            }
            case CV_FLOAT64:
                memcpy(&cols[j].f, d->data, sizeof(double));
                break;
            default: {
                const CvStringRef *r = (const CvStringRef *)d->data;
                cols[j].s = cv_string_data(d, r);
                cols[j].s_len = (size_t)r->length;
            }
            }
        }
        any_string |= d->dtype == CV_STRING;
    }
    const int64_t n = cv_tensor_num_elements(rec);
    for (int j = 0; j < k; j++)
        if (cols[j].dtype != CV_STRING &&
            (st = cv_tensor_alloc(&out[j], cols[j].dtype, rec->rank, rec->shape, 0, NULL)))
            goto cleanup;
    if (any_string && n > 0) {
        if ((uint64_t)n > SIZE_MAX / sizeof(Span) / (uint64_t)k) {
            st = cv_error_nomem();
            goto cleanup;
        }
        spans = malloc((size_t)n * (size_t)k * sizeof(Span));
        if (!spans) {
            st = cv_error_nomem();
            goto cleanup;
        }
    }
    const CvStringRef *refs = (const CvStringRef *)rec->data;
    for (int64_t i = 0; i < n; i++) {
        if ((st = split(cv_string_data(rec, &refs[i]), (size_t)refs[i].length, delim, quotes, &s, i)))
            goto cleanup;
        size_t have = s.nfields;
        if (nsel) {
            have = 0;
            while (have < (size_t)nsel && (uint64_t)selv[have] < s.nfields)
                have++;
        }
        if (nsel ? have < (size_t)k : have != (size_t)k) {
            st = cv_error(CV_INVALID_ARGUMENT, "Expect %d fields but have %zu in record %lld", k,
                          have, (long long)i);
            goto cleanup;
        }
        for (int j = 0; j < k; j++) {
            size_t f = nsel ? (size_t)selv[j] : (size_t)j;
            const char *fp = s.bytes ? s.bytes + s.fields[f].off : "";
            size_t fl = s.fields[f].len;
            CvCsvValue v;
            CvCsvResult r = cv_csv_value(&cols[j], fp, fl, na, na_len, &v);
            if (r == CV_CSV_MISSING) {
                st = cv_error(CV_INVALID_ARGUMENT, "Field %d is required but missing in record "
                              "%lld!", j, (long long)i);
                goto cleanup;
            }
            if (r == CV_CSV_INVALID) {
                st = cv_error(CV_INVALID_ARGUMENT, "Field %d in record %lld is not a valid %s: "
                              "%.*s", j, (long long)i, cv_csv_dtype_name(cols[j].dtype),
                              (int)(fl < 256 ? fl : 256), fp);
                goto cleanup;
            }
            if (cols[j].dtype == CV_STRING) {
                spans[(size_t)i * (size_t)k + (size_t)j].off = arena_len;
                spans[(size_t)i * (size_t)k + (size_t)j].len = v.s_len;
                if ((st = put_bytes(&arena, &arena_len, &arena_cap, v.s, v.s_len)))
                    goto cleanup;
                str_total[j] += v.s_len;
            } else {
                cv_csv_store(cols[j].dtype, &v,
                             (char *)out[j].data + (size_t)i * cv_dtype_size(cols[j].dtype));
            }
        }
    }
    for (int j = 0; j < k; j++) {
        if (cols[j].dtype != CV_STRING)
            continue;
        char *blob = NULL;
        if ((st = cv_tensor_alloc(&out[j], CV_STRING, rec->rank, rec->shape, str_total[j], &blob)))
            goto cleanup;
        CvStringRef *dst = (CvStringRef *)out[j].data;
        uint64_t base = (uint64_t)(blob - out[j].buf->data), at = 0;
        for (int64_t i = 0; i < n; i++) {
            const Span *sp = &spans[(size_t)i * (size_t)k + (size_t)j];
            if (sp->len)
                memcpy(blob + at, arena + sp->off, sp->len);
            dst[i].offset = base + at;
            dst[i].length = sp->len;
            at += sp->len;
        }
    }
cleanup:
    if (st)
        for (int j = 0; j < k; j++)
            cv_tensor_clear(&out[j]);
    free(cols);
    free(str_total);
    free(s.bytes);
    free(s.fields);
    free(spans);
    free(arena);
    return st;
}

const CvOp cv_op_decode_csv = {
    .name = "DecodeCSV", .min_inputs = 3, .max_inputs = 1 << 16, .run = decode_csv_run,
    .int_attrs = decode_csv_int_attrs};
