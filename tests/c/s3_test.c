/* The s3:// scheme (io/fs_s3.c, io/s3_client.c) driven from C.
 *
 * With no arguments (tests/test_engine_c.py): checks that need no server
 * (s3:// URLs, addressing, the XML scanner, the table); prints
 * "N passed, 0 failed".
 * With arguments (tests/test_s3.py, which starts the servers and sets the
 * AWS_* environment):
 *   stat URL              size, is_dir, version, mtime_ns
 *   get URL OUT [CHUNK]   open_read, reads of CHUNK bytes into file OUT
 *   pread URL OFF N OUT   one read of N bytes at OFF (after a read at 0)
 *   preadwait URL OFF N OUT  the same, waiting for a line on stdin between
 *   put URL IN [CHUNK]    open_write, appends of CHUNK bytes, commit
 *   putabort URL IN       appends all of IN, then abort
 *   ls URL [r]            "entry NAME SIZE DIR" lines (r: recursive)
 *   rm URL | mkdir URL | rmdir URL
 *   cp FROM TO [o]        the table's copy (o: overwrite)
 * and prints "key value" lines, or "error CODE message" on failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/fs.h"
#include "io/s3_client.h"

#include "check.h"

extern const CvFileSystem cv_fs_s3;

static void test_offline(void)
{
    CvS3Loc l;
    CvStatus s = cv_s3_loc_parse("s3://", &l);
    CHECK(s && s->code == CV_INVALID_ARGUMENT);
    cv_status_free(s);
    CHECK(cv_s3_loc_parse("s3://b", &l) == CV_STATUS_OK && strcmp(l.bucket, "b") == 0 &&
          strcmp(l.key, "") == 0);
    cv_s3_loc_free(&l);
    CHECK(cv_s3_loc_parse("s3://b/a/b c", &l) == CV_STATUS_OK && strcmp(l.key, "a/b c") == 0);
    cv_s3_loc_free(&l);
    CHECK(cv_s3_loc_parse("s3://b/a/..b/c.", &l) == CV_STATUS_OK);
    cv_s3_loc_free(&l);
    const char *dotted[] = {"s3://b/a/../c", "s3://b/./c", "s3://b/a/.."};
    for (size_t i = 0; i < 3; i++) {
        s = cv_s3_loc_parse(dotted[i], &l);
        CHECK(s && s->code == CV_INVALID_ARGUMENT);
        cv_status_free(s);
    }

    /* Addressing: AWS is virtual-hosted (path-style for dotted buckets), a
     * custom endpoint path-style; keys encoded with '/' kept. */
    unsetenv("AWS_ENDPOINT_URL_S3");
    unsetenv("AWS_ENDPOINT_URL");
    unsetenv("AWS_PROFILE");
    setenv("AWS_CONFIG_FILE", "/nonexistent", 1);
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent", 1);
    setenv("AWS_REGION", "eu-west-1", 1);
    setenv("CONVEYOR_S3_ANONYMOUS", "1", 1);
    CvS3 s3 = {0};
    CHECK(cv_s3_begin(&s3) == CV_STATUS_OK && s3.auth.sign == NULL);
    char *u = cv_s3_endpoint_url(&s3, "bucket", "a b/c+d", "x=1");
    CHECK(strcmp(u, "https://bucket.s3.eu-west-1.amazonaws.com/a%20b/c%2Bd?x=1") == 0);
    free(u);
    u = cv_s3_endpoint_url(&s3, "my.bucket", "k", NULL);
    CHECK(strcmp(u, "https://s3.eu-west-1.amazonaws.com/my.bucket/k") == 0);
    free(u);
    /* A bucket in another region: the message says which to set. */
    char headers[] = "HTTP/1.1 301 Moved Permanently\r\nx-amz-bucket-region: ap-east-1\r\n";
    CvHttpResponse moved = {301, (char *)"", 0, headers, 1};
    CvStatus e = cv_s3_error(&s3, &moved, "b", "k");
    CHECK(e && e->code == CV_FAILED_PRECONDITION && strstr(e->message, "s3://b/k") &&
          strstr(e->message, "AWS_REGION=ap-east-1"));
    cv_status_free(e);
    cv_s3_end(&s3);
    setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000/", 1);
    CHECK(cv_s3_begin(&s3) == CV_STATUS_OK);
    u = cv_s3_endpoint_url(&s3, "bucket", "", "list-type=2");
    CHECK(strcmp(u, "http://127.0.0.1:9000/bucket?list-type=2") == 0);
    free(u);
    cv_s3_end(&s3);
    unsetenv("AWS_ENDPOINT_URL_S3");
    unsetenv("CONVEYOR_S3_ANONYMOUS");

    /* The XML scanner: entities, numeric references, raw spans. */
    const char *xml = "<R><Contents><Key>a&amp;amp;&lt;b&#233;&#x41;</Key></Contents>"
                      "<Contents><Key>z</Key></Contents></R>";
    const char *p = xml, *end = xml + strlen(xml), *a, *b;
    char *v = NULL;
    bool oom = false;
    CHECK(cv_s3_xml_span(&p, end, "Contents", &a, &b));
    CHECK(cv_s3_xml_next(&a, b, "Key", &v, &oom) && strcmp(v, "a&amp;<b\xc3\xa9" "A") == 0);
    free(v);
    CHECK(cv_s3_xml_next(&p, end, "Key", &v, &oom) && strcmp(v, "z") == 0);
    free(v);
    CHECK(!cv_s3_xml_next(&p, end, "Key", &v, &oom) && !oom && v == NULL);
    CHECK(cv_s3_parse_time("Sun, 06 Nov 1994 08:49:37 GMT") == 784111777LL * 1000000000);
    CHECK(cv_s3_parse_time("1994-11-06T08:49:37.000Z") == 784111777LL * 1000000000);
    CvFileInfo info = {0};
    cv_s3_set_version(&info, "\"abc\"");
    CHECK(strcmp(info.version, "abc") == 0);

    CHECK(strcmp(cv_fs_s3.scheme, "s3") == 0 && cv_fs_s3.rename == NULL && cv_fs_s3.copy);
    CvWriteFile *w = NULL;
    s = cv_fs_s3.open_write("s3://b/k", true, &w);
    CHECK(s && s->code == CV_UNIMPLEMENTED && w == NULL);
    cv_status_free(s);
}

/* ---- the commands ------------------------------------------------------ */

static int fail(CvStatus s)
{
    printf("error %s %s\n", cv_code_name(s->code), s->message);
    cv_status_free(s);
    return 0;
}

static int print_entry(void *ctx, const char *name, const CvFileInfo *info)
{
    (void)ctx;
    printf("entry %s %llu %d\n", name, info->is_dir ? 0ULL : (unsigned long long)info->size,
           info->is_dir);
    return 0;
}

static int cmd_get(const char *url, const char *out_path, size_t chunk)
{
    CvReadFile *f;
    CvStatus s = cv_fs_s3.open_read(url, &f);
    if (s)
        return fail(s);
    FILE *out = fopen(out_path, "wb");
    char *buf = malloc(chunk);
    uint64_t at = 0;
    size_t got = chunk;
    while (!s && got == chunk) {
        s = f->methods->read(f, at, buf, chunk, &got);
        fwrite(buf, 1, s ? 0 : got, out);
        at += s ? 0 : got;
    }
    fclose(out);
    free(buf);
    printf("size %llu\nversion %s\n", (unsigned long long)f->info.size, f->info.version);
    f->methods->close(f);
    return s ? fail(s) : 0;
}

static int cmd_pread(const char *url, uint64_t off, size_t n, const char *out_path, bool wait)
{
    CvReadFile *f;
    CvStatus s = cv_fs_s3.open_read(url, &f);
    if (s)
        return fail(s);
    char *buf = malloc(n + 16);
    size_t got = 0;
    if (!(s = f->methods->read(f, 0, buf, 16, &got)) && wait) {
        char line[16];
        printf("opened 1\n");
        fflush(stdout);
        if (!fgets(line, sizeof line, stdin)) /* the test rewrites the object meanwhile */
            line[0] = '\0';
    }
    if (!s)
        s = f->methods->read(f, off, buf, n, &got);
    FILE *out = fopen(out_path, "wb");
    fwrite(buf, 1, s ? 0 : got, out);
    fclose(out);
    free(buf);
    f->methods->close(f);
    return s ? fail(s) : (printf("got %zu\n", got), 0);
}

static int cmd_put(const char *url, const char *in_path, size_t chunk, bool abort_it)
{
    CvWriteFile *w;
    CvStatus s = cv_fs_s3.open_write(url, false, &w);
    if (s)
        return fail(s);
    FILE *in = fopen(in_path, "rb");
    char *buf = malloc(chunk);
    size_t n;
    while (!s && (n = fread(buf, 1, chunk, in)) > 0)
        s = w->methods->append(w, buf, n);
    fclose(in);
    free(buf);
    if (s) {
        w->methods->abort(w);
        return fail(s);
    }
    if (abort_it) {
        w->methods->abort(w);
        printf("aborted 1\n");
        return 0;
    }
    s = w->methods->commit(w);
    return s ? fail(s) : (printf("committed 1\n"), 0);
}

int main(int argc, char **argv)
{
    CvStatus s;
    if (argc < 2) {
        test_offline();
        printf("%d passed, %d failed\n", passed, failed);
        return failed ? 1 : 0;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "stat") == 0 && argc == 3) {
        CvFileInfo info;
        if ((s = cv_fs_s3.stat(argv[2], &info)))
            return fail(s);
        printf("size %llu\nis_dir %d\nversion %s\nmtime_ns %lld\n",
               (unsigned long long)info.size, info.is_dir, info.version, (long long)info.mtime_ns);
        return 0;
    }
    if (strcmp(cmd, "get") == 0 && argc >= 4)
        return cmd_get(argv[2], argv[3], argc > 4 ? (size_t)atol(argv[4]) : 1 << 20);
    if ((strcmp(cmd, "pread") == 0 || strcmp(cmd, "preadwait") == 0) && argc == 6)
        return cmd_pread(argv[2], strtoull(argv[3], NULL, 10), (size_t)atol(argv[4]), argv[5],
                         cmd[5] == 'w');
    if (strcmp(cmd, "put") == 0 && argc >= 4)
        return cmd_put(argv[2], argv[3], argc > 4 ? (size_t)atol(argv[4]) : 1 << 20, false);
    if (strcmp(cmd, "putabort") == 0 && argc == 4)
        return cmd_put(argv[2], argv[3], 1 << 20, true);
    if (strcmp(cmd, "ls") == 0 && argc >= 3) {
        if ((s = cv_fs_s3.list(argv[2], argc > 3 && argv[3][0] == 'r', print_entry, NULL)))
            return fail(s);
        printf("listed 1\n");
        return 0;
    }
    if ((strcmp(cmd, "rm") == 0 || strcmp(cmd, "mkdir") == 0 || strcmp(cmd, "rmdir") == 0) &&
        argc == 3) {
        s = strcmp(cmd, "rm") == 0      ? cv_fs_s3.remove(argv[2])
            : strcmp(cmd, "mkdir") == 0 ? cv_fs_s3.make_dir(argv[2])
                                        : cv_fs_s3.remove_dir(argv[2]);
        return s ? fail(s) : (printf("done 1\n"), 0);
    }
    if (strcmp(cmd, "cp") == 0 && argc >= 4) {
        if ((s = cv_fs_s3.copy(argv[2], argv[3], argc > 4 && argv[4][0] == 'o')))
            return fail(s);
        printf("done 1\n");
        return 0;
    }
    fprintf(stderr, "usage: see the top of tests/c/s3_test.c\n");
    return 2;
}
