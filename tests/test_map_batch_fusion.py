"""map(...).batch(...) fused into one kernel (MapAndBatch,
options.experimental_optimization.map_and_batch_fusion): the same batches,
order, dtypes, shapes, errors (types, messages, positions and the batch
boundaries after them) as the pair, and as TensorFlow where it is installed
(non-error cases)."""
import gc
import itertools
import os
import time

import numpy as np
import pytest

import conveyor as cv
from conveyor import errors
from conveyor.data.options import DerivedContext

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
try:
    import tensorflow as tf
except ImportError:  # pragma: no cover - the tf extra is optional
    tf = None

Dataset = cv.data.Dataset
AUTOTUNE = cv.data.AUTOTUNE
needs_tf = pytest.mark.skipif(tf is None, reason="tensorflow is not installed")
pytestmark = pytest.mark.filterwarnings("ignore::conveyor.framework.tracing.TracingWarning",
                                        "ignore:.*runs in Python per element")


def options(fusion=None, ram_budget=None):
    o = cv.data.Options()
    o.experimental_optimization.map_and_batch_fusion = fusion
    if ram_budget is not None:
        o.autotune.ram_budget = ram_budget
    return o


def fused(ds):
    return ds.with_options(options(fusion=True))


def unfused(ds):
    return ds.with_options(options(fusion=False))


def plain(value):
    if isinstance(value, dict):
        return {k: plain(v) for k, v in sorted(value.items())}
    if isinstance(value, (tuple, list)):
        return tuple(plain(v) for v in value)
    a = np.asarray(value)
    return (str(a.dtype), a.shape, a.tolist())


def run(ds, epochs=1, limit=10_000):
    """Every epoch's batches, errors in place (iteration goes on after them)."""
    out = []
    for _ in range(epochs):
        it, epoch = iter(ds), []
        while len(epoch) < limit:
            try:
                epoch.append(plain(next(it)))
            except StopIteration:
                break
            except errors.OpError as e:
                epoch.append((type(e).__name__, str(e)))
        out.append(epoch)
    return out


def is_error(outcome):
    return isinstance(outcome[0], str) and outcome[0].endswith("Error")


def same(build, epochs=1, expect_fused=True):
    """build() fused and unfused give the same outcomes; returns them."""
    ds = build()
    a, b = fused(ds), unfused(ds)
    if expect_fused:
        assert "MapAndBatch" in _engine_kernels(a), _engine_kernels(a)
    assert "MapAndBatch" not in _engine_kernels(b)
    got, want = run(a, epochs), run(b, epochs)
    assert got == want
    return got


def _engine_kernels(ds):
    """Kernel names of ds's engine pipeline (walking the Python datasets)."""
    ctx, names, stack = ds._context(), [], [ds]
    while stack:
        d = stack.pop()
        names.append(d._engine(ctx).kernel)
        stack.extend(d._inputs)
    return names


def double(x):
    return x * 2


def raw(s):
    """A string -> its bytes as uint8, reshaped to [4]: fails (natively) on other lengths."""
    return cv.reshape(cv.io.decode_raw(s, cv.uint8), [4])


def strings(values):
    return Dataset.from_tensor_slices(np.array(values, dtype=object))


WORDS = [b"abcd", b"efgh", b"ij", b"klmn", b"opqrstuv", b"wxyz", b"1234", b"56", b"7890",
         b"", b"zzzz", b"yyyy", b"xxxx"]


# -- plain pipelines -------------------------------------------------------------------


@pytest.mark.parametrize("n,batch,drop", list(itertools.product(
    [0, 1, 7, 64, 100], [1, 3, 8, 64, 1000], [False, True])))
def test_range_native(n, batch, drop):
    same(lambda: Dataset.range(n).map(double, num_parallel_calls=2).batch(batch, drop))


@pytest.mark.parametrize("parallel", [1, 2, 3, AUTOTUNE])
def test_parallelism(parallel):
    got = same(lambda: Dataset.range(500).map(double, num_parallel_calls=parallel).batch(16))
    assert len(got[0]) == 32


def test_structures_and_dtypes():
    def f(x):
        return {"a": cv.cast(x, cv.float32) / 3, "b": (x, cv.cast(x, cv.uint8)),
                "c": cv.reshape(cv.cast(x, cv.float64), [1, 1])}
    same(lambda: Dataset.range(50).map(f, num_parallel_calls=3).batch(7))


def test_image_sized_rows():
    images = np.arange(12 * 32 * 32 * 3, dtype=np.float32).reshape(12, 32, 32, 3)
    same(lambda: Dataset.from_tensor_slices(images).repeat(5)
         .map(lambda im: im / 255.0 + 1.0, num_parallel_calls=AUTOTUNE).batch(8))


def test_python_function():
    same(lambda: Dataset.range(40).map(lambda x: np.full([3], int(x) * 2),
                                       num_parallel_calls=2).batch(6))


def test_strings():
    same(lambda: strings([w for w in WORDS if w] * 3)
         .map(lambda s: (s, cv.io.decode_raw(s, cv.uint8)[:1]), num_parallel_calls=2).batch(4))
    big = [bytes([i]) * 5000 for i in range(20)]
    same(lambda: strings(big).map(lambda s: s, num_parallel_calls=2).batch(6))


def test_random_ops_follow_element_ids():
    def f(x):
        return x, cv.random.uniform([2], seed=7)
    same(lambda: Dataset.range(30).map(f, num_parallel_calls=3).batch(4), epochs=2)
    same(lambda: Dataset.range(20).map(f, num_parallel_calls=2).batch(3).repeat(3))
    same(lambda: Dataset.range(20).repeat(2).map(f, num_parallel_calls=2).batch(3))


# -- errors -----------------------------------------------------------------------------


@pytest.mark.parametrize("batch", [1, 2, 3, 4, 5, 13, 100])
@pytest.mark.parametrize("drop", [False, True])
def test_native_errors_shift_boundaries_as_unfused(batch, drop):
    got = same(lambda: strings(WORDS * 4).map(lambda s: (s, raw(s)), num_parallel_calls=3)
               .batch(batch, drop))
    assert any(is_error(x) for x in got[0])


@pytest.mark.parametrize("bad", [[0], [5], [0, 1, 2], [9, 10], [31], list(range(0, 40, 3)),
                                 list(range(40))])
@pytest.mark.parametrize("batch", [1, 4, 7])
def test_python_errors(bad, batch):
    def f(x):
        if int(x) in bad:
            raise errors.InvalidArgumentError(None, None, f"boom at {int(x)}")
        return x * 10
    got = same(lambda: Dataset.range(32).map(f, num_parallel_calls=2).batch(batch))
    assert sum(is_error(x) for x in got[0]) == len([b for b in bad if b < 32])


def test_input_errors_before_the_map():
    def bad_input(x):
        if int(x) % 7 == 3:
            raise errors.InvalidArgumentError(None, None, f"input boom at {int(x)}")
        return x
    same(lambda: Dataset.range(60).map(bad_input).map(double, num_parallel_calls=3).batch(5))


def test_errors_then_realignment_over_many_batches():
    vals = [b"abcd"] * 200
    for k in (3, 50, 51, 120):
        vals[k] = b"x"
    for batch in (4, 8, 16, 64):
        same(lambda: strings(vals).map(raw, num_parallel_calls=AUTOTUNE).batch(batch))


def test_ragged_rows_give_batchs_error():
    got = same(lambda: strings(WORDS * 2).map(lambda s: cv.io.decode_raw(s, cv.uint8),
                                              num_parallel_calls=2).batch(3))
    assert any(is_error(x) and "different shapes" in x[1] for x in got[0])


def test_component_count_and_dtype_mismatch():
    def f(x):
        if int(x) % 5 == 2:
            return (x, x)
        return (x,)
    same(lambda: Dataset.range(20).map(f, num_parallel_calls=2).batch(3))

    def g(x):
        return np.float32(x) if int(x) % 4 == 1 else np.int64(x)
    same(lambda: Dataset.range(20).map(g, num_parallel_calls=2).batch(3))


# -- around it --------------------------------------------------------------------------


def test_take_skip_repeat_around():
    base = lambda: Dataset.range(37).map(double, num_parallel_calls=2)  # noqa: E731
    same(lambda: base().batch(5).take(3))
    same(lambda: base().batch(5).skip(2))
    same(lambda: base().batch(5).repeat(3))
    same(lambda: Dataset.range(37).repeat(3).map(double, num_parallel_calls=2).batch(5))
    same(lambda: Dataset.range(37).take(11).map(double, num_parallel_calls=2).batch(4)
         .repeat(2).skip(1).take(5))
    same(lambda: base().batch(5).prefetch(2))
    same(lambda: base().batch(5), epochs=3)


def test_deterministic_false_is_not_fused():
    # the fused kernel keeps the input's order; a non-deterministic map may reorder
    ds = Dataset.range(300).map(double, num_parallel_calls=3, deterministic=False).batch(8)
    assert "MapAndBatch" not in _engine_kernels(fused(ds))
    o = cv.data.Options()
    o.deterministic = False
    ds = Dataset.range(300).map(double, num_parallel_calls=3).batch(8).with_options(o)
    assert "MapAndBatch" not in _engine_kernels(fused(ds))
    ds = Dataset.range(300).map(double, num_parallel_calls=3, deterministic=True).batch(8)
    assert "MapAndBatch" in _engine_kernels(fused(ds.with_options(o)))


def test_not_fused_when_sequential_or_option_off():
    seq = Dataset.range(10).map(double).batch(3)
    assert "MapAndBatch" not in _engine_kernels(seq)
    on = Dataset.range(10).map(double, num_parallel_calls=2).batch(3)
    assert "MapAndBatch" in _engine_kernels(on)  # on by default
    assert "MapAndBatch" not in _engine_kernels(unfused(on))
    # the doctor's sequential baseline builds the pair, sequentially
    base = DerivedContext(on._context(), "t", sequential=True)
    assert on._engine(base).kernel == "Batch"
    got = [np.asarray(x[0]).tolist() for x in on._engine(base).make_iterator(lambda: (1, None))]
    assert got == [[0, 2, 4], [6, 8, 10], [12, 14, 16], [18]]


def test_repr_and_spec_unchanged():
    ds = Dataset.range(10).map(double, num_parallel_calls=2).batch(3, drop_remainder=True)
    assert repr(fused(ds)) == repr(unfused(ds))
    assert fused(ds).element_spec == unfused(ds).element_spec
    assert fused(ds).cardinality() == unfused(ds).cardinality() == 3


def test_ram_budget():
    ds = Dataset.range(200).map(lambda x: cv.cast(x, cv.float32) + np.zeros([256], np.float32),
                                num_parallel_calls=2).batch(8)
    ok = ds.with_options(options(ram_budget=64 << 20))
    assert run(fused(ok)) == run(unfused(ok))
    tiny = fused(ds.with_options(options(ram_budget=100)))
    got = run(tiny, limit=3)[0]
    assert got and all(x[0] == "ResourceExhaustedError" for x in got), got[:1]


def test_stats_measure_the_fused_stage():
    ds = Dataset.range(2000).map(double, num_parallel_calls=2).batch(10)
    it = iter(ds)
    for _ in it:
        pass
    text = str(it.stats())
    assert "BatchDataset" in text and "2/2" in text


# -- cancellation -----------------------------------------------------------------------


def test_close_and_delete_mid_epoch():
    def slow(x):
        time.sleep(0.001)
        return x
    for _ in range(20):
        ds = Dataset.range(10_000).map(double, num_parallel_calls=3).batch(7)
        it = iter(ds)
        next(it)
        next(it)
        it.close()
        it = iter(Dataset.range(10_000).map(slow, num_parallel_calls=3).batch(5))
        next(it)
        del it
        gc.collect()
    it = iter(strings(WORDS * 50).map(raw, num_parallel_calls=2).batch(3))
    for _ in range(5):
        try:
            next(it)
        except errors.OpError:
            pass
    del it


def test_many_iterators_at_once():
    ds = Dataset.range(300).map(double, num_parallel_calls=2).batch(9)
    its = [iter(ds) for _ in range(6)]
    outs = [[] for _ in its]
    for _ in range(40):
        for it, out in zip(its, outs):
            try:
                out.append(np.asarray(next(it)).tolist())
            except StopIteration:
                pass
    assert all(o == outs[0] for o in outs)


# -- against TensorFlow -------------------------------------------------------------------


def tf_run(ds):
    return [plain(tf.nest.map_structure(lambda t: t.numpy(), x)) for x in ds]


@needs_tf
@pytest.mark.parametrize("n,batch,drop", [(100, 8, False), (100, 8, True), (7, 3, False),
                                          (0, 4, False), (64, 64, True), (10, 100, False)])
def test_against_tensorflow(n, batch, drop):
    c = run(Dataset.range(n).map(lambda x: x * 3 + 1, num_parallel_calls=AUTOTUNE)
            .batch(batch, drop))[0]
    t = tf_run(tf.data.Dataset.range(n).map(lambda x: x * 3 + 1,
                                            num_parallel_calls=tf.data.AUTOTUNE)
               .batch(batch, drop))
    assert c == t


@needs_tf
def test_against_tensorflow_structures_strings_images():
    images = np.arange(10 * 8 * 8 * 3, dtype=np.float32).reshape(10, 8, 8, 3)

    def build(mod):
        D = mod.data.Dataset
        words = np.array([b"ab", b"cd", b"ef", b"gh", b"ij", b"kl", b"mn", b"op", b"qr", b"st"],
                         dtype=object)
        return D.zip((D.from_tensor_slices(images), D.from_tensor_slices(words))).map(
            lambda im, w: {"im": im / 255.0, "w": w, "n": mod.shape(im)[0]},
            num_parallel_calls=2).batch(4)
    c = run(fused(build(cv)))[0]
    t = tf_run(build(tf))
    assert c == t


@needs_tf
def test_against_tensorflow_repeat_take():
    def build(mod):
        return (mod.data.Dataset.range(23).map(lambda x: x - 5, num_parallel_calls=3)
                .batch(4).repeat(2).take(9))
    assert run(build(cv))[0] == tf_run(build(tf))


@pytest.mark.parametrize("seed", range(12))
def test_fuzz_errors_sizes_parallelism(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    vals = [b"abcd" if rng.random() > 0.08 else (b"x" if rng.random() > 0.3 else b"abcdef")
            for _ in range(n)]
    batch = int(rng.choice([1, 2, 3, 5, 8, 17, 64, 256]))
    drop = bool(rng.integers(0, 2))
    parallel = int(rng.choice([1, 2, 4, AUTOTUNE]))
    ragged = bool(rng.integers(0, 2))
    fn = (lambda s: cv.io.decode_raw(s, cv.uint8)) if ragged else raw
    same(lambda: strings(vals).map(fn, num_parallel_calls=parallel).batch(batch, drop),
         epochs=2)


def _image_like(x):
    img = cv.cast(cv.fill([6, 5, 3], x), cv.float32)
    return cv.image.resize(img, [4, 3]) / 255.0


@pytest.mark.parametrize("batch, drop", [(1, False), (4, False), (7, False), (7, True)])
def test_results_written_in_place(batch, drop):
    # The function's last ops write their results straight into the batch's
    # rows (a result used twice, a result that another result reads, an input
    # passed through and a constant result are copied in as before).
    def fn(x):
        r = _image_like(x)
        return {"r": r, "again": r, "twice": r * 2.0, "n": cv.cast(x, cv.int32), "x": x,
                "one": cv.constant(1.0)}
    got = same(lambda: Dataset.range(23).map(fn, num_parallel_calls=3).batch(batch, drop))
    assert len(got[0]) == (23 // batch if drop else -(-23 // batch))
    first = got[0][0]["r"]
    assert first[0] == "float32" and first[1] == (batch, 4, 3, 3)


def test_a_later_failure_after_a_result_was_written_in_place():
    # The result goes into the row first; a later op of the same call fails.
    # The failed row's error comes out in its batch, as unfused, and the rows
    # written around it keep their values.
    def fn(x):
        r = _image_like(x)
        checked = cv.debugging.check_numerics(cv.math.log(cv.cast(x, cv.float32) - 3.0), "bad")
        return r, checked
    got = same(lambda: Dataset.range(2, 20).map(fn, num_parallel_calls=2).batch(4))
    assert any(is_error(o) for o in got[0])
    assert sum(not is_error(o) for o in got[0]) >= 3
