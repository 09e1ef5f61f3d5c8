/* The dataset constructors of the kernels as one const table (core/builder.h):
 * sources, the common transformations, the structural ones, the choosers
 * the windows and the record-file readers. The binding walks it
 * (csrc/python/constructors.c); each build forwards checked arguments to its
 * kernel (kernels.h, readers.h). Cache keeps its own binding;
 * prefetch_to_device's entry is in device/. */
#include "kernels/common/builders.h"

#include <stdlib.h>

#include "kernels/kernels.h"
#include "kernels/readers.h"

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

/* The readers' common options; negative sizes are refused here (the front
 * end checks them first), codes by cv_reader_params_check. */
static CvStatus read_options(int64_t compression, int64_t buffer_size, int64_t max_record_bytes,
                             int64_t on_truncation, CvReadOptions *o)
{
    if (buffer_size < 0 || max_record_bytes < 0)
        return cv_error(CV_INVALID_ARGUMENT, "buffer_size and max_record_bytes must be >= 0");
    *o = (CvReadOptions){(CvCompression)compression, (CvTruncation)on_truncation,
                         (size_t)buffer_size, (uint64_t)max_record_bytes};
    return CV_STATUS_OK;
}

static CvStatus build_tfrecord(CvBuildArg *a, CvDataset **out)
{
    CvReadOptions o;
    CvStatus s = read_options(a[1].i, a[2].i, a[3].i, a[4].i, &o);
    return s ? s : cv_tfrecord_dataset(a[0].dataset, &o, out);
}

static CvStatus build_text_line(CvBuildArg *a, CvDataset **out)
{
    CvReadOptions o;
    CvStatus s = read_options(a[1].i, a[2].i, 0, a[3].i, &o);
    return s ? s : cv_text_line_dataset(a[0].dataset, &o, out);
}

static CvStatus build_fixed_length_record(CvBuildArg *a, CvDataset **out)
{
    CvReadOptions o;
    CvStatus s = read_options(a[4].i, a[5].i, 0, a[6].i, &o);
    if (!s && (a[1].i < 0 || a[2].i <= 0 || a[3].i < 0))
        s = cv_error(CV_INVALID_ARGUMENT,
                     "header_bytes and footer_bytes must be >= 0 and record_bytes > 0");
    return s ? s : cv_fixed_length_record_dataset(a[0].dataset, (uint64_t)a[1].i, (uint64_t)a[2].i,
                                                  (uint64_t)a[3].i, &o, out);
}

/* The scalar string t holds (a borrowed view). */
static const char *string_value(const CvTensor *t, size_t *len)
{
    const CvStringRef *ref = (const CvStringRef *)t->data;
    *len = (size_t)ref->length;
    return cv_string_data(t, ref);
}

/* csv: defaults holds one array per column of dtypes: empty (a required
 * column), or one int64, float64 or string value; taken (cleared here).
 * The kernel checks the dtypes and copies what it keeps. */
static CvStatus build_csv(CvBuildArg *a, CvDataset **out)
{
    CvElement *defaults = &a[10].element;
    int64_t k = a[9].ints.n;
    CvCsvColumn *cols = calloc(k > 0 ? (size_t)k : 1, sizeof(*cols));
    CvCsvParams p = {.header = a[3].b, .quotes = a[5].b, .delim = (char)a[4].i, .ncols = (int)k,
                     .cols = cols, .select = a[7].ints.v, .nselect = (int)a[7].ints.n,
                     .exclude = a[8].ints.v, .nexclude = (int)a[8].ints.n};
    CvStatus s = read_options(a[1].i, a[2].i, 0, CV_TRUNCATION_IGNORE, &p.options);
    if (!s && !cols)
        s = cv_error_nomem();
    else if (!s && (k < 1 || k > INT32_MAX || defaults->n != (uint32_t)k))
        s = cv_error(CV_INVALID_ARGUMENT, "csv: one default per dtype, at least one");
    if (!s && a[6].tensor && (a[6].tensor->dtype != CV_STRING || a[6].tensor->rank != 0))
        s = cv_error(CV_INVALID_ARGUMENT, "csv: na is a scalar string");
    else if (!s && a[6].tensor)
        p.na = string_value(a[6].tensor, &p.na_len);
    for (int64_t j = 0; !s && j < k; j++) {
        const CvTensor *t = &defaults->t[j];
        cols[j].dtype = (CvDtype)a[9].ints.v[j];
        cols[j].has_default = cv_tensor_num_elements(t) > 0;
        if (!cols[j].has_default)
            continue;
        if (t->dtype == CV_STRING)
            cols[j].s = string_value(t, &cols[j].s_len);
        else if (t->dtype == CV_FLOAT64)
            cols[j].f = *(const double *)t->data;
        else if (t->dtype == CV_INT64)
            cols[j].i = *(const int64_t *)t->data;
        else
            s = cv_error(CV_INVALID_ARGUMENT, "csv: a default is an int64, a float64 or a string");
    }
    if (!s)
        s = cv_csv_dataset(a[0].dataset, &p, out);
    cv_element_clear(defaults);
    free(cols);
    return s;
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
    {"tfrecord",
     {D("filenames"), I("compression"), I("buffer_size"), I("max_record_bytes"), I("on_truncation")},
     4, build_tfrecord, "the records of each file in turn"},
    {"text_line", {D("filenames"), I("compression"), I("buffer_size"), I("on_truncation")}, 3,
     build_text_line, "the lines of each file in turn"},
    {"fixed_length_record",
     {D("filenames"), I("header_bytes"), I("record_bytes"), I("footer_bytes"), I("compression"),
      I("buffer_size"), I("on_truncation")},
     6, build_fixed_length_record, "the records of each file in turn"},
    {"csv",
     {D("filenames"), I("compression"), I("buffer_size"), B("header"), I("delim"), B("use_quote"),
      {"na", CV_ARG_TENSOR_OR_NONE}, {"select", CV_ARG_INTS}, {"exclude", CV_ARG_INTS},
      {"dtypes", CV_ARG_INTS}, {"defaults", CV_ARG_ELEMENT}},
     11, build_csv, "defaults: per column an empty array (required) or one int64, float64 or "
                    "string value"},
    {NULL, {{NULL, CV_ARG_END}}, 0, NULL, NULL},
};
