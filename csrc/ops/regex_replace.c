/* RegexReplace(input): each string of a string tensor with the matches of a
 * regular expression replaced (tf.strings.regex_replace), the first one or
 * all (global). Matching follows RE2's GlobalReplace: matches do not
 * overlap, and an empty match right after the previous match is skipped
 * (the search moves on by one character). The rewrite may name groups:
 * \0 (the whole match) to \9, and \\ is a backslash; a rewrite naming a
 * group the pattern does not have leaves the strings unchanged, as RE2 does.
 *
 * string: pattern, a NUL byte, rewrite (neither has NUL bytes);
 * ints: [0] replace_global; object: the compiled pattern (a CvRegex from
 * the binding, optional: compiled per call without it). */
#include <string.h>

#include "ops/op.h"
#include "ops/regex.h"
#include "ops/string_out.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { REGEX_REPLACE_REPLACE_GLOBAL, REGEX_REPLACE_NUM_INTS };
static const char *const regex_replace_int_attrs[] = {"replace_global", NULL};
CV_ATTR_NAMES_MATCH(regex_replace_int_attrs, REGEX_REPLACE_NUM_INTS);

/* The largest group the rewrite names (-1: none); -2 for a bad escape. */
static int max_group(const char *rw, size_t n)
{
    int max = -1;
    for (size_t i = 0; i < n; i++) {
        if (rw[i] != '\\')
            continue;
        if (++i == n)
            return -2;
        if (rw[i] >= '0' && rw[i] <= '9')
            max = rw[i] - '0' > max ? rw[i] - '0' : max;
        else if (rw[i] != '\\')
            return -2;
    }
    return max;
}

static CvStatus rewrite(CvStringOut *o, const char *rw, size_t n, const char *text,
                        const int64_t *caps)
{
    CvStatus s = CV_STATUS_OK;
    for (size_t i = 0; !s && i < n; i++) {
        if (rw[i] != '\\') {
            size_t j = i;
            while (j < n && rw[j] != '\\')
                j++;
            s = cv_string_out_append(o, rw + i, j - i);
            i = j - 1;
        } else if (rw[++i] == '\\') {
            s = cv_string_out_append(o, "\\", 1);
        } else {
            int g = rw[i] - '0';
            if (caps[2 * g] >= 0)
                s = cv_string_out_append(o, text + caps[2 * g],
                                         (size_t)(caps[2 * g + 1] - caps[2 * g]));
        }
    }
    return s;
}

static CvStatus replace_one(CvStringOut *o, CvRegexVm *vm, const char *text, size_t n,
                            const char *rw, size_t rwn, bool global, int64_t *caps)
{
    CvStatus s = CV_STATUS_OK;
    size_t p = 0;
    int64_t last_end = -1;
    while (!s && p <= n) {
        if (!cv_regex_match(vm, text, n, p, CV_REGEX_UNANCHORED, caps))
            break;
        size_t a = (size_t)caps[0], b = (size_t)caps[1];
        s = cv_string_out_append(o, text + p, a - p);
        if (!s && a == b && (int64_t)a == last_end) { /* empty, touching the last match */
            if (p >= n)
                break;
            size_t len = cv_regex_advance(text + p, n - p);
            s = cv_string_out_append(o, text + p, len);
            p += len;
            continue;
        }
        if (!s)
            s = rewrite(o, rw, rwn, text, caps);
        p = b;
        last_end = (int64_t)b;
        if (!global)
            break;
    }
    if (!s && p < n)
        s = cv_string_out_append(o, text + p, n - p);
    return s;
}

static CvStatus regex_replace_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                  CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    if (!attrs->string || attrs->num_ints < REGEX_REPLACE_NUM_INTS)
        return cv_error(CV_INVALID_ARGUMENT, "RegexReplace needs a pattern and a rewrite");
    if (in[0].dtype != CV_STRING)
        return cv_error(CV_INVALID_ARGUMENT, "RegexReplace needs strings, got %s",
                        cv_dtype_name(in[0].dtype));
    const char *pattern = attrs->string, *rw = pattern + strlen(pattern) + 1;
    const size_t rwn = strlen(rw);
    const int group = max_group(rw, rwn);
    if (group == -2)
        return cv_error(CV_INVALID_ARGUMENT, "invalid rewrite pattern: %s", rw);
    CvRegex *own = NULL; /* compiled here when the binding gave none */
    const CvRegex *re = attrs->object;
    CvRegexVm *vm = NULL;
    CvStringOut o = {0};
    int64_t caps[20];
    const int64_t n = cv_tensor_num_elements(&in[0]);
    CvStatus s = CV_STATUS_OK;
    if (!re && !(s = cv_regex_compile(pattern, strlen(pattern), &own)))
        re = own;
    const bool unchanged = !s && group > cv_regex_groups(re);
    if (!s)
        s = cv_regex_vm_new(re, group < 0 ? 1 : group + 1, &vm);
    if (!s)
        s = cv_string_out_init(&o, n);
    for (int64_t i = 0; !s && i < n; i++) {
        size_t len;
        const char *text = cv_string_at(&in[0], i, &len);
        if (unchanged)
            s = cv_string_out_append(&o, text, len);
        else
            s = replace_one(&o, vm, text, len, rw, rwn,
                            attrs->ints[REGEX_REPLACE_REPLACE_GLOBAL] != 0, caps);
        cv_string_out_end(&o);
    }
    if (!s)
        s = cv_string_out_finish(&o, in[0].rank, in[0].shape, &out[0]);
    cv_string_out_free(&o);
    cv_regex_vm_free(vm);
    cv_regex_free(own);
    return s;
}

const CvOp cv_op_regex_replace = {
    .name = "RegexReplace", .min_inputs = 1, .max_inputs = 1, .run = regex_replace_run,
    .int_attrs = regex_replace_int_attrs};
