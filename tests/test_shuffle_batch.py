"""shuffle(...).batch(...) fused into one kernel (ShuffleBatch,
options.experimental_optimization.shuffle_and_batch_fusion): the same
elements, order, dtypes, shapes, errors and RAM-budget charges as the pair,
and as TensorFlow where it is installed."""
import itertools
import os

import numpy as np
import pytest

import conveyor as cv
from conveyor import _engine, errors

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
try:
    import tensorflow as tf
except ImportError:  # pragma: no cover - the tf extra is optional
    tf = None

Dataset = cv.data.Dataset
needs_tf = pytest.mark.skipif(tf is None, reason="tensorflow is not installed")
pytestmark = pytest.mark.filterwarnings("ignore::conveyor.framework.tracing.TracingWarning")


def options(fusion=None, ram_budget=None, parallel_batch=None):
    o = cv.data.Options()
    o.experimental_optimization.shuffle_and_batch_fusion = fusion
    o.experimental_optimization.parallel_batch = parallel_batch
    if ram_budget is not None:
        o.autotune.ram_budget = ram_budget
    return o


def unfused(ds):
    return ds.with_options(options(fusion=False))


def kernel(ds):
    return ds._engine(ds._context()).kernel


def plain(value):
    """A batch (any structure) as comparable Python values with dtypes and shapes."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in sorted(value.items())}
    if isinstance(value, (tuple, list)):
        return tuple(plain(v) for v in value)
    a = np.asarray(value)
    return (str(a.dtype), a.shape, a.tolist())


def run(ds, epochs=1):
    """Every epoch's batches, errors in place (iteration goes on after them)."""
    out = []
    for _ in range(epochs):
        it, epoch = iter(ds), []
        while True:
            try:
                epoch.append(plain(next(it)))
            except StopIteration:
                break
            except errors.OpError as e:
                epoch.append((type(e).__name__, str(e)))
        out.append(epoch)
    return out


def run_tf(ds, epochs=1):
    out = []
    for _ in range(epochs):
        it, epoch = iter(ds), []
        while True:
            try:
                epoch.append(plain(tf.nest.map_structure(lambda t: t.numpy(), next(it))))
            except StopIteration:
                break
            except tf.errors.OpError as e:
                epoch.append((type(e).__name__, None))
        out.append(epoch)
    return out


def mixed(lib, n):
    """A nested structure of mixed dtypes, the same in both libraries."""
    x = np.arange(n * 6, dtype=np.float32).reshape(n, 2, 3)
    return lib.data.Dataset.from_tensor_slices(
        {"x": x, "pair": (np.arange(n, dtype=np.int16), (np.arange(n) % 3 == 0)),
         "d": np.linspace(0, 1, n), "u": (np.arange(n * 4) % 256).astype(np.uint8).reshape(n, 4)})


# -- which kernel runs ----------------------------------------------------------


def test_shuffle_then_batch_fuses_and_the_repr_names_what_was_written():
    ds = Dataset.range(10).shuffle(4, seed=1).batch(3)
    assert kernel(ds) == "ShuffleBatch"
    assert repr(ds).startswith("<BatchDataset")
    assert repr(ds._inputs[0]).startswith("<ShuffleDataset")
    assert kernel(unfused(ds)) in ("Batch", "ParallelBatch")
    assert ds.cardinality() == unfused(ds).cardinality() == 4
    assert Dataset.range(10).shuffle(4).batch(3, drop_remainder=True).cardinality() == 3


@pytest.mark.parametrize("make", [
    lambda: Dataset.from_tensor_slices(np.array([b"a", b"b", b"c"])),  # strings
    lambda: Dataset.range(5).map(lambda i: np.zeros(int(i) % 3)),     # unknown shape
    lambda: Dataset.from_tensor_slices(np.zeros((4, 2000), np.float32)),  # 8 kB rows
])
def test_strings_unknown_shapes_and_large_rows_are_not_fused(make):
    ds = make().shuffle(3, seed=2).batch(2)
    assert kernel(ds) in ("Batch", "ParallelBatch")


def test_batch_over_something_else_is_not_fused():
    assert kernel(Dataset.range(10).shuffle(4).repeat(2).batch(3)) in ("Batch", "ParallelBatch")
    assert kernel(Dataset.range(10).batch(3)) in ("Batch", "ParallelBatch")


# -- fused == unfused ---------------------------------------------------------------


@pytest.mark.parametrize("n,buffer_size,batch_size,drop", [
    (0, 5, 3, False), (1, 1, 1, False), (20, 1, 4, False), (20, 3, 8, False),
    (20, 3, 8, True), (37, 100, 5, False), (37, 100, 5, True), (300, 50, 32, False),
    (300, 64, 64, True), (64, 16, 100, False), (64, 16, 100, True), (1000, 999, 7, False)])
@pytest.mark.parametrize("seed", [1, 29])
def test_fused_equals_unfused(n, buffer_size, batch_size, drop, seed):
    ds = mixed(cv, n).shuffle(buffer_size, seed=seed).batch(batch_size, drop_remainder=drop)
    assert kernel(ds) == "ShuffleBatch"
    assert run(ds, epochs=3) == run(unfused(ds), epochs=3)


@pytest.mark.parametrize("reshuffle", [None, True, False])
@pytest.mark.parametrize("where", ["before", "after"])
def test_fused_equals_unfused_with_repeat_and_reshuffle(reshuffle, where):
    ds = Dataset.range(50)
    if where == "before":
        ds = ds.repeat(3).shuffle(20, seed=5, reshuffle_each_iteration=reshuffle).batch(7)
    else:
        ds = ds.shuffle(20, seed=5, reshuffle_each_iteration=reshuffle).batch(7).repeat(3)
    assert run(ds, epochs=2) == run(unfused(ds), epochs=2)


@pytest.mark.parametrize("npc", [1, 2, cv.data.AUTOTUNE])
@pytest.mark.parametrize("deterministic", [None, False])
def test_parallel_batch_gives_the_same_batches(npc, deterministic):
    base = mixed(cv, 500).shuffle(60, seed=3)
    ds = base.batch(16, num_parallel_calls=npc, deterministic=deterministic)
    assert kernel(ds) == "ShuffleBatch"
    want = run(base.batch(16).with_options(options(fusion=False, parallel_batch=False)), 2)
    got = run(ds, 2)
    also = run(ds.with_options(options(parallel_batch=False)), 2)  # fresh engine datasets
    if deterministic is False:  # any order of whole batches
        got, want, also = [[sorted(map(repr, e)) for e in r] for r in (got, want, also)]
    assert got == want == also


def test_unseeded_fused_shuffle_is_a_permutation_that_changes():
    ds = Dataset.range(1000).shuffle(100).batch(10)
    a = np.concatenate(list(ds))
    b = np.concatenate(list(ds))
    assert sorted(a.tolist()) == list(range(1000)) and a.tolist() != b.tolist()


def test_iterators_of_one_dataset_share_the_seed_generator():
    shuffled = Dataset.range(30).shuffle(10, seed=4)
    batched = shuffled.batch(5)
    # Iterating the shuffle alone draws seeds from the generator the fused kernel uses.
    seq = [run(shuffled), run(batched), run(shuffled), run(batched)]
    shuffled2 = Dataset.range(30).shuffle(10, seed=4)
    batched2 = shuffled2.batch(5)
    off = options(fusion=False)
    seq2 = [run(shuffled2.with_options(off)), run(batched2.with_options(off)),
            run(shuffled2.with_options(off)), run(batched2.with_options(off))]
    assert [len(s[0]) for s in seq] == [30, 6, 30, 6]
    assert seq[1] != seq[3]  # reshuffled
    # One shared generator per (dataset, options): the same seed sequence fused or not.
    assert seq == seq2


# -- errors -----------------------------------------------------------------------


def reshape_fails_at(n, bad):
    """Elements [2] float64 by their static spec; element `bad` cannot be reshaped."""
    ragged = Dataset.range(n).map(lambda i: np.full(3 if i == bad else 2, float(i)))
    return ragged.map(lambda v: cv.reshape(v, [2]))


@pytest.mark.parametrize("bad", [0, 5, 17, 39])
@pytest.mark.parametrize("buffer_size,batch_size,drop", [(1, 4, False), (6, 4, False),
                                                         (6, 4, True), (100, 8, False)])
def test_an_input_error_fails_the_same_batch(bad, buffer_size, batch_size, drop):
    ds = reshape_fails_at(40, bad).shuffle(buffer_size, seed=8).batch(batch_size,
                                                                      drop_remainder=drop)
    assert kernel(ds) == "ShuffleBatch"
    got = run(ds, 2)
    assert got == run(unfused(ds), 2)
    assert sum(1 for b in got[0] if b[0] == "InvalidArgumentError") == 1


@needs_tf
@pytest.mark.parametrize("bad", [3, 22])
def test_an_input_error_fails_the_same_batch_as_tf(bad):
    def tf_values(i):
        return np.full(3 if i == bad else 2, float(i))
    t = tf.data.Dataset.range(30).map(
        lambda i: tf.reshape(tf.numpy_function(tf_values, [i], tf.float64), [2]))
    t = t.shuffle(7, seed=8).batch(4)
    c = reshape_fails_at(30, bad).shuffle(7, seed=8).batch(4)
    want = [[("InvalidArgumentError", None) if b[0] == "InvalidArgumentError" else b for b in e]
            for e in run(c)]
    assert want == run_tf(t)


def test_over_the_ram_budget_fails_like_the_pair():
    def make(fusion):
        ds = Dataset.from_tensor_slices(np.zeros((400, 500), np.uint8)).shuffle(200, seed=1)
        return ds.batch(16).with_options(options(fusion=fusion, ram_budget=60_000))
    results = []
    for fusion in (None, False):
        ds = make(fusion)
        assert kernel(ds) == ("ShuffleBatch" if fusion is None else "Batch")
        it = iter(ds)
        seen = []
        for _ in range(3):
            with pytest.raises(errors.ResourceExhaustedError) as info:
                next(it)
            seen.append(str(info.value))
            budget = ds._ram_budget()
            seen.append(_engine.memory_budget_usage(budget)[0])
        it.close()
        seen.append(_engine.memory_budget_usage(ds._ram_budget())[0])
        results.append(seen)
    assert results[0] == results[1]
    assert "Shuffle" in results[0][0] and "(200; 120 elements fit)" in results[0][0]
    assert results[0][-1] == 0


def test_within_a_tight_budget_the_charges_match():
    def usage_trace(fusion):
        ds = Dataset.from_tensor_slices(np.arange(3000, dtype=np.int32).reshape(1000, 3))
        ds = ds.shuffle(100, seed=2).batch(8).with_options(
            options(fusion=fusion, ram_budget=100 * 12, parallel_batch=False))
        trace = []
        for b in ds:
            trace.append((b.tolist(), _engine.memory_budget_usage(ds._ram_budget())[0]))
        return trace
    assert usage_trace(None) == usage_trace(False)


# -- elements that break their spec: the kernel itself, through the engine ----------


def engine_pair(make_input, buffer_size, batch_size, drop, seed=3, npc=0):
    """(fused, unfused) engine iterators over fresh engine datasets."""
    def build(fused):
        ds = make_input()
        e = ds._engine(ds._context())
        shuffled = _engine.shuffle(e, buffer_size, seed, 0, True)
        if fused:
            out = _engine.shuffle_batch(shuffled, batch_size, drop, npc, True)
        else:
            out = _engine.batch(shuffled, batch_size, drop, npc, True)
        return out
    return build(True), build(False)


def run_engine(e, kind, epochs=2):
    out = []
    for _ in range(epochs):
        it, epoch = e.make_iterator(lambda: kind), []
        while True:
            try:
                v = next(it)
            except StopIteration:
                break
            except errors.OpError as err:
                epoch.append((type(err).__name__, str(err)))
                continue
            epoch.append(plain(v))
        out.append(epoch)
    return out


@pytest.mark.parametrize("buffer_size,batch_size,drop", [(1, 3, False), (5, 3, False),
                                                         (5, 4, True), (50, 6, False)])
@pytest.mark.parametrize("npc", [0, 2])
def test_elements_of_another_shape_are_kept_whole_and_batched_as_batch_does(
        buffer_size, batch_size, drop, npc):
    # A Python map: the engine sees rows of 2 values, a few of 3 or of another dtype.
    def values(i):
        i = int(i)
        if i % 11 == 4:
            return np.full(3, i, np.float64)
        if i % 13 == 6:
            return np.full(2, i, np.int32)
        return np.full(2, i, np.float64)
    fused, plain_batch = engine_pair(lambda: Dataset.range(40).map(values),
                                     buffer_size, batch_size, drop, npc=npc)
    kind = (0, None)
    assert fused.kernel == "ShuffleBatch"
    got = run_engine(fused, kind)
    assert got == run_engine(plain_batch, kind)
    assert any(b[0] == "InvalidArgumentError" for b in got[0])


def test_strings_and_component_counts_that_change_go_the_slow_way():
    def strings():
        return Dataset.from_tensor_slices((np.arange(12), np.array([b"s%d" % i for i in range(12)])))
    fused, plain_batch = engine_pair(strings, 4, 5, False)
    assert run_engine(fused, (1, None)) == run_engine(plain_batch, (1, None))

    def counts():
        a = Dataset.from_tensor_slices((np.arange(6.0), np.arange(6)))._engine(
            Dataset.range(1)._context())
        b = Dataset.from_tensor_slices(np.arange(6.0))._engine(Dataset.range(1)._context())
        both = _engine.concatenate([a, b])

        class Wrapped:
            def _engine(self, ctx):
                return both

            def _context(self):
                return None
        return Wrapped()
    fused, plain_batch = engine_pair(counts, 3, 4, False)
    got = run_engine(fused, (2, lambda flat: tuple(flat)))
    assert got == run_engine(plain_batch, (2, lambda flat: tuple(flat)))
    assert any(b[0] == "InvalidArgumentError" and "components" in b[1] for b in got[0])


# -- TensorFlow -----------------------------------------------------------------------


@needs_tf
@pytest.mark.parametrize("seed", [0, 7, 2**31 + 5])
@pytest.mark.parametrize("buffer_size,batch_size,drop", [(1, 4, False), (3, 8, False),
                                                         (10, 4, True), (100, 16, False)])
@pytest.mark.parametrize("reshuffle", [True, False])
def test_fused_equals_tf(seed, buffer_size, batch_size, drop, reshuffle):
    def make(lib):
        return mixed(lib, 45).shuffle(buffer_size, seed=seed,
                                      reshuffle_each_iteration=reshuffle).batch(
                                          batch_size, drop_remainder=drop)
    c = make(cv)
    assert kernel(c) == "ShuffleBatch"
    assert run(c, 3) == run_tf(make(tf), 3)  # separate iterators: fresh seeds with reshuffle
    # Epochs inside one iterator. (A second iterator of shuffle().batch().repeat() gets
    # other seeds in TensorFlow than in conveyor, fused or not: tests/test_tf_shuffle.py
    # covers shuffle().repeat() only.)
    assert run(make(cv).repeat(2)) == run_tf(make(tf).repeat(2))


@needs_tf
def test_repeat_before_shuffle_equals_tf():
    def make(lib):
        return lib.data.Dataset.range(25).repeat(3).shuffle(10, seed=11).batch(6)
    assert run(make(cv), 2) == run_tf(make(tf), 2)


@needs_tf
@pytest.mark.parametrize("combo", list(itertools.product([1, 64, 300], [1, 32])))
def test_w6_shapes_equal_tf(combo):
    buffer_size, batch_size = combo
    x = np.random.default_rng(0).random((257, 32), dtype=np.float32)
    y = np.arange(257, dtype=np.int64)

    def make(lib):
        return lib.data.Dataset.from_tensor_slices((x, y)).cache().shuffle(
            buffer_size, seed=1).batch(batch_size, drop_remainder=True)
    assert run(make(cv), 3) == run_tf(make(tf), 3)
