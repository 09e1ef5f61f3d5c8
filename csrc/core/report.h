/* Reports: engine structs and a running pipeline's statistics as JSON text,
 * for a front end to read with its JSON parser (the binding: json.loads).
 * The field tables (CvField, core/stats.h) name what a struct reports; one
 * writer turns any of them into an object, so the binding holds no
 * statistics or autotuner code.
 *
 * Numbers are written exactly (integers in full, doubles with 17 digits,
 * NaN and infinities as Python's json writes them), strings escaped, a NULL
 * address or string as null. Thread-safety: that of what is read (the statistics
 * accessors of core/pipeline.h may run beside the pipeline's threads). */
#ifndef CV_REPORT_H
#define CV_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/pipeline.h"
#include "core/stats.h"
#include "core/status.h"

/* A growing text buffer; a failed allocation leaves it in error and every
 * later append a no-op. */
typedef struct CvReport {
    char *text; /* owned, NUL-terminated */
    size_t len, cap;
    bool failed;
} CvReport;

void cv_report_init(CvReport *r);
void cv_report_clear(CvReport *r);
/* The object of the fields `fields` names in the struct at base. */
void cv_report_fields(CvReport *r, const void *base, const CvField *fields);

/* The pipeline's statistics: {cpu_budget, threads, running, elapsed_ns,
 * consumer_wait_ns, nodes: [cv_node_fields...], autotune: {algorithm, runs,
 * changes, bottleneck, history: [cv_autotune_choice_fields...]}, finished}.
 * INVALID_ARGUMENT when p was made without statistics. */
CvStatus cv_pipeline_report(CvPipeline *p, bool finished, CvReport *r);
/* The process's buffer pool (core/tensor.h): {hits, misses, missed_bytes,
 * pooled_buffers, pooled_bytes}. */
CvStatus cv_buffer_pool_report(CvReport *r);

#endif
