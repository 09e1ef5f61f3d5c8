/* TFRecordDataset: the records of each file in turn (flat_map over the
 * filenames). The iterator is the record-file kernels' shared one
 * (kernels/common/file_records.c); framing and CRC-32C checks are in
 * io/record_reader.c. Errors (DataLoss "truncated/corrupted record at
 * <offset>") belong to one position; the next call goes on with the next
 * file. Never needs the GIL. */
#include "kernels/common/file_records.h"
#include "kernels/readers.h"

static int64_t tfrecord_cardinality(const CvDataset *ds)
{
    (void)ds;
    return CV_UNKNOWN_CARDINALITY; /* as tf.data: records are counted only by reading */
}

const CvKernel cv_kernel_tfrecord = {
    .name = "TFRecord",
    .make_iterator = cv_file_records_make_iterator,
    .cardinality = tfrecord_cardinality,
    .free_dataset = cv_file_records_free_params,
    .next = cv_file_records_next,
    .cancel = cv_file_records_cancel,
    .destroy = cv_file_records_destroy,
    .save = cv_file_records_save,
    .restore = cv_file_records_restore,
    .skip = cv_file_records_skip,
    .prepare = cv_file_records_prepare,
};

CvStatus cv_tfrecord_dataset(CvDataset *filenames, const CvReadOptions *options, CvDataset **out)
{
    CvReaderParams p = {.format = CV_FORMAT_TFRECORD, .options = *options};
    return cv_file_records_dataset(&cv_kernel_tfrecord, filenames, &p, out);
}
