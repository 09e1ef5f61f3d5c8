"""squeeze / unstack / gather / where / ensure_shape / cond / tf.debugging against
TensorFlow, eagerly and traced in map."""
import numpy as np
import pytest

import conveyor as cv

tf = pytest.importorskip("tensorflow")

RNG = np.random.default_rng(3)
DTYPES = ["bool", "int8", "int32", "int64", "uint8", "uint64", "float16", "float32", "float64"]


def sample(dtype, shape):
    if dtype == "bool":
        return RNG.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    return RNG.integers(0, 100, shape).astype(dtype)


def native(ds):
    assert "mode=native" in repr(ds), repr(ds)
    return ds


def same_specs(ours, theirs):
    for a, b in zip(cv.nest.flatten(ours.element_spec), tf.nest.flatten(theirs.element_spec)):
        assert a.shape.as_list() == b.shape.as_list(), (a, b)
        assert a.dtype.name == b.dtype.name


def same_values(ours, theirs):
    for a, b in zip(ours, theirs.as_numpy_iterator()):
        for x, y in zip(cv.nest.flatten(a), tf.nest.flatten(b)):
            if not isinstance(y, bytes):
                assert np.asarray(x).dtype == np.asarray(y).dtype
            np.testing.assert_array_equal(x, y)


def compare_map(make, *data):
    ours = native(cv.data.Dataset.from_tensor_slices(data).map(make(cv), num_parallel_calls=3))
    theirs = tf.data.Dataset.from_tensor_slices(data).map(make(tf), num_parallel_calls=3)
    same_specs(ours, theirs)
    same_values(ours, theirs)


@pytest.mark.parametrize("dtype", DTYPES)
def test_squeeze_unstack_gather_where_match_tf(dtype):
    x = sample(dtype, (1, 4, 1, 3))
    for axis in (None, 0, [0, 2], -2, [2]):
        np.testing.assert_array_equal(cv.squeeze(x, axis), tf.squeeze(x, axis).numpy())
    y = x.reshape(4, 3)
    for axis in (0, 1, -1):
        for a, b in zip(cv.unstack(y, axis=axis), tf.unstack(y, axis=axis)):
            np.testing.assert_array_equal(a, b.numpy())
    for idx, axis in [([2, 0, 0], 0), ([[1], [2]], 1), (3, 0), (np.array([0, 2], np.int64), -1)]:
        expected = tf.gather(y, idx, axis=axis).numpy()
        got = cv.gather(y, idx, axis=axis)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
    c = sample("bool", (4, 3))
    np.testing.assert_array_equal(cv.where(c), tf.where(c).numpy())
    np.testing.assert_array_equal(cv.where(y), tf.where(y).numpy())
    other = sample(dtype, (3,))
    np.testing.assert_array_equal(cv.where(c, y, other), tf.where(c, y, other).numpy())
    np.testing.assert_array_equal(cv.where(c[:, :1], y, other),
                                  tf.where(c[:, :1], y, other).numpy())


def test_strings_gather_and_where_match_tf():
    words = np.array([b"a", b"bc", b"", b"def"], dtype=object)
    np.testing.assert_array_equal(cv.gather(words, [3, 1, 1, 2]),
                                  tf.gather(words, [3, 1, 1, 2]).numpy())
    c = np.array([True, False, True, False])
    np.testing.assert_array_equal(cv.where(c, words, b"x"), tf.where(c, words, b"x").numpy())
    compare_map(lambda lib: lambda w, i: (lib.gather(w, i), lib.gather(w, [2, 0]),
                                          lib.where(i > 1, w, lib.constant(b"small"))),
                np.array([[b"x", b"yy", b"zzz"]] * 4, dtype=object), np.arange(4) % 3)


def test_where_edge_cases_match_tf():
    np.testing.assert_array_equal(cv.where([1, 0, 2]), tf.where([1, 0, 2]).numpy())
    x = np.array([[1., np.nan], [0, -0.]])
    np.testing.assert_array_equal(cv.where(x), tf.where(x).numpy())
    assert cv.where(np.zeros((0, 3), bool)).shape == (0, 2)
    with pytest.raises(cv.errors.InvalidArgumentError, match="Unhandled input dimensions: 0"):
        cv.where(np.bool_(True))
    np.testing.assert_array_equal(cv.where([[True], [False]], [1, 2], [3, 4]),
                                  tf.where([[True], [False]], [1, 2], [3, 4]).numpy())
    with pytest.raises(TypeError):
        cv.where([True, False], [1, 2], [3., 4.])
    with pytest.raises(ValueError):
        cv.where([True], [1])
    with pytest.raises(cv.errors.InvalidArgumentError):
        cv.where(np.ones((2,), bool), np.ones((3,)), np.ones((3,)))


def test_squeeze_gather_errors_match_tf():
    with pytest.raises(cv.errors.InvalidArgumentError, match=r"Can not squeeze dim\[1\]"):
        cv.squeeze(np.zeros((1, 3)), 1)
    with pytest.raises(cv.errors.InvalidArgumentError, match="Tried to squeeze dim index 3"):
        cv.squeeze(np.zeros((1, 3)), 3)
    with pytest.raises(cv.errors.InvalidArgumentError,
                       match=r"indices\[0\] = 5 is not in \[0, 3\)"):
        cv.gather(np.zeros(3), [5])
    with pytest.raises(cv.errors.InvalidArgumentError, match=r"indices\[1,0\] = -1 is not in"):
        cv.gather(np.zeros(3), [[0], [-1]])
    with pytest.raises(cv.errors.InvalidArgumentError):
        cv.gather(np.zeros(3), 1, axis=1)
    with pytest.raises(TypeError):
        cv.gather(np.zeros(3), [1.0])
    ds = cv.data.Dataset.from_tensors(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"Can not squeeze dim\[1\], expected a dimension of 1"):
        ds.map(lambda x: cv.squeeze(x, 1))
    bad = native(cv.data.Dataset.from_tensor_slices(np.array([0, 7])).map(
        lambda i: cv.gather(cv.constant([1, 2, 3]), i)))
    it = iter(bad)
    assert next(it) == 1
    with pytest.raises(cv.errors.InvalidArgumentError, match=r"indices\[\] = 7 is not in \[0, 3\)"):
        next(it)


def test_traced_shape_ops_match_tf_data():
    x = RNG.standard_normal((5, 1, 4, 3)).astype(np.float32)
    i = RNG.integers(0, 4, (5, 2)).astype(np.int32)

    def make(lib):
        def fn(a, idx):
            parts = lib.unstack(a[0], axis=1)
            return (lib.squeeze(a), lib.squeeze(a, 0), lib.gather(a[0], idx),
                    lib.gather(a, idx, axis=1), parts[2], lib.where(a > 0),
                    lib.where(a > 0, a, 0.), lib.where(True, a, lib.zeros_like(a)))
        return fn
    compare_map(make, x, i)


def test_traced_squeeze_of_unknown_dims_follows_tf():
    gen = lambda: iter([np.ones((1, 3, 1), np.float32)])  # noqa: E731
    ours_ds = cv.data.Dataset.from_generator(gen, output_signature=cv.TensorSpec([None, 3, None]))
    tf_ds = tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec([None, 3, None]))
    for f in [lambda v, lib: lib.squeeze(v), lambda v, lib: lib.squeeze(v, [0, 2]),
              lambda v, lib: lib.squeeze(v, -1), lambda v, lib: lib.ensure_shape(v, [1, None, 1])]:
        ours, theirs = native(ours_ds.map(lambda v: f(v, cv))), tf_ds.map(lambda v: f(v, tf))
        assert ours.element_spec.shape.rank == theirs.element_spec.shape.rank
        if theirs.element_spec.shape.rank is not None:
            assert ours.element_spec.shape.as_list() == theirs.element_spec.shape.as_list()
        np.testing.assert_array_equal(list(ours)[0], list(theirs.as_numpy_iterator())[0])


def test_unstack_with_num_of_an_unknown_dim_checks_each_element():
    gen = lambda: iter([np.ones((2, 3), np.float32), np.ones((4, 3), np.float32)])  # noqa: E731
    ds = cv.data.Dataset.from_generator(gen, output_signature=cv.TensorSpec([None, 3]))
    with pytest.raises(ValueError, match="Cannot infer argument `num`"):
        ds.map(lambda v: cv.unstack(v))
    ours = native(ds.map(lambda v: cv.unstack(v, num=2)))
    assert [s.shape.as_list() for s in ours.element_spec] == [[3], [3]]
    it = iter(ours)
    assert len(next(it)) == 2
    with pytest.raises(cv.errors.InvalidArgumentError, match="is not compatible"):
        next(it)


def test_ensure_shape_matches_tf():
    x = np.zeros(3, np.float32)
    assert cv.ensure_shape(x, [3]).shape == (3,)
    assert cv.ensure_shape(x, [None]).shape == (3,)
    with pytest.raises(cv.errors.InvalidArgumentError,
                       match=r"Shape of tensor input \[3\] is not compatible with expected "
                             r"shape \[2\]"):
        cv.ensure_shape(x, [2])
    with pytest.raises(cv.errors.InvalidArgumentError, match=r"expected shape \[\?,2\]"):
        cv.ensure_shape(x, [None, 2])
    ds = cv.data.Dataset.from_tensors(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="Dimension 1 in both shapes must be equal"):
        ds.map(lambda v: cv.ensure_shape(v, [2, 4]))
    with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
        ds.map(lambda v: cv.ensure_shape(v, [None]))
    gen = lambda: iter([np.zeros(3, np.float32), np.zeros(2, np.float32)])  # noqa: E731
    ours = native(cv.data.Dataset.from_generator(gen, output_signature=cv.TensorSpec([None]))
                  .map(lambda v: cv.ensure_shape(v, [3])))
    assert ours.element_spec.shape.as_list() == [3]
    it = iter(ours)
    assert next(it).shape == (3,)
    with pytest.raises(cv.errors.InvalidArgumentError, match="is not compatible"):
        next(it)


def test_cond_static_and_traced_match_tf():
    assert cv.cond(True, lambda: 1, lambda: 2) == 1
    assert cv.cond(np.bool_(False), lambda: 1, lambda: 2) == 2

    def make(lib):
        def fn(x):
            s = lib.reduce_sum(x)
            a = lib.cond(s > 0, lambda: x * 2., lambda: -x)
            b = lib.cond(x[0] > 0, lambda: (x[:2], lib.constant(1)),
                         lambda: (x[1:], lib.constant(0)))
            return a, b
        return fn
    compare_map(make, RNG.standard_normal((8, 3)).astype(np.float32))
    ds = cv.data.Dataset.from_tensors(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="same number, type, and overall structure"):
        ds.map(lambda x: cv.cond(x[0] > 0, lambda: (x, x), lambda: x))
    with pytest.raises(TypeError):
        ds.map(lambda x: cv.cond(x[0] > 0, lambda: x, lambda: cv.cast(x, cv.int32)))


def test_check_numerics_drops_bad_elements_natively():
    values = np.array([1., 0., 2., 0.], np.float32)

    def make(lib):
        return lambda x: lib.debugging.check_numerics(1. / x, "error")
    ours = native(cv.data.Dataset.from_tensor_slices(values).map(make(cv)))
    theirs = tf.data.Dataset.from_tensor_slices(values).map(make(tf))
    same_specs(ours, theirs)
    assert list(ours.ignore_errors()) == list(theirs.ignore_errors().as_numpy_iterator())
    with pytest.raises(cv.errors.InvalidArgumentError, match="error : Tensor had Inf values"):
        list(ours)
    for x, what in [(np.array([np.nan]), "NaN"), (np.array([np.inf, np.nan]), "Inf and NaN"),
                    (np.array([-np.inf], np.float16), "Inf")]:
        with pytest.raises(cv.errors.InvalidArgumentError, match=f"m : Tensor had {what} values"):
            cv.debugging.check_numerics(x, "m")
    np.testing.assert_array_equal(cv.debugging.check_numerics(values, "m"), values)
    with pytest.raises(cv.errors.InvalidArgumentError):
        cv.debugging.check_numerics(np.array([1, 2]), "m")


def test_debugging_asserts_match_tf_eagerly():
    d = cv.debugging
    for name, args in [("assert_equal", ([1, 2], [1, 3])), ("assert_equal", ([1, 2], [1, 2])),
                       ("assert_less", ([1, 2], [2, 2])), ("assert_less", ([1, 2], [2, 3])),
                       ("assert_greater", ([1, 2], 0)), ("assert_greater", ([1, 2], 1)),
                       ("assert_non_negative", ([1, -2],)), ("assert_non_negative", ([0, 2],)),
                       ("assert_positive", ([1, 0],)), ("assert_positive", (np.zeros(0),)),
                       ("assert_none_equal", ([1, 2], [1, 3])),
                       ("assert_none_equal", ([1, 2], [2, 1])),
                       ("assert_less_equal", ([1, 2], [1, 1])),
                       ("assert_less_equal", ([1, 2], [1, 2])),
                       ("assert_greater_equal", ([1, 2], [1, 3])),
                       ("assert_greater_equal", ([1, 2], [1, 2])), ("assert_negative", ([1, -2],)),
                       ("assert_negative", ([-1, -2],)), ("assert_non_positive", ([1, -2],)),
                       ("assert_non_positive", ([0, -2],))]:
        try:
            getattr(tf.debugging, name)(*args)
            expected = None
        except tf.errors.InvalidArgumentError:
            expected = cv.errors.InvalidArgumentError
        if expected is None:
            assert getattr(d, name)(*args) is None
        else:
            with pytest.raises(expected):
                getattr(d, name)(*args)
    with pytest.raises(cv.errors.InvalidArgumentError, match="msg"):
        d.assert_less([1, 2], [2, 2], message="msg")
    with pytest.raises(ValueError, match="must have rank 1"):
        d.assert_rank(np.zeros((2, 3)), 1)
    assert d.assert_rank(np.zeros((2, 3)), 2) is None
    with pytest.raises(ValueError, match="Expected scalar shape"):
        d.assert_scalar(np.zeros(2))
    assert d.assert_scalar(np.float32(2)) == 2
    with pytest.raises(ValueError, match="must have rank at least 3"):
        d.assert_rank_at_least(np.zeros((2, 3)), 3)
    with pytest.raises(TypeError):
        d.assert_integer(np.zeros(2))
    with pytest.raises(cv.errors.InvalidArgumentError, match="m : Tensor had NaN values"):
        d.assert_all_finite(np.array([np.nan]), "m")
    with pytest.raises(TypeError, match="must be of type tf.float32"):
        d.assert_type(np.zeros(2), cv.float32)
    assert d.assert_shapes([(np.zeros((2, 3)), ("N", "C")), (np.zeros(3), ("C",))]) is None
    with pytest.raises(ValueError):
        d.assert_shapes([(np.zeros((2, 3)), ("N", "C")), (np.zeros(2), ("C",))])
    with pytest.raises(ValueError):
        d.assert_shapes([(np.zeros((2, 3)), ("N",))])
    assert d.assert_shapes([(np.zeros((2, 3, 4)), ("*", 4)), (np.zeros((2, 3)), (2, "."))]) is None


def test_debugging_asserts_when_traced():
    ds = cv.data.Dataset.from_tensors(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="must have rank 1"):
        ds.map(lambda x: (cv.debugging.assert_rank(x, 1), x)[1])
    with pytest.raises(TypeError, match="must be of type tf.int32"):
        ds.map(lambda x: (cv.debugging.assert_type(x, cv.int32), x)[1])
    with pytest.raises(ValueError, match="must have size 3"):
        ds.map(lambda x: (cv.debugging.assert_shapes([(x, (3, 3))]), x)[1])
    ok = ds.map(lambda x: (cv.debugging.assert_rank(x, 2), cv.debugging.assert_shapes(
        [(x, ("N", 3))]), x + 1)[2])
    native(ok)
    # value checks run natively for each element
    checked = native(ds.map(lambda x: (cv.debugging.assert_non_negative(x - 1), x)[1]))
    with pytest.raises(cv.errors.InvalidArgumentError, match="x >= 0 did not hold"):
        list(checked)
    fine = native(ds.map(lambda x: (cv.debugging.assert_less(x, 1.), x)[1]))
    assert len(list(fine)) == 1


def test_traced_value_asserts_drop_elements_as_tf():
    values = np.array([3, -1, 4, 0, 5], np.int64)

    def make(lib):
        def fn(x):
            lib.debugging.assert_positive(x, message="positive")
            lib.debugging.assert_less(x, lib.constant(5, lib.int64))
            return x * 2
        return fn
    ours = native(cv.data.Dataset.from_tensor_slices(values).map(make(cv)))
    theirs = tf.data.Dataset.from_tensor_slices(values).map(make(tf))
    assert list(ours.ignore_errors()) == list(theirs.ignore_errors().as_numpy_iterator())
    with pytest.raises(cv.errors.InvalidArgumentError, match="positive"):
        list(ours)
    with pytest.raises(TypeError):  # TensorFlow's dtype rules, as in a graph
        cv.data.Dataset.from_tensor_slices(values).map(
            lambda x: (cv.debugging.assert_equal(x, 1.5), x)[1])


@pytest.mark.parametrize("op,inputs,ints", [
    ("Reduce", [np.ones((2, 3))], []), ("Reduce", [np.ones((2, 3))], [9, 0, -1]),
    ("Reduce", [np.ones((2, 3))], [0, 0, 5, 1]), ("Reduce", [np.array([b"a"], object)], [0, 0, -1]),
    ("ArgMinMax", [np.ones(3)], [0, 0, 10]), ("ArgMinMax", [np.ones(3)], [0, 1 << 40, 4]),
    ("Range", [np.int8(1), np.int8(5), np.int8(1)], []),
    ("Range", [np.int64(0), np.int32(-1), np.int64(1)], []),
    ("Range", [np.float64(0), np.float64(1e300), np.float64(1e-300)], []),
    ("Squeeze", [np.ones((1, 2))], [1 << 40]), ("EnsureShape", [np.ones(2)], [99]),
    ("EnsureShape", [np.ones(2)], [3, 1]), ("GatherV2", [np.ones(3), np.array([1.0])], [0]),
    ("GatherV2", [np.ones(3), np.array([3])], [0]), ("GatherV2", [np.ones(3), np.array([0])], [7]),
    ("SelectV2", [np.ones(2), np.ones(2), np.ones(2)], []),
    ("SelectV2", [np.ones(2, bool), np.ones(2), np.ones(2, np.int32)], []),
    ("Where", [np.array([b"a"], object)], []),
    ("CondSelect", [np.ones(2, bool), np.ones(2), np.ones(2)], []),
    ("CheckNumerics", [np.ones(2, np.int32)], []), ("Assert", [np.ones(2)], []),
    ("Assert", [np.array([True, False])], []),
])
def test_malformed_native_calls_fail_cleanly(op, inputs, ints):
    from conveyor import _engine
    with pytest.raises(cv.errors.OpError):
        _engine.run_op(op, inputs, ints, [], None, None, 1, (0, 0, 0, 0, 0, 0))


def test_stack_and_concat_of_hundreds_of_tensors_in_a_map_match_tf():
    # Pipelines stack one tensor per label or per box; ConcatV2 once refused more than 64 inputs.
    def stacked(mod):
        return lambda x: mod.stack([mod.cast(x, mod.float32) + i for i in range(400)])

    def joined(mod):
        return lambda x: mod.concat([mod.reshape(x, [1]) * i for i in range(300)], axis=0)

    data = np.arange(3, dtype=np.int64)
    compare_map(stacked, data)
    compare_map(joined, data)
