"""extract_jpeg_shape and decode_and_crop_jpeg against TensorFlow's.

Every shared test photo (baseline, progressive, grayscale, Adobe CMYK,
arithmetic-coded, 4:2:0, 4:4:4, and a truncated progressive file) is cropped
with edge windows, 1-pixel windows, the full image and seeded random
windows, with several decode options: the same pixels, or the same error
type, as tf.image.decode_and_crop_jpeg. Invalid windows and non-JPEG data
fail alike. conveyor stops decoding after the window (TensorFlow reads on to
the end of the data), so damage below the window is not compared.
"""
import itertools
import os
import random

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402
from conveyor.framework.tracing import TracingWarning  # noqa: E402

from _jpeg_files import ALL, GOOD, TRUNCATED, needs_files, read  # noqa: E402

pytestmark = needs_files


def outcome(fn, *args, **kwargs):
    """The result as NumPy, or the name of the error type."""
    try:
        out = fn(*args, **kwargs)
    except (tf.errors.OpError, cv.errors.OpError) as e:
        return type(e).__name__
    return np.asarray(out.numpy() if hasattr(out, "numpy") else out)


def assert_same(data, window, label, **kw):
    want = outcome(tf.image.decode_and_crop_jpeg, data, window, **kw)
    got = outcome(cv.image.decode_and_crop_jpeg, data, window, **kw)
    if isinstance(want, str) or isinstance(got, str):
        assert got == want, (label, window, kw)
        return want
    assert got.shape == want.shape, (label, window, kw)
    if not np.array_equal(got, want):
        diff = np.abs(got.astype(int) - want.astype(int))
        pytest.fail(f"{label} {window} {kw}: {int((diff > 0).sum())} values differ, by up to "
                    f"{int(diff.max())}")
    return "ok"


def windows(h, w, rng, n=12):
    """Edge, corner, 1-pixel, full and random windows of an h x w image."""
    out = [[0, 0, h, w], [0, 0, 1, 1], [h - 1, w - 1, 1, 1], [0, w - 1, h, 1], [h - 1, 0, 1, w],
           [h // 2, w // 2, h - h // 2, w - w // 2], [1, 1, h - 2, w - 2], [0, 7, 9, 9],
           [h - 17, w - 17, 17, 17], [h // 3, 15, 1, w - 15]]
    for _ in range(n):
        y, x = rng.randrange(h), rng.randrange(w)
        out.append([y, x, rng.randint(1, h - y), rng.randint(1, w - x)])
    return [win for win in out if win[2] > 0 and win[3] > 0 and min(win) >= 0
            and win[0] + win[2] <= h and win[1] + win[3] <= w]


OPTIONS = [dict(), dict(channels=3), dict(channels=1), dict(fancy_upscaling=False),
           dict(dct_method="INTEGER_ACCURATE"), dict(ratio=2, channels=3), dict(ratio=8)]


@pytest.mark.parametrize("path", GOOD, ids=os.path.basename)
def test_windows_match_tensorflow(path):
    data = read(path)
    rng = random.Random(path)
    checked = 0
    for kw in OPTIONS:
        full = outcome(tf.io.decode_jpeg, data, **kw)
        if isinstance(full, str):  # CMYK to grayscale: both refuse
            assert assert_same(data, [0, 0, 1, 1], path, **kw) == full
            continue
        h, w = full.shape[:2]
        for win in windows(h, w, rng):
            assert assert_same(data, win, os.path.basename(path), **kw) == "ok"
            checked += 1
    assert checked >= 60


def test_default_crop_is_decode_then_slice_but_for_the_edge_columns():
    """TensorFlow says decode_and_crop_jpeg equals decode_jpeg then a crop for
    the default options. It does, except at the window's first and last
    columns when they are not the image's: libjpeg-turbo decodes a row cut
    at the window's right edge and widened leftwards to an iMCU boundary, and
    fancy chroma upsampling treats both ends of that row as the image's
    edges. Ours does exactly what TensorFlow's does
    (test_windows_match_tensorflow); full-width windows are exact."""
    for path in GOOD:
        data = read(path)
        full = cv.io.decode_jpeg(data).numpy()
        h, w = full.shape[:2]
        for y, x, ch, cw in windows(h, w, random.Random(1), n=4) + [[h // 3, 0, h // 3, w]]:
            got = cv.image.decode_and_crop_jpeg(data, [y, x, ch, cw]).numpy()
            want = full[y:y + ch, x:x + cw]
            np.testing.assert_array_equal(got[:, 1:-1], want[:, 1:-1], err_msg=path)
            if x == 0 and cw == w:
                np.testing.assert_array_equal(got, want, err_msg=path)


@pytest.mark.parametrize("path", TRUNCATED, ids=os.path.basename)
def test_truncated_file_matches_tensorflow(path):
    data = read(path)
    h, w = cv.io.decode_jpeg(data, try_recover_truncated=True).shape[:2]
    outcomes = set()
    for win in windows(h, w, random.Random(3), n=6):
        for kw in (dict(), dict(try_recover_truncated=True), dict(acceptable_fraction=0.0),
                   dict(try_recover_truncated=True, channels=1)):
            outcomes.add(assert_same(data, win, os.path.basename(path), **kw))
    assert outcomes == {"ok", "InvalidArgumentError"}


@pytest.mark.parametrize("name", ["testorig", "flower"])
def test_truncated_baseline_matches_tensorflow_when_the_window_is_cut(name):
    """Baseline files cut above, inside and below the window: TensorFlow's rows
    or error (data that ends above the window fails without recovery)."""
    data = read([p for p in GOOD if name in p][0])
    h, w = cv.io.decode_jpeg(data).shape[:2]
    seen = set()
    for n in range(300, len(data), len(data) // 25):
        for win in ([h - 40, 0, 40, w], [h // 2, 30, h - h // 2, 60], [h // 3, 8, 20, 20],
                    [0, 0, h // 2, w]):
            for kw in (dict(), dict(acceptable_fraction=0.0), dict(acceptable_fraction=0.5),
                       dict(try_recover_truncated=True)):
                seen.add(assert_same(data[:n], win, f"{name}[:{n}]", **kw))
    assert seen == {"ok", "InvalidArgumentError"}


@pytest.mark.parametrize("window", [[0, 0, 0, 10], [0, 0, 10, 0], [-1, 0, 10, 10],
                                    [0, -1, 10, 10], [120, 0, 10, 10], [0, 120, 10, 10],
                                    [0, 0, 129, 128], [0, 0, 128, 129], [127, 127, 2, 1]])
def test_invalid_windows_raise_like_tensorflow(window):
    data = read([p for p in GOOD if os.path.basename(p) == "hopper.jpg"][0])
    assert assert_same(data, window, "hopper") == "InvalidArgumentError"
    with pytest.raises(cv.errors.InvalidArgumentError, match="crop window"):
        cv.image.decode_and_crop_jpeg(data, window)


def test_window_checks_use_the_scaled_size():
    data = read([p for p in GOOD if os.path.basename(p) == "hopper.jpg"][0])
    assert assert_same(data, [0, 0, 64, 64], "hopper", ratio=2) == "ok"
    assert assert_same(data, [0, 0, 65, 64], "hopper", ratio=2) == "InvalidArgumentError"


def test_non_jpeg_data_and_bad_windows_raise_like_tensorflow():
    data = read(GOOD[0])
    png = tf.io.encode_png(np.zeros((4, 5, 3), np.uint8)).numpy()
    for contents, window in ((png, [0, 0, 2, 2]), (b"xx", [0, 0, 2, 2]), (b"", [0, 0, 1, 1]),
                             (data, [0, 0, 10]), (data, [[0, 0, 10, 10]])):
        assert assert_same(contents, window, "bad") == "InvalidArgumentError"
    with pytest.raises(cv.errors.InvalidArgumentError, match="JPEG only, but detected PNG"):
        cv.image.decode_and_crop_jpeg(png, [0, 0, 2, 2])


@pytest.mark.parametrize("path", ALL, ids=os.path.basename)
def test_extract_jpeg_shape_matches_tensorflow(path):
    data = read(path)
    for dtype in ("int32", "int64"):
        want = tf.image.extract_jpeg_shape(data, output_type=getattr(tf, dtype)).numpy()
        got = np.asarray(cv.image.extract_jpeg_shape(data, output_type=getattr(cv, dtype)))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    # Prefixes: the header alone, as TensorFlow reads it.
    for n in (len(data) // 2, data.find(b"\xff\xda") + 20, 10):
        a, b = (outcome(m.image.extract_jpeg_shape, data[:n]) for m in (tf, cv))
        assert str(a) == str(b), n


@pytest.mark.parametrize("blob", [b"", b"garbage", b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n" + bytes(40)])
def test_extract_jpeg_shape_errors_match_tensorflow(blob):
    assert outcome(cv.image.extract_jpeg_shape, blob) == \
        outcome(tf.image.extract_jpeg_shape, blob) == "InvalidArgumentError"
    header = read(GOOD[0])[:100]
    assert outcome(cv.image.extract_jpeg_shape, header) == \
        outcome(tf.image.extract_jpeg_shape, header)
    assert outcome(cv.image.extract_jpeg_shape, [header]) == \
        outcome(tf.image.extract_jpeg_shape, [header]) == "InvalidArgumentError"


def test_crop_and_shape_trace_in_a_map():
    """Inside Dataset.map both run in the native program (no TracingWarning)."""
    import warnings
    files = [read(p) for p in GOOD]

    def fn(contents):
        shape = cv.image.extract_jpeg_shape(contents)
        window = cv.stack([shape[0] // 4, shape[1] // 4, shape[0] // 2, shape[1] // 2])
        return cv.image.decode_and_crop_jpeg(contents, window, channels=3), shape

    def tf_fn(contents):
        shape = tf.image.extract_jpeg_shape(contents)
        window = tf.stack([shape[0] // 4, shape[1] // 4, shape[0] // 2, shape[1] // 2])
        return tf.image.decode_and_crop_jpeg(contents, window, channels=3), shape

    with warnings.catch_warnings():
        warnings.simplefilter("error", TracingWarning)
        got = list(cv.data.Dataset.from_tensor_slices(files).map(fn, num_parallel_calls=2))
    want = list(tf.data.Dataset.from_tensor_slices(files).map(tf_fn))
    assert len(got) == len(want) == len(files)
    for (gi, gs), (wi, ws) in zip(got, want):
        np.testing.assert_array_equal(np.asarray(gs), ws.numpy())
        np.testing.assert_array_equal(np.asarray(gi), wi.numpy())
