/* FixedLengthRecordDataset: skip header_bytes, then records of record_bytes
 * until footer_bytes before the end. A file whose body is not a whole number
 * of records yields its whole records, then ends as its reader's
 * on_truncation says (a warning, DataLoss, or quietly); tf.data refuses an
 * uncompressed one at open (InvalidArgument, no records) and raises DataLoss
 * after the whole records of a compressed one.
 * The iterator is the record-file kernels' shared one
 * (kernels/common/file_records.c); framing is in io/record_reader.c. Never
 * needs the GIL. */
#include "kernels/common/file_records.h"
#include "kernels/readers.h"

static int64_t fixed_length_cardinality(const CvDataset *ds)
{
    (void)ds;
    return CV_UNKNOWN_CARDINALITY;
}

const CvKernel cv_kernel_fixed_length_record = {
    .name = "FixedLengthRecord",
    .make_iterator = cv_file_records_make_iterator,
    .cardinality = fixed_length_cardinality,
    .free_dataset = cv_file_records_free_params,
    .next = cv_file_records_next,
    .cancel = cv_file_records_cancel,
    .destroy = cv_file_records_destroy,
    .save = cv_file_records_save,
    .restore = cv_file_records_restore,
    .skip = cv_file_records_skip,
    .prepare = cv_file_records_prepare,
};

CvStatus cv_fixed_length_record_dataset(CvDataset *filenames, uint64_t header_bytes,
                                        uint64_t record_bytes, uint64_t footer_bytes,
                                        const CvReadOptions *options, CvDataset **out)
{
    CvReaderParams p = {.format = CV_FORMAT_FIXED_LENGTH, .options = *options,
                        .header_bytes = header_bytes, .record_bytes = record_bytes,
                        .footer_bytes = footer_bytes};
    return cv_file_records_dataset(&cv_kernel_fixed_length_record, filenames, &p, out);
}
