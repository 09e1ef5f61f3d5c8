/* StringToHashBucket(strings): each string's hash modulo num_buckets, as
 * int64, in the input's shape (tf.strings.to_hash_bucket_fast,
 * to_hash_bucket_strong, to_hash_bucket).
 *
 * ints: [0] kind, [1] num_buckets (>= 1), [2], [3] the strong key.
 * Kind 0 (fast): FarmHash's Fingerprint64 (its "na" 64-bit hash, seeded
 * as the fingerprint is). Kind 1 (strong): SipHash-2-4 keyed by the two
 * key words as unsigned 64-bit integers. Kind 2 (legacy to_hash_bucket):
 * MurmurHash64A with the seed 0xDECAFCAFFE. The unsigned hash is reduced
 * modulo num_buckets. Each algorithm is written here from its public
 * description; tests compare the buckets with TensorFlow's. */
#include <string.h>

#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { HASH_BUCKET_KIND, HASH_BUCKET_NUM_BUCKETS, HASH_BUCKET_KEY0, HASH_BUCKET_KEY1,
    HASH_BUCKET_NUM_INTS };
static const char *const hash_bucket_int_attrs[] = {"kind", "num_buckets", "key0", "key1", NULL};
CV_ATTR_NAMES_MATCH(hash_bucket_int_attrs, HASH_BUCKET_NUM_INTS);

enum { HASH_FAST = 0, HASH_STRONG = 1, HASH_LEGACY = 2 };

static uint64_t load64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint32_t load32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rotr(uint64_t v, int k)
{
    return k == 0 ? v : (v >> k) | (v << (64 - k));
}

static uint64_t rotl(uint64_t v, int k)
{
    return (v << k) | (v >> (64 - k));
}

/* -- FarmHash Fingerprint64 ------------------------------------------------ */

static const uint64_t K0 = UINT64_C(0xc3a5c85c97cb3127);
static const uint64_t K1 = UINT64_C(0xb492b66fbe98f273);
static const uint64_t K2 = UINT64_C(0x9ae16a3b2f90404f);

static uint64_t shift_mix(uint64_t v)
{
    return v ^ (v >> 47);
}

static uint64_t mix16(uint64_t u, uint64_t v, uint64_t mul)
{
    uint64_t a = (u ^ v) * mul;
    a ^= a >> 47;
    uint64_t b = (v ^ a) * mul;
    b ^= b >> 47;
    return b * mul;
}

static uint64_t hash_0_to_16(const unsigned char *s, size_t n)
{
    if (n >= 8) {
        uint64_t mul = K2 + n * 2;
        uint64_t a = load64(s) + K2;
        uint64_t b = load64(s + n - 8);
        uint64_t c = rotr(b, 37) * mul + a;
        uint64_t d = (rotr(a, 25) + b) * mul;
        return mix16(c, d, mul);
    }
    if (n >= 4) {
        uint64_t mul = K2 + n * 2;
        uint64_t a = load32(s);
        return mix16(n + (a << 3), load32(s + n - 4), mul);
    }
    if (n > 0) {
        uint32_t y = (uint32_t)s[0] + ((uint32_t)s[n >> 1] << 8);
        uint32_t z = (uint32_t)n + ((uint32_t)s[n - 1] << 2);
        return shift_mix((uint64_t)y * K2 ^ (uint64_t)z * K0) * K2;
    }
    return K2;
}

static uint64_t hash_17_to_32(const unsigned char *s, size_t n)
{
    uint64_t mul = K2 + n * 2;
    uint64_t a = load64(s) * K1;
    uint64_t b = load64(s + 8);
    uint64_t c = load64(s + n - 8) * mul;
    uint64_t d = load64(s + n - 16) * K2;
    return mix16(rotr(a + b, 43) + rotr(c, 30) + d, a + rotr(b + K2, 18) + c, mul);
}

static uint64_t hash_33_to_64(const unsigned char *s, size_t n)
{
    uint64_t mul = K2 + n * 2;
    uint64_t a = load64(s) * K2;
    uint64_t b = load64(s + 8);
    uint64_t c = load64(s + n - 8) * mul;
    uint64_t d = load64(s + n - 16) * K2;
    uint64_t y = rotr(a + b, 43) + rotr(c, 30) + d;
    uint64_t z = mix16(y, a + rotr(b + K2, 18) + c, mul);
    uint64_t e = load64(s + 16) * mul;
    uint64_t f = load64(s + 24);
    uint64_t g = (y + load64(s + n - 32)) * mul;
    uint64_t h = (z + load64(s + n - 24)) * mul;
    return mix16(rotr(e + f, 43) + rotr(g, 30) + h, e + rotr(f + a, 18) + g, mul);
}

typedef struct {
    uint64_t first, second;
} Pair;

static Pair weak32(const unsigned char *s, uint64_t a, uint64_t b)
{
    uint64_t w = load64(s), x = load64(s + 8), y = load64(s + 16), z = load64(s + 24);
    a += w;
    b = rotr(b + a + z, 21);
    uint64_t c = a;
    a += x;
    a += y;
    b += rotr(a, 44);
    return (Pair){a + z, b + c};
}

static uint64_t fingerprint64(const unsigned char *s, size_t n)
{
    if (n <= 16)
        return hash_0_to_16(s, n);
    if (n <= 32)
        return hash_17_to_32(s, n);
    if (n <= 64)
        return hash_33_to_64(s, n);
    const uint64_t seed = 81;
    uint64_t x = seed, y = seed * K1 + 113, z = shift_mix(y * K2 + 113) * K2, t;
    Pair v = {0, 0}, w = {0, 0};
    x = x * K2 + load64(s);
    const unsigned char *end = s + ((n - 1) / 64) * 64;
    const unsigned char *last64 = end + ((n - 1) & 63) - 63;
    do {
        x = rotr(x + y + v.first + load64(s + 8), 37) * K1;
        y = rotr(y + v.second + load64(s + 48), 42) * K1;
        x ^= w.second;
        y += v.first + load64(s + 40);
        z = rotr(z + w.first, 33) * K1;
        v = weak32(s, v.second * K1, x + w.first);
        w = weak32(s + 32, z + w.second, y + load64(s + 16));
        t = z;
        z = x;
        x = t;
        s += 64;
    } while (s != end);
    uint64_t mul = K1 + ((z & 0xff) << 1);
    s = last64;
    w.first += (n - 1) & 63;
    v.first += w.first;
    w.first += v.first;
    x = rotr(x + y + v.first + load64(s + 8), 37) * mul;
    y = rotr(y + v.second + load64(s + 48), 42) * mul;
    x ^= w.second * 9;
    y += v.first * 9 + load64(s + 40);
    z = rotr(z + w.first, 33) * mul;
    v = weak32(s, v.second * mul, x + w.first);
    w = weak32(s + 32, z + w.second, y + load64(s + 16));
    t = z;
    z = x;
    x = t;
    return mix16(mix16(v.first, w.first, mul) + shift_mix(y) * K0 + z,
                 mix16(v.second, w.second, mul) + x, mul);
}

/* -- SipHash-2-4 ----------------------------------------------------------- */

#define SIP_ROUND(v0, v1, v2, v3)                                                                \
    do {                                                                                         \
        v0 += v1;                                                                                \
        v1 = rotl(v1, 13);                                                                       \
        v1 ^= v0;                                                                                \
        v0 = rotl(v0, 32);                                                                       \
        v2 += v3;                                                                                \
        v3 = rotl(v3, 16);                                                                       \
        v3 ^= v2;                                                                                \
        v0 += v3;                                                                                \
        v3 = rotl(v3, 21);                                                                       \
        v3 ^= v0;                                                                                \
        v2 += v1;                                                                                \
        v1 = rotl(v1, 17);                                                                       \
        v1 ^= v2;                                                                                \
        v2 = rotl(v2, 32);                                                                       \
    } while (0)

static uint64_t siphash24(uint64_t k0, uint64_t k1, const unsigned char *s, size_t n)
{
    uint64_t v0 = k0 ^ UINT64_C(0x736f6d6570736575), v1 = k1 ^ UINT64_C(0x646f72616e646f6d);
    uint64_t v2 = k0 ^ UINT64_C(0x6c7967656e657261), v3 = k1 ^ UINT64_C(0x7465646279746573);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t m = load64(s + i);
        v3 ^= m;
        SIP_ROUND(v0, v1, v2, v3);
        SIP_ROUND(v0, v1, v2, v3);
        v0 ^= m;
    }
    uint64_t last = (uint64_t)(n & 0xff) << 56;
    for (size_t j = 0; i + j < n; j++)
        last |= (uint64_t)s[i + j] << (8 * j);
    v3 ^= last;
    SIP_ROUND(v0, v1, v2, v3);
    SIP_ROUND(v0, v1, v2, v3);
    v0 ^= last;
    v2 ^= 0xff;
    for (int r = 0; r < 4; r++)
        SIP_ROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

/* -- MurmurHash64A (the legacy to_hash_bucket) ------------------------------ */

static uint64_t murmur64(const unsigned char *s, size_t n, uint64_t seed)
{
    const uint64_t m = UINT64_C(0xc6a4a7935bd1e995);
    uint64_t h = seed ^ ((uint64_t)n * m);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t k = load64(s + i) * m;
        k ^= k >> 47;
        k *= m;
        h ^= k;
        h *= m;
    }
    size_t rest = n - i;
    if (rest) {
        for (size_t j = rest; j-- > 0;)
            h ^= (uint64_t)s[i + j] << (8 * j);
        h *= m;
    }
    h ^= h >> 47;
    h *= m;
    h ^= h >> 47;
    return h;
}

static CvStatus hash_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                         int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    if (attrs->num_ints != HASH_BUCKET_NUM_INTS || attrs->ints[HASH_BUCKET_KIND] < HASH_FAST ||
        attrs->ints[HASH_BUCKET_KIND] > HASH_LEGACY)
        return cv_error(CV_INVALID_ARGUMENT, "StringToHashBucket: malformed attributes");
    if (attrs->ints[HASH_BUCKET_NUM_BUCKETS] < 1)
        return cv_error(CV_INVALID_ARGUMENT,
                        "Value for attr 'num_buckets' of %lld must be at least minimum 1",
                        (long long)attrs->ints[HASH_BUCKET_NUM_BUCKETS]);
    if (in[0].dtype != CV_STRING)
        return cv_error(CV_INVALID_ARGUMENT, "StringToHashBucket needs strings, got %s",
                        cv_dtype_name(in[0].dtype));
    const int kind = (int)attrs->ints[HASH_BUCKET_KIND];
    const uint64_t buckets = (uint64_t)attrs->ints[HASH_BUCKET_NUM_BUCKETS];
    const uint64_t key0 = (uint64_t)attrs->ints[HASH_BUCKET_KEY0];
    const uint64_t key1 = (uint64_t)attrs->ints[HASH_BUCKET_KEY1];
    CvStatus st = cv_tensor_alloc(&out[0], CV_INT64, in[0].rank, in[0].shape, 0, NULL);
    if (st)
        return st;
    const int64_t count = cv_tensor_num_elements(&in[0]);
    const CvStringRef *refs = (const CvStringRef *)in[0].data;
    int64_t *dst = (int64_t *)out[0].data;
    for (int64_t i = 0; i < count; i++) {
        const unsigned char *s = (const unsigned char *)cv_string_data(&in[0], &refs[i]);
        size_t n = (size_t)refs[i].length;
        uint64_t h = kind == HASH_FAST     ? fingerprint64(s, n)
                     : kind == HASH_STRONG ? siphash24(key0, key1, s, n)
                                           : murmur64(s, n, UINT64_C(0xDECAFCAFFE));
        dst[i] = (int64_t)(h % buckets);
    }
    return CV_STATUS_OK;
}

const CvOp cv_op_string_to_hash_bucket = {
    .name = "StringToHashBucket", .min_inputs = 1, .max_inputs = 1, .run = hash_run,
    .int_attrs = hash_bucket_int_attrs};
