"""transpose / tile / pad / reverse / broadcast_to / split / boolean_mask /
sequence_mask / cumsum / stop_gradient / image.resize_with_pad against
TensorFlow, eagerly and traced in map."""
import numpy as np
import pytest

import conveyor as cv

tf = pytest.importorskip("tensorflow")

RNG = np.random.default_rng(5)
DTYPES = ["bool", "int8", "int32", "int64", "uint8", "uint64", "float16", "float32", "float64",
          "string"]


def sample(dtype, shape):
    if dtype == "bool":
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype == "string":
        words = np.array([b"", b"a", b"bc", b"def", b"\xff\x00g"], dtype=object)
        return words[RNG.integers(0, len(words), shape)]
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    return RNG.integers(0, 100, shape).astype(dtype)


def native(ds):
    assert "mode=native" in repr(ds), repr(ds)
    return ds


def check(got, want):
    want = want.numpy() if hasattr(want, "numpy") else want
    if isinstance(want, bytes):  # a scalar string
        assert isinstance(got, bytes) and bytes(got) == want, (got, want)
        return
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype != object:
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


def same_specs(ours, theirs):
    for a, b in zip(cv.nest.flatten(ours.element_spec), tf.nest.flatten(theirs.element_spec)):
        assert a.shape.as_list() == b.shape.as_list(), (a, b)
        assert a.dtype.name == b.dtype.name


def same_values(ours, theirs):
    n = 0
    for a, b in zip(ours, theirs.as_numpy_iterator()):
        for x, y in zip(cv.nest.flatten(a), tf.nest.flatten(b)):
            if not isinstance(y, bytes):
                assert np.asarray(x).dtype == np.asarray(y).dtype
            np.testing.assert_array_equal(x, y)
        n += 1
    assert n == len(list(theirs))


def compare_map(make, *data):
    ours = native(cv.data.Dataset.from_tensor_slices(data).map(make(cv), num_parallel_calls=3))
    theirs = tf.data.Dataset.from_tensor_slices(data).map(make(tf), num_parallel_calls=3)
    same_specs(ours, theirs)
    same_values(ours, theirs)


def both_raise(fn, tf_error, cv_error):
    with pytest.raises(tf_error):
        fn(tf)
    with pytest.raises(cv_error):
        fn(cv)


# -- transpose ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose_matches_tf(dtype):
    for shape in [(), (5,), (2, 3), (2, 3, 4), (2, 1, 3, 4), (0, 3, 2)]:
        x = sample(dtype, shape)
        check(cv.transpose(x), tf.transpose(x))
        if len(shape) == 4:
            for perm in ([0, 2, 3, 1], [3, 2, 1, 0], [0, 1, 2, 3], np.array([1, 0, 3, 2])):
                check(cv.transpose(x, perm), tf.transpose(x, perm))
    compare_map(lambda t: lambda v: (t.transpose(v), t.transpose(v, [1, 2, 0])),
                sample(dtype, (3, 2, 4, 5)))


def test_transpose_errors():
    x = np.zeros((2, 3), np.float32)
    both_raise(lambda t: t.transpose(x, [0]), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)
    both_raise(lambda t: t.transpose(x, [0, 2]), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)
    both_raise(lambda t: t.transpose(x, [1, 1]), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)
    for t in (tf, cv):
        with pytest.raises(ValueError):
            t.data.Dataset.from_tensors(x).map(lambda v: t.transpose(v, [0]))


# -- tile -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_tile_matches_tf(dtype):
    cases = [((), []), ((3,), [2]), ((3,), [0]), ((2, 3), [2, 3]), ((0, 2), [3, 1]),
             ((1, 2, 1, 3), [2, 1, 3, 1])]
    for shape, m in cases:
        x = sample(dtype, shape)
        check(cv.tile(x, m), tf.tile(x, m))
    compare_map(lambda t: lambda v: t.tile(v, [2, 1, 3]), sample(dtype, (4, 2, 3, 1)))


def test_tile_errors():
    x = np.zeros((2, 3), np.int32)
    both_raise(lambda t: t.tile(x, [2]), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)
    both_raise(lambda t: t.tile(x, [2, -1]), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)
    for t in (tf, cv):
        with pytest.raises(ValueError):
            t.data.Dataset.from_tensors(x).map(lambda v: t.tile(v, [2]))


# -- pad ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_pad_matches_tf(dtype):
    x = sample(dtype, (3, 4))
    c = {"string": b"pad", "bool": True}.get(dtype, 7)
    for mode in ("CONSTANT", "REFLECT", "SYMMETRIC", "reflect"):
        for p in ([[1, 2], [0, 2]], [[2, 0], [3, 3]], [[0, 0], [0, 0]]):
            if mode.upper() == "REFLECT" and np.max(p) > 2:
                p = [[2, 1], [3, 0]]
            check(cv.pad(x, p, mode), tf.pad(x, p, mode))
    check(cv.pad(x, [[1, 1], [1, 0]], constant_values=c),
          tf.pad(x, [[1, 1], [1, 0]], constant_values=c))
    e = sample(dtype, (0, 2))
    check(cv.pad(e, [[1, 2], [1, 0]]), tf.pad(e, [[1, 2], [1, 0]]))
    s = sample(dtype, ())
    check(cv.pad(s, np.zeros((0, 2), np.int32)), tf.pad(s, np.zeros((0, 2), np.int32)))
    compare_map(lambda t: lambda v: (t.pad(v, [[1, 0], [2, 3], [0, 1]], constant_values=c),
                                     t.pad(v, [[1, 1], [2, 1], [0, 0]], "SYMMETRIC"),
                                     t.pad(v, [[1, 1], [1, 1], [0, 0]], "REFLECT")),
                sample(dtype, (3, 2, 2, 1)))


def test_pad_errors():
    x = np.zeros((2, 3), np.float32)
    both_raise(lambda t: t.pad(x, [[1, 1]]), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)
    both_raise(lambda t: t.pad(x, [[1, 1], [-1, 0]]), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)
    both_raise(lambda t: t.pad(x, [[2, 0], [0, 0]], "REFLECT"), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)
    both_raise(lambda t: t.pad(x, [[3, 0], [0, 0]], "SYMMETRIC"), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)
    both_raise(lambda t: t.pad(x, [[1, 0], [0, 0]], "WRAP"), ValueError, ValueError)
    for t in (tf, cv):
        with pytest.raises(ValueError):
            t.data.Dataset.from_tensors(x).map(lambda v: t.pad(v, [[1, 1]]))
        with pytest.raises(ValueError):
            t.data.Dataset.from_tensors(x).map(lambda v: t.pad(v, [[1, 1], [-1, 0]]))
        ds = t.data.Dataset.from_tensors(x).map(lambda v: t.pad(v, [[2, 0], [0, 0]], "REFLECT"))
        assert ds.element_spec.shape.as_list() == [4, 3]
        with pytest.raises(t.errors.InvalidArgumentError):
            list(ds)


def test_pad_unknown_dims_traced():
    def gen():
        yield np.arange(6, dtype=np.int64).reshape(2, 3)
        yield np.arange(4, dtype=np.int64).reshape(1, 4)

    sig = tf.TensorSpec([None, None], tf.int64)
    ours = native(cv.data.Dataset.from_generator(gen, output_signature=cv.TensorSpec(
        [None, None], cv.int64)).map(lambda v: cv.pad(v, [[1, 0], [0, 2]], "SYMMETRIC")))
    theirs = tf.data.Dataset.from_generator(gen, output_signature=sig).map(
        lambda v: tf.pad(v, [[1, 0], [0, 2]], "SYMMETRIC"))
    same_specs(ours, theirs)
    same_values(ours, theirs)


# -- reverse --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_reverse_matches_tf(dtype):
    x = sample(dtype, (2, 3, 1, 4))
    for axis in ([0], [1, 3], [-1], [0, 1, 2, 3], []):
        check(cv.reverse(x, axis), tf.reverse(x, axis))
    e = sample(dtype, (0, 3))
    check(cv.reverse(e, [1]), tf.reverse(e, [1]))
    compare_map(lambda t: lambda v: (t.reverse(v, [0]), t.reverse(v, [-1, 1])),
                sample(dtype, (3, 4, 2, 3)))


def test_reverse_errors():
    x = np.zeros((2, 3), np.float32)
    both_raise(lambda t: t.reverse(x, [2]), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)
    both_raise(lambda t: t.reverse(x, [0, 0]), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)
    both_raise(lambda t: t.reverse(x, 0), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)


# -- broadcast_to ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast_to_matches_tf(dtype):
    for shape, target in [((), [2, 3]), ((3,), [2, 3]), ((2, 1), [2, 4]), ((1, 3), [0, 3]),
                          ((2, 3), [2, 3]), ((1,), [1, 2, 1, 5])]:
        x = sample(dtype, shape)
        check(cv.broadcast_to(x, target), tf.broadcast_to(x, target))
    compare_map(lambda t: lambda v: t.broadcast_to(v, [4, 2, 3]), sample(dtype, (3, 1, 3)))


def test_broadcast_to_errors():
    x = np.zeros((2, 3), np.float32)
    both_raise(lambda t: t.broadcast_to(x, [4, 3]), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)
    both_raise(lambda t: t.broadcast_to(x, [3]), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)
    for t in (tf, cv):
        with pytest.raises(ValueError):
            t.data.Dataset.from_tensors(x).map(lambda v: t.broadcast_to(v, [4, 3]))


# -- split ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_split_matches_tf(dtype):
    x = sample(dtype, (6, 4))
    for arg, axis in [(3, 0), (1, 1), ([1, 2, 3], 0), ([1, -1], 1), ([4, 0], -1), (2, -1)]:
        ours, theirs = cv.split(x, arg, axis), tf.split(x, arg, axis)
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            check(a, b)
    e = sample(dtype, (0, 4))
    for a, b in zip(cv.split(e, 2, 1), tf.split(e, 2, 1)):
        check(a, b)
    compare_map(lambda t: lambda v: tuple(t.split(v, [1, -1, 2], axis=1)) + tuple(t.split(v, 2)),
                sample(dtype, (3, 4, 5)))


def test_split_errors():
    x = np.zeros((5, 3), np.float32)
    both_raise(lambda t: t.split(x, 2), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)
    both_raise(lambda t: t.split(x, [2, 2]), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)
    both_raise(lambda t: t.split(x, [2, 4, -1]), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)
    both_raise(lambda t: t.split(x, 0), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)
    for t in (tf, cv):
        with pytest.raises(ValueError):
            t.data.Dataset.from_tensors(x).map(lambda v: tuple(t.split(v, 2)))


def test_split_equal_pieces_of_unknown_dim():
    def gen():
        yield np.arange(6, dtype=np.int32).reshape(2, 3)
        yield np.arange(8, dtype=np.int32).reshape(2, 4)

    def run(t):
        ds = t.data.Dataset.from_generator(gen, output_signature=t.TensorSpec([2, None],
                                                                              t.int32))
        return ds.map(lambda v: tuple(t.split(v, 2, axis=-1)))

    ours = native(run(cv))
    assert [s.shape.as_list() for s in ours.element_spec] == \
        [s.shape.as_list() for s in run(tf).element_spec]
    it = iter(ours)
    with pytest.raises(cv.errors.InvalidArgumentError):
        next(it)
    with pytest.raises(tf.errors.InvalidArgumentError):
        next(iter(run(tf)))


# -- boolean_mask ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_boolean_mask_matches_tf(dtype):
    x = sample(dtype, (4, 3, 2))
    for mask, axis in [(RNG.integers(0, 2, 4).astype(bool), None),
                       (RNG.integers(0, 2, (4, 3)).astype(bool), 0),
                       (RNG.integers(0, 2, 3).astype(bool), 1),
                       (RNG.integers(0, 2, (3, 2)).astype(bool), 1),
                       (RNG.integers(0, 2, 3).astype(bool), -2),
                       (np.zeros(2, bool), 2)]:
        check(cv.boolean_mask(x, mask, axis), tf.boolean_mask(x, mask, axis))
    masks = RNG.integers(0, 2, (5, 4)).astype(bool)
    compare_map(lambda t: lambda v, m: (t.boolean_mask(v, m), t.boolean_mask(v, m[:3], axis=1)),
                sample(dtype, (5, 4, 3)), masks)


def test_boolean_mask_2d_mask_traced():
    x = sample("float32", (3, 4, 2, 5))
    m = RNG.integers(0, 2, (3, 4, 2)).astype(bool)
    compare_map(lambda t: lambda v, k: t.boolean_mask(v, k, axis=0), x, m)


def test_boolean_mask_errors():
    x = np.zeros((2, 3), np.float32)
    both_raise(lambda t: t.boolean_mask(x, np.array([True, False, True])), ValueError,
               ValueError)
    both_raise(lambda t: t.boolean_mask(x, np.array(True)), ValueError, ValueError)
    check(cv.boolean_mask(x + 1, np.array([1, 0])), tf.boolean_mask(x + 1, np.array([1, 0])))
    both_raise(lambda t: t.boolean_mask(x, np.ones((2, 3), bool), axis=-1), ValueError,
               ValueError)


# -- sequence_mask --------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bool", "int32", "float32", "uint8"])
def test_sequence_mask_matches_tf(dtype):
    for lengths, maxlen in [([1, 3, 0], None), ([1, 3, 0], 5), ([[2], [0]], 3), (np.int64(2), 4),
                            (np.array([4, 1], np.int64), None), ([], 2), ([2, 5], 3)]:
        check(cv.sequence_mask(lengths, maxlen, dtype=dtype),
              tf.sequence_mask(lengths, maxlen, dtype=dtype))
    lengths = np.array([[1, 3], [0, 4], [2, 2]], np.int32)
    compare_map(lambda t: lambda n: (t.sequence_mask(n, 4, dtype=dtype), t.sequence_mask(n)),
                lengths)


# -- cumsum ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint16", "float16",
                                   "float32", "float64"])
def test_cumsum_matches_tf(dtype):
    x = sample(dtype, (3, 4, 5))
    for axis in (0, 1, 2, -1):
        for exclusive in (False, True):
            for reverse in (False, True):
                check(cv.math.cumsum(x, axis, exclusive, reverse),
                      tf.math.cumsum(x, axis, exclusive, reverse))
    for shape in [(0,), (7,), (0, 3)]:
        v = sample(dtype, shape)
        check(cv.math.cumsum(v), tf.math.cumsum(v))
    compare_map(lambda t: lambda v: (t.math.cumsum(v, 1), t.math.cumsum(v, -1, True, True)),
                sample(dtype, (3, 4, 5)))


def test_cumsum_wraps_and_errors():
    x = np.array([100, 100, 100], np.int8)
    check(cv.math.cumsum(x), tf.math.cumsum(x))
    y = np.zeros((2, 3), np.float32)
    both_raise(lambda t: t.math.cumsum(y, 2), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)
    both_raise(lambda t: t.math.cumsum(np.array([True])), tf.errors.InvalidArgumentError,
               cv.errors.InvalidArgumentError)


# -- stop_gradient / resize_with_pad --------------------------------------------------

def test_stop_gradient():
    x = sample("float32", (2, 3))
    check(cv.stop_gradient(x), tf.stop_gradient(x))
    compare_map(lambda t: lambda v: t.stop_gradient(v) * 2.0, x)


@pytest.mark.parametrize("size", [(4, 6), (7, 3), (5, 5), (10, 10), (3, 7)])
def test_resize_with_pad_matches_tf(size):
    img = RNG.integers(0, 256, (9, 5, 3)).astype(np.uint8)
    for method in ("bilinear", "nearest", "bicubic"):
        want = tf.image.resize_with_pad(img, size[0], size[1], method=method)
        check(cv.image.resize_with_pad(img, size[0], size[1], method=method), want)
    batch = RNG.standard_normal((2, 6, 8, 1)).astype(np.float32)
    check(cv.image.resize_with_pad(batch, *size), tf.image.resize_with_pad(batch, *size))
    compare_map(lambda t: lambda v: t.image.resize_with_pad(v, *size),
                RNG.integers(0, 256, (2, 9, 5, 3)).astype(np.uint8))


@pytest.mark.parametrize("method", ["bilinear", "nearest", "area"])
@pytest.mark.parametrize("antialias", [False, True])
def test_resize_with_pad_of_unknown_size_is_native(method, antialias):
    import warnings

    from conveyor.framework.tracing import TracingWarning

    images = [RNG.integers(0, 256, (5 + 9 * i, 30 - 6 * i, 3)).astype(np.uint8) for i in range(5)]

    def run(t):
        ds = t.data.Dataset.from_generator(lambda: iter(images),
                                           output_signature=t.TensorSpec([None, None, 3], t.uint8))
        return ds.map(lambda v: t.image.resize_with_pad(v, 16, 12, method=method,
                                                        antialias=antialias))

    want = run(tf)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracingWarning)
        got = run(cv)
    assert "mode=native" in repr(got) and str(got.element_spec) == str(want.element_spec)
    for g, w in zip(got, want):
        check(g, w)


# -- unknown dims, strings and hostile sizes -----------------------------------------

def test_unknown_dims_traced_match_tf():
    def gen():
        yield np.arange(12, dtype=np.float32).reshape(3, 4)
        yield np.arange(8, dtype=np.float32).reshape(4, 2)
        yield np.zeros((0, 3), np.float32)

    def run(t):
        ds = t.data.Dataset.from_generator(gen, output_signature=t.TensorSpec([None, None],
                                                                              t.float32))
        return ds.map(lambda v: (t.transpose(v), t.tile(v, [2, 1]), t.reverse(v, [1]),
                                 t.math.cumsum(v, 1, reverse=True),
                                 t.pad(v, [[0, 1], [2, 0]], constant_values=-1.0),
                                 t.boolean_mask(v, v[:, 0] > 1.0),
                                 tuple(t.split(v, 1, axis=1)),
                                 tuple(t.split(v, [-1, 1], axis=1)),
                                 tuple(t.split(v, [-1, 0], axis=1)),
                                 tuple(t.split(t.tile(v, [1, 2]), 2, axis=1))))

    ours, theirs = native(run(cv)), run(tf)
    same_specs(ours, theirs)
    same_values(ours, theirs)


def test_strings_in_batches_and_rank0():
    words = sample("string", (6, 2, 3))
    compare_map(lambda t: lambda v: (t.transpose(v, [1, 0]), t.tile(v[0, 0], []),
                                     t.broadcast_to(v[0, 0], [2, 2]),
                                     t.reverse(t.pad(v, [[1, 0], [0, 1]], constant_values="x"),
                                               [0, 1])),
                words)


def test_hostile_sizes_raise_cleanly():
    with pytest.raises((cv.errors.InvalidArgumentError, cv.errors.ResourceExhaustedError)):
        cv.tile(np.ones(2), [2 ** 62])
    with pytest.raises(cv.errors.ResourceExhaustedError):
        cv.tile(np.ones((2, 2)), [2 ** 40, 2 ** 40])
    with pytest.raises((cv.errors.InvalidArgumentError, cv.errors.ResourceExhaustedError)):
        cv.pad(np.ones(2), [[2 ** 62, 2 ** 62]])
    with pytest.raises(cv.errors.ResourceExhaustedError):
        cv.broadcast_to(np.ones(1), [2 ** 40, 2 ** 40])


TRACED_ERRORS = {
    "tile_negative": lambda t: lambda v: t.tile(v, [2, -1]),
    "broadcast_bad": lambda t: lambda v: t.broadcast_to(v, [3]),
    "reverse_range": lambda t: lambda v: t.reverse(v, [2]),
    "reverse_repeated": lambda t: lambda v: t.reverse(v, [0, -2]),
    "reverse_scalar_axis": lambda t: lambda v: t.reverse(v, 0),
    "cumsum_axis": lambda t: lambda v: t.math.cumsum(v, 2),
    "cumsum_bool": lambda t: lambda v: t.math.cumsum(v > 0),
    "split_sizes": lambda t: lambda v: tuple(t.split(v, [1, 3], axis=1)),
    "split_zero": lambda t: lambda v: tuple(t.split(v, 0)),
    "perm_repeated": lambda t: lambda v: t.transpose(v, [1, 1]),
    "perm_range": lambda t: lambda v: t.transpose(v, [0, 2]),
    "pad_rank": lambda t: lambda v: t.pad(v, [[1, 1], [1, 1], [0, 0]]),
    "pad_value_not_scalar": lambda t: lambda v: t.pad(v, [[1, 1], [1, 1]], constant_values=[1.0]),
    "mask_scalar": lambda t: lambda v: t.boolean_mask(v, True),
    "maxlen_not_scalar": lambda t: lambda v: t.sequence_mask([1, 2], [3]),
}


def _outcome(t, make):
    x = np.zeros((2, 3), np.float32)
    try:
        ds = t.data.Dataset.from_tensors(x).map(make(t))
    except Exception as e:  # noqa: BLE001 - the error type is what is compared
        return "build", type(e).__name__
    try:
        list(ds)
    except Exception as e:  # noqa: BLE001
        return "run", type(e).__name__
    return "ok", None


@pytest.mark.parametrize("case", sorted(TRACED_ERRORS))
def test_traced_errors_match_tf(case):
    """Traced: a ValueError/TypeError when the pipeline is built where
    TensorFlow's graph rejects the op, else the op's error per element."""
    assert _outcome(cv, TRACED_ERRORS[case]) == _outcome(tf, TRACED_ERRORS[case])


def test_random_shapes_match_tf():
    """Random small shapes (zeros included) through the run-copying path."""
    rng = np.random.default_rng(11)
    for _ in range(60):
        rank = int(rng.integers(1, 5))
        shape = tuple(int(n) for n in rng.integers(0, 4, rank))
        dtype = ["uint8", "float16", "int32", "float64"][int(rng.integers(0, 4))]
        x = sample(dtype, shape)
        perm = [int(p) for p in rng.permutation(rank)]
        check(cv.transpose(x, perm), tf.transpose(x, perm))
        m = [int(k) for k in rng.integers(0, 3, rank)]
        check(cv.tile(x, m), tf.tile(x, m))
        p = rng.integers(0, 3, (rank, 2))
        check(cv.pad(x, p, constant_values=3), tf.pad(x, p, constant_values=3))
        if min(shape) > 0:
            mode = "SYMMETRIC" if rng.integers(0, 2) else "REFLECT"
            limit = np.array(shape)[:, None] - (1 if mode == "REFLECT" else 0)
            q = np.minimum(p, limit)
            check(cv.pad(x, q, mode), tf.pad(x, q, mode))
        axes = [d for d in range(rank) if rng.integers(0, 2)]
        check(cv.reverse(x, axes), tf.reverse(x, axes))
        ones = tuple(slice(0, 1) if n and rng.integers(0, 2) else slice(None) for n in shape)
        target = [int(rng.integers(0, 3))] + list(shape)
        check(cv.broadcast_to(x[ones], target), tf.broadcast_to(x[ones], target))
