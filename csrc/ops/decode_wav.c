/* DecodeWav(contents): a 16-bit PCM WAV file as float32 audio [samples,
 * channels] in [-1, 1) (each sample / 32768) and its sample rate, an int32
 * scalar (tf.audio.decode_wav).
 *
 * The file is read as TensorFlow reads it: "RIFF", a size (ignored),
 * "WAVE", then a "fmt " chunk first (16 or 18 bytes, format 1, at least one
 * channel, 16 bits, a byte rate and block alignment that agree), then
 * chunks up to the end of the string, exactly one of them "data" (another
 * chunk may claim more bytes than there are: it ends the file). Chunks
 * are not padded to even sizes, and the data chunk is read a whole frame at
 * a time (the bytes of a partial last frame are not skipped), as TensorFlow
 * does. Every length is checked against the bytes there are: hostile input
 * is INVALID_ARGUMENT, never a read past the end.
 *
 * ints: [0] desired_channels (negative: the file's; more than the file has
 * repeat its last channel), [1] desired_samples (negative: all; more than
 * the file has are zeros). No state. */
#include <string.h>

#include "ops/op.h"

enum { DECODE_WAV_DESIRED_CHANNELS, DECODE_WAV_DESIRED_SAMPLES, DECODE_WAV_NUM_INTS };
static const char *const decode_wav_int_attrs[] = {"desired_channels", "desired_samples", NULL};
CV_ATTR_NAMES_MATCH(decode_wav_int_attrs, DECODE_WAV_NUM_INTS);

/* A bounds-checked little-endian reader over the file's bytes. */
typedef struct WavReader {
    const uint8_t *p;
    size_t size;
    size_t pos;
} WavReader;

static CvStatus too_short(void)
{
    return cv_error(CV_INVALID_ARGUMENT, "Data too short when trying to read string");
}

static CvStatus read_u32(WavReader *r, uint32_t *v)
{
    if (r->size - r->pos < 4)
        return too_short();
    const uint8_t *b = r->p + r->pos;
    *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    r->pos += 4;
    return CV_STATUS_OK;
}

static CvStatus read_u16(WavReader *r, uint16_t *v)
{
    if (r->size - r->pos < 2)
        return too_short();
    *v = (uint16_t)(r->p[r->pos] | r->p[r->pos + 1] << 8);
    r->pos += 2;
    return CV_STATUS_OK;
}

static CvStatus read_tag(WavReader *r, char tag[5])
{
    if (r->size - r->pos < 4)
        return too_short();
    memcpy(tag, r->p + r->pos, 4);
    tag[4] = '\0';
    r->pos += 4;
    return CV_STATUS_OK;
}

static CvStatus expect_tag(WavReader *r, const char *want)
{
    char tag[5];
    CvStatus s = read_tag(r, tag);
    if (s)
        return s;
    if (memcmp(tag, want, 4) != 0)
        return cv_error(CV_INVALID_ARGUMENT, "Header mismatch: Expected %s but found %.4s", want,
                        tag);
    return CV_STATUS_OK;
}

/* The "fmt " chunk: fills *channels, *rate. */
static CvStatus read_format(WavReader *r, uint16_t *channels, uint32_t *rate)
{
    char tag[5];
    uint32_t size = 0, byte_rate = 0;
    uint16_t format = 0, align = 0, bits = 0;
    CvStatus s = read_tag(r, tag);
    if (s)
        return s;
    if (memcmp(tag, "fmt ", 4) != 0)
        return cv_error(CV_INVALID_ARGUMENT, "Unexpected field %.4s", tag);
    if ((s = read_u32(r, &size)) || (s = read_u16(r, &format)) || (s = read_u16(r, channels)) ||
        (s = read_u32(r, rate)) || (s = read_u32(r, &byte_rate)) || (s = read_u16(r, &align)) ||
        (s = read_u16(r, &bits)))
        return s;
    if (size != 16 && size != 18)
        return cv_error(CV_INVALID_ARGUMENT,
                        "Bad format chunk size for WAV: Expected 16 or 18, but got%u", size);
    if (format != 1)
        return cv_error(CV_INVALID_ARGUMENT, "Bad audio format for WAV: Expected 1 (PCM), but got%u",
                        (unsigned)format);
    if (*channels < 1)
        return cv_error(CV_INVALID_ARGUMENT,
                        "Bad number of channels for WAV: Expected at least 1, but got %u",
                        (unsigned)*channels);
    if (bits != 16)
        return cv_error(CV_INVALID_ARGUMENT, "Can only read 16-bit WAV files, but received %u",
                        (unsigned)bits);
    uint64_t frame = (uint64_t)*channels * 2;
    if ((uint64_t)*rate * frame != byte_rate)
        return cv_error(CV_INVALID_ARGUMENT,
                        "Bad bytes per second in WAV header: Expected %llu but got %u "
                        "(sample_rate=%u, bytes_per_sample=%llu)",
                        (unsigned long long)((uint64_t)*rate * frame), byte_rate, *rate,
                        (unsigned long long)frame);
    if (align != frame)
        return cv_error(CV_INVALID_ARGUMENT,
                        "Bad bytes per sample in WAV header: Expected %llu but got %u",
                        (unsigned long long)frame, (unsigned)align);
    if (size == 18) {
        uint16_t extra;
        if ((s = read_u16(r, &extra)))
            return s;
    }
    return CV_STATUS_OK;
}

static CvStatus decode_wav_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                               CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    WavReader r = {0};
    uint32_t riff_size = 0, rate = 0;
    uint16_t channels = 0;
    CvStatus s;
    if ((s = cv_op_scalar_contents(&in[0], &r.p, &r.size)) || (s = expect_tag(&r, "RIFF")) ||
        (s = read_u32(&r, &riff_size)) || (s = expect_tag(&r, "WAVE")) ||
        (s = read_format(&r, &channels, &rate)))
        return s;
    const uint8_t *samples = NULL; /* the data chunk's whole frames */
    uint64_t frames = 0;
    while (r.pos < r.size) {
        char tag[5];
        uint32_t size = 0;
        if ((s = read_tag(&r, tag)) || (s = read_u32(&r, &size)))
            return s;
        if (memcmp(tag, "data", 4) == 0) {
            if (samples)
                return cv_error(CV_INVALID_ARGUMENT, "More than one data chunk found in WAV");
            frames = size / ((uint64_t)channels * 2);
            uint64_t bytes = frames * channels * 2;
            if (bytes > r.size - r.pos)
                return too_short();
            samples = r.p + r.pos;
            r.pos += (size_t)bytes;
        } else { /* skipped; one that runs past the end ends the file */
            r.pos += size < r.size - r.pos ? size : r.size - r.pos;
        }
    }
    if (!samples)
        return cv_error(CV_INVALID_ARGUMENT, "No data chunk found in WAV");
    int64_t want_ch = attrs->ints[DECODE_WAV_DESIRED_CHANNELS];
    int64_t want_n = attrs->ints[DECODE_WAV_DESIRED_SAMPLES];
    int64_t shape[2] = {want_n < 0 ? (int64_t)frames : want_n, want_ch < 0 ? channels : want_ch};
    if ((s = cv_tensor_alloc(&out[0], CV_FLOAT32, 2, shape, 0, NULL)))
        return s;
    float *dst = (float *)out[0].data;
    int64_t have = shape[0] < (int64_t)frames ? shape[0] : (int64_t)frames;
    for (int64_t f = 0; f < have; f++) {
        const uint8_t *frame = samples + (size_t)f * channels * 2;
        for (int64_t k = 0; k < shape[1]; k++) {
            int64_t from = k < channels ? k : channels - 1;
            int16_t v = (int16_t)(uint16_t)(frame[2 * from] | frame[2 * from + 1] << 8);
            dst[f * shape[1] + k] = (float)v / 32768.0f;
        }
    }
    memset(dst + have * shape[1], 0, (size_t)((shape[0] - have) * shape[1]) * sizeof(float));
    if ((s = cv_tensor_alloc(&out[1], CV_INT32, 0, NULL, 0, NULL))) {
        cv_tensor_clear(&out[0]);
        return s;
    }
    *(int32_t *)out[1].data = (int32_t)rate; /* the byte rate check keeps it below 2^31 */
    return CV_STATUS_OK;
}

const CvOp cv_op_decode_wav = {
    .name = "DecodeWav", .min_inputs = 1, .max_inputs = 1, .run = decode_wav_run,
    .int_attrs = decode_wav_int_attrs};
