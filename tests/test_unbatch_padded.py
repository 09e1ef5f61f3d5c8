"""Dataset.unbatch, rebatch and padded_batch: values, shapes, strings,
structures, memory sharing, errors, cardinality, lifetimes."""
import gc

import numpy as np
import pytest

import conveyor as cv

pytestmark = pytest.mark.filterwarnings("ignore:.*runs in Python per element")  # on purpose

Dataset = cv.data.Dataset


def gen(values, spec):
    return Dataset.from_generator(lambda: iter(values), output_signature=spec)


def outcomes(ds, limit=50):
    out, it = [], iter(ds)
    for _ in range(limit):
        try:
            v = next(it)
            out.append(v.tolist() if isinstance(v, np.ndarray) else v)
        except StopIteration:
            return out
        except Exception as e:  # noqa: BLE001
            out.append(type(e))
    return out


def vectors(lengths, dtype=np.int64):
    """A dataset of vectors: element i has lengths[i] copies of i + 1 (spec [None])."""
    values = [np.full(n, i + 1, dtype) for i, n in enumerate(lengths)]
    return gen(values, cv.TensorSpec([None], cv.as_dtype(dtype)))


# -- unbatch ------------------------------------------------------------------------


def test_unbatch_values_and_spec():
    ds = Dataset.range(10).batch(4).unbatch()
    assert [int(v) for v in ds] == list(range(10))
    assert ds.element_spec == cv.TensorSpec([], cv.int64)
    m = Dataset.from_tensors(np.arange(24.0).reshape(4, 3, 2)).unbatch()
    assert m.element_spec.shape.as_list() == [3, 2] and m.cardinality() == 4
    np.testing.assert_array_equal(np.stack(list(m)), np.arange(24.0).reshape(4, 3, 2))


def test_unbatch_structures_and_strings():
    ds = Dataset.from_tensors({"s": np.array([[b"a", b""], [b"cc", b"d"]]), "i": np.arange(2)})
    out = list(ds.unbatch())
    assert out[1]["s"].tolist() == [b"cc", b"d"] and int(out[1]["i"]) == 1


def test_unbatch_rows_share_the_batch_memory():
    rows = list(Dataset.from_tensors(np.arange(12).reshape(4, 3)).unbatch())
    assert not rows[0].flags.writeable  # a view of the batch, which other rows share
    assert rows[2].tolist() == [6, 7, 8]


def test_unbatch_skips_empty_batches_and_checks_each_element():
    pair = (cv.TensorSpec([None], cv.float64), cv.TensorSpec([None], cv.float64))
    values = [(np.zeros(0), np.zeros(0)), (np.ones(2), np.ones(3)), (np.full(1, 5.0), np.full(1, 6.0))]
    out = outcomes(gen(values, pair).unbatch())
    assert out == [cv.errors.InvalidArgumentError, (5.0, 6.0)]
    out = outcomes(gen([np.float64(1), np.ones(2)], cv.TensorSpec(None, cv.float64)).unbatch())
    assert out == [cv.errors.InvalidArgumentError, 1.0, 1.0]


def test_unbatch_static_errors():
    with pytest.raises(ValueError, match="scalar"):
        Dataset.range(3).unbatch()
    with pytest.raises(ValueError, match="matching leading dimension"):
        Dataset.from_tensors((np.zeros(3), np.zeros(2))).unbatch()


def test_unbatch_after_python_map_checks_when_it_runs():
    # A NumPy function runs in Python: its spec is not known until it runs.
    ds = Dataset.range(3).map(lambda x: np.asarray(x) + 0).unbatch()
    it = iter(ds)
    with pytest.raises(cv.errors.InvalidArgumentError, match="non-scalar"):
        next(it)
    with pytest.raises(ValueError, match="scalar"):
        ds.element_spec


# -- rebatch -------------------------------------------------------------------------


def test_rebatch_values():
    as_lists = lambda ds: [b.tolist() for b in ds]  # noqa: E731
    assert as_lists(Dataset.range(7).batch(4).rebatch(3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert as_lists(Dataset.range(7).batch(2).rebatch(3, drop_remainder=True)) == [[0, 1, 2], [3, 4, 5]]
    assert as_lists(Dataset.range(8).batch(4).rebatch([2, 1, 1])) == [[0, 1], [2], [3], [4, 5], [6], [7]]
    assert as_lists(Dataset.range(4).batch(4).rebatch(np.array([3]))) == [[0, 1, 2], [3]]


def test_rebatch_of_one_input_batch_shares_memory():
    src = Dataset.from_tensors(np.arange(12).reshape(6, 2))
    first = next(iter(src.rebatch(4)))
    assert first.shape == (4, 2) and not first.flags.writeable
    spanning = list(Dataset.range(6).batch(3).rebatch(4))[0]
    assert spanning.tolist() == [0, 1, 2, 3] and spanning.flags.writeable


def test_rebatch_strings_and_structures():
    words = np.array([b"a", b"bb", b"", b"dddd", b"e"])
    ds = Dataset.from_tensor_slices({"w": words, "m": np.arange(10.0).reshape(5, 2)}).batch(2)
    out = list(ds.rebatch(3))
    assert out[0]["w"].tolist() == [b"a", b"bb", b""] and out[1]["w"].tolist() == [b"dddd", b"e"]
    assert out[1]["m"].tolist() == [[6.0, 7.0], [8.0, 9.0]]


def test_rebatch_zero_sizes_give_empty_batches():
    ds = Dataset.from_tensor_slices(np.zeros((3, 2), np.float32)).batch(2).rebatch([0, 2])
    out = list(ds)
    assert [b.shape for b in out] == [(0, 2), (2, 2), (0, 2), (1, 2)]
    assert out[0].dtype == np.float32


def test_rebatch_row_shape_mismatch_is_failed_precondition():
    spec = cv.TensorSpec([None, None], cv.float64)
    values = [np.zeros((2, 3)), np.ones((2, 4)), np.ones((3, 4))]
    out = outcomes(gen(values, spec).rebatch(3))
    assert out[0] is cv.errors.FailedPreconditionError
    assert out[1:] == [[[1.0] * 4] * 3, [[1.0] * 4]]


def test_rebatch_input_error_drops_the_partial_batch():
    def fn(x):
        if x in (1, 5):
            raise ValueError("boom")
        return x
    out = outcomes(Dataset.range(10).map(fn).batch(2).rebatch(3))
    assert out == [ValueError, ValueError, [6, 7, 8], [9]]


def test_rebatch_bad_arguments():
    with pytest.raises(ValueError):
        Dataset.range(4).batch(2).rebatch([[1]])
    with pytest.raises(ValueError):
        Dataset.range(4).batch(2).rebatch([])
    with pytest.raises(cv.errors.InvalidArgumentError):
        Dataset.range(4).batch(2).rebatch(-1)
    with pytest.raises(TypeError):
        Dataset.range(4).batch(2).rebatch(1.5)
    with pytest.raises(ValueError, match="scalar"):
        Dataset.range(4).rebatch(2)


def test_rebatch_cardinality_is_unknown():
    assert Dataset.range(8).batch(4, True).rebatch(2).cardinality() == -2


# -- padded_batch ------------------------------------------------------------------------


def test_padded_batch_pads_to_the_largest_in_each_batch():
    out = [b.tolist() for b in vectors([1, 2, 3, 4]).padded_batch(2)]
    assert out == [[[1, 0], [2, 2]], [[3, 3, 3, 0], [4, 4, 4, 4]]]


def test_padded_batch_fixed_shape_value_and_spec():
    ds = vectors([1, 3]).padded_batch(2, padded_shapes=[4], padding_values=np.int64(-1))
    assert ds.element_spec == cv.TensorSpec([None, 4], cv.int64)
    assert next(iter(ds)).tolist() == [[1, -1, -1, -1], [2, 2, 2, -1]]
    ds = vectors([1, 3]).padded_batch(2, padded_shapes=5, drop_remainder=True)
    assert ds.element_spec == cv.TensorSpec([2, 5], cv.int64)


def test_padded_batch_matrices_and_fill_patterns():
    values = [np.full((r, c), r * 10 + c, np.float32) for r, c in [(1, 3), (2, 2), (3, 1)]]
    ds = gen(values, cv.TensorSpec([None, None], cv.float32))
    out = next(iter(ds.padded_batch(3, padded_shapes=[None, 4], padding_values=np.float32(-0.0))))
    assert out.shape == (3, 3, 4)
    for i, v in enumerate(values):
        np.testing.assert_array_equal(out[i, :v.shape[0], :v.shape[1]], v)
        assert np.signbit(out[i, v.shape[0]:, :]).all() and np.signbit(out[i, :, v.shape[1]:]).all()


def test_padded_batch_strings():
    values = [np.array([b"a"], object), np.array([b"bb", b""], object), np.array([], object)]
    ds = gen(values, cv.TensorSpec([None], cv.string))
    assert next(iter(ds.padded_batch(3))).tolist() == [[b"a", b""], [b"bb", b""], [b"", b""]]
    out = next(iter(ds.padded_batch(3, padded_shapes=[3], padding_values="<pad>")))
    assert out.tolist() == [[b"a", b"<pad>", b"<pad>"], [b"bb", b"", b"<pad>"], [b"<pad>"] * 3]


def test_padded_batch_structures_and_per_component_values():
    words = np.array([b"x", b"yy", b"z"])
    ds = Dataset.zip({"v": vectors([2, 1, 3]), "w": Dataset.from_tensor_slices(words),
                      "n": Dataset.range(3)})
    out = next(iter(ds.padded_batch(3, padding_values={"v": np.int64(9), "w": None, "n": None})))
    assert out["v"].tolist() == [[1, 1, 9], [2, 9, 9], [3, 3, 3]]
    assert out["w"].tolist() == [b"x", b"yy", b"z"] and out["n"].tolist() == [0, 1, 2]


def test_padded_batch_too_small_is_data_loss_and_goes_on():
    out = outcomes(vectors([1, 4, 2]).padded_batch(1, padded_shapes=[2]))
    assert out == [[[1, 0]], cv.errors.DataLossError, [[3, 3]]]


def test_padded_batch_rank_mismatch_at_run_time():
    ds = gen([np.zeros(2), np.zeros((1, 1))], cv.TensorSpec(None, cv.float64))
    out = outcomes(ds.padded_batch(2, padded_shapes=[None]))
    assert out == [cv.errors.InvalidArgumentError]


@pytest.mark.parametrize("kwargs, exc", [
    (dict(padding_values=-1), TypeError), (dict(padding_values=np.array([1, 2])), ValueError),
    (dict(padded_shapes=[2, 2]), ValueError), (dict(padded_shapes=[2.5]), TypeError),
    (dict(padded_shapes=[-3]), ValueError), (dict(padded_shapes=[[2]]), ValueError),
    (dict(padded_shapes=cv.TensorShape(None)), ValueError)])
def test_padded_batch_bad_arguments(kwargs, exc):
    with pytest.raises(exc):
        vectors([1]).padded_batch(2, **kwargs)


def test_padded_batch_bad_batch_size():
    with pytest.raises(cv.errors.InvalidArgumentError):
        vectors([1]).padded_batch(0)
    with pytest.raises(TypeError):
        vectors([1]).padded_batch(2.0)


def test_padded_batch_after_python_map_resolves_when_iterated():
    def ragged():
        return Dataset.range(1, 4).map(lambda x: np.full(int(x), x))
    assert [b.shape for b in ragged().padded_batch(2)] == [(2, 2), (1, 3)]
    bad = ragged().padded_batch(2, padding_values=-1)  # int32 for int64: checked once the map ran
    with pytest.raises(TypeError, match="padding_values"):
        iter(bad)


def test_padded_batch_cardinality():
    assert vectors([1] * 7).padded_batch(3).cardinality() == -2  # from_generator: unknown
    ds = Dataset.range(7).map(lambda x: np.full(int(x), x))
    assert ds.padded_batch(3).cardinality() == 3
    assert ds.padded_batch(3, drop_remainder=True).cardinality() == 2


# -- lifetimes ------------------------------------------------------------------------------


def test_partially_consumed_iterators_are_released():
    gc.collect()
    parallel = Dataset.range(10 ** 5).map(lambda x: np.full(int(x) % 5, x), num_parallel_calls=2)
    for ds in (parallel.padded_batch(4).prefetch(2), parallel.padded_batch(4).unbatch(),
               parallel.padded_batch(4, padded_shapes=[5]).rebatch(3)):
        it = iter(ds)
        for _ in range(3):
            next(it)
        del it
    gc.collect()
    assert cv._engine.live_iterators() == 0
