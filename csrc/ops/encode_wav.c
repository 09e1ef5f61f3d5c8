/* EncodeWav(audio, sample_rate): float32 audio [samples, channels] as a
 * 16-bit PCM WAV file, a scalar string (tf.audio.encode_wav): a 44-byte
 * header ("RIFF", "WAVE", a 16-byte "fmt " chunk, "data") and each sample
 * as round(x * 32768) clamped to [-32768, 32767], halves away from zero,
 * NaN as 0, as TensorFlow writes them. No attributes, no state. */
#include <math.h>
#include <string.h>

#include "ops/op.h"

static void put_u32(char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (char)(v >> (8 * i));
}

static void put_u16(char *p, uint16_t v)
{
    p[0] = (char)v;
    p[1] = (char)(v >> 8);
}

static int16_t to_pcm16(float x)
{
    if (isnan(x))
        return 0;
    double v = round((double)x * 32768.0);
    if (v > 32767.0)
        return 32767;
    if (v < -32768.0)
        return -32768;
    return (int16_t)v;
}

static CvStatus encode_wav_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in,
                               CvTensor *out, int num_out, CvOpContext *ctx)
{
    (void)attrs;
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *audio = &in[0], *rate = &in[1];
    char shape[64];
    if (audio->dtype != CV_FLOAT32 || audio->rank != 2)
        return cv_error(CV_INVALID_ARGUMENT, "audio must be 2-dimensional%s",
                        cv_shape_str(audio->shape, audio->rank, shape, sizeof(shape)));
    if (rate->dtype != CV_INT32 || rate->rank != 0)
        return cv_error(CV_INVALID_ARGUMENT, "Input sample_rate should be a scalar tensor, got %s "
                        "instead.", cv_shape_str(rate->shape, rate->rank, shape, sizeof(shape)));
    int64_t frames = audio->shape[0], channels = audio->shape[1];
    int32_t sample_rate = *(const int32_t *)rate->data;
    uint64_t data_bytes = (uint64_t)frames * (uint64_t)channels * 2;
    if (channels < 1 || channels > 65535)
        return cv_error(CV_INVALID_ARGUMENT, "num_channels must be in (0, 2^16), got: %lld",
                        (long long)channels);
    if (sample_rate < 0 || data_bytes > UINT32_MAX - 36 ||
        (uint64_t)sample_rate * (uint64_t)channels * 2 > UINT32_MAX)
        return cv_error(CV_INVALID_ARGUMENT, "EncodeWav: %lld samples of %lld channels at %d Hz do "
                        "not fit a WAV header", (long long)frames, (long long)channels,
                        sample_rate);
    char *p;
    CvStatus s = cv_tensor_alloc_scalar_string(&out[0], 44 + (size_t)data_bytes, &p);
    if (s)
        return s;
    memcpy(p, "RIFF", 4);
    put_u32(p + 4, (uint32_t)(36 + data_bytes));
    memcpy(p + 8, "WAVEfmt ", 8);
    put_u32(p + 16, 16);
    put_u16(p + 20, 1);
    put_u16(p + 22, (uint16_t)channels);
    put_u32(p + 24, (uint32_t)sample_rate);
    put_u32(p + 28, (uint32_t)(sample_rate * channels * 2));
    put_u16(p + 32, (uint16_t)(channels * 2));
    put_u16(p + 34, 16);
    memcpy(p + 36, "data", 4);
    put_u32(p + 40, (uint32_t)data_bytes);
    const float *x = (const float *)audio->data;
    for (int64_t i = 0; i < frames * channels; i++)
        put_u16(p + 44 + 2 * i, (uint16_t)to_pcm16(x[i]));
    return CV_STATUS_OK;
}

const CvOp cv_op_encode_wav = {
    .name = "EncodeWav", .min_inputs = 2, .max_inputs = 2, .run = encode_wav_run};
