"""Random small pipelines over range() compared against a pure-Python model of tf.data."""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import conveyor as tf

Dataset = tf.data.Dataset
INF, UNK = tf.data.INFINITE_CARDINALITY, tf.data.UNKNOWN_CARDINALITY
CAP = 60  # every pipeline ends with take(CAP) so infinite ones stay finite


# -- the model: a dataset is (factory of a fresh iterator, cardinality) --------------------
# Elements are nested Python lists (ints); errors are ("ERR",) markers in the stream.

ERR = ("ERR",)


def m_range(start, stop, step):
    return (lambda: iter(range(start, stop, step)), len(range(start, stop, step)))


def m_take(ds, c):
    f, n = ds
    if c < 0:
        card = n
    elif n == INF:
        card = c
    else:
        card = min(n, c)

    def it():  # an error is delivered and does not count toward c (tf.data's TakeDataset)
        taken = 0
        for x in f():
            if 0 <= c <= taken:
                return
            yield x
            taken += x is not ERR
    return (it, card)


def m_skip(ds, c):
    f, n = ds
    if n == INF:
        card = INF  # the fuzzer never skips -1 from an infinite input
    elif c < 0:
        card = 0
    else:
        card = max(0, n - c)

    def it():  # errors met while skipping are raised, not skipped (tf.data's SkipDataset)
        skipped = 0
        for x in f():
            if c < 0 or skipped < c:
                if x is ERR:
                    yield ERR
                else:
                    skipped += 1
                continue
            yield x
    return (it, card)


def m_repeat(ds, c):
    f, n = ds
    if c == 0 or n == 0:
        card = 0
    elif c < 0 or n == INF:
        card = INF
    else:
        card = n * c

    def it():
        epoch = 0
        while c < 0 or epoch < c:
            produced = False
            for x in f():
                produced = True
                yield x
            if not produced:
                return
            epoch += 1
    return (it, card)


def _shape(x):
    return np.shape(x)


def m_batch(ds, b, drop):
    f, n = ds
    if n < 0:
        card = n
    else:
        card = n // b if drop else -(-n // b)

    def it():
        src = f()
        while True:
            chunk = []
            for x in src:
                chunk.append(x)
                if x is ERR or len(chunk) == b:
                    break
            if not chunk:
                return
            if chunk[-1] is ERR:
                yield ERR
                continue
            if len(chunk) < b and drop:
                return
            if any(_shape(x) != _shape(chunk[0]) for x in chunk):
                yield ERR
            else:
                yield chunk
            if len(chunk) < b:
                return
    return (it, card)


def _apply(x):
    if isinstance(x, list):
        return [_apply(v) for v in x]
    return x * 3 + 1


def m_map(ds):
    f, n = ds
    return (lambda: (x if x is ERR else _apply(x) for x in f()), n)


def m_prefetch(ds):
    return ds


# -- running conveyor ----------------------------------------------------------------


LIMIT = 3 * CAP  # items (elements and errors) looked at, at most


def run(ds):
    """The first LIMIT items. Errors do not count toward take(CAP) (tf.data's rule), so
    a repeated epoch of nothing but errors is an endless stream: compare prefixes."""
    out = []
    it = iter(ds)
    while len(out) < LIMIT:
        try:
            el = next(it)
        except StopIteration:
            with pytest.raises(StopIteration):
                next(it)
            break
        except tf.errors.InvalidArgumentError:
            out.append(ERR)
        else:
            out.append(np.asarray(el).tolist())
    return out


# -- strategies -------------------------------------------------------------------------

counts = st.integers(min_value=-1, max_value=7)
par = st.sampled_from([None, 1, 2, tf.data.AUTOTUNE])

ops = st.one_of(
    st.tuples(st.just("take"), counts),
    st.tuples(st.just("skip"), counts),
    st.tuples(st.just("repeat"), st.sampled_from([None, -1, 0, 1, 2, 3])),
    st.tuples(st.just("batch"), st.integers(1, 4), st.booleans(), par),
    st.tuples(st.just("map"), par),
    st.tuples(st.just("prefetch"), st.sampled_from([0, 1, 3, tf.data.AUTOTUNE])),
)

sources = st.tuples(st.integers(-5, 5), st.integers(-5, 12),
                    st.sampled_from([1, 2, 3, -1, -2]))


@settings(max_examples=250, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(src=sources, pipeline=st.lists(ops, max_size=6))
def test_random_pipeline_matches_model(src, pipeline):
    start, stop, step = src
    ds = Dataset.range(start, stop, step)
    model = m_range(start, stop, step)
    for op in pipeline:
        kind = op[0]
        if kind == "take":
            ds, model = ds.take(op[1]), m_take(model, op[1])
        elif kind == "skip":
            c = op[1]
            if model[1] == INF and c < 0:
                c = 1  # skip(-1) of an infinite dataset never returns
            ds, model = ds.skip(c), m_skip(model, c)
        elif kind == "repeat":
            c = op[1]
            ds, model = ds.repeat(c), m_repeat(model, -1 if c is None else c)
        elif kind == "batch":
            _, b, drop, npc = op
            ds, model = ds.batch(b, drop_remainder=drop, num_parallel_calls=npc), m_batch(model, b, drop)
        elif kind == "map":
            ds, model = ds.map(lambda x: x * 3 + 1, num_parallel_calls=op[1]), m_map(model)
        elif kind == "prefetch":
            ds, model = ds.prefetch(op[1]), m_prefetch(model)
    assert ds.cardinality() == model[1], f"cardinality before the final take: {pipeline}"
    ds, model = ds.take(CAP), m_take(model, CAP)
    expected = list(itertools.islice(model[0](), LIMIT))
    assert run(ds) == expected
    assert ds.cardinality() == model[1]


@settings(max_examples=60, deadline=None, database=None)
@given(n=st.integers(0, 30), b=st.integers(1, 7), drop=st.booleans(),
       npc=par, map_npc=par, buf=st.sampled_from([None, 0, 2, tf.data.AUTOTUNE]))
def test_map_batch_prefetch_equals_numpy(n, b, drop, npc, map_npc, buf):
    ds = Dataset.from_tensor_slices(np.arange(n * 2, dtype=np.int32).reshape(n, 2))
    ds = ds.map(lambda r: (r, r.sum()), num_parallel_calls=map_npc)
    ds = ds.batch(b, drop_remainder=drop, num_parallel_calls=npc)
    if buf is not None:
        ds = ds.prefetch(buf)
    src = np.arange(n * 2, dtype=np.int32).reshape(n, 2)
    stops = range(0, (n // b) * b if drop else n, b)
    got = list(ds)
    assert len(got) == len(stops) == ds.cardinality()
    for (rows, sums), i in zip(got, stops):
        np.testing.assert_array_equal(rows, src[i:i + b])
        np.testing.assert_array_equal(sums, src[i:i + b].sum(axis=1))
