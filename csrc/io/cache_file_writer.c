/* Cache files: the streaming writer. The format is described in
 * cache_file.h; the reader and the lock are in cache_file.c. */
#include "io/cache_file.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "core/array.h"
#include "io/cache_file_format.h"
#include "io/crc32c.h"
#include "io/fs.h"

struct CvCacheWriter {
    char *path; /* the target */
    /* Through the file-system layer: a local file is written to
     * "<path>.tmp-..." and renamed at commit (cv_cache_remove_stale_temps
     * knows the name), an object is uploaded whole. NULL once finished. */
    CvWriteFile *file;
    uint64_t offset; /* bytes written */
    /* The chunk being filled. */
    char *data;
    size_t data_len, data_cap;
    int64_t *shapes; /* per element, per component: rank, dims[rank] */
    size_t shapes_len, shapes_cap;
    uint32_t chunk_elements;
    /* The file so far. */
    uint32_t num_components; /* 0 until the first element */
    CvComponentSpec *spec;
    uint64_t num_elements, num_chunks;
};

static CvStatus write_all(CvCacheWriter *w, struct iovec *iov, int n)
{
    for (int i = 0; i < n; i++) {
        if (!iov[i].iov_len)
            continue;
        CvStatus s = w->file->methods->append(w->file, iov[i].iov_base, iov[i].iov_len);
        if (s)
            return s;
        w->offset += iov[i].iov_len;
    }
    return CV_STATUS_OK;
}

CvStatus cv_cache_writer_open(const char *path, CvCacheWriter **out)
{
    CvStatus s = cv_cache_make_parents(path);
    if (s)
        return s;
    CvCacheWriter *w = calloc(1, sizeof(*w));
    if (!w || !(w->path = strdup(path))) {
        free(w);
        return cv_error_nomem();
    }
    if ((s = cv_fs_open_write(path, false, &w->file))) {
        free(w->path);
        free(w);
        return s;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    char prologue[PROLOGUE_BYTES] = {0};
    memcpy(prologue, prologue_magic, 8);
    put32(prologue + 8, CV_CACHE_FILE_VERSION);
    put32(prologue + 12, BYTE_ORDER_MARK);
    put64(prologue + 16, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec);
    put32(prologue + 28, cv_crc32c_masked(prologue, 28));
    struct iovec iov = {prologue, sizeof(prologue)};
    s = write_all(w, &iov, 1);
    if (s) {
        cv_cache_writer_abort(w);
        return s;
    }
    *out = w;
    return CV_STATUS_OK;
}

/* Bytes a tensor takes in the data section; strings: the refs and the text. */
static size_t tensor_record_bytes(const CvTensor *t)
{
    size_t n = (size_t)cv_tensor_num_elements(t);
    if (t->dtype != CV_STRING)
        return pad8(n * cv_dtype_size(t->dtype));
    const CvStringRef *refs = (const CvStringRef *)t->data;
    size_t text = 0;
    for (size_t i = 0; i < n; i++)
        text += refs[i].length;
    return n * sizeof(CvStringRef) + pad8(text);
}

static void put_tensor(CvCacheWriter *w, const CvTensor *t)
{
    char *dst = w->data + w->data_len;
    size_t n = (size_t)cv_tensor_num_elements(t);
    if (t->dtype != CV_STRING) {
        size_t bytes = n * cv_dtype_size(t->dtype);
        if (bytes) /* an empty tensor's data may be NULL */
            memcpy(dst, t->data, bytes);
        memset(dst + bytes, 0, pad8(bytes) - bytes);
        w->data_len += pad8(bytes);
        return;
    }
    const CvStringRef *refs = (const CvStringRef *)t->data;
    uint64_t at = w->data_len + n * sizeof(CvStringRef); /* offset from the data section start */
    char *text = dst + n * sizeof(CvStringRef);
    for (size_t i = 0; i < n; i++) {
        put64(dst + 16 * i, at);
        put64(dst + 16 * i + 8, refs[i].length);
        if (refs[i].length)
            memcpy(text, cv_string_data(t, &refs[i]), refs[i].length);
        text += refs[i].length;
        at += refs[i].length;
    }
    size_t used = (size_t)(at - w->data_len);
    memset(w->data + at, 0, pad8(used) - used);
    w->data_len += pad8(used);
}

static CvStatus flush_chunk(CvCacheWriter *w)
{
    if (w->chunk_elements == 0)
        return CV_STATUS_OK;
    uint32_t nc = w->num_components, ne = w->chunk_elements;
    /* Shape section: per component, one shape for all elements when they agree. */
    size_t words = 0, cap = 0;
    int64_t *out = NULL;
    /* pos[c]: where the first element's record of component c starts. */
    size_t *pos = malloc(sizeof(size_t) * nc);
    bool *uniform = malloc(sizeof(bool) * nc);
    if (!pos || !uniform) {
        free(pos);
        free(uniform);
        return cv_error_nomem();
    }
    size_t at = 0;
    for (uint32_t c = 0; c < nc; c++) {
        pos[c] = at;
        uniform[c] = true;
        at += 1 + (size_t)w->shapes[at];
    }
    for (uint32_t e = 1; e < ne; e++) {
        for (uint32_t c = 0; c < nc; c++) {
            const int64_t *mine = w->shapes + at, *first = w->shapes + pos[c];
            size_t len = 1 + (size_t)mine[0];
            if (uniform[c] && (mine[0] != first[0] || memcmp(mine, first, len * 8) != 0))
                uniform[c] = false;
            at += len;
        }
    }
    CvStatus s = CV_STATUS_OK;
    if (!cv_array_reserve((void **)&out, &cap, w->shapes_len + nc, sizeof(int64_t), 64)) {
        s = cv_error_nomem();
        goto done;
    }
    for (uint32_t c = 0; c < nc; c++) {
        const int64_t *first = w->shapes + pos[c];
        if (uniform[c]) {
            out[words++] = (first[0] << 8) | 0;
            memcpy(out + words, first + 1, (size_t)first[0] * 8);
            words += (size_t)first[0];
        } else {
            out[words++] = 1;
            size_t p = 0;
            for (uint32_t e = 0; e < ne; e++) {
                for (uint32_t k = 0; k < nc; k++) {
                    size_t len = 1 + (size_t)w->shapes[p];
                    if (k == c) {
                        memcpy(out + words, w->shapes + p, len * 8);
                        words += len;
                    }
                    p += len;
                }
            }
        }
    }
    char header[CHUNK_HEADER_BYTES];
    put32(header, CHUNK_MAGIC);
    put32(header + 4, ne);
    put64(header + 8, w->data_len);
    put64(header + 16, words * 8);
    uint32_t crc = cv_crc32c_extend(cv_crc32c(w->data, w->data_len), out, words * 8);
    put32(header + 24, cv_crc32c_mask(crc));
    put32(header + 28, cv_crc32c_masked(header, 28));
    struct iovec iov[3] = {{header, sizeof(header)}, {w->data, w->data_len}, {out, words * 8}};
    s = write_all(w, iov, 3);
    if (!s) {
        w->num_chunks++;
        w->data_len = 0;
        w->shapes_len = 0;
        w->chunk_elements = 0;
    }
done:
    free(out);
    free(pos);
    free(uniform);
    return s;
}

static void spec_merge(CvComponentSpec *spec, const CvTensor *t)
{
    if (spec->rank < 0)
        return;
    if (spec->rank != t->rank) {
        spec->rank = -1;
        return;
    }
    for (int i = 0; i < t->rank; i++)
        if (spec->dims[i] != t->shape[i])
            spec->dims[i] = -1;
}

CvStatus cv_cache_writer_append(CvCacheWriter *w, const CvElement *e)
{
    if (w->num_components == 0) {
        if (e->n == 0)
            return cv_error(CV_INVALID_ARGUMENT, "Dataset.cache: an element has no components");
        w->spec = calloc(e->n, sizeof(CvComponentSpec));
        if (!w->spec)
            return cv_error_nomem();
        w->num_components = e->n;
        for (uint32_t i = 0; i < e->n; i++) {
            w->spec[i].dtype = e->t[i].dtype;
            w->spec[i].rank = e->t[i].rank;
            memcpy(w->spec[i].dims, e->t[i].shape, sizeof(int64_t) * (size_t)e->t[i].rank);
        }
    }
    if (e->n != w->num_components)
        return cv_error(CV_INVALID_ARGUMENT,
                        "Dataset.cache: element %" PRIu64 " has %u components, the first had %u",
                        w->num_elements, e->n, w->num_components);
    size_t bytes = 0, words = 0;
    for (uint32_t i = 0; i < e->n; i++) {
        if (e->t[i].dtype != w->spec[i].dtype)
            return cv_error(CV_INVALID_ARGUMENT,
                            "Dataset.cache: component %u of element %" PRIu64 " is %s, the first "
                            "element's was %s",
                            i, w->num_elements, cv_dtype_name(e->t[i].dtype),
                            cv_dtype_name(w->spec[i].dtype));
        bytes += tensor_record_bytes(&e->t[i]);
        words += 1 + (size_t)e->t[i].rank;
    }
    if (!cv_array_reserve((void **)&w->data, &w->data_cap, w->data_len + bytes, 1, 64) ||
        !cv_array_reserve((void **)&w->shapes, &w->shapes_cap, w->shapes_len + words,
                          sizeof(int64_t), 64))
        return cv_error_nomem();
    for (uint32_t i = 0; i < e->n; i++) {
        const CvTensor *t = &e->t[i];
        put_tensor(w, t);
        w->shapes[w->shapes_len++] = t->rank;
        for (int k = 0; k < t->rank; k++)
            w->shapes[w->shapes_len++] = t->shape[k];
        spec_merge(&w->spec[i], t);
    }
    w->chunk_elements++;
    w->num_elements++;
    if (w->data_len >= CV_CACHE_CHUNK_BYTES || w->chunk_elements >= CV_CACHE_CHUNK_MAX_ELEMENTS)
        return flush_chunk(w);
    return CV_STATUS_OK;
}

uint64_t cv_cache_writer_bytes(const CvCacheWriter *w)
{
    return w->offset;
}

static void writer_free(CvCacheWriter *w)
{
    if (w->file) /* not committed: nothing appears */
        w->file->methods->abort(w->file);
    free(w->data);
    free(w->shapes);
    free(w->spec);
    free(w->path);
    free(w);
}

void cv_cache_writer_abort(CvCacheWriter *w)
{
    if (!w)
        return;
    writer_free(w); /* aborts the write: the temporary file goes */
}

static CvStatus write_trailer(CvCacheWriter *w, const char *structure, size_t structure_len)
{
    size_t len = 24;
    for (uint32_t i = 0; i < w->num_components; i++)
        len += 8 + 8 * (size_t)(w->spec[i].rank > 0 ? w->spec[i].rank : 0);
    len += 8 + pad8(structure_len);
    char *t = calloc(1, len);
    if (!t)
        return cv_error_nomem();
    put32(t, TRAILER_MAGIC);
    put32(t + 4, w->num_components);
    put64(t + 8, w->num_elements);
    put64(t + 16, w->num_chunks);
    size_t at = 24;
    for (uint32_t i = 0; i < w->num_components; i++) {
        put32(t + at, (uint32_t)w->spec[i].dtype);
        put32(t + at + 4, (uint32_t)w->spec[i].rank);
        at += 8;
        for (int k = 0; k < w->spec[i].rank; k++, at += 8)
            put64(t + at, (uint64_t)w->spec[i].dims[k]);
    }
    put64(t + at, structure_len);
    if (structure_len)
        memcpy(t + at + 8, structure, structure_len);
    char footer[FOOTER_BYTES] = {0};
    put64(footer, w->offset);
    put64(footer + 8, len);
    put32(footer + 16, cv_crc32c_masked(t, len));
    put32(footer + 20, cv_crc32c_masked(footer, 20));
    memcpy(footer + 24, footer_magic, 8);
    struct iovec iov[2] = {{t, len}, {footer, sizeof(footer)}};
    CvStatus s = write_all(w, iov, 2);
    free(t);
    return s;
}

CvStatus cv_cache_writer_commit(CvCacheWriter *w, const char *structure, size_t structure_len)
{
    CvStatus s;
    if (!(s = flush_chunk(w)) && !(s = write_trailer(w, structure, structure_len))) {
        s = w->file->methods->commit(w->file); /* fsync, rename (local); the upload (remote) */
        w->file = NULL;
    }
    writer_free(w); /* aborts when it was not committed */
    return s;
}
