"""Fuzz target: tf.train.Example parsing (parse_single_example, parse_example).

Input layout: byte 0 is a set of flags, the rest is one serialized Example,
or several (cut into equal parts) for parse_example.

  bits 0-1  the feature spec: SPECS[0..2] (SPECS[0] again for 3)
  bits 2-3  1 + n examples, parsed as one parse_example batch
  bit 4     also parse inside Dataset.map (the traced native program)

Checks besides "no crash, only conveyor.errors": a batch parses exactly when
each of its examples parses alone, and row i of the batch equals example i
parsed alone; the traced parse equals the eager one; results have the
spec's dtypes and shapes.
"""
import numpy as np

import _harness
from _harness import check, outcome, signal

import conveyor as cv
from conveyor.io import (FixedLenFeature, FixedLenSequenceFeature, SparseTensor, VarLenFeature,
                         parse_example, parse_single_example)

I64, F32, STR = cv.int64, cv.float32, cv.string

SPECS = [
    # FixedLen of each type, with defaults.
    {"i": FixedLenFeature([], I64, default_value=-1),
     "f": FixedLenFeature([2], F32, default_value=[0.5, 1.5]),
     "s": FixedLenFeature([], STR, default_value=b"none")},
    # VarLen of each type.
    {"v": VarLenFeature(I64), "w": VarLenFeature(F32), "t": VarLenFeature(STR)},
    # Required features, a sequence feature and a mix.
    {"x": FixedLenFeature([3], I64),
     "q": FixedLenSequenceFeature([2], F32, allow_missing=True),
     "y": FixedLenFeature([2, 1], STR, default_value=[[b"a"], [b"b"]]),
     "z": VarLenFeature(F32)},
]


def same(a, b):
    if isinstance(a, SparseTensor) or isinstance(b, SparseTensor):
        return (isinstance(a, SparseTensor) and isinstance(b, SparseTensor)
                and all(same(x, y) for x, y in zip((a.indices, a.values, a.dense_shape),
                                                    (b.indices, b.values, b.dense_shape))))
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype == object or b.dtype == object or a.dtype.kind == "S" or b.dtype.kind == "S":
        return [bytes(x) for x in a.ravel()] == [bytes(x) for x in b.ravel()]
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()


def check_single(spec, result):
    check(set(result) == set(spec), "keys differ from the spec")
    for key, feature in spec.items():
        value = result[key]
        if isinstance(feature, VarLenFeature):
            check(isinstance(value, SparseTensor), f"{key}: not a SparseTensor")
            n = len(value.values)
            check(np.asarray(value.indices).shape == (n, 1), f"{key}: indices shape")
            check(list(np.asarray(value.dense_shape)) == [n], f"{key}: dense_shape")
            check(list(np.asarray(value.indices).ravel()) == list(range(n)), f"{key}: indices")
        elif isinstance(feature, FixedLenSequenceFeature):
            check(np.shape(value)[1:] == tuple(feature.shape), f"{key}: shape {np.shape(value)}")
        else:
            check(np.shape(value) == tuple(feature.shape), f"{key}: shape {np.shape(value)}")


def row_of(spec, batch, i, single):
    """Whether row `i` of a parse_example result equals `single`."""
    for key, feature in spec.items():
        b, s = batch[key], single[key]
        if isinstance(feature, VarLenFeature):
            idx = np.asarray(b.indices)
            mask = idx[:, 0] == i
            if not same(np.asarray(b.values)[mask], s.values):
                return False
            if list(idx[mask][:, 1]) != list(np.asarray(s.indices)[:, 0]):
                return False
        elif isinstance(feature, FixedLenSequenceFeature):
            rows = np.shape(s)[0]
            if not same(np.asarray(b)[i][:rows], s):
                return False
            if np.any(np.asarray(b)[i][rows:] != 0):
                return False
        elif not same(np.asarray(b)[i], s):
            return False
    return True


def traced(spec, serialized):
    ds = cv.data.Dataset.from_tensors(np.array(serialized, dtype=object))
    return next(iter(ds.map(lambda s: parse_single_example(s, spec))))


def one_input(data):
    if not data:
        return
    flags, body = data[0], data[1:]
    spec = SPECS[(flags & 3) % len(SPECS)]
    n = 1 + ((flags >> 2) & 3)

    single, error = outcome(lambda: parse_single_example(body, spec))
    if error is None:
        check_single(spec, single)
        signal("ok " + " ".join(f"{k}{np.shape(getattr(v, 'values', v))}" for k, v in single.items()))
    else:
        check(isinstance(error, cv.errors.InvalidArgumentError),
              f"{type(error).__name__}: {error}")

    if flags & 16:
        got, terror = outcome(lambda: traced(spec, body))
        check((terror is None) == (error is None),
              f"eager and traced parses disagree: {error!r} / {terror!r}")
        if error is None:
            check(all(same(got[k], single[k]) for k in spec), "traced parse differs from eager")

    step = max(1, -(-len(body) // n))
    parts = [body[k:k + step] for k in range(0, len(body), step)] or [b""]
    batch, berror = outcome(lambda: parse_example(parts, spec))
    alone = [outcome(lambda p=p: parse_single_example(p, spec)) for p in parts]
    failures = [e for _, e in alone if e is not None]
    check((berror is None) == (not failures),
          f"batch {'failed' if berror else 'parsed'} but the examples alone "
          f"{'all parsed' if not failures else 'did not'}: {berror!r}")
    if berror is None:
        for i, (one, _) in enumerate(alone):
            check(row_of(spec, batch, i, one), f"row {i} of the batch differs from example {i} alone")


if __name__ == "__main__":
    _harness.main(one_input)
