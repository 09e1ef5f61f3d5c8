/* Two tensors broadcast against each other, NumPy's rule, for ops that walk
 * both element by element (string_equal, substr). Header-only; the numeric
 * elementwise op has its own plan that coalesces dims for speed.
 *
 * cv_broadcast_init fills the broadcast rank and shape and each input's
 * strides in elements (0 along a broadcast dim); cv_broadcast_next moves
 * the row-major index one step, updating both input offsets. */
#ifndef CV_OPS_BROADCAST_H
#define CV_OPS_BROADCAST_H

#include "core/status.h"
#include "core/tensor.h"

typedef struct CvBroadcast {
    int rank;
    int64_t shape[CV_MAX_RANK];
    int64_t sa[CV_MAX_RANK], sb[CV_MAX_RANK];
    int64_t idx[CV_MAX_RANK];
    int64_t oa, ob; /* offsets of the current element in a and b */
} CvBroadcast;

static inline CvStatus cv_broadcast_init(CvBroadcast *bc, const CvTensor *a, const CvTensor *b)
{
    int rank = a->rank > b->rank ? a->rank : b->rank;
    int64_t stride_a = 1, stride_b = 1;
    bc->rank = rank;
    bc->oa = bc->ob = 0;
    for (int i = rank - 1; i >= 0; i--) {
        int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char ta[64], tb[64];
            return cv_error(CV_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s",
                            cv_shape_str(a->shape, a->rank, ta, sizeof(ta)),
                            cv_shape_str(b->shape, b->rank, tb, sizeof(tb)));
        }
        bc->shape[i] = da == 1 ? db : da;
        bc->sa[i] = da == 1 ? 0 : stride_a;
        bc->sb[i] = db == 1 ? 0 : stride_b;
        bc->idx[i] = 0;
        stride_a *= da;
        stride_b *= db;
    }
    return CV_STATUS_OK;
}

static inline void cv_broadcast_next(CvBroadcast *bc)
{
    for (int d = bc->rank - 1; d >= 0; d--) {
        bc->oa += bc->sa[d];
        bc->ob += bc->sb[d];
        if (++bc->idx[d] < bc->shape[d])
            return;
        bc->oa -= bc->sa[d] * bc->shape[d];
        bc->ob -= bc->sb[d] * bc->shape[d];
        bc->idx[d] = 0;
    }
}

#endif
