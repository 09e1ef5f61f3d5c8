/* CRC-32C: SSE4.2 instruction with run-time detection, slicing-by-8 fallback. */
#include "io/crc32c.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CV_CRC32C_X86 1
#include <nmmintrin.h>
#endif

#define POLY 0x82f63b78u /* reflected Castagnoli polynomial */

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static atomic_int force_software;

static void table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (POLY & (0u - (c & 1)));
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

static inline uint64_t load64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

uint32_t cv_crc32c_extend_software(uint32_t crc, const void *data, size_t n)
{
    pthread_once(&table_once, table_init);
    const unsigned char *p = data;
    uint32_t c = ~crc;
    while (n && ((uintptr_t)p & 7)) {
        c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
        n--;
    }
    while (n >= 8) {
        uint64_t v = load64(p) ^ c;
        c = table[7][v & 0xff] ^ table[6][(v >> 8) & 0xff] ^ table[5][(v >> 16) & 0xff] ^
            table[4][(v >> 24) & 0xff] ^ table[3][(v >> 32) & 0xff] ^ table[2][(v >> 40) & 0xff] ^
            table[1][(v >> 48) & 0xff] ^ table[0][v >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
    return ~c;
}

#ifdef CV_CRC32C_X86
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t c = ~crc;
    while (n && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        n--;
    }
    /* Four independent 8-byte steps per iteration still form one chain; the
     * unrolling only trims loop overhead. */
    while (n >= 32) {
        uint64_t a, b, d, e;
        memcpy(&a, p, 8);
        memcpy(&b, p + 8, 8);
        memcpy(&d, p + 16, 8);
        memcpy(&e, p + 24, 8);
        c = _mm_crc32_u64(c, a);
        c = _mm_crc32_u64(c, b);
        c = _mm_crc32_u64(c, d);
        c = _mm_crc32_u64(c, e);
        p += 32;
        n -= 32;
    }
    while (n >= 8) {
        uint64_t a;
        memcpy(&a, p, 8);
        c = _mm_crc32_u64(c, a);
        p += 8;
        n -= 8;
    }
    while (n--)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}

static int hw_state; /* 0 unknown, 1 yes, 2 no; set once, benign race (same value) */

static bool have_hw(void)
{
    int s = __atomic_load_n(&hw_state, __ATOMIC_RELAXED);
    if (!s) {
        __builtin_cpu_init();
        s = __builtin_cpu_supports("sse4.2") ? 1 : 2;
        __atomic_store_n(&hw_state, s, __ATOMIC_RELAXED);
    }
    return s == 1;
}
#endif

bool cv_crc32c_hardware(void)
{
#ifdef CV_CRC32C_X86
    return !atomic_load_explicit(&force_software, memory_order_relaxed) && have_hw();
#else
    return false;
#endif
}

void cv_crc32c_force_software(bool on)
{
    atomic_store(&force_software, on ? 1 : 0);
}

uint32_t cv_crc32c_extend(uint32_t crc, const void *data, size_t n)
{
#ifdef CV_CRC32C_X86
    if (cv_crc32c_hardware())
        return crc32c_hw(crc, data, n);
#endif
    return cv_crc32c_extend_software(crc, data, n);
}
