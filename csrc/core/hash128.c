/* cv_hash128: eight independent lanes eat 64-byte stripes, one 64-bit
 * little-endian word each: the word is xored into the lane, the lane
 * multiplied by an odd constant and rotated (the multiply spreads each input
 * bit over the higher bits, the rotation brings them back down). Each step
 * is a bijection of the lane for a fixed word and of the word for a fixed
 * lane, so changing one word always changes the result. The lanes do not
 * depend on each other, so the CPU overlaps their multiplies and the loop
 * runs near memory bandwidth. The tail (under 64 bytes) goes word by word
 * into lanes 0, 1, ..., then its last bytes as one word; the length is mixed
 * in, and the lanes are folded into two 64-bit halves, each through a
 * full-avalanche finalizer (xor-shift / multiply rounds). */
#include "core/hash128.h"

#include <string.h>

#include "core/byte_order.h"

#define K1 0x9e3779b97f4a7c15ULL /* 2^64 / golden ratio, odd */
#define K2 0xc2b2ae3d27d4eb4fULL
#define K3 0x165667b19e3779f9ULL
#define K4 0xd6e8feb86659fd93ULL
#define LANES 8 /* 64-byte stripes */

static inline uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t lane_step(uint64_t acc, uint64_t word)
{
    return rotl64((acc ^ word) * K1, 29);
}

static inline uint64_t avalanche(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 29;
    x *= K4;
    x ^= x >> 32;
    return x;
}

void cv_hash128(const void *data, size_t size, unsigned char out[16])
{
    const unsigned char *p = data;
    uint64_t v[LANES];
    for (int k = 0; k < LANES; k++)
        v[k] = K1 * (uint64_t)(2 * k + 1) ^ K3;
    size_t n = size;
    while (n >= 8 * LANES) {
        for (int k = 0; k < LANES; k++)
            v[k] = lane_step(v[k], cv_load_le64(p + 8 * k));
        p += 8 * LANES;
        n -= 8 * LANES;
    }
    int i = 0;
    for (; n >= 8; n -= 8, p += 8, i++)
        v[i] = lane_step(v[i], cv_load_le64(p));
    uint64_t last = 0;
    for (size_t k = 0; k < n; k++)
        last |= (uint64_t)p[k] << (8 * k);
    if (n) /* the count of tail bytes is in `size`, mixed in below */
        v[i] = lane_step(v[i], last ^ ((uint64_t)n << 56));
    uint64_t a = v[0] + rotl64(v[4], 17), b = v[1] + rotl64(v[5], 17);
    uint64_t c = v[2] + rotl64(v[6], 17), d = v[3] + rotl64(v[7], 17);
    uint64_t len = (uint64_t)size;
    uint64_t h1 = avalanche(rotl64(a, 7) + rotl64(b, 19) + (c ^ len * K3) + rotl64(d, 43));
    uint64_t h2 = avalanche((a ^ rotl64(c, 23)) + (b * K4) + rotl64(d ^ len, 37) + h1);
    h1 = avalanche(h1 + h2 * K2);
    for (int k = 0; k < 8; k++) {
        out[k] = (unsigned char)(h1 >> (8 * k));
        out[8 + k] = (unsigned char)(h2 >> (8 * k));
    }
}
