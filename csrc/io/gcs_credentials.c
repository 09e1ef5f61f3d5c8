/* The GCS credential chain and token cache (gcs_credentials.h). */
#include "io/gcs_credentials.h"

#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "core/blocking.h"
#include "core/thread.h"
#include "io/json_scan.h"

#define GCS_ENDPOINT "https://storage.googleapis.com"
#define GOOGLE_OAUTH_TOKEN_URI "https://oauth2.googleapis.com/token"
#define GCS_SCOPE "https://www.googleapis.com/auth/devstorage.read_write"
#define METADATA_TOKEN_PATH "/computeMetadata/v1/instance/service-accounts/default/token"
/* Refresh this long before the token expires. */
#define REFRESH_MARGIN_NS (300LL * 1000000000LL)
#define KEY_FILE_MAX (1 << 20)

typedef enum Kind { KIND_NONE, KIND_SERVICE_ACCOUNT, KIND_AUTHORIZED_USER, KIND_METADATA } Kind;

/* One resolved environment. pub first: a CvGcsContext* is a Context*.
 * The secrets (private key, client secret, refresh token, token) live only
 * here and in the requests built from them. */
typedef struct Context {
    CvGcsContext pub;
    struct Context *older; /* replaced contexts, kept alive */
    char *env_key;         /* the variables it was resolved from */
    unsigned long fork_gen;
    Kind kind;
    char endpoint[512];
    char source[96];
    char *client_email, *private_key, *token_uri; /* service_account */
    char *client_id, *client_secret, *refresh_token; /* authorized_user */
    char *metadata_url;
    /* The token cache: mu guards the rest. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool refreshing;
    char *token;
    int64_t expires_ns; /* CLOCK_MONOTONIC */
    uint64_t fetches;
} Context;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static Context *g_current; /* guarded by g_mu */
static Context *g_retired; /* replaced contexts, never freed */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void after_fork_child(void) {
    /* Another thread may have held the lock or been refreshing: start over
     * with a fresh lock and no context (the old ones are leaked). */
    pthread_mutex_init(&g_mu, NULL);
    g_current = NULL;
    g_retired = NULL;
}

static void install_fork_handler(void) {
    pthread_atfork(NULL, NULL, after_fork_child);
}

char *cv_gcs_percent_encode(const char *s) {
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out = malloc(3 * n + 1);
    if (out == NULL)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
    return out;
}

static const char *env(const char *name) {
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

/* The variables the chain reads, joined: a change means resolving again. */
static char *env_key(void) {
    static const char *const names[] = {"CONVEYOR_GCS_ANONYMOUS", "STORAGE_EMULATOR_HOST",
                                        "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG",
                                        "HOME", "GCE_METADATA_HOST",
                                        "CONVEYOR_GCS_OAUTH_TOKEN_URI", "CONVEYOR_GCS_ENDPOINT"};
    size_t total = 1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        total += strlen(names[i]) + 2 + (env(names[i]) ? strlen(env(names[i])) : 0);
    char *key = malloc(total);
    if (key == NULL)
        return NULL;
    key[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = env(names[i]);
        strcat(key, names[i]);
        strcat(key, "=");
        strcat(key, v ? v : "");
        strcat(key, "\n");
    }
    return key;
}

static char *base64url(const unsigned char *data, size_t n) {
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    if (out == NULL)
        return NULL;
    int len = EVP_EncodeBlock((unsigned char *)out, data, (int)n);
    while (len > 0 && out[len - 1] == '=')
        len--;
    out[len] = '\0';
    for (int i = 0; i < len; i++)
        out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
    return out;
}

/* A JWT for the service account: header.claims.signature, RS256. */
static CvStatus make_jwt(const Context *c, char **out) {
    CvStatus st = CV_STATUS_OK;
    char *header = NULL, *claims = NULL, *sig64 = NULL, *signing = NULL;
    unsigned char *sig = NULL;
    BIO *bio = NULL;
    EVP_PKEY *key = NULL;
    EVP_MD_CTX *md = NULL;
    char claims_json[2048];
    *out = NULL;

    static const char header_json[] = "{\"alg\":\"RS256\",\"typ\":\"JWT\"}";
    long long iat = (long long)time(NULL);
    int cn = snprintf(claims_json, sizeof claims_json,
                      "{\"iss\":\"%s\",\"scope\":\"%s\",\"aud\":\"%s\",\"iat\":%lld,\"exp\":%lld}",
                      c->client_email, GCS_SCOPE, c->token_uri, iat, iat + 3600);
    if (cn < 0 || (size_t)cn >= sizeof claims_json) {
        st = cv_error(CV_INVALID_ARGUMENT, "%s: client_email or token_uri is too long", c->source);
        goto done;
    }
    header = base64url((const unsigned char *)header_json, strlen(header_json));
    claims = base64url((const unsigned char *)claims_json, (size_t)cn);
    if (header == NULL || claims == NULL)
        goto nomem;
    size_t sn = strlen(header) + 1 + strlen(claims) + 1;
    signing = malloc(sn);
    if (signing == NULL)
        goto nomem;
    snprintf(signing, sn, "%s.%s", header, claims);

    bio = BIO_new_mem_buf(c->private_key, -1);
    key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    if (key == NULL) {
        st = cv_error(CV_INVALID_ARGUMENT, "%s: private_key is not a PEM private key", c->source);
        goto done;
    }
    md = EVP_MD_CTX_new();
    size_t siglen = 0;
    if (md == NULL || EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
        EVP_DigestSign(md, NULL, &siglen, (const unsigned char *)signing, strlen(signing)) != 1 ||
        (sig = malloc(siglen)) == NULL ||
        EVP_DigestSign(md, sig, &siglen, (const unsigned char *)signing, strlen(signing)) != 1) {
        st = cv_error(CV_INTERNAL, "%s: signing the token request failed", c->source);
        goto done;
    }
    sig64 = base64url(sig, siglen);
    if (sig64 == NULL)
        goto nomem;
    size_t jn = strlen(signing) + 1 + strlen(sig64) + 1;
    *out = malloc(jn);
    if (*out == NULL)
        goto nomem;
    snprintf(*out, jn, "%s.%s", signing, sig64);
    goto done;
nomem:
    st = cv_error_nomem();
done:
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(key);
    BIO_free(bio);
    free(header);
    free(claims);
    free(signing);
    free(sig);
    free(sig64);
    return st;
}

/* Append "&name=value" (value percent-encoded) to a malloc'd form body. */
static bool form_add(char **body, const char *name, const char *value) {
    char *enc = cv_gcs_percent_encode(value);
    if (enc == NULL)
        return false;
    size_t old = *body ? strlen(*body) : 0;
    size_t n = old + strlen(name) + strlen(enc) + 3;
    char *b = malloc(n);
    if (b == NULL) {
        free(enc);
        return false;
    }
    snprintf(b, n, "%s%s%s=%s", *body ? *body : "", old ? "&" : "", name, enc);
    if (*body) {
        OPENSSL_cleanse(*body, old);
        free(*body);
    }
    OPENSSL_cleanse(enc, strlen(enc));
    free(enc);
    *body = b;
    return true;
}

/* Ask for a new token: *token malloc'd, *expires_in in seconds. */
static CvStatus fetch_token(Context *c, char **token, int64_t *expires_in) {
    CvStatus st = CV_STATUS_OK;
    CvHttpHeaders headers = {0};
    CvHttpResponse resp = {0};
    char *body = NULL, *jwt = NULL, *err = NULL;
    const char *url = c->kind == KIND_METADATA ? c->metadata_url : c->token_uri;
    CvHttpRequest req = {.method = "POST", .url = url, .headers = &headers};
    *token = NULL;

    if (c->kind == KIND_METADATA) {
        req.method = "GET";
        st = cv_http_headers_add(&headers, "Metadata-Flavor: Google");
    } else {
        st = cv_http_headers_add(&headers, "Content-Type: application/x-www-form-urlencoded");
        if (st == CV_STATUS_OK && c->kind == KIND_SERVICE_ACCOUNT) {
            st = make_jwt(c, &jwt);
            if (st == CV_STATUS_OK &&
                (!form_add(&body, "grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer") ||
                 !form_add(&body, "assertion", jwt)))
                st = cv_error_nomem();
        } else if (st == CV_STATUS_OK) {
            if (!form_add(&body, "grant_type", "refresh_token") ||
                !form_add(&body, "client_id", c->client_id) ||
                !form_add(&body, "client_secret", c->client_secret) ||
                !form_add(&body, "refresh_token", c->refresh_token))
                st = cv_error_nomem();
        }
        req.body = body;
        req.body_size = body ? strlen(body) : 0;
    }
    if (st != CV_STATUS_OK)
        goto done;
    st = cv_http_perform(&req, &resp);
    if (st != CV_STATUS_OK) {
        st = cv_status_prefix(st, "getting an access token from %s: ", c->source);
        goto done;
    }
    CvJsonSpan json = {resp.body, resp.body_size};
    if (resp.status != 200) {
        /* The OAuth error code ("invalid_grant") is safe to show; the body's
         * other fields are not looked at. */
        cv_json_string(json, "error", &err);
        st = cv_error(resp.status == 400 || resp.status == 401 || resp.status == 403
                          ? CV_PERMISSION_DENIED
                          : resp.status == 404 ? CV_NOT_FOUND : CV_UNAVAILABLE,
                      "getting an access token from %s failed: HTTP %ld%s%s%s from %s", c->source,
                      resp.status, err ? " (" : "", err ? err : "", err ? ")" : "", url);
        goto done;
    }
    if (!cv_json_string(json, "access_token", token) || !cv_json_int(json, "expires_in", expires_in)) {
        st = cv_error(CV_UNAVAILABLE, "getting an access token from %s: the answer from %s has no "
                      "access_token or expires_in", c->source, url);
        goto done;
    }
done:
    if (st != CV_STATUS_OK && *token) {
        OPENSSL_cleanse(*token, strlen(*token));
        free(*token);
        *token = NULL;
    }
    if (body) {
        OPENSSL_cleanse(body, strlen(body));
        free(body);
    }
    if (jwt) {
        OPENSSL_cleanse(jwt, strlen(jwt));
        free(jwt);
    }
    if (resp.body)
        OPENSSL_cleanse(resp.body, resp.body_size);
    free(err);
    cv_http_response_free(&resp);
    cv_http_headers_free(&headers);
    return st;
}

/* A copy of a token valid for more than the margin, refreshing it when
 * needed; one refresh at a time. */
static CvStatus get_token(Context *c, char **out) {
    CvStatus st = CV_STATUS_OK;
    *out = NULL;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        int64_t now = cv_now_ns();
        if (c->token != NULL && now < c->expires_ns - REFRESH_MARGIN_NS)
            break; /* fresh */
        if (!c->refreshing)
            break; /* this thread refreshes */
        if (c->token != NULL && now < c->expires_ns)
            break; /* another thread refreshes; this one is still good */
        cv_blocking_begin();
        st = cv_wait(&c->cv, &c->mu);
        cv_blocking_end();
        if (st != CV_STATUS_OK || cv_blocking_cancelled()) {
            pthread_mutex_unlock(&c->mu);
            return st ? st : cv_error(CV_CANCELLED, "cancelled while waiting for a GCS token");
        }
    }
    int64_t now = cv_now_ns();
    if (c->token != NULL && (now < c->expires_ns - REFRESH_MARGIN_NS || c->refreshing)) {
        *out = strdup(c->token);
        pthread_mutex_unlock(&c->mu);
        return *out ? CV_STATUS_OK : cv_error_nomem();
    }
    c->refreshing = true;
    pthread_mutex_unlock(&c->mu);

    char *token = NULL;
    int64_t expires_in = 0;
    st = fetch_token(c, &token, &expires_in);

    pthread_mutex_lock(&c->mu);
    c->refreshing = false;
    if (st == CV_STATUS_OK) {
        if (c->token) {
            OPENSSL_cleanse(c->token, strlen(c->token));
            free(c->token);
        }
        c->token = token;
        c->expires_ns = cv_now_ns() + expires_in * 1000000000LL;
        c->fetches++;
        *out = strdup(token);
        if (*out == NULL)
            st = cv_error_nomem();
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return st;
}

static CvStatus sign_bearer(void *ctx, const CvHttpRequest *req, CvHttpHeaders *out) {
    (void)req;
    char *token = NULL;
    CvStatus st = get_token(ctx, &token);
    if (st == CV_STATUS_OK) {
        st = cv_http_headers_add(out, "Authorization: Bearer %s", token);
        OPENSSL_cleanse(token, strlen(token));
        free(token);
    }
    return st;
}

static CvStatus read_key_file(const char *path, char **data, size_t *size) {
    CvStatus st = CV_STATUS_OK;
    FILE *f = fopen(path, "rb");
    *data = NULL;
    if (f == NULL)
        return cv_error(CV_NOT_FOUND, "GCS credentials: cannot open %s", path);
    *data = malloc(KEY_FILE_MAX + 1);
    if (*data == NULL) {
        st = cv_error_nomem();
        goto done;
    }
    *size = fread(*data, 1, KEY_FILE_MAX + 1, f);
    if (ferror(f) || *size > KEY_FILE_MAX) {
        st = cv_error(CV_INVALID_ARGUMENT, "GCS credentials: cannot read %s (or it is over 1 MiB)",
                      path);
        goto done;
    }
    (*data)[*size] = '\0';
done:
    fclose(f);
    if (st != CV_STATUS_OK) {
        free(*data);
        *data = NULL;
    }
    return st;
}

/* Fill c from a key file ("service_account" or "authorized_user"). */
static CvStatus load_key_file(Context *c, const char *path) {
    char *data = NULL, *type = NULL;
    size_t size = 0;
    CvStatus st = read_key_file(path, &data, &size);
    if (st != CV_STATUS_OK)
        return st;
    CvJsonSpan json = {data, size};
    if (!cv_json_string(json, "type", &type)) {
        st = cv_error(CV_INVALID_ARGUMENT, "GCS credentials: %s is not a JSON key file with a "
                      "\"type\"", path);
    } else if (strcmp(type, "service_account") == 0) {
        c->kind = KIND_SERVICE_ACCOUNT;
        if (!cv_json_string(json, "client_email", &c->client_email) ||
            !cv_json_string(json, "private_key", &c->private_key))
            st = cv_error(CV_INVALID_ARGUMENT, "GCS credentials: the service-account key %s has "
                          "no client_email or private_key", path);
        else if (!cv_json_string(json, "token_uri", &c->token_uri) &&
                 (c->token_uri = strdup(GOOGLE_OAUTH_TOKEN_URI)) == NULL)
            st = cv_error_nomem();
    } else if (strcmp(type, "authorized_user") == 0) {
        c->kind = KIND_AUTHORIZED_USER;
        const char *hook = env("CONVEYOR_GCS_OAUTH_TOKEN_URI");
        if (!cv_json_string(json, "client_id", &c->client_id) ||
            !cv_json_string(json, "client_secret", &c->client_secret) ||
            !cv_json_string(json, "refresh_token", &c->refresh_token))
            st = cv_error(CV_INVALID_ARGUMENT, "GCS credentials: the user credentials %s lack "
                          "client_id, client_secret or refresh_token", path);
        else if (!cv_json_string(json, "token_uri", &c->token_uri) &&
                 (c->token_uri = strdup(hook ? hook : GOOGLE_OAUTH_TOKEN_URI)) == NULL)
            st = cv_error_nomem();
    } else {
        st = cv_error(CV_UNIMPLEMENTED, "GCS credentials: %s has type \"%s\"; conveyor reads "
                      "\"service_account\" and \"authorized_user\"", path, type);
    }
    OPENSSL_cleanse(data, size);
    free(data);
    free(type);
    return st;
}

static bool file_exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f)
        fclose(f);
    return f != NULL;
}

/* Whether metadata.google.internal resolves: off Google Cloud it does not,
 * and asking it (with retries) would only cost time. */
static bool metadata_host_resolves(const char *host) {
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    cv_blocking_begin();
    int rc = getaddrinfo(host, "80", &hints, &res);
    cv_blocking_end();
    if (res)
        freeaddrinfo(res);
    return rc == 0;
}

static void context_free(Context *c) {
    if (c == NULL)
        return;
    free(c->env_key);
    free(c->client_email);
    if (c->private_key) {
        OPENSSL_cleanse(c->private_key, strlen(c->private_key));
        free(c->private_key);
    }
    free(c->token_uri);
    free(c->client_id);
    if (c->client_secret) {
        OPENSSL_cleanse(c->client_secret, strlen(c->client_secret));
        free(c->client_secret);
    }
    if (c->refresh_token) {
        OPENSSL_cleanse(c->refresh_token, strlen(c->refresh_token));
        free(c->refresh_token);
    }
    free(c->metadata_url);
    if (c->token) {
        OPENSSL_cleanse(c->token, strlen(c->token));
        free(c->token);
    }
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

static void set_anonymous(Context *c) {
    c->kind = KIND_NONE;
    snprintf(c->source, sizeof c->source, "anonymous");
}

/* Resolve the chain for the environment as it is (key = env_key()). */
static CvStatus resolve(char *key, Context **out) {
    CvStatus st = CV_STATUS_OK;
    Context *c = calloc(1, sizeof *c);
    *out = NULL;
    if (c == NULL) {
        free(key);
        return cv_error_nomem();
    }
    c->env_key = key;
    c->fork_gen = cv_fork_generation();
    pthread_mutex_init(&c->mu, NULL);
    cv_cond_init(&c->cv);
    snprintf(c->endpoint, sizeof c->endpoint, "%s", GCS_ENDPOINT);

    const char *anon = env("CONVEYOR_GCS_ANONYMOUS");
    const char *emulator = env("STORAGE_EMULATOR_HOST");
    const char *gac = env("GOOGLE_APPLICATION_CREDENTIALS");
    const char *endpoint = emulator ? emulator : env("CONVEYOR_GCS_ENDPOINT");
    if (endpoint != NULL) {
        snprintf(c->endpoint, sizeof c->endpoint, "%s%s",
                 strstr(endpoint, "://") ? "" : "http://", endpoint);
        size_t n = strlen(c->endpoint);
        while (n > 0 && c->endpoint[n - 1] == '/')
            c->endpoint[--n] = '\0';
    }
    if (anon != NULL && strcmp(anon, "0") != 0) {
        set_anonymous(c);
    } else if (emulator != NULL) {
        c->kind = KIND_NONE;
        snprintf(c->source, sizeof c->source, "the emulator at STORAGE_EMULATOR_HOST");
    } else if (gac != NULL) {
        st = load_key_file(c, gac);
        snprintf(c->source, sizeof c->source, "%s",
                 c->kind == KIND_AUTHORIZED_USER
                     ? "the user credentials in $GOOGLE_APPLICATION_CREDENTIALS"
                     : "the service-account key in $GOOGLE_APPLICATION_CREDENTIALS");
    } else {
        char adc[4096];
        const char *config = env("CLOUDSDK_CONFIG"), *home = env("HOME");
        if (config)
            snprintf(adc, sizeof adc, "%s/application_default_credentials.json", config);
        else
            snprintf(adc, sizeof adc, "%s/.config/gcloud/application_default_credentials.json",
                     home ? home : "");
        if ((config || home) && file_exists(adc)) {
            st = load_key_file(c, adc);
            snprintf(c->source, sizeof c->source, "gcloud application-default credentials");
        } else {
            const char *md = env("GCE_METADATA_HOST");
            c->kind = KIND_METADATA;
            snprintf(c->source, sizeof c->source, "the metadata server");
            if (md == NULL && !metadata_host_resolves("metadata.google.internal")) {
                set_anonymous(c);
            } else {
                const char *host = md ? md : "metadata.google.internal";
                size_t n = strlen(host) + sizeof METADATA_TOKEN_PATH + 16;
                c->metadata_url = malloc(n);
                if (c->metadata_url == NULL) {
                    st = cv_error_nomem();
                } else {
                    snprintf(c->metadata_url, n, "%s%s%s", strstr(host, "://") ? "" : "http://",
                             host, METADATA_TOKEN_PATH);
                    /* Asked once: without an answer the process is anonymous
                     * until the environment changes. */
                    char *token = NULL;
                    CvStatus probe = get_token(c, &token);
                    if (probe != CV_STATUS_OK) {
                        CvCode code = probe->code;
                        cv_status_free(probe);
                        if (code == CV_CANCELLED || code == CV_INTERRUPTED)
                            st = cv_error(code, "cancelled while asking the metadata server");
                        else
                            set_anonymous(c);
                    }
                    if (token) {
                        OPENSSL_cleanse(token, strlen(token));
                        free(token);
                    }
                }
            }
        }
    }
    if (st != CV_STATUS_OK) {
        context_free(c);
        return st;
    }
    c->pub.endpoint = c->endpoint;
    c->pub.auth.source = c->source;
    c->pub.auth.ctx = c;
    c->pub.auth.sign = c->kind == KIND_NONE ? NULL : sign_bearer;
    *out = c;
    return CV_STATUS_OK;
}

CvStatus cv_gcs_context(const CvGcsContext **out) {
    pthread_once(&g_once, install_fork_handler);
    char *key = env_key();
    if (key == NULL)
        return cv_error_nomem();
    pthread_mutex_lock(&g_mu);
    Context *c = g_current;
    if (c != NULL && c->fork_gen == cv_fork_generation() && strcmp(c->env_key, key) == 0) {
        pthread_mutex_unlock(&g_mu);
        free(key);
        *out = &c->pub;
        return CV_STATUS_OK;
    }
    pthread_mutex_unlock(&g_mu);

    /* Resolve outside the lock (it may ask the metadata server); two
     * threads may resolve at once, and the later one's context wins. */
    CvStatus st = resolve(key, &c);
    if (st != CV_STATUS_OK)
        return st;
    pthread_mutex_lock(&g_mu);
    if (g_current != NULL) {
        g_current->older = g_retired;
        g_retired = g_current;
    }
    g_current = c;
    pthread_mutex_unlock(&g_mu);
    *out = &c->pub;
    return CV_STATUS_OK;
}

void cv_gcs_credentials_reset(void) {
    pthread_mutex_lock(&g_mu);
    if (g_current != NULL) {
        g_current->older = g_retired;
        g_retired = g_current;
        g_current = NULL;
    }
    pthread_mutex_unlock(&g_mu);
}

uint64_t cv_gcs_token_fetches(void) {
    uint64_t n = 0;
    pthread_mutex_lock(&g_mu);
    Context *c = g_current;
    pthread_mutex_unlock(&g_mu);
    if (c != NULL) {
        pthread_mutex_lock(&c->mu);
        n = c->fetches;
        pthread_mutex_unlock(&c->mu);
    }
    return n;
}
