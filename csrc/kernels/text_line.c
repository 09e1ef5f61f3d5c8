/* TextLineDataset: the lines of each file in turn, without '\n' and with
 * every '\r' dropped; a last segment without '\n' is a line only when it is
 * non-empty (tf.data's ReadLine). The iterator is the record-file kernels'
 * shared one (kernels/common/file_records.c); line framing is in
 * io/record_reader.c. Never needs the GIL. */
#include "kernels/common/file_records.h"
#include "kernels/readers.h"

static int64_t text_line_cardinality(const CvDataset *ds)
{
    (void)ds;
    return CV_UNKNOWN_CARDINALITY;
}

const CvKernel cv_kernel_text_line = {
    .name = "TextLine",
    .make_iterator = cv_file_records_make_iterator,
    .cardinality = text_line_cardinality,
    .free_dataset = cv_file_records_free_params,
    .next = cv_file_records_next,
    .cancel = cv_file_records_cancel,
    .destroy = cv_file_records_destroy,
    .save = cv_file_records_save,
    .restore = cv_file_records_restore,
    .skip = cv_file_records_skip,
    .prepare = cv_file_records_prepare,
};

CvStatus cv_text_line_dataset(CvDataset *filenames, const CvReadOptions *options, CvDataset **out)
{
    CvReaderParams p = {.format = CV_FORMAT_TEXT_LINE, .options = *options};
    return cv_file_records_dataset(&cv_kernel_text_line, filenames, &p, out);
}
