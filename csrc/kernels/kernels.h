/* Constructors for every dataset kernel. Each kernel lives in its own file
 * directly in kernels/ and exports one const CvKernel cv_kernel_<file>;
 * helpers that several kernels share (and that export no kernel) live in
 * kernels/common/ (tests/test_csource_lint.py holds both rules). These
 * functions validate parameters and build the dataset. Ownership: inputs are
 * borrowed (the new dataset takes its own reference); CvFunction/CvSource
 * contexts and element contents passed in are owned by the dataset from the
 * call on, even on failure. The record-file readers' constructors are in
 * kernels/readers.h, the cache's shared store in kernels/cache.h. */
#ifndef CV_KERNELS_H
#define CV_KERNELS_H

#include <stdatomic.h>

#include "core/dataset.h"

CvStatus cv_tensor_slices_dataset(CvElement *components, CvDataset **out);
CvStatus cv_tensors_dataset(CvElement *components, CvDataset **out);
CvStatus cv_range_dataset(int64_t start, int64_t stop, int64_t step, CvDtype dtype,
                          CvDataset **out);
CvStatus cv_generator_dataset(CvSource source, CvDataset **out);
/* num_parallel_calls: 0 = sequential, CV_AUTOTUNE, or > 0. */
CvStatus cv_map_dataset(CvDataset *input, CvFunction fn, int64_t num_parallel_calls,
                        bool deterministic, CvDataset **out);
/* What a fused map+batch needs of a map dataset (its params, borrowed: the
 * fused dataset holds the map as its input). An iterator takes its epoch
 * with atomic_fetch_add(epochs, 1), as map's own iterators do. */
typedef struct CvMapFusion {
    const CvFunction *fn;
    int num_workers; /* 0: sequential */
    bool tune_workers;
    bool deterministic;
    atomic_uint_least64_t *epochs;
} CvMapFusion;
CvStatus cv_map_fusion(const CvDataset *map, CvMapFusion *out);
/* map followed by batch, fused (kernels/map_batch.c): `map` is a parallel
 * map dataset (its input, function and epochs are used); the other
 * arguments are batch's. The results are the pair's. */
CvStatus cv_map_batch_dataset(CvDataset *map, int64_t batch_size, bool drop_remainder,
                              CvDataset **out);
CvStatus cv_batch_dataset(CvDataset *input, int64_t batch_size, bool drop_remainder,
                          int64_t num_parallel_calls, bool deterministic, CvDataset **out);
/* batch's stacking of a bundle of `rows` rows (row r's component c at
 * bundle->t[r * ncomp + c]) into one element, with batch's errors. Takes the
 * bundle. */
CvStatus cv_batch_stack(CvElement *bundle, int64_t rows, CvElement *out, const CvBufferAllocator *a);
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
/* shuffle followed by batch, fused (kernels/shuffle_batch.c): `shuffle` is a
 * shuffle dataset (its input and seed generator are used); the other
 * arguments are batch's. Elements of fixed shape whose numbers take at most
 * CV_ARENA_MAX_ROW_BYTES wait in one arena; others are kept whole. */
#define CV_ARENA_MAX_ROW_BYTES 4096
CvStatus cv_shuffle_batch_dataset(CvDataset *shuffle, int64_t batch_size, bool drop_remainder,
                                  int64_t num_parallel_calls, bool deterministic, CvDataset **out);
CvStatus cv_take_dataset(CvDataset *input, int64_t count, CvDataset **out);
CvStatus cv_skip_dataset(CvDataset *input, int64_t count, CvDataset **out);
CvStatus cv_repeat_dataset(CvDataset *input, int64_t count, CvDataset **out);
/* filter: `predicate` returns one scalar bool tensor per element. */
CvStatus cv_filter_dataset(CvDataset *input, CvFunction predicate, CvDataset **out);
/* take_while: the elements before the first for which `predicate` (as
 * filter's) returns false. */
CvStatus cv_take_while_dataset(CvDataset *input, CvFunction predicate, CvDataset **out);
/* scan: `fn` maps (state..., element...) to (new state..., output...);
 * initial_state's tensors (taken) fix the number of state components. */
CvStatus cv_scan_dataset(CvDataset *input, CvElement *initial_state, CvFunction fn,
                         CvDataset **out);
/* unique: elements of one int32/int64/string component not seen before. */
CvStatus cv_unique_dataset(CvDataset *input, CvDataset **out);
/* zip / concatenate: num_inputs >= 1 datasets (borrowed). */
CvStatus cv_zip_dataset(CvDataset *const *inputs, int num_inputs, CvDataset **out);
CvStatus cv_concatenate_dataset(CvDataset *const *inputs, int num_inputs, CvDataset **out);
/* shard: num_shards > 0 and 0 <= index < num_shards, or num_shards ==
 * CV_SHARD_HINT (accepted, but its iterators fail as in tf.data). */
#define CV_SHARD_HINT (-1)
CvStatus cv_shard_dataset(CvDataset *input, int64_t num_shards, int64_t index, CvDataset **out);
/* unbatch: static_batch_size is the input's known leading dimension (-1:
 * unknown), used for the cardinality only. */
CvStatus cv_unbatch_dataset(CvDataset *input, int64_t static_batch_size, CvDataset **out);
/* rebatch: batch_sizes (>= 0, cycled) are copied; `empty` (taken) holds a
 * zero-row tensor per component for batch size 0. */
CvStatus cv_rebatch_dataset(CvDataset *input, const int64_t *batch_sizes, int64_t num_sizes,
                            bool drop_remainder, CvElement *empty, CvDataset **out);
/* padded_batch: padded_shapes (taken) holds an int64 vector per component
 * (-1: the largest in the batch), padding_values (taken) a scalar of the
 * component's dtype. */
CvStatus cv_padded_batch_dataset(CvDataset *input, int64_t batch_size, CvElement *padded_shapes,
                                 CvElement *padding_values, bool drop_remainder, CvDataset **out);
/* choose_from_datasets (DirectedInterleave): the selector's scalar int64
 * elements pick among n >= 1 data datasets (borrowed; referenced). */
CvStatus cv_choose_dataset(CvDataset *selector, CvDataset *const *data, int n,
                           bool stop_on_empty_dataset, CvDataset **out);
/* Dataset.random; seed == seed2 == 0: random seeds. */
CvStatus cv_random_dataset(int64_t seed, int64_t seed2, bool rerandomize_each_iteration,
                           CvDataset **out);
/* sample_from_datasets' choices from a Dataset.random: categorical with the
 * constant `weights` (a float32/float64 vector, copied) or, when
 * weights_dataset is not NULL, one weights vector per element of it. */
CvStatus cv_sample_choice_dataset(CvDataset *random, CvDataset *weights_dataset,
                                  const CvTensor *weights, CvDataset **out);
/* window: each window packed as kernels/common/packed_rows.h describes;
 * ragged has ncomp entries (copied). */
CvStatus cv_window_dataset(CvDataset *input, int64_t size, int64_t shift, int64_t stride,
                           bool drop_remainder, const bool *ragged, uint32_t ncomp, CvDataset **out);
/* The elements of one packed window (takes `packed`). */
CvStatus cv_window_source_dataset(CvElement *packed, const bool *ragged, uint32_t ncomp,
                                  CvDataset **out);
/* group_by_window's grouping: elements [key, packed window]. size_fn.call
 * NULL: every window has window_size elements. */
CvStatus cv_group_by_window_dataset(CvDataset *input, CvFunction key_fn, CvFunction size_fn,
                                    int64_t window_size, const bool *ragged, uint32_t ncomp,
                                    CvDataset **out);
/* cache: the store (kernels/cache.h) is shared, a new reference is taken.
 * `expected` (n components, copied; NULL when the element spec is not known
 * yet) must fit a cache file before it is read. */
struct CvCacheStore;
struct CvComponentSpec;
CvStatus cv_cache_dataset(CvDataset *input, struct CvCacheStore *store,
                          const struct CvComponentSpec *expected, uint32_t n_expected,
                          CvDataset **out);

#endif
