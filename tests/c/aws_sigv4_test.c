/* AWS Signature Version 4 (csrc/io/aws_sigv4.c) against AWS's published
 * examples: the SigV4 test suite's get-vanilla and get-vanilla-query-order
 * cases (key AKIDEXAMPLE, service "service", 20150830T123600Z) and the S3
 * developer guide's GET Object (with Range), PUT Object and ListObjects
 * examples (key AKIAIOSFODNN7EXAMPLE, 20130524T000000Z). Built and run by
 * tests/test_engine_c.py; prints "N passed, 0 failed". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/aws_sigv4.h"

#include "check.h"

#define SUITE_KEY "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define S3_KEY "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

/* Sign and compare the Authorization header; print both on a mismatch. */
static void expect(const CvSigV4Request *req, const char *want)
{
    char *auth = NULL, *canon = NULL;
    CvStatus s = cv_sigv4_authorization(req, &auth, &canon);
    CHECK(s == CV_STATUS_OK);
    if (s) {
        fprintf(stderr, "%s\n", s->message);
        cv_status_free(s);
        return;
    }
    CHECK(strcmp(auth, want) == 0);
    if (strcmp(auth, want) != 0)
        fprintf(stderr, "got  %s\nwant %s\ncanonical request:\n%s\n", auth, want, canon);
    CHECK(strstr(auth, req->secret_key) == NULL);
    free(auth);
    free(canon);
}

static void test_suite_get_vanilla(void)
{
    CvSigV4Header h[] = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}};
    CvSigV4Request r = {"GET", "/", NULL, h, 2, CV_SHA256_EMPTY, "20150830T123600Z",
                        "us-east-1", "service", "AKIDEXAMPLE", SUITE_KEY};
    expect(&r, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
               "SignedHeaders=host;x-amz-date, "
               "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
    /* get-vanilla-query-order-key-case: the query is sorted before signing. */
    r.query = "Param2=value2&Param1=value1";
    expect(&r, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
               "SignedHeaders=host;x-amz-date, "
               "Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
}

static void test_s3_get_object_range(void)
{
    CvSigV4Header h[] = {{"Host", "examplebucket.s3.amazonaws.com"},
                         {"Range", "bytes=0-9"},
                         {"x-amz-content-sha256", CV_SHA256_EMPTY},
                         {"x-amz-date", "20130524T000000Z"}};
    CvSigV4Request r = {"GET", "/test.txt", NULL, h, 4, CV_SHA256_EMPTY, "20130524T000000Z",
                        "us-east-1", "s3", "AKIAIOSFODNN7EXAMPLE", S3_KEY};
    expect(&r, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
               "aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
               "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

static void test_s3_put_object(void)
{
    const char *body = "Welcome to Amazon S3.";
    char hash[65];
    cv_sha256_hex(body, strlen(body), hash);
    CHECK(strcmp(hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072") == 0);
    /* Given out of order and with a name in capitals: sorted and lower-cased. */
    CvSigV4Header h[] = {{"x-amz-storage-class", "REDUCED_REDUNDANCY"},
                         {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                         {"Host", "examplebucket.s3.amazonaws.com"},
                         {"x-amz-date", "20130524T000000Z"},
                         {"x-amz-content-sha256", hash}};
    char *path = cv_aws_uri_encode("/test$file.text", true);
    CHECK(strcmp(path, "/test%24file.text") == 0);
    CvSigV4Request r = {"PUT", path, NULL, h, 5, hash, "20130524T000000Z",
                        "us-east-1", "s3", "AKIAIOSFODNN7EXAMPLE", S3_KEY};
    expect(&r, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
               "aws4_request, SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;"
               "x-amz-storage-class, "
               "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
    free(path);
}

static void test_s3_list_objects(void)
{
    CvSigV4Header h[] = {{"Host", "examplebucket.s3.amazonaws.com"},
                         {"x-amz-content-sha256", CV_SHA256_EMPTY},
                         {"x-amz-date", "20130524T000000Z"}};
    CvSigV4Request r = {"GET", "/", "max-keys=2&prefix=J", h, 3, CV_SHA256_EMPTY,
                        "20130524T000000Z", "us-east-1", "s3", "AKIAIOSFODNN7EXAMPLE", S3_KEY};
    expect(&r, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
               "aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
               "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
    /* GET Bucket lifecycle: a query name without a value signs as "lifecycle=". */
    r.query = "lifecycle";
    expect(&r, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
               "aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
               "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

static void test_helpers(void)
{
    char *e = cv_aws_uri_encode("a b/c~d=é", false);
    CHECK(strcmp(e, "a%20b%2Fc~d%3D%C3%A9") == 0);
    free(e);
    char date[17];
    cv_aws_amz_date(1440938160LL, date);
    CHECK(strcmp(date, "20150830T123600Z") == 0);
    char *auth = NULL;
    CvSigV4Header h[] = {{"Host", "h"}, {"x-amz-date", "bad"}};
    CvSigV4Request r = {"GET", "/", NULL, h, 2, CV_SHA256_EMPTY, "bad", "r", "s", "AK", "SECRET"};
    CvStatus s = cv_sigv4_authorization(&r, &auth, NULL);
    CHECK(s && s->code == CV_INVALID_ARGUMENT && !strstr(s->message, "SECRET"));
    cv_status_free(s);
    /* Header values are trimmed and inner runs of spaces folded. */
    char *canon = NULL;
    CvSigV4Header h2[] = {{"Host", "h"}, {"My-Header1", "  a   b   c  "},
                          {"x-amz-date", "20150830T123600Z"}};
    CvSigV4Request r2 = {"GET", "/", NULL, h2, 3, CV_SHA256_EMPTY, "20150830T123600Z",
                         "r", "s", "AK", "SECRET"};
    s = cv_sigv4_authorization(&r2, &auth, &canon);
    CHECK(s == CV_STATUS_OK && strstr(canon, "\nmy-header1:a b c\n"));
    free(auth);
    free(canon);
}

int main(void)
{
    test_suite_get_vanilla();
    test_s3_get_object_range();
    test_s3_put_object();
    test_s3_list_objects();
    test_helpers();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
