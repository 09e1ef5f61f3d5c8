/* UTF-8 decoding (ops/utf8.h). */
#include "ops/utf8.h"

int32_t cv_utf8_decode(const unsigned char *s, size_t n, int *len)
{
    *len = 1;
    unsigned c = s[0];
    if (c < 0x80)
        return (int32_t)c;
    int need;
    int32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF)
        need = 1, cp = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        need = 2, cp = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        need = 3, cp = c & 0x07, min = 0x10000;
    else
        return -1;
    if ((size_t)need >= n)
        return -1;
    for (int i = 1; i <= need; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return -1;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return -1;
    *len = need + 1;
    return cp;
}
