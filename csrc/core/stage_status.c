/* A status as exact-resume state (core/stage_status.h). */
#include <stdint.h>
#include <string.h>

#include "core/stage_status.h"

void cv_stage_put_status(CvStateWriter *w, CvStatus s)
{
    cv_state_put_i64(w, s ? (int64_t)s->code : 0);
    if (s)
        cv_state_put_bytes(w, s->message, strlen(s->message));
}

/* Whether p[0, n) is UTF-8 with no NUL (a message Python can decode). */
static bool is_utf8(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        size_t len = c == 0 ? 0 : c < 0x80 ? 1 : (c & 0xE0) == 0xC0 && c >= 0xC2 ? 2
                   : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 && c <= 0xF4 ? 4 : 0;
        if (len == 0 || len > n - i)
            return false;
        for (size_t k = 1; k < len; k++)
            if ((p[i + k] & 0xC0) != 0x80)
                return false;
        if ((c == 0xE0 && p[i + 1] < 0xA0) || (c == 0xED && p[i + 1] >= 0xA0) ||
            (c == 0xF0 && p[i + 1] < 0x90) || (c == 0xF4 && p[i + 1] >= 0x90))
            return false; /* overlong, surrogate or past U+10FFFF */
        i += len;
    }
    return true;
}

CvStatus cv_stage_get_status(CvStateReader *r, CvStatus *out)
{
    int64_t code = 0;
    const void *msg = NULL;
    size_t n = 0;
    *out = CV_STATUS_OK;
    CvStatus s = cv_state_get_range(r, "an error's code", 0, CV_UNAUTHENTICATED, &code);
    if (!s && code != 0 && !(s = cv_state_get_bytes(r, &msg, &n))) {
        if (n > INT32_MAX || !is_utf8(msg, n))
            return cv_state_corrupt("an error's message is not UTF-8 text");
        *out = cv_error((CvCode)code, "%.*s", (int)n, (const char *)msg);
    }
    return s;
}
