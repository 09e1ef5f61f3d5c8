"""RaggedTensor basics, tf.ragged.constant and Dataset.ragged_batch /
experimental.dense_to_ragged_batch, against TensorFlow."""
import numpy as np
import pytest

import conveyor as cv


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


def _plain(x):
    if hasattr(x, "to_list"):
        return ("ragged", x.to_list())
    return np.asarray(x).tolist()


MAKERS = [
    lambda t: t.data.Dataset.range(7).map(lambda x: t.range(x)),
    lambda t: t.data.Dataset.range(5).map(lambda x: t.reshape(t.range(2 * x), [-1, 2])),
    lambda t: t.data.Dataset.from_tensor_slices(np.arange(12).reshape(6, 2)),  # dense batches
]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("make", MAKERS)
@pytest.mark.parametrize("batch,drop", [(3, False), (4, True), (10, False)])
def test_ragged_batch_matches_tensorflow(tf, make, batch, drop):
    ours = make(cv).ragged_batch(batch, drop_remainder=drop)
    theirs = make(tf).ragged_batch(batch, drop_remainder=drop)
    assert [_plain(x) for x in ours] == [_plain(x) for x in theirs]
    assert repr(ours.element_spec) == repr(theirs.element_spec)
    got = [np.asarray(x).tolist() if np.asarray(x).dtype != object else
           [r.tolist() for r in x] for x in ours.as_numpy_iterator()]
    want = [np.asarray(x).tolist() if np.asarray(x).dtype != object else
            [r.tolist() for r in x] for x in theirs.as_numpy_iterator()]
    assert got == want
    exp = make(cv).apply(cv.data.experimental.dense_to_ragged_batch(batch, drop))
    assert [_plain(x) for x in exp] == [_plain(x) for x in theirs]


def test_ragged_values_reach_a_map_and_resume():
    from checkpoint_helpers import verify_resume
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = cv.data.Dataset.range(6).map(lambda x: cv.range(x)).ragged_batch(2)
        lengths = ds.map(lambda r: r.row_lengths())
        assert [x.tolist() for x in lengths.as_numpy_iterator()] == [[0, 1], [2, 3], [4, 5]]
        verify_resume(lambda: cv.data.Dataset.range(6).map(lambda x: cv.range(x)).ragged_batch(4))


def test_ragged_constant_and_methods_match_tensorflow(tf):
    for rows in ([[1, 2], [3], []], [[1.5], [2.5, 3.5]], [[b"a"], [b"b", b"c"]]):
        ours, theirs = cv.ragged.constant(rows), tf.ragged.constant(rows)
        assert ours.to_list() == theirs.to_list()
        assert ours.dtype.name == theirs.dtype.name
        assert ours.row_lengths().tolist() == theirs.row_lengths().numpy().tolist()
        assert int(ours.nrows()) == int(theirs.nrows())
        assert ours.to_tensor().tolist() == theirs.to_tensor().numpy().tolist()
        assert repr(ours) == repr(theirs).replace("\n", "")


def test_ragged_batch_needs_one_ragged_dimension():
    ds = cv.data.Dataset.from_generator(lambda: iter([np.zeros((2, 3))]), output_types=cv.float64,
                                        output_shapes=[None, None])
    with pytest.raises(NotImplementedError, match="one ragged dimension"):
        ds.ragged_batch(2)
