/* The regex engine of ops/regex.h, its second half: the Pike VM that runs
 * a compiled program (ops/regex_program.h) over a text. Each step moves
 * every thread over one character, in priority order, so the time is linear
 * in the text times the program's size. */
#include <stdlib.h>
#include <string.h>

#include "ops/regex_match.h"
#include "ops/regex_program.h"
#include "ops/utf8.h"

/* The character at s[0..n) as the matcher sees it, RE2's way: a lead byte
 * C2-DF, E0-EF or F0-F4 and the continuation bytes it asks for make one
 * character (surrogates, overlong three- and four-byte forms included);
 * any other byte is no character (-1, length 1). */
static int32_t match_decode(const unsigned char *s, size_t n, int *len)
{
    unsigned c = s[0];
    *len = 1;
    if (c < 0x80)
        return (int32_t)c;
    int need = c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : 0;
    if (!need || (size_t)need >= n)
        return -1;
    int32_t cp = (int32_t)(c & (0x3F >> need));
    for (int i = 1; i <= need; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return -1;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    *len = need + 1;
    return cp;
}

size_t cv_regex_advance(const char *text, size_t n)
{
    int len;
    const unsigned char *s = (const unsigned char *)text;
    if (cv_utf8_decode(s, n, &len) >= 0)
        return (size_t)len;
    /* a surrogate (ED A0-BF xx) counts as one character, as in RE2 */
    if (n >= 3 && s[0] == 0xED && (s[1] & 0xE0) == 0xA0 && (s[2] & 0xC0) == 0x80)
        return 3;
    return 1;
}

/* -- matching ----------------------------------------------------------- */

typedef struct {
    int32_t pc;   /* -1: a restore entry */
    int32_t slot;
    int64_t value;
} StackEntry;

struct CvRegexVm {
    const CvRegex *re;
    int nslots;
    int32_t *pcs[3]; /* two thread lists, and a scratch one */
    int64_t *caps[3];
    int count[3];
    uint32_t *mark, *mark2; /* "on the list" marks: the current list's, the scratch one's */
    uint32_t gen, gen2;
    StackEntry *stack;
    int64_t *cur;
};

CvStatus cv_regex_vm_new(const CvRegex *re, int ncap, CvRegexVm **out)
{
    CvRegexVm *vm = calloc(1, sizeof(*vm));
    *out = NULL;
    if (!vm)
        return cv_error_nomem();
    size_t n = (size_t)re->ninst;
    vm->re = re;
    vm->nslots = 2 * (ncap < 0 ? 0 : ncap > re->groups + 1 ? re->groups + 1 : ncap);
    size_t slots = (size_t)vm->nslots;
    for (int i = 0; i < 3; i++) {
        vm->pcs[i] = malloc(n * sizeof(int32_t));
        vm->caps[i] = malloc(n * slots * sizeof(int64_t) + 1);
    }
    vm->mark = calloc(n, sizeof(uint32_t));
    vm->mark2 = calloc(n, sizeof(uint32_t));
    vm->stack = malloc((2 * n + 2) * sizeof(StackEntry));
    vm->cur = malloc(slots * sizeof(int64_t) + 1);
    if (!vm->pcs[0] || !vm->pcs[1] || !vm->pcs[2] || !vm->caps[0] || !vm->caps[1] ||
        !vm->caps[2] || !vm->mark || !vm->mark2 || !vm->stack || !vm->cur) {
        cv_regex_vm_free(vm);
        return cv_error_nomem();
    }
    *out = vm;
    return CV_STATUS_OK;
}

void cv_regex_vm_free(CvRegexVm *vm)
{
    if (!vm)
        return;
    for (int i = 0; i < 3; i++) {
        free(vm->pcs[i]);
        free(vm->caps[i]);
    }
    free(vm->mark);
    free(vm->mark2);
    free(vm->stack);
    free(vm->cur);
    free(vm);
}

static void new_generation(CvRegexVm *vm)
{
    if (++vm->gen == 0) {
        memset(vm->mark, 0, (size_t)vm->re->ninst * sizeof(uint32_t));
        vm->gen = 1;
    }
}

static bool is_word(unsigned char c)
{
    return c == '_' || (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z');
}

static bool assertion(int kind, const unsigned char *t, size_t n, size_t p)
{
    switch (kind) {
    case A_BEGIN_TEXT:
        return p == 0;
    case A_END_TEXT:
        return p == n;
    case A_BEGIN_LINE:
        return p == 0 || t[p - 1] == '\n';
    case A_END_LINE:
        return p == n || t[p] == '\n';
    default: {
        bool before = p > 0 && is_word(t[p - 1]), after = p < n && is_word(t[p]);
        return (before != after) == (kind == A_WORD);
    }
    }
}

/* Follow the empty transitions from pc at text position p, appending the
 * threads that reach a consuming instruction or MATCH to list l, in
 * priority order; vm->cur holds the thread's captures (restored after). */
static void add_thread(CvRegexVm *vm, int l, int32_t pc0, const unsigned char *t, size_t n,
                       size_t p)
{
    const Inst *prog = vm->re->prog;
    StackEntry *stack = vm->stack;
    int top = 0;
    stack[top++] = (StackEntry){pc0, 0, 0};
    while (top > 0) {
        StackEntry e = stack[--top];
        if (e.pc < 0) {
            vm->cur[e.slot] = e.value;
            continue;
        }
        int32_t pc = e.pc;
        while (vm->mark[pc] != vm->gen) {
            vm->mark[pc] = vm->gen;
            const Inst *in = &prog[pc];
            if (in->op == I_JMP) {
                pc = in->x;
            } else if (in->op == I_SPLIT) {
                stack[top++] = (StackEntry){in->y, 0, 0};
                pc = in->x;
            } else if (in->op == I_SAVE) {
                if (in->x < vm->nslots) {
                    stack[top++] = (StackEntry){-1, in->x, vm->cur[in->x]};
                    vm->cur[in->x] = (int64_t)p;
                }
                pc++;
            } else if (in->op == I_ASSERT) {
                if (!assertion(in->x, t, n, p))
                    break;
                pc++;
            } else {
                int k = vm->count[l]++;
                vm->pcs[l][k] = pc;
                if (vm->nslots)
                    memcpy(vm->caps[l] + (size_t)k * (size_t)vm->nslots, vm->cur,
                           (size_t)vm->nslots * sizeof(int64_t));
                break;
            }
        }
    }
}

static bool in_class(const Class *c, int32_t cp)
{
    if (cp < 128)
        return (c->ascii[cp >> 6] >> (cp & 63)) & 1;
    int lo = 0, hi = c->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < c->r[mid].lo)
            hi = mid - 1;
        else if (cp > c->r[mid].hi)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

/* Whether an empty match starts at byte q inside a multibyte character: RE2
 * searches from every byte, and from a continuation byte only an empty
 * match can succeed (no character starts there). Sets caps when so. */
static int empty_match_at(CvRegexVm *vm, const unsigned char *t, size_t n, size_t q,
                          int64_t *caps)
{
    uint32_t *mark = vm->mark, gen = vm->gen;
    vm->mark = vm->mark2; /* keep the current list's marks */
    vm->gen = vm->gen2;
    new_generation(vm);
    vm->count[2] = 0;
    for (int i = 0; i < vm->nslots; i++)
        vm->cur[i] = -1;
    add_thread(vm, 2, 0, t, n, q);
    int found = 0;
    for (int i = 0; !found && i < vm->count[2]; i++) {
        if (vm->re->prog[vm->pcs[2][i]].op != I_MATCH)
            continue;
        found = 1;
        if (vm->nslots)
            memcpy(caps, vm->caps[2] + (size_t)i * (size_t)vm->nslots,
                   (size_t)vm->nslots * sizeof(int64_t));
    }
    vm->mark2 = vm->mark;
    vm->gen2 = vm->gen;
    vm->mark = mark;
    vm->gen = gen;
    return found;
}

/* For an unanchored search: an empty match inside the character at p of
 * `len` bytes (it ranks below every thread started before). */
static int empty_match_inside(CvRegexVm *vm, const unsigned char *t, size_t n, size_t p, int len,
                              int64_t *caps)
{
    for (size_t q = p + 1; q < p + (size_t)len; q++)
        if (empty_match_at(vm, t, n, q, caps))
            return 1;
    return 0;
}

int cv_regex_match(CvRegexVm *vm, const char *text, size_t n, size_t start, int anchor,
                   int64_t *caps)
{
    const unsigned char *t = (const unsigned char *)text;
    const Inst *prog = vm->re->prog;
    const int nslots = vm->nslots;
    int cl = 0, matched = 0;
    vm->count[0] = vm->count[1] = 0;
    new_generation(vm);
    for (size_t p = start;;) {
        if (!matched && (anchor == CV_REGEX_UNANCHORED || p == start)) {
            for (int i = 0; i < nslots; i++)
                vm->cur[i] = -1;
            add_thread(vm, cl, 0, t, n, p);
        }
        int len = 1;
        if (vm->count[cl] == 0) {
            if (matched || anchor == CV_REGEX_FULL || p >= n)
                break;
            match_decode(t + p, n - p, &len); /* no thread: try the next start */
            if (len > 1 && empty_match_inside(vm, t, n, p, len, caps)) {
                matched = 1;
                break;
            }
            p += (size_t)len;
            new_generation(vm);
            continue;
        }
        int32_t c = p < n ? match_decode(t + p, n - p, &len) : -1;
        int nl = 1 - cl;
        vm->count[nl] = 0;
        new_generation(vm);
        for (int i = 0; i < vm->count[cl]; i++) {
            const Inst *in = &prog[vm->pcs[cl][i]];
            const int64_t *tc = vm->caps[cl] + (size_t)i * (size_t)nslots;
            bool ok = false;
            switch (in->op) {
            case I_MATCH:
                if (anchor == CV_REGEX_FULL && p != n)
                    continue;
                matched = 1;
                if (nslots)
                    memcpy(caps, tc, (size_t)nslots * sizeof(int64_t));
                i = vm->count[cl]; /* cut the threads of lower priority */
                continue;
            case I_CHAR:
                ok = c == in->x;
                break;
            case I_CLASS:
                ok = c >= 0 && in_class(&vm->re->classes[in->x], c);
                break;
            case I_ANY:
                ok = c >= 0;
                break;
            default: /* I_ANYNL */
                ok = c >= 0 && c != '\n';
                break;
            }
            if (ok && p < n) {
                if (nslots)
                    memcpy(vm->cur, tc, (size_t)nslots * sizeof(int64_t));
                add_thread(vm, nl, vm->pcs[cl][i] + 1, t, n, p + (size_t)len);
            }
        }
        if (!matched && anchor == CV_REGEX_UNANCHORED && len > 1 &&
            empty_match_inside(vm, t, n, p, len, caps))
            matched = 1;
        cl = nl;
        if (p >= n)
            break;
        p += (size_t)len;
    }
    return matched;
}
