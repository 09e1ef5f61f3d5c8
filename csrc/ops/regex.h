/* A regular expression engine for the tf.strings regex ops (not an op).
 *
 * Syntax is RE2's (TensorFlow's engine), the part of it the ops need:
 * literals and escapes (\n \t \x41 \x{263a} \. ...), `.`, classes [a-z],
 * [^...], [[:alpha:]], \d \w \s \D \W \S, anchors ^ $ \A \z \b \B, groups
 * ( ) (?: ) (?P<name> ), alternation, greedy and lazy * + ? {m} {m,} {m,n}
 * (counts up to 1000), and the flags i, m, s in (?flags) and (?flags:re).
 * Patterns and texts are UTF-8: `.` and classes match one character; a byte
 * that does not start a UTF-8 sequence matches no class and no `.` (as in
 * RE2, whose automaton accepts surrogates and overlong 3- and 4-byte forms
 * as characters).
 * \w \d \s \b and the POSIX classes are ASCII, as in RE2. Case folding
 * covers ASCII and Latin-1.
 *
 * Matching is a Pike VM (a Thompson NFA with submatches): time linear in
 * the text times the program's size, whatever the pattern; submatches
 * follow RE2's leftmost-first rule (Perl's preferences without its
 * backtracking).
 *
 * A compiled CvRegex is immutable, so any number of threads may match with
 * it at once, each with its own CvRegexVm (scratch space).
 */
#ifndef CV_REGEX_H
#define CV_REGEX_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "ops/regex_match.h" /* the matcher's half: CvRegexVm, cv_regex_match */

typedef struct CvRegex CvRegex;

/* Compile pattern[0..len); an invalid pattern is a CV_INVALID_ARGUMENT
 * "Invalid pattern: <pattern>, error: <why>". */
CvStatus cv_regex_compile(const char *pattern, size_t len, CvRegex **out);
void cv_regex_free(CvRegex *re); /* NULL-safe */
/* The number of capturing groups. */
int cv_regex_groups(const CvRegex *re);

#endif
