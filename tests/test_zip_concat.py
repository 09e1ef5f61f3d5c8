"""Dataset.zip, concatenate and enumerate: structure, lengths, specs,
cardinality, errors inside, lifetimes."""
import collections
import gc
import threading

import numpy as np
import pytest

import conveyor as cv

pytestmark = pytest.mark.filterwarnings("ignore:.*runs in Python per element")  # on purpose

Dataset = cv.data.Dataset
Point = collections.namedtuple("Point", ["x", "y"])


def failing(n, bad, exc=ValueError):
    def fn(x):
        if int(x) in bad:
            raise exc(f"boom at {int(x)}")
        return x
    return Dataset.range(n).map(fn)


def outcomes(ds, limit=50):
    out, it = [], iter(ds)
    for _ in range(limit):
        try:
            out.append(next(it))
        except StopIteration:
            return out
        except Exception as e:  # noqa: BLE001
            out.append(type(e))
    return out


# -- zip -------------------------------------------------------------------------


def test_zip_forms():
    a, b = Dataset.range(3), Dataset.range(10, 20)
    assert [tuple(map(int, e)) for e in Dataset.zip(a, b)] == [(0, 10), (1, 11), (2, 12)]
    assert [tuple(map(int, e)) for e in Dataset.zip((a, b))] == [(0, 10), (1, 11), (2, 12)]
    assert [tuple(map(int, e)) for e in Dataset.zip(datasets=(a, b))] == [(0, 10), (1, 11), (2, 12)]
    assert [int(e) for e in Dataset.zip(a)] == [0, 1, 2]
    assert [tuple(map(int, e)) for e in a.zip(b, b)] == [(10, 10)] + [(i, i) for i in range(11, 20)]


def test_zip_nested_structure_is_the_element_structure():
    ds = Dataset.zip({"p": Dataset.zip(Point(Dataset.range(3), Dataset.range(3))),
                      "s": (Dataset.from_tensor_slices(np.array([b"a", b"b"])),)})
    spec = ds.element_spec
    assert type(spec["p"]) is Point and isinstance(spec["s"], tuple)
    out = list(ds)
    assert out == [{"p": Point(0, 0), "s": (b"a",)}, {"p": Point(1, 1), "s": (b"b",)}]
    assert type(out[0]["p"]) is Point


def test_zip_of_many_datasets():
    ds = Dataset.zip(tuple(Dataset.range(i, 100) for i in range(40)))
    first = next(iter(ds))
    assert [int(v) for v in first] == list(range(40))
    assert ds.cardinality() == 61 and len(list(ds)) == 61


def test_zip_of_components_and_multi_component_inputs():
    pairs = Dataset.from_tensor_slices((np.arange(3), np.arange(3) * 2.0))
    ds = Dataset.zip(pairs, Dataset.range(5), pairs)
    e = list(ds)[2]
    assert int(e[0][0]) == 2 and float(e[0][1]) == 4.0 and int(e[1]) == 2 and int(e[2][0]) == 2


def test_zip_cardinality():
    u = Dataset.range(3).filter(lambda x: True)
    assert Dataset.zip(Dataset.range(3), Dataset.range(5)).cardinality() == 3
    assert Dataset.zip(Dataset.range(3).repeat(), Dataset.range(5)).cardinality() == 5
    assert Dataset.zip(Dataset.range(3).repeat(), Dataset.range(1).repeat()).cardinality() == -1
    assert Dataset.zip(Dataset.range(3).repeat(), u).cardinality() == -2


def test_zip_errors_keep_inputs_in_step():
    ds = Dataset.zip(failing(5, [1, 3]), Dataset.range(5))
    assert outcomes(ds) == [(0, 0), ValueError, (2, 2), ValueError, (4, 4)]
    ds = Dataset.zip(Dataset.range(5), failing(5, [0]))
    assert outcomes(ds) == [ValueError, (1, 1), (2, 2), (3, 3), (4, 4)]


def test_zip_error_and_end_in_one_step():
    # The first input fails at its element 2 while the second ends there: the
    # error is raised, then the zip ends (tf.data's order).
    assert outcomes(Dataset.zip(failing(3, [2]), Dataset.range(2))) == [(0, 0), (1, 1), ValueError]
    # An input that ends first stops the pull: the later one is not advanced.
    calls = []
    second = Dataset.range(5).map(lambda x: (calls.append(int(x)), x)[1])
    assert len(list(Dataset.zip(Dataset.range(2), second))) == 2
    assert calls == [0, 1]


@pytest.mark.parametrize("bad", [
    lambda: Dataset.zip(), lambda: Dataset.zip([Dataset.range(2)]),
    lambda: Dataset.zip((Dataset.range(2), 3)),
    lambda: Dataset.zip(Dataset.range(1), datasets=Dataset.range(1))])
def test_zip_bad_arguments_raise_type_error(bad):
    with pytest.raises(TypeError):
        bad()


def test_zip_of_nothing_raises_invalid_argument():
    with pytest.raises(cv.errors.InvalidArgumentError):
        Dataset.zip(())


# -- concatenate --------------------------------------------------------------------


def test_concatenate_values_and_strings():
    assert [int(v) for v in Dataset.range(3).concatenate(Dataset.range(7, 9))] == [0, 1, 2, 7, 8]
    a = Dataset.from_tensor_slices({"s": np.array([b"x"]), "i": np.arange(1)})
    b = Dataset.from_tensor_slices({"s": np.array([b"yy", b""]), "i": np.arange(2)})
    assert [d["s"] for d in a.concatenate(b)] == [b"x", b"yy", b""]


def test_concatenate_spec_is_the_most_specific_common_one():
    a = Dataset.from_tensors(np.zeros(3))
    assert a.concatenate(Dataset.from_tensors(np.zeros(4))).element_spec.shape.as_list() == [None]
    assert a.concatenate(Dataset.from_tensors(np.zeros((1, 1)))).element_spec.shape.rank is None
    assert a.concatenate(a).element_spec.shape.as_list() == [3]
    out = list(a.concatenate(Dataset.from_tensors(np.ones((1, 1)))))
    assert out[0].shape == (3,) and out[1].shape == (1, 1)


@pytest.mark.parametrize("other", [
    lambda: Dataset.from_tensor_slices(np.array([b"a"])),
    lambda: Dataset.zip(Dataset.range(1), Dataset.range(1)),
    lambda: Dataset.from_tensors(np.int32(1)),
    lambda: Dataset.from_tensors({"a": np.int64(1)})])
def test_concatenate_incompatible_raises_type_error(other):
    with pytest.raises(TypeError, match="Incompatible"):
        Dataset.range(3).concatenate(other())


def test_concatenate_of_python_maps_checks_when_specs_are_known():
    a = Dataset.range(2).map(lambda x: x)
    b = Dataset.range(2).map(lambda x: (x, x))
    with pytest.raises(TypeError, match="Incompatible"):
        a.concatenate(b).element_spec
    # A failing first element of the second map fails in its turn, not up front.
    ok = Dataset.range(2).map(lambda x: x).concatenate(failing(2, [0]))
    assert outcomes(ok) == [0, 1, ValueError, 1]


def test_concatenate_cardinality():
    fin, inf = Dataset.range(4), Dataset.range(1).repeat()
    unk = Dataset.range(3).filter(lambda x: True)
    assert fin.concatenate(fin).cardinality() == 8
    assert fin.concatenate(unk).cardinality() == -2
    assert unk.concatenate(inf).cardinality() == -1
    assert inf.concatenate(fin).cardinality() == -1


def test_concatenate_errors_pass_through():
    ds = failing(3, [1]).concatenate(failing(3, [0, 2]))
    assert outcomes(ds) == [0, ValueError, 2, ValueError, 1, ValueError]


def test_concatenate_with_threads_inside_and_close_from_another_thread():
    slow = Dataset.range(10 ** 6).map(lambda x: x, num_parallel_calls=2).prefetch(4)
    it = iter(Dataset.range(3).concatenate(slow))
    assert [int(next(it)) for _ in range(5)] == [0, 1, 2, 0, 1]
    closer = threading.Thread(target=it.close)
    closer.start()
    closer.join()
    with pytest.raises(StopIteration):
        next(it)


def test_concatenate_of_an_empty_first_input():
    assert [int(v) for v in Dataset.range(0).concatenate(Dataset.range(2))] == [0, 1]


# -- enumerate -----------------------------------------------------------------------


def test_enumerate():
    ds = Dataset.from_tensor_slices(np.array([b"a", b"b"])).enumerate(start=3)
    assert [(int(i), s) for i, s in ds] == [(3, b"a"), (4, b"b")]
    assert ds.element_spec[0] == cv.TensorSpec([], cv.int64)
    assert ds.cardinality() == 2
    assert Dataset.range(2).repeat().enumerate().cardinality() == -1
    first = next(iter(Dataset.range(1).repeat().enumerate(-5)))
    assert int(first[0]) == -5


def test_enumerate_bad_start():
    with pytest.raises(TypeError):
        Dataset.range(2).enumerate(1.5)


# -- lifetimes -------------------------------------------------------------------------


def test_partially_consumed_iterators_are_released():
    gc.collect()
    parallel = Dataset.range(10 ** 5).map(lambda x: x, num_parallel_calls=2).prefetch(2)
    pipelines = [Dataset.zip(parallel, Dataset.range(10 ** 5), parallel),
                 Dataset.range(2).concatenate(parallel),
                 parallel.enumerate()]
    for ds in pipelines:
        it = iter(ds)
        for _ in range(3):
            next(it)
        del it
    gc.collect()
    assert cv._engine.live_iterators() == 0


def test_ctrl_c_while_waiting_loses_nothing(run_python):
    """Ctrl-C while next() waits inside each transformation (element 3 of the source
    is slow, so the interrupt lands while the kernel is half-way: zip holding its
    first part, rebatch and padded_batch holding rows, shard skipping): the call
    raises KeyboardInterrupt and the stream then goes on with nothing lost."""
    pipelines = {
        "zip": "D.zip(D.range(10), src())",
        "concatenate": "src().take(2).concatenate(src())",
        "filter": "src().filter(lambda x: x % 2 == 0)",
        "shard": "src().shard(3, 1)",
        "unbatch": "src().batch(4).unbatch()",
        "rebatch": "src().batch(2).rebatch(3)",
        "padded_batch": "src().padded_batch(5)",
        "enumerate": "src().enumerate(7)",
    }
    result = run_python("""
        import _thread, threading, time, numpy as np, conveyor as cv
        D = cv.data.Dataset
        slow_down = [False]
        def slow(x):
            if x == 3 and slow_down[0]:
                time.sleep(0.4)
            return x
        def src():
            return D.range(10).map(slow, num_parallel_calls=1)
        def norm(v):
            if isinstance(v, tuple):
                return tuple(norm(x) for x in v)
            return np.asarray(v).tolist()
        for name, build in PIPELINES.items():
            ds = eval(build)
            slow_down[0] = False
            expected = [norm(v) for v in ds]
            slow_down[0] = True
            it = iter(ds)
            threading.Timer(0.15, _thread.interrupt_main).start()
            out, interrupted = [], 0
            while True:
                try:
                    out.append(norm(next(it)))
                except KeyboardInterrupt:
                    interrupted += 1
                except StopIteration:
                    break
            print(name, interrupted, out == expected, flush=True)
    """.replace("PIPELINES", repr(pipelines)), timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    for name in pipelines:
        assert f"{name} 1 True" in lines, result.stdout
