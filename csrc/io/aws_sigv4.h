/* AWS Signature Version 4 (the signing every AWS service and S3-compatible
 * store accepts), computed with OpenSSL's HMAC and SHA-256.
 *
 * Pure functions: no clock, no network, no global state; thread-safe. The
 * caller gives the time (so that published test vectors can be checked) and
 * the already URI-encoded path and query. Nothing here keeps or prints a
 * key. */
#ifndef CV_AWS_SIGV4_H
#define CV_AWS_SIGV4_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

/* Hex SHA-256 of the empty string (a bodiless request's payload hash). */
#define CV_SHA256_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

typedef struct CvSigV4Header {
    const char *name;  /* any case; signed lower-cased */
    const char *value; /* trimmed, inner runs of spaces folded, when signed */
} CvSigV4Header;

typedef struct CvSigV4Request {
    const char *method;         /* "GET", ... */
    const char *path;           /* URI-encoded, as sent: "/bucket/a%20b" ("" means "/") */
    const char *query;          /* encoded "k=v&k2" as sent, without '?'; may be NULL */
    const CvSigV4Header *headers; /* the headers to sign; must include host and x-amz-date */
    size_t header_count;
    const char *payload_sha256; /* lower-case hex, or "UNSIGNED-PAYLOAD" */
    const char *amz_date;       /* "YYYYMMDDTHHMMSSZ" (UTC) */
    const char *region;         /* "us-east-1" */
    const char *service;        /* "s3" */
    const char *access_key;
    const char *secret_key;
} CvSigV4Request;

/* The Authorization header's value ("AWS4-HMAC-SHA256 Credential=...,
 * SignedHeaders=..., Signature=...") as a malloc'd string in *out. When
 * `canonical` is not NULL it receives the canonical request (malloc'd), for
 * tests. INVALID_ARGUMENT on a malformed date; the message never carries a
 * key. */
CvStatus cv_sigv4_authorization(const CvSigV4Request *req, char **out, char **canonical);

/* Lower-case hex SHA-256 of data[0..n) into hex (65 bytes with the NUL). */
void cv_sha256_hex(const void *data, size_t n, char hex[65]);

/* Percent-encode `s` as SigV4 and S3 want it: every byte but A-Z a-z 0-9
 * '-' '_' '.' '~' becomes %XX (upper-case hex); '/' is kept when keep_slash
 * (object keys in paths) and encoded otherwise (query values). malloc'd, or
 * NULL when out of memory. */
char *cv_aws_uri_encode(const char *s, bool keep_slash);

/* "YYYYMMDDTHHMMSSZ" for the Unix time `t` (UTC) into buf (17 bytes). */
void cv_aws_amz_date(long long t, char buf[17]);

#endif
