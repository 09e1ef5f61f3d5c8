/* tf.train.Example: a wire-format parser with TensorFlow's parse_example
 * layouts, in plain C (no Python, no protobuf library).
 *
 * A CvExampleConfig is a compiled feature configuration (what the
 * `features` dict of tf.io.parse_example describes). It is immutable once
 * built, so any number of threads may parse with one config at the same
 * time, without the GIL.
 *
 * Accepted input is a subset of what TensorFlow's fast parser accepts
 * (example_proto_fast_parsing.cc), with its data layout and error texts:
 *  - Example fields other than `features` (1) are skipped by wire type;
 *    repeated `features` fields merge (protobuf concatenation).
 *  - A Features map entry holds exactly two fields, key (1) and value (2), in
 *    either order. Duplicate keys: the last entry wins; an empty `Feature {}`
 *    counts as missing (and does not hide an earlier entry, except for
 *    VarLen features of a batched parse, where TensorFlow lets it win).
 *  - Float and int64 lists may be packed (one chunk) or unpacked.
 *  - Feature values are only decoded for configured keys.
 * Stricter than TensorFlow (which accepts these and silently ignores or
 * truncates data): lengths that run past their enclosing message, packed
 * floats whose byte length is not a multiple of 4, data after a packed chunk
 * or after the one list of a Feature. These are InvalidArgument errors.
 * Varints are at most 10 bytes; nothing recurses.
 */
#ifndef CV_OPS_EXAMPLE_H
#define CV_OPS_EXAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"

typedef enum CvFeatureKind {
    CV_FEATURE_FIXED_LEN = 0,          /* tf.io.FixedLenFeature: a dense tensor of `shape` */
    CV_FEATURE_VAR_LEN = 1,            /* tf.io.VarLenFeature: a SparseTensor (3 outputs) */
    CV_FEATURE_FIXED_LEN_SEQUENCE = 2, /* tf.io.FixedLenSequenceFeature(allow_missing=True) */
} CvFeatureKind;

/* One feature of a configuration; every pointer is borrowed for the call to
 * cv_example_config_new only. */
typedef struct CvFeatureSpec {
    const char *key;
    size_t key_len;
    CvFeatureKind kind;
    CvDtype dtype;        /* CV_FLOAT32, CV_INT64 or CV_STRING */
    int rank;             /* FixedLen: the value shape; sequence: one row's shape; VarLen: 0 */
    const int64_t *shape; /* rank dims, each >= 0 (> 0 for a sequence) */
    /* NULL for none. FixedLen: prod(shape) values of dtype (any tensor
     * shape); missing features get it, and without it they are an error.
     * Sequence: exactly one value, the padding of a batched parse (zero or
     * "" without it). VarLen: must be NULL. */
    const CvTensor *default_value;
} CvFeatureSpec;

typedef struct CvExampleConfig CvExampleConfig;

CvStatus cv_example_config_new(const CvFeatureSpec *specs, int num_features, CvExampleConfig **out);
void cv_example_config_free(CvExampleConfig *cfg); /* NULL-safe */
/* Outputs of a parse, in feature order: FixedLen and sequence features give
 * one tensor each, VarLen features three (indices, values, dense_shape). */
int cv_example_config_num_outputs(const CvExampleConfig *cfg);

typedef struct CvBytesView {
    const char *data;
    size_t size;
} CvBytesView;

/* Parse n serialized Examples into `outputs` (an array of
 * cv_example_config_num_outputs() tensors, filled on success and untouched
 * on failure).
 *
 * single = false (tf.io.parse_example): FixedLen -> [n] + shape; VarLen ->
 * indices int64 [M,2] of (example, position), values [M], dense_shape int64
 * [n, max_len]; sequence -> [n, max_rows] + shape, padded with the default.
 * Errors name the example ("Name: <names[i] or <unknown>>, Key: k, Index: i").
 * single = true (tf.io.parse_single_example; n must be 1): FixedLen ->
 * shape; VarLen -> indices [M,1], values [M], dense_shape [M]; sequence ->
 * [rows] + shape; TensorFlow's single-example error texts.
 *
 * names may be NULL. Pure C: safe to call without the GIL. Errors are
 * CV_INVALID_ARGUMENT (CV_RESOURCE_EXHAUSTED when memory runs out). */
CvStatus cv_parse_examples(const CvExampleConfig *cfg, const CvBytesView *serialized, int64_t n,
                           const CvBytesView *names, bool single, CvTensor *outputs);

/* The same over engine tensors: a rank-0 string tensor parses as a single
 * example, a rank-1 one as a batch. names: NULL or a string tensor with the
 * same number of elements. */
CvStatus cv_parse_example_tensor(const CvExampleConfig *cfg, const CvTensor *serialized,
                                 const CvTensor *names, CvTensor *outputs);

#endif
