/* A stage's start probe (core/stage.h, "Inline"): an AUTOTUNE stage that
 * may run inline starts inline, times its first units and posts their work
 * per unit for the autotuner's verdict. Consumer thread only (the stage's
 * next()); the probe state is shared with the autotuner as stage.h says. */
#ifndef CV_STAGE_PROBE_H
#define CV_STAGE_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/stage.h"

/* At the first next(): start inline and probing when the autotuner will
 * give the verdict (true: the stage is inline, nothing in flight). */
bool cv_stage_probe_start(CvStage *st);
/* Probing: one unit timed at `took` ns, `now` after it. */
void cv_stage_probe_step(CvStage *st, int64_t took, int64_t now);

#endif
