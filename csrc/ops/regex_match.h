/* The regex engine's matcher (regex_match.c): scratch space and matching
 * for a compiled CvRegex (built by ops/regex.h, which includes this header,
 * so users of the engine include ops/regex.h alone). Not an op. */
#ifndef CV_REGEX_MATCH_H
#define CV_REGEX_MATCH_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct CvRegex CvRegex;
typedef struct CvRegexVm CvRegexVm;

/* Scratch space for matching with `re`, recording the first `ncap` groups
 * (0: none; group 0 is the whole match). */
CvStatus cv_regex_vm_new(const CvRegex *re, int ncap, CvRegexVm **out);
void cv_regex_vm_free(CvRegexVm *vm); /* NULL-safe */

enum { CV_REGEX_UNANCHORED = 0, CV_REGEX_FULL = 1 };

/* Search text[0..n) from byte `start` for the leftmost-first match (FULL:
 * one spanning all of text[start..n)). Returns 1 with caps[2g], caps[2g+1]
 * the byte span of group g < ncap (-1, -1 when it took no part), else 0. */
int cv_regex_match(CvRegexVm *vm, const char *text, size_t n, size_t start, int anchor,
                   int64_t *caps);

/* How far regex_replace moves past an empty match at text[0..n) (n >= 1):
 * one UTF-8 character (surrogates count), or one byte. */
size_t cv_regex_advance(const char *text, size_t n);

#endif
