"""Fuzz target: the conveyor.strings split, decode, number and hash ops on
arbitrary bytes.

Input layout: byte 0 and byte 1 are flags, the rest is the string (for a
split on a separator, its first 1-4 bytes are the separator).

  byte 0 bits 0-2  the op: split on whitespace, split on a separator,
                   bytes_split, unicode_decode, unicode_split, to_number,
                   a hash bucket op, split then index the pieces
  byte 0 bits 3-5  the op's variant: errors mode and replace_control_characters
                   (decode), out_type (to_number), hash kind, separator length
  byte 0 bit 7     run the op inside Dataset.map (the traced native program) too
  byte 1           maxsplit (byte 1 % 8 - 2) or num_buckets (a table)

Checks besides "no crash, only conveyor.errors": splits equal Python's
bytes.split (which has TensorFlow's rules when maxsplit < 0 or a separator
is given); bytes_split gives the bytes; unicode_decode and unicode_split with
the default replacement equal Python's UTF-8 decoder with the same errors
mode (both replace each maximal invalid subpart); integers parse exactly
when they are an optional sign and digits in range between ASCII blanks;
hash buckets are in range; the traced result equals the eager one.
"""
import re

import numpy as np

import _harness
from _harness import check, outcome, signal

import conveyor as cv

S = cv.strings
ERRORS = ("strict", "replace", "ignore", "replace")
TYPES = (cv.float32, cv.float64, cv.int32, cv.int64, cv.uint32, cv.uint64, cv.float32, cv.int64)
BUCKETS = (1, 2, 3, 10, 1000, 2 ** 31, 2 ** 62, 2 ** 63 - 1)
INT_RANGE = {"int32": (-2 ** 31, 2 ** 31 - 1), "int64": (-2 ** 63, 2 ** 63 - 1),
             "uint32": (0, 2 ** 32 - 1), "uint64": (0, 2 ** 64 - 1)}
_INT = re.compile(rb"[ \t\n\v\f\r]*([+-]?)([0-9]+)[ \t\n\v\f\r]*\Z")


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f":
        return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    return a.shape == b.shape and a.tolist() == b.tolist()


def _int_reference(body, dtype):
    m = _INT.match(body)
    if not m:
        return None
    value = int(m.group(2)) * (-1 if m.group(1) == b"-" else 1)
    lo, hi = INT_RANGE[dtype.name]
    if m.group(1) == b"-" and lo == 0:
        return None  # unsigned types refuse a minus sign, even on 0
    return value if lo <= value <= hi else None


def one_input(data):
    if len(data) < 2:
        return
    f0, f1, body = data[0], data[1], data[2:]
    op, variant, maxsplit = f0 & 7, (f0 >> 3) & 7, f1 % 8 - 2
    sep = None
    if op == 1:
        k = variant % 4 + 1
        sep, body = body[:k], body[k:]
        if not sep:
            return
    if op in (0, 1):
        def fn(x):
            return S.split(x, sep, maxsplit=maxsplit)
    elif op == 2:
        fn = S.bytes_split
    elif op in (3, 4):
        errors, controls = ERRORS[variant & 3], bool(variant & 4)

        def fn(x):
            if op == 3:
                return S.unicode_decode(x, "UTF-8", errors=errors,
                                        replace_control_characters=controls)
            return S.unicode_split(x, "UTF-8", errors=errors)
    elif op == 5:
        dtype = TYPES[variant]

        def fn(x):
            return S.to_number(x, dtype)
    elif op == 6:
        buckets = BUCKETS[f1 & 7]
        kind = variant % 3

        def fn(x):
            if kind == 0:
                return S.to_hash_bucket_fast(x, buckets)
            if kind == 1:
                return S.to_hash_bucket_strong(x, buckets, [f1, -f0])
            return S.to_hash_bucket(x, buckets)
    else:
        def fn(x):
            parts = S.split(x, body[:1] or b",")
            return parts[0], parts[-1:], parts[::maxsplit or 1]

    result, error = outcome(lambda: fn(body))
    if error is not None:
        signal(f"error {op} {type(error).__name__}")
        check(isinstance(error, cv.errors.InvalidArgumentError), f"{type(error).__name__}: {error}")
    else:
        signal(f"ok {op} {variant}")
    if op in (0, 1, 2, 7):
        check(error is None, f"split {body!r}: {error!r}")
    if op == 0 and maxsplit < 0:
        check(result.tolist() == body.split(), f"split {body!r}: {result!r}")
    elif op == 1:
        check(result.tolist() == body.split(sep, maxsplit), f"split {body!r} on {sep!r}")
    elif op == 2:
        check(result.tolist() == [bytes([c]) for c in body], "bytes_split")
    elif op in (3, 4) and not controls:
        try:
            ref, ref_error = body.decode("utf-8", errors), None
        except UnicodeDecodeError as e:
            ref, ref_error = None, e
        check((ref_error is None) == (error is None), f"{errors} decode: {error!r} / {ref_error!r}")
        if error is None:
            want = [ord(c) for c in ref] if op == 3 else [c.encode("utf-8") for c in ref]
            check(result.tolist() == want, f"{errors} decode of {body!r}: {result!r}")
    elif op == 5 and dtype.is_integer:
        ref = _int_reference(body, dtype)
        check((ref is None) == (error is not None), f"to_number {body!r} {dtype.name}: {error!r}")
        if ref is not None:
            check(int(result) == ref, f"to_number {body!r}: {result!r} != {ref}")
    elif op == 6 and error is None:
        check(0 <= int(result) < buckets, f"bucket {result!r} of {buckets}")

    if f0 & 128:
        ds = cv.data.Dataset.from_tensors(np.array(body, dtype=object)).map(fn)
        got, terror = outcome(lambda: next(iter(ds)))
        check((terror is None) == (error is None),
              f"eager and traced results disagree: {error!r} / {terror!r}")
        if error is None:
            pairs = zip(got, result) if isinstance(result, (list, tuple)) else [(got, result)]
            check(all(_same(a, b) for a, b in pairs), "traced result differs from eager")


if __name__ == "__main__":
    _harness.main(one_input)
