/* The AWS credential chain, region and endpoint (see aws_credentials.h).
 *
 * The metadata services are asked with libcurl's easy interface directly,
 * not through io/http.h: they are loopback-near, answered in milliseconds or
 * not at all, and a missing service must cost one 1 s timeout, not the
 * retries with backoff that cv_http_perform gives a store. */
#include "io/aws_credentials.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

enum { REFRESH_BEFORE_S = 300 };

/* The variables whose values decide the configuration (the cache's key). */
static const char *const ENV_KEYS[] = {
    "AWS_NO_SIGN_REQUEST", "CONVEYOR_S3_ANONYMOUS", "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_REGION", "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_EC2_METADATA_DISABLED",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN", "HOME",
};

typedef enum Kind { KIND_ANONYMOUS, KIND_STATIC, KIND_CONTAINER, KIND_IMDS } Kind;

struct CvAwsConfig {
    atomic_int refs;
    CvAwsConfig *next_live; /* the list of live configurations (fork: their locks) */
    CvAwsConfig *prev_live;
    char *env_key;          /* the environment this was resolved from */
    char region[64];
    char *endpoint;
    bool custom_endpoint;
    Kind kind;
    char source[256];
    pthread_mutex_t mu;     /* guards the keys below (metadata refresh) */
    CvAwsCredentials cred;
    long long expires;      /* Unix seconds; 0: never */
    long long last_refresh; /* a failing service is asked again at most every 10 s */
    char *metadata_url;     /* container or IMDS base, for refreshes */
    char *container_token;  /* AWS_CONTAINER_AUTHORIZATION_TOKEN, when set */
};

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static CvAwsConfig *cached;   /* guarded by cache_mu; holds one reference */
static CvAwsConfig *live;     /* guarded by cache_mu */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* ---- small helpers ----------------------------------------------------- */

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static void wipe_free(char *s)
{
    if (s) {
        OPENSSL_cleanse(s, strlen(s));
        free(s);
    }
}

void cv_aws_credentials_clear(CvAwsCredentials *cred)
{
    wipe_free(cred->access_key);
    wipe_free(cred->secret_key);
    wipe_free(cred->session_token);
    cred->access_key = cred->secret_key = cred->session_token = NULL;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static bool env_true(const char *name)
{
    const char *v = env(name);
    return v && strcasecmp(v, "0") != 0 && strcasecmp(v, "false") != 0 &&
           strcasecmp(v, "no") != 0 && strcasecmp(v, "off") != 0;
}

/* The cache key: every variable's value, or a marker for unset. */
static char *env_key(void)
{
    size_t len = 1;
    for (size_t i = 0; i < sizeof ENV_KEYS / sizeof *ENV_KEYS; i++) {
        const char *v = getenv(ENV_KEYS[i]);
        len += (v ? strlen(v) : 0) + 2;
    }
    char *key = malloc(len), *k = key;
    if (!key)
        return NULL;
    for (size_t i = 0; i < sizeof ENV_KEYS / sizeof *ENV_KEYS; i++) {
        const char *v = getenv(ENV_KEYS[i]);
        k += sprintf(k, "%c%s", v ? '=' : '-', v ? v : "");
        *k++ = '\x1f';
    }
    *k = '\0';
    return key;
}

/* ---- fork -------------------------------------------------------------- */

/* In the child only the forking thread runs: a lock another thread held is
 * held forever, so every lock starts afresh and the cache is dropped (the
 * child resolves again; configurations still referenced stay valid). */
static void atfork_child(void)
{
    pthread_mutex_init(&cache_mu, NULL);
    for (CvAwsConfig *c = live; c; c = c->next_live)
        pthread_mutex_init(&c->mu, NULL);
    cached = NULL; /* its reference is left behind (a small, bounded leak) */
}

static void install_atfork(void) { pthread_atfork(NULL, NULL, atfork_child); }

/* ---- profiles ---------------------------------------------------------- */

typedef struct Profile {
    char *access_key, *secret_key, *session_token, *region, *endpoint_url;
    bool found;
} Profile;

static void profile_free(Profile *p)
{
    wipe_free(p->access_key);
    wipe_free(p->secret_key);
    wipe_free(p->session_token);
    free(p->region);
    free(p->endpoint_url);
    memset(p, 0, sizeof *p);
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = '\0';
    return s;
}

/* Fill what `p` lacks from section `name` of the INI file at `path` (the
 * config file names its sections "profile NAME", but "default" as is).
 * Indented lines (a nested "s3 =" block) are skipped. A missing file is no
 * error. */
static void read_profile(const char *path, const char *name, bool config_file, Profile *p)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[4096];
    bool in = false;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == ' ' || line[0] == '\t')
            continue;
        char *t = trim(line);
        if (*t == '#' || *t == ';' || *t == '\0')
            continue;
        if (*t == '[') {
            char *end = strchr(t, ']');
            if (!end)
                continue;
            *end = '\0';
            char *sec = trim(t + 1);
            if (config_file && strncmp(sec, "profile", 7) == 0 && (sec[7] == ' ' || sec[7] == '\t'))
                sec = trim(sec + 8);
            else if (config_file && strcmp(sec, "default") != 0)
                sec = ""; /* [sso-session x], [services x]: not profiles */
            in = strcmp(sec, name) == 0;
            p->found |= in;
            continue;
        }
        char *eq = strchr(t, '=');
        if (!in || !eq)
            continue;
        *eq = '\0';
        char *k = trim(t), *v = trim(eq + 1);
        char **slot = strcmp(k, "aws_access_key_id") == 0       ? &p->access_key
                      : strcmp(k, "aws_secret_access_key") == 0 ? &p->secret_key
                      : strcmp(k, "aws_session_token") == 0     ? &p->session_token
                      : strcmp(k, "region") == 0                ? &p->region
                      : strcmp(k, "endpoint_url") == 0          ? &p->endpoint_url
                                                                : NULL;
        if (slot && !*slot && *v)
            *slot = strdup(v);
    }
    OPENSSL_cleanse(line, sizeof line);
    fclose(f);
}

/* "~/x" under HOME; other paths as they are. malloc'd. */
static char *expand_home(const char *path)
{
    const char *home = env("HOME");
    if (path[0] == '~' && path[1] == '/' && home) {
        char *out = malloc(strlen(home) + strlen(path));
        if (out)
            sprintf(out, "%s%s", home, path + 1);
        return out;
    }
    return strdup(path);
}

/* ---- the metadata services --------------------------------------------- */

typedef struct Body {
    char data[16384];
    size_t len;
} Body;

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
    Body *b = ctx;
    size_t take = size * n;
    if (take > sizeof b->data - 1 - b->len)
        return 0; /* too long for a metadata answer: fail the transfer */
    memcpy(b->data + b->len, p, take);
    b->len += take;
    b->data[b->len] = '\0';
    return take;
}

/* One request to a metadata service; the HTTP status, or 0 when it did not
 * answer within the timeouts. `header` may be NULL. */
static long metadata_request(const char *method, const char *url, const char *header, Body *b)
{
    CURL *h = curl_easy_init();
    struct curl_slist *hs = header ? curl_slist_append(NULL, header) : NULL;
    long status = 0;
    b->len = 0;
    b->data[0] = '\0';
    if (!h || (header && !hs))
        goto done;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "PUT") == 0) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 2000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*"); /* a link-local address: never via a proxy */
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
done:
    curl_slist_free_all(hs);
    if (h)
        curl_easy_cleanup(h);
    return status;
}

/* The string value of "name" in a flat JSON object, unescaped, malloc'd;
 * NULL when absent. */
static char *json_string(const char *json, const char *name)
{
    size_t nlen = strlen(name);
    for (const char *p = json; (p = strchr(p, '"')); p++) {
        if (strncmp(p + 1, name, nlen) != 0 || p[1 + nlen] != '"')
            continue;
        const char *v = p + 2 + nlen;
        while (*v == ' ' || *v == '\t' || *v == '\r' || *v == '\n')
            v++;
        if (*v++ != ':')
            continue;
        while (*v == ' ' || *v == '\t' || *v == '\r' || *v == '\n')
            v++;
        if (*v++ != '"')
            return NULL;
        char *out = malloc(strlen(v) + 1), *o = out;
        if (!out)
            return NULL;
        for (; *v && *v != '"'; v++) {
            if (*v == '\\' && v[1]) {
                v++;
                *o++ = *v == 'n' ? '\n' : *v == 't' ? '\t' : *v; /* \" \\ \/ */
            } else {
                *o++ = *v;
            }
        }
        *o = '\0';
        return out;
    }
    return NULL;
}

/* "2026-12-05T10:00:00Z" as Unix seconds; 0 when unreadable. */
static long long parse_iso8601(const char *s)
{
    struct tm tm = {0};
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                     &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
        return 0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (long long)timegm(&tm);
}

/* Keys from a metadata answer ({"AccessKeyId", "SecretAccessKey", "Token",
 * "Expiration"}) into c->cred / c->expires; false when it has none. */
static bool take_metadata_keys(CvAwsConfig *c, const char *json)
{
    char *ak = json_string(json, "AccessKeyId"), *sk = json_string(json, "SecretAccessKey");
    char *tok = json_string(json, "Token"), *exp = json_string(json, "Expiration");
    bool ok = ak && sk && *ak && *sk;
    if (tok && !*tok) { /* "Token": "": none */
        free(tok);
        tok = NULL;
    }
    if (ok) {
        cv_aws_credentials_clear(&c->cred);
        c->cred.access_key = ak;
        c->cred.secret_key = sk;
        c->cred.session_token = tok;
        c->expires = parse_iso8601(exp);
        ak = sk = tok = NULL;
    }
    wipe_free(ak);
    wipe_free(sk);
    wipe_free(tok);
    free(exp);
    return ok;
}

/* Fetch keys from c->metadata_url (c->kind says which service); true when
 * it gave some. Call with c->mu held or before c is shared. */
static bool fetch_metadata(CvAwsConfig *c)
{
    Body *b = malloc(sizeof *b);
    char url[2048], header[8192 + 64];
    bool ok = false;
    if (!b)
        return false;
    if (c->kind == KIND_CONTAINER) {
        if (c->container_token)
            snprintf(header, sizeof header, "Authorization: %s", c->container_token);
        ok = metadata_request("GET", c->metadata_url, c->container_token ? header : NULL, b) ==
                 200 &&
             take_metadata_keys(c, b->data);
        goto done;
    }
    /* IMDSv2: a session token first; a service without tokens (404/405)
     * answers IMDSv1 requests without one. */
    bool have_token = false;
    snprintf(url, sizeof url, "%s/latest/api/token", c->metadata_url);
    long st = metadata_request("PUT", url, "X-aws-ec2-metadata-token-ttl-seconds: 21600", b);
    if (st == 200 && b->len && b->len < 8192) {
        snprintf(header, sizeof header, "X-aws-ec2-metadata-token: %s", trim(b->data));
        have_token = true;
    } else if (st != 404 && st != 405) {
        goto done; /* no service (0), or one that refuses us */
    }
    snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/", c->metadata_url);
    if (metadata_request("GET", url, have_token ? header : NULL, b) != 200)
        goto done;
    char role[128];
    size_t rl = strcspn(b->data, "\r\n");
    if (rl == 0 || rl >= sizeof role)
        goto done;
    memcpy(role, b->data, rl);
    role[rl] = '\0';
    snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/%s", c->metadata_url,
             role);
    if (metadata_request("GET", url, have_token ? header : NULL, b) != 200 ||
        !take_metadata_keys(c, b->data))
        goto done;
    if (!c->source[0]) /* first fetch only: other threads read it unlocked later */
        snprintf(c->source, sizeof c->source, "instance metadata (role %s)", role);
    ok = true;
done:
    OPENSSL_cleanse(b, sizeof *b);
    OPENSSL_cleanse(header, sizeof header);
    free(b);
    return ok;
}

/* ---- resolution -------------------------------------------------------- */

static void config_free(CvAwsConfig *c)
{
    cv_aws_credentials_clear(&c->cred);
    pthread_mutex_destroy(&c->mu);
    free(c->env_key);
    free(c->endpoint);
    free(c->metadata_url);
    wipe_free(c->container_token);
    free(c);
}

/* A new configuration for the current environment (not yet shared). */
static CvStatus resolve(char *key, CvAwsConfig **out)
{
    Profile prof = {0};
    char *cred_path = NULL, *conf_path = NULL;
    CvStatus s = CV_STATUS_OK;
    CvAwsConfig *c = calloc(1, sizeof *c);
    if (!c) {
        free(key);
        return cv_error_nomem();
    }
    atomic_init(&c->refs, 1);
    pthread_mutex_init(&c->mu, NULL);
    c->env_key = key;

    const char *profile = env("AWS_PROFILE") ? env("AWS_PROFILE") : env("AWS_DEFAULT_PROFILE");
    const char *cred_shown = env("AWS_SHARED_CREDENTIALS_FILE") ? env("AWS_SHARED_CREDENTIALS_FILE")
                                                                : "~/.aws/credentials";
    const char *conf_shown = env("AWS_CONFIG_FILE") ? env("AWS_CONFIG_FILE") : "~/.aws/config";
    if (!(cred_path = expand_home(cred_shown)) || !(conf_path = expand_home(conf_shown))) {
        s = cv_error_nomem();
        goto done;
    }
    read_profile(cred_path, profile ? profile : "default", false, &prof);
    bool in_cred_file = prof.access_key && prof.secret_key;
    read_profile(conf_path, profile ? profile : "default", true, &prof);
    if (profile && !prof.found) {
        s = cv_error(CV_INVALID_ARGUMENT,
                     "s3: AWS_PROFILE names profile '%s', which is in neither %s nor %s", profile,
                     cred_shown, conf_shown);
        goto done;
    }

    /* Region and endpoint. */
    const char *region = env("AWS_REGION")           ? env("AWS_REGION")
                         : env("AWS_DEFAULT_REGION") ? env("AWS_DEFAULT_REGION")
                         : prof.region               ? prof.region
                                                     : "us-east-1";
    snprintf(c->region, sizeof c->region, "%s", region);
    const char *endpoint = env("AWS_ENDPOINT_URL_S3") ? env("AWS_ENDPOINT_URL_S3")
                           : env("AWS_ENDPOINT_URL")  ? env("AWS_ENDPOINT_URL")
                                                      : prof.endpoint_url;
    c->custom_endpoint = endpoint != NULL;
    size_t elen = endpoint ? strlen(endpoint) : 0;
    if (!(c->endpoint = malloc(elen + sizeof c->region + 64))) {
        s = cv_error_nomem();
        goto done;
    }
    if (endpoint)
        sprintf(c->endpoint, "%s%s", strstr(endpoint, "://") ? "" : "https://", endpoint);
    else
        sprintf(c->endpoint, "https://s3.%s.amazonaws.com", c->region);
    for (size_t n = strlen(c->endpoint); n && c->endpoint[n - 1] == '/';)
        c->endpoint[--n] = '\0';

    /* Credentials. */
    const char *rel = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    const char *full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    if (env_true("AWS_NO_SIGN_REQUEST") || env_true("CONVEYOR_S3_ANONYMOUS")) {
        c->kind = KIND_ANONYMOUS;
        snprintf(c->source, sizeof c->source, "anonymous (%s)",
                 env_true("AWS_NO_SIGN_REQUEST") ? "AWS_NO_SIGN_REQUEST" : "CONVEYOR_S3_ANONYMOUS");
    } else if (env("AWS_ACCESS_KEY_ID") && env("AWS_SECRET_ACCESS_KEY")) {
        c->kind = KIND_STATIC;
        c->cred.access_key = dup_or_null(env("AWS_ACCESS_KEY_ID"));
        c->cred.secret_key = dup_or_null(env("AWS_SECRET_ACCESS_KEY"));
        c->cred.session_token = dup_or_null(env("AWS_SESSION_TOKEN"));
        snprintf(c->source, sizeof c->source, "the environment (AWS_ACCESS_KEY_ID)");
    } else if (prof.access_key && prof.secret_key) {
        c->kind = KIND_STATIC;
        c->cred.access_key = prof.access_key;
        c->cred.secret_key = prof.secret_key;
        c->cred.session_token = prof.session_token;
        prof.access_key = prof.secret_key = prof.session_token = NULL;
        snprintf(c->source, sizeof c->source, "profile '%s' in %s", profile ? profile : "default",
                 in_cred_file ? cred_shown : conf_shown);
    } else if (rel || full) {
        c->kind = KIND_CONTAINER;
        size_t n = (rel ? strlen(rel) : strlen(full)) + 32;
        if (!(c->metadata_url = malloc(n))) {
            s = cv_error_nomem();
            goto done;
        }
        snprintf(c->metadata_url, n, "%s%s", rel ? "http://169.254.170.2" : "", rel ? rel : full);
        c->container_token = dup_or_null(env("AWS_CONTAINER_AUTHORIZATION_TOKEN"));
        snprintf(c->source, sizeof c->source, "container credentials (%s)",
                 rel ? "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"
                     : "AWS_CONTAINER_CREDENTIALS_FULL_URI");
        if (!fetch_metadata(c)) {
            c->kind = KIND_ANONYMOUS;
            snprintf(c->source, sizeof c->source,
                     "anonymous (the container credentials endpoint did not answer)");
        }
    } else if (!(env("AWS_EC2_METADATA_DISABLED") &&
                 strcasecmp(env("AWS_EC2_METADATA_DISABLED"), "true") == 0)) {
        c->kind = KIND_IMDS;
        const char *base = env("AWS_EC2_METADATA_SERVICE_ENDPOINT")
                               ? env("AWS_EC2_METADATA_SERVICE_ENDPOINT")
                               : "http://169.254.169.254";
        if (!(c->metadata_url = strdup(base))) {
            s = cv_error_nomem();
            goto done;
        }
        for (size_t n = strlen(c->metadata_url); n && c->metadata_url[n - 1] == '/';)
            c->metadata_url[--n] = '\0';
        if (!fetch_metadata(c)) {
            c->kind = KIND_ANONYMOUS;
            snprintf(c->source, sizeof c->source, "anonymous (no credentials were found)");
        }
    } else {
        c->kind = KIND_ANONYMOUS;
        snprintf(c->source, sizeof c->source, "anonymous (no credentials were found)");
    }
    if (c->kind == KIND_STATIC && (!c->cred.access_key || !c->cred.secret_key))
        s = cv_error_nomem();
done:
    profile_free(&prof);
    free(cred_path);
    free(conf_path);
    if (s) {
        config_free(c);
        c = NULL;
    }
    *out = c;
    return s;
}

CvStatus cv_aws_config_get(CvAwsConfig **out)
{
    pthread_once(&atfork_once, install_atfork);
    *out = NULL;
    char *key = env_key();
    if (!key)
        return cv_error_nomem();
    pthread_mutex_lock(&cache_mu);
    if (cached && strcmp(cached->env_key, key) == 0) {
        atomic_fetch_add(&cached->refs, 1);
        *out = cached;
    }
    pthread_mutex_unlock(&cache_mu);
    if (*out) {
        free(key);
        return CV_STATUS_OK;
    }
    /* Resolve outside the lock (the metadata service may take a second);
     * two threads racing here both resolve, and the later one is cached. */
    CvAwsConfig *c = NULL;
    CvStatus s = resolve(key, &c);
    if (s)
        return s;
    atomic_fetch_add(&c->refs, 1); /* the cache's */
    pthread_mutex_lock(&cache_mu);
    CvAwsConfig *old = cached;
    cached = c;
    c->next_live = live;
    if (live)
        live->prev_live = c;
    live = c;
    pthread_mutex_unlock(&cache_mu);
    cv_aws_config_release(old);
    *out = c;
    return CV_STATUS_OK;
}

void cv_aws_config_release(CvAwsConfig *c)
{
    if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    pthread_mutex_lock(&cache_mu);
    if (c->prev_live)
        c->prev_live->next_live = c->next_live;
    else if (live == c)
        live = c->next_live;
    if (c->next_live)
        c->next_live->prev_live = c->prev_live;
    pthread_mutex_unlock(&cache_mu);
    config_free(c);
}

const char *cv_aws_config_region(const CvAwsConfig *c) { return c->region; }
const char *cv_aws_config_endpoint(const CvAwsConfig *c) { return c->endpoint; }
bool cv_aws_config_custom_endpoint(const CvAwsConfig *c) { return c->custom_endpoint; }
bool cv_aws_config_anonymous(const CvAwsConfig *c) { return c->kind == KIND_ANONYMOUS; }
const char *cv_aws_config_source(const CvAwsConfig *c) { return c->source; }

CvStatus cv_aws_config_credentials(CvAwsConfig *c, CvAwsCredentials *out)
{
    CvStatus s = CV_STATUS_OK;
    memset(out, 0, sizeof *out);
    if (c->kind == KIND_ANONYMOUS)
        return CV_STATUS_OK;
    pthread_mutex_lock(&c->mu);
    long long now = (long long)time(NULL);
    bool due = c->expires && c->expires - now < REFRESH_BEFORE_S && now - c->last_refresh >= 10;
    if (due) {
        c->last_refresh = now;
        fetch_metadata(c); /* on failure the old keys serve until they expire */
    }
    if (c->expires && c->expires <= now) {
        s = cv_error(CV_PERMISSION_DENIED,
                     "s3: the credentials from %s expired and could not be fetched again",
                     c->source);
        goto done;
    }
    out->access_key = dup_or_null(c->cred.access_key);
    out->secret_key = dup_or_null(c->cred.secret_key);
    out->session_token = dup_or_null(c->cred.session_token);
    if (!out->access_key || !out->secret_key || (c->cred.session_token && !out->session_token)) {
        cv_aws_credentials_clear(out);
        s = cv_error_nomem();
    }
done:
    pthread_mutex_unlock(&c->mu);
    return s;
}
