"""tf.config, tf.version, tf.executing_eagerly, tf.no_op, tf.group,
tf.identity_n, tf.get_static_value, tf.get_logger and tf.switch_case
(issue 28), against TensorFlow: eagerly and traced into a map's native
program (no TracingWarning)."""
import logging
import warnings

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from conveyor.framework.tracing import TracingWarning  # noqa: E402

X = np.arange(6, dtype=np.int32).reshape(2, 3)


def _np(v):
    return v.numpy() if hasattr(v, "numpy") and not isinstance(v, np.ndarray) else np.asarray(v)


def _same(a, b):
    a, b = _np(a), _np(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)


def _native(ds):
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracingWarning)
        assert "mode=native" in repr(ds)
        return list(ds)


def _both_in_map(fn, source):
    got = _native(source(cv).map(lambda *a: fn(cv, *a)))
    want = list(source(tf).map(lambda *a: fn(tf, *a)))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for a, b in zip(cv.nest.flatten(g), tf.nest.flatten(w)):
            _same(a, b)


@pytest.fixture
def fresh_config():
    yield cv.config
    cv.config._state.update(visible=None, memory_growth={}, intra_op=0, inter_op=0)


def test_devices_as_tensorflow_lists_them(fresh_config):
    cpu = cv.config.list_physical_devices("CPU")
    assert [tuple(d) for d in cpu] == [tuple(d) for d in tf.config.list_physical_devices("CPU")]
    assert repr(cpu[0]) == repr(tf.config.list_physical_devices("CPU")[0])
    assert cv.config.list_logical_devices("CPU")[0].name == "/device:CPU:0"
    # JAX/Flax input pipelines hide the GPU from TensorFlow first thing: accepted.
    cv.config.experimental.set_visible_devices([], "GPU")
    cv.config.set_visible_devices([], "GPU")
    assert cv.config.get_visible_devices("GPU") == []
    assert cv.config.get_visible_devices() == cpu
    with pytest.raises(ValueError, match="CPU must be visible"):
        cv.config.set_visible_devices([], "CPU")
    with pytest.raises(ValueError, match="Unrecognized device"):
        cv.config.set_visible_devices([cv.config.PhysicalDevice("/physical_device:GPU:9", "GPU")])
    with pytest.raises(ValueError):
        tf.config.experimental.set_memory_growth(tf.config.list_physical_devices("CPU")[0], True)
    with pytest.raises(ValueError, match="non-GPU"):
        cv.config.experimental.set_memory_growth(cpu[0], True)
    for gpu in cv.config.list_physical_devices("GPU"):
        cv.config.experimental.set_memory_growth(gpu, True)
        assert cv.config.experimental.get_memory_growth(gpu)


def test_threading_settings(fresh_config):
    assert cv.config.threading.get_intra_op_parallelism_threads() == \
        tf.config.threading.get_intra_op_parallelism_threads() == 0
    assert cv.config.threading.get_inter_op_parallelism_threads() == 0
    cv.config.threading.set_inter_op_parallelism_threads(3)
    assert cv.config.threading.get_inter_op_parallelism_threads() == 3
    with pytest.raises(ValueError):
        cv.config.threading.set_intra_op_parallelism_threads(-1)
    # intra-op threads are the default CPU budget of pipelines ...
    cv.config.threading.set_intra_op_parallelism_threads(2)
    assert cv.config.threading.get_intra_op_parallelism_threads() == 2
    ds = cv.data.Dataset.range(100).map(lambda x: x + 1, num_parallel_calls=cv.data.AUTOTUNE)
    it = iter(ds)
    assert [int(next(it)) for _ in range(3)] == [1, 2, 3]
    assert it.stats().cpu_budget == 2
    it.close()
    # ... and options.autotune.cpu_budget wins where set.
    options = cv.data.Options()
    options.autotune.cpu_budget = 3
    it = iter(ds.with_options(options))
    next(it)
    assert it.stats().cpu_budget == 3
    it.close()


def test_version_logger_and_eager_helpers():
    assert cv.version.VERSION == tf.version.VERSION
    assert cv.get_logger() is logging.getLogger("tensorflow") and tf.get_logger().name == \
        "tensorflow"
    assert cv.executing_eagerly() and tf.executing_eagerly()
    assert cv.no_op() is None and tf.no_op() is None
    assert cv.group(cv.constant(1), cv.constant(2)) is None and tf.group(tf.constant(1)) is None
    for a, b in zip(cv.identity_n([X, [1.5, 2.5]]), tf.identity_n([X, [1.5, 2.5]])):
        _same(a, b)
    _same(cv.get_static_value(cv.constant(X)), tf.get_static_value(tf.constant(X)))
    assert cv.get_static_value(7) == tf.get_static_value(7) == 7


def test_traced_helpers_match_tensorflow():
    def fn(t, x):
        with t.control_dependencies([t.group(t.no_op(), t.identity(x))]):
            eager = t.constant(t.executing_eagerly())
        a, b = t.identity_n([x, t.cast(x, t.float32) * 2])
        static = t.get_static_value(t.constant([4, 5]))
        unknown = t.get_static_value(x)
        return a, b, eager, t.constant(static), t.constant(unknown is None)
    _both_in_map(fn, lambda t: t.data.Dataset.from_tensors(X))


BRANCHES = {
    "list": lambda t, i, x: t.switch_case(i, [lambda: x * 2, lambda: x + 7, lambda: -x]),
    "dict_default": lambda t, i, x: t.switch_case(i, {0: lambda: x * 3, 1: lambda: x - 1},
                                                  default=lambda: x * 0),
    "pairs": lambda t, i, x: t.switch_case(i, [(1, lambda: x + 1), (0, lambda: x - 1)]),
    "struct": lambda t, i, x: t.switch_case(i, [lambda: (x, t.cast(x, t.float32)),
                                                lambda: (x * 2, t.cast(x, t.float32) / 2)]),
}


@pytest.mark.parametrize("name", sorted(BRANCHES))
def test_switch_case(name):
    fn = BRANCHES[name]
    for i in (-1, 0, 1, 2, 5):  # out of range: default, or the last branch
        for a, b in zip(cv.nest.flatten(fn(cv, np.int32(i), X)),
                        tf.nest.flatten(fn(tf, tf.constant(i), tf.constant(X)))):
            _same(a, b)
    _both_in_map(lambda t, i, x: fn(t, i, x),
                 lambda t: t.data.Dataset.range(-1, 5).map(
                     lambda i: (t.cast(i, t.int32), t.constant(X))))


def test_switch_case_errors():
    for t in (cv, tf):
        zero = t.constant(0)
        with pytest.raises(TypeError):
            t.switch_case(zero, "not branches")
        with pytest.raises(ValueError):
            t.switch_case(zero, [])
        with pytest.raises(TypeError):
            t.switch_case(zero, [1, 2])
