/* What the kernels that call a user function per element share (filter,
 * take_while, scan, map, group_by_window).
 *
 * Element ids: each iterator of a dataset takes the next epoch from the
 * dataset's counter and numbers its elements 0, 1, ...; a function's random
 * ops seed from (epoch, index). After a restore, later iterators of the
 * dataset must number on from the restored epoch, as in the saved run.
 *
 * Predicates: a filter or take_while predicate returns one scalar bool. */
#ifndef CV_KERNELS_COMMON_ELEMENT_CALLS_H
#define CV_KERNELS_COMMON_ELEMENT_CALLS_H

#include <stdatomic.h>
#include <stdbool.h>

#include "core/dataset.h"

/* Raise the dataset's epoch counter past a restored iterator's `epoch`
 * (never lowers it; safe against concurrent iterators). */
void cv_epochs_note_restored(atomic_uint_least64_t *epochs, uint64_t epoch);

/* Run `predicate` on `in` (borrowed) at `id` and read its verdict into
 * *verdict. A result that is not one scalar bool is an InvalidArgument
 * error naming `stage` ("Dataset.filter"). */
CvStatus cv_predicate_verdict(const CvFunction *predicate, const CvElement *in,
                              const CvElementId *id, const char *stage, bool *verdict);

#endif
