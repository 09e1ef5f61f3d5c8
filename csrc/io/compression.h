/* The compression codes of record files (TFRecord, text lines, fixed-length
 * records), as tf.io names them: "" (none), "ZLIB" and "GZIP". Readers
 * inflate them (io/input_stream.h), the TFRecord writer deflates them
 * (io/record_writer.h). Header only.
 */
#ifndef CV_COMPRESSION_H
#define CV_COMPRESSION_H

#include <stdbool.h>

typedef enum CvCompression {
    CV_COMPRESSION_NONE = 0,
    CV_COMPRESSION_ZLIB = 1, /* zlib stream, window bits 15 */
    CV_COMPRESSION_GZIP = 2, /* gzip stream (window bits 15 + 16); members may be concatenated */
} CvCompression;

static inline bool cv_compression_valid(CvCompression c)
{
    return c == CV_COMPRESSION_NONE || c == CV_COMPRESSION_ZLIB || c == CV_COMPRESSION_GZIP;
}

/* "ZLIB", "GZIP" or "uncompressed", for error messages. */
static inline const char *cv_compression_name(CvCompression c)
{
    return c == CV_COMPRESSION_ZLIB ? "ZLIB" : c == CV_COMPRESSION_GZIP ? "GZIP" : "uncompressed";
}

#endif
