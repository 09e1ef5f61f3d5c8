/* interleave's exact resume (kernels/interleave.c, DESIGN: "Exact resume"):
 * CvKernel.save writes the consumer's view (the cycle, each open slot's
 * outer element and mark, the input's mark); CvKernel.restore puts a new
 * iterator back at it, calling map_func again on each saved outer element.
 * The consumer's thread only, as save() and restore() are. */
#ifndef CV_INTERLEAVE_STATE_H
#define CV_INTERLEAVE_STATE_H

#include "core/iterator_state.h"
#include "kernels/kernels.h"

CvStatus cv_interleave_save(CvIterator *base, CvStateWriter *w);
CvStatus cv_interleave_restore(CvIterator *base, CvStateReader *r);

#endif
