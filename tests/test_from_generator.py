"""Dataset.from_generator: re-invocation per iterator/epoch, signature checks, errors."""
import traceback

import numpy as np
import pytest

import conveyor as tf

Dataset = tf.data.Dataset
Spec = tf.TensorSpec


def counting_gen(n):
    calls = []

    def gen():
        calls.append(1)
        for i in range(n):
            yield i
    return gen, calls


def test_basic_output_signature():
    gen, _ = counting_gen(4)
    ds = Dataset.from_generator(gen, output_signature=Spec([], tf.int64))
    out = list(ds.as_numpy_iterator())
    assert out == [0, 1, 2, 3]
    assert all(type(v) is np.int64 for v in out)
    assert ds.element_spec == Spec([], tf.int64)


def test_output_types_converts_dtype():
    ds = Dataset.from_generator(lambda: iter([1, 2]), output_types=tf.float32)
    out = list(ds.as_numpy_iterator())
    assert out == [1.0, 2.0] and all(type(v) is np.float32 for v in out)


def test_output_types_and_shapes_structure():
    def gen():
        yield (np.array([1, 2], np.int32), 3.5)
        yield (np.array([3, 4], np.int32), 4.5)
    ds = Dataset.from_generator(gen, output_types=(tf.int32, tf.float64),
                                output_shapes=((2,), ()))
    assert ds.element_spec == (Spec([2], tf.int32), Spec([], tf.float64))
    out = list(ds.as_numpy_iterator())
    assert len(out) == 2
    np.testing.assert_array_equal(out[1][0], [3, 4])
    assert out[1][1] == 4.5 and type(out[1][1]) is np.float64


def test_dict_signature():
    def gen():
        for i in range(3):
            yield {"x": i, "y": np.full((2,), i, np.float32)}
    ds = Dataset.from_generator(gen, output_signature={"x": Spec([], tf.int64),
                                                       "y": Spec([2], tf.float32)})
    out = list(ds)
    assert [e["x"] for e in out] == [0, 1, 2]
    np.testing.assert_array_equal(out[2]["y"], [2.0, 2.0])


def test_unknown_dims_accept_varying_shapes():
    def gen():
        for n in (1, 3, 2):
            yield np.arange(n)
    ds = Dataset.from_generator(gen, output_signature=Spec([None], tf.int64))
    assert [len(a) for a in ds] == [1, 3, 2]


def test_string_scalars():
    ds = Dataset.from_generator(lambda: iter(["a", b"b"]), output_signature=Spec([], tf.string))
    assert list(ds) == [b"a", b"b"]


def test_args_passed_as_numpy():
    seen = []

    def gen(n, scale):
        seen.append((type(n), type(scale)))
        for i in range(int(n)):
            yield i * scale
    ds = Dataset.from_generator(gen, args=(3, 2.0), output_signature=Spec([], tf.float32))
    assert list(ds) == [0.0, 2.0, 4.0]
    assert all(issubclass(t, np.ndarray) or issubclass(t, np.generic) for pair in seen for t in pair)


def test_generator_called_again_for_each_iterator():
    gen, calls = counting_gen(3)
    ds = Dataset.from_generator(gen, output_signature=Spec([], tf.int64))
    assert list(ds) == [0, 1, 2]
    assert list(ds) == [0, 1, 2]
    assert len(calls) == 2


def test_generator_called_again_for_each_repeat_epoch():
    gen, calls = counting_gen(2)
    ds = Dataset.from_generator(gen, output_signature=Spec([], tf.int64)).repeat(3)
    assert list(ds) == [0, 1, 0, 1, 0, 1]
    assert len(calls) == 3


def test_stateful_generator_rerun_per_epoch():
    state = {"epoch": 0}

    def gen():
        state["epoch"] += 1
        for i in range(2):
            yield state["epoch"] * 10 + i
    ds = Dataset.from_generator(gen, output_signature=Spec([], tf.int64)).repeat(2)
    assert list(ds) == [10, 11, 20, 21]


def test_two_live_iterators_have_independent_generators():
    gen, calls = counting_gen(3)
    ds = Dataset.from_generator(gen, output_signature=Spec([], tf.int64))
    a, b = iter(ds), iter(ds)
    assert next(a) == 0
    assert next(b) == 0
    assert next(a) == 1
    assert list(b) == [1, 2]
    assert list(a) == [2]
    assert len(calls) == 2


def test_cardinality_unknown():
    gen, _ = counting_gen(3)
    ds = Dataset.from_generator(gen, output_signature=Spec([], tf.int64))
    assert ds.cardinality() == tf.data.UNKNOWN_CARDINALITY
    with pytest.raises(TypeError):
        len(ds)


def test_empty_generator():
    ds = Dataset.from_generator(lambda: iter(()), output_signature=Spec([], tf.int64))
    assert list(ds) == []


def test_end_is_sticky():
    gen, _ = counting_gen(1)
    it = iter(Dataset.from_generator(gen, output_signature=Spec([], tf.int64)))
    assert next(it) == 0
    for _ in range(3):
        with pytest.raises(StopIteration):
            next(it)


def test_with_map_and_batch():
    gen, _ = counting_gen(5)
    ds = Dataset.from_generator(gen, output_signature=Spec([], tf.int64))
    out = [b.tolist() for b in ds.map(lambda x: x * 2).batch(2)]
    assert out == [[0, 2], [4, 6], [8]]


# -- per-element checks (InvalidArgumentError at next()) -----------------------

def collect(it):
    """Drain an iterator; errors are recorded as ('err', type, message)."""
    out = []
    while True:
        try:
            out.append(next(it))
        except StopIteration:
            return out
        except Exception as e:  # noqa: BLE001
            out.append(("err", type(e), str(e)))


def test_shape_mismatch_message_and_continue():
    def gen():
        yield [1, 2]
        yield [1, 2, 3]
        yield [4, 5]
    ds = Dataset.from_generator(gen, output_signature=Spec([2], tf.int32))
    out = collect(iter(ds))
    assert len(out) == 3
    np.testing.assert_array_equal(out[0], [1, 2])
    assert out[1][1] is tf.errors.InvalidArgumentError
    assert out[1][2] == ("`generator` yielded an element of shape (3,) where an element of "
                         "shape (2,) was expected.")
    np.testing.assert_array_equal(out[2], [4, 5])


def test_shape_mismatch_message():
    def gen():
        yield [1, 2]
        yield [1, 2, 3]
    it = iter(Dataset.from_generator(gen, output_signature=Spec([2], tf.int32)))
    np.testing.assert_array_equal(next(it), [1, 2])
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        next(it)
    assert str(info.value) == ("`generator` yielded an element of shape (3,) where an element "
                               "of shape (2,) was expected.")


def test_shape_mismatch_is_value_error_too():
    ds = Dataset.from_generator(lambda: iter([[1, 2, 3]]), output_signature=Spec([2], tf.int32))
    with pytest.raises(ValueError, match=r"shape \(3,\) where an element of shape \(2,\)"):
        next(iter(ds))


def test_rank_mismatch():
    ds = Dataset.from_generator(lambda: iter([5]), output_signature=Spec([1], tf.int32))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"shape \(\) where an element of shape \(1,\) was expected"):
        next(iter(ds))


def test_structure_mismatch():
    ds = Dataset.from_generator(lambda: iter([1]),
                                output_signature=(Spec([], tf.int32), Spec([], tf.int32)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="did not match the expected structure"):
        next(iter(ds))


def test_type_conversion_failure():
    ds = Dataset.from_generator(lambda: iter(["abc"]), output_signature=Spec([], tf.int32))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="could not be converted to the expected type"):
        next(iter(ds))


class GenError(Exception):
    pass


def test_exception_in_generator_keeps_type_and_note():
    def gen():
        yield 1
        raise GenError("bad gen")
    it = iter(Dataset.from_generator(gen, output_signature=Spec([], tf.int64)))
    assert next(it) == 1
    with pytest.raises(GenError, match="bad gen") as info:
        next(it)
    notes = getattr(info.value, "__notes__", [])
    assert any("Dataset.from_generator" in n for n in notes), notes
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "gen" in frames, frames


def test_exception_in_generator_first_call():
    def gen():
        raise GenError("at start")
        yield  # pragma: no cover
    with pytest.raises(GenError, match="at start"):
        list(Dataset.from_generator(gen, output_signature=Spec([], tf.int64)))


# -- construction errors -------------------------------------------------------

def test_non_callable():
    with pytest.raises(TypeError, match="`generator` must be a Python callable"):
        Dataset.from_generator([1, 2], output_signature=Spec([], tf.int64))


def test_neither_signature_nor_types():
    with pytest.raises(TypeError, match="Either `output_signature` or `output_types` must be specified"):
        Dataset.from_generator(lambda: iter([]))


def test_both_signature_and_types():
    with pytest.raises(TypeError, match="can not be used together"):
        Dataset.from_generator(lambda: iter([]), output_types=tf.int64,
                               output_signature=Spec([], tf.int64))


def test_shapes_without_types():
    with pytest.raises(TypeError, match="output_shapes"):
        Dataset.from_generator(lambda: iter([]), output_shapes=[2])


def test_signature_must_hold_tensor_specs():
    with pytest.raises(TypeError, match="TensorSpec"):
        Dataset.from_generator(lambda: iter([]), output_signature=(tf.int64,))
