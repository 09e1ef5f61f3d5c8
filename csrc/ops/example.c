/* tf.train.Example parsing: see example.h for the contract.
 *
 * A parse runs in three passes over a batch:
 *  A. per example: a structural scan of the Example / Features / map
 *     entries (remembering, per configured key, the winning Feature
 *     message), then validation of each winning Feature: kind, list
 *     framing, value count. Everything that can fail fails here.
 *  B. sizes are summed and every output is allocated.
 *  C. values are decoded into the outputs. The decoders re-check bounds, so
 *     a disagreement with pass A (TensorFlow's PR #120631 bug class) can
 *     only produce an error, never an out-of-bounds access.
 *
 * Wire layout (tfdata-semantics.md 8.3): Example { Features features = 1 };
 * Features { map<string, Feature> feature = 1 }; Feature { oneof {
 * BytesList bytes_list = 1; FloatList float_list = 2; Int64List int64_list =
 * 3 } }; each list { repeated value = 1 } (floats and int64s packed or not).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/example.h"

/* ---- configuration ------------------------------------------------------ */

typedef struct Feature {
    char *key;
    size_t key_len;
    CvFeatureKind kind;
    CvDtype dtype;
    int rank;
    int64_t shape[CV_MAX_RANK];
    int64_t stride; /* values per example (FixedLen) or per row (sequence) */
    bool has_default;
    CvTensor dflt; /* owned reference when has_default */
    uint64_t dflt_bytes; /* total string bytes of the default */
    int out;             /* index of the first output */
} Feature;

struct CvExampleConfig {
    int n;
    Feature *f;
    int num_outputs;
    uint32_t mask;  /* hash table size - 1 */
    int32_t *table; /* feature index or -1 */
};

static uint64_t hash_key(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

static int lookup(const CvExampleConfig *cfg, const uint8_t *key, size_t len)
{
    uint32_t i = (uint32_t)hash_key(key, len) & cfg->mask;
    for (;;) {
        int32_t j = cfg->table[i];
        if (j < 0)
            return -1;
        const Feature *f = &cfg->f[j];
        if (f->key_len == len && (len == 0 || memcmp(f->key, key, len) == 0))
            return j;
        i = (i + 1) & cfg->mask;
    }
}

static const char *type_name(CvDtype d) /* TensorFlow's DataTypeString */
{
    return d == CV_FLOAT32 ? "float" : d == CV_INT64 ? "int64" : "string";
}

static const char *list_name(CvDtype d) /* the proto list: float_list, ... */
{
    return d == CV_FLOAT32 ? "float" : d == CV_INT64 ? "int64" : "bytes";
}

void cv_example_config_free(CvExampleConfig *cfg)
{
    if (!cfg)
        return;
    for (int j = 0; j < cfg->n; j++) {
        free(cfg->f[j].key);
        if (cfg->f[j].has_default)
            cv_tensor_clear(&cfg->f[j].dflt);
    }
    free(cfg->f);
    free(cfg->table);
    free(cfg);
}

int cv_example_config_num_outputs(const CvExampleConfig *cfg)
{
    return cfg->num_outputs;
}

CvStatus cv_example_config_new(const CvFeatureSpec *specs, int num_features, CvExampleConfig **out)
{
    *out = NULL;
    if (num_features < 0 || num_features > (1 << 20))
        return cv_error(CV_INVALID_ARGUMENT, "invalid number of features %d", num_features);
    CvExampleConfig *cfg = calloc(1, sizeof(*cfg));
    if (!cfg)
        return cv_error_nomem();
    uint32_t size = 8;
    while (size < 2u * (uint32_t)num_features)
        size *= 2;
    cfg->mask = size - 1;
    cfg->table = malloc(size * sizeof(int32_t));
    cfg->f = calloc(num_features ? (size_t)num_features : 1, sizeof(Feature));
    if (!cfg->table || !cfg->f) {
        cv_example_config_free(cfg);
        return cv_error_nomem();
    }
    memset(cfg->table, 0xff, size * sizeof(int32_t));
    CvStatus s = CV_STATUS_OK;
    for (int j = 0; j < num_features; j++) {
        const CvFeatureSpec *sp = &specs[j];
        Feature *f = &cfg->f[j];
        cfg->n = j + 1;
        f->kind = sp->kind;
        f->dtype = sp->dtype;
        f->key_len = sp->key_len;
        f->key = malloc(sp->key_len + 1);
        if (!f->key) {
            s = cv_error_nomem();
            goto fail;
        }
        if (sp->key_len)
            memcpy(f->key, sp->key, sp->key_len);
        f->key[sp->key_len] = '\0';
        if (sp->dtype != CV_FLOAT32 && sp->dtype != CV_INT64 && sp->dtype != CV_STRING) {
            s = cv_error(CV_INVALID_ARGUMENT, "Invalid config dtype: %s (feature %s); expected "
                         "float32, int64 or string", cv_dtype_name(sp->dtype), f->key);
            goto fail;
        }
        if (sp->kind != CV_FEATURE_FIXED_LEN && sp->kind != CV_FEATURE_VAR_LEN &&
            sp->kind != CV_FEATURE_FIXED_LEN_SEQUENCE) {
            s = cv_error(CV_INVALID_ARGUMENT, "invalid feature kind %d (feature %s)", (int)sp->kind,
                         f->key);
            goto fail;
        }
        int max_rank = sp->kind == CV_FEATURE_VAR_LEN ? 0
                       : sp->kind == CV_FEATURE_FIXED_LEN ? CV_MAX_RANK - 1 : CV_MAX_RANK - 2;
        if (sp->rank < 0 || sp->rank > max_rank) {
            s = cv_error(CV_INVALID_ARGUMENT, "feature %s: shape rank %d is outside 0..%d", f->key,
                         sp->rank, max_rank);
            goto fail;
        }
        f->rank = sp->rank;
        f->stride = 1;
        for (int k = 0; k < sp->rank; k++) {
            int64_t d = sp->shape[k];
            if (d < 0 || (d == 0 && sp->kind == CV_FEATURE_FIXED_LEN_SEQUENCE)) {
                s = cv_error(CV_INVALID_ARGUMENT, "feature %s: dimension %d of the shape is %lld; "
                             "expected %s", f->key, k, (long long)d,
                             sp->kind == CV_FEATURE_FIXED_LEN_SEQUENCE
                                 ? "a positive size (a FixedLenSequenceFeature row cannot be empty)"
                                 : "a size >= 0");
                goto fail;
            }
            f->shape[k] = d;
            if (__builtin_mul_overflow(f->stride, d, &f->stride) || f->stride > (INT64_C(1) << 40)) {
                s = cv_error(CV_INVALID_ARGUMENT, "feature %s: the shape has too many elements",
                             f->key);
                goto fail;
            }
        }
        if (sp->default_value) {
            const CvTensor *d = sp->default_value;
            int64_t want = sp->kind == CV_FEATURE_FIXED_LEN ? f->stride : 1;
            if (sp->kind == CV_FEATURE_VAR_LEN) {
                s = cv_error(CV_INVALID_ARGUMENT, "feature %s: a VarLenFeature has no default value",
                             f->key);
                goto fail;
            }
            if (d->dtype != sp->dtype) {
                s = cv_error(CV_INVALID_ARGUMENT, "feature %s: the default value is %s; expected %s",
                             f->key, cv_dtype_name(d->dtype), cv_dtype_name(sp->dtype));
                goto fail;
            }
            if (cv_tensor_num_elements(d) != want) {
                s = cv_error(CV_INVALID_ARGUMENT, "Input to reshape is a tensor with %lld values, "
                             "but the requested shape has %lld",
                             (long long)cv_tensor_num_elements(d), (long long)want);
                goto fail;
            }
            cv_tensor_copy_ref(&f->dflt, d);
            f->has_default = true;
            if (d->dtype == CV_STRING) {
                const CvStringRef *r = (const CvStringRef *)d->data;
                for (int64_t k = 0; k < want; k++)
                    f->dflt_bytes += r[k].length;
            }
        }
        f->out = cfg->num_outputs;
        cfg->num_outputs += sp->kind == CV_FEATURE_VAR_LEN ? 3 : 1;
        if (lookup(cfg, (const uint8_t *)f->key, f->key_len) >= 0) {
            s = cv_error(CV_INVALID_ARGUMENT, "feature key %s appears twice in the configuration",
                         f->key);
            goto fail;
        }
        uint32_t i = (uint32_t)hash_key((const uint8_t *)f->key, f->key_len) & cfg->mask;
        while (cfg->table[i] >= 0)
            i = (i + 1) & cfg->mask;
        cfg->table[i] = j;
    }
    *out = cfg;
    return CV_STATUS_OK;
fail:
    cv_example_config_free(cfg);
    return s;
}

/* ---- wire primitives ---------------------------------------------------- */

/* A varint of at most 10 bytes (bits past 64 are dropped, as protobuf does). */
static inline bool get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    if (p < end && *p < 0x80) {
        *out = *p;
        *pp = p + 1;
        return true;
    }
    uint64_t r = 0;
    for (int i = 0; i < 10; i++) {
        if (p >= end)
            return false;
        uint64_t b = *p++;
        r |= (b & 0x7f) << (7 * i);
        if (b < 0x80) {
            *out = r;
            *pp = p;
            return true;
        }
    }
    return false;
}

/* A tag: a varint of at most 5 bytes that fits in 32 bits. */
static inline bool get_tag(const uint8_t **pp, const uint8_t *end, uint32_t *tag)
{
    const uint8_t *p = *pp;
    uint64_t v;
    if (!get_varint(&p, end, &v) || p - *pp > 5 || v > UINT32_MAX)
        return false;
    *tag = (uint32_t)v;
    *pp = p;
    return true;
}

/* A length prefix whose value fits in what is left before end. */
static inline bool get_length(const uint8_t **pp, const uint8_t *end, size_t *len)
{
    uint64_t v;
    if (!get_varint(pp, end, &v) || v > (uint64_t)(end - *pp))
        return false;
    *len = (size_t)v;
    return true;
}

/* ---- pass A: structure and validation ----------------------------------- */

enum { FORM_PACKED = 0, FORM_UNPACKED = 1 };

typedef struct Slot {
    const uint8_t *val; /* the winning Feature message */
    size_t val_len;
    int64_t pos;        /* its entry number in the example; -1: absent */
    const uint8_t *list; /* validated values: packed payload, unpacked fields or bytes fields */
    const uint8_t *list_end;
    int64_t count;
    uint64_t str_bytes;
    int form;
} Slot;

/* Example / Features / map entries. Records the last entry of each configured
 * key (skipping empty Feature messages unless keep_empty says otherwise). */
static bool scan_example(const CvExampleConfig *cfg, const uint8_t *p, const uint8_t *end,
                         Slot *row, bool batch)
{
    int64_t pos = 0;
    while (p < end) {
        if (*p != 0x0a) { /* not `features` in its one-byte form: skip by wire type */
            uint32_t tag;
            uint64_t v;
            size_t len;
            if (!get_tag(&p, end, &tag))
                return false;
            switch (tag & 7) {
            case 0:
                if (!get_varint(&p, end, &v))
                    return false;
                break;
            case 1:
                if (end - p < 8)
                    return false;
                p += 8;
                break;
            case 2:
                if (!get_length(&p, end, &len))
                    return false;
                p += len;
                break;
            case 5:
                if (end - p < 4)
                    return false;
                p += 4;
                break;
            default: /* groups and invalid wire types */
                return false;
            }
            continue;
        }
        p++;
        size_t flen;
        if (!get_length(&p, end, &flen))
            return false;
        const uint8_t *fend = p + flen;
        while (p < fend) {
            if (*p++ != 0x0a)
                return false;
            size_t elen;
            if (!get_length(&p, fend, &elen))
                return false;
            const uint8_t *eend = p + elen;
            const uint8_t *key = p, *val = p;
            size_t klen = 0, vlen = 0;
            for (int k = 0; k < 2; k++) { /* exactly two fields, as TensorFlow reads them */
                uint32_t tag;
                size_t len;
                if (!get_tag(&p, eend, &tag) || (tag != 10 && tag != 18) ||
                    !get_length(&p, eend, &len))
                    return false;
                if (tag == 10) {
                    key = p;
                    klen = len;
                } else {
                    val = p;
                    vlen = len;
                }
                p += len;
            }
            if (p != eend)
                return false;
            pos++;
            int j = lookup(cfg, key, klen);
            if (j >= 0 && (vlen || (batch && cfg->f[j].kind == CV_FEATURE_VAR_LEN))) {
                row[j].val = val;
                row[j].val_len = vlen;
                row[j].pos = pos;
            }
        }
    }
    return true;
}

/* Number of varints in a packed int64 payload, or -1 when malformed. */
static int64_t count_varints(const uint8_t *p, const uint8_t *end)
{
    int64_t n = 0;
    int run = 0;
    for (; p < end; p++) {
        if (*p & 0x80) {
            if (++run == 10)
                return -1;
        } else {
            run = 0;
            n++;
        }
    }
    return run ? -1 : n;
}

/* Validate a list message body [p, end) of type t; fills the slot's list. */
static bool scan_list(CvDtype t, const uint8_t *p, const uint8_t *end, Slot *s)
{
    s->count = 0;
    s->str_bytes = 0;
    s->form = FORM_PACKED;
    s->list = s->list_end = end;
    if (p == end)
        return true;
    size_t n;
    const uint8_t *q;
    switch (t) {
    case CV_FLOAT32:
        if (*p == 0x0a) {
            p++;
            if (!get_length(&p, end, &n) || p + n != end || n % 4)
                return false;
            s->list = p;
            s->count = (int64_t)(n / 4);
            return true;
        }
        if (*p == 0x0d) {
            n = (size_t)(end - p);
            if (n % 5)
                return false;
            for (q = p; q < end; q += 5)
                if (*q != 0x0d)
                    return false;
            s->form = FORM_UNPACKED;
            s->list = p;
            s->count = (int64_t)(n / 5);
            return true;
        }
        return false;
    case CV_INT64:
        if (*p == 0x0a) {
            p++;
            if (!get_length(&p, end, &n) || p + n != end)
                return false;
            s->list = p;
            s->count = count_varints(p, end);
            return s->count >= 0;
        }
        if (*p == 0x08) {
            s->form = FORM_UNPACKED;
            s->list = p;
            for (q = p; q < end;) {
                uint64_t v;
                if (*q++ != 0x08 || !get_varint(&q, end, &v))
                    return false;
                s->count++;
            }
            return true;
        }
        return false;
    default:
        s->list = p;
        for (q = p; q < end;) {
            if (*q++ != 0x0a || !get_length(&q, end, &n))
                return false;
            q += n;
            s->count++;
            s->str_bytes += n;
        }
        return true;
    }
}

typedef struct Ctx {
    const CvExampleConfig *cfg;
    const CvBytesView *names;
    bool single;
    int64_t index;
} Ctx;

static void example_name(const Ctx *c, const char **p, int *n)
{
    if (c->names) {
        const CvBytesView *v = &c->names[c->index];
        *p = v->data;
        *n = v->size > 4096 ? 4096 : (int)v->size;
    } else {
        *p = "<unknown>";
        *n = 9;
    }
}

/* "Name: x, Key: k, Index: i.  " (batched) or "Key: k.  " (single). */
#define KEYED_ERROR(c, f, fmt, ...)                                                        \
    ((c)->single ? cv_error(CV_INVALID_ARGUMENT, "Key: %s.  " fmt, (f)->key, __VA_ARGS__)   \
                 : keyed_batch_error((c), (f), fmt, __VA_ARGS__))

static CvStatus keyed_batch_error(const Ctx *c, const Feature *f, const char *fmt, ...)
    CV_PRINTF(3, 4);
static CvStatus keyed_batch_error(const Ctx *c, const Feature *f, const char *fmt, ...)
{
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    const char *name;
    int nlen;
    example_name(c, &name, &nlen);
    return cv_error(CV_INVALID_ARGUMENT, "Name: %.*s, Key: %s, Index: %lld.  %s", nlen, name, f->key,
                    (long long)c->index, detail);
}

static CvStatus check_slot(const Ctx *c, const Feature *f, Slot *s)
{
    const uint8_t *p = s->val, *end = p + s->val_len;
    if (p == end) { /* an empty Feature that wins (batched VarLen only) */
        s->count = 0;
        s->str_bytes = 0;
        s->form = FORM_PACKED;
        s->list = s->list_end = end;
        return CV_STATUS_OK;
    }
    CvDtype got;
    switch (*p) {
    case 0x0a: got = CV_STRING; break;
    case 0x12: got = CV_FLOAT32; break;
    case 0x1a: got = CV_INT64; break;
    default: return cv_error(CV_INVALID_ARGUMENT, "Unsupported datatype.");
    }
    p++;
    if (got != f->dtype) {
        if (f->kind == CV_FEATURE_VAR_LEN)
            return KEYED_ERROR(c, f, "Data types don't match. Expected type: %s, Actual type: %s",
                               type_name(f->dtype), type_name(got));
        return KEYED_ERROR(c, f, "Data types don't match. Data type: %s but expected type: %s",
                           type_name(got), type_name(f->dtype));
    }
    size_t len;
    if (!get_length(&p, end, &len) || p + len != end || !scan_list(got, p, end, s)) {
        if (c->single)
            return cv_error(CV_INVALID_ARGUMENT,
                            "Key: %s.  Can't parse serialized Example: Parsing %s_list failed.",
                            f->key, list_name(got));
        return keyed_batch_error(c, f, "Can't parse serialized Example.");
    }
    if (f->kind == CV_FEATURE_FIXED_LEN && s->count != f->stride) {
        if (c->single)
            return cv_error(CV_INVALID_ARGUMENT, "Key: %s.  Can't parse serialized Example: Some "
                            "%s_list slice was not parsed.", f->key, list_name(got));
        char shape[CV_MAX_RANK * 24 + 4];
        cv_shape_str(f->shape, f->rank, shape, sizeof(shape));
        return keyed_batch_error(c, f, "Number of %s values != expected.  Values size: %lld but "
                                 "output shape: %s", list_name(got), (long long)s->count, shape);
    }
    if (f->kind == CV_FEATURE_FIXED_LEN_SEQUENCE && s->count % f->stride) {
        if (c->single)
            return cv_error(CV_INVALID_ARGUMENT, "Error while parsing feature with key %s: number "
                            "of elements should be divisible by %lld, found %lld instead", f->key,
                            (long long)f->stride, (long long)s->count);
        char shape[CV_MAX_RANK * 24 + 8] = "[?";
        for (int k = 0; k < f->rank; k++)
            snprintf(shape + strlen(shape), sizeof(shape) - strlen(shape), ",%lld",
                     (long long)f->shape[k]);
        strcat(shape, "]");
        return keyed_batch_error(c, f, "Number of %s values is not a multiple of stride length. "
                                 "Saw %lld values but output shape is: %s", list_name(got),
                                 (long long)s->count, shape);
    }
    return CV_STATUS_OK;
}

/* Length of the valid UTF-8 sequence at p (0 if none; NUL counts as none). */
static size_t utf8_len(const uint8_t *p, const uint8_t *end)
{
    uint8_t b = p[0];
    if (b >= 0x01 && b < 0x80)
        return 1;
    size_t n;
    uint32_t min, cp;
    if ((b & 0xe0) == 0xc0) { n = 2; min = 0x80; cp = b & 0x1f; }
    else if ((b & 0xf0) == 0xe0) { n = 3; min = 0x800; cp = b & 0x0f; }
    else if ((b & 0xf8) == 0xf0) { n = 4; min = 0x10000; cp = b & 0x07; }
    else return 0;
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* TensorFlow puts the raw record in the message; bytes that are not valid
 * UTF-8 (and NULs) are written as \xNN so the text stays a valid str, and
 * the value is cut after 4096 bytes. */
static CvStatus could_not_parse(const uint8_t *p, size_t size)
{
    size_t shown = size > 4096 ? 4096 : size;
    char *text = malloc(shown * 4 + 1);
    if (!text)
        return cv_error(CV_INVALID_ARGUMENT, "Could not parse example input");
    const uint8_t *q = p, *end = p + shown;
    char *o = text;
    while (q < end) {
        size_t n = utf8_len(q, end);
        if (n) {
            memcpy(o, q, n);
            o += n;
            q += n;
        } else {
            o += sprintf(o, "\\x%02x", *q++);
        }
    }
    *o = '\0';
    CvStatus s = cv_error(CV_INVALID_ARGUMENT, "Could not parse example input, value: '%s%s'", text,
                          size > shown ? "..." : "");
    free(text);
    return s;
}

/* Pass A for example c->index. */
static CvStatus scan_and_check(const Ctx *c, const CvBytesView *ex, Slot *row, int *order)
{
    const CvExampleConfig *cfg = c->cfg;
    for (int j = 0; j < cfg->n; j++)
        row[j].pos = -1;
    const uint8_t *p = (const uint8_t *)ex->data;
    if (!scan_example(cfg, p, p + ex->size, row, !c->single))
        return could_not_parse(p, ex->size);
    /* TensorFlow walks the entries from the last one: check in that order so
     * that the first error reported is the same. */
    int m = 0;
    for (int j = 0; j < cfg->n; j++) {
        if (row[j].pos < 0)
            continue;
        int k = m++;
        while (k > 0 && row[order[k - 1]].pos < row[j].pos) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = j;
    }
    for (int k = 0; k < m; k++) {
        CvStatus s = check_slot(c, &cfg->f[order[k]], &row[order[k]]);
        if (s)
            return s;
    }
    for (int j = 0; j < cfg->n; j++) {
        const Feature *f = &cfg->f[j];
        if (row[j].pos >= 0 || f->kind != CV_FEATURE_FIXED_LEN || f->has_default)
            continue;
        if (c->single)
            return cv_error(CV_INVALID_ARGUMENT, "Feature: %s (data type: %s) is required but "
                            "could not be found.", f->key, type_name(f->dtype));
        const char *name;
        int nlen;
        example_name(c, &name, &nlen);
        return cv_error(CV_INVALID_ARGUMENT, "Name: %.*s, Feature: %s (data type: %s) is required "
                        "but could not be found.", nlen, name, f->key, type_name(f->dtype));
    }
    return CV_STATUS_OK;
}

/* ---- pass C: decoding --------------------------------------------------- */

static CvStatus internal_mismatch(const Feature *f)
{
    return cv_error(CV_INTERNAL, "Example parser: feature %s decoded differently in its two passes",
                    f->key);
}

static bool decode_floats(const Slot *s, float *dst)
{
    const uint8_t *p = s->list, *end = s->list_end;
    if (s->form == FORM_PACKED) {
        if ((size_t)(end - p) != (size_t)s->count * 4)
            return false;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (s->count)
            memcpy(dst, p, (size_t)s->count * 4);
#else
        for (int64_t i = 0; i < s->count; i++, p += 4) {
            uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                         (uint32_t)p[3] << 24;
            memcpy(&dst[i], &u, 4);
        }
#endif
        return true;
    }
    if ((size_t)(end - p) != (size_t)s->count * 5)
        return false;
    for (int64_t i = 0; i < s->count; i++, p += 5) {
        uint32_t u = (uint32_t)p[1] | (uint32_t)p[2] << 8 | (uint32_t)p[3] << 16 |
                     (uint32_t)p[4] << 24;
        memcpy(&dst[i], &u, 4);
    }
    return true;
}

static bool decode_int64s(const Slot *s, int64_t *dst)
{
    const uint8_t *p = s->list, *end = s->list_end;
    int64_t i = 0;
    while (p < end && i < s->count) {
        uint64_t v;
        if (s->form == FORM_UNPACKED && *p++ != 0x08)
            return false;
        if (!get_varint(&p, end, &v))
            return false;
        dst[i++] = (int64_t)v;
    }
    return i == s->count && p == end;
}

/* Copies the strings into *blob (advanced) with refs relative to base. */
static bool decode_strings(const Slot *s, CvStringRef *refs, char **blob, const char *base)
{
    const uint8_t *p = s->list, *end = s->list_end;
    int64_t i = 0;
    while (p < end && i < s->count) {
        size_t n;
        if (*p++ != 0x0a || !get_length(&p, end, &n))
            return false;
        if (n)
            memcpy(*blob, p, n);
        refs[i].offset = (uint64_t)(*blob - base);
        refs[i].length = n;
        *blob += n;
        p += n;
        i++;
    }
    return i == s->count && p == end;
}

typedef struct OutInfo {
    int64_t total;  /* VarLen: values over the batch */
    int64_t max;    /* VarLen: longest list; sequence: most rows */
    uint64_t bytes; /* string blob */
    bool need_default;
    char *blob;     /* write position while decoding */
    const char *dflt_blob; /* where the default's strings were copied */
} OutInfo;

/* Copy the default's strings (once) into the blob. */
static void place_default_strings(const Feature *f, OutInfo *o)
{
    if (o->dflt_blob)
        return;
    o->dflt_blob = o->blob;
    const CvStringRef *r = (const CvStringRef *)f->dflt.data;
    int64_t n = cv_tensor_num_elements(&f->dflt);
    for (int64_t k = 0; k < n; k++) {
        if (r[k].length)
            memcpy(o->blob, cv_string_data(&f->dflt, &r[k]), r[k].length);
        o->blob += r[k].length;
    }
}

/* refs for `count` default values (element k of the default, cycling). */
static void default_string_refs(const Feature *f, const OutInfo *o, CvStringRef *refs,
                                int64_t count, const char *base)
{
    const CvStringRef *r = (const CvStringRef *)f->dflt.data;
    int64_t n = cv_tensor_num_elements(&f->dflt);
    uint64_t off = 0;
    for (int64_t k = 0; k < count; k++) {
        int64_t e = n ? k % n : 0;
        if (e == 0)
            off = 0;
        refs[k].offset = (uint64_t)(o->dflt_blob - base) + off;
        refs[k].length = r[e].length;
        off += r[e].length;
    }
}

static void fill_default(const Feature *f, OutInfo *o, char *dst, int64_t count, const char *base)
{
    if (count <= 0)
        return;
    if (f->dtype == CV_STRING) {
        if (!f->has_default) {
            CvStringRef *refs = (CvStringRef *)dst;
            for (int64_t k = 0; k < count; k++)
                refs[k].offset = refs[k].length = 0;
            return;
        }
        place_default_strings(f, o);
        if (f->kind == CV_FEATURE_FIXED_LEN) {
            default_string_refs(f, o, (CvStringRef *)dst, count, base);
        } else { /* one padding value, repeated */
            CvStringRef *refs = (CvStringRef *)dst;
            for (int64_t k = 0; k < count; k++) {
                refs[k].offset = (uint64_t)(o->dflt_blob - base);
                refs[k].length = ((const CvStringRef *)f->dflt.data)->length;
            }
        }
        return;
    }
    size_t item = cv_dtype_size(f->dtype);
    if (!f->has_default) {
        memset(dst, 0, (size_t)count * item);
        return;
    }
    if (f->kind == CV_FEATURE_FIXED_LEN) {
        memcpy(dst, f->dflt.data, (size_t)count * item);
        return;
    }
    for (int64_t k = 0; k < count; k++)
        memcpy(dst + (size_t)k * item, f->dflt.data, item);
}

static bool decode_values(const Feature *f, const Slot *s, OutInfo *o, char *dst, const char *base)
{
    switch (f->dtype) {
    case CV_FLOAT32: return decode_floats(s, (float *)dst);
    case CV_INT64: return decode_int64s(s, (int64_t *)dst);
    default: return decode_strings(s, (CvStringRef *)dst, &o->blob, base);
    }
}

CvStatus cv_parse_examples(const CvExampleConfig *cfg, const CvBytesView *serialized, int64_t n,
                           const CvBytesView *names, bool single, CvTensor *outputs)
{
    if (n < 0 || (single && n != 1))
        return cv_error(CV_INVALID_ARGUMENT, "parse_single_example takes exactly one example, got %lld",
                        (long long)n);
    const int F = cfg->n;
    CvStatus s = CV_STATUS_OK;
    Slot *slots = NULL;
    int *order = NULL;
    OutInfo *info = NULL;
    CvTensor *outs = NULL;
    Ctx c = {cfg, names, single, 0};
    size_t nslots;
    if (__builtin_mul_overflow((size_t)n, (size_t)F, &nslots) || nslots > SIZE_MAX / sizeof(Slot))
        return cv_error(CV_RESOURCE_EXHAUSTED, "too many examples to parse at once");
    slots = malloc(nslots ? nslots * sizeof(Slot) : 1);
    order = malloc(F ? (size_t)F * sizeof(int) : 1);
    info = calloc(F ? (size_t)F : 1, sizeof(OutInfo));
    outs = calloc(cfg->num_outputs ? (size_t)cfg->num_outputs : 1, sizeof(CvTensor));
    if (!slots || !order || !info || !outs) {
        s = cv_error_nomem();
        goto done;
    }
    /* Pass A. */
    for (c.index = 0; c.index < n; c.index++) {
        Slot *row = slots + (size_t)c.index * F;
        if ((s = scan_and_check(&c, &serialized[c.index], row, order)))
            goto done;
        for (int j = 0; j < F; j++) {
            const Feature *f = &cfg->f[j];
            OutInfo *o = &info[j];
            const Slot *sl = &row[j];
            if (sl->pos < 0) {
                if (f->kind == CV_FEATURE_FIXED_LEN)
                    o->need_default = true;
                continue;
            }
            o->bytes += sl->str_bytes;
            if (f->kind == CV_FEATURE_VAR_LEN) {
                o->total += sl->count;
                if (sl->count > o->max)
                    o->max = sl->count;
            } else if (f->kind == CV_FEATURE_FIXED_LEN_SEQUENCE) {
                if (sl->count / f->stride > o->max)
                    o->max = sl->count / f->stride;
            }
        }
    }
    /* Pass B. */
    for (int j = 0; j < F; j++) {
        const Feature *f = &cfg->f[j];
        OutInfo *o = &info[j];
        int64_t shape[CV_MAX_RANK];
        int r = 0;
        if (f->dtype == CV_STRING && f->has_default &&
            (o->need_default || f->kind == CV_FEATURE_FIXED_LEN_SEQUENCE))
            o->bytes += f->dflt_bytes;
        if (f->kind == CV_FEATURE_VAR_LEN) {
            int64_t ishape[2] = {o->total, single ? 1 : 2};
            int64_t dshape[1] = {single ? 1 : 2};
            int64_t vshape[1] = {o->total};
            if ((s = cv_tensor_alloc(&outs[f->out], CV_INT64, 2, ishape, 0, NULL)) ||
                (s = cv_tensor_alloc(&outs[f->out + 1], f->dtype, 1, vshape, o->bytes, &o->blob)) ||
                (s = cv_tensor_alloc(&outs[f->out + 2], CV_INT64, 1, dshape, 0, NULL)))
                goto done;
            continue;
        }
        if (!single)
            shape[r++] = n;
        if (f->kind == CV_FEATURE_FIXED_LEN_SEQUENCE)
            shape[r++] = single ? (slots[j].pos >= 0 ? slots[j].count / f->stride : 0) : o->max;
        for (int k = 0; k < f->rank; k++)
            shape[r++] = f->shape[k];
        if ((s = cv_tensor_alloc(&outs[f->out], f->dtype, r, shape, o->bytes, &o->blob)))
            goto done;
    }
    /* Pass C. */
    for (int j = 0; j < F; j++) {
        const Feature *f = &cfg->f[j];
        OutInfo *o = &info[j];
        if (f->kind == CV_FEATURE_VAR_LEN) {
            CvTensor *vals = &outs[f->out + 1];
            int64_t *idx = (int64_t *)outs[f->out].data;
            size_t item = cv_dtype_size(f->dtype);
            int64_t at = 0;
            for (int64_t i = 0; i < n; i++) {
                const Slot *sl = &slots[(size_t)i * F + j];
                if (sl->pos < 0 || sl->count == 0)
                    continue;
                if (sl->count > o->total - at ||
                    !decode_values(f, sl, o, vals->data + (size_t)at * item, vals->buf->data)) {
                    s = internal_mismatch(f);
                    goto done;
                }
                for (int64_t k = 0; k < sl->count; k++) {
                    if (single) {
                        idx[at + k] = k;
                    } else {
                        idx[2 * (at + k)] = i;
                        idx[2 * (at + k) + 1] = k;
                    }
                }
                at += sl->count;
            }
            int64_t *ds = (int64_t *)outs[f->out + 2].data;
            if (single) {
                ds[0] = o->total;
            } else {
                ds[0] = n;
                ds[1] = o->max;
            }
            continue;
        }
        CvTensor *t = &outs[f->out];
        size_t item = cv_dtype_size(f->dtype);
        int64_t per = f->kind == CV_FEATURE_FIXED_LEN
                          ? f->stride
                          : (single ? (slots[j].pos >= 0 ? slots[j].count : 0) : o->max * f->stride);
        for (int64_t i = 0; i < n; i++) {
            const Slot *sl = &slots[(size_t)i * F + j];
            char *dst = t->data + (size_t)i * (size_t)per * item;
            int64_t got = 0;
            if (sl->pos >= 0) {
                if (sl->count > per || !decode_values(f, sl, o, dst, t->buf->data)) {
                    s = internal_mismatch(f);
                    goto done;
                }
                got = sl->count;
            }
            fill_default(f, o, dst + (size_t)got * item, per - got, t->buf->data);
        }
    }
    for (int k = 0; k < cfg->num_outputs; k++)
        outputs[k] = outs[k];
done:
    if (s && outs)
        for (int k = 0; k < cfg->num_outputs; k++)
            if (outs[k].buf)
                cv_tensor_clear(&outs[k]);
    free(slots);
    free(order);
    free(info);
    free(outs);
    return s;
}

CvStatus cv_parse_example_tensor(const CvExampleConfig *cfg, const CvTensor *serialized,
                                 const CvTensor *names, CvTensor *outputs)
{
    if (serialized->dtype != CV_STRING || serialized->rank > 1)
        return cv_error(CV_INVALID_ARGUMENT, "Expected serialized to be a scalar or vector of "
                        "strings, got a %s tensor of rank %d", cv_dtype_name(serialized->dtype),
                        serialized->rank);
    int64_t n = cv_tensor_num_elements(serialized);
    if (names && (names->dtype != CV_STRING || cv_tensor_num_elements(names) != n))
        return cv_error(CV_INVALID_ARGUMENT, "Expected len(example_names) == len(serialized), got "
                        "%lld names for %lld examples", (long long)cv_tensor_num_elements(names),
                        (long long)n);
    CvBytesView *views = malloc((size_t)(n ? n : 1) * 2 * sizeof(CvBytesView));
    if (!views)
        return cv_error_nomem();
    const CvStringRef *r = (const CvStringRef *)serialized->data;
    for (int64_t i = 0; i < n; i++) {
        views[i].data = cv_string_data(serialized, &r[i]);
        views[i].size = r[i].length;
    }
    if (names) {
        const CvStringRef *nr = (const CvStringRef *)names->data;
        for (int64_t i = 0; i < n; i++) {
            views[n + i].data = cv_string_data(names, &nr[i]);
            views[n + i].size = nr[i].length;
        }
    }
    CvStatus s = cv_parse_examples(cfg, views, n, names ? views + n : NULL, serialized->rank == 0,
                                   outputs);
    free(views);
    return s;
}
