"""decode+resize in one pass (options.experimental_optimization.jpeg_scaled_decode):
off, pipelines are bit-identical to the exact path; on, a JPEG decode whose image
only feeds a resize to under half its size decodes at libjpeg's 1/8, 1/4 or 1/2
scale, with the same shapes, dtypes and errors and pixels close to the exact
path's; everything else falls back to the exact path, bit for bit."""
import os

import numpy as np
import pytest

import conveyor as cv
from conveyor import _engine
from conveyor.framework import tracing as _tracing
from conveyor.data.options import BuildContext
from conveyor.data.rewrites import scaled_decode

from _jpeg_files import GOOD, TRUNCATED, damaged_cases, needs_files, read

Dataset = cv.data.Dataset


def options(on):
    o = cv.data.Options()
    o.experimental_optimization.jpeg_scaled_decode = on
    return o


def pipeline(blobs, fn, on, parallel=None):
    ds = Dataset.from_tensor_slices(np.array(blobs, dtype=object))
    ds = ds.map(fn, num_parallel_calls=parallel)
    return ds if on is None else ds.with_options(options(on))


def run(blobs, fn, on, parallel=None):
    return list(pipeline(blobs, fn, on, parallel))


def programs(fn):
    """(exact, fused) programs of `fn` traced on one scalar string."""
    tr, keys, _, _ = _tracing.record(fn, [cv.TensorSpec((), cv.string)], lambda f: f, "fn")
    return tr.compile(keys), tr.compile(keys, passes=(scaled_decode.rewrite,))


def outcome(program, blob, index=0):
    """The program's result on `blob`, or (exception type, message)."""
    try:
        return _engine.run_program(program, [np.array(blob, dtype=object)], 0, index)[0]
    except Exception as e:  # noqa: BLE001 - compared below
        return type(e), str(e)


def image_size(blob):
    return cv.io.decode_jpeg(blob).shape[:2]


def decode_with_hint(blob, hint, **kw):
    """DecodeJpeg with the resize hint the program pass adds (two more ints)."""
    ints = [kw.get("channels", 0), 1, 1, int(kw.get("try_recover_truncated", False)), 0, 0]
    return _engine.run_op("DecodeJpeg", [np.array(blob, dtype=object)], ints + list(hint),
                          [float(kw.get("acceptable_fraction", 1.0))], None, None, 1,
                          (0, 0, 0, 0, 0, 0))[0]


METHODS = [("bilinear", False), ("bilinear", True), ("bicubic", False), ("area", False),
           ("lanczos3", True), ("mitchellcubic", True)]
# Mean |fused - exact| on 0..255 for targets between a quarter and a half of
# the image (measured on these files: at most 4.2 with a filter that averages,
# 7.8 for bilinear/bicubic without antialias, which sample the full-size image
# where the scaled IDCT has averaged it).
BOUND = {True: 5.0, False: 8.5}


# -- the option ---------------------------------------------------------------------


def test_the_option_is_off_by_default_and_other_options_are_unaffected():
    o = cv.data.Options()
    assert o.experimental_optimization.jpeg_scaled_decode is None
    assert BuildContext(True, 0, True).jpeg_scaled_decode is False
    ds = Dataset.range(3)
    assert ds._context().jpeg_scaled_decode is False
    on = ds.with_options(options(True))
    assert on._context().jpeg_scaled_decode is True
    assert on._context()[:6] == ds._context()[:6]
    merged = on.options()
    assert merged.experimental_optimization.jpeg_scaled_decode is True
    assert merged.experimental_optimization.shuffle_and_batch_fusion is None
    assert merged.experimental_optimization.parallel_batch is None
    assert "jpeg_scaled_decode=True" in repr(merged.experimental_optimization)
    with pytest.raises(AttributeError, match="no option"):
        o.experimental_optimization.jpeg_scaled_decoding = True


@needs_files
def test_repr_and_element_spec_do_not_change():
    blob = read(GOOD[0])
    fn = lambda f: cv.image.resize(cv.io.decode_jpeg(f, channels=3), [24, 24])  # noqa: E731
    off, on = pipeline([blob], fn, False), pipeline([blob], fn, True)
    assert repr(on) == repr(off)
    assert on.element_spec == off.element_spec
    assert repr(on._inputs[0]) == repr(pipeline([blob], fn, None))  # the MapDataset


# -- on: close to the exact path ------------------------------------------------------


@needs_files
@pytest.mark.parametrize("method,antialias", METHODS)
@pytest.mark.parametrize("path", GOOD, ids=os.path.basename)
def test_fused_is_close_to_exact_with_the_same_shape_and_dtype(path, method, antialias):
    blob = read(path)
    h, w = image_size(blob)
    errors = []
    for size in ([h // 2 - 1, w // 2 - 1], [h // 3, w // 3], [max(h // 4, 1), w // 3]):
        fn = lambda f: cv.image.resize(cv.io.decode_jpeg(f), size, method=method,  # noqa: E731
                                       antialias=antialias)
        exact = cv.image.resize(cv.io.decode_jpeg(blob), size, method=method, antialias=antialias)
        off, on = run([blob], fn, False)[0], run([blob], fn, True)[0]
        np.testing.assert_array_equal(off, exact)
        assert on.shape == exact.shape and on.dtype == exact.dtype
        errors.append(np.abs(on.astype(np.float64) - exact).mean())
    assert max(errors) < BOUND[antialias or method == "area"], errors
    assert max(errors) > 0  # the scaled decode ran


@needs_files
@pytest.mark.parametrize("path", GOOD, ids=os.path.basename)
def test_the_hint_picks_the_smallest_covering_scale(path):
    blob = read(path)
    h, w = image_size(blob)
    ceil = lambda n, d: -(-n // d)  # noqa: E731
    for th, tw in ((h // 2 - 1, w // 2 - 1), (h // 3, w // 5), (h // 9, w // 9), (1, 1)):
        if th < 1 or tw < 1:
            continue
        m = next(m for m in (1, 2, 4) if ceil(h * m, 8) >= th and ceil(w * m, 8) >= tw)
        got = decode_with_hint(blob, (th, tw))
        assert got.shape[:2] == (ceil(h * m, 8), ceil(w * m, 8)), (th, tw)
    # Not under half in both dimensions: full size, bit for bit.
    full = cv.io.decode_jpeg(blob)
    half_h, half_w = (h + 1) // 2, (w + 1) // 2  # the least that is not under half
    for hint in ((half_h, w // 4), (h // 4, half_w), (h, w), (2 * h, 2 * w), (0, 5), (-1, -1)):
        np.testing.assert_array_equal(decode_with_hint(blob, hint), full)


@needs_files
@pytest.mark.parametrize("path", [p for p in GOOD if "cmyk" not in p], ids=os.path.basename)
def test_grayscale_channels_and_decode_image_dtypes(path):
    # (libjpeg does not convert CMYK to grayscale: channels=1 fails there either way.)
    blob = read(path)
    h, w = image_size(blob)
    size = [h // 3, w // 3]
    image = lambda f, **kw: cv.io.decode_image(f, expand_animations=False, **kw)  # noqa: E731
    cases = [  # (fn, scale of the values, filters)
        (lambda f: cv.image.resize(cv.io.decode_jpeg(f, channels=1), size), 1, False),
        (lambda f: cv.image.resize(cv.io.decode_jpeg(f, channels=3), size, antialias=True), 1,
         True),
        (lambda f: cv.image.resize(image(f), size), 1, False),
        (lambda f: cv.image.resize(image(f, channels=3, dtype=cv.float32), size), 1 / 255, False),
        (lambda f: cv.image.resize(image(f, channels=1, dtype=cv.uint16), size, method="area"),
         256, True),
        (lambda f: cv.image.resize(cv.image.decode_jpeg(f), size, method="area"), 1, True),
    ]
    for fn, scale, filters in cases:
        (off,), (on,) = run([blob], fn, False), run([blob], fn, True)
        assert off.shape == on.shape and off.dtype == on.dtype
        assert 0 < np.abs(off.astype(np.float64) - on).mean() / scale < BOUND[filters]


@needs_files
def test_parallel_and_batched_pipelines_give_the_sequential_results():
    blobs = [read(p) for p in GOOD] * 3
    fn = lambda f: cv.image.resize(cv.io.decode_jpeg(f, channels=3), [30, 40])  # noqa: E731
    sequential = np.stack(run(blobs, fn, True))
    parallel = np.stack(run(blobs, fn, True, parallel=3))
    np.testing.assert_array_equal(parallel, sequential)
    # with_options at the end of the pipeline reaches the map below the batch.
    ds = Dataset.from_tensor_slices(np.array(blobs, dtype=object)).map(fn, num_parallel_calls=2)
    batched = np.concatenate(list(ds.batch(4).with_options(options(True))))
    np.testing.assert_array_equal(batched, sequential)
    unfused = np.concatenate(list(ds.batch(4)))
    assert not np.array_equal(unfused, sequential)


# -- what falls back to the exact path, bit for bit ----------------------------------


def _same(fn, blobs):
    for a, b in zip(run(blobs, fn, False), run(blobs, fn, True), strict=True):
        if isinstance(a, tuple):
            for x, y in zip(a, b, strict=True):
                np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_array_equal(a, b)


@needs_files
@pytest.mark.parametrize("path", GOOD, ids=os.path.basename)
def test_a_target_not_under_half_is_exact(path):
    blob = read(path)
    h, w = image_size(blob)
    half_h, half_w = (h + 1) // 2, (w + 1) // 2  # the least that is not under half
    for size in ([half_h, half_w], [h // 4, half_w], [half_h, w // 4], [h - 1, w // 4],
                 [2 * h, 2 * w]):
        _same(lambda f: cv.image.resize(cv.io.decode_jpeg(f), size), [blob])  # noqa: B023


@needs_files
def test_programs_the_pass_does_not_change_are_exact():
    blobs = [read(p) for p in GOOD]
    small = [12, 12]
    decode = cv.io.decode_jpeg
    cases = {
        "nearest": lambda f: cv.image.resize(decode(f), small, method="nearest"),
        "preserve_aspect_ratio": lambda f: cv.image.resize(decode(f), small,
                                                           preserve_aspect_ratio=True),
        "ratio": lambda f: cv.image.resize(decode(f, ratio=2), small),
        "image also returned": lambda f: (lambda x: (x, cv.image.resize(x, small)))(decode(f)),
        "image used twice": lambda f: (lambda x: cv.image.resize(x, small) +
                                       cv.image.resize(x, [12, 12], method="area"))(decode(f)),
        "an op between": lambda f: cv.image.resize(cv.image.flip_left_right(decode(f)), small),
        "decode_image to float64": lambda f: cv.image.resize(
            cv.io.decode_image(f, dtype=cv.float64, expand_animations=False), small),
    }
    for name, fn in cases.items():
        _same(fn, blobs)
        exact, fused = programs(fn)
        for blob in blobs[:2]:
            a, b = outcome(exact, blob), outcome(fused, blob)
            np.testing.assert_array_equal(a, b, err_msg=name)


def test_the_pass_hints_only_a_decode_that_feeds_one_resize():
    spec = [cv.TensorSpec((), cv.string)]

    def hinted(fn):
        tr, keys, _, _ = _tracing.record(fn, spec, lambda f: f, "fn")
        before = tr.nodes
        after = scaled_decode.rewrite(before, keys)
        assert len(after) == len(before)
        assert all(a[1] == b[1] and a[3:] == b[3:] for a, b in zip(after, before))  # ids kept
        # The attributes the pass added to each node, in the order it added them.
        return [tuple(v for k, v in a[2].items() if k not in b[2])
                for a, b in zip(after, before) if a[2] != b[2]]

    d, r = cv.io.decode_jpeg, cv.image.resize
    assert hinted(lambda f: r(d(f), [10, 20])) == [(10, 20)]
    assert hinted(lambda f: r(d(f), [10, 20], antialias=True) / 255.0) == [(10, 20)]
    assert hinted(lambda f: r(cv.io.decode_image(f, expand_animations=False), [7, 9],
                              method="bicubic")) == [(7, 9)]
    assert hinted(lambda f: (r(d(f), [5, 5]), r(d(f), [6, 6], method="area"))) == [(5, 5),
                                                                                  (6, 6)]
    assert hinted(lambda f: r(d(f), [10, 20], method="nearest")) == []
    assert hinted(lambda f: r(d(f), [10, 20], preserve_aspect_ratio=True)) == []
    assert hinted(lambda f: r(d(f, ratio=4), [10, 20])) == []
    assert hinted(lambda f: (lambda x: (r(x, [4, 4]), x))(d(f))) == []
    assert hinted(lambda f: (lambda x: (r(x, [4, 4]), r(x, [4, 4])))(d(f))) == []
    assert hinted(lambda f: r(cv.cast(d(f), cv.float32), [4, 4])) == []
    # a size read per element (the resize's second input) is no hint
    assert hinted(lambda f: r(d(f), cv.stack([cv.strings.length(f) // 64] * 2))) == []


# -- errors: the exact path's ---------------------------------------------------------


@needs_files
@pytest.mark.parametrize("kw", [{}, {"try_recover_truncated": True},
                                {"acceptable_fraction": 0.5}], ids=str)
def test_truncated_data_gives_the_exact_outcome(kw):
    blobs = [read(p) for p in TRUNCATED]
    for p in GOOD:
        data = read(p)
        blobs += [data[:len(data) // 2], data[:len(data) * 9 // 10], data[:-2]]
    fn = lambda f: cv.image.resize(cv.io.decode_jpeg(f, **kw), [9, 11])  # noqa: E731
    exact, fused = programs(fn)
    failures = 0
    for i, blob in enumerate(blobs):
        a, b = outcome(exact, blob, i), outcome(fused, blob, i)
        if isinstance(a, tuple):
            failures += 1
            assert a == b
        else:
            np.testing.assert_array_equal(a, b)  # decoded again at full size
    assert failures > 0 or kw


@needs_files
def test_damaged_data_fails_with_the_same_type_and_message():
    fn = lambda f: cv.image.resize(cv.io.decode_jpeg(f, channels=3), [10, 10])  # noqa: E731
    exact, fused = programs(fn)
    failures = 0
    for i, (blob, how) in enumerate(damaged_cases(GOOD, 25, seed=11)):
        a, b = outcome(exact, blob, i), outcome(fused, blob, i)
        if isinstance(a, tuple) or isinstance(b, tuple):
            failures += 1
            assert a == b, how
        else:
            assert a.shape == b.shape and a.dtype == b.dtype, how
    assert failures > 10


@needs_files
def test_pipeline_errors_name_the_same_element():
    good = read(GOOD[0])
    blobs = [good, good, read(TRUNCATED[0]), b"not a jpeg", good[:200]]
    fn = lambda f: cv.image.resize(cv.io.decode_jpeg(f, channels=3), [8, 8])  # noqa: E731
    for bad in range(2, len(blobs)):
        seen = []
        for on in (False, True):
            it = iter(pipeline(blobs[:2] + [blobs[bad]], fn, on))
            next(it), next(it)
            with pytest.raises(cv.errors.InvalidArgumentError) as e:
                next(it)
            seen.append(str(e.value))
        assert seen[0] == seen[1]
        assert "(element 2), in DecodeJpeg" in seen[0]
