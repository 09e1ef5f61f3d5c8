"""tf.sparse.to_dense (native, eager and in a map) and sparse components in
as_numpy_iterator, against TensorFlow."""
import numpy as np
import pytest

import conveyor as cv
from conveyor import errors


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


CASES = [
    ([[0, 1], [2, 0]], np.array([5, 7], np.int32), [3, 2], None),
    ([[1]], np.array([2.5], np.float32), [4], -1.0),
    ([[0], [2]], np.array([b"x", b""], object), [3], b"-"),
    (np.zeros((0, 2), np.int64), np.array([], np.int64), [2, 2], None),
    ([[0, 0, 1], [1, 2, 0]], np.array([True, True]), [2, 3, 2], None),
]


@pytest.mark.parametrize("indices,values,shape,default", CASES)
def test_to_dense_matches_tensorflow(tf, indices, values, shape, default):
    indices = np.asarray(indices, np.int64)
    shape = np.asarray(shape, np.int64)
    theirs = tf.sparse.to_dense(tf.sparse.SparseTensor(indices, values, shape),
                                default_value=default).numpy()
    ours = cv.sparse.to_dense(cv.sparse.SparseTensor(indices, values, shape), default)
    assert ours.tolist() == theirs.tolist() and ours.shape == theirs.shape
    ds = cv.data.Dataset.from_tensors((indices, values, shape)).map(
        lambda i, v, s: cv.sparse.to_dense(cv.sparse.SparseTensor(i, v, s), default))
    assert "mode=native" in repr(ds)
    assert [x.tolist() for x in ds.as_numpy_iterator()] == [theirs.tolist()]


@pytest.mark.parametrize("indices,message", [
    ([[3]], "out of bounds"), ([[1], [1]], "repeated"), ([[2], [0]], "out of order"),
    ([[-1]], "out of bounds"),
])
def test_to_dense_errors_match_tensorflow(tf, indices, message):
    indices = np.asarray(indices, np.int64)
    values = np.arange(len(indices), dtype=np.int64)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.sparse.to_dense(tf.sparse.SparseTensor(indices, values, [3]))
    with pytest.raises(errors.InvalidArgumentError, match=message):
        cv.sparse.to_dense(cv.sparse.SparseTensor(indices, values, np.array([3])))


def test_var_len_features_come_dense_from_as_numpy_iterator(tf):
    records = []
    for n in (1, 3, 0, 2):
        records.append(cv.train.Example(features=cv.train.Features(feature={
            "ids": cv.train.Feature(int64_list=cv.train.Int64List(value=list(range(n)))),
            "w": cv.train.Feature(float_list=cv.train.FloatList(value=[n / 2]))}))
            .SerializeToString())

    def make(t):
        desc = {"ids": t.io.VarLenFeature(t.int64), "w": t.io.FixedLenFeature([], t.float32)}
        single = t.data.Dataset.from_tensor_slices(np.array(records, object)).map(
            lambda x: t.io.parse_single_example(x, desc))
        batched = t.data.Dataset.from_tensor_slices(np.array(records, object)).batch(3).map(
            lambda x: t.io.parse_example(x, desc))
        return single, batched
    for ours, theirs in zip(make(cv), make(tf)):
        got = [{k: np.asarray(v).tolist() for k, v in e.items()} for e in ours.as_numpy_iterator()]
        want = [{k: np.asarray(v).tolist() for k, v in e.items()}
                for e in theirs.as_numpy_iterator()]
        assert got == want
    plain = next(iter(make(cv)[0]))
    assert isinstance(plain["ids"], cv.sparse.SparseTensor)  # iteration keeps it sparse


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("make,row_shape", [
    (lambda t: t.data.Dataset.from_tensor_slices([1, 3, 2, 0, 2]).map(lambda x: t.fill([x], x)),
     [4]),
    (lambda t: t.data.Dataset.from_tensor_slices(np.arange(12).reshape(6, 2)), [3]),
    (lambda t: t.data.Dataset.from_tensor_slices(np.arange(24).reshape(4, 2, 3)), [2, 5]),
    (lambda t: t.data.Dataset.from_tensor_slices(np.array([[b"a", b"bc"], [b"", b"d"],
                                                            [b"e", b"f"]], object)), [3]),
])
def test_sparse_batch_matches_tensorflow(tf, make, row_shape):
    def plain(e):
        return [np.asarray(e.indices).tolist(), np.asarray(e.values).tolist(),
                np.asarray(e.dense_shape).tolist()]
    ours = [plain(e) for e in make(cv).sparse_batch(2, row_shape)]
    theirs = [plain(e) for e in make(tf).sparse_batch(2, row_shape)]
    assert ours == theirs
    exp = make(cv).apply(cv.data.experimental.dense_to_sparse_batch(3, row_shape))
    assert [plain(e) for e in exp] == [
        plain(e) for e in make(tf).apply(tf.data.experimental.dense_to_sparse_batch(3, row_shape))]


@pytest.mark.filterwarnings("ignore")
def test_sparse_batch_row_too_large():
    ds = cv.data.Dataset.from_tensor_slices([1, 5]).map(lambda x: cv.fill([x], x)).sparse_batch(
        2, [3])
    with pytest.raises(errors.DataLossError, match=r"shape \(\[5\]\) that is larger"):
        list(ds)
    with pytest.raises(ValueError, match="rank"):
        cv.data.Dataset.range(3).sparse_batch(2, [3])


@pytest.mark.parametrize("value", [np.array([[0, 3], [5, 0]], np.int32),
                                   np.array([0.0, 1.5, 0.0, -2.0], np.float32),
                                   np.array([[b"", b"a"], [b"b", b""]], dtype=object),
                                   np.array([True, False]), np.zeros((2, 0, 3), np.int64)],
                         ids=["int32", "float32", "string", "bool", "empty"])
def test_from_dense_matches_tensorflow(tf, value):
    want = tf.sparse.from_dense(value)
    want = [want.indices.numpy(), want.values.numpy(), want.dense_shape.numpy()]
    ds = cv.data.Dataset.from_tensors(value).map(cv.sparse.from_dense)
    assert "mode=native" in repr(ds)
    for got in (cv.sparse.from_dense(value), next(iter(ds))):
        for g, w in zip(got, want):
            g = np.asarray(g)
            assert g.shape == w.shape and (g.dtype == w.dtype or w.dtype == object)
            assert g.tolist() == w.tolist()
