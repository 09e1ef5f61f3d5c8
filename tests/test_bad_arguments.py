"""Bad arguments fail at construction with the right exception type and a clear message."""
import numpy as np
import pytest

import conveyor as tf

Dataset = tf.data.Dataset
IAE = tf.errors.InvalidArgumentError


def ds():
    return Dataset.range(5)


def test_invalid_argument_error_is_value_error_and_op_error():
    assert issubclass(IAE, ValueError)
    assert issubclass(IAE, tf.errors.OpError)
    e = IAE("msg")
    assert e.message == "msg" and str(e) == "msg"
    assert e.error_code == tf.errors.INVALID_ARGUMENT


# -- range ---------------------------------------------------------------------

def test_range_step_zero():
    with pytest.raises(IAE, match="step must be a non-zero integer"):
        Dataset.range(1, 10, 0)


def test_range_no_args():
    with pytest.raises(ValueError, match="between 1 and 3 but was 0"):
        Dataset.range()


def test_range_float_arg():
    with pytest.raises(TypeError, match="range\\(\\) arguments must be integers"):
        Dataset.range(2.5)


# -- batch -----------------------------------------------------------------------

@pytest.mark.parametrize("size", [0, -1, -5])
def test_batch_non_positive(size):
    with pytest.raises(IAE, match=f"Batch size must be greater than zero, got {size}"):
        ds().batch(size)


@pytest.mark.parametrize("size,tname", [(True, "bool"), (2.0, "float"), ("2", "str"),
                                        (None, "NoneType"), ([2], "list")])
def test_batch_wrong_type(size, tname):
    with pytest.raises(TypeError, match=f"`batch_size` must be an int.*\\({tname}\\)"):
        ds().batch(size)


def test_batch_numpy_int_ok():
    assert len(list(ds().batch(np.int64(2)))) == 3


@pytest.mark.parametrize("npc", [0, -2, -100])
def test_batch_bad_parallelism(npc):
    with pytest.raises(IAE, match="num_parallel_calls must be greater than zero or AUTOTUNE"):
        ds().batch(2, num_parallel_calls=npc)


@pytest.mark.parametrize("npc", [1.5, "4", True])
def test_batch_parallelism_wrong_type(npc):
    with pytest.raises(TypeError, match="`num_parallel_calls` must be an int"):
        ds().batch(2, num_parallel_calls=npc)


# -- prefetch ----------------------------------------------------------------------

@pytest.mark.parametrize("size", [-2, -10])
def test_prefetch_below_autotune(size):
    with pytest.raises(IAE, match=f"buffer_size must be >= 0 or AUTOTUNE \\(-1\\), got {size}"):
        ds().prefetch(size)


@pytest.mark.parametrize("size,tname", [(1.0, "float"), ("1", "str"), (False, "bool"),
                                        (None, "NoneType")])
def test_prefetch_wrong_type(size, tname):
    with pytest.raises(TypeError, match=f"`buffer_size` must be an int.*\\({tname}\\)"):
        ds().prefetch(size)


def test_prefetch_zero_and_autotune_ok():
    assert list(ds().prefetch(0)) == list(range(5))
    assert list(ds().prefetch(tf.data.AUTOTUNE)) == list(range(5))


# -- take / skip / repeat ----------------------------------------------------------

@pytest.mark.parametrize("op", ["take", "skip", "repeat"])
@pytest.mark.parametrize("count,tname", [(1.0, "float"), ("3", "str"), (True, "bool")])
def test_count_wrong_type(op, count, tname):
    with pytest.raises(TypeError, match=f"`count` must be an int.*\\({tname}\\)"):
        getattr(ds(), op)(count)


@pytest.mark.parametrize("op", ["take", "skip"])
def test_take_skip_none_rejected(op):
    with pytest.raises(TypeError, match="`count` must be an int"):
        getattr(ds(), op)(None)


# -- map -----------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [5, "lambda x: x", None])
def test_map_non_callable(fn):
    with pytest.raises(TypeError, match="`map_func` must be callable"):
        ds().map(fn)


@pytest.mark.parametrize("npc", [0, -2])
def test_map_bad_parallelism(npc):
    with pytest.raises(IAE, match=f"num_parallel_calls must be greater than zero or AUTOTUNE \\(-1\\), got {npc}"):
        ds().map(lambda x: x, num_parallel_calls=npc)


def test_map_parallelism_wrong_type():
    with pytest.raises(TypeError, match="`num_parallel_calls` must be an int"):
        ds().map(lambda x: x, num_parallel_calls=2.0)


def test_map_fn_wrong_arity_raises_at_next():
    it = iter(Dataset.from_tensor_slices(([1], [2])).map(lambda a: a))
    with pytest.raises(TypeError, match="positional argument"):
        next(it)


# -- from_tensor_slices / from_tensors --------------------------------------------------

def test_slices_empty_tuple():
    with pytest.raises(ValueError, match="Invalid `element`. `element` should not be empty."):
        Dataset.from_tensor_slices(())


def test_tensors_empty_tuple():
    with pytest.raises(ValueError, match="`element` should not be empty"):
        Dataset.from_tensors(())


def test_slices_scalar():
    with pytest.raises(ValueError, match="Unbatching a tensor is only supported for rank >= 1"):
        Dataset.from_tensor_slices(np.float32(3))


def test_slices_scalar_names_component():
    with pytest.raises(ValueError, match=r"\['b'\] is a scalar"):
        Dataset.from_tensor_slices({"a": [1, 2], "b": 3})


def test_slices_mismatched_sizes():
    with pytest.raises(ValueError, match=r"same size in dimension 0.*\[0\] has 2.*\[1\] has 3"):
        Dataset.from_tensor_slices(([1, 2], [1, 2, 3]))


def test_slices_mismatched_sizes_nested_paths():
    with pytest.raises(ValueError, match=r"\['x'\]\[1\] has 1"):
        Dataset.from_tensor_slices({"x": (np.zeros(2), np.zeros(1))})


def test_slices_ragged():
    with pytest.raises(ValueError, match="Can't convert non-rectangular Python sequence to Tensor"):
        Dataset.from_tensor_slices([[1, 2], [3]])


@pytest.mark.parametrize("make", [Dataset.from_tensor_slices, Dataset.from_tensors])
def test_unsupported_dtype_complex(make):
    with pytest.raises(TypeError, match="complex64 is not supported"):
        make(np.zeros(2, np.complex64))


def test_unsupported_dtype_datetime():
    with pytest.raises(TypeError, match="not supported"):
        Dataset.from_tensor_slices(np.array(["2020-01-01"], dtype="datetime64[D]"))


def test_unconvertible_object():
    with pytest.raises(TypeError, match="Cannot convert"):
        Dataset.from_tensors(object())


# -- from_generator ----------------------------------------------------------------------

def test_generator_not_callable():
    with pytest.raises(TypeError, match="`generator` must be a Python callable"):
        Dataset.from_generator(iter([1]), output_types=tf.int64)


def test_generator_no_types():
    with pytest.raises(TypeError, match="Either `output_signature` or `output_types` must be specified"):
        Dataset.from_generator(lambda: iter([1]))


def test_generator_both_styles():
    with pytest.raises(TypeError, match="`output_types` argument can not be used together with the `output_signature`"):
        Dataset.from_generator(lambda: iter([1]), output_types=tf.int64,
                               output_signature=tf.TensorSpec([], tf.int64))


def test_generator_bad_signature_leaf():
    with pytest.raises(TypeError, match="`output_signature` must contain TensorSpec"):
        Dataset.from_generator(lambda: iter([1]), output_signature={"a": [1]})


# -- options / apply ----------------------------------------------------------------------

def test_with_options_wrong_type():
    with pytest.raises(TypeError, match="`options` must be a conveyor.data.Options"):
        ds().with_options({"deterministic": True})


def test_apply_must_return_dataset():
    with pytest.raises(TypeError, match="`transformation_func` must return a Dataset"):
        ds().apply(lambda d: 5)


def test_tensor_spec_bad_dtype():
    with pytest.raises(TypeError, match="Cannot convert"):
        tf.TensorSpec([], "complex64")
