/* DLPack export (see dlpack.h). */
#include "device/dlpack.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* dlpack.h (v1.0), the parts used. */
typedef struct {
    int32_t device_type;
    int32_t device_id;
} DLDevice;
typedef struct {
    uint8_t code; /* 0 int, 1 uint, 2 float, 4 bfloat, 6 bool */
    uint8_t bits;
    uint16_t lanes;
} DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides; /* NULL: C-contiguous */
    uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;
typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#define DLPACK_MINOR 0
#define DLPACK_FLAG_IS_COPIED ((uint64_t)1 << 1)

/* dtype -> DLPack code/bits and NumPy typestr (numeric only). */
static const struct {
    uint8_t code, bits;
    const char *typestr;
} dtypes[CV_NUM_DTYPES] = {
    [CV_BOOL] = {6, 8, "|b1"},     [CV_INT8] = {0, 8, "|i1"},     [CV_INT16] = {0, 16, "<i2"},
    [CV_INT32] = {0, 32, "<i4"},   [CV_INT64] = {0, 64, "<i8"},   [CV_UINT8] = {1, 8, "|u1"},
    [CV_UINT16] = {1, 16, "<u2"},  [CV_UINT32] = {1, 32, "<u4"},  [CV_UINT64] = {1, 64, "<u8"},
    [CV_FLOAT16] = {2, 16, "<f2"}, [CV_FLOAT32] = {2, 32, "<f4"}, [CV_FLOAT64] = {2, 64, "<f8"},
    [CV_BFLOAT16] = {4, 16, "<V2"}, /* DLPack kDLBfloat */
};

const char *cv_dlpack_typestr(CvDtype dtype)
{
    return dtypes[dtype].typestr;
}

/* What a managed tensor owns: its buffer reference and its shape. */
typedef struct {
    CvBuffer *buf;
    int64_t shape[CV_MAX_RANK];
    union {
        DLManagedTensor legacy;
        DLManagedTensorVersioned versioned;
    } m;
} ManagedContext;

static void managed_free(ManagedContext *ctx)
{
    cv_buffer_unref(ctx->buf);
    free(ctx);
}

static void legacy_deleter(DLManagedTensor *self)
{
    managed_free(self->manager_ctx);
}

static void versioned_deleter(DLManagedTensorVersioned *self)
{
    managed_free(self->manager_ctx);
}

void cv_dlpack_delete(void *managed, bool versioned)
{
    if (managed && versioned) {
        DLManagedTensorVersioned *m = managed;
        if (m->deleter)
            m->deleter(m);
    } else if (managed) {
        DLManagedTensor *m = managed;
        m->deleter(m);
    }
}

CvStatus cv_dlpack_export(const CvTensor *t, int device_type, int device_id, bool versioned,
                          bool copy, void **managed)
{
    CvStatus s = CV_STATUS_OK;
    ManagedContext *ctx = calloc(1, sizeof(*ctx));
    if (!ctx) {
        s = cv_error_nomem();
        goto done;
    }
    char *data = t->data;
    if (copy) { /* host memory: a copy of its own */
        size_t n = cv_tensor_nbytes(t);
        if (!(ctx->buf = cv_buffer_new(n))) {
            free(ctx);
            s = cv_error_nomem();
            goto done;
        }
        memcpy(ctx->buf->data, t->data, n);
        data = ctx->buf->data;
    } else {
        ctx->buf = cv_buffer_ref(t->buf);
    }
    memcpy(ctx->shape, t->shape, sizeof(ctx->shape));
    DLTensor dl = {
        .data = data,
        .device = {device_type, device_id},
        .ndim = t->rank,
        .dtype = {dtypes[t->dtype].code, dtypes[t->dtype].bits, 1},
        .shape = ctx->shape,
        .strides = NULL,
        .byte_offset = 0,
    };
    if (versioned) {
        DLManagedTensorVersioned *m = &ctx->m.versioned;
        m->version = (DLPackVersion){CV_DLPACK_MAJOR, DLPACK_MINOR};
        m->manager_ctx = ctx;
        m->deleter = versioned_deleter;
        m->flags = copy ? DLPACK_FLAG_IS_COPIED : 0;
        m->dl_tensor = dl;
        *managed = m;
    } else {
        DLManagedTensor *m = &ctx->m.legacy;
        m->dl_tensor = dl;
        m->manager_ctx = ctx;
        m->deleter = legacy_deleter;
        *managed = m;
    }
done:
    return s;
}
