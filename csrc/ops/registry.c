/* The element ops a traced program may use, by name. Add a new op's vtable
 * here (and its Python wrapper under conveyor/). */
#include <string.h>

#include "ops/op.h"

extern const CvOp cv_op_cast;
extern const CvOp cv_op_concat;
extern const CvOp cv_op_elementwise;
extern const CvOp cv_op_encode_jpeg;
extern const CvOp cv_op_one_hot;
extern const CvOp cv_op_parse_example;
extern const CvOp cv_op_uniform;
extern const CvOp cv_op_reshape;
extern const CvOp cv_op_read_file;
extern const CvOp cv_op_decode_jpeg;
extern const CvOp cv_op_decode_and_crop_jpeg;
extern const CvOp cv_op_extract_jpeg_shape;
extern const CvOp cv_op_decode_wav;
extern const CvOp cv_op_encode_wav;
extern const CvOp cv_op_crop_and_resize;
extern const CvOp cv_op_draw_bounding_boxes;
extern const CvOp cv_op_sample_distorted_bounding_box;
extern const CvOp cv_op_stateless_sample_distorted_bounding_box;
extern const CvOp cv_op_decode_image;
extern const CvOp cv_op_decode_png;
extern const CvOp cv_op_encode_png;
extern const CvOp cv_op_decode_raw;
extern const CvOp cv_op_decode_csv;
extern const CvOp cv_op_shape;
extern const CvOp cv_op_strided_slice;
extern const CvOp cv_op_resize_area;
extern const CvOp cv_op_resize_bicubic;
extern const CvOp cv_op_resize_bilinear;
extern const CvOp cv_op_resize_nearest_neighbor;
extern const CvOp cv_op_resize_legacy;
extern const CvOp cv_op_scale_and_translate;
extern const CvOp cv_op_convert_image;
extern const CvOp cv_op_crop;
extern const CvOp cv_op_flip;
extern const CvOp cv_op_rotate;
extern const CvOp cv_op_color;
extern const CvOp cv_op_adjust;
extern const CvOp cv_op_standardize;
extern const CvOp cv_op_string_split;
extern const CvOp cv_op_string_to_hash_bucket;
extern const CvOp cv_op_string_to_number;
extern const CvOp cv_op_unicode_decode;
extern const CvOp cv_op_reduce;
extern const CvOp cv_op_arg_min_max;
extern const CvOp cv_op_range;
extern const CvOp cv_op_squeeze;
extern const CvOp cv_op_ensure_shape;
extern const CvOp cv_op_check_numerics;
extern const CvOp cv_op_cond_select;
extern const CvOp cv_op_gather;
extern const CvOp cv_op_select;
extern const CvOp cv_op_where;
extern const CvOp cv_op_assert;
extern const CvOp cv_op_sparse_to_dense;
extern const CvOp cv_op_decode_compressed;
/* tf.strings: regex and text ops */
extern const CvOp cv_op_regex_full_match;
extern const CvOp cv_op_regex_replace;
extern const CvOp cv_op_string_case;
extern const CvOp cv_op_string_strip;
extern const CvOp cv_op_string_length;
extern const CvOp cv_op_string_equal;
extern const CvOp cv_op_substr;
extern const CvOp cv_op_string_join;
extern const CvOp cv_op_reduce_join;
extern const CvOp cv_op_as_string;
extern const CvOp cv_op_string_format;
extern const CvOp cv_op_stateless_random;
extern const CvOp cv_op_stateless_truncated_normal;
extern const CvOp cv_op_histogram_fixed_width;
extern const CvOp cv_op_multinomial;
extern const CvOp cv_op_random_permutation;
extern const CvOp cv_op_random_gamma;
extern const CvOp cv_op_sort;
extern const CvOp cv_op_base64;
extern const CvOp cv_op_search_sorted;
extern const CvOp cv_op_scatter_nd;
extern const CvOp cv_op_non_max_suppression;
extern const CvOp cv_op_unique;
extern const CvOp cv_op_adjust_hsv;
extern const CvOp cv_op_adjust_contrast;
extern const CvOp cv_op_adjust_gamma;
extern const CvOp cv_op_transpose;
extern const CvOp cv_op_tile;
extern const CvOp cv_op_pad;
extern const CvOp cv_op_broadcast_to;
extern const CvOp cv_op_split;
extern const CvOp cv_op_cumsum;

static const CvOp *const all_ops[] = {
    &cv_op_cast,
    &cv_op_concat,
    &cv_op_elementwise,
    &cv_op_encode_jpeg,
    &cv_op_one_hot,
    &cv_op_parse_example,
    &cv_op_uniform,
    &cv_op_reshape,
    &cv_op_read_file,
    &cv_op_decode_jpeg,
    &cv_op_decode_and_crop_jpeg,
    &cv_op_extract_jpeg_shape,
    &cv_op_decode_wav,
    &cv_op_encode_wav,
    &cv_op_crop_and_resize,
    &cv_op_draw_bounding_boxes,
    &cv_op_sample_distorted_bounding_box,
    &cv_op_stateless_sample_distorted_bounding_box,
    &cv_op_decode_image,
    &cv_op_decode_png,
    &cv_op_encode_png,
    &cv_op_decode_raw,
    &cv_op_decode_csv,
    &cv_op_shape,
    &cv_op_strided_slice,
    &cv_op_resize_area,
    &cv_op_resize_bicubic,
    &cv_op_resize_bilinear,
    &cv_op_resize_nearest_neighbor,
    &cv_op_resize_legacy,
    &cv_op_scale_and_translate,
    &cv_op_convert_image,
    &cv_op_crop,
    &cv_op_flip,
    &cv_op_rotate,
    &cv_op_color,
    &cv_op_adjust,
    &cv_op_standardize,
    &cv_op_string_split,
    &cv_op_string_to_hash_bucket,
    &cv_op_string_to_number,
    &cv_op_unicode_decode,
    &cv_op_reduce,
    &cv_op_arg_min_max,
    &cv_op_range,
    &cv_op_squeeze,
    &cv_op_ensure_shape,
    &cv_op_check_numerics,
    &cv_op_cond_select,
    &cv_op_gather,
    &cv_op_select,
    &cv_op_where,
    &cv_op_assert,
    &cv_op_sparse_to_dense,
    &cv_op_decode_compressed,
    &cv_op_regex_full_match,
    &cv_op_regex_replace,
    &cv_op_string_case,
    &cv_op_string_strip,
    &cv_op_string_length,
    &cv_op_string_equal,
    &cv_op_substr,
    &cv_op_string_join,
    &cv_op_reduce_join,
    &cv_op_as_string,
    &cv_op_string_format,
    &cv_op_stateless_random,
    &cv_op_stateless_truncated_normal,
    &cv_op_histogram_fixed_width,
    &cv_op_multinomial,
    &cv_op_random_permutation,
    &cv_op_random_gamma,
    &cv_op_sort,
    &cv_op_base64,
    &cv_op_search_sorted,
    &cv_op_scatter_nd,
    &cv_op_non_max_suppression,
    &cv_op_unique,
    &cv_op_adjust_hsv,
    &cv_op_adjust_contrast,
    &cv_op_adjust_gamma,
    &cv_op_transpose,
    &cv_op_tile,
    &cv_op_pad,
    &cv_op_broadcast_to,
    &cv_op_split,
    &cv_op_cumsum,
};

const CvOp *cv_op_find(const char *name)
{
    for (size_t i = 0; i < sizeof(all_ops) / sizeof(all_ops[0]); i++)
        if (strcmp(all_ops[i]->name, name) == 0)
            return all_ops[i];
    return NULL;
}
