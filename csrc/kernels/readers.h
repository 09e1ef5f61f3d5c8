/* Constructors of the record-file reader kernels (tfrecord.c, text_line.c,
 * fixed_length_record.c). Each reads the files named by `filenames` (a
 * dataset of scalar strings, borrowed) one after the other and yields one
 * scalar string per record. Options are copied. */
#ifndef CV_READERS_H
#define CV_READERS_H

#include "core/dataset.h"
#include "io/record_reader.h"

CvStatus cv_tfrecord_dataset(CvDataset *filenames, const CvReadOptions *options, CvDataset **out);
CvStatus cv_text_line_dataset(CvDataset *filenames, const CvReadOptions *options, CvDataset **out);
/* record_bytes > 0. */
CvStatus cv_fixed_length_record_dataset(CvDataset *filenames, uint64_t header_bytes,
                                        uint64_t record_bytes, uint64_t footer_bytes,
                                        const CvReadOptions *options, CvDataset **out);

#endif
