"""tf.function / autograph decorators, identity, convert_to_tensor, is_tensor,
size, rank and print: eagerly and in traced map functions, against TensorFlow."""
import numpy as np
import pytest

import conveyor as cv


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


def test_function_decorators_pass_through_and_the_map_traces():
    @cv.function
    def double(x):
        return x * 2

    @cv.function(input_signature=[cv.TensorSpec([], cv.int64)], jit_compile=True)
    def inc(x):
        return x + 1

    @cv.autograph.experimental.do_not_convert
    def same(x):
        return cv.identity(x)
    ds = cv.data.Dataset.range(4).map(double).map(inc).map(same)
    assert [int(x) for x in ds] == [1, 3, 5, 7]
    assert "mode=native" in repr(ds) and "python" not in repr(ds)
    assert int(double(np.int64(4))) == 8


@pytest.mark.parametrize("make", [
    lambda t: t.data.Dataset.from_tensor_slices(np.zeros((3, 2, 5), np.float32)).map(
        lambda x: (t.size(x), t.rank(x), t.size(x, out_type=t.int64))),
    lambda t: t.data.Dataset.range(3).map(
        lambda x: (t.convert_to_tensor(1.5), t.convert_to_tensor(2, dtype_hint=t.float32),
                   t.convert_to_tensor([1, 2], dtype=t.int64), t.identity(x))),
])
def test_utilities_match_tensorflow(tf, make):
    ours, theirs = make(cv), make(tf)
    assert "mode=native" in repr(ours)
    assert str(ours.element_spec) == str(theirs.element_spec)
    assert [[np.asarray(v).tolist() for v in e] for e in ours.as_numpy_iterator()] == \
        [[np.asarray(v).tolist() for v in e] for e in theirs.as_numpy_iterator()]


def test_eager_utilities(tf):
    for value, hint in [(3, None), (3, cv.float32), (2.5, cv.int32), ([1, 2], cv.int64)]:
        ours = cv.convert_to_tensor(value, dtype_hint=hint)
        theirs = tf.convert_to_tensor(value, dtype_hint=None if hint is None else hint.name)
        assert ours.dtype == theirs.dtype.as_numpy_dtype and ours.tolist() == theirs.numpy().tolist()
    with pytest.raises(TypeError):
        cv.convert_to_tensor(np.array([1.5]), dtype=cv.int32)
    assert cv.is_tensor(cv.constant(1)) and not cv.is_tensor(3)
    assert int(cv.size(np.zeros((2, 7)))) == 14 and int(cv.rank(np.zeros((2, 7)))) == 2


def test_print_prints_eagerly_and_makes_a_map_python(capsys):
    cv.print("step", np.arange(3), cv.constant(b"x"), output_stream="stdout")
    assert capsys.readouterr().out == "step [0 1 2] x\n"
    with _no_warning():
        ds = cv.data.Dataset.range(2).map(lambda x: (cv.print("el", x), x)[1])
    assert "mode=python" in repr(ds) and [int(x) for x in ds] == [0, 1]
    assert capsys.readouterr().err == "el 0\nel 1\n"


class _no_warning:
    def __enter__(self):
        import warnings
        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("error")

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)
