/* NonMaxSuppression(boxes, scores): tf.image.non_max_suppression (TensorFlow's
 * NonMaxSuppressionV3, hard suppression): the int32 indices of up to
 * max_output_size boxes, highest score first, each overlapping none chosen
 * before it by an IoU above iou_threshold; boxes scoring at most
 * score_threshold are never chosen.
 *
 * boxes float32 [N, 4] (y1, x1, y2, x2, either corner first), scores
 * float32 [N]. ints: [max_output_size]; floats: [iou_threshold,
 * score_threshold] (float32 values). The IoU is TensorFlow's float32
 * arithmetic (0 for a box of no area). Candidates go in score order, equal
 * scores lower index first (TensorFlow's heap leaves ties unspecified:
 * docs/differences.md). Output: a new tensor. */
#include <stdlib.h>

#include "ops/op.h"

/* Attribute slots, named in this order (CvOp.int_attrs, .float_attrs). */
enum { NMS_MAX_OUTPUT_SIZE, NMS_NUM_INTS };
enum { NMS_IOU_THRESHOLD, NMS_SCORE_THRESHOLD, NMS_NUM_FLOATS };
static const char *const nms_int_attrs[] = {"max_output_size", NULL};
CV_ATTR_NAMES_MATCH(nms_int_attrs, NMS_NUM_INTS);
static const char *const nms_float_attrs[] = {"iou_threshold", "score_threshold", NULL};
CV_ATTR_NAMES_MATCH(nms_float_attrs, NMS_NUM_FLOATS);

typedef struct {
    float score;
    int64_t index;
} Candidate;

static int by_score(const void *a, const void *b) /* descending, then lower index */
{
    const Candidate *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static float iou(const float *a, const float *b)
{
    float ymin_a = a[0] < a[2] ? a[0] : a[2], ymax_a = a[0] < a[2] ? a[2] : a[0];
    float xmin_a = a[1] < a[3] ? a[1] : a[3], xmax_a = a[1] < a[3] ? a[3] : a[1];
    float ymin_b = b[0] < b[2] ? b[0] : b[2], ymax_b = b[0] < b[2] ? b[2] : b[0];
    float xmin_b = b[1] < b[3] ? b[1] : b[3], xmax_b = b[1] < b[3] ? b[3] : b[1];
    float area_a = (ymax_a - ymin_a) * (xmax_a - xmin_a);
    float area_b = (ymax_b - ymin_b) * (xmax_b - xmin_b);
    if (area_a <= 0.0f || area_b <= 0.0f)
        return 0.0f;
    float iy0 = ymin_a > ymin_b ? ymin_a : ymin_b, ix0 = xmin_a > xmin_b ? xmin_a : xmin_b;
    float iy1 = ymax_a < ymax_b ? ymax_a : ymax_b, ix1 = xmax_a < xmax_b ? xmax_a : xmax_b;
    float h = iy1 - iy0 > 0.0f ? iy1 - iy0 : 0.0f, w = ix1 - ix0 > 0.0f ? ix1 - ix0 : 0.0f;
    float inter = h * w;
    return inter / (area_a + area_b - inter);
}

static CvStatus nms_run(const CvOpAttrs *attrs, const CvTensor *in, int num_in, CvTensor *out,
                        int num_out, CvOpContext *ctx)
{
    (void)num_in;
    (void)num_out;
    (void)ctx;
    const CvTensor *boxes = &in[0], *scores = &in[1];
    CvStatus s = CV_STATUS_OK;
    Candidate *cand = NULL;
    int64_t *chosen = NULL;
    if (attrs->num_ints != NMS_NUM_INTS || attrs->num_floats != NMS_NUM_FLOATS) {
        s = cv_error(CV_INVALID_ARGUMENT, "malformed attributes");
        goto done;
    }
    if (boxes->dtype != CV_FLOAT32 || boxes->rank != 2 || boxes->shape[1] != 4) {
        s = cv_error(CV_INVALID_ARGUMENT,
                     "boxes must be float32 of shape [num_boxes, 4], got %s of rank %d%s",
                     cv_dtype_name(boxes->dtype), boxes->rank,
                     boxes->rank == 2 ? " with a last dimension other than 4" : "");
        goto done;
    }
    int64_t n = boxes->shape[0];
    if (scores->dtype != CV_FLOAT32 || scores->rank != 1 || scores->shape[0] != n) {
        if (scores->rank == 1)
            s = cv_error(CV_INVALID_ARGUMENT, "scores must be float32 of shape [%lld] (one per box), got %s [%lld]",
                         (long long)n, cv_dtype_name(scores->dtype), (long long)scores->shape[0]);
        else
            s = cv_error(CV_INVALID_ARGUMENT, "scores must be float32 of shape [%lld] (one per box), got %s of rank %d",
                         (long long)n, cv_dtype_name(scores->dtype), scores->rank);
        goto done;
    }
    int64_t limit = attrs->ints[NMS_MAX_OUTPUT_SIZE];
    float iou_threshold = (float)attrs->floats[NMS_IOU_THRESHOLD];
    float score_threshold = (float)attrs->floats[NMS_SCORE_THRESHOLD];
    const float *b = (const float *)boxes->data, *sc = (const float *)scores->data;
    cand = malloc((size_t)(n > 0 ? n : 1) * sizeof(*cand));
    chosen = malloc((size_t)(n > 0 ? n : 1) * sizeof(*chosen));
    if (!cand || !chosen) {
        s = cv_error(CV_RESOURCE_EXHAUSTED, "out of memory in non_max_suppression");
        goto done;
    }
    int64_t m = 0, k = 0;
    for (int64_t i = 0; i < n; i++)
        if (sc[i] > score_threshold)
            cand[m++] = (Candidate){sc[i], i};
    qsort(cand, (size_t)m, sizeof(*cand), by_score);
    for (int64_t i = 0; i < m && k < limit; i++) {
        bool keep = true;
        for (int64_t j = k - 1; j >= 0 && keep; j--) /* recent choices overlap most */
            keep = !(iou(b + 4 * cand[i].index, b + 4 * chosen[j]) > iou_threshold);
        if (keep)
            chosen[k++] = cand[i].index;
    }
    int64_t shape[1] = {k};
    if ((s = cv_tensor_alloc(&out[0], CV_INT32, 1, shape, 0, NULL)))
        goto done;
    for (int64_t i = 0; i < k; i++)
        ((int32_t *)out[0].data)[i] = (int32_t)chosen[i];
done:
    free(cand);
    free(chosen);
    return s;
}

const CvOp cv_op_non_max_suppression = {
    .name = "NonMaxSuppression", .min_inputs = 2, .max_inputs = 2, .run = nms_run,
    .int_attrs = nms_int_attrs, .float_attrs = nms_float_attrs};
