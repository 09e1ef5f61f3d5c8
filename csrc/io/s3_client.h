/* The S3 request layer under io/fs_s3.c: a call's configuration (the
 * credential chain's answer and the CvHttpAuth that signs with SigV4),
 * s3:// locations, endpoint addressing, requests through io/http.h, errors
 * naming the s3:// URL, and the small XML scanner S3's answers need.
 *
 * Thread-safety: every function from any thread; a CvS3 from the threads of
 * one call (or one open file) at a time. */
#ifndef CV_S3_CLIENT_H
#define CV_S3_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "io/aws_credentials.h"
#include "io/fs.h"
#include "io/http.h"

/* One call's (or one open file's) configuration. `auth` signs with the
 * configuration's keys (sign is NULL when anonymous); both live until
 * cv_s3_end, and the struct must not move while a request or stream uses
 * auth. */
typedef struct CvS3 {
    CvAwsConfig *conf; /* a reference */
    CvHttpAuth auth;   /* ctx: conf */
} CvS3;

CvStatus cv_s3_begin(CvS3 *s3);
void cv_s3_end(CvS3 *s3); /* safe on a zeroed or ended CvS3 */

/* s3://bucket/key split; key has no leading '/' ("" at the bucket). */
typedef struct CvS3Loc {
    char *bucket;
    char *key;
} CvS3Loc;

/* INVALID_ARGUMENT for a URL that is not s3://BUCKET[/KEY]. */
CvStatus cv_s3_loc_parse(const char *url, CvS3Loc *l);
void cv_s3_loc_free(CvS3Loc *l);

/* The endpoint's URL for bucket/key (key "": the bucket) with an encoded
 * query (NULL: none); malloc'd, NULL when out of memory. */
char *cv_s3_endpoint_url(const CvS3 *s3, const char *bucket, const char *key, const char *query);
/* "s3://bucket/key" for messages; malloc'd. */
char *cv_s3_display_url(const char *bucket, const char *key);

/* One request and its answer (free resp whatever the result); the body is
 * hashed once here for the signature. OK with any HTTP status. */
CvStatus cv_s3_request(CvS3 *s3, const char *method, const char *bucket, const char *key,
                       const char *query, const CvHttpHeaders *headers, const void *body,
                       size_t body_size, CvHttpResponse *resp);
/* cv_http_error naming s3://bucket/key and the credentials' source. */
CvStatus cv_s3_error(const CvS3 *s3, const CvHttpResponse *resp, const char *bucket,
                     const char *key);
/* A 200 answer that carries an <Error> (CompleteMultipartUpload, CopyObject):
 * UNAVAILABLE naming the store's code and `what`; OK otherwise. */
CvStatus cv_s3_error_in_body(const CvHttpResponse *resp, const char *bucket, const char *key,
                             const char *what);

/* The raw (still escaped) content of the next <tag>...</tag> in [*p, end)
 * as [*a, *b), moving *p past it; false when there is none. */
bool cv_s3_xml_span(const char **p, const char *end, const char *tag, const char **a,
                    const char **b);
/* The unescaped text of the next <tag>...</tag> in [*p, end) as a malloc'd
 * *out, moving *p past it; false when there is none (*oom set when memory
 * ran out). */
bool cv_s3_xml_next(const char **p, const char *end, const char *tag, char **out, bool *oom);
/* The text of the first <tag> in [p, end) into dst (cut at cap). */
bool cv_s3_xml_get(const char *p, const char *end, const char *tag, char *dst, size_t cap);

/* An HTTP date or an ISO 8601 time as nanoseconds since the epoch (0 when
 * unreadable). */
int64_t cv_s3_parse_time(const char *v);
/* An ETag without its quotes as info->version. */
void cv_s3_set_version(CvFileInfo *info, const char *etag);

/* HEAD the object: *status gets the answer's status (200: *info is filled;
 * 404: not an error here); other answers are errors. */
CvStatus cv_s3_head_object(CvS3 *s3, const CvS3Loc *l, long *status, CvFileInfo *info);
/* Whether any key in `bucket` starts with `prefix`. */
CvStatus cv_s3_prefix_exists(CvS3 *s3, const char *bucket, const char *prefix, bool *exists);

#endif
