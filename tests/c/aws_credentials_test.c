/* The AWS credential chain (csrc/io/aws_credentials.c) without a network:
 * the environment, profiles in a credentials file and a config file, the
 * region and endpoint rules, anonymous access, a missing named profile, and
 * the cache following the environment, threads and a fork. The metadata services are covered
 * by tests/test_s3.py (a loopback IMDSv2 server). Built and run by
 * tests/test_engine_c.py; prints "N passed, 0 failed". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/aws_credentials.h"

#include "check.h"

static const char *const VARS[] = {
    "AWS_NO_SIGN_REQUEST", "CONVEYOR_S3_ANONYMOUS", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT_URL", "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
};
static char dir[64], cred_file[128], conf_file[128];

static void clean_env(void)
{
    for (size_t i = 0; i < sizeof VARS / sizeof *VARS; i++)
        unsetenv(VARS[i]);
    setenv("HOME", dir, 1); /* no ~/.aws of the machine's */
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

/* The configuration now, with its keys (fields NULL when anonymous). */
static CvAwsConfig *get(CvAwsCredentials *cred)
{
    CvAwsConfig *c = NULL;
    CvStatus s = cv_aws_config_get(&c);
    CHECK(s == CV_STATUS_OK);
    if (s) {
        fprintf(stderr, "%s\n", s->message);
        cv_status_free(s);
        return NULL;
    }
    s = cv_aws_config_credentials(c, cred);
    CHECK(s == CV_STATUS_OK);
    cv_status_free(s);
    CHECK(!strstr(cv_aws_config_source(c), "SECRET"));
    return c;
}

static void test_environment(void)
{
    CvAwsCredentials cred;
    clean_env();
    setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "SECRETENV", 1);
    setenv("AWS_SESSION_TOKEN", "TOKENENV", 1);
    CvAwsConfig *c = get(&cred);
    CHECK(c && strcmp(cred.access_key, "AKENV") == 0 && strcmp(cred.secret_key, "SECRETENV") == 0);
    CHECK(c && strcmp(cred.session_token, "TOKENENV") == 0);
    CHECK(c && strcmp(cv_aws_config_source(c), "the environment (AWS_ACCESS_KEY_ID)") == 0);
    CHECK(c && strcmp(cv_aws_config_region(c), "us-east-1") == 0);
    CHECK(c && strcmp(cv_aws_config_endpoint(c), "https://s3.us-east-1.amazonaws.com") == 0);
    CHECK(c && !cv_aws_config_custom_endpoint(c) && !cv_aws_config_anonymous(c));
    cv_aws_credentials_clear(&cred);
    /* Same environment: the same (cached) configuration. */
    CvAwsConfig *again = get(&cred);
    CHECK(again == c);
    cv_aws_credentials_clear(&cred);
    cv_aws_config_release(again);
    /* A changed variable: resolved again. */
    setenv("AWS_REGION", "eu-west-3", 1);
    setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9/", 1);
    again = get(&cred);
    CHECK(again && again != c && strcmp(cv_aws_config_region(again), "eu-west-3") == 0);
    CHECK(again && strcmp(cv_aws_config_endpoint(again), "http://127.0.0.1:9") == 0);
    CHECK(again && cv_aws_config_custom_endpoint(again));
    setenv("AWS_ENDPOINT_URL_S3", "localhost:1234", 1); /* before AWS_ENDPOINT_URL; https */
    cv_aws_credentials_clear(&cred);
    cv_aws_config_release(again);
    again = get(&cred);
    CHECK(again && strcmp(cv_aws_config_endpoint(again), "https://localhost:1234") == 0);
    cv_aws_credentials_clear(&cred);
    cv_aws_config_release(again);
    cv_aws_config_release(c);
}

static void test_profiles(void)
{
    CvAwsCredentials cred;
    clean_env();
    write_file(cred_file, "# comment\n[default]\naws_access_key_id = AKDEF\n"
                          "aws_secret_access_key = SECRETDEF\n\n[work]\n"
                          "aws_access_key_id=AKWORK\naws_secret_access_key=SECRETWORK\n"
                          "aws_session_token = TOKWORK\n");
    write_file(conf_file, "[default]\nregion = ap-south-1\n[profile work]\nregion = eu-north-1\n"
                          "endpoint_url = http://127.0.0.1:8333\ns3 =\n  addressing_style = path\n"
                          "[profile onlyconf]\naws_access_key_id = AKCONF\n"
                          "aws_secret_access_key = SECRETCONF\n[profile regiononly]\n"
                          "region = sa-east-1\n");
    setenv("AWS_SHARED_CREDENTIALS_FILE", cred_file, 1);
    setenv("AWS_CONFIG_FILE", conf_file, 1);
    CvAwsConfig *c = get(&cred);
    CHECK(c && strcmp(cred.access_key, "AKDEF") == 0 && cred.session_token == NULL);
    CHECK(c && strcmp(cv_aws_config_region(c), "ap-south-1") == 0);
    char want[256];
    snprintf(want, sizeof want, "profile 'default' in %s", cred_file);
    CHECK(c && strcmp(cv_aws_config_source(c), want) == 0);
    cv_aws_credentials_clear(&cred);
    cv_aws_config_release(c);

    setenv("AWS_PROFILE", "work", 1);
    c = get(&cred);
    CHECK(c && strcmp(cred.access_key, "AKWORK") == 0 && strcmp(cred.session_token, "TOKWORK") == 0);
    CHECK(c && strcmp(cv_aws_config_region(c), "eu-north-1") == 0);
    CHECK(c && strcmp(cv_aws_config_endpoint(c), "http://127.0.0.1:8333") == 0);
    cv_aws_credentials_clear(&cred);
    cv_aws_config_release(c);

    setenv("AWS_PROFILE", "onlyconf", 1);
    c = get(&cred);
    CHECK(c && strcmp(cred.access_key, "AKCONF") == 0);
    snprintf(want, sizeof want, "profile 'onlyconf' in %s", conf_file);
    CHECK(c && strcmp(cv_aws_config_source(c), want) == 0);
    cv_aws_credentials_clear(&cred);
    cv_aws_config_release(c);

    /* A profile with no keys: the chain goes on (metadata disabled: anonymous). */
    setenv("AWS_PROFILE", "regiononly", 1);
    c = get(&cred);
    CHECK(c && cv_aws_config_anonymous(c) && cred.access_key == NULL);
    CHECK(c && strcmp(cv_aws_config_region(c), "sa-east-1") == 0);
    cv_aws_credentials_clear(&cred);
    cv_aws_config_release(c);

    /* The environment's keys come before every profile. */
    setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "SECRETENV", 1);
    setenv("AWS_PROFILE", "work", 1);
    c = get(&cred);
    CHECK(c && strcmp(cred.access_key, "AKENV") == 0);
    CHECK(c && strcmp(cv_aws_config_region(c), "eu-north-1") == 0); /* the profile's region */
    cv_aws_credentials_clear(&cred);
    cv_aws_config_release(c);

    /* A named profile found nowhere is an error naming it, not a fall-through. */
    setenv("AWS_PROFILE", "nosuch", 1);
    c = NULL;
    CvStatus s = cv_aws_config_get(&c);
    CHECK(s && s->code == CV_INVALID_ARGUMENT && strstr(s->message, "'nosuch'") && c == NULL);
    cv_status_free(s);
}

static void test_anonymous(void)
{
    CvAwsCredentials cred;
    clean_env();
    setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "SECRETENV", 1);
    setenv("CONVEYOR_S3_ANONYMOUS", "1", 1);
    CvAwsConfig *c = get(&cred);
    CHECK(c && cv_aws_config_anonymous(c) && cred.access_key == NULL);
    CHECK(c && strcmp(cv_aws_config_source(c), "anonymous (CONVEYOR_S3_ANONYMOUS)") == 0);
    cv_aws_config_release(c);
    setenv("CONVEYOR_S3_ANONYMOUS", "false", 1);
    setenv("AWS_NO_SIGN_REQUEST", "YES", 1);
    c = get(&cred);
    CHECK(c && strcmp(cv_aws_config_source(c), "anonymous (AWS_NO_SIGN_REQUEST)") == 0);
    cv_aws_config_release(c);
    clean_env();
    c = get(&cred);
    CHECK(c && strcmp(cv_aws_config_source(c), "anonymous (no credentials were found)") == 0);
    cv_aws_config_release(c);
}

/* Many threads taking and releasing the cached configuration and its keys
 * (under .ci/tsan this is a race check). */
static void *hammer(void *arg)
{
    int *bad = arg;
    for (int i = 0; i < 2000; i++) {
        CvAwsConfig *c = NULL;
        CvAwsCredentials cred;
        CvStatus s = cv_aws_config_get(&c);
        if (!s)
            s = cv_aws_config_credentials(c, &cred);
        if (s || strcmp(cred.access_key, "AKENV") != 0)
            (*bad)++;
        if (!s)
            cv_aws_credentials_clear(&cred);
        cv_status_free(s);
        cv_aws_config_release(c);
    }
    return NULL;
}

static void test_threads_and_fork(void)
{
    clean_env();
    setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "SECRETENV", 1);
    pthread_t t[8];
    int bad[8] = {0};
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, hammer, &bad[i]);
    /* A fork while the others run: the child resolves on its own. Not under
     * AddressSanitizer: its allocator (GCC 12's) is not fork-safe, so a child
     * forked while another thread held the allocator's lock waits in malloc
     * for ever (1 run in 30 here); the normal and TSan builds run it. */
#ifndef __SANITIZE_ADDRESS__
    pid_t pid = fork();
    if (pid == 0) {
        int child_bad = 0;
        hammer(&child_bad);
        _exit(child_bad ? 1 : 0);
    }
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
          WEXITSTATUS(status) == 0);
#endif
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        CHECK(bad[i] == 0);
    }
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/cv-aws-test-XXXXXX");
    if (!mkdtemp(dir))
        return 2;
    snprintf(cred_file, sizeof cred_file, "%s/credentials", dir);
    snprintf(conf_file, sizeof conf_file, "%s/config", dir);
    test_environment();
    test_profiles();
    test_anonymous();
    test_threads_and_fork();
    unlink(cred_file);
    unlink(conf_file);
    rmdir(dir);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
