/* UTF-8 decoding shared by the string ops and the regex engine. Not an op. */
#ifndef CV_UTF8_H
#define CV_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The UTF-8 character at s[0..n) (n >= 1): its code point, and its length
 * in *len; -1 with *len 1 for a byte that does not start a valid one (no
 * overlong forms, surrogates or code points past U+10FFFF). */
int32_t cv_utf8_decode(const unsigned char *s, size_t n, int *len);

#endif
