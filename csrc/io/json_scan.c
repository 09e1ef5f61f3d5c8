/* A bounded JSON scanner (json_scan.h): every step checks the remaining
 * length; nesting is capped at CV_JSON_MAX_DEPTH. */
#include "io/json_scan.h"

#include <stdlib.h>
#include <string.h>

static void skip_ws(const char *p, size_t n, size_t *i) {
    while (*i < n && (p[*i] == ' ' || p[*i] == '\t' || p[*i] == '\n' || p[*i] == '\r'))
        (*i)++;
}

/* A string starting at p[*i] == '"'; *i ends past the closing quote. */
static bool skip_string(const char *p, size_t n, size_t *i) {
    if (*i >= n || p[*i] != '"')
        return false;
    for ((*i)++; *i < n; (*i)++) {
        unsigned char c = (unsigned char)p[*i];
        if (c == '"') {
            (*i)++;
            return true;
        }
        if (c == '\\') {
            if (++(*i) >= n)
                return false;
        } else if (c < 0x20) {
            return false;
        }
    }
    return false;
}

static bool skip_value(const char *p, size_t n, size_t *i, int depth) {
    skip_ws(p, n, i);
    if (*i >= n || depth > CV_JSON_MAX_DEPTH)
        return false;
    char c = p[*i];
    if (c == '"')
        return skip_string(p, n, i);
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        (*i)++;
        skip_ws(p, n, i);
        if (*i < n && p[*i] == close) {
            (*i)++;
            return true;
        }
        for (;;) {
            if (c == '{') {
                skip_ws(p, n, i);
                if (!skip_string(p, n, i))
                    return false;
                skip_ws(p, n, i);
                if (*i >= n || p[*i] != ':')
                    return false;
                (*i)++;
            }
            if (!skip_value(p, n, i, depth + 1))
                return false;
            skip_ws(p, n, i);
            if (*i >= n)
                return false;
            if (p[*i] == close) {
                (*i)++;
                return true;
            }
            if (p[*i] != ',')
                return false;
            (*i)++;
        }
    }
    /* A number, true, false or null: a run of their characters. */
    size_t start = *i;
    while (*i < n && strchr("0123456789+-.eEtruefalsn", p[*i]) != NULL && p[*i] != '\0')
        (*i)++;
    return *i > start;
}

/* Whether the string span [p+a, p+b) (with quotes) equals key, escapes
 * decoded. */
static bool key_equals(const char *p, size_t a, size_t b, const char *key) {
    CvJsonSpan s = {p + a, b - a};
    if (memchr(s.p, '\\', s.n) == NULL) {
        size_t k = strlen(key);
        return s.n == k + 2 && memcmp(s.p + 1, key, k) == 0;
    }
    char *u = cv_json_unescape(s);
    bool eq = u != NULL && strcmp(u, key) == 0;
    free(u);
    return eq;
}

bool cv_json_field(CvJsonSpan obj, const char *key, CvJsonSpan *value) {
    const char *p = obj.p;
    size_t n = obj.n, i = 0;
    skip_ws(p, n, &i);
    if (p == NULL || i >= n || p[i] != '{')
        return false;
    i++;
    skip_ws(p, n, &i);
    if (i < n && p[i] == '}')
        return false;
    for (;;) {
        skip_ws(p, n, &i);
        size_t ka = i;
        if (!skip_string(p, n, &i))
            return false;
        size_t kb = i;
        skip_ws(p, n, &i);
        if (i >= n || p[i] != ':')
            return false;
        i++;
        skip_ws(p, n, &i);
        size_t va = i;
        if (!skip_value(p, n, &i, 1))
            return false;
        if (key_equals(p, ka, kb, key)) {
            value->p = p + va;
            value->n = i - va;
            return true;
        }
        skip_ws(p, n, &i);
        if (i >= n || p[i] != ',')
            return false;
        i++;
    }
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static bool read_u16(const char *p, size_t n, size_t i, unsigned *out) {
    if (i + 4 > n)
        return false;
    unsigned v = 0;
    for (size_t k = 0; k < 4; k++) {
        int h = hex_value(p[i + k]);
        if (h < 0)
            return false;
        v = v * 16 + (unsigned)h;
    }
    *out = v;
    return true;
}

static size_t put_utf8(char *dst, unsigned cp) {
    if (cp < 0x80) {
        dst[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        dst[0] = (char)(0xC0 | (cp >> 6));
        dst[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        dst[0] = (char)(0xE0 | (cp >> 12));
        dst[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        dst[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    dst[0] = (char)(0xF0 | (cp >> 18));
    dst[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    dst[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    dst[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

char *cv_json_unescape(CvJsonSpan str) {
    const char *p = str.p;
    size_t n = str.n, end = 0;
    if (p == NULL || !skip_string(p, n, &end) || end != n)
        return NULL;
    /* Each escape shrinks or keeps the length (\uXXXX: 6 bytes -> <= 3,
     * a surrogate pair: 12 -> 4), so n bytes suffice. */
    char *out = malloc(n);
    if (out == NULL)
        return NULL;
    size_t o = 0;
    for (size_t i = 1; i + 1 < n; i++) {
        if (p[i] != '\\') {
            out[o++] = p[i];
            continue;
        }
        char e = p[++i];
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e != '\0' && simple != NULL) {
            static const char map[] = "\"\\/\b\f\n\r\t";
            out[o++] = map[simple - "\"\\/bfnrt"];
            continue;
        }
        unsigned cp;
        if (e != 'u' || !read_u16(p, n - 1, i + 1, &cp))
            goto bad;
        i += 4;
        if (cp >= 0xD800 && cp < 0xDC00) {
            unsigned lo;
            if (i + 2 < n - 1 && p[i + 1] == '\\' && p[i + 2] == 'u' &&
                read_u16(p, n - 1, i + 3, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                i += 6;
            } else {
                cp = 0xFFFD; /* a lone surrogate */
            }
        } else if (cp >= 0xDC00 && cp < 0xE000) {
            cp = 0xFFFD;
        }
        o += put_utf8(out + o, cp);
    }
    out[o] = '\0';
    return out;
bad:
    free(out);
    return NULL;
}

bool cv_json_string(CvJsonSpan obj, const char *key, char **out) {
    CvJsonSpan v;
    *out = NULL;
    if (!cv_json_field(obj, key, &v) || v.n == 0 || v.p[0] != '"')
        return false;
    *out = cv_json_unescape(v);
    return *out != NULL;
}

bool cv_json_int(CvJsonSpan obj, const char *key, int64_t *out) {
    CvJsonSpan v;
    if (!cv_json_field(obj, key, &v) || v.n == 0)
        return false;
    const char *p = v.p;
    size_t n = v.n;
    if (p[0] == '"') {
        p++;
        n -= 2;
    }
    bool neg = n > 0 && p[0] == '-';
    size_t i = neg ? 1 : 0;
    if (i >= n)
        return false;
    uint64_t x = 0;
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') {
            /* A JSON number with a fraction or exponent: not an integer. */
            return false;
        }
        if (x > ((uint64_t)INT64_MAX - (uint64_t)(p[i] - '0')) / 10)
            return false;
        x = x * 10 + (uint64_t)(p[i] - '0');
    }
    *out = neg ? -(int64_t)x : (int64_t)x;
    return true;
}

bool cv_json_bool(CvJsonSpan obj, const char *key, bool *out) {
    CvJsonSpan v;
    if (!cv_json_field(obj, key, &v))
        return false;
    if (v.n == 4 && memcmp(v.p, "true", 4) == 0)
        *out = true;
    else if (v.n == 5 && memcmp(v.p, "false", 5) == 0)
        *out = false;
    else
        return false;
    return true;
}

bool cv_json_array_next(CvJsonSpan array, size_t *pos, CvJsonSpan *elem) {
    const char *p = array.p;
    size_t n = array.n, i = *pos;
    if (p == NULL)
        return false;
    if (i == 0) {
        skip_ws(p, n, &i);
        if (i >= n || p[i] != '[')
            return false;
        i++;
    } else {
        skip_ws(p, n, &i);
        if (i >= n || p[i] != ',')
            return false;
        i++;
    }
    skip_ws(p, n, &i);
    if (i >= n || p[i] == ']')
        return false;
    size_t a = i;
    if (!skip_value(p, n, &i, 1))
        return false;
    elem->p = p + a;
    elem->n = i - a;
    *pos = i;
    return true;
}
