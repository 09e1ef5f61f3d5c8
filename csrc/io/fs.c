/* The file-system layer's registry and the conveniences over its tables
 * (see fs.h). */
#include "io/fs.h"

#include <fnmatch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"

/* The tables built into the engine. */
extern const CvFileSystem cv_fs_local, cv_fs_http, cv_fs_https, cv_fs_gcs, cv_fs_s3;

enum { MAX_TABLES = 16 };

/* Written only by cv_fs_register at module initialisation (fs.h). */
static const CvFileSystem *tables[MAX_TABLES] = {&cv_fs_local, &cv_fs_http, &cv_fs_https, &cv_fs_gcs,
                                                 &cv_fs_s3};
static size_t table_count = 5;
static const CvFileSystem *fallback; /* scheme "*" */

void cv_fs_register(const CvFileSystem *fs)
{
    if (strcmp(fs->scheme, "*") == 0) {
        fallback = fs;
        return;
    }
    for (size_t i = 0; i < table_count; i++)
        if (strcmp(tables[i]->scheme, fs->scheme) == 0) {
            tables[i] = fs;
            return;
        }
    if (table_count < MAX_TABLES)
        tables[table_count++] = fs;
}

/* The length of `url`'s scheme ("gs" in "gs://b/o"), 0 for a local path. A
 * scheme is letters, digits, '+', '-', '.' before "://" (RFC 3986). */
static size_t scheme_length(const char *url)
{
    size_t n = 0;
    while ((url[n] >= 'a' && url[n] <= 'z') || (url[n] >= 'A' && url[n] <= 'Z') ||
           (n > 0 && ((url[n] >= '0' && url[n] <= '9') || url[n] == '+' || url[n] == '-' ||
                      url[n] == '.')))
        n++;
    return n > 0 && strncmp(url + n, "://", 3) == 0 ? n : 0;
}

bool cv_fs_is_remote(const char *url)
{
    size_t n = scheme_length(url);
    return n > 0 && !(n == 4 && strncmp(url, "file", 4) == 0);
}

CvStatus cv_fs_find(const char *url, const CvFileSystem **fs)
{
    size_t n = scheme_length(url);
    if (n == 0 || (n == 4 && strncmp(url, "file", 4) == 0)) {
        *fs = &cv_fs_local;
        return CV_STATUS_OK;
    }
    for (size_t i = 0; i < table_count; i++)
        if (strlen(tables[i]->scheme) == n && strncmp(tables[i]->scheme, url, n) == 0) {
            *fs = tables[i];
            return CV_STATUS_OK;
        }
    if (fallback) {
        *fs = fallback;
        return CV_STATUS_OK;
    }
    return cv_error(CV_UNIMPLEMENTED,
                    "%s: no file system is registered for the scheme '%.*s://' (install "
                    "fsspec and an implementation of it)",
                    url, (int)n, url);
}

CvStatus cv_fs_open_read(const char *url, CvReadFile **out)
{
    const CvFileSystem *fs;
    CvStatus s = cv_fs_find(url, &fs);
    return s ? s : fs->open_read(url, out);
}

CvStatus cv_fs_open_write(const char *url, bool append, CvWriteFile **out)
{
    const CvFileSystem *fs;
    CvStatus s = cv_fs_find(url, &fs);
    return s ? s : fs->open_write(url, append, out);
}

CvStatus cv_fs_stat(const char *url, CvFileInfo *out)
{
    const CvFileSystem *fs;
    CvStatus s = cv_fs_find(url, &fs);
    return s ? s : fs->stat(url, out);
}

CvStatus cv_read_file_info(CvReadFile *f)
{
    CvStatus s = f->methods->wait_info ? f->methods->wait_info(f) : CV_STATUS_OK;
    if (s)
        f->info.size = UINT64_MAX;
    return s;
}

/* ---- whole files, rename and copy -------------------------------------- */

CvStatus cv_fs_read_all(const char *url, void **data, size_t *size)
{
    CvReadFile *f = NULL;
    char *buf = NULL;
    size_t len = 0, got = 0;
    CvStatus s = cv_fs_open_read(url, &f);
    if (s)
        return s;
    if ((s = cv_read_file_info(f)))
        goto done;
    /* Known size: one read of size + 1 bytes (the +1 sees a file that grew);
     * else doubling from 64 KiB. cap counts the NUL's byte too. */
    size_t cap = f->info.size < ((uint64_t)1 << 40) && !f->waits ? (size_t)f->info.size + 2
                                                                  : (size_t)1 << 16;
    for (;;) {
        if (len + 1 == cap || !buf) {
            char *bigger = (cap > SIZE_MAX / 2) ? NULL : realloc(buf, buf ? cap * 2 : cap);
            if (!bigger) {
                s = cv_error(CV_RESOURCE_EXHAUSTED, "%s: out of memory after reading %zu bytes",
                             url, len);
                goto done;
            }
            cap = buf ? cap * 2 : cap;
            buf = bigger;
        }
        if ((s = f->methods->read(f, len, buf + len, cap - 1 - len, &got)))
            goto done;
        len += got;
        if (got == 0 || len + 1 < cap)
            break;
    }
    buf[len] = '\0';
    *data = buf;
    *size = len;
    buf = NULL;
done:
    free(buf);
    f->methods->close(f);
    return s;
}

/* Copy the bytes of `from` to a new `to` through the tables. */
static CvStatus copy_bytes(const char *from, const char *to, bool overwrite)
{
    CvReadFile *r = NULL;
    CvWriteFile *w = NULL;
    CvFileInfo info;
    enum { CHUNK = 1 << 20 };
    char *buf = NULL;
    uint64_t at = 0;
    CvStatus s = CV_STATUS_OK;
    if (!overwrite && cv_fs_stat(to, &info) == CV_STATUS_OK) /* racy, as TensorFlow's check */
        return cv_error(CV_ALREADY_EXISTS, "%s; the target exists", to);
    if ((s = cv_fs_open_read(from, &r)) || (s = cv_fs_open_write(to, false, &w)))
        goto done;
    if (!(buf = malloc(CHUNK))) {
        s = cv_error_nomem();
        goto done;
    }
    for (;;) {
        size_t got = 0;
        if ((s = r->methods->read(r, at, buf, CHUNK, &got)) ||
            (got && (s = w->methods->append(w, buf, got))))
            goto done;
        at += got;
        if (got < CHUNK)
            break;
    }
    s = w->methods->commit(w);
    w = NULL;
done:
    if (w)
        w->methods->abort(w);
    if (r)
        r->methods->close(r);
    free(buf);
    return s;
}

CvStatus cv_fs_copy(const char *from, const char *to, bool overwrite)
{
    const CvFileSystem *a, *b;
    CvStatus s = cv_fs_find(from, &a);
    if (s || (s = cv_fs_find(to, &b)))
        return s;
    if (a == b && a->copy)
        return a->copy(from, to, overwrite);
    return copy_bytes(from, to, overwrite);
}

CvStatus cv_fs_rename(const char *from, const char *to, bool overwrite)
{
    const CvFileSystem *a, *b;
    CvStatus s = cv_fs_find(from, &a);
    if (s || (s = cv_fs_find(to, &b)))
        return s;
    if (a == b && a->rename)
        return a->rename(from, to, overwrite);
    if ((s = cv_fs_copy(from, to, overwrite)))
        return s;
    return a->remove(from);
}

/* ---- glob -------------------------------------------------------------- */

typedef struct Matches {
    char **data;
    size_t len, cap;
} Matches;

static void matches_free(Matches *m)
{
    for (size_t i = 0; i < m->len; i++)
        free(m->data[i]);
    free(m->data);
    m->data = NULL;
    m->len = m->cap = 0;
}

/* Append a copy of a[0..an) + b; false: no memory. */
static bool matches_add(Matches *m, const char *a, size_t an, const char *b)
{
    size_t bn = strlen(b);
    char *p = malloc(an + bn + 1);
    if (!p || !cv_array_reserve((void **)&m->data, &m->cap, m->len + 1, sizeof(char *), 16)) {
        free(p);
        return false;
    }
    memcpy(p, a, an);
    memcpy(p + an, b, bn + 1);
    m->data[m->len++] = p;
    return true;
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool has_wildcard(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] == '*' || p[i] == '?' || p[i] == '[')
            return true;
    return false;
}

typedef struct ListInto {
    Matches *out;
    const char *prefix; /* the directory's URL, ending in '/' (or "") */
    const char *component; /* the pattern component to match */
    size_t component_len;
    bool nomem;
} ListInto;

/* A local directory entry: keep it when it matches the component. */
static int keep_matching(void *ctx, const char *name, const CvFileInfo *info)
{
    (void)info;
    ListInto *l = ctx;
    char pat[4096];
    if (l->component_len >= sizeof(pat))
        return 0;
    memcpy(pat, l->component, l->component_len);
    pat[l->component_len] = '\0';
    if (fnmatch(pat, name, FNM_PATHNAME) == 0 &&
        !matches_add(l->out, l->prefix, strlen(l->prefix), name)) {
        l->nomem = true;
        return 1;
    }
    return 0;
}

/* Local: component by component, listing only directories whose component
 * has a wildcard, so a pattern never walks a whole tree. */
static CvStatus glob_local(const char *pattern, Matches *out)
{
    CvStatus s = CV_STATUS_OK;
    Matches now = {0}, next = {0};
    const char *path = pattern, *p;
    size_t head = strncmp(pattern, "file://", 7) == 0 ? 7 : 0;
    path += head;
    /* The first candidate: the URL's head, and '/' when absolute. */
    if (!matches_add(&now, pattern, head + (path[0] == '/'), ""))
        return cv_error_nomem();
    p = path + (path[0] == '/');
    while (*p) {
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        bool last = !end || !end[1];
        if (n == 0) { /* "a//b": the empty component is skipped */
            p++;
            continue;
        }
        for (size_t i = 0; i < now.len; i++) {
            const char *dir = now.data[i];
            if (!has_wildcard(p, n)) {
                char *lit = strndup(p, n);
                bool ok = lit && matches_add(&next, dir, strlen(dir), lit);
                free(lit);
                if (!ok) {
                    s = cv_error_nomem();
                    goto done;
                }
                continue;
            }
            ListInto l = {&next, dir, p, n, false};
            CvFileInfo info;
            const char *listed = dir[0] ? dir : ".";
            if (cv_fs_stat(listed, &info) || !info.is_dir)
                continue;
            cv_status_free(cv_fs_local.list(listed, false, keep_matching, &l));
            if (l.nomem) {
                s = cv_error_nomem();
                goto done;
            }
        }
        matches_free(&now);
        now = next;
        next = (Matches){0};
        p += n;
        if (*p == '/' && !last) { /* the next candidates are directories: "x/" */
            for (size_t i = 0; i < now.len; i++) {
                size_t k = strlen(now.data[i]);
                char *grown = realloc(now.data[i], k + 2);
                if (!grown) {
                    s = cv_error_nomem();
                    goto done;
                }
                memcpy(grown + k, "/", 2);
                now.data[i] = grown;
            }
            p++;
        } else if (*p == '/') {
            p++;
        }
    }
    /* Keep what exists (literal components were not checked on the way). */
    for (size_t i = 0; i < now.len; i++) {
        CvFileInfo info;
        CvStatus e = cv_fs_stat(now.data[i], &info);
        if (e) {
            cv_status_free(e);
            continue;
        }
        if (!matches_add(out, now.data[i], strlen(now.data[i]), "")) {
            s = cv_error_nomem();
            goto done;
        }
    }
done:
    matches_free(&now);
    matches_free(&next);
    return s;
}

typedef struct RemoteGlob {
    Matches *out;
    const char *pattern;
    const char *base; /* the listed prefix's URL, ending in '/' */
    size_t base_len;
    bool nomem;
} RemoteGlob;

/* One object of the prefix listing: it and the directories it implies
 * ("a/b/c" implies "a" and "a/b"), when they match the pattern. */
static int remote_match(void *ctx, const char *name, const CvFileInfo *info)
{
    (void)info;
    RemoteGlob *g = ctx;
    size_t n = strlen(name);
    char *full = malloc(g->base_len + n + 1);
    if (!full) {
        g->nomem = true;
        return 1;
    }
    memcpy(full, g->base, g->base_len);
    memcpy(full + g->base_len, name, n + 1);
    for (char *slash = full + g->base_len;; slash++) {
        slash = strchr(slash, '/');
        if (slash)
            *slash = '\0';
        if (fnmatch(g->pattern, full, FNM_PATHNAME) == 0 &&
            !matches_add(g->out, full, strlen(full), "")) {
            g->nomem = true;
            break;
        }
        if (!slash)
            break;
        *slash = '/';
    }
    free(full);
    return g->nomem;
}

/* Remote: list the longest literal prefix once, recursively, and match. */
static CvStatus glob_remote(const CvFileSystem *fs, const char *pattern, Matches *out)
{
    size_t n = strlen(pattern), wild = 0;
    while (wild < n && !has_wildcard(pattern + wild, 1))
        wild++;
    size_t base_len = wild;
    while (base_len > 0 && pattern[base_len - 1] != '/')
        base_len--;
    char *base = strndup(pattern, base_len);
    if (!base)
        return cv_error_nomem();
    RemoteGlob g = {out, pattern, base, base_len, false};
    CvStatus s = fs->list(base, true, remote_match, &g);
    if (s && s->code == CV_NOT_FOUND) { /* no prefix: no matches */
        cv_status_free(s);
        s = CV_STATUS_OK;
    }
    if (!s && g.nomem)
        s = cv_error_nomem();
    free(base);
    return s;
}

CvStatus cv_fs_glob(const char *pattern, CvFsListFn each, void *ctx)
{
    const CvFileSystem *fs;
    Matches m = {0};
    CvStatus s = cv_fs_find(pattern, &fs);
    if (s)
        return s;
    if (!has_wildcard(pattern, strlen(pattern))) { /* a literal: it, when it exists */
        CvFileInfo info;
        CvStatus e = fs->stat(pattern, &info);
        if (e && e->code != CV_NOT_FOUND)
            return e;
        if (!e)
            each(ctx, pattern, &info);
        cv_status_free(e);
        return CV_STATUS_OK;
    }
    if ((s = fs == &cv_fs_local ? glob_local(pattern, &m) : glob_remote(fs, pattern, &m)))
        goto done;
    if (m.len)
        qsort(m.data, m.len, sizeof(char *), compare_strings);
    for (size_t i = 0; i < m.len; i++) {
        if (i > 0 && strcmp(m.data[i], m.data[i - 1]) == 0)
            continue; /* a directory implied by several objects */
        CvFileInfo info = {0};
        if (each(ctx, m.data[i], &info))
            break;
    }
done:
    matches_free(&m);
    return s;
}
