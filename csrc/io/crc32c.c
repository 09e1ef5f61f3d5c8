/* CRC-32C: SSE4.2 instruction with run-time detection, slicing-by-8 fallback. */
#include "io/crc32c.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "core/byte_order.h"

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
        uint64_t v = cv_load_le64(p) ^ c;
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
/* The crc32 instruction has a latency of 3 cycles and a throughput of one
 * per cycle, so one dependent chain runs at a third of the unit's speed.
 * Long inputs are cut into blocks of three stripes of `len` bytes, CRC'd as
 * three independent chains, and joined: for raw (uninverted) CRC registers,
 * crc(c, A || B) = shift_|B|(crc(c, A)) ^ crc(0, B), where shift_n (the
 * register after n zero bytes) is linear, so a table per register byte
 * applies it. */
typedef struct Stripe {
    size_t len; /* bytes per stripe, a multiple of 8 */
    uint32_t shift[4][256];
} Stripe;

static Stripe long_stripe = {.len = 8192}, short_stripe = {.len = 256};
static pthread_once_t stripe_once = PTHREAD_ONCE_INIT;

__attribute__((target("sse4.2"))) static uint32_t zeros_hw(uint32_t c, size_t n)
{
    uint64_t r = c;
    for (size_t i = 0; i < n; i += 8)
        r = _mm_crc32_u64(r, 0);
    return (uint32_t)r;
}

__attribute__((target("sse4.2"))) static void stripe_init(Stripe *st)
{
    uint32_t basis[32];
    for (int b = 0; b < 32; b++)
        basis[b] = zeros_hw(UINT32_C(1) << b, st->len);
    for (int k = 0; k < 4; k++)
        for (uint32_t v = 0; v < 256; v++) {
            uint32_t x = 0;
            for (int b = 0; b < 8; b++)
                if (v >> b & 1)
                    x ^= basis[8 * k + b];
            st->shift[k][v] = x;
        }
}

static void stripes_init(void)
{
    stripe_init(&long_stripe);
    stripe_init(&short_stripe);
}

static inline uint32_t shift(const Stripe *st, uint32_t c)
{
    return st->shift[0][c & 0xff] ^ st->shift[1][(c >> 8) & 0xff] ^
           st->shift[2][(c >> 16) & 0xff] ^ st->shift[3][c >> 24];
}

/* Raw register c over as many whole blocks of 3 * st->len bytes as fit. */
__attribute__((target("sse4.2"))) static uint64_t blocks_hw(const Stripe *st, uint64_t c,
                                                             const unsigned char **pp, size_t *np)
{
    const unsigned char *p = *pp;
    size_t n = *np, len = st->len;
    while (n >= 3 * len) {
        uint64_t c1 = 0, c2 = 0;
        for (size_t i = 0; i < len; i += 8) {
            uint64_t a, b, d;
            memcpy(&a, p + i, 8);
            memcpy(&b, p + len + i, 8);
            memcpy(&d, p + 2 * len + i, 8);
            c = _mm_crc32_u64(c, a);
            c1 = _mm_crc32_u64(c1, b);
            c2 = _mm_crc32_u64(c2, d);
        }
        c = shift(st, shift(st, (uint32_t)c) ^ (uint32_t)c1) ^ (uint32_t)c2;
        p += 3 * len;
        n -= 3 * len;
    }
    *pp = p;
    *np = n;
    return c;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t c = ~crc;
    while (n && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        n--;
    }
    if (n >= 3 * short_stripe.len) {
        pthread_once(&stripe_once, stripes_init);
        c = blocks_hw(&long_stripe, c, &p, &n);
        c = blocks_hw(&short_stripe, c, &p, &n);
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
