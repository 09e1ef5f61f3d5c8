/* Cache files: reader and lock. The format is described in cache_file.h;
 * the writer is cache_file_writer.c. */
#include "io/cache_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/blocking.h"
#include "io/cache_file_format.h"
#include "io/crc32c.h"
#include "io/file.h"
#include "io/fs.h"

/* Cache files are read and written through the file-system layer (io/fs.h),
 * so cache(filename) on a URL works. The lock is the one part that stays
 * local: flock on "<path>.lock" coordinates writers on this machine's file
 * systems; object stores have no lock (their uploads appear whole, so two
 * writers race and the last whole file wins). */

void cv_cache_file_info_clear(CvCacheFileInfo *info)
{
    free(info->components);
    free(info->structure);
    memset(info, 0, sizeof(*info));
}

static const char *spec_str(const CvComponentSpec *c, char *buf, size_t size)
{
    if (c->rank < 0) {
        snprintf(buf, size, "%s <unknown rank>", cv_dtype_name(c->dtype));
        return buf;
    }
    size_t used = (size_t)snprintf(buf, size, "%s [", cv_dtype_name(c->dtype));
    for (int i = 0; i < c->rank && used < size; i++) {
        if (c->dims[i] < 0)
            used += (size_t)snprintf(buf + used, size - used, i ? ",None" : "None");
        else
            used += (size_t)snprintf(buf + used, size - used, i ? ",%lld" : "%lld",
                                     (long long)c->dims[i]);
    }
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

static bool component_fits(const CvComponentSpec *file, const CvComponentSpec *want)
{
    if (file->dtype != want->dtype)
        return false;
    if (want->rank < 0)
        return true;
    if (file->rank != want->rank)
        return false;
    for (int i = 0; i < want->rank; i++)
        if (want->dims[i] >= 0 && file->dims[i] != want->dims[i])
            return false;
    return true;
}

CvStatus cv_cache_check_spec(const CvCacheFileInfo *info, const CvComponentSpec *expected,
                             uint32_t n, const char *path)
{
    char a[256], b[256];
    if (info->num_components == 0)
        return CV_STATUS_OK; /* an empty dataset fits every spec */
    if (info->num_components != n)
        return cv_error(CV_INVALID_ARGUMENT,
                        "Dataset.cache: the cache file '%s' holds elements of %u components, but "
                        "this dataset's elements have %u; it was written for another pipeline "
                        "(delete it to cache this one)",
                        path, info->num_components, n);
    for (uint32_t i = 0; i < n; i++)
        if (!component_fits(&info->components[i], &expected[i]))
            return cv_error(CV_INVALID_ARGUMENT,
                            "Dataset.cache: the cache file '%s' holds %s for component %u of each "
                            "element, but this dataset produces %s; it was written for another "
                            "pipeline (delete it to cache this one)",
                            path, spec_str(&info->components[i], a, sizeof(a)), i,
                            spec_str(&expected[i], b, sizeof(b)));
    return CV_STATUS_OK;
}

/* ----------------------------------------------------------------- reader */

struct CvCacheReader {
    char *path;
    CvReadFile *file; /* owned */
    CvCacheFileInfo info;
    uint64_t trailer_offset;
    uint64_t offset; /* of the next chunk */
    uint64_t chunk_index, elements_read;
    bool broken; /* after a DATA_LOSS error: stays at the end */
    /* The current chunk. */
    CvBuffer *chunk; /* one reference; data section then shape section */
    uint64_t chunk_offset;
    size_t data_len;
    size_t data_pos;
    uint32_t chunk_left; /* elements not yet handed out */
    uint32_t chunk_count;
    const int64_t *shape_end;
    /* Per component: a uniform shape, or a cursor into the per-element list. */
    const int64_t **shape_at;
    bool *shape_uniform;
};

static CvStatus data_loss(CvCacheReader *r, uint64_t offset, const char *fmt, ...) CV_PRINTF(3, 4);

static CvStatus data_loss(CvCacheReader *r, uint64_t offset, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    r->broken = true;
    return cv_error(CV_DATA_LOSS,
                    "Dataset.cache: the cache file '%s' is corrupted: %s at byte offset %" PRIu64
                    " (chunk %" PRIu64 "). Delete it to compute the cache again.",
                    r->path, what, offset, r->chunk_index);
}

/* Read exactly n bytes at offset; DATA_LOSS when the file ends first. */
static CvStatus read_at(CvCacheReader *r, void *dst, size_t n, uint64_t offset)
{
    size_t got = 0;
    CvStatus s = r->file->methods->read(r->file, offset, dst, n, &got);
    if (!s && got < n)
        s = data_loss(r, offset + got, "the file ends early (truncated)");
    return s;
}

static CvStatus parse_trailer(CvCacheReader *r, const char *t, size_t len)
{
    CvCacheFileInfo *info = &r->info;
    uint64_t at_file = r->trailer_offset;
    if (len < 32 || get32(t) != TRAILER_MAGIC)
        return data_loss(r, at_file, "bad trailer");
    uint32_t nc = get32(t + 4);
    info->num_elements = get64(t + 8);
    info->num_chunks = get64(t + 16);
    /* No components only for an empty dataset (the writer saw no element). */
    if (nc > MAX_COMPONENTS || (nc == 0 && (info->num_elements || info->num_chunks)))
        return data_loss(r, at_file, "bad component count %u", nc);
    info->num_components = nc;
    info->components = calloc(nc ? nc : 1, sizeof(CvComponentSpec));
    if (!info->components)
        return cv_error_nomem();
    size_t at = 24;
    for (uint32_t i = 0; i < nc; i++) {
        if (len - at < 8)
            return data_loss(r, at_file + at, "trailer ends inside component %u", i);
        uint32_t dtype = get32(t + at);
        int32_t rank = (int32_t)get32(t + at + 4);
        at += 8;
        if (dtype >= CV_NUM_DTYPES || rank < -1 || rank > CV_MAX_RANK)
            return data_loss(r, at_file + at, "bad dtype %u or rank %d of component %u", dtype,
                             (int)rank, i);
        info->components[i].dtype = (CvDtype)dtype;
        info->components[i].rank = rank;
        for (int k = 0; k < rank; k++, at += 8) {
            if (len - at < 8)
                return data_loss(r, at_file + at, "trailer ends inside component %u", i);
            int64_t d = (int64_t)get64(t + at);
            if (d < -1)
                return data_loss(r, at_file + at, "bad dimension %lld", (long long)d);
            info->components[i].dims[k] = d;
        }
    }
    if (len - at < 8)
        return data_loss(r, at_file + at, "trailer ends before the structure");
    uint64_t slen = get64(t + at);
    at += 8;
    if (slen > MAX_STRUCTURE_BYTES || slen > len - at)
        return data_loss(r, at_file + at, "bad structure length %" PRIu64, slen);
    if (slen) {
        info->structure = malloc(slen);
        if (!info->structure)
            return cv_error_nomem();
        memcpy(info->structure, t + at, slen);
        info->structure_len = slen;
    }
    return CV_STATUS_OK;
}

static CvStatus reader_check(CvCacheReader *r)
{
    CvStatus s = cv_read_file_info(r->file);
    if (s)
        return s;
    if (r->file->waits || r->file->info.size == UINT64_MAX)
        return cv_error(CV_FAILED_PRECONDITION, "Dataset.cache: '%s' is not a regular file",
                        r->path);
    uint64_t size = r->file->info.size;
    if (size < PROLOGUE_BYTES + FOOTER_BYTES)
        return data_loss(r, 0, "the file has only %" PRIu64 " bytes (truncated)", size);
    char pro[PROLOGUE_BYTES], foot[FOOTER_BYTES];
    s = read_at(r, pro, sizeof(pro), 0);
    if (s)
        return s;
    if (memcmp(pro, prologue_magic, 8) != 0)
        return data_loss(r, 0, "not a conveyor cache file (bad magic)");
    if (get32(pro + 28) != cv_crc32c_masked(pro, 28))
        return data_loss(r, 0, "bad checksum of the file header");
    if (get32(pro + 8) != CV_CACHE_FILE_VERSION || get32(pro + 12) != BYTE_ORDER_MARK) {
        r->broken = true;
        return cv_error(CV_FAILED_PRECONDITION,
                        "Dataset.cache: the cache file '%s' was written in format version %u "
                        "(or on a machine of another byte order); this conveyor reads version "
                        "%d. Delete it to compute the cache again.",
                        r->path, get32(pro + 8), CV_CACHE_FILE_VERSION);
    }
    if ((s = read_at(r, foot, sizeof(foot), size - FOOTER_BYTES)))
        return s;
    if (memcmp(foot + 24, footer_magic, 8) != 0 || get32(foot + 20) != cv_crc32c_masked(foot, 20))
        return data_loss(r, size - FOOTER_BYTES, "no valid footer (the file is truncated or "
                         "was not completely written)");
    uint64_t toff = get64(foot), tlen = get64(foot + 8);
    if (tlen > size - FOOTER_BYTES - PROLOGUE_BYTES || toff != size - FOOTER_BYTES - tlen)
        return data_loss(r, size - FOOTER_BYTES, "bad trailer position");
    r->trailer_offset = toff;
    char *t = malloc(tlen ? tlen : 1);
    if (!t)
        return cv_error_nomem();
    if (!(s = read_at(r, t, tlen, toff))) {
        if (get32(foot + 16) != cv_crc32c_masked(t, tlen))
            s = data_loss(r, toff, "bad checksum of the trailer");
        else
            s = parse_trailer(r, t, tlen);
    }
    free(t);
    return s;
}

CvStatus cv_cache_reader_open(const char *path, CvCacheReader **out)
{
    CvCacheReader *r = calloc(1, sizeof(*r));
    if (!r || !(r->path = strdup(path))) {
        free(r);
        return cv_error_nomem();
    }
    CvStatus s = cv_fs_open_read(path, &r->file);
    if (!s)
        s = reader_check(r);
    if (!s) {
        r->shape_at = calloc(r->info.num_components + 1, sizeof(*r->shape_at));
        r->shape_uniform = calloc(r->info.num_components + 1, sizeof(bool));
        if (!r->shape_at || !r->shape_uniform)
            s = cv_error_nomem();
    }
    if (s) {
        cv_cache_reader_close(r);
        return s;
    }
    r->broken = false;
    r->offset = PROLOGUE_BYTES;
    *out = r;
    return CV_STATUS_OK;
}

/* Read exactly n bytes at offset (false: error or the file ends first). */
static bool read_exactly(CvReadFile *f, void *dst, size_t n, uint64_t offset)
{
    size_t got = 0;
    CvStatus s = f->methods->read(f, offset, dst, n, &got);
    bool ok = !s && got == n;
    cv_status_free(s);
    return ok;
}

/* The trailer starts at `at` with `rest` bytes to the end of the file: true
 * when they are fewer than the trailer (by its own lengths) and the footer. */
static bool trailer_cut(CvReadFile *fd, uint64_t at, uint64_t rest)
{
    if (rest > MAX_STRUCTURE_BYTES + ((uint64_t)MAX_COMPONENTS << 7) + 4096)
        return false;
    char *t = malloc(rest ? (size_t)rest : 1);
    if (!t || !read_exactly(fd, t, (size_t)rest, at)) {
        free(t);
        return false;
    }
    bool cut = true;
    uint64_t pos = 24;
    if (rest >= pos) {
        uint32_t nc = get32(t + 4);
        for (uint32_t i = 0; i < nc && pos + 8 <= rest; i++) {
            int32_t rank = (int32_t)get32(t + pos + 4);
            pos += 8 + (rank > 0 ? (uint64_t)rank * 8 : 0);
        }
        if (nc <= MAX_COMPONENTS && pos + 8 <= rest) {
            uint64_t slen = get64(t + pos);
            if (slen <= MAX_STRUCTURE_BYTES)
                cut = pad8((size_t)(pos + 8 + slen)) + FOOTER_BYTES > rest;
        }
    }
    free(t);
    return cut;
}

bool cv_cache_file_torn(const char *path, uint64_t *offset)
{
    bool torn = false;
    CvReadFile *fd = NULL;
    CvStatus s = cv_fs_open_read(path, &fd);
    if (!s && (s = cv_read_file_info(fd))) {
        fd->methods->close(fd);
        fd = NULL;
    }
    cv_status_free(s);
    if (s || fd->waits || fd->info.size == UINT64_MAX)
        goto done;
    uint64_t size = fd->info.size, at = PROLOGUE_BYTES;
    char buf[PROLOGUE_BYTES];
    if (size < PROLOGUE_BYTES) { /* a cut inside the prologue: a prefix of its magic */
        torn = read_exactly(fd, buf, (size_t)size, 0) &&
               memcmp(buf, prologue_magic, size < 8 ? (size_t)size : 8) == 0;
        *offset = 0;
        goto done;
    }
    if (!read_exactly(fd, buf, PROLOGUE_BYTES, 0) || memcmp(buf, prologue_magic, 8) != 0 ||
        get32(buf + 28) != cv_crc32c_masked(buf, 28))
        goto done;
    if (size >= PROLOGUE_BYTES + FOOTER_BYTES && read_exactly(fd, buf, FOOTER_BYTES, size - FOOTER_BYTES) &&
        memcmp(buf + 24, footer_magic, 8) == 0 && get32(buf + 20) == cv_crc32c_masked(buf, 20))
        goto done; /* a complete file that is damaged elsewhere */
    /* Walk the whole chunks; the first part that does not fit is where the tear is. */
    for (;;) {
        *offset = at;
        if (size - at < CHUNK_HEADER_BYTES) {
            torn = true;
            break;
        }
        if (!read_exactly(fd, buf, CHUNK_HEADER_BYTES, at))
            break;
        if (get32(buf) == TRAILER_MAGIC) {
            torn = trailer_cut(fd, at, size - at); /* else the footer is damaged */
            break;
        }
        if (get32(buf) != CHUNK_MAGIC || get32(buf + 28) != cv_crc32c_masked(buf, 28))
            break; /* damaged, not torn */
        uint64_t data_len = get64(buf + 8), shape_len = get64(buf + 16);
        uint64_t room = size - at - CHUNK_HEADER_BYTES;
        if (data_len > room || shape_len > room - data_len) {
            torn = true;
            break;
        }
        at += CHUNK_HEADER_BYTES + data_len + shape_len;
    }
done:
    if (fd)
        fd->methods->close(fd);
    return torn;
}

const CvCacheFileInfo *cv_cache_reader_info(const CvCacheReader *r)
{
    return &r->info;
}

void cv_cache_reader_close(CvCacheReader *r)
{
    if (!r)
        return;
    if (r->file)
        r->file->methods->close(r->file);
    if (r->chunk)
        cv_buffer_unref(r->chunk);
    cv_cache_file_info_clear(&r->info);
    free(r->shape_at);
    free(r->shape_uniform);
    free(r->path);
    free(r);
}

/* Load the chunk at r->offset and index its shape section. */
static CvStatus load_chunk(CvCacheReader *r)
{
    char h[CHUNK_HEADER_BYTES];
    uint64_t at = r->offset;
    if (r->trailer_offset - at < CHUNK_HEADER_BYTES)
        return data_loss(r, at, "a chunk header crosses the trailer");
    CvStatus s = read_at(r, h, sizeof(h), at);
    if (s)
        return s;
    if (get32(h) != CHUNK_MAGIC || get32(h + 28) != cv_crc32c_masked(h, 28))
        return data_loss(r, at, "bad chunk header");
    uint32_t count = get32(h + 4);
    uint64_t data_len = get64(h + 8), shape_len = get64(h + 16);
    uint64_t room = r->trailer_offset - at - CHUNK_HEADER_BYTES;
    if (count == 0 || data_len > room || shape_len > room - data_len || (data_len | shape_len) & 7)
        return data_loss(r, at, "bad chunk sizes");
    if (r->chunk) {
        cv_buffer_unref(r->chunk);
        r->chunk = NULL;
    }
    size_t body = (size_t)(data_len + shape_len);
    CvBuffer *b = cv_buffer_new(body ? body : 8);
    if (!b)
        return cv_error(CV_RESOURCE_EXHAUSTED, "out of memory reading a %zu-byte chunk of '%s'",
                        body, r->path);
    r->chunk = b;
    if ((s = read_at(r, b->data, body, at + CHUNK_HEADER_BYTES)))
        return s;
    if (get32(h + 24) != cv_crc32c_masked(b->data, body))
        return data_loss(r, at, "bad chunk checksum");
    r->chunk_offset = at;
    r->data_len = (size_t)data_len;
    r->data_pos = 0;
    r->chunk_left = r->chunk_count = count;
    /* Index the shape section. */
    const int64_t *w = (const int64_t *)(b->data + data_len), *end = w + shape_len / 8;
    for (uint32_t c = 0; c < r->info.num_components; c++) {
        if (w >= end)
            return data_loss(r, at, "shape section ends early");
        int64_t head = *w++;
        if ((head & 0xff) == 0) {
            int64_t rank = head >> 8;
            if (rank < 0 || rank > CV_MAX_RANK || end - w < rank)
                return data_loss(r, at, "bad shape of component %u", c);
            r->shape_uniform[c] = true;
            r->shape_at[c] = w - 1; /* points at the head word; rank read from it */
            w += rank;
        } else if (head == 1) {
            r->shape_uniform[c] = false;
            r->shape_at[c] = w;
            for (uint32_t e = 0; e < count; e++) {
                if (w >= end || *w < 0 || *w > CV_MAX_RANK || end - w - 1 < *w)
                    return data_loss(r, at, "bad shape of component %u", c);
                w += 1 + *w;
            }
        } else {
            return data_loss(r, at, "bad shape section");
        }
    }
    if (w != end)
        return data_loss(r, at, "unexpected bytes after the shape section");
    r->offset = at + CHUNK_HEADER_BYTES + body;
    r->chunk_index++;
    return CV_STATUS_OK;
}

/* Component c of the next element, as a view of the chunk. */
static CvStatus take_tensor(CvCacheReader *r, uint32_t c, CvTensor *t)
{
    const CvComponentSpec *spec = &r->info.components[c];
    const int64_t *shape;
    int rank;
    if (r->shape_uniform[c]) {
        rank = (int)(r->shape_at[c][0] >> 8);
        shape = r->shape_at[c] + 1;
    } else {
        rank = (int)r->shape_at[c][0];
        shape = r->shape_at[c] + 1;
        r->shape_at[c] += 1 + rank;
    }
    uint64_t where = r->chunk_offset + CHUNK_HEADER_BYTES + r->data_pos;
    if (spec->rank >= 0 && rank != spec->rank)
        return data_loss(r, where, "component %u has rank %d, the file says %d", c, rank,
                         spec->rank);
    size_t count = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0 || (spec->rank >= 0 && spec->dims[i] >= 0 && shape[i] != spec->dims[i]))
            return data_loss(r, where, "bad dimension of component %u", c);
        if (shape[i] && count > SIZE_MAX / 16 / (size_t)shape[i])
            return data_loss(r, where, "oversized component %u", c);
        count *= (size_t)shape[i];
    }
    size_t left = r->data_len - r->data_pos, used;
    char *base = r->chunk->data;
    if (spec->dtype != CV_STRING) {
        size_t bytes = count * cv_dtype_size(spec->dtype);
        if (bytes > left || pad8(bytes) > left)
            return data_loss(r, where, "component %u runs past its chunk", c);
        used = pad8(bytes);
    } else {
        if (count > left / sizeof(CvStringRef))
            return data_loss(r, where, "component %u runs past its chunk", c);
        uint64_t next = r->data_pos + count * sizeof(CvStringRef);
        const char *refs = base + r->data_pos;
        for (size_t i = 0; i < count; i++) {
            uint64_t off = get64(refs + 16 * i), len = get64(refs + 16 * i + 8);
            if (off != next || len > r->data_len - next)
                return data_loss(r, where, "bad string %zu of component %u", i, c);
            next += len;
        }
        used = pad8((size_t)(next - r->data_pos));
        if (used > left)
            return data_loss(r, where, "component %u runs past its chunk", c);
    }
    t->dtype = spec->dtype;
    t->rank = rank;
    if (rank)
        memcpy(t->shape, shape, sizeof(int64_t) * (size_t)rank);
    t->data = base + r->data_pos;
    t->buf = cv_buffer_ref(r->chunk);
    r->data_pos += used;
    return CV_STATUS_OK;
}

CvStatus cv_cache_reader_next(CvCacheReader *r, CvElement *out, bool *end)
{
    *end = false;
    if (r->broken) {
        *end = true;
        return CV_STATUS_OK;
    }
    if (r->chunk_left == 0) {
        if (r->chunk && r->data_pos != r->data_len)
            return data_loss(r, r->chunk_offset, "unexpected bytes after the last element");
        if (r->offset == r->trailer_offset) {
            if (r->elements_read != r->info.num_elements || r->chunk_index != r->info.num_chunks)
                return data_loss(r, r->offset, "%" PRIu64 " elements in %" PRIu64 " chunks, the "
                                 "trailer says %" PRIu64 " in %" PRIu64,
                                 r->elements_read, r->chunk_index, r->info.num_elements,
                                 r->info.num_chunks);
            if (r->chunk) {
                cv_buffer_unref(r->chunk);
                r->chunk = NULL;
            }
            *end = true;
            return CV_STATUS_OK;
        }
        CvStatus s = load_chunk(r);
        if (s)
            return s;
    }
    CvStatus s = cv_element_init(out, r->info.num_components);
    if (s)
        return s;
    for (uint32_t c = 0; c < r->info.num_components; c++) {
        if ((s = take_tensor(r, c, &out->t[c]))) {
            cv_element_clear(out);
            return s;
        }
    }
    r->chunk_left--;
    r->elements_read++;
    return CV_STATUS_OK;
}

/* ------------------------------------------------------------------- lock */

bool cv_cache_file_exists(const char *path)
{
    CvFileInfo info;
    CvStatus s = cv_fs_stat(path, &info);
    cv_status_free(s);
    return !s && !info.is_dir && info.size != UINT64_MAX;
}

/* Shared with the writer (cache_file_writer.c), which depends on this file,
 * never the other way. */
CvStatus cv_cache_make_parents(const char *path)
{
    const CvFileSystem *fs;
    CvStatus s = cv_fs_find(path, &fs);
    char *copy = s ? NULL : strdup(path);
    if (s || !copy)
        return s ? s : cv_error_nomem();
    /* The directories below the scheme's root: after "scheme://host/" for a
     * URL (a bucket is not made), after the leading '/' of a path. */
    const char *sep = strstr(copy, "://");
    char *p = sep ? copy + (sep - copy) + 3 : copy;
    if (sep && cv_fs_is_remote(copy))
        p = strchr(p, '/') ? strchr(p, '/') : p + strlen(p);
    for (p = *p ? p + 1 : p; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if ((s = fs->make_dir(copy))) {
            s = cv_status_prefix(s, "(creating the cache directory) ");
            break;
        }
        *p = '/';
    }
    free(copy);
    return s;
}

CvStatus cv_cache_lock_try(const char *lock_path, int *fd_out)
{
    *fd_out = -1;
    CvStatus s = cv_cache_make_parents(lock_path);
    if (s)
        return s;
    if (cv_fs_is_remote(lock_path)) {
        *fd_out = CV_CACHE_NO_LOCK; /* no lock on object stores (see the top) */
        return CV_STATUS_OK;
    }
    if (strncmp(lock_path, "file://", 7) == 0)
        lock_path += 7;
    /* flock needs a local descriptor: the lock file is opened here, not
     * through the layer (its table has no locks). */
    for (int attempt = 0; attempt < 8; attempt++) {
        int fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0)
            return cv_file_error(errno, lock_path, "(creating the cache lock file)");
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            close(fd);
            if (e == EWOULDBLOCK || e == EINTR)
                return CV_STATUS_OK; /* another writer */
            return cv_file_error(e, lock_path, "(locking the cache lock file)");
        }
        /* The holder before us may have removed the file after we opened it:
         * then our lock is on a dead inode; start over on the live one. */
        struct stat mine, now;
        if (fstat(fd, &mine) == 0 && stat(lock_path, &now) == 0 && mine.st_ino == now.st_ino &&
            mine.st_dev == now.st_dev) {
            char note[64];
            int n = snprintf(note, sizeof(note), "pid %ld\n", (long)getpid());
            if (ftruncate(fd, 0) == 0 && n > 0 && write(fd, note, (size_t)n) < 0) {
                /* the note is informational */
            }
            *fd_out = fd;
            return CV_STATUS_OK;
        }
        close(fd);
    }
    return CV_STATUS_OK; /* lost every race: let the others write */
}

void cv_cache_lock_release(const char *lock_path, int fd)
{
    if (fd < 0 || fd == CV_CACHE_NO_LOCK)
        return;
    if (strncmp(lock_path, "file://", 7) == 0)
        lock_path += 7;
    unlink(lock_path); /* while still holding it: see cv_cache_lock_try */
    close(fd);
}

typedef struct StaleTemps {
    const CvFileSystem *fs; /* the local table */
    const char *dir;  /* the listed directory */
    const char *base; /* the cache file's name */
    size_t base_len;
    const char *keep;
} StaleTemps;

static int remove_if_stale(void *ctx, const char *name, const CvFileInfo *info)
{
    StaleTemps *t = ctx;
    (void)info;
    if (strncmp(name, t->base, t->base_len) != 0 || strncmp(name + t->base_len, ".tmp-", 5) != 0)
        return 0;
    size_t n = strlen(t->dir) + strlen(name) + 2;
    char *full = malloc(n);
    if (!full)
        return 1;
    snprintf(full, n, "%s/%s", t->dir, name);
    if (!t->keep || strcmp(full, t->keep) != 0)
        cv_status_free(t->fs->remove(full));
    free(full);
    return 0;
}

/* The temporaries are the local table's ("<path>.tmp-..." next to it, see
 * io/fs_local.c); an object store has none (an upload appears whole). */
void cv_cache_remove_stale_temps(const char *path, const char *keep)
{
    if (cv_fs_is_remote(path))
        return;
    char *dir = strdup(path);
    if (!dir)
        return;
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : path;
    if (slash == dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    StaleTemps t = {NULL, slash ? dir : ".", base, strlen(base), keep};
    CvStatus s = cv_fs_find(path, &t.fs);
    if (!s)
        s = t.fs->list(t.dir, false, remove_if_stale, &t);
    cv_status_free(s);
    free(dir);
}
