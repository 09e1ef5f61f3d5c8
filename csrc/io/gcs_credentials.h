/* Google Cloud Storage: where the endpoint and the credentials come from,
 * found as Google's own client libraries find them, and the access token
 * kept fresh.
 *
 * The chain, first match wins (resolved lazily, on the first gs:// request,
 * and again whenever one of the variables below changes):
 *   CONVEYOR_GCS_ANONYMOUS=1        anonymous (no Authorization header);
 *   STORAGE_EMULATOR_HOST           that endpoint (http://host:port when it
 *                                   has no scheme), no credentials;
 *   GOOGLE_APPLICATION_CREDENTIALS  a JSON key file: "service_account" (an
 *                                   RS256-signed JWT exchanged at the key's
 *                                   token_uri) or "authorized_user" (a
 *                                   refresh token exchanged at Google's OAuth
 *                                   endpoint, or the file's token_uri);
 *   gcloud's application-default credentials file
 *                                   ($CLOUDSDK_CONFIG, else ~/.config/gcloud,
 *                                   /application_default_credentials.json);
 *   the GCE metadata server         (GCE_METADATA_HOST, else
 *                                   metadata.google.internal; asked once, a
 *                                   failure is remembered);
 *   anonymous                       (public buckets).
 * CONVEYOR_GCS_ENDPOINT replaces https://storage.googleapis.com (a private
 * endpoint, a proxy) and keeps the credential chain, unlike
 * STORAGE_EMULATOR_HOST. Test hook: CONVEYOR_GCS_OAUTH_TOKEN_URI replaces
 * Google's OAuth token endpoint for "authorized_user" credentials without a
 * token_uri.
 *
 * Tokens are cached with their expiry and refreshed 5 minutes before it, one
 * refresh at a time: other threads keep using a still-valid token, or wait
 * (sliced, cancellable) for the refresh. No token, key or secret is ever put
 * in a message; `auth.source` says where the credentials came from.
 *
 * Ownership: a context lives as long as the process (a replaced one is kept,
 * since requests in flight may still use its auth). Thread-safety: every
 * function may be called from any thread. Fork: a child resolves again. */
#ifndef CV_GCS_CREDENTIALS_H
#define CV_GCS_CREDENTIALS_H

#include <stdint.h>

#include "core/status.h"
#include "io/http.h"

typedef struct CvGcsContext {
    /* "https://storage.googleapis.com", or the emulator's base URL; no
     * trailing '/'. */
    const char *endpoint;
    /* sign() adds "Authorization: Bearer ..."; NULL sign for the emulator
     * and anonymous access. */
    CvHttpAuth auth;
} CvGcsContext;

/* The context for the environment as it is now. Fails (naming the key file,
 * never its contents) when GOOGLE_APPLICATION_CREDENTIALS names a file that
 * cannot be used; such a failure is not remembered. */
CvStatus cv_gcs_context(const CvGcsContext **out);

/* Forget the resolved context (tests; the next call resolves again). */
void cv_gcs_credentials_reset(void);

/* How many tokens the current context has fetched (tests: a token is reused
 * until near its expiry). */
uint64_t cv_gcs_token_fetches(void);

/* s percent-encoded for a URL path segment or query value: everything but
 * RFC 3986's unreserved characters, '/' included. malloc'd; NULL when out
 * of memory. */
char *cv_gcs_percent_encode(const char *s);

#endif
