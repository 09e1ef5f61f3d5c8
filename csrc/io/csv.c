/* CSV values (see csv.h). */
#include "io/csv.h"

#include <stdlib.h>
#include <string.h>

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static void trim(const char **p, size_t *n)
{
    while (*n && is_space((*p)[0])) {
        (*p)++;
        (*n)--;
    }
    while (*n && is_space((*p)[*n - 1]))
        (*n)--;
}

const char *cv_csv_dtype_name(CvDtype d)
{
    switch (d) {
    case CV_INT32:
        return "int32";
    case CV_INT64:
        return "int64";
    case CV_FLOAT32:
        return "float";
    case CV_FLOAT64:
        return "double";
    default:
        return "string";
    }
}

/* Decimal integer within [lo, hi]. */
static bool parse_int(const char *p, size_t n, int64_t lo, int64_t hi, int64_t *out)
{
    trim(&p, &n);
    if (!n)
        return false;
    bool neg = false;
    if (p[0] == '+' || p[0] == '-') {
        neg = p[0] == '-';
        p++;
        n--;
    }
    if (!n)
        return false;
    /* Accumulate as a negative number: it reaches INT64_MIN. */
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        int d = p[i] - '0';
        if (v < (INT64_MIN + d) / 10)
            return false;
        v = v * 10 - d;
    }
    if (!neg) {
        if (v < -INT64_MAX)
            return false;
        v = -v;
    }
    if (v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static bool parse_float(const char *p, size_t n, bool single, double *out)
{
    trim(&p, &n);
    if (!n || n > ((size_t)1 << 20))
        return false;
    char local[128];
    char *buf = n < sizeof(local) ? local : malloc(n + 1);
    if (!buf)
        return false;
    memcpy(buf, p, n);
    buf[n] = '\0';
    char *end = NULL;
    double v = single ? (double)strtof(buf, &end) : strtod(buf, &end);
    bool ok = end == buf + n;
    if (buf != local)
        free(buf);
    if (ok)
        *out = v;
    return ok;
}

CvCsvResult cv_csv_value(const CvCsvColumn *c, const char *p, size_t n, const char *na,
                         size_t na_len, CvCsvValue *out)
{
    if (n == 0 || (na_len && n == na_len && memcmp(p, na, n) == 0)) {
        if (!c->has_default)
            return CV_CSV_MISSING;
        out->i = c->i;
        out->f = c->f;
        out->s = c->s;
        out->s_len = c->s_len;
        return CV_CSV_VALUE;
    }
    switch (c->dtype) {
    case CV_INT32:
        return parse_int(p, n, INT32_MIN, INT32_MAX, &out->i) ? CV_CSV_VALUE : CV_CSV_INVALID;
    case CV_INT64:
        return parse_int(p, n, INT64_MIN, INT64_MAX, &out->i) ? CV_CSV_VALUE : CV_CSV_INVALID;
    case CV_FLOAT32:
    case CV_FLOAT64:
        return parse_float(p, n, c->dtype == CV_FLOAT32, &out->f) ? CV_CSV_VALUE : CV_CSV_INVALID;
    default:
        out->s = p;
        out->s_len = n;
        return CV_CSV_VALUE;
    }
}

void cv_csv_store(CvDtype d, const CvCsvValue *v, void *dst)
{
    switch (d) {
    case CV_INT32: {
        int32_t x = (int32_t)v->i;
        memcpy(dst, &x, sizeof(x));
        break;
    }
    case CV_INT64:
        memcpy(dst, &v->i, sizeof(v->i));
        break;
    case CV_FLOAT32: {
        float x = (float)v->f;
        memcpy(dst, &x, sizeof(x));
        break;
    }
    case CV_FLOAT64:
        memcpy(dst, &v->f, sizeof(v->f));
        break;
    default:
        break;
    }
}
