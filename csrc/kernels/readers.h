/* Constructors of the record-file reader kernels (tfrecord.c, text_line.c,
 * fixed_length_record.c). Each reads the files named by `filenames` (a
 * dataset of scalar strings, borrowed) one after the other and yields one
 * scalar string per record. Options are copied. */
#ifndef CV_READERS_H
#define CV_READERS_H

#include "core/dataset.h"
#include "io/csv.h"
#include "io/record_reader.h"

CvStatus cv_tfrecord_dataset(CvDataset *filenames, const CvReadOptions *options, CvDataset **out);
CvStatus cv_text_line_dataset(CvDataset *filenames, const CvReadOptions *options, CvDataset **out);
/* record_bytes > 0. */
CvStatus cv_fixed_length_record_dataset(CvDataset *filenames, uint64_t header_bytes,
                                        uint64_t record_bytes, uint64_t footer_bytes,
                                        const CvReadOptions *options, CvDataset **out);

/* CsvDataset (kernels/csv.c): the CSV records of each file in turn, one
 * element of ncols scalars per record. select and exclude (at most one of
 * them non-empty) are strictly increasing field indices; columns' string
 * defaults and na are copied. */
typedef struct CvCsvParams {
    CvReadOptions options;
    bool header, quotes;
    char delim;
    const char *na;
    size_t na_len;
    int ncols;
    const CvCsvColumn *cols;
    const int64_t *select, *exclude;
    int nselect, nexclude;
} CvCsvParams;
CvStatus cv_csv_dataset(CvDataset *filenames, const CvCsvParams *params, CvDataset **out);

#endif
