/* Iterator state bytes (see state.h). Integers are stored little-endian
 * whatever the host, so a state moves between machines. */
#include "core/iterator_state.h"

#include <stdatomic.h>

#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 255

void cv_state_writer_init(CvStateWriter *w)
{
    *w = (CvStateWriter){0};
}

void cv_state_writer_clear(CvStateWriter *w)
{
    free(w->data);
    cv_status_free(w->error);
    *w = (CvStateWriter){0};
}

void cv_state_writer_reset(CvStateWriter *w)
{
    cv_status_free(w->error);
    w->error = CV_STATUS_OK;
    w->len = 0;
}

/* Room for n more bytes; false (and the writer in error) when there is none. */
static bool reserve(CvStateWriter *w, size_t n)
{
    if (w->error)
        return false;
    if (n <= w->cap - w->len)
        return true;
    size_t cap = w->cap ? w->cap : 256;
    while (cap - w->len < n) {
        if (cap > SIZE_MAX / 2) {
            w->error = cv_error_nomem();
            return false;
        }
        cap *= 2;
    }
    char *data = realloc(w->data, cap);
    if (!data) {
        w->error = cv_error_nomem();
        return false;
    }
    w->data = data;
    w->cap = cap;
    return true;
}

static void put(CvStateWriter *w, const void *p, size_t n)
{
    if (n && reserve(w, n)) {
        memcpy(w->data + w->len, p, n);
        w->len += n;
    }
}

static void encode_u64(char *dst, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        dst[i] = (char)(v >> (8 * i));
}

static uint64_t decode_u64(const char *src)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)(unsigned char)src[i] << (8 * i);
    return v;
}

void cv_state_put_u64(CvStateWriter *w, uint64_t v)
{
    char b[8];
    encode_u64(b, v);
    put(w, b, 8);
}

void cv_state_put_i64(CvStateWriter *w, int64_t v)
{
    cv_state_put_u64(w, (uint64_t)v);
}

void cv_state_put_bytes(CvStateWriter *w, const void *p, size_t n)
{
    cv_state_put_u64(w, n);
    put(w, p, n);
}

void cv_state_put_raw(CvStateWriter *w, const void *p, size_t n)
{
    put(w, p, n);
}

void cv_state_begin(CvStateWriter *w, const char *name, size_t *frame)
{
    size_t n = strlen(name);
    unsigned char len = (unsigned char)(n > NAME_MAX_LEN ? NAME_MAX_LEN : n);
    put(w, &len, 1);
    put(w, name, len);
    *frame = w->len;
    cv_state_put_u64(w, 0); /* the contents' length, filled in by cv_state_end */
}

CvStatus cv_state_end(CvStateWriter *w, size_t frame)
{
    if (w->error) /* the writer keeps its own, so later writes stay no-ops */
        return cv_status_copy(w->error);
    encode_u64(w->data + frame, (uint64_t)(w->len - frame - 8));
    return CV_STATUS_OK;
}

static _Atomic(CvForeignRead) foreign_read;

void cv_state_set_foreign_reader(CvForeignRead read)
{
    atomic_store_explicit(&foreign_read, read, memory_order_release);
}

/* A tensor in memory the host cannot read: its bytes copied out first. */
static bool put_foreign(CvStateWriter *w, const CvTensor *t)
{
    CvForeignRead read = atomic_load_explicit(&foreign_read, memory_order_acquire);
    size_t n = cv_tensor_nbytes(t);
    CvStatus s = CV_STATUS_OK;
    void *copy = NULL;
    if (!read || !read(t->buf, t->data, NULL, 0, &s))
        return false;
    if (!(copy = malloc(n ? n : 1)))
        s = cv_error_nomem();
    else
        read(t->buf, t->data, copy, n, &s);
    if (!s)
        cv_state_put_bytes(w, copy, n);
    else if (!w->error)
        w->error = s;
    else
        cv_status_free(s);
    free(copy);
    return true;
}

void cv_state_put_element(CvStateWriter *w, const CvElement *e)
{
    cv_state_put_u64(w, e->n);
    for (uint32_t i = 0; i < e->n; i++) {
        const CvTensor *t = &e->t[i];
        cv_state_put_u64(w, (uint64_t)t->dtype);
        cv_state_put_u64(w, (uint64_t)t->rank);
        for (int d = 0; d < t->rank; d++)
            cv_state_put_i64(w, t->shape[d]);
        if (t->dtype != CV_STRING) {
            if (!put_foreign(w, t))
                cv_state_put_bytes(w, t->data, cv_tensor_nbytes(t));
            continue;
        }
        int64_t count = cv_tensor_num_elements(t);
        const CvStringRef *refs = (const CvStringRef *)t->data;
        uint64_t total = 0;
        for (int64_t k = 0; k < count; k++)
            total += refs[k].length;
        cv_state_put_u64(w, total);
        for (int64_t k = 0; k < count; k++)
            cv_state_put_bytes(w, cv_string_data(t, &refs[k]), refs[k].length);
    }
}

CvStatus cv_state_corrupt(const char *what)
{
    return cv_error(CV_DATA_LOSS, "corrupt iterator state: %s", what);
}

void cv_state_reader_init(CvStateReader *r, const void *data, size_t len)
{
    *r = (CvStateReader){data, len, 0};
}

static CvStatus take(CvStateReader *r, size_t n, const char **p)
{
    if (n > r->len - r->pos)
        return cv_state_corrupt("it ends early (truncated?)");
    *p = r->data + r->pos;
    r->pos += n;
    return CV_STATUS_OK;
}

CvStatus cv_state_get_u64(CvStateReader *r, uint64_t *v)
{
    const char *p = NULL;
    CvStatus s = take(r, 8, &p);
    if (!s)
        *v = decode_u64(p);
    return s;
}

CvStatus cv_state_get_i64(CvStateReader *r, int64_t *v)
{
    uint64_t u = 0;
    CvStatus s = cv_state_get_u64(r, &u);
    if (!s)
        *v = (int64_t)u;
    return s;
}

CvStatus cv_state_get_range(CvStateReader *r, const char *what, int64_t lo, int64_t hi, int64_t *v)
{
    CvStatus s = cv_state_get_i64(r, v);
    if (!s && (*v < lo || *v > hi))
        return cv_error(CV_DATA_LOSS, "corrupt iterator state: %s %lld is outside [%lld, %lld]",
                        what, (long long)*v, (long long)lo, (long long)hi);
    return s;
}

CvStatus cv_state_get_bool(CvStateReader *r, bool *v)
{
    int64_t x = 0;
    CvStatus s = cv_state_get_range(r, "a flag", 0, 1, &x);
    if (!s)
        *v = x != 0;
    return s;
}

CvStatus cv_state_get_bytes(CvStateReader *r, const void **p, size_t *n)
{
    uint64_t len = 0;
    CvStatus s = cv_state_get_u64(r, &len);
    if (s)
        return s;
    if (len > r->len - r->pos)
        return cv_state_corrupt("a byte string runs past its end (truncated?)");
    const char *q = NULL;
    s = take(r, (size_t)len, &q);
    *p = q;
    *n = (size_t)len;
    return s;
}

CvStatus cv_state_enter(CvStateReader *r, const char *name, size_t *frame_end)
{
    const char *p = NULL;
    CvStatus s = take(r, 1, &p);
    if (s)
        return s;
    size_t n = (unsigned char)*p;
    const char *found = NULL;
    uint64_t len = 0;
    if ((s = take(r, n, &found)) || (s = cv_state_get_u64(r, &len)))
        return s;
    size_t want = strlen(name);
    if (want > NAME_MAX_LEN)
        want = NAME_MAX_LEN;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)found[i] < 0x20 || (unsigned char)found[i] > 0x7e) /* text only */
            return cv_state_corrupt("a frame's kernel name is not printable");
    if (n != want || memcmp(found, name, n) != 0)
        return cv_error(CV_FAILED_PRECONDITION,
                        "the saved state is not of this pipeline: it has a %.*s iterator where "
                        "this pipeline has %s (was the pipeline changed since it was saved?)",
                        (int)n, found, name);
    if (len > r->len - r->pos)
        return cv_state_corrupt("a frame runs past its end (truncated?)");
    *frame_end = r->pos + (size_t)len;
    return CV_STATUS_OK;
}

CvStatus cv_state_leave(CvStateReader *r, size_t frame_end)
{
    if (r->pos != frame_end)
        return cv_state_corrupt("a frame's contents do not match its length");
    return CV_STATUS_OK;
}

CvStatus cv_state_get_frame(CvStateReader *r, const void **p, size_t *n)
{
    size_t start = r->pos;
    const char *q = NULL;
    uint64_t len = 0;
    CvStatus s = take(r, 1, &q);
    if (!s)
        s = take(r, (size_t)(unsigned char)*q, &q);
    if (!s)
        s = cv_state_get_u64(r, &len);
    if (!s && len > r->len - r->pos)
        s = cv_state_corrupt("a frame runs past its end (truncated?)");
    if (!s)
        s = take(r, (size_t)len, &q);
    if (s)
        return s;
    *p = r->data + start;
    *n = r->pos - start;
    return CV_STATUS_OK;
}

CvStatus cv_state_get_element(CvStateReader *r, CvElement *out)
{
    int64_t n = 0, dtype = 0, rank = 0;
    CvStatus s = cv_state_get_range(r, "a component count", 0, 1 << 20, &n);
    if (!s)
        s = cv_element_init(out, (uint32_t)n);
    for (uint32_t i = 0; !s && i < (uint32_t)n; i++) {
        int64_t shape[CV_MAX_RANK];
        if ((s = cv_state_get_range(r, "a dtype", 0, CV_NUM_DTYPES - 1, &dtype)) ||
            (s = cv_state_get_range(r, "a rank", 0, CV_MAX_RANK, &rank)))
            break;
        for (int d = 0; !s && d < rank; d++)
            s = cv_state_get_range(r, "a dimension", 0, INT64_MAX / 2, &shape[d]);
        if (s)
            break;
        /* The values the shape claims, checked against what is left before
         * anything is allocated (each string takes at least its length). */
        uint64_t count = 1;
        for (int d = 0; d < rank; d++)
            if (__builtin_mul_overflow(count, (uint64_t)shape[d], &count))
                count = UINT64_MAX;
        uint64_t least = dtype == CV_STRING ? 8 : cv_dtype_size((CvDtype)dtype);
        if (count > (r->len - r->pos) / least) {
            s = cv_state_corrupt("a tensor's shape is larger than its bytes");
            break;
        }
        CvTensor *t = &out->t[i];
        const void *bytes = NULL;
        size_t len = 0;
        if (dtype != CV_STRING) {
            if ((s = cv_state_get_bytes(r, &bytes, &len)))
                break;
            if ((s = cv_tensor_alloc(t, (CvDtype)dtype, (int)rank, shape, 0, NULL)))
                break;
            if (len != cv_tensor_nbytes(t)) {
                s = cv_state_corrupt("a tensor's bytes do not match its shape");
                break;
            }
            memcpy(t->data, bytes, len);
            continue;
        }
        uint64_t total = 0;
        if ((s = cv_state_get_u64(r, &total)))
            break;
        if (total > r->len - r->pos) {
            s = cv_state_corrupt("a string tensor runs past its end");
            break;
        }
        char *blob = NULL;
        if ((s = cv_tensor_alloc(t, CV_STRING, (int)rank, shape, (size_t)total, &blob)))
            break;
        CvStringRef *refs = (CvStringRef *)t->data;
        uint64_t used = 0;
        for (uint64_t k = 0; !s && k < count; k++) {
            if ((s = cv_state_get_bytes(r, &bytes, &len)))
                break;
            if (len > total - used) {
                s = cv_state_corrupt("a string tensor's strings exceed their total");
                break;
            }
            memcpy(blob + used, bytes, len);
            refs[k] = (CvStringRef){(uint64_t)(blob + used - t->buf->data), len};
            used += len;
        }
    }
    if (s)
        cv_element_clear(out);
    return s;
}
