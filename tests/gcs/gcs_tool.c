/* A command-line driver of io/fs_gcs.c and io/gcs_credentials.c for
 * tests/test_gcs.py: the engine's gs:// table with no Python in the
 * process. Commands run in order in one process (so a token is reused
 * across them), separated by "--":
 *   source | fetches | reset | setenv NAME VALUE | unsetenv NAME | stat URL | ls URL | lsr URL | cat URL [OFF LEN]
 *   put URL (stdin) | put-abort URL N | put-exit URL N | rm URL | mkdir URL
 *   rmdir URL | cp A B [overwrite] | mv A B [overwrite] | read-rewrite URL OFF
 *   json (the JSON scanner over stdin)
 * Output: one line per result; an error prints "ERROR <CODE>: <message>"
 * and the program goes on. Never prints a token. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/fs.h"
#include "io/gcs_credentials.h"
#include "io/json_scan.h"

extern const CvFileSystem cv_fs_gcs;

static int report(CvStatus st) {
    if (st == CV_STATUS_OK)
        return 0;
    printf("ERROR %s: %s\n", cv_code_name(st->code), st->message);
    cv_status_free(st);
    return 1;
}

static int print_entry(void *ctx, const char *name, const CvFileInfo *info) {
    (void)ctx;
    printf("%s\t%s\t%llu\n", name, info->is_dir ? "dir" : "file",
           (unsigned long long)info->size);
    return 0;
}

static CvStatus cat(const char *url, long long off, long long len) {
    CvReadFile *f = NULL;
    CvStatus st = cv_fs_gcs.open_read(url, &f);
    if (st != CV_STATUS_OK)
        return st;
    char buf[65536];
    uint64_t pos = off < 0 ? 0 : (uint64_t)off;
    uint64_t left = len < 0 ? UINT64_MAX : (uint64_t)len;
    while (left > 0) {
        size_t got = 0, want = left < sizeof buf ? (size_t)left : sizeof buf;
        if ((st = f->methods->read(f, pos, buf, want, &got)) != CV_STATUS_OK || got == 0)
            break;
        fwrite(buf, 1, got, stdout);
        pos += got;
        left -= got;
    }
    f->methods->close(f);
    return st;
}

static CvStatus put(const char *url, long long n, int how) {
    CvWriteFile *w = NULL;
    CvStatus st = cv_fs_gcs.open_write(url, false, &w);
    if (st != CV_STATUS_OK)
        return st;
    char buf[65536];
    long long done = 0;
    for (;;) {
        size_t got;
        if (n >= 0) {
            /* A deterministic pattern: byte i is i * 7 mod 251. */
            got = n - done < (long long)sizeof buf ? (size_t)(n - done) : sizeof buf;
            for (size_t i = 0; i < got; i++)
                buf[i] = (char)(((done + (long long)i) * 7) % 251);
        } else {
            got = fread(buf, 1, sizeof buf, stdin);
        }
        if (got == 0)
            break;
        if ((st = w->methods->append(w, buf, got)) != CV_STATUS_OK) {
            w->methods->abort(w);
            return st;
        }
        done += (long long)got;
    }
    if (how == 1) {
        w->methods->abort(w);
        return CV_STATUS_OK;
    }
    if (how == 2) {
        fflush(stdout);
        _exit(3); /* killed half-way: nothing committed, nothing aborted */
    }
    return w->methods->commit(w);
}

/* Read 4 bytes at 0, replace the object, read 4 bytes at `off` (a new
 * ranged request on the pinned generation). */
static CvStatus read_rewrite(const char *url, long long off) {
    CvReadFile *f = NULL;
    CvWriteFile *w = NULL;
    char buf[4];
    size_t got = 0;
    CvStatus st = cv_fs_gcs.open_read(url, &f);
    if (st != CV_STATUS_OK)
        return st;
    if ((st = f->methods->read(f, 0, buf, 4, &got)) == CV_STATUS_OK) {
        printf("first=%.*s\n", (int)got, buf);
        st = cv_fs_gcs.open_write(url, false, &w);
        if (st == CV_STATUS_OK && (st = w->methods->append(w, "REWRITTEN!", 10)) != CV_STATUS_OK)
            w->methods->abort(w);
        else if (st == CV_STATUS_OK)
            st = w->methods->commit(w);
    }
    if (st == CV_STATUS_OK && (st = f->methods->read(f, (uint64_t)off, buf, 4, &got)) == CV_STATUS_OK)
        printf("second=%.*s\n", (int)got, buf);
    f->methods->close(f);
    return st;
}

/* The JSON scanner over whatever stdin holds (a fuzz input): every entry
 * point, nothing printed but counts. */
static void json_scan_stdin(void) {
    static char data[1 << 20];
    size_t n = fread(data, 1, sizeof data, stdin);
    CvJsonSpan doc = {data, n}, arr, el, v;
    int64_t x;
    bool b;
    char *s = NULL;
    int found = 0;
    const char *keys[] = {"items", "prefixes", "name", "size", "done", "nextPageToken", "a\\b"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        found += cv_json_field(doc, keys[k], &v);
        found += cv_json_int(doc, keys[k], &x);
        found += cv_json_bool(doc, keys[k], &b);
        found += cv_json_string(doc, keys[k], &s);
        free(s);
    }
    size_t pos = 0;
    if (cv_json_field(doc, "items", &arr))
        while (cv_json_array_next(arr, &pos, &el)) {
            found += cv_json_string(el, "name", &s);
            free(s);
            found += cv_json_int(el, "size", &x);
        }
    pos = 0;
    while (cv_json_array_next(doc, &pos, &el)) {
        s = cv_json_unescape(el);
        found += s != NULL;
        free(s);
    }
    printf("json found=%d\n", found);
}

int main(int argc, char **argv) {
    int i = 1;
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    while (i < argc) {
        int end = i;
        while (end < argc && strcmp(argv[end], "--") != 0)
            end++;
        int n = end - i;
        const char *cmd = argv[i], *a = n > 1 ? argv[i + 1] : "", *b = n > 2 ? argv[i + 2] : "";
        CvFileInfo info;
        if (strcmp(cmd, "source") == 0) {
            const CvGcsContext *ctx;
            if (!report(cv_gcs_context(&ctx)))
                printf("source=%s\nendpoint=%s\nsigned=%d\n", ctx->auth.source, ctx->endpoint,
                       ctx->auth.sign != NULL);
        } else if (strcmp(cmd, "fetches") == 0) {
            printf("fetches=%llu\n", (unsigned long long)cv_gcs_token_fetches());
        } else if (strcmp(cmd, "setenv") == 0) {
            setenv(a, b, 1);
        } else if (strcmp(cmd, "unsetenv") == 0) {
            unsetenv(a);
        } else if (strcmp(cmd, "reset") == 0) {
            cv_gcs_credentials_reset();
        } else if (strcmp(cmd, "stat") == 0) {
            if (!report(cv_fs_gcs.stat(a, &info)))
                printf("%s size=%llu mtime_ns=%lld version=%s\n", info.is_dir ? "dir" : "file",
                       (unsigned long long)info.size, (long long)info.mtime_ns, info.version);
        } else if (strcmp(cmd, "ls") == 0 || strcmp(cmd, "lsr") == 0) {
            report(cv_fs_gcs.list(a, cmd[2] == 'r', print_entry, NULL));
        } else if (strcmp(cmd, "cat") == 0) {
            report(cat(a, n > 2 ? atoll(b) : 0, n > 3 ? atoll(argv[i + 3]) : -1));
        } else if (strcmp(cmd, "put") == 0) {
            report(put(a, n > 2 ? atoll(b) : -1, 0));
        } else if (strcmp(cmd, "put-abort") == 0) {
            report(put(a, atoll(b), 1));
        } else if (strcmp(cmd, "put-exit") == 0) {
            report(put(a, atoll(b), 2));
        } else if (strcmp(cmd, "read-rewrite") == 0) {
            report(read_rewrite(a, atoll(b)));
        } else if (strcmp(cmd, "json") == 0) {
            json_scan_stdin();
        } else if (strcmp(cmd, "rm") == 0) {
            report(cv_fs_gcs.remove(a));
        } else if (strcmp(cmd, "mkdir") == 0) {
            report(cv_fs_gcs.make_dir(a));
        } else if (strcmp(cmd, "rmdir") == 0) {
            report(cv_fs_gcs.remove_dir(a));
        } else if (strcmp(cmd, "cp") == 0 || strcmp(cmd, "mv") == 0) {
            bool overwrite = n > 3 && strcmp(argv[i + 3], "overwrite") == 0;
            report(cmd[0] == 'c' ? cv_fs_gcs.copy(a, b, overwrite)
                                 : cv_fs_gcs.rename(a, b, overwrite));
        } else {
            printf("ERROR INVALID_ARGUMENT: unknown command %s\n", cmd);
        }
        fflush(stdout);
        i = end + 1;
    }
    return 0;
}
