/* A stage's results as exact-resume state (core/stage.h): a status is its
 * code and message (a Python exception's object is not kept: restored, it
 * is raised by its code). No state; any thread. */
#ifndef CV_STAGE_STATUS_H
#define CV_STAGE_STATUS_H

#include "core/iterator_state.h"
#include "core/status.h"

void cv_stage_put_status(CvStateWriter *w, CvStatus s);
CvStatus cv_stage_get_status(CvStateReader *r, CvStatus *s);

#endif
