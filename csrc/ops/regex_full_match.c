/* RegexFullMatch(input): whether each string of a string tensor matches a
 * regular expression as a whole (tf.strings.regex_full_match), as a bool
 * tensor of the input's shape. The pattern (RE2 syntax, ops/regex.h) is
 * compiled by the binding once per program (the obj attribute, a CvRegex),
 * or here per call when there is none; an invalid one is an
 * InvalidArgumentError.
 *
 * string: the pattern (UTF-8, no NUL bytes); object: the compiled pattern
 * (a CvRegex, optional). */
#include <string.h>

#include "ops/op.h"
#include "ops/regex.h"

static CvStatus regex_full_match_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                                     CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    if (!attrs->string)
        return cv_error(CV_INVALID_ARGUMENT, "RegexFullMatch needs a pattern");
    if (in[0].dtype != CV_STRING)
        return cv_error(CV_INVALID_ARGUMENT, "RegexFullMatch needs strings, got %s",
                        cv_dtype_name(in[0].dtype));
    CvRegex *own = NULL; /* compiled here when the binding gave none */
    const CvRegex *re = attrs->object;
    CvRegexVm *vm = NULL;
    CvStatus s = CV_STATUS_OK;
    if (!re && !(s = cv_regex_compile(attrs->string, strlen(attrs->string), &own)))
        re = own;
    if (!s)
        s = cv_regex_vm_new(re, 0, &vm);
    if (!s)
        s = cv_tensor_alloc(&out[0], CV_BOOL, in[0].rank, in[0].shape, 0, NULL);
    if (!s) {
        const int64_t n = cv_tensor_num_elements(&in[0]);
        const CvStringRef *refs = (const CvStringRef *)in[0].data;
        bool *dst = (bool *)out[0].data;
        for (int64_t i = 0; i < n; i++)
            dst[i] = cv_regex_match(vm, cv_string_data(&in[0], &refs[i]), (size_t)refs[i].length,
                                    0, CV_REGEX_FULL, NULL) != 0;
    }
    cv_regex_vm_free(vm);
    cv_regex_free(own);
    return s;
}

const CvOp cv_op_regex_full_match = {"RegexFullMatch", 1, 1, regex_full_match_run};
