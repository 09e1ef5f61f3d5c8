/* TFRecord index sidecars (see record_index.h). */
#include "io/record_index.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "io/crc32c.h"
#include "io/fs.h"
#include "io/input_stream.h"

/* Sidecars go through the file-system layer: the index of a remote file is
 * the object next to it ("gs://b/f.tfrecord.cvindex"), read when a reader
 * skips in that file and written only by cv_record_index_write, which only
 * `python -m conveyor.tools.index` calls: reading a file, local or remote,
 * never writes anything (no write access is needed to read). */

#define MAGIC "CVRIDX02"
#define HEADER_BYTES 64
#define ENTRY_BYTES 16
#define BLOCK_ENTRIES 256 /* 4 KiB: what one seek reads */
#define EDGE_BYTES 4096   /* hashed at each end of the data file */

struct CvRecordIndex {
    CvReadFile *file; /* the index file, owned */
    char *path;       /* the index file's, owned */
    uint64_t count;
    uint64_t blocks;      /* ceil((count + 1) / BLOCK_ENTRIES) */
    uint64_t table;       /* where entry 0 is */
    uint64_t cached;      /* the block in `block`, UINT64_MAX: none */
    unsigned char block[BLOCK_ENTRIES * ENTRY_BYTES];
};

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint32_t get_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A block's check: its number then its bytes, so a block moved to
 * another place in the table fails too. */
static uint32_t block_crc(uint64_t b, const unsigned char *p, size_t n)
{
    unsigned char num[8];
    put_le64(num, b);
    return cv_crc32c_mask(cv_crc32c_extend(cv_crc32c(num, 8), p, n));
}

static char *index_path_of(const char *path)
{
    size_t n = strlen(path);
    char *p = malloc(n + sizeof(CV_RECORD_INDEX_SUFFIX));
    if (p) {
        memcpy(p, path, n);
        memcpy(p + n, CV_RECORD_INDEX_SUFFIX, sizeof(CV_RECORD_INDEX_SUFFIX));
    }
    return p;
}

/* Read exactly n bytes at `offset`; a short count is DATA_LOSS ("ends
 * early"). */
static CvStatus read_exactly(CvReadFile *f, const char *path, void *dst, size_t n, uint64_t offset)
{
    size_t got = 0;
    CvStatus st = f->methods->read(f, offset, dst, n, &got);
    if (!st && got < n)
        st = cv_error(CV_DATA_LOSS, "%s ends at byte %" PRIu64 ", before %zu bytes at %" PRIu64,
                      path, offset + got, n, offset);
    return st;
}

/* CRC-32C of the first and last EDGE_BYTES of the data file (all of it when
 * shorter): a rewrite that keeps the size and mtime still changes them, most
 * likely. */
static CvStatus edge_hashes(const char *path, uint64_t size, uint32_t *head, uint32_t *tail)
{
    unsigned char buf[EDGE_BYTES];
    size_t n = size < EDGE_BYTES ? (size_t)size : EDGE_BYTES;
    CvReadFile *f = NULL;
    CvStatus st = cv_fs_open_read(path, &f);
    if (st)
        return st;
    st = read_exactly(f, path, buf, n, 0);
    if (!st)
        *head = cv_crc32c(buf, n);
    if (!st)
        st = read_exactly(f, path, buf, n, size - n);
    if (!st)
        *tail = cv_crc32c(buf, n);
    f->methods->close(f);
    return st;
}

/* Scan the records of an uncompressed TFRecord stream, appending each
 * record's entry (its start and CRCs); the last entry appended (the start of
 * no whole record, CRCs zero) is where the whole records end. */
static CvStatus scan(CvInputStream *s, CvRecordIndexEntry **offs, size_t *n, size_t *cap)
{
    const char *path = cv_input_stream_path(s);
    uint64_t size = cv_input_stream_file_size(s);
    for (;;) {
        uint64_t start = cv_input_stream_offset(s);
        if (!cv_array_reserve((void **)offs, cap, *n + 1, sizeof(**offs), 1024))
            return cv_error_nomem();
        CvRecordIndexEntry *e = &(*offs)[(*n)++];
        *e = (CvRecordIndexEntry){start, 0, 0};
        unsigned char hdr[12], foot[4];
        size_t got = 0;
        CvStatus st = cv_input_stream_read(s, hdr, sizeof(hdr), &got);
        if (st || got < sizeof(hdr))
            return st; /* the end, or a torn header: offs[n - 1] ends the whole records */
        if (cv_crc32c_masked(hdr, 8) != get_le32(hdr + 8))
            return cv_error(CV_DATA_LOSS, "corrupted record at %" PRIu64 " in \"%s\" (record %zu): "
                            "its length fails its CRC-32C; not indexed", start, path, *n - 1);
        uint64_t len = get_le64(hdr);
        if (len > size - cv_input_stream_offset(s))
            return CV_STATUS_OK; /* a torn record: the whole records end at its start */
        uint32_t header_crc = get_le32(hdr + 8);
        uint32_t crc = 0;
        for (uint64_t left = len; left;) {
            const unsigned char *p = NULL;
            size_t avail = 0;
            bool eof = false;
            if ((st = cv_input_stream_peek(s, &p, &avail, &eof)))
                return st;
            if (eof)
                return cv_error(CV_ABORTED, "\"%s\" shrank while it was being indexed", path);
            if (avail > left)
                avail = (size_t)left;
            crc = cv_crc32c_extend(crc, p, avail);
            cv_input_stream_consume(s, avail);
            left -= avail;
        }
        if ((st = cv_input_stream_read(s, foot, sizeof(foot), &got)))
            return st;
        if (got < sizeof(foot))
            return CV_STATUS_OK; /* torn in its footer */
        if (cv_crc32c_mask(crc) != get_le32(foot))
            return cv_error(CV_DATA_LOSS, "corrupted record at %" PRIu64 " in \"%s\" (record %zu): "
                            "its data fails its CRC-32C; not indexed", start + 12, path, *n - 1);
        (*offs)[*n - 1].header_crc = header_crc; /* set once whole: a torn one keeps zeros */
        (*offs)[*n - 1].data_crc = get_le32(foot);
    }
}

CvStatus cv_record_index_write(const char *path, size_t buffer_size, uint64_t *records)
{
    CvInputStream *s = NULL;
    CvRecordIndexEntry *offs = NULL;
    size_t n = 0, cap = 0;
    char *ipath = NULL;
    unsigned char *out = NULL;
    CvWriteFile *w = NULL;
    CvStatus st = cv_input_stream_open(path, CV_COMPRESSION_NONE, buffer_size, &s);
    if (st)
        goto cleanup;
    uint64_t size = cv_input_stream_file_size(s);
    int64_t mtime = cv_input_stream_file_mtime_ns(s);
    if (size == UINT64_MAX) {
        st = cv_error(CV_FAILED_PRECONDITION, "%s: not a regular file; only files can be indexed", path);
        goto cleanup;
    }
    if ((st = scan(s, &offs, &n, &cap)))
        goto cleanup;
    CvFileInfo now;
    if ((st = cv_fs_stat(path, &now)))
        goto cleanup;
    if (now.size != size || now.mtime_ns != mtime) {
        st = cv_error(CV_ABORTED, "\"%s\" changed while it was being indexed; not indexed", path);
        goto cleanup;
    }
    uint32_t head = 0, tail = 0;
    if ((st = edge_hashes(path, size, &head, &tail)))
        goto cleanup;
    const CvFileInfo *info = cv_input_stream_file_info(s);
    size_t blocks = (n + BLOCK_ENTRIES - 1) / BLOCK_ENTRIES, table = HEADER_BYTES + 4 * blocks;
    size_t bytes = table + ENTRY_BYTES * n;
    out = calloc(1, bytes);
    ipath = index_path_of(path);
    if (!out || !ipath) {
        st = cv_error_nomem();
        goto cleanup;
    }
    memcpy(out, MAGIC, 8);
    put_le64(out + 8, size);
    put_le64(out + 16, (uint64_t)mtime);
    put_le32(out + 24, head);
    put_le32(out + 28, tail);
    put_le64(out + 32, (uint64_t)(n - 1));
    put_le32(out + 40, BLOCK_ENTRIES);
    put_le32(out + 44, cv_crc32c(info->version, strlen(info->version)));
    put_le32(out + 48, cv_crc32c_masked(out, 48));
    for (size_t i = 0; i < n; i++) {
        unsigned char *e = out + table + ENTRY_BYTES * i;
        put_le64(e, offs[i].offset);
        put_le32(e + 8, offs[i].header_crc);
        put_le32(e + 12, offs[i].data_crc);
    }
    for (size_t b = 0; b < blocks; b++) {
        size_t first = b * BLOCK_ENTRIES, k = n - first < BLOCK_ENTRIES ? n - first : BLOCK_ENTRIES;
        put_le32(out + HEADER_BYTES + 4 * b, block_crc(b, out + table + ENTRY_BYTES * first,
                                                       ENTRY_BYTES * k));
    }
    /* The layer's writer: a temporary file fsync'd and renamed over the
     * index (an object uploaded whole), so a partial index never appears. */
    if ((st = cv_fs_open_write(ipath, false, &w)) || (st = w->methods->append(w, out, bytes)))
        goto cleanup;
    st = w->methods->commit(w);
    w = NULL;
    if (!st)
        *records = (uint64_t)(n - 1);
cleanup:
    if (w)
        w->methods->abort(w);
    cv_input_stream_close(s);
    free(offs);
    free(out);
    free(ipath);
    return st;
}

const char *cv_record_index_path(const CvRecordIndex *idx)
{
    return idx->path;
}

uint64_t cv_record_index_count(const CvRecordIndex *idx)
{
    return idx->count;
}

CvStatus cv_record_index_entry(CvRecordIndex *idx, uint64_t i, CvRecordIndexEntry *e)
{
    if (i > idx->count)
        return cv_error(CV_INTERNAL, "%s: entry %" PRIu64 " of %" PRIu64, idx->path, i, idx->count);
    uint64_t b = i / BLOCK_ENTRIES, first = b * BLOCK_ENTRIES;
    uint64_t k = idx->count + 1 - first < BLOCK_ENTRIES ? idx->count + 1 - first : BLOCK_ENTRIES;
    if (idx->cached != b) {
        unsigned char c[4];
        idx->cached = UINT64_MAX;
        CvStatus st = read_exactly(idx->file, idx->path, c, 4, HEADER_BYTES + 4 * b);
        if (!st)
            st = read_exactly(idx->file, idx->path, idx->block, (size_t)(ENTRY_BYTES * k),
                              idx->table + ENTRY_BYTES * first);
        if (st)
            return cv_status_prefix(st, "record index: ");
        if (block_crc(b, idx->block, (size_t)(ENTRY_BYTES * k)) != get_le32(c))
            return cv_error(CV_DATA_LOSS, "its block %" PRIu64 " (entries %" PRIu64 "-%" PRIu64
                            ") fails its CRC-32C", b, first, first + k - 1);
        idx->cached = b;
    }
    const unsigned char *p = idx->block + ENTRY_BYTES * (i - first);
    e->offset = get_le64(p);
    e->header_crc = get_le32(p + 8);
    e->data_crc = get_le32(p + 12);
    return CV_STATUS_OK;
}

void cv_record_index_close(CvRecordIndex *idx)
{
    if (!idx)
        return;
    if (idx->file)
        idx->file->methods->close(idx->file);
    free(idx->path);
    free(idx);
}

/* Why the index at ipath cannot serve `path`, in `why` ("" when it can). */
static void check_index(CvRecordIndex *idx, const char *path, const CvFileInfo *info,
                        char *why, size_t why_len, bool *stale)
{
    uint64_t size = info->size;
    int64_t mtime_ns = info->mtime_ns;
    unsigned char h[HEADER_BYTES];
    uint64_t bytes = idx->file->info.size; /* at open */
    why[0] = '\0';
    *stale = false;
    if (bytes < HEADER_BYTES) {
        snprintf(why, why_len, "it has %" PRIu64 " bytes, too few for a conveyor record index",
                 bytes);
        return;
    }
    CvStatus st = read_exactly(idx->file, idx->path, h, sizeof(h), 0);
    if (st) {
        snprintf(why, why_len, "%s", st->message);
        cv_status_free(st);
        return;
    }
    if (memcmp(h, MAGIC, 6) != 0) {
        snprintf(why, why_len, "it is not a conveyor record index");
        return;
    }
    if (memcmp(h, MAGIC, 8) != 0) {
        snprintf(why, why_len, "it has version %.2s; this conveyor reads %.2s", (const char *)h + 6,
                 MAGIC + 6);
        return;
    }
    if (cv_crc32c_masked(h, 48) != get_le32(h + 48) || get_le32(h + 40) != BLOCK_ENTRIES) {
        snprintf(why, why_len, "its header fails its CRC-32C");
        return;
    }
    idx->count = get_le64(h + 32);
    idx->blocks = idx->count / BLOCK_ENTRIES + 1; /* ceil((count + 1) / B) */
    idx->table = HEADER_BYTES + 4 * idx->blocks;
    if (idx->count > (UINT64_MAX / 2 - HEADER_BYTES) / (ENTRY_BYTES + 1) ||
        bytes != idx->table + ENTRY_BYTES * (idx->count + 1)) {
        snprintf(why, why_len, "its size does not match its record count (%" PRIu64 ")", idx->count);
        return;
    }
    *stale = true;
    uint64_t was_size = get_le64(h + 8);
    if (was_size != size) {
        snprintf(why, why_len, "the file had %" PRIu64 " bytes when it was indexed and has %" PRIu64
                 " now", was_size, size);
        return;
    }
    if ((int64_t)get_le64(h + 16) != mtime_ns) {
        snprintf(why, why_len, "the file was modified after it was indexed (its mtime differs)");
        return;
    }
    uint32_t head = 0, tail = 0;
    st = edge_hashes(path, size, &head, &tail);
    if (st) {
        snprintf(why, why_len, "%s", st->message);
        cv_status_free(st);
        return;
    }
    if (head != get_le32(h + 24) || tail != get_le32(h + 28)) {
        snprintf(why, why_len, "the file's first or last bytes differ from when it was indexed");
        return;
    }
    if (cv_crc32c(info->version, strlen(info->version)) != get_le32(h + 44)) {
        snprintf(why, why_len, "the file is not the one indexed (its version differs: a local "
                 "file's inode or status-change time, as a rewrite in place or a copy changes "
                 "them)");
        return;
    }
    *stale = false;
}

CvRecordIndex *cv_record_index_open(const char *path, const CvFileInfo *info)
{
    CvRecordIndex *idx = calloc(1, sizeof(*idx));
    if (!idx)
        return NULL; /* reading instead of seeking is still right */
    idx->cached = UINT64_MAX;
    idx->path = index_path_of(path);
    if (!idx->path)
        goto unusable_quiet;
    /* The local table opens a FIFO (or device) without blocking and says it
     * `waits`; only a regular file (or an object) is used. */
    CvStatus st = cv_fs_open_read(idx->path, &idx->file);
    if (!st && (st = cv_read_file_info(idx->file))) {
        idx->file->methods->close(idx->file);
        idx->file = NULL;
    }
    if (st && st->code == CV_NOT_FOUND) {
        cv_status_free(st); /* no index: the common case */
        goto unusable_quiet;
    }
    if (st && st->code != CV_FAILED_PRECONDITION) { /* FAILED_PRECONDITION: a directory */
        cv_warn(CV_WARNING_DATA_LOSS_EACH, "TFRecord index \"%s\" cannot be read (%s); records of \"%s\" "
                "are read to skip them", idx->path, st->message, path);
        cv_status_free(st);
        goto unusable_quiet;
    }
    if (st || idx->file->waits || idx->file->info.size == UINT64_MAX) {
        cv_status_free(st);
        cv_warn(CV_WARNING_DATA_LOSS_EACH, "TFRecord index \"%s\" is ignored: it is not a regular file. "
                "Records of \"%s\" are read to skip them.", idx->path, path);
        goto unusable_quiet;
    }
    char why[512];
    bool stale = false;
    check_index(idx, path, info, why, sizeof(why), &stale);
    if (!why[0])
        return idx;
    if (stale)
        cv_warn(CV_WARNING_DATA_LOSS_EACH, "TFRecord index \"%s\" is stale: %s. It is ignored (records "
                "of \"%s\" are read to skip them); rebuild it with `python -m "
                "conveyor.tools.index %s`.", idx->path, why, path, path);
    else
        cv_warn(CV_WARNING_DATA_LOSS_EACH, "TFRecord index \"%s\" is ignored: %s. Records of \"%s\" are "
                "read to skip them; rebuild it with `python -m conveyor.tools.index %s`.",
                idx->path, why, path, path);
unusable_quiet:
    cv_record_index_close(idx);
    return NULL;
}
