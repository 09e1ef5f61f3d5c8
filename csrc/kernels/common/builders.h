/* The kernels' dataset constructors as a table (core/builder.h). */
#ifndef CV_KERNELS_BUILDERS_H
#define CV_KERNELS_BUILDERS_H

#include "core/builder.h"

/* Ends with an entry whose name is NULL. */
extern const CvBuilder cv_kernel_builders[];

#endif
