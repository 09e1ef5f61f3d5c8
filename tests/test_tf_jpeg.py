"""conveyor.io.decode_jpeg / decode_image against TensorFlow's, byte for byte.

Every shared test file (baseline, progressive, grayscale, Adobe CMYK,
arithmetic-coded, 4:2:0 and 4:4:4, and a truncated progressive file) with
every combination of channels 0/1/3, ratio 1/2/4/8, fancy_upscaling and the
three dct_method values gives the same pixels, or the same error type, as
tf.io.decode_jpeg. So do damaged copies (truncations, flipped and replaced
bytes, zeroed runs) with try_recover_truncated and acceptable_fraction.

Not compared: damaged data on which TensorFlow's recovery loops forever
(see test_jpeg.py::test_damage_that_makes_tensorflow_loop_forever_ends);
the recovery cases below are a fixed set on which it returns.
"""
import itertools
import os
import random

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402

from _jpeg_files import ALL, GOOD, damaged, needs_files, read  # noqa: E402

pytestmark = needs_files

COMBOS = [dict(channels=c, ratio=r, fancy_upscaling=f, dct_method=d)
          for c, r, f, d in itertools.product([0, 1, 3], [1, 2, 4, 8], [True, False],
                                              ["", "INTEGER_FAST", "INTEGER_ACCURATE"])]


def outcome(fn, *args, **kwargs):
    """The decoded array, or the name of the error type."""
    try:
        out = fn(*args, **kwargs)
    except (tf.errors.OpError, cv.errors.OpError) as e:
        return type(e).__name__
    return out.numpy() if hasattr(out, "numpy") else out


def assert_same(data, label, **kw):
    want = outcome(tf.io.decode_jpeg, data, **kw)
    got = outcome(cv.io.decode_jpeg, data, **kw)
    if isinstance(want, str) or isinstance(got, str):
        assert got == want, (label, kw)
        return isinstance(want, str)
    assert got.shape == want.shape, (label, kw)
    if not np.array_equal(got, want):
        diff = np.abs(got.astype(int) - want.astype(int))
        pytest.fail(f"{label} {kw}: {int((diff > 0).sum())} values differ, by up to "
                    f"{int(diff.max())}")
    return False


@pytest.mark.parametrize("path", ALL, ids=os.path.basename)
def test_every_option_matches_tensorflow(path):
    data = read(path)
    recover = [False, True] if "truncated" in path else [False]
    for kw, rec in itertools.product(COMBOS, recover):
        assert_same(data, os.path.basename(path), try_recover_truncated=rec, **kw)


def test_the_expected_failures_match():
    # CMYK has no grayscale conversion; the truncated progressive file needs recovery.
    cmyk = [p for p in ALL if "cmyk" in p]
    assert assert_same(read(cmyk[0]), "cmyk", channels=1)
    truncated = [p for p in ALL if "truncated" in p]
    assert assert_same(read(truncated[0]), "truncated")
    assert not assert_same(read(truncated[0]), "truncated", try_recover_truncated=True)


@pytest.mark.parametrize("seed", [0, 1])
def test_damaged_data_matches_tensorflow(seed):
    """Damaged copies of every file, random options: the same pixels or the same error."""
    rng = random.Random(seed)
    errors = decoded = 0
    for path in ALL:
        data = read(path)
        for _ in range(30):
            bad, how = damaged(data, rng)
            kw = dict(channels=rng.choice([0, 1, 3]), ratio=rng.choice([1, 1, 2, 4, 8]),
                      fancy_upscaling=rng.random() < 0.7,
                      acceptable_fraction=rng.choice([1.0, 1.0, 0.5, 0.0]),
                      dct_method=rng.choice(["", "INTEGER_ACCURATE"]))
            failed = assert_same(bad, f"{os.path.basename(path)} {how}", **kw)
            errors += failed
            decoded += not failed
    assert errors and decoded


# Recovery cases (try_recover_truncated=True) checked to return in TensorFlow.
RECOVERY_SEEDS = [10, 11]


@pytest.mark.parametrize("seed", RECOVERY_SEEDS)
def test_recovery_matches_tensorflow(seed):
    rng = random.Random(seed)
    for path in GOOD:
        data = read(path)
        for _ in range(20):
            bad, how = damaged(data, rng)
            kw = dict(channels=rng.choice([0, 3]), ratio=rng.choice([1, 2, 8]),
                      fancy_upscaling=rng.random() < 0.7,
                      acceptable_fraction=rng.choice([1.0, 0.5]))
            assert_same(bad, f"{os.path.basename(path)} {how}", try_recover_truncated=True,
                        **kw)


def test_truncations_and_acceptable_fraction_match_tensorflow():
    data = read([p for p in GOOD if "testorig" in p][0])
    for n in range(200, len(data), 331):
        for fraction in (1.0, 0.5, 0.0):
            assert_same(data[:n], f"testorig[:{n}]", acceptable_fraction=fraction)
        assert_same(data[:n], f"testorig[:{n}]", try_recover_truncated=True)


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "float32", "float64", "int32"])
def test_decode_image_matches_tensorflow(dtype):
    for path in GOOD:
        data = read(path)
        for channels in (None, 3):
            want = tf.io.decode_image(data, channels=channels, dtype=getattr(tf, dtype)).numpy()
            got = cv.io.decode_image(data, channels=channels, dtype=getattr(cv, dtype))
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want, err_msg=f"{path} {channels}")


@pytest.mark.parametrize("blob", [b"", b"abc", b"\xff\xd8\xff", b"\xff\xd8\xff\xe0" + bytes(20)])
def test_invalid_data_raises_tensorflows_error_type(blob):
    for tf_fn, cv_fn in ((tf.io.decode_jpeg, cv.io.decode_jpeg),
                         (tf.io.decode_image, cv.io.decode_image)):
        assert outcome(cv_fn, blob) == outcome(tf_fn, blob) == "InvalidArgumentError"


def test_argument_errors_match_tensorflow():
    data = read(GOOD[0])
    for kw in ({"channels": 2}, {"channels": 4}, {"ratio": 3}, {"dct_method": "FLOAT"}):
        assert outcome(cv.io.decode_jpeg, data, **kw) == \
            outcome(tf.io.decode_jpeg, data, **kw) == "InvalidArgumentError"
