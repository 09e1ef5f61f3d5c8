/* The dataset constructors of the kernels as one const table (core/builder.h):
 * sources, the common transformations, the structural ones, the choosers
 * and the windows. The binding walks it (csrc/python/construct.c); each
 * build forwards checked arguments to its kernel (kernels.h). Record files
 * and cache keep their own binding (they open files); prefetch_to_device's
 * entry is in device/. */
#include "kernels/common/builders.h"

#include "kernels/kernels.h"

#define D(k) {k, CV_ARG_DATASET}
#define I(k) {k, CV_ARG_INT}
#define B(k) {k, CV_ARG_BOOL}
#define AUX(k) {k, CV_ARG_AUX}
#define MEMORY {"memory", CV_ARG_MEMORY}

static CvStatus build_tensor_slices(CvBuildArg *a, CvDataset **out)
{
    return cv_tensor_slices_dataset(&a[0].element, out);
}

static CvStatus build_tensors(CvBuildArg *a, CvDataset **out)
{
    return cv_tensors_dataset(&a[0].element, out);
}

static CvStatus build_range(CvBuildArg *a, CvDataset **out)
{
    return cv_range_dataset(a[0].i, a[1].i, a[2].i, (CvDtype)a[3].i, out);
}

static CvStatus build_generator(CvBuildArg *a, CvDataset **out)
{
    return cv_generator_dataset(a[0].source, out);
}

static CvStatus build_map(CvBuildArg *a, CvDataset **out)
{
    return cv_map_dataset(a[0].dataset, a[1].fn, a[3].i, a[4].b, out);
}

static CvStatus build_batch(CvBuildArg *a, CvDataset **out)
{
    return cv_batch_dataset(a[0].dataset, a[1].i, a[2].b, a[3].i, a[4].b, out);
}

static CvStatus build_interleave(CvBuildArg *a, CvDataset **out)
{
    return cv_interleave_dataset(a[0].dataset, a[1].dataset_fn, a[2].i, a[3].i, a[4].i, a[5].b, out);
}

static CvStatus build_ignore_errors(CvBuildArg *a, CvDataset **out)
{
    return cv_ignore_errors_dataset(a[0].dataset, a[1].b, out);
}

static CvStatus build_prefetch(CvBuildArg *a, CvDataset **out)
{
    return cv_prefetch_dataset(a[0].dataset, a[1].i, out);
}

static CvStatus build_shuffle(CvBuildArg *a, CvDataset **out)
{
    return cv_shuffle_dataset(a[0].dataset, a[1].i, a[2].i, a[3].i, a[4].b, out);
}

static CvStatus build_shuffle_batch(CvBuildArg *a, CvDataset **out)
{
    return cv_shuffle_batch_dataset(a[0].dataset, a[1].i, a[2].b, a[3].i, a[4].b, out);
}

static CvStatus build_map_batch(CvBuildArg *a, CvDataset **out)
{
    return cv_map_batch_dataset(a[0].dataset, a[1].i, a[2].b, out);
}

static CvStatus build_take(CvBuildArg *a, CvDataset **out)
{
    return cv_take_dataset(a[0].dataset, a[1].i, out);
}

static CvStatus build_skip(CvBuildArg *a, CvDataset **out)
{
    return cv_skip_dataset(a[0].dataset, a[1].i, out);
}

static CvStatus build_repeat(CvBuildArg *a, CvDataset **out)
{
    return cv_repeat_dataset(a[0].dataset, a[1].i, out);
}

static CvStatus build_filter(CvBuildArg *a, CvDataset **out)
{
    return cv_filter_dataset(a[0].dataset, a[1].fn, out);
}

static CvStatus build_take_while(CvBuildArg *a, CvDataset **out)
{
    return cv_take_while_dataset(a[0].dataset, a[1].fn, out);
}

static CvStatus build_scan(CvBuildArg *a, CvDataset **out)
{
    return cv_scan_dataset(a[0].dataset, &a[1].element, a[2].fn, out);
}

static CvStatus build_unique(CvBuildArg *a, CvDataset **out)
{
    return cv_unique_dataset(a[0].dataset, out);
}

static CvStatus build_zip(CvBuildArg *a, CvDataset **out)
{
    return cv_zip_dataset(a[0].datasets.v, a[0].datasets.n, out);
}

static CvStatus build_concatenate(CvBuildArg *a, CvDataset **out)
{
    return cv_concatenate_dataset(a[0].datasets.v, a[0].datasets.n, out);
}

static CvStatus build_shard(CvBuildArg *a, CvDataset **out)
{
    return cv_shard_dataset(a[0].dataset, a[1].i, a[2].i, out);
}

static CvStatus build_unbatch(CvBuildArg *a, CvDataset **out)
{
    return cv_unbatch_dataset(a[0].dataset, a[1].i, out);
}

static CvStatus build_rebatch(CvBuildArg *a, CvDataset **out)
{
    return cv_rebatch_dataset(a[0].dataset, a[1].ints.v, a[1].ints.n, a[2].b, &a[3].element, out);
}

static CvStatus build_padded_batch(CvBuildArg *a, CvDataset **out)
{
    return cv_padded_batch_dataset(a[0].dataset, a[1].i, &a[2].element, &a[3].element, a[4].b, out);
}

static CvStatus build_choose(CvBuildArg *a, CvDataset **out)
{
    return cv_choose_dataset(a[0].dataset, a[1].datasets.v, a[1].datasets.n, a[2].b, out);
}

static CvStatus build_random(CvBuildArg *a, CvDataset **out)
{
    return cv_random_dataset(a[0].i, a[1].i, a[2].b, out);
}

static CvStatus build_sample_choice(CvBuildArg *a, CvDataset **out)
{
    return cv_sample_choice_dataset(a[0].dataset, a[1].dataset, a[2].tensor, out);
}

static CvStatus build_window(CvBuildArg *a, CvDataset **out)
{
    return cv_window_dataset(a[0].dataset, a[1].i, a[2].i, a[3].i, a[4].b, a[5].bools.v, a[5].bools.n,
                             out);
}

static CvStatus build_window_source(CvBuildArg *a, CvDataset **out)
{
    return cv_window_source_dataset(&a[0].element, a[1].bools.v, a[1].bools.n, out);
}

static CvStatus build_group_by_window(CvBuildArg *a, CvDataset **out)
{
    return cv_group_by_window_dataset(a[0].dataset, a[1].fn, a[3].fn, a[5].i, a[6].bools.v,
                                      a[6].bools.n, out);
}

const CvBuilder cv_kernel_builders[] = {
    {"tensor_slices", {{"components", CV_ARG_ELEMENT}}, 1, build_tensor_slices,
     "a dataset of the components' slices along their first dimension"},
    {"tensors", {{"components", CV_ARG_ELEMENT}}, 1, build_tensors, "a dataset of one element"},
    {"range", {I("start"), I("stop"), I("step"), I("dtype")}, 4, build_range, "the integers"},
    {"generator", {{"factory", CV_ARG_SOURCE}, AUX("name")}, 2, build_generator,
     "factory() returns an iterator of lists of arrays"},
    {"map",
     {D("input"), {"fn", CV_ARG_FUNCTION}, AUX("out_convert"), I("num_parallel_calls"),
      B("deterministic"), AUX("name"), B("with_id"), MEMORY},
     6, build_map, "fn: a Program capsule or a callable"},
    {"batch",
     {D("input"), I("batch_size"), B("drop_remainder"), I("num_parallel_calls"), B("deterministic"),
      MEMORY},
     5, build_batch, ""},
    {"interleave",
     {D("input"), {"fn", CV_ARG_DATASET_FUNCTION}, I("cycle_length"), I("block_length"),
      I("num_parallel_calls"), B("deterministic"), AUX("name"), MEMORY},
     7, build_interleave, "fn(*components) returns an engine Dataset"},
    {"ignore_errors", {D("input"), B("log_warning")}, 2, build_ignore_errors, ""},
    {"prefetch", {D("input"), I("buffer_size"), MEMORY}, 2, build_prefetch, ""},
    {"shuffle",
     {D("input"), I("buffer_size"), I("seed"), I("seed2"), B("reshuffle_each_iteration"), MEMORY},
     5, build_shuffle, ""},
    {"shuffle_batch",
     {D("shuffle"), I("batch_size"), B("drop_remainder"), I("num_parallel_calls"),
      B("deterministic"), MEMORY},
     5, build_shuffle_batch, "shuffle followed by batch, fused"},
    {"map_batch", {D("map"), I("batch_size"), B("drop_remainder"), MEMORY}, 3, build_map_batch,
     "a parallel map followed by batch, fused"},
    {"take", {D("input"), I("count")}, 2, build_take, ""},
    {"skip", {D("input"), I("count")}, 2, build_skip, ""},
    {"repeat", {D("input"), I("count")}, 2, build_repeat, ""},
    {"filter",
     {D("input"), {"predicate", CV_ARG_FUNCTION}, AUX("out_convert"), AUX("name"), B("with_id")}, 4,
     build_filter, "the predicate (as map's fn) returns a scalar bool"},
    {"take_while",
     {D("input"), {"predicate", CV_ARG_FUNCTION}, AUX("out_convert"), AUX("name"), B("with_id")}, 4,
     build_take_while, "the predicate as filter's"},
    {"scan",
     {D("input"), {"initial_state", CV_ARG_ELEMENT}, {"fn", CV_ARG_FUNCTION}, AUX("out_convert"),
      AUX("name"), B("with_id")},
     5, build_scan, "fn takes the state's then the element's components, returns the new state's "
                    "then the output's"},
    {"unique", {D("input")}, 1, build_unique, ""},
    {"zip", {{"datasets", CV_ARG_DATASETS}}, 1, build_zip, ""},
    {"concatenate", {{"datasets", CV_ARG_DATASETS}}, 1, build_concatenate, ""},
    {"shard", {D("input"), I("num_shards"), I("index")}, 3, build_shard, ""},
    {"unbatch", {D("input"), I("static_batch_size")}, 2, build_unbatch, ""},
    {"rebatch",
     {D("input"), {"batch_sizes", CV_ARG_INTS}, B("drop_remainder"),
      {"empty_components", CV_ARG_ELEMENT}},
     4, build_rebatch, "empty_components: zero-row arrays, one per component"},
    {"padded_batch",
     {D("input"), I("batch_size"), {"padded_shapes", CV_ARG_ELEMENT},
      {"padding_values", CV_ARG_ELEMENT}, B("drop_remainder")},
     5, build_padded_batch, "padded_shapes: int64 vectors; padding_values: scalars"},
    {"choose", {D("selector"), {"datasets", CV_ARG_DATASETS}, B("stop_on_empty_dataset")}, 3,
     build_choose, ""},
    {"random", {I("seed"), I("seed2"), B("rerandomize")}, 3, build_random, ""},
    {"sample_choice",
     {D("random"), {"weights_dataset", CV_ARG_DATASET_OR_NONE}, {"weights", CV_ARG_TENSOR_OR_NONE}},
     3, build_sample_choice, ""},
    {"window",
     {D("input"), I("size"), I("shift"), I("stride"), B("drop_remainder"), {"ragged", CV_ARG_BOOLS}},
     6, build_window, "a dataset of packed windows"},
    {"window_source", {{"tensors", CV_ARG_ELEMENT}, {"ragged", CV_ARG_BOOLS}}, 2,
     build_window_source, "a dataset of a packed window's elements"},
    {"group_by_window",
     {D("input"), {"key_fn", CV_ARG_FUNCTION}, AUX("key_convert"),
      {"size_fn", CV_ARG_FUNCTION_OR_NONE}, AUX("size_convert"), I("window_size"),
      {"ragged", CV_ARG_BOOLS}, AUX("name")},
     8, build_group_by_window, "a dataset of (key, packed window)"},
    {NULL, {{NULL, CV_ARG_END}}, 0, NULL, NULL},
};
