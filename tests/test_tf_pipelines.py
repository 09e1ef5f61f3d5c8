"""map, batch, take/skip/repeat/prefetch, apply/with_options and composite
pipelines against real TensorFlow (the sources are in test_tf_equivalence.py,
whose helpers these tests share): values, dtypes, shapes, structure, order,
cardinality, element_spec and error types."""
import os
import threading

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from test_tf_equivalence import (  # noqa: E402
    D,
    Pair,
    Point,
    assert_both_raise,
    assert_conveyor_does_not_crash,
    assert_same_elements,
    assert_same_error_type,
    assert_same_outcomes,
    assert_same_spec,
    cardinality,
    check,
    cv_elements,
    outcomes,
    raised,
    tf_elements,
)


# ---------------------------------------------------------------------------
# map
# ---------------------------------------------------------------------------


def test_map_scalar_arithmetic():
    check(lambda mod: D(mod).range(10).map(lambda x: x * 2 + 1))


def test_map_true_division_promotes_like_tf():
    # int64 / int -> float64 in both TF (truediv) and NumPy.
    check(lambda mod: D(mod).range(1, 6).map(lambda x: x / 2))


def test_map_tuple_unpacked_into_positional_args():
    a, b = np.arange(4, dtype=np.int32), np.arange(4, dtype=np.int32) * 10
    check(lambda mod: D(mod).from_tensor_slices((a, b)).map(lambda x, y: x + y))


def test_map_nested_tuple_unpacks_only_top_level():
    a, b, c = np.arange(3), np.arange(3) * 2, np.arange(3) * 3

    def fn(x, yz):
        assert isinstance(yz, tuple) and len(yz) == 2
        return x + yz[0] * yz[1]

    check(lambda mod: D(mod).from_tensor_slices((a, (b, c))).map(fn))


def test_map_dict_passed_as_one_arg():
    d = {"a": np.arange(3, dtype=np.float32), "b": np.ones(3, np.float32)}
    check(lambda mod: D(mod).from_tensor_slices(d).map(lambda e: e["a"] - e["b"]))


def test_map_namedtuple_passed_as_one_arg():
    p = Point(np.arange(3), np.arange(3) * 5)

    def fn(pt):
        assert type(pt) is Point
        return pt.x + pt.y

    check(lambda mod: D(mod).from_tensor_slices(p).map(fn))


def test_map_returned_list_becomes_tuple():
    t, c = check(lambda mod: D(mod).range(3).map(lambda x: [x, x + 1]))
    assert type(c[0]) is tuple


def test_map_returns_structure():
    def build(mod):
        return D(mod).range(3).map(lambda x: {"a": x, "b": (x * 2, Pair(a=x + 1, b=x - 1))})

    check(build)


def test_map_returns_python_constants():
    # Python int -> int32, float -> float32, str -> string, bool -> bool.
    check(lambda mod: D(mod).range(3).map(lambda x: (1, 2.5, "s", True)))


def test_map_dtype_specific_functions():
    def tf_fn(x):
        return tf.cast(x, tf.float32) * 0.5, tf.fill([2], tf.cast(x, tf.int16))

    def cv_fn(x):
        return np.float32(x) * np.float32(0.5), np.full([2], x, np.int16)

    check(lambda mod: D(mod).range(4).map(tf_fn if mod is tf else cv_fn))


def test_map_strings():
    def tf_fn(s):
        return tf.strings.join([s, "!"]), tf.strings.length(s)

    def cv_fn(s):
        return s + b"!", np.int32(len(s))

    check(lambda mod: D(mod).from_tensor_slices(["a", "bb", ""]).map(tf_fn if mod is tf else cv_fn))


def test_map_returns_string_vector():
    assert_conveyor_does_not_crash(
        'list(cv.data.Dataset.range(3).map(lambda x: np.array([b"a", str(int(x)).encode()], object)))')

    def tf_fn(x):
        return tf.stack([tf.constant("a"), tf.strings.as_string(x)])

    def cv_fn(x):
        return np.array([b"a", str(int(x)).encode()], dtype=object)

    check(lambda mod: D(mod).range(3).map(tf_fn if mod is tf else cv_fn))


def test_map_cardinality_preserved():
    for mod in (tf, cv):
        assert cardinality(D(mod).range(7).map(lambda x: x)) == 7
        assert cardinality(D(mod).range(7).repeat().map(lambda x: x)) == mod.data.INFINITE_CARDINALITY


def _map_pipeline(mod, num_parallel_calls=None, deterministic=None):
    def fn(x, y):
        return {"sum": x + y, "prod": x * y, "y": y}

    ds = D(mod).from_tensor_slices((np.arange(40, dtype=np.int64), np.arange(40, dtype=np.int64) % 7))
    if num_parallel_calls is None:
        return ds.map(fn)
    return ds.map(fn, num_parallel_calls=num_parallel_calls, deterministic=deterministic)


@pytest.mark.parametrize("npc", [1, 2, 4, -1], ids=["1", "2", "4", "AUTOTUNE"])
@pytest.mark.parametrize("deterministic", [None, True])
def test_map_parallel_deterministic_equals_sequential_and_tf(npc, deterministic):
    t, c = check(lambda mod: _map_pipeline(mod, npc, deterministic))
    assert_same_elements(cv_elements(_map_pipeline(cv)), c)
    assert_same_elements(t, tf_elements(_map_pipeline(tf)))


@pytest.mark.parametrize("npc", [2, 4])
def test_map_parallel_nondeterministic_same_multiset(npc):
    def key(e):
        return int(e["sum"]), int(e["prod"])

    t = tf_elements(_map_pipeline(tf, npc, False))
    c = list(_map_pipeline(cv, npc, False))  # order may differ between two runs
    assert sorted(map(key, c)) == sorted(map(key, t))


def test_map_autotune_constant():
    check(lambda mod: D(mod).range(20).map(lambda x: x + 1, num_parallel_calls=mod.data.AUTOTUNE))


def test_map_parallel_with_slow_function_keeps_order():
    import time

    def tf_fn(x):
        return x * 3

    def cv_fn(x):
        time.sleep(0.002 * ((int(x) * 7) % 5))
        return x * 3

    check(lambda mod: D(mod).range(30).map(tf_fn if mod is tf else cv_fn, num_parallel_calls=4,
                                            deterministic=True))


def _tf_failing_fn(x):
    tf.debugging.assert_none_equal(x, tf.constant(2, tf.int64), message="x is two")
    return x * 10


def _cv_failing_fn(x):
    if x == 2:
        raise cv.errors.InvalidArgumentError("x is two")
    return x * 10


@pytest.mark.parametrize("npc", [None, 1, 3], ids=["seq", "p1", "p3"])
def test_map_error_then_iteration_continues(npc):
    def build(mod):
        fn = _tf_failing_fn if mod is tf else _cv_failing_fn
        ds = D(mod).range(5)
        return ds.map(fn) if npc is None else ds.map(fn, num_parallel_calls=npc, deterministic=True)

    t_out = outcomes(iter(build(tf).as_numpy_iterator()))
    c_out = outcomes(iter(build(cv)))
    assert [k for k, _ in t_out] == ["ok", "ok", "error", "ok", "ok"]
    assert_same_outcomes(t_out, c_out)


def test_map_python_exception_then_continues_keeps_type():
    def tf_fn(x):
        def body(v):
            if v == 1:
                raise ValueError("one")
            return v
        return tf.py_function(body, [x], tf.int64)

    def cv_fn(x):
        if x == 1:
            raise ValueError("one")
        return x

    t_out = outcomes(iter(D(tf).range(3).map(tf_fn).as_numpy_iterator()))
    c_out = outcomes(iter(D(cv).range(3).map(cv_fn)))
    assert [k for k, _ in t_out] == [k for k, _ in c_out] == ["ok", "error", "ok"]
    assert_same_outcomes(t_out, c_out, compare_error=False)
    # TF wraps a Python ValueError (py_function -> InvalidArgumentError); conveyor
    # re-raises the original exception, which is still a ValueError.
    assert isinstance(t_out[1][1], tf.errors.InvalidArgumentError)
    assert type(c_out[1][1]) is ValueError


def test_map_bad_num_parallel_calls_raises():
    assert_both_raise(lambda mod: D(mod).range(3).map(lambda x: x, num_parallel_calls=0))
    assert_both_raise(lambda mod: D(mod).range(3).map(lambda x: x, num_parallel_calls=-5))


# ---------------------------------------------------------------------------
# batch
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n,bs", [(10, 3), (9, 3), (2, 5), (0, 2), (5, 1)], ids=str)
@pytest.mark.parametrize("drop", [False, True])
def test_batch_remainder(n, bs, drop):
    t, c = check(lambda mod: D(mod).range(n).batch(bs, drop_remainder=drop))
    expected = (n // bs) if drop else -(-n // bs)
    assert len(c) == expected


def test_batch_element_spec_dims():
    for drop, dim in ((False, None), (True, 4)):
        for mod in (tf, cv):
            spec = D(mod).from_tensor_slices(np.zeros((8, 3), np.float32)).batch(4, drop_remainder=drop).element_spec
            assert spec.shape.as_list() == [dim, 3]


def test_batch_structures():
    value = {"a": np.arange(7, dtype=np.int16), "b": (np.ones((7, 2), np.float64), [1.5] * 7),
             "c": Point(np.arange(7, dtype=np.uint8), np.arange(7) % 2 == 0)}
    check(lambda mod: D(mod).from_tensor_slices(value).batch(3))
    check(lambda mod: D(mod).from_tensor_slices(value).batch(3, drop_remainder=True))


def test_batch_structures_with_strings():
    assert_conveyor_does_not_crash(
        'list(cv.data.Dataset.from_tensor_slices({"a": [1, 2, 3], "s": ["x", "y", "z"]}).batch(2))')
    check(lambda mod: D(mod).from_tensor_slices({"a": [1, 2, 3], "s": ["x", "y", "z"]}).batch(2))


@pytest.mark.parametrize("value", [
    ["a", "bb", "ccc", "", "e"],
    np.array([["a", "b"], ["c", "d"], ["e", "f"]]),
], ids=["1d", "2d"])
def test_batch_strings(value):
    assert_conveyor_does_not_crash(
        f"list(cv.data.Dataset.from_tensor_slices({value.tolist() if hasattr(value, 'tolist') else value!r}).batch(2))")
    check(lambda mod: D(mod).from_tensor_slices(value).batch(2))


def test_batch_of_batches():
    check(lambda mod: D(mod).range(20).batch(3).batch(2, drop_remainder=True))
    check(lambda mod: D(mod).range(20).batch(4, drop_remainder=True).batch(2))


@pytest.mark.parametrize("npc", [1, 2, -1], ids=["1", "2", "AUTOTUNE"])
def test_batch_parallel_equals_sequential(npc):
    def build(mod, parallel=True):
        ds = D(mod).from_tensor_slices((np.arange(23), np.arange(46.0).reshape(23, 2)))
        if parallel:
            return ds.batch(4, num_parallel_calls=npc, deterministic=True)
        return ds.batch(4)

    t, c = check(build)
    assert_same_elements(cv_elements(build(cv, False)), c)


def test_batch_after_map_with_python_scalars():
    check(lambda mod: D(mod).range(5).map(lambda x: (x, 1.0)).batch(2))


def _ragged_map(mod):
    if mod is tf:
        return lambda x: tf.fill([x], x)
    return lambda x: np.full([int(x)], x, np.int64)


@pytest.mark.parametrize("npc", [None, 2], ids=["seq", "parallel"])
def test_batch_shape_mismatch_raises_invalid_argument(npc):
    def build(mod):
        return D(mod).range(1, 4).map(_ragged_map(mod)).batch(2, num_parallel_calls=npc)

    t_out = outcomes(iter(build(tf).as_numpy_iterator()))
    c_out = outcomes(iter(build(cv)))
    assert t_out[0][0] == c_out[0][0] == "error"
    t_exc, c_exc = t_out[0][1], c_out[0][1]
    assert_same_error_type(t_exc, c_exc)
    assert isinstance(c_exc, cv.errors.InvalidArgumentError)
    assert "Cannot batch tensors with different shapes in component 0" in str(c_exc)
    # TF's parallel batch kernel uses the same message (its sequential one differs).
    t_par = outcomes(iter(D(tf).range(1, 4).map(_ragged_map(tf)).batch(
        2, num_parallel_calls=2).as_numpy_iterator()))
    assert "Cannot batch tensors with different shapes in component 0" in str(t_par[0][1])
    msg = "First element had shape [1] and element 1 had shape [2]."
    assert msg in str(t_par[0][1]) and msg in str(c_exc)


def test_batch_shape_mismatch_second_component():
    def build(mod):
        f = _ragged_map(mod)
        return D(mod).range(1, 3).map(lambda x: (x, f(x))).batch(2, num_parallel_calls=2)

    t_exc = outcomes(iter(build(tf).as_numpy_iterator()))[0][1]
    c_exc = outcomes(iter(build(cv)))[0][1]
    assert_same_error_type(t_exc, c_exc)
    assert "Cannot batch tensors with different shapes in component 1" in str(t_exc)
    assert "Cannot batch tensors with different shapes in component 1" in str(c_exc)


@pytest.mark.parametrize("bs", [0, -1])
def test_batch_nonpositive_size_raises(bs):
    assert_both_raise(lambda mod: D(mod).range(5).batch(bs))


# ---------------------------------------------------------------------------
# take / skip / repeat / prefetch
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("pipeline", [
    ("take", 3), ("take", 0), ("take", -1), ("take", 10), ("take", 5),
    ("skip", 2), ("skip", 0), ("skip", -1), ("skip", 10), ("skip", 5),
    ("repeat", 0), ("repeat", 1), ("repeat", 3), ("repeat", -1, "take", 12),
    ("repeat", None, "take", 7), ("repeat", None, "skip", 3, "take", 8),
    ("skip", 1, "repeat", 2, "take", 6), ("take", 2, "repeat", 3),
    ("take", -1, "skip", -1), ("repeat", 2, "skip", 7),
], ids=lambda p: "-".join(map(str, p)))
def test_take_skip_repeat(pipeline):
    def build(mod):
        ds = D(mod).range(5)
        for op, arg in zip(pipeline[::2], pipeline[1::2]):
            ds = getattr(ds, op)() if arg is None else getattr(ds, op)(arg)
        return ds

    check(build)


@pytest.mark.parametrize("build_name", [
    "repeat_forever", "repeat_minus1", "repeat_forever_map", "repeat_forever_batch",
    "repeat_forever_skip", "repeat_forever_take_minus1", "empty_repeat_forever",
    "generator", "generator_take", "generator_skip", "generator_repeat3",
    "generator_repeat0", "generator_repeat_forever", "generator_batch",
    "generator_take0",
    "repeat_forever_take", "prefetch_repeat", "range_batch_drop", "skip_past_end",
])
def test_cardinality(build_name):
    def gen():
        yield from range(3)

    builds = {
        "repeat_forever": lambda mod: D(mod).range(3).repeat(),
        "repeat_minus1": lambda mod: D(mod).range(3).repeat(-1),
        "repeat_forever_map": lambda mod: D(mod).range(3).repeat().map(lambda x: x),
        "repeat_forever_batch": lambda mod: D(mod).range(3).repeat().batch(2),
        "repeat_forever_skip": lambda mod: D(mod).range(3).repeat().skip(5),
        "repeat_forever_take_minus1": lambda mod: D(mod).range(3).repeat().take(-1),
        "empty_repeat_forever": lambda mod: D(mod).range(0).repeat(),
        "generator": lambda mod: D(mod).from_generator(gen, output_signature=mod.TensorSpec([], mod.int64)),
        "generator_take": lambda mod: builds["generator"](mod).take(2),
        "generator_skip": lambda mod: builds["generator"](mod).skip(2),
        "generator_repeat3": lambda mod: builds["generator"](mod).repeat(3),
        "generator_repeat0": lambda mod: builds["generator"](mod).repeat(0),
        "generator_repeat_forever": lambda mod: builds["generator"](mod).repeat(),
        "generator_batch": lambda mod: builds["generator"](mod).batch(2),
        "generator_take0": lambda mod: builds["generator"](mod).take(0),
        "repeat_forever_take": lambda mod: D(mod).range(3).repeat().take(10),
        "prefetch_repeat": lambda mod: D(mod).range(3).prefetch(2).repeat(2),
        "range_batch_drop": lambda mod: D(mod).range(10).batch(3, drop_remainder=True),
        "skip_past_end": lambda mod: D(mod).range(3).skip(10),
    }
    build = builds[build_name]
    tds, cds = build(tf), build(cv)
    assert cardinality(cds) == cardinality(tds)
    t_len = raised(lambda: len(tds)) if cardinality(tds) < 0 else len(tds)
    if cardinality(tds) < 0:
        c_len = raised(lambda: len(cds))
        assert_same_error_type(t_len, c_len)
        assert isinstance(c_len, TypeError)
        assert str(c_len) == str(t_len)
    else:
        assert len(cds) == t_len


def test_cardinality_numpy_and_experimental():
    ds = cv.data.Dataset.range(4).repeat()
    assert ds.cardinality().numpy() == tf.data.Dataset.range(4).repeat().cardinality().numpy()
    assert cv.data.experimental.cardinality(cv.data.Dataset.range(4)) == 4


def test_infinite_repeat_take_values():
    check(lambda mod: D(mod).from_tensor_slices(["a", "b"]).repeat().take(5))


def test_repeat_reruns_generator():
    def gen():
        yield from (1, 2)

    check(lambda mod: D(mod).from_generator(
        gen, output_signature=mod.TensorSpec([], mod.int64)).repeat(3), card=True)


@pytest.mark.parametrize("buf", [0, 1, 2, 10, -1], ids=["0", "1", "2", "10", "AUTOTUNE"])
def test_prefetch_never_changes_values_or_order(buf):
    def build(mod, prefetch=True):
        ds = D(mod).from_tensor_slices({"x": np.arange(17), "y": np.arange(34.0).reshape(17, 2)})
        ds = ds.map(lambda e: (e["x"] * 2, e["y"]))
        if prefetch:
            ds = ds.prefetch(buf)
        ds = ds.batch(4)
        return ds.prefetch(buf) if prefetch else ds

    t, c = check(build)
    assert_same_elements(cv_elements(build(cv, False)), c)


@pytest.mark.parametrize("buf", [0, 1, 3, -1], ids=["0", "1", "3", "AUTOTUNE"])
def test_prefetch_scalar_strings(buf):
    def build(mod, prefetch=True):
        ds = D(mod).from_tensor_slices({"x": np.arange(9), "s": [str(i) * i for i in range(9)]})
        return ds.prefetch(buf).map(lambda e: (e["s"], e["x"])).prefetch(buf) if prefetch else \
            ds.map(lambda e: (e["s"], e["x"]))

    t, c = check(build)
    assert_same_elements(cv_elements(build(cv, False)), c)


def test_prefetch_autotune_constant_and_cardinality():
    check(lambda mod: D(mod).range(9).prefetch(mod.data.AUTOTUNE))
    check(lambda mod: D(mod).range(9).repeat().prefetch(3).take(11))


def test_bad_counts_raise():
    assert_both_raise(lambda mod: D(mod).range(3).prefetch(-2))


# ---------------------------------------------------------------------------
# apply / with_options / composite pipelines
# ---------------------------------------------------------------------------


def test_apply():
    def transform(ds):
        return ds.map(lambda x: x + 1).batch(2)

    check(lambda mod: D(mod).range(5).apply(transform))


def test_with_options():
    def build(mod):
        opts = mod.data.Options()
        opts.deterministic = True
        opts.threading.private_threadpool_size = 2
        return (D(mod).range(30).map(lambda x: x * x, num_parallel_calls=mod.data.AUTOTUNE)
                .batch(4, num_parallel_calls=4).with_options(opts).prefetch(1))

    check(build)


def _complex_pipeline(mod, parallel, strings=False):
    npc = mod.data.AUTOTUNE if parallel else None
    data = {"id": np.arange(50, dtype=np.int64),
            "feat": np.arange(100, dtype=np.float32).reshape(50, 2)}
    if strings:
        data["name"] = np.array(["n%d" % i for i in range(50)])

    def fn(e):
        return Pair(a=e["feat"] * 2.0, b=(e["id"] + 1, e["name"] if strings else e["id"] * 3))

    ds = D(mod).from_tensor_slices(data).skip(3).take(40)
    ds = ds.map(fn, num_parallel_calls=npc) if parallel else ds.map(fn)
    if parallel:
        ds = ds.prefetch(mod.data.AUTOTUNE)
        ds = ds.batch(6, num_parallel_calls=npc).prefetch(2)
    else:
        ds = ds.batch(6)
    return ds.repeat(2)


@pytest.mark.parametrize("parallel", [False, True])
def test_complex_pipeline_matches_tf(parallel):
    t, c = check(lambda mod: _complex_pipeline(mod, parallel))
    assert type(c[0]) is Pair
    assert len(c) == 14


def test_complex_pipeline_with_strings_matches_tf():
    assert_conveyor_does_not_crash(
        'list(cv.data.Dataset.from_tensor_slices({"name": ["a", "b", "c"]}).batch(2))')
    check(lambda mod: _complex_pipeline(mod, True, strings=True))


def test_complex_pipeline_parallel_equals_sequential_in_conveyor():
    seq = cv_elements(_complex_pipeline(cv, False))
    for _ in range(3):
        assert_same_elements(seq, cv_elements(_complex_pipeline(cv, True)))


def test_iterators_restart_and_are_independent():
    for mod in (tf, cv):
        ds = D(mod).range(6).map(lambda x: x + 1, num_parallel_calls=2).batch(2).prefetch(2)
        first = [e.tolist() for e in ds.as_numpy_iterator()]
        second = [e.tolist() for e in ds.as_numpy_iterator()]
        assert first == second == [[1, 2], [3, 4], [5, 6]], mod.__name__


def test_iteration_from_threads():
    ds = cv.data.Dataset.range(20).map(lambda x: x * 2, num_parallel_calls=2).batch(5)
    expected = tf_elements(tf.data.Dataset.range(20).map(lambda x: x * 2).batch(5))
    results = [None] * 4

    def run(i):
        results[i] = list(ds.as_numpy_iterator())

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    for r in results:
        assert_same_elements(expected, r)


def test_infinite_generator_take():
    import itertools

    def gen():
        return itertools.count(5)

    check(lambda mod: D(mod).from_generator(
        gen, output_signature=mod.TensorSpec([], mod.int64)).take(6))


def _vectorized_map(mod):
    ds = D(mod).from_tensor_slices(np.arange(12, dtype=np.float32).reshape(6, 2)).batch(4)
    return ds.map(lambda x: (x * 2.0, x[:, 0] + x[:, 1]), num_parallel_calls=2)


def test_map_after_batch_vectorized_values():
    # Values, dtypes and shapes element by element; the element_spec is checked below.
    check(_vectorized_map, spec=False)


def test_map_after_batch_element_spec():
    # A traced map has TF's static spec exactly.
    assert "native" in repr(_vectorized_map(cv))
    assert_same_spec(_vectorized_map(tf), _vectorized_map(cv))


def test_map_variable_length_element_spec():
    def build(mod):
        fn = (lambda x: tf.range(x)) if mod is tf else (lambda x: np.arange(x))
        return D(mod).range(1, 4).map(fn)

    check(build)


def test_nested_namedtuple_through_map_batch_and_options():
    def build(mod):
        opts = mod.data.Options()
        opts.deterministic = False  # overridden by the explicit deterministic=True below
        ds = D(mod).from_tensor_slices(Point(x=np.arange(10, dtype=np.int32),
                                             y={"v": np.arange(10, dtype=np.float64)}))
        ds = ds.map(lambda p: Pair(a=p.x + 1, b=p.y["v"] * 3), num_parallel_calls=3,
                    deterministic=True)
        return ds.batch(3, drop_remainder=True).with_options(opts)

    t, c = check(build)
    assert type(c[0]) is Pair and c[0].a.shape == (3,)
