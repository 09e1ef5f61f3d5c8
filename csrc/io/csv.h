/* CSV values with tf.data's rules, shared by the DecodeCSV op
 * (ops/decode_csv.c) and CsvDataset (kernels/csv.c): what a field's text
 * means for a column of a given dtype (int32, int64, float32, float64 or
 * string) and default.
 *
 * Numbers: ASCII white space around the text is ignored. Integers are an
 * optional sign and decimal digits, in range. Floats are what C's strtod /
 * strtof read in the "C" locale (decimal or hexadecimal, inf, infinity, nan,
 * nan(...), any case), correctly rounded to the column's type; out-of-range
 * values become +-inf or 0 as TensorFlow makes them. Plain C, no state;
 * safe from any thread.
 */
#ifndef CV_IO_CSV_H
#define CV_IO_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"

/* A column: its dtype and default (borrowed bytes for strings). */
typedef struct CvCsvColumn {
    CvDtype dtype;    /* CV_INT32, CV_INT64, CV_FLOAT32, CV_FLOAT64 or CV_STRING */
    bool has_default; /* false: the column is required */
    int64_t i;        /* integer default */
    double f;         /* float default */
    const char *s;    /* string default */
    size_t s_len;
} CvCsvColumn;

/* A field's value: i for integers, f for floats, (s, s_len) for strings. */
typedef struct CvCsvValue {
    int64_t i;
    double f;
    const char *s;
    size_t s_len;
} CvCsvValue;

typedef enum CvCsvResult {
    CV_CSV_VALUE = 0,   /* *out holds the value */
    CV_CSV_MISSING = 1, /* empty or na_value, and the column is required */
    CV_CSV_INVALID = 2, /* not a number of the column's type */
} CvCsvResult;

static inline bool cv_csv_dtype_ok(CvDtype d)
{
    return d == CV_INT32 || d == CV_INT64 || d == CV_FLOAT32 || d == CV_FLOAT64 || d == CV_STRING;
}

/* TensorFlow's name of a CSV dtype in messages ("int32", "float", ...). */
const char *cv_csv_dtype_name(CvDtype d);

/* The value of field text (p, n) (already unquoted) for column c: an empty
 * field or one equal to na_value takes the default. String values point
 * into p or into c's default. */
CvCsvResult cv_csv_value(const CvCsvColumn *c, const char *p, size_t n, const char *na,
                         size_t na_len, CvCsvValue *out);

/* Store v (of column dtype d, numeric) at dst (one value of that dtype). */
void cv_csv_store(CvDtype d, const CvCsvValue *v, void *dst);

#endif
