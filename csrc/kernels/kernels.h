/* Constructors for every dataset kernel. Each kernel lives in its own file
 * and exports one const CvKernel; these functions validate parameters and
 * build the dataset. Ownership: inputs are borrowed (the new dataset takes
 * its own reference); CvFunction/CvSource contexts and element contents
 * passed in are owned by the dataset from the call on, even on failure. */
#ifndef CV_KERNELS_H
#define CV_KERNELS_H

#include "core/dataset.h"

CvStatus cv_tensor_slices_dataset(CvElement *components, CvDataset **out);
CvStatus cv_tensors_dataset(CvElement *components, CvDataset **out);
CvStatus cv_range_dataset(int64_t start, int64_t stop, int64_t step, CvDtype dtype,
                          CvDataset **out);
CvStatus cv_generator_dataset(CvSource source, CvDataset **out);
/* num_parallel_calls: 0 = sequential, CV_AUTOTUNE, or > 0. */
CvStatus cv_map_dataset(CvDataset *input, CvFunction fn, int64_t num_parallel_calls,
                        bool deterministic, CvDataset **out);
CvStatus cv_batch_dataset(CvDataset *input, int64_t batch_size, bool drop_remainder,
                          int64_t num_parallel_calls, bool deterministic, CvDataset **out);
/* buffer_size: CV_AUTOTUNE, 0 (no prefetching) or > 0. */
CvStatus cv_prefetch_dataset(CvDataset *input, int64_t buffer_size, CvDataset **out);
/* interleave: cycle_length >= 1, block_length >= 1; num_parallel_calls 0
 * (sequential), > 0 or CV_AUTOTUNE. */
CvStatus cv_interleave_dataset(CvDataset *input, CvDatasetFunction fn, int64_t cycle_length,
                               int64_t block_length, int64_t num_parallel_calls, bool deterministic,
                               CvDataset **out);
CvStatus cv_ignore_errors_dataset(CvDataset *input, bool log_warning, CvDataset **out);
/* seed == seed2 == 0: unseeded (random seeds). */
CvStatus cv_shuffle_dataset(CvDataset *input, int64_t buffer_size, int64_t seed, int64_t seed2,
                            bool reshuffle_each_iteration, CvDataset **out);
CvStatus cv_take_dataset(CvDataset *input, int64_t count, CvDataset **out);
CvStatus cv_skip_dataset(CvDataset *input, int64_t count, CvDataset **out);
CvStatus cv_repeat_dataset(CvDataset *input, int64_t count, CvDataset **out);
/* cache: the store (kernels/cache.h) is shared, a new reference is taken.
 * `expected` (n components, copied; NULL when the element spec is not known
 * yet) must fit a cache file before it is read. */
struct CvCacheStore;
struct CvComponentSpec;
CvStatus cv_cache_dataset(CvDataset *input, struct CvCacheStore *store,
                          const struct CvComponentSpec *expected, uint32_t n_expected,
                          CvDataset **out);

#endif
