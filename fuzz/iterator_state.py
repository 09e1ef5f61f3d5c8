"""Fuzz target: restoring a saved iterator state that was damaged.

Input layout: byte 0 picks the pipeline (PIPELINES[b % n]); the rest is the
engine part of a state (the frames of csrc/core/iterator_state.h, as
``Iterator._save_engine()`` returns them), fed straight to
``Iterator._restore_engine()``: the Python header and its CRC-32 are
skipped, so that mutations reach every kernel's restore.

Checks besides "no crash, only conveyor.errors": a restored iterator yields
elements with the pipeline's structure; a failed restore leaves an iterator
that runs from the start. (A damaged counter that still passes its kernel's
checks may make a restored iterator yield more or other values than the
pipeline has: in use, the CRC-32 of the Python header rejects such bytes.)
"""
import warnings

import numpy as np

import _harness
from _harness import check, outcome, signal

import conveyor as cv
from conveyor import nest

D = cv.data.Dataset


def _pipelines():
    """Pipelines over the kernels that save a position (each kept if it can)."""
    rows = np.arange(40, dtype=np.int32).reshape(20, 2)
    words = np.array([b"a", b"bb", b"", b"dddd"] * 3, dtype=object)
    return [
        lambda: D.range(3, 50, 2).take(20).batch(4),
        lambda: D.from_tensor_slices((rows, words[:12].repeat(2)[:20])).skip(1).shuffle(5, seed=3)
        .batch(3, drop_remainder=True),
        lambda: D.zip((D.range(9), D.range(9).repeat(2))).map(lambda a, b: a + b,
                                                               num_parallel_calls=2).prefetch(2),
        lambda: D.range(6).interleave(lambda x: D.range(x), cycle_length=2, block_length=2),
        lambda: D.range(30).filter(lambda x: x % 3 > 0).repeat(2).shuffle(7).batch(4).prefetch(1),
        lambda: D.range(10).window(3, shift=2).flat_map(lambda w: w),
    ]


def _usable():
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Python maps: TracingWarning
        for make in _pipelines():
            ds = make()
            try:
                it = iter(ds)
                next(it)
                it._save_engine()
            except (cv.errors.OpError, StopIteration):
                continue
            out.append((ds, len(list(ds))))
    return out


PIPELINES = _usable()


def one_input(data):
    if not data or not PIPELINES:
        return
    ds, total = PIPELINES[data[0] % len(PIPELINES)]
    specs = nest.flatten(ds.element_spec)
    it = iter(ds)
    _, error = outcome(lambda: it._restore_engine(bytes(data[1:])))
    got = []

    def read():
        for element in it:
            got.append(element)
            if len(got) > 4 * total + 100:  # a damaged counter: enough seen
                break
    _, read_error = outcome(read)
    signal(f"{data[0] % len(PIPELINES)} {len(got)} {type(error).__name__} "
           f"{type(read_error).__name__}")
    if error is not None:
        check(isinstance(error, (cv.errors.DataLossError, cv.errors.FailedPreconditionError,
                                 cv.errors.InvalidArgumentError, cv.errors.OutOfRangeError)),
              f"{type(error).__name__}: {error}")
        check(len(got) == total or read_error is not None,
              "a failed restore did not leave an iterator at the start")
    for element in got:
        values = nest.flatten(element)
        check(len(values) == len(specs), "element has another structure")


if __name__ == "__main__":
    _harness.main(one_input)
