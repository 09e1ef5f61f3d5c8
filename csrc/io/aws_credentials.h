/* Where S3 requests get their credentials, region and endpoint: found as
 * boto3 and the AWS CLI find them.
 *
 * Credentials, first found wins:
 *   1. anonymous (unsigned requests) when AWS_NO_SIGN_REQUEST or
 *      CONVEYOR_S3_ANONYMOUS is set to a true value;
 *   2. AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
 *   3. profile AWS_PROFILE ("default") in AWS_SHARED_CREDENTIALS_FILE
 *      (~/.aws/credentials), then in AWS_CONFIG_FILE (~/.aws/config, section
 *      "[profile NAME]", or "[default]");
 *   4. the container credentials endpoint (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI
 *      or _FULL_URI with AWS_CONTAINER_AUTHORIZATION_TOKEN);
 *   5. the EC2 instance metadata service, IMDSv2 (a PUT for a token, then the
 *      role's credentials; 1 s timeouts; AWS_EC2_METADATA_SERVICE_ENDPOINT
 *      moves it, AWS_EC2_METADATA_DISABLED=true skips it);
 *   6. anonymous.
 * Metadata credentials expire: they are fetched again 5 minutes before.
 * Region: AWS_REGION, AWS_DEFAULT_REGION, the profile's `region`, else
 * us-east-1. Endpoint: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's
 * `endpoint_url` (path-style addressing: http://host:port/bucket/key), else
 * https://s3.REGION.amazonaws.com (virtual-hosted: bucket.s3....).
 *
 * Caching: one resolved configuration per process, kept while the
 * environment variables above (and HOME) keep their values; a change to any
 * of them resolves again at the next call (so tests may set them per test).
 * A profile file edited in place under the same name is not noticed. The
 * metadata service is asked at most once per resolution (then on expiry).
 * Checking the environment costs about 4 us a call (measured: 19 getenv and a
 * compare under a lock), against a request's milliseconds.
 *
 * Thread-safety: every function may be called from any thread. Fork: a child
 * process starts with an empty cache and usable locks.
 *
 * Nothing here puts a key, secret or token in an error, a log or `source`. */
#ifndef CV_AWS_CREDENTIALS_H
#define CV_AWS_CREDENTIALS_H

#include <stdbool.h>

#include "core/status.h"

typedef struct CvAwsConfig CvAwsConfig;

/* This moment's keys, owned by the caller: free with cv_aws_credentials_clear
 * (which wipes them). session_token is NULL when there is none. */
typedef struct CvAwsCredentials {
    char *access_key;
    char *secret_key;
    char *session_token;
} CvAwsCredentials;

/* The configuration for the current environment, a new reference (release
 * it). Fails only when a named profile (AWS_PROFILE) is in neither file, or
 * out of memory; metadata failures fall through to anonymous. May wait on
 * the metadata service (resolution only). */
CvStatus cv_aws_config_get(CvAwsConfig **out);
void cv_aws_config_release(CvAwsConfig *c); /* NULL-safe */

const char *cv_aws_config_region(const CvAwsConfig *c);
/* The endpoint without a trailing '/': "https://s3.us-east-1.amazonaws.com"
 * or the custom one ("http://127.0.0.1:8333"). */
const char *cv_aws_config_endpoint(const CvAwsConfig *c);
bool cv_aws_config_custom_endpoint(const CvAwsConfig *c); /* path-style addressing */
bool cv_aws_config_anonymous(const CvAwsConfig *c);      /* send requests unsigned */
/* Where the credentials came from, for messages: "the environment
 * (AWS_ACCESS_KEY_ID)", "profile 'x' in ~/.aws/credentials", "instance
 * metadata (role r)", "anonymous (...)". Lives as long as `c`. */
const char *cv_aws_config_source(const CvAwsConfig *c);

/* Copy the current keys into *out (refreshed first when metadata credentials
 * expire within 5 minutes). Anonymous configurations give NULL fields.
 * PERMISSION_DENIED naming the source when expired credentials could not be
 * refreshed. */
CvStatus cv_aws_config_credentials(CvAwsConfig *c, CvAwsCredentials *out);
void cv_aws_credentials_clear(CvAwsCredentials *cred);

#endif
