/* The HTTP client (io/http.h) and the http(s):// scheme (io/fs_http.c)
 * driven from C.
 *
 * With no arguments (tests/test_engine_c.py): checks that need no server
 * (headers, error mapping, display URLs, a refused connection retried to
 * UNAVAILABLE, the read-only table); prints "N passed, 0 failed".
 * With arguments (tests/test_http_client.py, which starts the servers):
 *   read URL OUT [CHUNK]   open_read + sequential reads into file OUT
 *   stream URL OUT         a stream over the whole object into OUT
 *   ahead URL SIZE         a stream opened and not read: the bytes it received
 *                          (waiting up to 30 s for SIZE), then read to its end
 *   stat URL               the scheme's stat
 *   get URL                cv_http_perform GET with a test auth
 *   cancel URL | interrupt URL   a read that hangs, given up after 300 ms
 *   many URL N SIZE OUT [BUDGET_BYTES BUDGET_REQUESTS]
 *                          N streams over consecutive slices, read in turns
 * and prints "key value" lines ("error CODE message" on failure). */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/blocking.h"
#include "core/thread.h"
#include "io/fs.h"
#include "io/http.h"

#include "check.h"

extern const CvFileSystem cv_fs_http, cv_fs_https;

static void print_error(CvStatus s)
{
    printf("error %s %s\n", cv_code_name(s->code), s->message);
    cv_status_free(s);
}

static void print_stats(void)
{
    CvIoStats st;
    cv_io_stats(&st);
    printf("retries %llu\nrequests %llu\nbytes_received %llu\nbytes_in_flight %lld\n",
           (unsigned long long)st.retries, (unsigned long long)st.requests,
           (unsigned long long)st.bytes_received, (long long)st.bytes_in_flight);
}

static const CvFileSystem *table_for(const char *url)
{
    return strncmp(url, "https:", 6) == 0 ? &cv_fs_https : &cv_fs_http;
}

/* Threads named "cv-io" in this process. */
static int io_threads(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[300], name[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fgets(name, sizeof name, f) && strncmp(name, "cv-io", 5) == 0)
                n++;
            fclose(f);
        }
    }
    if (d)
        closedir(d);
    return n;
}

/* ---- a test auth: one header per attempt, signed on the caller's thread -- */

typedef struct TestAuth {
    pthread_t caller;
    atomic_int calls, off_thread;
} TestAuth;

static CvStatus test_sign(void *ctx, const CvHttpRequest *req, CvHttpHeaders *out)
{
    TestAuth *a = ctx;
    (void)req;
    int n = atomic_fetch_add(&a->calls, 1) + 1;
    if (!pthread_equal(pthread_self(), a->caller))
        atomic_fetch_add(&a->off_thread, 1);
    return cv_http_headers_add(out, "X-Test-Signature: secret-%d", n);
}

/* ---- modes --------------------------------------------------------------- */

static int write_out(const char *path, const char *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n) {
        perror(path);
        return 2;
    }
    fclose(f);
    return 0;
}

static int mode_read(const char *url, const char *out, size_t chunk)
{
    CvReadFile *f = NULL;
    CvStatus s = table_for(url)->open_read(url, &f);
    if (!s && (s = cv_read_file_info(f))) /* open does not wait: the first answer tells */
        f->methods->close(f);
    if (s) {
        print_error(s);
        return 0;
    }
    printf("size %llu\nversion %s\nmtime_ns %lld\n", (unsigned long long)f->info.size, f->info.version,
           (long long)f->info.mtime_ns);
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    char *tmp = malloc(chunk);
    uint64_t off = 0;
    for (;;) {
        size_t got = 0;
        if ((s = f->methods->read(f, off, tmp, chunk, &got))) {
            print_error(s);
            break;
        }
        if (len + got > cap) {
            while (len + got > cap)
                cap *= 2;
            buf = realloc(buf, cap);
        }
        memcpy(buf + len, tmp, got);
        len += got;
        off += got;
        if (got < chunk) {
            printf("ok %zu\n", len);
            break;
        }
    }
    f->methods->close(f);
    int rc = write_out(out, buf, len);
    free(buf);
    free(tmp);
    print_stats();
    return rc;
}

static int mode_stream(const char *url, const char *out)
{
    TestAuth auth = {.caller = pthread_self()};
    CvHttpAuth a = {.sign = test_sign, .ctx = &auth, .source = "the test"};
    CvHttpStream *st = NULL;
    CvStatus s = cv_http_stream_open(url, url, NULL, &a, 0, UINT64_MAX, &st);
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    while (!s) {
        if (len + 65536 > cap)
            buf = realloc(buf, cap *= 2);
        size_t got = 0;
        s = cv_http_stream_read(st, buf + len, 65536, &got);
        len += got;
        if (!s && got < 65536) {
            printf("ok %zu\n", len);
            break;
        }
    }
    if (s)
        print_error(s);
    cv_http_stream_close(st);
    printf("signed %d\nsigned_off_thread %d\n", atomic_load(&auth.calls), atomic_load(&auth.off_thread));
    int rc = write_out(out, buf, len);
    free(buf);
    print_stats();
    return rc;
}

/* A body that fits its share of the I/O budget is received whole before
 * its reader takes a byte (an interleave's future), not a window short. */
static int mode_ahead(const char *url, uint64_t size)
{
    CvHttpStream *st = NULL;
    CvStatus s = cv_http_stream_open(url, url, NULL, NULL, 0, UINT64_MAX, &st);
    CvIoStats io = {0};
    for (int i = 0; !s && i < 30000; i++) { /* at most 30 s */
        cv_io_stats(&io);
        if (io.bytes_received >= size)
            break;
        usleep(1000);
    }
    printf("received_before_read %llu\n", (unsigned long long)io.bytes_received);
    char *buf = malloc(65536);
    uint64_t len = 0;
    size_t got = 1;
    while (!s && got) {
        s = cv_http_stream_read(st, buf, 65536, &got);
        len += got;
    }
    if (s)
        print_error(s);
    else
        printf("ok %llu\n", (unsigned long long)len);
    free(buf);
    cv_http_stream_close(st);
    return 0;
}

static int mode_stat(const char *url)
{
    CvFileInfo info;
    CvStatus s = table_for(url)->stat(url, &info);
    if (s)
        print_error(s);
    else
        printf("size %llu\nversion %s\nmtime_ns %lld\n", (unsigned long long)info.size, info.version,
               (long long)info.mtime_ns);
    return 0;
}

static int mode_get(const char *url)
{
    TestAuth auth = {.caller = pthread_self()};
    CvHttpAuth a = {.sign = test_sign, .ctx = &auth, .source = "the test's keys"};
    CvHttpRequest req = {.method = "GET", .url = url, .auth = &a};
    CvHttpResponse resp;
    CvStatus s = cv_http_perform(&req, &resp);
    printf("attempts %d\nsigned %d\n", resp.attempts, atomic_load(&auth.calls));
    if (s)
        print_error(s);
    else if (resp.status >= 300)
        print_error(cv_http_error(&resp, url, &a));
    else
        printf("status %ld\nbody_size %zu\n", resp.status, resp.body_size);
    cv_http_response_free(&resp);
    print_stats();
    return 0;
}

/* A read on another thread whose owner gives up after 300 ms: through the
 * blocking hooks (a cancelled pipeline) or the interrupt check (Ctrl-C). */
typedef struct GiveUp {
    const char *url;
    bool by_interrupt;
    atomic_bool give_up;
    CvStatus result;
    int64_t elapsed_ns;
} GiveUp;

static void hook_nothing(void *owner)
{
    (void)owner;
}

static bool hook_cancelled(void *owner)
{
    return atomic_load(&((GiveUp *)owner)->give_up);
}

static int interrupt_check(void *arg)
{
    return atomic_load(&((GiveUp *)arg)->give_up);
}

static void *give_up_thread(void *arg)
{
    GiveUp *g = arg;
    if (g->by_interrupt)
        cv_set_interrupt_check(interrupt_check, g);
    else
        cv_blocking_set_hooks((CvBlockingHooks){hook_nothing, hook_nothing, hook_cancelled, g});
    CvHttpStream *st = NULL;
    char buf[4096];
    size_t got;
    int64_t t0 = cv_now_ns();
    g->result = cv_http_stream_open(g->url, g->url, NULL, NULL, 0, UINT64_MAX, &st);
    if (!g->result)
        g->result = cv_http_stream_read(st, buf, sizeof buf, &got);
    g->elapsed_ns = cv_now_ns() - t0;
    cv_http_stream_close(st);
    return NULL;
}

static int mode_give_up(const char *url, bool by_interrupt)
{
    GiveUp g = {.url = url, .by_interrupt = by_interrupt};
    pthread_t t;
    pthread_create(&t, NULL, give_up_thread, &g);
    usleep(300000);
    int64_t t0 = cv_now_ns();
    atomic_store(&g.give_up, true);
    pthread_join(t, NULL);
    printf("after_give_up_ms %lld\n", (long long)((cv_now_ns() - t0) / 1000000));
    if (g.result)
        print_error(g.result);
    else
        printf("ok\n");
    return 0;
}

static int mode_many(const char *url, int n, uint64_t size, const char *out)
{
    CvHttpStream **st = calloc((size_t)n, sizeof *st);
    char *buf = malloc(size);
    uint64_t *pos = calloc((size_t)n, sizeof *pos);
    CvStatus s = CV_STATUS_OK;
    for (int i = 0; i < n && !s; i++) {
        pos[i] = size * (uint64_t)i / (uint64_t)n;
        s = cv_http_stream_open(url, url, NULL, NULL, pos[i], size * (uint64_t)(i + 1) / (uint64_t)n,
                                &st[i]);
    }
    int64_t max_in_flight = 0;
    for (bool more = true; more && !s;) {
        more = false;
        for (int i = 0; i < n && !s; i++) {
            uint64_t end = size * (uint64_t)(i + 1) / (uint64_t)n;
            if (pos[i] >= end)
                continue;
            size_t got = 0, want = end - pos[i] < 65536 ? (size_t)(end - pos[i]) : 65536;
            s = cv_http_stream_read(st[i], buf + pos[i], want, &got);
            pos[i] += got;
            if (!s && got < want)
                s = cv_error(CV_DATA_LOSS, "stream %d ended early at %llu", i, (unsigned long long)pos[i]);
            more = true;
            CvIoStats io;
            cv_io_stats(&io);
            if (io.requests_in_flight > max_in_flight)
                max_in_flight = io.requests_in_flight;
        }
    }
    printf("io_threads %d\nmax_requests_in_flight %lld\n", io_threads(), (long long)max_in_flight);
    if (s)
        print_error(s);
    else
        printf("ok %llu\n", (unsigned long long)size);
    for (int i = 0; i < n; i++)
        cv_http_stream_close(st[i]);
    int rc = write_out(out, buf, s ? 0 : size);
    free(buf);
    free(pos);
    free(st);
    print_stats();
    return rc;
}

/* ---- the checks that need no server -------------------------------------- */

static void self_tests(void)
{
    setenv("CONVEYOR_HTTP_ATTEMPTS", "3", 1);
    setenv("CONVEYOR_HTTP_BACKOFF_MS", "1", 1);

    CvHttpHeaders h = {0};
    CHECK(!cv_http_headers_add(&h, "Range: bytes=%d-", 5));
    CHECK(h.count == 1 && strcmp(h.lines[0], "Range: bytes=5-") == 0);
    cv_http_headers_free(&h);
    CHECK(h.count == 0 && h.lines == NULL);

    char hdrs[] = "HTTP/1.1 200 OK\r\nContent-Length: 12\r\netag:  \"abc\" \r\n";
    CvHttpResponse r = {.status = 403, .headers = hdrs, .body = (char[]){
        "<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message>"
        "<AWSAccessKeyId>AKIDSECRET</AWSAccessKeyId></Error>"}};
    char v[16];
    CHECK(cv_http_response_header(&r, "ETag", v, sizeof v) && strcmp(v, "\"abc\"") == 0);
    CHECK(cv_http_response_header(&r, "content-length", v, sizeof v) && strcmp(v, "12") == 0);
    CHECK(!cv_http_response_header(&r, "Content-Type", v, sizeof v));
    CvHttpAuth auth = {.source = "the environment (AWS_ACCESS_KEY_ID)"};
    CvStatus s = cv_http_error(&r, "s3://b/k", &auth);
    CHECK(s && s->code == CV_PERMISSION_DENIED);
    CHECK(s && strcmp(s->message, "s3://b/k: 403 Forbidden (AccessDenied: Access Denied; credentials "
                                  "from the environment (AWS_ACCESS_KEY_ID))") == 0);
    CHECK(s && !strstr(s->message, "AKIDSECRET"));
    cv_status_free(s);
    r = (CvHttpResponse){.status = 404, .body = (char[]){
        "{\"error\": {\"code\": 404, \"message\": \"No such object: b/k\", \"errors\": "
        "[{\"reason\": \"notFound\"}]}}"}};
    s = cv_http_error(&r, "gs://b/k", NULL);
    CHECK(s && s->code == CV_NOT_FOUND && strstr(s->message, "gs://b/k: 404 Not Found (notFound"));
    cv_status_free(s);
    long statuses[] = {401, 409, 412, 416, 400, 418};
    CvCode codes[] = {CV_PERMISSION_DENIED, CV_FAILED_PRECONDITION, CV_FAILED_PRECONDITION,
                      CV_OUT_OF_RANGE, CV_INVALID_ARGUMENT, CV_UNKNOWN};
    for (int i = 0; i < 6; i++) {
        r = (CvHttpResponse){.status = statuses[i], .body = (char[]){""}};
        s = cv_http_error(&r, "u", NULL);
        CHECK(s && s->code == codes[i]);
        cv_status_free(s);
    }

    /* Nothing listens on port 9 (discard) of loopback here, as a rule. */
    CvHttpRequest req = {.method = "GET", .url = "http://user:pw@127.0.0.1:9/x?X-Amz-Signature=abc"};
    s = cv_http_perform(&req, &r);
    CHECK(s && s->code == CV_UNAVAILABLE);
    CHECK(s && strstr(s->message, "http://127.0.0.1:9/x?...: the request failed after 3 attempts: "
                                  "could not connect; could not connect; could not connect"));
    CHECK(s && !strstr(s->message, "pw") && !strstr(s->message, "abc"));
    if (s)
        printf("# %s\n", s->message);
    cv_status_free(s);
    cv_http_response_free(&r);
    CvIoStats st;
    cv_io_stats(&st);
    CHECK(st.retries >= 2 && st.budget_bytes == (int64_t)256 << 20 && st.budget_requests == 64);
    CHECK(io_threads() == 1);

    CvWriteFile *w = NULL;
    s = cv_fs_https.open_write("https://example.com/x", false, &w);
    CHECK(s && s->code == CV_UNIMPLEMENTED && strstr(s->message, "read-only") && !w);
    cv_status_free(s);
    CHECK(strcmp(cv_fs_http.scheme, "http") == 0 && strcmp(cv_fs_https.scheme, "https") == 0);

    /* A stream over an empty range reads nothing and starts no request. */
    CvHttpStream *hs = NULL;
    size_t got = 1;
    char b[4];
    CHECK(!cv_http_stream_open("http://127.0.0.1:9/x", NULL, NULL, NULL, 5, 5, &hs));
    CHECK(hs && !cv_http_stream_read(hs, b, sizeof b, &got) && got == 0);
    cv_http_stream_close(hs);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        self_tests();
        printf("%d passed, %d failed\n", passed, failed);
        return failed ? 1 : 0;
    }
    const char *mode = argv[1];
    if (strcmp(mode, "read") == 0 && argc >= 4)
        return mode_read(argv[2], argv[3], argc > 4 ? (size_t)atol(argv[4]) : 100000);
    if (strcmp(mode, "stream") == 0 && argc == 4)
        return mode_stream(argv[2], argv[3]);
    if (strcmp(mode, "ahead") == 0 && argc == 4)
        return mode_ahead(argv[2], strtoull(argv[3], NULL, 10));
    if (strcmp(mode, "stat") == 0 && argc == 3)
        return mode_stat(argv[2]);
    if (strcmp(mode, "get") == 0 && argc == 3)
        return mode_get(argv[2]);
    if ((strcmp(mode, "cancel") == 0 || strcmp(mode, "interrupt") == 0) && argc == 3)
        return mode_give_up(argv[2], mode[0] == 'i');
    if (strcmp(mode, "many") == 0 && argc == 8)
        cv_io_set_budget(atoll(argv[6]), atoll(argv[7]));
    if (strcmp(mode, "many") == 0 && (argc == 6 || argc == 8))
        return mode_many(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 10), argv[5]);
    fprintf(stderr, "usage: see the comment at the top of tests/c/http_test.c\n");
    return 2;
}
