/* Reports as JSON text (core/report.h). */
#include "core/report.h"

#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/autotune.h"
#include "core/tensor.h"

void cv_report_init(CvReport *r)
{
    *r = (CvReport){NULL, 0, 0, false};
}

void cv_report_clear(CvReport *r)
{
    free(r->text);
    cv_report_init(r);
}

static void put(CvReport *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = r->failed ? -1 : vsnprintf(r->text ? r->text + r->len : NULL,
                                       r->text ? r->cap - r->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0 || r->len + (size_t)n < r->cap) {
        r->len += n < 0 ? 0 : (size_t)n;
        r->failed |= n < 0;
        return;
    }
    size_t cap = r->cap ? r->cap : 1024;
    while (cap <= r->len + (size_t)n)
        cap *= 2;
    char *text = realloc(r->text, cap);
    if (!text) {
        r->failed = true;
        return;
    }
    r->text = text;
    r->cap = cap;
    va_start(ap, fmt);
    vsnprintf(r->text + r->len, r->cap - r->len, fmt, ap);
    va_end(ap);
    r->len += (size_t)n;
}

static void put_string(CvReport *r, const char *s)
{
    put(r, "\"");
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            put(r, "\\%c", *p);
        else if (*p < 0x20)
            put(r, "\\u%04x", *p);
        else
            put(r, "%c", *p);
    }
    put(r, "\"");
}

static void put_double(CvReport *r, double v)
{
    if (isnan(v))
        put(r, "NaN");
    else if (isinf(v))
        put(r, v < 0 ? "-Infinity" : "Infinity");
    else { /* always with a point or an exponent: a reader's float, never an int */
        char text[64];
        snprintf(text, sizeof(text), "%.17g", v);
        /* JSON's point whatever LC_NUMERIC says (a program may set it) */
        const char *point = localeconv()->decimal_point;
        char *at = point && strcmp(point, ".") != 0 && *point ? strstr(text, point) : NULL;
        if (at) {
            size_t n = strlen(point);
            *at = '.';
            memmove(at + 1, at + n, strlen(at + n) + 1);
        }
        put(r, strpbrk(text, ".e") ? "%s" : "%s.0", text);
    }
}

static void put_field(CvReport *r, const void *base, const CvField *f)
{
    const char *p = (const char *)base + f->offset;
    switch (f->kind) {
    case CV_FIELD_U64: put(r, "%" PRIu64, *(const uint64_t *)p); break;
    case CV_FIELD_I64: put(r, "%" PRId64, *(const int64_t *)p); break;
    case CV_FIELD_INT: put(r, "%d", *(const int *)p); break;
    case CV_FIELD_BOOL: put(r, *(const bool *)p ? "true" : "false"); break;
    case CV_FIELD_STRING: /* NULL: null */
        if (*(const char *const *)p)
            put_string(r, *(const char *const *)p);
        else
            put(r, "null");
        break;
    case CV_FIELD_DOUBLE: put_double(r, *(const double *)p); break;
    case CV_FIELD_SIZE: put(r, "%zu", *(const size_t *)p); break;
    case CV_FIELD_ADDRESS: {
        const void *a = *(const void *const *)p;
        if (a)
            put(r, "%" PRIuPTR, (uintptr_t)a);
        else
            put(r, "null");
        break;
    }
    }
}

void cv_report_fields(CvReport *r, const void *base, const CvField *fields)
{
    put(r, "{");
    for (const CvField *f = fields; f->name; f++) {
        put(r, "%s\"%s\": ", f == fields ? "" : ", ", f->name);
        put_field(r, base, f);
    }
    put(r, "}");
}

/* A list of n structs of `size` bytes at base. */
static void put_list(CvReport *r, const void *base, size_t size, int n, const CvField *fields)
{
    put(r, "[");
    for (int i = 0; i < n; i++) {
        put(r, i ? ", " : "");
        cv_report_fields(r, (const char *)base + (size_t)i * size, fields);
    }
    put(r, "]");
}

static void put_autotune(CvReport *r, CvAutotuner *tuner)
{
    CvAutotuneChoice choices[CV_AUTOTUNE_HISTORY];
    int copied = 0;
    int64_t changes = cv_autotuner_history(tuner, choices, CV_AUTOTUNE_HISTORY, &copied);
    bool fixed = cv_autotuner_algorithm(tuner) == CV_AUTOTUNE_FIXED;
    put(r, "{\"algorithm\": \"%s\", \"runs\": %" PRId64 ", \"changes\": %" PRId64
           ", \"bottleneck\": %d, \"history\": ",
        fixed ? "fixed" : "model", cv_autotuner_runs(tuner), changes, cv_autotuner_bottleneck(tuner));
    put_list(r, choices, sizeof(*choices), copied, cv_autotune_choice_fields);
    put(r, "}");
}

CvStatus cv_pipeline_report(CvPipeline *p, bool finished, CvReport *r)
{
    CvStats *stats = cv_pipeline_stats(p);
    if (!stats)
        return cv_error(CV_INVALID_ARGUMENT, "this iterator was made with statistics off");
    int n = cv_stats_snapshot(stats, NULL, 0);
    CvNodeSnapshot *snaps = calloc((size_t)(n > 0 ? n : 1), sizeof(*snaps));
    if (!snaps)
        return cv_error_nomem();
    /* Nodes only grow: those added since the count are left to the next
     * report (the snapshot fills n and returns how many there are now). */
    (void)cv_stats_snapshot(stats, snaps, n);
    put(r, "{\"cpu_budget\": %d, \"threads\": %d, \"running\": %d, \"elapsed_ns\": %" PRId64
           ", \"consumer_wait_ns\": %" PRId64 ", \"nodes\": ",
        cv_pipeline_cpu_budget(p), cv_pipeline_threads(p), cv_pipeline_running_turns(p),
        cv_pipeline_elapsed_ns(p), cv_stats_consumer_wait_ns(stats));
    put_list(r, snaps, sizeof(*snaps), n, cv_node_fields);
    free(snaps);
    put(r, ", \"autotune\": ");
    put_autotune(r, cv_pipeline_autotuner(p));
    put(r, ", \"finished\": %s}", finished ? "true" : "false");
    return r->failed ? cv_error_nomem() : CV_STATUS_OK;
}

#define POOL_FIELD(name, kind) {#name, kind, offsetof(CvBufferPoolStats, name)}

static const CvField buffer_pool_fields[] = {
    POOL_FIELD(hits, CV_FIELD_U64),
    POOL_FIELD(misses, CV_FIELD_U64),
    POOL_FIELD(missed_bytes, CV_FIELD_U64),
    POOL_FIELD(pooled_buffers, CV_FIELD_SIZE),
    POOL_FIELD(pooled_bytes, CV_FIELD_SIZE),
    {NULL, CV_FIELD_INT, 0},
};

CvStatus cv_buffer_pool_report(CvReport *r)
{
    CvBufferPoolStats stats = cv_buffer_pool_stats();
    cv_report_fields(r, &stats, buffer_pool_fields);
    return r->failed ? cv_error_nomem() : CV_STATUS_OK;
}
