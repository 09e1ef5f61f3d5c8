"""Equivalence tests: the same tf.data pipeline in conveyor and in real TensorFlow.

Every test builds one pipeline twice, once with ``tf`` and once with ``cv``
(usually through a ``build(mod)`` function taking the module), and compares
element by element: values, dtypes, shapes, nested structure types, order,
cardinality, element_spec and error types.

conveyor map functions get NumPy arrays and run as plain Python, so where a
map function is dtype-sensitive the TF and conveyor versions are written
separately.
"""
import collections
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402

Point = collections.namedtuple("Point", ["x", "y"])
Pair = collections.namedtuple("Pair", ["a", "b"])


# ---------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------


def assert_same_element(t, c, path="element"):
    """Assert that a TF element (from as_numpy_iterator) equals a conveyor element.

    Structure types must be identical (dict / tuple / the same namedtuple class),
    dict keys equal (and in the same order), leaves of the same Python type
    (bytes, NumPy scalar type, ndarray), same dtype, same shape, same values.
    """
    if isinstance(t, dict):
        assert type(c) is type(t), f"{path}: structure {type(c).__name__} != TF {type(t).__name__}"
        assert list(c.keys()) == list(t.keys()), f"{path}: keys {list(c)} != TF {list(t)}"
        for k in t:
            assert_same_element(t[k], c[k], f"{path}[{k!r}]")
        return
    if isinstance(t, tuple):
        assert type(c) is type(t), f"{path}: structure {type(c).__name__} != TF {type(t).__name__}"
        assert len(c) == len(t), f"{path}: length {len(c)} != TF {len(t)}"
        for i, (tt, cc) in enumerate(zip(t, c)):
            assert_same_element(tt, cc, f"{path}[{i}]")
        return
    # plain iteration gives EagerTensor leaves; TF's tensors compare by numpy()
    if type(t) is cv.EagerTensor:
        t = t.numpy()
    if type(c) is cv.EagerTensor:
        c = c.numpy()
    assert type(c) is type(t), f"{path}: leaf type {type(c).__name__} != TF {type(t).__name__} ({c!r} vs {t!r})"
    if isinstance(t, bytes):
        assert c == t, f"{path}: {c!r} != TF {t!r}"
        return
    assert c.dtype == t.dtype, f"{path}: dtype {c.dtype} != TF {t.dtype}"
    assert np.shape(c) == np.shape(t), f"{path}: shape {np.shape(c)} != TF {np.shape(t)}"
    if t.dtype == object:
        assert np.asarray(c).tolist() == np.asarray(t).tolist(), f"{path}: {c!r} != TF {t!r}"
    else:
        equal_nan = t.dtype.kind in "fc"
        assert np.array_equal(c, t, equal_nan=equal_nan), f"{path}: {c!r} != TF {t!r}"


def assert_same_elements(t_list, c_list):
    assert len(c_list) == len(t_list), f"conveyor gave {len(c_list)} elements, TF {len(t_list)}"
    for i, (t, c) in enumerate(zip(t_list, c_list)):
        assert_same_element(t, c, f"element {i}")


def spec_form(spec):
    """A comparable form of an element_spec: structure type, shape list (None: unknown
    rank) and dtype name."""
    if isinstance(spec, dict):
        return ("dict", [(k, spec_form(v)) for k, v in spec.items()])
    if isinstance(spec, tuple):
        return (type(spec), [spec_form(s) for s in spec])
    shape = spec.shape
    dims = None if shape.rank is None else list(shape.as_list())
    return (dims, spec.dtype.name)


def _relaxed(form_c, form_t):
    """True when conveyor's spec form equals TF's up to dimensions conveyor leaves
    unknown (None). A Python map function has no static output shape: conveyor
    takes the rank and dtype of its first result and leaves dims unknown
    (docs/differences.md); TF knows the dims from tracing."""
    if isinstance(form_t, tuple) and len(form_t) == 2 and isinstance(form_t[1], str):
        dims_c, dims_t = form_c[0], form_t[0]
        if form_c[1] != form_t[1] or (dims_c is None) != (dims_t is None):
            return False
        return dims_c is None or (len(dims_c) == len(dims_t) and all(
            c is None or c == t for c, t in zip(dims_c, dims_t)))
    if form_c[0] != form_t[0] or len(form_c[1]) != len(form_t[1]):
        return False
    return all((kc == kt if form_t[0] == "dict" else True) and _relaxed(vc, vt)
               for (kc, vc), (kt, vt) in zip(*(
                   [(x if form_t[0] == "dict" else (None, x)) for x in f[1]]
                   for f in (form_c, form_t))))


def assert_same_spec(tds, cds, relax_python_map=False):
    c, t = spec_form(cds.element_spec), spec_form(tds.element_spec)
    if relax_python_map and _relaxed(c, t):
        return
    assert c == t


def cardinality(ds):
    if isinstance(ds, tf.data.Dataset):
        return int(ds.cardinality().numpy())
    return int(ds.cardinality())


def tf_elements(ds):
    return list(ds.as_numpy_iterator())


def cv_elements(ds):
    via_numpy = list(ds.as_numpy_iterator())
    via_iter = list(iter(ds))
    leaves = [leaf for e in via_iter for leaf in cv.nest.flatten(e)
              if not isinstance(leaf, cv.data.Dataset)]
    assert all(type(leaf) is cv.EagerTensor for leaf in leaves), {type(x) for x in leaves}
    assert not any(isinstance(leaf, cv.EagerTensor) for e in via_numpy for leaf in cv.nest.flatten(e))
    assert_same_elements(via_numpy, via_iter)
    return via_numpy


def check(build, spec=True, card=True):
    """Build the pipeline in both libraries and compare everything."""
    tds, cds = build(tf), build(cv)
    if spec:
        assert_same_spec(tds, cds, relax_python_map=spec == "python_map" or _has_map(cds))
    if card:
        assert cardinality(cds) == cardinality(tds)
    t, c = tf_elements(tds), cv_elements(cds)
    assert_same_elements(t, c)
    return t, c


def _has_map(ds):
    from conveyor.data.ops.map_op import MapDataset as _MapDataset
    stack = [ds]
    while stack:
        d = stack.pop()
        if isinstance(d, _MapDataset):
            return True
        stack.extend(d._inputs)
    return False


def builtin_family(exc):
    for klass in type(exc).__mro__:
        if klass.__module__ == "builtins":
            return klass
    return Exception


def assert_same_error_type(t_exc, c_exc):
    """conveyor's exception matches TF's: the cv.errors twin of a tf.errors class,
    else the same builtin family (ValueError, TypeError, ...)."""
    if isinstance(t_exc, tf.errors.OpError):
        twin = getattr(cv.errors, type(t_exc).__name__)
        assert isinstance(c_exc, twin), f"conveyor raised {type(c_exc).__name__}: {c_exc}; TF raised {type(t_exc).__name__}"
    else:
        family = builtin_family(t_exc)
        assert isinstance(c_exc, family), (
            f"conveyor raised {type(c_exc).__mro__}: {c_exc}; TF raised {type(t_exc).__name__} ({family.__name__}): {t_exc}")


def raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return e
    pytest.fail(f"{fn} did not raise")


def assert_both_raise(build):
    """`build(mod)` raises in both libraries with matching exception types."""
    t_exc = raised(lambda: build(tf))
    c_exc = raised(lambda: build(cv))
    assert_same_error_type(t_exc, c_exc)
    return t_exc, c_exc


def _plain(leaf):
    """An EagerTensor leaf (plain iteration) as its NumPy value, as TF's x.numpy()."""
    return leaf.numpy() if isinstance(leaf, cv.EagerTensor) else leaf


def outcomes(iterator, limit=100):
    """Drain an iterator, recording each value or exception; ends at StopIteration."""
    out = []
    for _ in range(limit):
        try:
            out.append(("ok", cv.nest.map_structure(_plain, next(iterator))))
        except StopIteration:
            return out
        except Exception as e:  # noqa: BLE001
            out.append(("error", e))
    return out


def assert_same_outcomes(t_out, c_out, compare_error=True):
    assert [k for k, _ in c_out] == [k for k, _ in t_out], (
        f"conveyor {[(k, v if k == 'ok' else type(v).__name__) for k, v in c_out]} vs "
        f"TF {[(k, v if k == 'ok' else type(v).__name__) for k, v in t_out]}")
    for i, ((kind, t), (_, c)) in enumerate(zip(t_out, c_out)):
        if kind == "ok":
            assert_same_element(t, c, f"element {i}")
        elif compare_error:
            assert_same_error_type(t, c)


def D(mod):
    return mod.data.Dataset


_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(cv.__file__)))


def assert_conveyor_does_not_crash(code, timeout=60):
    """Run a conveyor snippet in a fresh interpreter first, so that an engine crash
    (segfault) fails this one test instead of killing the whole pytest run.

    Regression guard: non-scalar string elements used to segfault on output
    (Py_SETREF on the NULL slots of a fresh object array in cv_tensor_to_python)."""
    src = "import numpy as np\nimport conveyor as cv\n" + textwrap.dedent(code)
    env = dict(os.environ, PYTHONPATH=_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True,
                          timeout=timeout, env=env)
    if proc.returncode < 0:
        pytest.fail(f"conveyor crashed (signal {-proc.returncode}) running:\n{textwrap.dedent(code)}"
                    f"\nstderr:\n{proc.stderr[-2000:]}")
    assert proc.returncode == 0, proc.stderr[-3000:]



# Sanity checks of the helper itself, so that a lax helper cannot hide bugs.


def test_helper_detects_dtype_shape_structure_and_value_differences():
    with pytest.raises(AssertionError):
        assert_same_element(np.int64(1), np.int32(1))
    with pytest.raises(AssertionError):
        assert_same_element(np.array([1, 2]), np.array([[1, 2]]))
    with pytest.raises(AssertionError):
        assert_same_element((np.int64(1),), [np.int64(1)])
    with pytest.raises(AssertionError):
        assert_same_element(Point(np.int64(1), np.int64(2)), (np.int64(1), np.int64(2)))
    with pytest.raises(AssertionError):
        assert_same_element(np.array([1.0]), np.array([2.0]))
    with pytest.raises(AssertionError):
        assert_same_element(b"a", np.array(b"a", dtype=object))
    with pytest.raises(AssertionError):
        assert_same_element(np.array([1]), np.int64(1))
    with pytest.raises(AssertionError):
        assert_same_element({"a": np.int64(1)}, {"b": np.int64(1)})
    assert_same_element(np.array([np.nan], np.float32), np.array([np.nan], np.float32))
    assert spec_form(tf.TensorSpec([None, 2], tf.int32)) == spec_form(cv.TensorSpec([None, 2], cv.int32))
    assert spec_form(tf.TensorSpec([2], tf.int32)) != spec_form(cv.TensorSpec([None], cv.int32))


def test_constants_match():
    assert cv.data.AUTOTUNE == tf.data.AUTOTUNE
    assert cv.data.INFINITE_CARDINALITY == tf.data.INFINITE_CARDINALITY
    assert cv.data.UNKNOWN_CARDINALITY == tf.data.UNKNOWN_CARDINALITY
    for name in ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float16", "float32", "float64", "string", "half", "double"]:
        assert getattr(cv, name).name == getattr(tf, name).name, name


# ---------------------------------------------------------------------------
# from_tensor_slices
# ---------------------------------------------------------------------------

ALL_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
              np.uint32, np.uint64, np.float16, np.float32, np.float64]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(4,), (3, 2), (2, 2, 3)], ids=str)
def test_from_tensor_slices_numpy_dtypes(dtype, shape):
    rng = np.random.default_rng(0)
    values = (rng.integers(0, 100, size=shape) % (2 if dtype is np.bool_ else 100)).astype(dtype)
    t, c = check(lambda mod: D(mod).from_tensor_slices(values))
    assert len(c) == shape[0]


def test_from_tensor_slices_float_specials():
    values = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30], dtype=np.float32)
    check(lambda mod: D(mod).from_tensor_slices(values))


def test_from_tensor_slices_extreme_ints():
    values = np.array([np.iinfo(np.int64).min, -1, 0, np.iinfo(np.int64).max], dtype=np.int64)
    check(lambda mod: D(mod).from_tensor_slices(values))
    values = np.array([0, np.iinfo(np.uint64).max], dtype=np.uint64)
    check(lambda mod: D(mod).from_tensor_slices(values))


@pytest.mark.parametrize("value", [
    [1, 2, 3],
    [1.5, 2.5],
    [1, 2.5],
    [True, False],
    [[1, 2], [3, 4], [5, 6]],
    [[1.0], [2.0]],
    [2 ** 40, 1],
    [-(2 ** 40), 1],
], ids=str)
def test_from_tensor_slices_python_lists(value):
    check(lambda mod: D(mod).from_tensor_slices(value))




@pytest.mark.parametrize("value", [
    [np.float64(1.5), 2.0],
    [np.float64(1.5)],
    [np.array([1, 2], np.int8)] * 2,
    [2 ** 31 - 1, -(2 ** 31)],
    [2 ** 31],
    [1, True],
    [1.0, True],
    [np.int64(1), 2],
    [np.int64(1), np.int64(2)],
    [np.int16(1)],
    [np.uint8(1), 2],
    [np.float32(1), 2],
    [np.array(1), 2],
], ids=repr)
def test_from_tensor_slices_list_dtype_inference(value):
    check(lambda mod: D(mod).from_tensor_slices(value))


def test_from_tensor_slices_tuple():
    a = np.arange(4, dtype=np.int32)
    b = np.arange(8, dtype=np.float64).reshape(4, 2)
    check(lambda mod: D(mod).from_tensor_slices((a, b)))


def test_from_tensor_slices_tuple_of_python_lists():
    check(lambda mod: D(mod).from_tensor_slices(([1, 2, 3], [1.0, 2.0, 3.0], ["a", "b", "c"])))


def test_from_tensor_slices_dict():
    d = {"b": np.arange(3, dtype=np.int16), "a": np.array([b"x", b"y", b"z"]),
         "c": np.ones((3, 2), np.float32)}
    check(lambda mod: D(mod).from_tensor_slices(d))


def test_from_tensor_slices_namedtuple():
    p = Point(np.arange(3, dtype=np.int64), np.array([[1.0, 2.0]] * 3, dtype=np.float32))
    t, c = check(lambda mod: D(mod).from_tensor_slices(p))
    assert type(c[0]) is Point


def test_from_tensor_slices_nested():
    value = {"img": (np.arange(6, dtype=np.uint8).reshape(3, 2), {"z": [1, 2, 3]}),
             "meta": Pair(a=np.array(["p", "q", "r"]), b=(np.arange(3.0), np.arange(3, dtype=np.int8)))}
    check(lambda mod: D(mod).from_tensor_slices(value))


@pytest.mark.parametrize("value", [
    [b"ab", b"", b"c\x00d"],
    ["hello", "w\u00f6rld", ""],
    np.array(["a", "bb", "ccc"]),
    np.array([b"a", b"bb"]),
    np.array([b"x", b"y"], dtype=object),
], ids=["bytes", "str", "np_str", "np_bytes", "np_object"])
def test_from_tensor_slices_strings(value):
    check(lambda mod: D(mod).from_tensor_slices(value))


@pytest.mark.parametrize("value,src", [
    (np.array([["a", "b"], ["c", "d"], ["e", "f"]]), 'np.array([["a", "b"], ["c", "d"], ["e", "f"]])'),
    ([["a", "b"], ["c", "d"]], '[["a", "b"], ["c", "d"]]'),
    (np.array([[b"x"], [b"y"]], dtype=object), 'np.array([[b"x"], [b"y"]], dtype=object)'),
], ids=["2d_str", "2d_list", "2d_object"])
def test_from_tensor_slices_2d_strings(value, src):
    assert_conveyor_does_not_crash(f"list(cv.data.Dataset.from_tensor_slices({src}))")
    check(lambda mod: D(mod).from_tensor_slices(value))


def test_from_tensor_slices_empty_leading_dim():
    check(lambda mod: D(mod).from_tensor_slices(np.zeros((0, 3), np.float32)))


def test_from_tensor_slices_zero_size_inner_dim():
    check(lambda mod: D(mod).from_tensor_slices(np.zeros((3, 0), np.int32)))


def test_from_tensor_slices_mismatched_leading_dims_raises():
    assert_both_raise(lambda mod: D(mod).from_tensor_slices((np.arange(3), np.arange(4))))


def test_from_tensor_slices_scalar_raises():
    assert_both_raise(lambda mod: D(mod).from_tensor_slices(np.int64(3)))
    assert_both_raise(lambda mod: D(mod).from_tensor_slices((np.arange(3), 5)))


def test_from_tensor_slices_empty_tuple_raises():
    assert_both_raise(lambda mod: D(mod).from_tensor_slices(()))


def test_from_tensor_slices_bool_then_int_raises():
    assert_both_raise(lambda mod: D(mod).from_tensor_slices([True, 1]))


@pytest.mark.parametrize("value", [2 ** 63, -(2 ** 63) - 1], ids=["2**63", "-2**63-1"])
def test_from_tensors_out_of_range_int_raises_value_error(value):
    assert_both_raise(lambda mod: D(mod).from_tensors(value))


def test_from_tensor_slices_out_of_range_int_list_raises():
    assert_both_raise(lambda mod: D(mod).from_tensor_slices([2 ** 64, 1]))


def test_from_tensor_slices_ragged_list_raises():
    assert_both_raise(lambda mod: D(mod).from_tensor_slices([[1, 2], [3]]))


# ---------------------------------------------------------------------------
# from_tensors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", [
    np.int64(7),
    5,
    2.5,
    True,
    "text",
    b"bytes",
    [1, 2, 3],
    [[1.0, 2.0]],
    np.arange(6, dtype=np.uint16).reshape(2, 3),
    (1, np.float64(2.0)),
    {"k": [1, 2], "j": "s"},
    Point(x=np.int32(1), y=(np.zeros(2, np.float16), b"q")),
], ids=lambda v: type(v).__name__)
def test_from_tensors(value):
    t, c = check(lambda mod: D(mod).from_tensors(value))
    assert len(c) == 1


def test_from_tensors_string_vector():
    assert_conveyor_does_not_crash('list(cv.data.Dataset.from_tensors(np.array(["a", "b"])))')
    check(lambda mod: D(mod).from_tensors(np.array(["a", "b"])))


def test_from_tensors_empty_tuple_raises():
    assert_both_raise(lambda mod: D(mod).from_tensors(()))


# ---------------------------------------------------------------------------
# range
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    (5,), (0,), (-3,), (2, 7), (7, 2), (5, 5), (0, 10, 3), (10, 0, -3), (10, 0, -1),
    (-5, -1), (-1, -5, -2), (0, 10, 20), (3, 3, -1), (0, 1, -1), (-3, 4, 2),
], ids=str)
def test_range(args):
    t, c = check(lambda mod: D(mod).range(*args))
    assert [int(x) for x in c] == list(range(*args))
    assert len(build_range(cv, args)) == len(range(*args))


def build_range(mod, args, **kw):
    return D(mod).range(*args, **kw)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "int8", "uint8",
                                   "int16", "uint16", "uint32", "uint64"])
def test_range_output_type(dtype):
    check(lambda mod: D(mod).range(1, 9, 2, output_type=getattr(mod, dtype)))


def test_range_large_values():
    check(lambda mod: D(mod).range(2 ** 40, 2 ** 40 + 3))
    check(lambda mod: D(mod).range(-(2 ** 62), -(2 ** 62) + 3))


def test_range_step_zero_raises():
    assert_both_raise(lambda mod: D(mod).range(0, 10, 0))


def test_range_bad_arg_count_raises():
    assert_both_raise(lambda mod: D(mod).range())
    assert_both_raise(lambda mod: D(mod).range(1, 2, 3, 4))


# ---------------------------------------------------------------------------
# from_generator
# ---------------------------------------------------------------------------


def test_from_generator_output_signature_scalar():
    def gen():
        yield from range(5)

    check(lambda mod: D(mod).from_generator(gen, output_signature=mod.TensorSpec([], mod.int64)))


def test_from_generator_output_signature_structures():
    def gen():
        for i in range(4):
            yield {"a": (i, np.full([i], i, np.float32)), "s": str(i) * i}, Pair(a=[i, i], b=b"x")

    def build(mod):
        sig = ({"a": (mod.TensorSpec([], mod.int32), mod.TensorSpec([None], mod.float32)),
                "s": mod.TensorSpec([], mod.string)},
               Pair(a=mod.TensorSpec([2], mod.int64), b=mod.TensorSpec([], mod.string)))
        return D(mod).from_generator(gen, output_signature=sig)

    t, c = check(build)
    assert type(c[0][1]) is Pair


def test_from_generator_output_signature_converts_dtype():
    def gen():
        for i in range(3):
            yield np.int64(i), [float(i), 0.5], True

    def build(mod):
        return D(mod).from_generator(gen, output_signature=(
            mod.TensorSpec([], mod.uint8), mod.TensorSpec([2], mod.float64),
            mod.TensorSpec([], mod.bool)))

    check(build)


def test_from_generator_output_types_and_shapes():
    def gen():
        for i in range(4):
            yield i, np.arange(i, dtype=np.float32), "s%d" % i

    check(lambda mod: D(mod).from_generator(
        gen, output_types=(mod.int64, mod.float32, mod.string),
        output_shapes=((), (None,), ())))


def test_from_generator_output_types_only_unknown_shape():
    def gen():
        for i in range(3):
            yield np.zeros([i, 2], np.int32)

    check(lambda mod: D(mod).from_generator(gen, output_types=mod.int32))


def test_from_generator_output_types_dict():
    def gen():
        for i in range(3):
            yield {"x": i, "y": [i, i + 1]}

    check(lambda mod: D(mod).from_generator(
        gen, output_types={"x": mod.int64, "y": mod.int32},
        output_shapes={"x": [], "y": [2]}))


def test_from_generator_string_vectors():
    assert_conveyor_does_not_crash(
        "list(cv.data.Dataset.from_generator(lambda: iter([['a', 'b']]), "
        "output_signature=cv.TensorSpec([None], cv.string)))")

    def gen():
        for i in range(3):
            yield ["x"] * i

    check(lambda mod: D(mod).from_generator(gen, output_signature=mod.TensorSpec([None], mod.string)))


def test_from_generator_with_args():
    def gen(n, scale):
        for i in range(int(n)):
            yield i * float(scale)

    check(lambda mod: D(mod).from_generator(
        gen, output_signature=mod.TensorSpec([], mod.float32), args=(4, 1.5)))


def test_from_generator_with_string_arg():
    def gen(prefix):
        assert isinstance(prefix, bytes), type(prefix)
        for i in range(3):
            yield prefix + str(i).encode()

    check(lambda mod: D(mod).from_generator(
        gen, output_signature=mod.TensorSpec([], mod.string), args=("p",)))


def test_from_generator_reinvoked_per_iterator():
    calls = {"tf": 0, "cv": 0}

    def make_gen(key):
        def gen():
            calls[key] += 1
            for i in range(3):
                yield i * 10 + calls[key]
        return gen

    tds = tf.data.Dataset.from_generator(make_gen("tf"), output_signature=tf.TensorSpec([], tf.int64))
    cds = cv.data.Dataset.from_generator(make_gen("cv"), output_signature=cv.TensorSpec([], cv.int64))
    for _ in range(3):
        assert_same_elements(tf_elements(tds), list(cds.as_numpy_iterator()))
    assert calls["cv"] == calls["tf"] == 3


def test_from_generator_two_live_iterators_independent():
    def gen():
        yield from range(4)

    for mod in (tf, cv):
        ds = D(mod).from_generator(gen, output_signature=mod.TensorSpec([], mod.int64))
        a, b = iter(ds.as_numpy_iterator()), iter(ds.as_numpy_iterator())
        got = [int(next(a)), int(next(a)), int(next(b)), int(next(a)), int(next(b))]
        assert got == [0, 1, 0, 2, 1], mod.__name__


def test_from_generator_cardinality_unknown():
    def gen():
        yield 1

    for mod in (tf, cv):
        ds = D(mod).from_generator(gen, output_signature=mod.TensorSpec([], mod.int64))
        assert cardinality(ds) == mod.data.UNKNOWN_CARDINALITY
        with pytest.raises(TypeError):
            len(ds)


def _gen_outcomes(gen, build_sig):
    t_it = iter(tf.data.Dataset.from_generator(gen, output_signature=build_sig(tf)).as_numpy_iterator())
    c_it = iter(cv.data.Dataset.from_generator(gen, output_signature=build_sig(cv)))
    return outcomes(t_it), outcomes(c_it)


@pytest.mark.parametrize("bad", ["structure", "type", "shape", "rank"])
def test_from_generator_mismatch_raises_invalid_argument(bad):
    def gen():
        yield (1, [1, 2])
        if bad == "structure":
            yield (1, [1, 2], 3)
        elif bad == "type":
            yield ("not a number", [1, 2])
        elif bad == "shape":
            yield (1, [1, 2, 3])
        else:
            yield (1, [[1, 2]])

    t_out, c_out = _gen_outcomes(
        gen, lambda mod: (mod.TensorSpec([], mod.int64), mod.TensorSpec([2], mod.int32)))
    assert t_out[0][0] == c_out[0][0] == "ok"
    assert_same_element(t_out[0][1], c_out[0][1])
    assert t_out[1][0] == "error" and c_out[1][0] == "error", (t_out, c_out)
    assert isinstance(t_out[1][1], tf.errors.InvalidArgumentError)
    assert isinstance(c_out[1][1], cv.errors.InvalidArgumentError), repr(c_out[1][1])
    assert isinstance(c_out[1][1], ValueError)


def test_from_generator_mismatch_then_continues():
    def gen():
        yield 1
        yield "bad"
        yield 3

    t_out, c_out = _gen_outcomes(gen, lambda mod: mod.TensorSpec([], mod.int64))
    assert [k for k, _ in t_out] == ["ok", "error", "ok"]
    assert_same_outcomes(t_out, c_out)


def test_from_generator_exception_in_generator_then_ends():
    def gen():
        yield 1
        raise KeyError("boom")

    t_out, c_out = _gen_outcomes(gen, lambda mod: mod.TensorSpec([], mod.int64))
    assert [k for k, _ in t_out] == [k for k, _ in c_out] == ["ok", "error"]
    assert_same_element(t_out[0][1], c_out[0][1])
    # conveyor re-raises the generator's own exception (documented difference);
    # TF wraps it in an OpError.
    assert isinstance(c_out[1][1], KeyError)


def test_from_generator_bad_arguments_raise():
    def gen():
        yield 1

    assert_both_raise(lambda mod: D(mod).from_generator(gen))
    assert_both_raise(lambda mod: D(mod).from_generator(
        gen, output_types=mod.int64, output_signature=mod.TensorSpec([], mod.int64)))
    assert_both_raise(lambda mod: D(mod).from_generator(gen, output_shapes=[]))
    assert_both_raise(lambda mod: D(mod).from_generator(
        42, output_signature=mod.TensorSpec([], mod.int64)))
