/* Little-endian loads for code that hashes or checksums bytes the same way
 * on every machine (core/hash128.c, io/crc32c.c). */
#ifndef CV_BYTE_ORDER_H
#define CV_BYTE_ORDER_H

#include <stdint.h>
#include <string.h>

static inline uint64_t cv_load_le64(const void *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

#endif
