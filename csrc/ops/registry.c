/* The element ops a traced program may use, by name. Add a new op's vtable
 * here (and its Python wrapper under conveyor/). */
#include <string.h>

#include "ops/op.h"

extern const CvOp cv_op_cast;
extern const CvOp cv_op_elementwise;
extern const CvOp cv_op_one_hot;
extern const CvOp cv_op_uniform;
extern const CvOp cv_op_reshape;
extern const CvOp cv_op_resize_area;
extern const CvOp cv_op_resize_bicubic;
extern const CvOp cv_op_resize_bilinear;
extern const CvOp cv_op_resize_nearest_neighbor;
extern const CvOp cv_op_scale_and_translate;

static const CvOp *const all_ops[] = {
    &cv_op_cast,
    &cv_op_elementwise,
    &cv_op_one_hot,
    &cv_op_uniform,
    &cv_op_reshape,
    &cv_op_resize_area,
    &cv_op_resize_bicubic,
    &cv_op_resize_bilinear,
    &cv_op_resize_nearest_neighbor,
    &cv_op_scale_and_translate,
};

const CvOp *cv_op_find(const char *name)
{
    for (size_t i = 0; i < sizeof(all_ops) / sizeof(all_ops[0]); i++)
        if (strcmp(all_ops[i]->name, name) == 0)
            return all_ops[i];
    return NULL;
}
