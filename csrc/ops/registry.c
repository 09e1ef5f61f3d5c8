/* The element ops a traced program may use, by name. Add a new op's vtable
 * here (and its Python wrapper under conveyor/). */
#include <string.h>

#include "ops/op.h"

extern const CvOp cv_op_cast;
extern const CvOp cv_op_reshape;

static const CvOp *const all_ops[] = {
    &cv_op_cast,
    &cv_op_reshape,
};

const CvOp *cv_op_find(const char *name)
{
    for (size_t i = 0; i < sizeof(all_ops) / sizeof(all_ops[0]); i++)
        if (strcmp(all_ops[i]->name, name) == 0)
            return all_ops[i];
    return NULL;
}
