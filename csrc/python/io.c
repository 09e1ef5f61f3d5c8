/* Binding of the record-file readers and writers (TFRecord, text lines,
 * fixed-length records). */
#include "python/binding.h"

PyMethodDef cv_io_functions[] = {
    {NULL, NULL, 0, NULL},
};
