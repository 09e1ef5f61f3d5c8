/* Rows of elements packed into tensors: how window() and group_by_window()
 * hand a window of elements across the engine boundary, and how the window
 * datasets built from it (kernels/window_source.c) read them back.
 *
 * Format, for each component c of the rows (in order):
 *  - dense (ragged[c] false): one tensor [n, ...], the rows stacked. Every
 *    row must have the same dtype and shape.
 *  - ragged (ragged[c] true): two tensors. `values`: the rows' values
 *    concatenated into one rank-1 tensor. `shapes`: int64 [n, 1 + R], each
 *    row's rank and then its dims, zero-padded to the largest rank R. Rows
 *    must have the same dtype; their shapes (and ranks) may differ.
 * The Python layer picks ragged for components whose static shape is not
 * fully known, so a window of variable-length sequences works as in tf.data.
 */
#ifndef CV_PACKED_ROWS_H
#define CV_PACKED_ROWS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/tensor.h"

/* Tensors per packed window: ncomp plus one per ragged component. */
uint32_t cv_rows_width(uint32_t ncomp, const bool *ragged);

/* Pack n >= 1 rows (borrowed; each with ncomp components) into `out`, a new
 * element of cv_rows_width() tensors. The rows' memory is copied. `stage`
 * names the caller in error messages. */
CvStatus cv_rows_pack(CvElement *const *rows, int64_t n, uint32_t ncomp, const bool *ragged,
                      const char *stage, CvElement *out);

#endif
