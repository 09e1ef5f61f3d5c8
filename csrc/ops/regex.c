/* The regex engine of ops/regex.h, its first half: a recursive-descent
 * parser of RE2's syntax into a small tree and a compiler of the tree into
 * Pike VM instructions (ops/regex_program.h; the VM is regex_match.c).
 * Limits that keep compile time and memory bounded on hostile patterns:
 * repeat counts <= 1000, groups nested <= 250 deep, <= 100000 instructions
 * (a larger program is "pattern too large"). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/regex.h"
#include "ops/regex_program.h"
#include "ops/utf8.h"

#define MAX_REPEAT 1000
#define MAX_DEPTH 250
#define MAX_INST 100000

enum { N_LIT, N_CLASS, N_ANY, N_EMPTY, N_CAT, N_ALT, N_REPEAT, N_GROUP, N_ASSERT };
enum { F_FOLD = 1, F_MULTI = 2, F_DOTALL = 4, F_UNGREEDY = 8 };


typedef struct {
    Range *r;
    int n, cap;
} RangeSet;


typedef struct {
    uint8_t type, greedy;
    int32_t min, max, value;
    int32_t child, next, last; /* first child, next sibling, last child (-1: none) */
} Node;



typedef struct {
    const unsigned char *p, *end;
    Node *nodes;
    int nnodes, capnodes;
    Class *classes;
    int nclasses, capclasses;
    int groups, depth;
    bool nomem;
    char why[200];
} Parser;

/* -- parsing ------------------------------------------------------------- */

static int fail(Parser *ps, const char *what, const unsigned char *arg, size_t n)
{
    if (!ps->why[0])
        snprintf(ps->why, sizeof(ps->why), "%s%s%.*s", what, arg ? ": " : "",
                 (int)(n > 80 ? 80 : n), arg ? (const char *)arg : "");
    return -1;
}

static int new_node(Parser *ps, int type)
{
    if (ps->nnodes == ps->capnodes) {
        int cap = ps->capnodes ? ps->capnodes * 2 : 64;
        Node *nodes = realloc(ps->nodes, (size_t)cap * sizeof(Node));
        if (!nodes) {
            ps->nomem = true;
            return fail(ps, "out of memory", NULL, 0);
        }
        ps->nodes = nodes;
        ps->capnodes = cap;
    }
    Node *n = &ps->nodes[ps->nnodes];
    memset(n, 0, sizeof(*n));
    n->type = (uint8_t)type;
    n->child = n->next = n->last = -1;
    return ps->nnodes++;
}

static void add_child(Parser *ps, int parent, int child)
{
    Node *p = &ps->nodes[parent];
    if (p->last < 0)
        p->child = child;
    else
        ps->nodes[p->last].next = child;
    p->last = child;
}

static int add_range(Parser *ps, RangeSet *rs, int32_t lo, int32_t hi)
{
    if (rs->n == rs->cap) {
        int cap = rs->cap ? rs->cap * 2 : 8;
        Range *r = realloc(rs->r, (size_t)cap * sizeof(Range));
        if (!r) {
            ps->nomem = true;
            return fail(ps, "out of memory", NULL, 0);
        }
        rs->r = r;
        rs->cap = cap;
    }
    rs->r[rs->n++] = (Range){lo, hi};
    return 0;
}

static int range_cmp(const void *a, const void *b)
{
    const Range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sort and merge the ranges of rs. */
static void normalize(RangeSet *rs)
{
    if (rs->n == 0)
        return;
    qsort(rs->r, (size_t)rs->n, sizeof(Range), range_cmp);
    int k = 0;
    for (int i = 1; i < rs->n; i++) {
        if (rs->r[i].lo <= rs->r[k].hi + 1) {
            if (rs->r[i].hi > rs->r[k].hi)
                rs->r[k].hi = rs->r[i].hi;
        } else {
            rs->r[++k] = rs->r[i];
        }
    }
    rs->n = k + 1;
}

static int negate(Parser *ps, RangeSet *rs)
{
    normalize(rs);
    RangeSet out = {0};
    int32_t next = 0;
    for (int i = 0; i < rs->n; i++) {
        if (rs->r[i].lo > next && add_range(ps, &out, next, rs->r[i].lo - 1) < 0)
            goto nomem;
        next = rs->r[i].hi + 1;
    }
    if (next <= MAX_RUNE && add_range(ps, &out, next, MAX_RUNE) < 0)
        goto nomem;
    free(rs->r);
    *rs = out;
    return 0;
nomem:
    free(out.r);
    return -1;
}

/* Add the other case of the ASCII and Latin-1 letters in rs. */
static int fold(Parser *ps, RangeSet *rs)
{
    static const Range upper[] = {{'A', 'Z'}, {0xC0, 0xD6}, {0xD8, 0xDE}};
    int n = rs->n;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            for (int dir = 0; dir < 2; dir++) {
                int32_t lo = upper[k].lo + dir * 32, hi = upper[k].hi + dir * 32;
                int32_t a = rs->r[i].lo > lo ? rs->r[i].lo : lo;
                int32_t b = rs->r[i].hi < hi ? rs->r[i].hi : hi;
                int32_t shift = dir ? -32 : 32;
                if (a <= b && add_range(ps, rs, a + shift, b + shift) < 0)
                    return -1;
            }
        }
    return 0;
}

/* Make rs (normalized, taken) a class; its index or -1. */
static int finish_class(Parser *ps, RangeSet *rs)
{
    normalize(rs);
    if (ps->nclasses == ps->capclasses) {
        int cap = ps->capclasses ? ps->capclasses * 2 : 8;
        Class *c = realloc(ps->classes, (size_t)cap * sizeof(Class));
        if (!c) {
            free(rs->r);
            ps->nomem = true;
            return fail(ps, "out of memory", NULL, 0);
        }
        ps->classes = c;
        ps->capclasses = cap;
    }
    Class *c = &ps->classes[ps->nclasses];
    memset(c, 0, sizeof(*c));
    int k = 0;
    for (int i = 0; i < rs->n; i++) {
        Range r = rs->r[i];
        for (int32_t x = r.lo; x <= r.hi && x < 128; x++)
            c->ascii[x >> 6] |= UINT64_C(1) << (x & 63);
        if (r.hi >= 128)
            rs->r[k++] = (Range){r.lo < 128 ? 128 : r.lo, r.hi};
    }
    c->r = rs->r;
    c->n = k;
    rs->r = NULL;
    return ps->nclasses++;
}

static int perl_class(Parser *ps, RangeSet *rs, int letter)
{
    switch (letter) {
    case 'd':
        return add_range(ps, rs, '0', '9');
    case 's':
        return add_range(ps, rs, '\t', '\n') | add_range(ps, rs, '\f', '\r') |
               add_range(ps, rs, ' ', ' ');
    default: /* 'w' */
        return add_range(ps, rs, '0', '9') | add_range(ps, rs, 'A', 'Z') |
               add_range(ps, rs, '_', '_') | add_range(ps, rs, 'a', 'z');
    }
}

/* Add the ranges of a Perl class escape (\d, \D ...) to rs. */
static int add_perl_class(Parser *ps, RangeSet *rs, int letter)
{
    RangeSet tmp = {0};
    int lower = letter | 32;
    int rc = perl_class(ps, &tmp, lower);
    if (!rc && letter != lower)
        rc = negate(ps, &tmp);
    for (int i = 0; !rc && i < tmp.n; i++)
        rc = add_range(ps, rs, tmp.r[i].lo, tmp.r[i].hi);
    free(tmp.r);
    return rc;
}

static const struct {
    const char *name;
    const char *ranges; /* pairs of bounds */
} posix[] = {
    {"alnum", "09AZaz"}, {"alpha", "AZaz"}, {"ascii", "\x01\x7f"}, {"blank", "\t\t  "},
    {"cntrl", "\x01\x1f\x7f\x7f"}, {"digit", "09"}, {"graph", "!~"}, {"lower", "az"},
    {"print", " ~"}, {"punct", "!/:@[`{~"}, {"space", "\t\r  "}, {"upper", "AZ"},
    {"word", "09AZ__az"}, {"xdigit", "09AFaf"},
};

/* [:name:] or [:^name:] at ps->p (after the '['), added to rs. */
static int add_posix(Parser *ps, RangeSet *rs)
{
    const unsigned char *start = ps->p - 1, *q = ps->p + 1;
    while (q + 1 < ps->end && !(q[0] == ':' && q[1] == ']'))
        q++;
    if (q + 1 >= ps->end)
        return fail(ps, "missing ]", start, (size_t)(ps->end - start));
    const unsigned char *name = ps->p + 1;
    bool neg = name < q && *name == '^';
    name += neg;
    for (size_t i = 0; i < sizeof(posix) / sizeof(posix[0]); i++) {
        if (strlen(posix[i].name) != (size_t)(q - name) ||
            memcmp(posix[i].name, name, (size_t)(q - name)))
            continue;
        RangeSet tmp = {0};
        int rc = 0;
        for (const char *r = posix[i].ranges; !rc && *r; r += 2)
            rc = add_range(ps, &tmp, r[0] == 1 ? 0 : r[0], r[1]);
        if (!rc && neg)
            rc = negate(ps, &tmp);
        for (int k = 0; !rc && k < tmp.n; k++)
            rc = add_range(ps, rs, tmp.r[k].lo, tmp.r[k].hi);
        free(tmp.r);
        ps->p = q + 2;
        return rc;
    }
    return fail(ps, "invalid character class range", start, (size_t)(q + 2 - start));
}

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10 : -1;
}

/* An escape at ps->p (the backslash). Sets *cp for a literal (returns 0),
 * adds a Perl class to rs when rs is given (returns 1), or sets *cp to an
 * assertion (returns 2, outside classes only); -1 on error. */
static int parse_escape(Parser *ps, RangeSet *rs, int32_t *cp, bool in_class)
{
    const unsigned char *start = ps->p;
    if (ps->p + 1 >= ps->end)
        return fail(ps, "trailing \\", NULL, 0);
    int c = ps->p[1];
    ps->p += 2;
    switch (c) {
    case 'd': case 'D': case 'w': case 'W': case 's': case 'S':
        return add_perl_class(ps, rs, c) < 0 ? -1 : 1;
    case 'n': *cp = '\n'; return 0;
    case 't': *cp = '\t'; return 0;
    case 'r': *cp = '\r'; return 0;
    case 'f': *cp = '\f'; return 0;
    case 'v': *cp = '\v'; return 0;
    case 'a': *cp = '\a'; return 0;
    case 'x': {
        int32_t v = 0;
        if (ps->p < ps->end && *ps->p == '{') {
            const unsigned char *q = ps->p + 1;
            int digits = 0;
            while (q < ps->end && hexval(*q) >= 0 && v <= MAX_RUNE)
                v = v * 16 + hexval(*q++), digits++;
            if (q >= ps->end || *q != '}' || !digits || v > MAX_RUNE)
                return fail(ps, "invalid escape sequence", start,
                            (size_t)((q < ps->end ? q + 1 : q) - start));
            ps->p = q + 1;
        } else {
            if (ps->end - ps->p < 2 || hexval(ps->p[0]) < 0 || hexval(ps->p[1]) < 0)
                return fail(ps, "invalid escape sequence", start,
                            (size_t)(ps->end - start < 4 ? ps->end - start : 4));
            v = hexval(ps->p[0]) * 16 + hexval(ps->p[1]);
            ps->p += 2;
        }
        *cp = v;
        return 0;
    }
    case 'b': case 'B': case 'A': case 'z':
        if (in_class)
            break;
        *cp = c == 'b' ? A_WORD : c == 'B' ? A_NOT_WORD : c == 'A' ? A_BEGIN_TEXT : A_END_TEXT;
        return 2;
    default:
        if (c < 128 && !(c >= '0' && c <= '9') && !((c | 32) >= 'a' && (c | 32) <= 'z') &&
            c != '_') {
            *cp = c;
            return 0;
        }
    }
    return fail(ps, "invalid escape sequence", start, 2);
}

static int parse_alt(Parser *ps, int flags);

/* A character class at ps->p (the '['). */
static int parse_class(Parser *ps, int flags)
{
    const unsigned char *start = ps->p++;
    RangeSet rs = {0};
    bool neg = ps->p < ps->end && *ps->p == '^';
    ps->p += neg;
    for (bool first = true;; first = false) {
        if (ps->p >= ps->end) {
            fail(ps, "missing ]", start, (size_t)(ps->end - start));
            goto error;
        }
        if (*ps->p == ']' && !first) {
            ps->p++;
            break;
        }
        if (*ps->p == '[' && ps->p + 1 < ps->end && ps->p[1] == ':') {
            ps->p++;
            if (add_posix(ps, &rs) < 0)
                goto error;
            continue;
        }
        const unsigned char *item = ps->p;
        int32_t lo, hi;
        int len, kind = 0;
        if (*ps->p == '\\') {
            kind = parse_escape(ps, &rs, &lo, true);
            if (kind < 0)
                goto error;
            if (kind == 1)
                continue;
        } else {
            lo = cv_utf8_decode(ps->p, (size_t)(ps->end - ps->p), &len);
            if (lo < 0) {
                fail(ps, "invalid UTF-8", NULL, 0);
                goto error;
            }
            ps->p += len;
        }
        hi = lo;
        if (ps->p + 1 < ps->end && *ps->p == '-' && ps->p[1] != ']') {
            ps->p++;
            if (*ps->p == '\\') {
                RangeSet tmp = {0}; /* a class (\d) cannot end a range */
                int kind_hi = parse_escape(ps, &tmp, &hi, true);
                free(tmp.r);
                if (kind_hi != 0) {
                    fail(ps, "invalid character class range", item, (size_t)(ps->p - item));
                    goto error;
                }
            } else {
                hi = cv_utf8_decode(ps->p, (size_t)(ps->end - ps->p), &len);
                if (hi < 0) {
                    fail(ps, "invalid UTF-8", NULL, 0);
                    goto error;
                }
                ps->p += len;
            }
            if (hi < lo) {
                fail(ps, "invalid character class range", item, (size_t)(ps->p - item));
                goto error;
            }
        }
        if (add_range(ps, &rs, lo, hi) < 0)
            goto error;
    }
    if ((flags & F_FOLD) && fold(ps, &rs) < 0)
        goto error;
    if (neg && negate(ps, &rs) < 0)
        goto error;
    int cls = finish_class(ps, &rs);
    if (cls < 0)
        return -1;
    int node = new_node(ps, N_CLASS);
    if (node >= 0)
        ps->nodes[node].value = cls;
    return node;
error:
    free(rs.r);
    return -1;
}

/* A literal code point (a class when folding makes it two). */
static int literal(Parser *ps, int32_t cp, int flags)
{
    bool letter = ((cp | 32) >= 'a' && (cp | 32) <= 'z') ||
                  (cp >= 0xC0 && cp <= 0xFE && cp != 0xD7 && cp != 0xF7 && cp != 0xDF);
    if ((flags & F_FOLD) && letter) {
        RangeSet rs = {0};
        if (add_range(ps, &rs, cp, cp) < 0 || fold(ps, &rs) < 0) {
            free(rs.r);
            return -1;
        }
        int cls = finish_class(ps, &rs);
        int node = cls < 0 ? -1 : new_node(ps, N_CLASS);
        if (node >= 0)
            ps->nodes[node].value = cls;
        return node;
    }
    int node = new_node(ps, N_LIT);
    if (node >= 0)
        ps->nodes[node].value = cp;
    return node;
}

#define FLAGS_ONLY (-2)

/* (?flags) or (?flags:re) at ps->p (after "(?"): FLAGS_ONLY after
 * changing *flags, or the group's node. */
static int parse_flags(Parser *ps, int *flags, const unsigned char *start)
{
    int f = *flags;
    bool minus = false, any = false;
    for (; ps->p < ps->end; ps->p++) {
        int c = *ps->p, bit = c == 'i' ? F_FOLD : c == 'm' ? F_MULTI : c == 's' ? F_DOTALL
                                                   : c == 'U' ? F_UNGREEDY : 0;
        if (c == '-' && !minus) {
            minus = true;
            any = false;
            continue;
        }
        if ((c == ')' || c == ':') && (any || !minus)) {
            ps->p++;
            if (c == ')') {
                *flags = f;
                return FLAGS_ONLY;
            }
            int node = new_node(ps, N_GROUP);
            int child = node < 0 ? -1 : parse_alt(ps, f);
            if (child < 0)
                return -1;
            ps->nodes[node].value = -1;
            add_child(ps, node, child);
            return node;
        }
        if (!bit)
            break;
        f = minus ? f & ~bit : f | bit;
        any = true;
    }
    return fail(ps, "invalid or unsupported Perl syntax", start,
                (size_t)((ps->p < ps->end ? ps->p + 1 : ps->p) - start));
}

static int parse_group(Parser *ps, int *flags)
{
    const unsigned char *start = ps->p++;
    if (++ps->depth > MAX_DEPTH)
        return fail(ps, "expression nests too deeply", NULL, 0);
    int node;
    if (ps->p < ps->end && *ps->p == '?') {
        ps->p++;
        if (ps->p < ps->end && *ps->p == ':') {
            ps->p++;
            node = new_node(ps, N_GROUP);
            int child = node < 0 ? -1 : parse_alt(ps, *flags);
            if (child < 0)
                return -1;
            ps->nodes[node].value = -1;
            add_child(ps, node, child);
        } else if (ps->p < ps->end && (*ps->p == 'P' || *ps->p == '<')) {
            ps->p += *ps->p == 'P';
            const unsigned char *name = ps->p + 1;
            if (ps->p >= ps->end || *ps->p != '<')
                return fail(ps, "invalid named capture group", start, (size_t)(ps->p - start));
            const unsigned char *q = name;
            while (q < ps->end && (*q == '_' || (*q >= '0' && *q <= '9') ||
                                   ((*q | 32) >= 'a' && (*q | 32) <= 'z')))
                q++;
            if (q >= ps->end || *q != '>' || q == name)
                return fail(ps, "invalid named capture group", start,
                            (size_t)((q < ps->end ? q + 1 : q) - start));
            ps->p = q + 1;
            goto capture;
        } else {
            node = parse_flags(ps, flags, start);
            if (node == FLAGS_ONLY) {
                ps->depth--;
                return node;
            }
            if (node < 0)
                return -1;
        }
    } else {
    capture:
        node = new_node(ps, N_GROUP);
        if (node < 0)
            return -1;
        ps->nodes[node].value = ++ps->groups;
        int child = parse_alt(ps, *flags);
        if (child < 0)
            return -1;
        add_child(ps, node, child);
    }
    if (ps->p >= ps->end || *ps->p != ')')
        return fail(ps, "missing )", NULL, 0);
    ps->p++;
    ps->depth--;
    return node;
}

/* {m}, {m,} or {m,n} at ps->p: 1 with *min, *max (-1: none) and ps->p past
 * it; 0 when it is not one (a literal '{'). */
static int parse_braces(Parser *ps, int32_t *min, int32_t *max)
{
    const unsigned char *q = ps->p + 1;
    int32_t v[2] = {-1, -1};
    bool comma = false;
    for (int k = 0; k < 2; k++) {
        if (q >= ps->end || *q < '0' || *q > '9')
            break;
        v[k] = 0;
        while (q < ps->end && *q >= '0' && *q <= '9') {
            if (v[k] < 100000)
                v[k] = v[k] * 10 + (*q - '0');
            q++;
        }
        if (k == 0 && q < ps->end && *q == ',') {
            comma = true;
            q++;
        } else {
            break;
        }
    }
    if (v[0] < 0 || q >= ps->end || *q != '}')
        return 0;
    *min = v[0];
    *max = comma ? v[1] : v[0];
    ps->p = q + 1;
    return 1;
}

static bool at_quantifier(Parser *ps)
{
    if (ps->p >= ps->end)
        return false;
    if (*ps->p == '*' || *ps->p == '+' || *ps->p == '?')
        return true;
    int32_t a, b;
    const unsigned char *save = ps->p;
    int r = *ps->p == '{' && parse_braces(ps, &a, &b);
    ps->p = save;
    return r;
}

static int parse_atom(Parser *ps, int *flags)
{
    int c = *ps->p, node;
    int32_t cp;
    switch (c) {
    case '(':
        return parse_group(ps, flags);
    case '[':
        return parse_class(ps, *flags);
    case '.':
        ps->p++;
        node = new_node(ps, N_ANY);
        if (node >= 0)
            ps->nodes[node].value = (*flags & F_DOTALL) != 0;
        return node;
    case '^': case '$':
        ps->p++;
        node = new_node(ps, N_ASSERT);
        if (node >= 0)
            ps->nodes[node].value = c == '^' ? ((*flags & F_MULTI) ? A_BEGIN_LINE : A_BEGIN_TEXT)
                                             : ((*flags & F_MULTI) ? A_END_LINE : A_END_TEXT);
        return node;
    case '\\': {
        RangeSet rs = {0};
        int kind = parse_escape(ps, &rs, &cp, false);
        if (kind == 1) {
            if ((*flags & F_FOLD) && fold(ps, &rs) < 0) {
                free(rs.r);
                return -1;
            }
            int cls = finish_class(ps, &rs);
            node = cls < 0 ? -1 : new_node(ps, N_CLASS);
            if (node >= 0)
                ps->nodes[node].value = cls;
            return node;
        }
        free(rs.r);
        if (kind < 0)
            return -1;
        if (kind == 2) {
            node = new_node(ps, N_ASSERT);
            if (node >= 0)
                ps->nodes[node].value = cp;
            return node;
        }
        return literal(ps, cp, *flags);
    }
    default:
        if (at_quantifier(ps)) {
            const unsigned char *start = ps->p;
            int32_t a, b;
            if (*ps->p == '{')
                parse_braces(ps, &a, &b);
            else
                ps->p++;
            return fail(ps, "missing argument to repetition operator", start,
                        (size_t)(ps->p - start));
        }
        int len;
        cp = cv_utf8_decode(ps->p, (size_t)(ps->end - ps->p), &len);
        if (cp < 0)
            return fail(ps, "invalid UTF-8", NULL, 0);
        ps->p += len;
        return literal(ps, cp, *flags);
    }
}

/* The quantifier at ps->p applied to node `atom`. */
/* The largest product of nested counted repeats ({n}) in a node; a
 * REPEAT node keeps its own in `value`. */
static int32_t repeat_product(const Parser *ps, int index)
{
    const Node *n = &ps->nodes[index];
    if (n->type == N_REPEAT)
        return n->value;
    int32_t best = 1;
    for (int k = n->child; k >= 0; k = ps->nodes[k].next) {
        int32_t v = repeat_product(ps, k);
        best = v > best ? v : best;
    }
    return best;
}

static int quantify(Parser *ps, int atom, const int *flags)
{
    const unsigned char *start = ps->p;
    int32_t min = 0, max = -1, product = repeat_product(ps, atom);
    if (*ps->p == '{') {
        parse_braces(ps, &min, &max);
        /* as RE2: counts up to 1000, also multiplied through nested counts */
        int64_t count = (int64_t)(max >= 0 ? max : min) * product;
        if (min > MAX_REPEAT || max > MAX_REPEAT || (max >= 0 && max < min) || count > MAX_REPEAT)
            return fail(ps, "invalid repetition size", start, (size_t)(ps->p - start));
        product = (int32_t)count;
    } else {
        min = *ps->p == '+';
        max = *ps->p == '?' ? 1 : -1;
        ps->p++;
    }
    bool greedy = !(*flags & F_UNGREEDY);
    if (ps->p < ps->end && *ps->p == '?') {
        greedy = !greedy;
        ps->p++;
    }
    if (at_quantifier(ps))
        return fail(ps, "bad repetition operator", start, (size_t)(ps->p + 1 - start));
    int node = new_node(ps, N_REPEAT);
    if (node < 0)
        return -1;
    Node *n = &ps->nodes[node];
    n->min = min;
    n->max = max;
    n->value = product;
    n->greedy = greedy;
    add_child(ps, node, atom);
    return node;
}

static int parse_repeat(Parser *ps, int *flags)
{
    int atom = parse_atom(ps, flags);
    if (atom < 0 || !at_quantifier(ps))
        return atom;
    return quantify(ps, atom, flags);
}

static int parse_concat(Parser *ps, int *flags)
{
    int cat = new_node(ps, N_CAT);
    while (cat >= 0 && ps->p < ps->end && *ps->p != '|' && *ps->p != ')') {
        int item = parse_repeat(ps, flags);
        if (item == FLAGS_ONLY && at_quantifier(ps)) {
            /* a quantifier after (?flags) applies to the item before, as in RE2 */
            Node *c = &ps->nodes[cat];
            if (c->last < 0)
                return parse_atom(ps, flags) < 0 ? -1 : fail(ps, "missing argument", NULL, 0);
            int last = c->last, prev = -1;
            for (int k = c->child; k != last; k = ps->nodes[k].next)
                prev = k;
            int q = quantify(ps, last, flags);
            if (q < 0)
                return -1;
            c = &ps->nodes[cat];
            if (prev < 0)
                c->child = q;
            else
                ps->nodes[prev].next = q;
            c->last = q;
            continue;
        }
        if (item == FLAGS_ONLY)
            continue;
        if (item < 0)
            return -1;
        add_child(ps, cat, item);
    }
    return cat;
}

static int parse_alt(Parser *ps, int flags)
{
    int first = parse_concat(ps, &flags);
    if (first < 0 || ps->p >= ps->end || *ps->p != '|')
        return first;
    int alt = new_node(ps, N_ALT);
    if (alt < 0)
        return -1;
    add_child(ps, alt, first);
    while (ps->p < ps->end && *ps->p == '|') {
        ps->p++;
        int next = parse_concat(ps, &flags);
        if (next < 0)
            return -1;
        add_child(ps, alt, next);
    }
    return alt;
}

/* -- compiling ---------------------------------------------------------- */

typedef struct {
    const Parser *ps;
    Inst *prog;
    int n, cap;
} Compiler;

static int emit(Compiler *c, int op, int32_t x, int32_t y)
{
    if (c->n >= MAX_INST)
        return -1;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        Inst *prog = realloc(c->prog, (size_t)cap * sizeof(Inst));
        if (!prog)
            return -1;
        c->prog = prog;
        c->cap = cap;
    }
    c->prog[c->n] = (Inst){(uint8_t)op, x, y};
    return c->n++;
}

static int compile_node(Compiler *c, int index);

/* `count` optional copies of node (nested: x(x(x)?)?)?), or a loop when count < 0. */
static int compile_optional(Compiler *c, int child, int count, bool greedy)
{
    if (count < 0) {
        int split = emit(c, I_SPLIT, 0, 0);
        if (split < 0 || compile_node(c, child) < 0 || emit(c, I_JMP, split, 0) < 0)
            return -1;
        c->prog[split].x = greedy ? split + 1 : c->n;
        c->prog[split].y = greedy ? c->n : split + 1;
        return 0;
    }
    /* The splits are chained through their y until the end is known. */
    int32_t chain = -1;
    for (int i = 0; i < count; i++) {
        int split = emit(c, I_SPLIT, 0, chain);
        if (split < 0 || compile_node(c, child) < 0)
            return -1;
        chain = split;
    }
    while (chain >= 0) {
        int32_t next = c->prog[chain].y;
        c->prog[chain].x = greedy ? chain + 1 : c->n;
        c->prog[chain].y = greedy ? c->n : chain + 1;
        chain = next;
    }
    return 0;
}

static int compile_node(Compiler *c, int index)
{
    const Node *n = &c->ps->nodes[index];
    switch (n->type) {
    case N_LIT:
        return emit(c, I_CHAR, n->value, 0);
    case N_CLASS:
        return emit(c, I_CLASS, n->value, 0);
    case N_ANY:
        return emit(c, n->value ? I_ANY : I_ANYNL, 0, 0);
    case N_ASSERT:
        return emit(c, I_ASSERT, n->value, 0);
    case N_EMPTY:
        return 0;
    case N_CAT:
        for (int k = n->child; k >= 0; k = c->ps->nodes[k].next)
            if (compile_node(c, k) < 0)
                return -1;
        return 0;
    case N_GROUP:
        if (n->value >= 0 && emit(c, I_SAVE, 2 * n->value, 0) < 0)
            return -1;
        if (compile_node(c, n->child) < 0)
            return -1;
        return n->value >= 0 ? emit(c, I_SAVE, 2 * n->value + 1, 0) : 0;
    case N_ALT: {
        int count = 0, nj = 0, rc = 0;
        for (int k = n->child; k >= 0; k = c->ps->nodes[k].next)
            count++;
        int *jumps = malloc((size_t)count * sizeof(int));
        if (!jumps)
            return -1;
        for (int k = n->child; k >= 0; k = c->ps->nodes[k].next) {
            bool last = c->ps->nodes[k].next < 0;
            int split = last ? 0 : emit(c, I_SPLIT, 0, 0);
            if (split < 0 || compile_node(c, k) < 0) {
                rc = -1;
                break;
            }
            if (!last) {
                if ((jumps[nj++] = emit(c, I_JMP, 0, 0)) < 0) {
                    rc = -1;
                    break;
                }
                c->prog[split].x = split + 1;
                c->prog[split].y = c->n;
            }
        }
        for (int i = 0; rc == 0 && i < nj; i++)
            c->prog[jumps[i]].x = c->n;
        free(jumps);
        return rc;
    }
    default: /* N_REPEAT */
        if (n->max == -1 && n->min > 0) { /* x{min-1} then x+ */
            for (int i = 0; i < n->min - 1; i++)
                if (compile_node(c, n->child) < 0)
                    return -1;
            int top = c->n;
            if (compile_node(c, n->child) < 0)
                return -1;
            int split = emit(c, I_SPLIT, 0, 0);
            if (split < 0)
                return -1;
            c->prog[split].x = n->greedy ? top : split + 1;
            c->prog[split].y = n->greedy ? split + 1 : top;
            return 0;
        }
        for (int i = 0; i < n->min; i++)
            if (compile_node(c, n->child) < 0)
                return -1;
        return compile_optional(c, n->child, n->max < 0 ? -1 : n->max - n->min, n->greedy);
    }
}

CvStatus cv_regex_compile(const char *pattern, size_t len, CvRegex **out)
{
    *out = NULL;
    Parser ps = {.p = (const unsigned char *)pattern, .end = (const unsigned char *)pattern + len};
    CvRegex *re = calloc(1, sizeof(*re));
    Compiler c = {.ps = &ps};
    CvStatus s = CV_STATUS_OK;
    int root = re ? parse_alt(&ps, 0) : -1;
    if (!re) {
        s = cv_error_nomem();
        goto cleanup;
    }
    if (root >= 0 && ps.p < ps.end)
        root = fail(&ps, "unexpected )", (const unsigned char *)pattern, len);
    if (root < 0) {
        s = ps.nomem ? cv_error_nomem()
                     : cv_error(CV_INVALID_ARGUMENT, "Invalid pattern: %.*s, error: %s",
                                (int)(len > 200 ? 200 : len), pattern, ps.why);
        goto cleanup;
    }
    if (emit(&c, I_SAVE, 0, 0) < 0 || compile_node(&c, root) < 0 || emit(&c, I_SAVE, 1, 0) < 0 ||
        emit(&c, I_MATCH, 0, 0) < 0) {
        s = cv_error(CV_INVALID_ARGUMENT, "Invalid pattern: %.*s, error: pattern too large - "
                     "compile failed", (int)(len > 200 ? 200 : len), pattern);
        goto cleanup;
    }
    re->prog = c.prog;
    c.prog = NULL;
    re->ninst = c.n;
    re->classes = ps.classes;
    re->nclasses = ps.nclasses;
    ps.classes = NULL;
    ps.nclasses = 0;
    re->groups = ps.groups;
    *out = re;
    re = NULL;
cleanup:
    for (int i = 0; i < ps.nclasses; i++)
        free(ps.classes[i].r);
    free(ps.classes);
    free(ps.nodes);
    free(c.prog);
    cv_regex_free(re);
    return s;
}

void cv_regex_free(CvRegex *re)
{
    if (!re)
        return;
    for (int i = 0; i < re->nclasses; i++)
        free(re->classes[i].r);
    free(re->classes);
    free(re->prog);
    free(re);
}

int cv_regex_groups(const CvRegex *re)
{
    return re->groups;
}
