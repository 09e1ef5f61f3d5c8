"""conveyor.io.decode_png / decode_image on PNG data against TensorFlow's,
value for value.

Files: TensorFlow's own encode_png output (uint8 and uint16, 1 to 4
channels, 1x1 and odd sizes), PIL's (palette with transparency, 1-bit,
interlaced, 16-bit) and hand-made ones (_png_files.py: every bit depth and
color type, tRNS, the five row filters, Adam7, many IDAT chunks). Each is
decoded with every channels/dtype combination, eagerly and in a traced
Dataset.map. Damaged and hostile files (bad CRCs, truncations, huge or zero
dimensions, bad filter bytes, bad Adler-32, random byte flips) give
TensorFlow's outcome: the same pixels or the same error type.
"""
import io
import os
import random
import struct
import zlib

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")

import conveyor as cv  # noqa: E402

from _png_files import SIGNATURE, chunk, chunks, fix_crcs, ihdr, make_png  # noqa: E402

CHANNELS = [0, 1, 3, 4]
DTYPES = ["uint8", "uint16"]


def outcome(fn, *args, **kwargs):
    """The decoded array, or the name of the error type."""
    try:
        out = fn(*args, **kwargs)
    except (tf.errors.OpError, cv.errors.OpError) as e:
        return type(e).__name__
    return np.asarray(out.numpy() if hasattr(out, "numpy") else out)


def assert_same(fn_tf, fn_cv, data, label="", **kw):
    want = outcome(fn_tf, data, **kw)
    got = outcome(fn_cv, data, **kw)
    if isinstance(want, str) or isinstance(got, str):
        assert got == want if isinstance(want, str) else False, (label, kw, want, got)
        return
    assert got.dtype == want.dtype and got.shape == want.shape, (label, kw)
    np.testing.assert_array_equal(got, want, err_msg=f"{label} {kw}")


def assert_png_matches(data, label=""):
    for c in CHANNELS:
        for dt in DTYPES:
            assert_same(tf.io.decode_png, cv.io.decode_png, data, label, channels=c, dtype=dt)
        for dt in ["uint8", "uint16", "float32", "float16"]:
            assert_same(tf.io.decode_image, cv.io.decode_image, data, label, channels=c,
                         dtype=dt)


# -- files ------------------------------------------------------------------------


def tf_encoded():
    rng = np.random.default_rng(0)
    out = []
    for h, w in [(1, 1), (1, 7), (5, 1), (3, 5), (17, 33)]:
        for c in (1, 2, 3, 4):
            for dt in (np.uint8, np.uint16):
                x = rng.integers(0, np.iinfo(dt).max + 1, (h, w, c)).astype(dt)
                out.append((f"tf-{h}x{w}x{c}-{dt.__name__}", tf.io.encode_png(x).numpy()))
    return out


def crafted():
    rng = np.random.default_rng(1)
    out = []
    for bd in (1, 2, 4, 8, 16):
        for il in (False, True):
            s = rng.integers(0, 1 << bd, (9, 11, 1))
            out.append((f"gray{bd}-il{il}", make_png(s, bd, 0, interlace=il,
                                                     filters=(0, 1, 2, 3, 4))))
            key = 3 % (1 << bd)
            s[0, 0, 0] = key
            out.append((f"gray{bd}-trns-il{il}", make_png(s, bd, 0, interlace=il, trns=(0, key),
                                                          filters=(4, 3, 2, 1, 0),
                                                          idat_chunks=3)))
    for bd in (1, 2, 4, 8):
        for il in (False, True):
            n = 1 << bd
            s = rng.integers(0, n, (7, 13, 1))
            pl = rng.integers(0, 256, 3 * max(1, n - 1)).tolist()  # one index past the palette
            out.append((f"pal{bd}-il{il}", make_png(s, bd, 3, plte=pl, interlace=il,
                                                    filters=(1, 4))))
            trns = rng.integers(0, 256, max(1, n // 2)).tolist()
            out.append((f"pal{bd}-trns-il{il}", make_png(s, bd, 3, plte=pl, trns=trns,
                                                         interlace=il, filters=(2, 3))))
    for bd in (8, 16):
        for ct, spp in ((2, 3), (4, 2), (6, 4)):
            for il in (False, True):
                s = rng.integers(0, 1 << bd, (10, 3, spp))
                out.append((f"ct{ct}-{bd}-il{il}", make_png(s, bd, ct, interlace=il,
                                                            filters=(0, 1, 2, 3, 4))))
                if ct == 2:
                    key = sum([[int(v) >> 8, int(v) & 255] for v in s[0, 0]], [])
                    out.append((f"rgb{bd}-trns-il{il}", make_png(s, bd, ct, interlace=il,
                                                                 trns=key, filters=(3,))))
    s = rng.integers(0, 256, (4, 6, 3))
    out.append(("many-idat", make_png(s, 8, 2, idat_chunks=40)))
    out.append(("ancillary-chunks", make_png(s, 8, 2, before_idat=chunk(b"gAMA", b"\0\0\xb1\x8f"),
                                             after_idat=chunk(b"tEXt", b"k\0v"))))
    out.append(("bad-crc-ancillary", make_png(s, 8, 2, before_idat=chunk(b"tEXt", b"k\0v", 1))))
    out.append(("trailing-bytes", make_png(s, 8, 2) + b"junk"))
    out.append(("extra-image-data", make_png(s[:3], 8, 2, raw=make_png and
                                             __import__("_png_files").raw_rows(s, 8, 2))))
    return out


def pil_files():
    Image = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(2)

    def save(img, **kw):
        b = io.BytesIO()
        img.save(b, format="PNG", **kw)
        return b.getvalue()

    out = []
    p = Image.fromarray(rng.integers(0, 6, (9, 10)).astype(np.uint8), "L").convert("P")
    p.putpalette(rng.integers(0, 256, 768).tolist())
    out.append(("pil-palette-transparency", save(p, transparency=bytes([10, 200, 0, 255]))))
    out.append(("pil-palette-one-transparent", save(p, transparency=3)))
    out.append(("pil-palette-2bit", save(p, bits=2)))
    out.append(("pil-palette-4bit", save(p, bits=4)))
    out.append(("pil-1bit", save(Image.fromarray(rng.integers(0, 2, (5, 13)).astype(bool)))))
    rgb = Image.fromarray(rng.integers(0, 256, (19, 23, 3)).astype(np.uint8))
    out.append(("pil-rgb-interlaced", save(rgb, interlace=1)))
    out.append(("pil-rgb-transparent", save(rgb, transparency=(1, 2, 3))))
    out.append(("pil-la", save(Image.fromarray(rng.integers(0, 256, (6, 7, 2)).astype(np.uint8),
                                               "LA"))))
    out.append(("pil-rgba-interlaced", save(
        Image.fromarray(rng.integers(0, 256, (12, 9, 4)).astype(np.uint8)), interlace=1)))
    out.append(("pil-gray16", save(Image.fromarray(rng.integers(0, 65536, (5, 6))
                                                   .astype(np.uint16)))))
    return out


TF_FILES = tf_encoded()
CRAFTED = crafted()


@pytest.mark.parametrize("label,data", TF_FILES, ids=[n for n, _ in TF_FILES])
def test_tensorflow_encoded_pngs_match(label, data):
    assert_png_matches(data, label)


@pytest.mark.parametrize("label,data", CRAFTED, ids=[n for n, _ in CRAFTED])
def test_every_bit_depth_color_type_filter_and_interlace_matches(label, data):
    assert_png_matches(data, label)


def test_pil_pngs_match():
    for label, data in pil_files():
        assert_png_matches(data, label)


def test_interlaced_equals_plain():
    x = np.random.default_rng(3).integers(0, 256, (13, 17, 3)).astype(np.uint8)
    for il in (False, True):
        np.testing.assert_array_equal(cv.io.decode_png(make_png(x, 8, 2, interlace=il)), x)


def test_known_conversions():
    # gray from RGB: libpng's coefficients, truncated at 8 bits, rounded at 16
    x = np.array([[[255, 3, 4], [200, 100, 50]]], np.uint8)
    assert np.asarray(cv.io.decode_png(tf.io.encode_png(x).numpy(), channels=1)).ravel().tolist() \
        == [78, 124]
    # 16 -> 8 keeps the high byte; 8 -> 16 is * 257
    v = np.array([[[0x12ff], [0xff00]]], np.uint16)
    assert np.asarray(cv.io.decode_png(tf.io.encode_png(v).numpy())).ravel().tolist() == [0x12, 0xff]
    b = np.array([[[1], [255]]], np.uint8)
    assert np.asarray(cv.io.decode_png(tf.io.encode_png(b).numpy(), dtype="uint16")).ravel() \
        .tolist() == [257, 65535]


def test_gamma_chunks_change_the_gray_of_8_bit_color_images_as_in_tensorflow():
    # libpng converts RGB to gray through the file's gamma (gAMA, or sRGB's)
    rng = np.random.default_rng(6)
    for extra in [chunk(b"gAMA", struct.pack(">I", 45455)), chunk(b"gAMA", struct.pack(">I", 90000)),
                  chunk(b"gAMA", struct.pack(">I", 220000)), chunk(b"sRGB", b"\0"),
                  chunk(b"gAMA", struct.pack(">I", 0)) + chunk(b"sRGB", b"\0"),
                  chunk(b"gAMA", struct.pack(">I", 100000)) + chunk(b"sRGB", b"\1")]:
        for ct, spp in ((2, 3), (6, 4)):
            data = make_png(rng.integers(0, 256, (16, 16, spp)), 8, ct, before_idat=extra)
            for dt in DTYPES:
                assert_same(tf.io.decode_png, cv.io.decode_png, data, channels=1, dtype=dt)
        data = make_png(rng.integers(0, 16, (8, 8, 1)), 4, 3, plte=rng.integers(0, 256, 48).tolist())
        data = data[:33] + extra + data[33:]  # before PLTE
        assert_same(tf.io.decode_png, cv.io.decode_png, data, channels=1)


@pytest.mark.parametrize("sbit", [None, (16, 16, 16), (12, 10, 11), (4, 4, 4), (0, 5, 5)])
def test_gamma_and_sbit_change_the_gray_of_16_bit_color_images_as_in_tensorflow(sbit):
    rng = np.random.default_rng(9)
    for g in (45455, 220000, 30000):
        for ct, spp in ((2, 3), (6, 4)):
            s = rng.integers(0, 65536, (12, 12, spp))
            s[:4, :, 1] = s[:4, :, 2] = s[:4, :, 0]  # gray pixels take another path
            extra = chunk(b"gAMA", struct.pack(">I", g))
            if sbit:
                extra += chunk(b"sBIT", bytes(sbit + ((16,) if ct == 6 else ())))
            data = make_png(s, 16, ct, before_idat=extra)
            for dt in DTYPES:
                assert_same(tf.io.decode_png, cv.io.decode_png, data, channels=1, dtype=dt)


def test_decode_jpeg_decodes_png_and_decode_png_decodes_jpeg_as_tensorflow():
    x = np.random.default_rng(4).integers(0, 256, (6, 5, 3)).astype(np.uint8)
    rgba = make_png(np.dstack([x, x[..., :1]]), 8, 6)
    for c in (0, 1, 3, 4):
        assert_same(tf.io.decode_jpeg, cv.io.decode_jpeg, rgba, channels=c)
    jpeg = tf.io.encode_jpeg(x).numpy()
    for c in (0, 1, 3, 4):
        assert_same(tf.io.decode_png, cv.io.decode_png, jpeg, channels=c)


# -- traced --------------------------------------------------------------------------


def test_traced_map_equals_eager_and_tensorflow():
    files = [d for _, d in TF_FILES[::3] + CRAFTED[::2]]
    for kw in [dict(channels=3), dict(channels=4, dtype="uint16"), dict(channels=1)]:
        ds = cv.data.Dataset.from_tensor_slices(files).map(
            lambda s: cv.io.decode_png(s, **kw), num_parallel_calls=2)
        assert "mode=native" in repr(ds)
        spec = ds.element_spec
        assert spec.shape.as_list() == [None, None, kw["channels"]]
        got = list(ds)
        assert len(got) == len(files)
        for data, image in zip(files, got):
            np.testing.assert_array_equal(image, tf.io.decode_png(data, **kw).numpy())
            np.testing.assert_array_equal(image, cv.io.decode_png(data, **kw))
    ds = cv.data.Dataset.from_tensor_slices(files).map(
        lambda s: cv.io.decode_image(s, channels=3, dtype="float32", expand_animations=False))
    assert "mode=native" in repr(ds)
    for data, image in zip(files, ds):
        np.testing.assert_array_equal(
            image, tf.io.decode_image(data, channels=3, dtype=tf.float32).numpy())


def test_pipeline_error_names_the_problem_and_ignore_errors_skips():
    good = TF_FILES[5][1]
    bad = bytearray(good)
    bad[-20] ^= 0xFF
    blobs = [good, bytes(bad), good[:40], good]
    ds = cv.data.Dataset.from_tensor_slices(blobs).map(cv.io.decode_png, num_parallel_calls=2)
    it = iter(ds)
    next(it)
    with pytest.raises(cv.errors.InvalidArgumentError, match="Invalid PNG"):
        next(it)
    ok = list(cv.data.Dataset.from_tensor_slices(blobs).map(cv.io.decode_png).ignore_errors())
    assert len(ok) == 2


# -- errors --------------------------------------------------------------------------


def hostile():
    x = np.random.default_rng(5).integers(0, 256, (6, 5, 3)).astype(np.uint8)
    good = make_png(x, 8, 2)
    idat = [c for c in chunks(good) if c[2] == b"IDAT"][0]
    pos, n, _ = idat
    raw = bytes().join(b"\0" + x[r].tobytes() for r in range(6))
    rest = good[33:]

    def with_raw(raw, z=None):
        return SIGNATURE + ihdr(5, 6) + chunk(b"IDAT", zlib.compress(raw) if z is None else z) \
            + chunk(b"IEND", b"")

    def flip(data, at):
        b = bytearray(data)
        b[at] ^= 0x55
        return bytes(b)

    def small_window(z):
        # the header says a 256-byte window; the data refers further back
        flg = z[1] & 0xE0
        flg |= (31 - (0x08 * 256 + flg) % 31) % 31
        return bytes([0x08, flg]) + z[2:]

    row = np.random.default_rng(10).integers(0, 256, 300).astype(np.uint8).tobytes()
    wide_rows = (b"\0" + row) * 20  # repeats 301 bytes back

    plte = chunk(b"PLTE", bytes(range(12)))
    bad_adler = bytearray(zlib.compress(raw))
    bad_adler[-1] ^= 1
    return {
        "good": good,
        "ihdr-crc": flip(good, 29),
        "idat-crc": flip(good, pos + 8 + n + 1),
        "idat-data-flip": flip(good, pos + 8 + n // 2),
        "truncated-idat": good[:pos + 8 + n // 2],
        "truncated-after-idat": good[:pos + 12 + n + 4],
        "no-iend": good[:-12],
        "signature-only": SIGNATURE,
        "signature-damaged": flip(good, 3),
        "huge-dims": SIGNATURE + ihdr(100000, 100000) + rest,
        "too-large-for-int": SIGNATURE + ihdr(30000, 30000) + rest,
        "max-dims": SIGNATURE + ihdr(2**31 - 1, 1) + rest,
        "dims-past-2-31": SIGNATURE + ihdr(2**31, 1) + rest,
        "zero-width": SIGNATURE + ihdr(0, 6) + rest,
        "zero-height": SIGNATURE + ihdr(5, 0) + rest,
        "bad-bit-depth": SIGNATURE + ihdr(5, 6, bit_depth=3) + rest,
        "bad-color-type": SIGNATURE + ihdr(5, 6, color_type=5) + rest,
        "bad-interlace": SIGNATURE + ihdr(5, 6, interlace=2) + rest,
        "bad-compression": SIGNATURE + ihdr(5, 6, compression=1) + rest,
        "fewer-rows-than-declared": SIGNATURE + ihdr(5, 7) + rest,
        "more-rows-than-declared": SIGNATURE + ihdr(5, 5) + rest,
        "bad-filter-byte": with_raw(bytes([7]) + raw[1:]),
        "bad-adler": with_raw(raw, bytes(bad_adler)),
        "truncated-zlib-stream": with_raw(raw, zlib.compress(raw)[:-4]),
        "extra-raw-data": with_raw(raw + bytes(16)),
        "not-zlib": with_raw(raw, raw),
        "distance-past-declared-window": SIGNATURE + ihdr(100, 20) + chunk(
            b"IDAT", small_window(zlib.compress(wide_rows, 9))) + chunk(b"IEND", b""),
        "declared-window-large-enough": SIGNATURE + ihdr(100, 20) + chunk(
            b"IDAT", zlib.compress(wide_rows, 9)) + chunk(b"IEND", b""),
        "no-idat": SIGNATURE + ihdr(5, 6) + chunk(b"IEND", b""),
        "palette-without-plte": make_png(np.zeros((2, 2, 1), int), 8, 3),
        "unknown-critical-chunk": make_png(x, 8, 2, before_idat=chunk(b"ABCD", b"x")),
        "chunk-length-huge": good[:33] + struct.pack(">I", 0xFFFFFFF0) + good[37:],
        "rgb-two-plte": make_png(x, 8, 2, before_idat=plte + plte),
        "rgb-plte-after-idat": make_png(x, 8, 2, after_idat=plte),
        "rgb-plte-before-and-after-idat": make_png(x, 8, 2, before_idat=plte, after_idat=plte),
        "rgb-plte-bad-length": make_png(x, 8, 2, before_idat=chunk(b"PLTE", bytes(4))),
        "rgb-plte-empty": make_png(x, 8, 2, before_idat=chunk(b"PLTE", b"")),
        "gray-plte-bad-length": make_png(x[..., :1], 8, 0, before_idat=chunk(b"PLTE", bytes(4))),
        "gray-two-plte": make_png(x[..., :1], 8, 0, before_idat=plte + plte),
        "palette-plte-after-idat": make_png(x[..., :1] % 4, 8, 3, plte=list(range(12)),
                                            after_idat=plte),
        "palette-plte-bad-length": make_png(x[..., :1] % 4, 8, 3, plte=[1, 2, 3, 4]),
        "palette-plte-empty": make_png(x[..., :1] % 4, 8, 3, plte=[]),
        "ihdr-after-idat": make_png(x, 8, 2, after_idat=good[8:33]),
        "gray-trns-key-past-bit-depth": make_png(x[..., :1] % 4, 2, 0, trns=(0x86, 0x03)),
        "gray8-trns-key-past-bit-depth": make_png(x[..., :1], 8, 0, trns=(0x71, x[0, 0, 0])),
        "rgb8-trns-key-past-bit-depth": make_png(x, 8, 2, trns=sum(([7, int(v)] for v in x[1, 1]), [])),
        "empty": b"",
        "not-an-image": b"hello world, this is no image",
    }


HOSTILE = hostile()


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_files_match_tensorflow(name):
    data = HOSTILE[name]
    for c in (0, 3, 4):
        assert_same(tf.io.decode_png, cv.io.decode_png, data, name, channels=c)
    assert_same(tf.io.decode_image, cv.io.decode_image, data, name)


def test_errors_say_what_is_wrong():
    cases = {"ihdr-crc": "CRC error in chunk IHDR", "idat-crc": "CRC error in chunk IDAT",
             "dims-past-2-31": "image size 2147483648x1",
             "truncated-idat": "ends inside chunk IDAT", "no-iend": "chunk header",
             "bad-filter-byte": "filter value 7",
             "bad-adler": "incorrect data check", "zero-width": "image size 0x6",
             "fewer-rows-than-declared": "not enough image data"}
    for name, text in cases.items():
        with pytest.raises(cv.errors.InvalidArgumentError, match="Invalid PNG") as e:
            cv.io.decode_png(HOSTILE[name])
        assert text in str(e.value), (name, str(e.value))


def test_decompression_bomb_guard():
    x = np.zeros((40, 50, 3), np.uint8)
    data = make_png(x, 8, 2)
    previous = cv.io.set_max_image_pixels(1999)
    try:
        with pytest.raises(cv.errors.InvalidArgumentError, match="50x40 pixels .* exceeds"):
            cv.io.decode_png(data)
        with pytest.raises(cv.errors.InvalidArgumentError, match="exceeds"):
            cv.io.decode_image(data)
        cv.io.set_max_image_pixels(2000)
        assert cv.io.decode_png(data).shape == (40, 50, 3)
    finally:
        cv.io.set_max_image_pixels(previous)


def test_argument_errors_match_tensorflow():
    data = HOSTILE["good"]
    for bad in (2, 5, -1):
        with pytest.raises(cv.errors.InvalidArgumentError):
            cv.io.decode_png(data, channels=bad)
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.io.decode_png(data, channels=bad)
    with pytest.raises(TypeError):
        cv.io.decode_png(data, dtype="float32")
    with pytest.raises(cv.errors.InvalidArgumentError):
        cv.io.decode_png([data, data])


@pytest.mark.parametrize("seed", range(4))
def test_random_damage_never_crashes_and_matches_tensorflow(seed):
    rng = random.Random(seed)
    sources = [d for _, d in TF_FILES[1::4] + CRAFTED[::3]]
    for _ in range(60):
        data = bytearray(rng.choice(sources))
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            data[at] = rng.randrange(256) if rng.random() < 0.5 else data[at] ^ (1 << rng.randrange(8))
        if rng.random() < 0.2:
            data = data[:rng.randrange(len(data) + 1)]
        data = bytes(data)
        # Half the time the CRCs are made right again, so that the damage
        # reaches the zlib stream, the filters and the header fields.
        if rng.random() < 0.5:
            data = fix_crcs(data)
        for kw in (dict(), dict(channels=4, dtype="uint16")):
            assert_same(tf.io.decode_png, cv.io.decode_png, data, f"seed {seed}", **kw)


# -- encode_png ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["uint8", "uint16"])
def test_encode_png_round_trips_through_tensorflow(dtype):
    rng = np.random.default_rng(7)
    for c in (1, 2, 3, 4):
        for h, w in ((1, 1), (7, 13), (40, 33)):
            x = rng.integers(0, np.iinfo(dtype).max + 1, (h, w, c)).astype(dtype)
            x[h // 2:] = x[0, 0]  # flat areas as well as noise
            for level in (-1, 0, 9):
                data = cv.io.encode_png(x, compression=level).numpy()  # bytes, as TensorFlow
                np.testing.assert_array_equal(tf.io.decode_png(data, dtype=dtype).numpy(), x)
                np.testing.assert_array_equal(cv.io.decode_png(data, dtype=dtype), x)


def test_encode_png_traced_and_errors():
    images = np.random.default_rng(8).integers(0, 256, (3, 5, 6, 4)).astype(np.uint8)
    ds = cv.data.Dataset.from_tensor_slices(images).map(
        lambda im: cv.io.decode_png(cv.io.encode_png(im, compression=1), channels=4))
    assert "mode=native" in repr(ds)
    for got, want in zip(ds, images):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError):
        cv.io.encode_png(np.zeros((2, 2, 3), np.float32))
    with pytest.raises(ValueError):
        cv.io.encode_png(np.zeros((2, 2, 5), np.uint8))
    with pytest.raises(ValueError):
        cv.io.encode_png(np.zeros((2, 2, 3), np.uint8), compression=10)
    with pytest.raises(tf.errors.InternalError):
        tf.io.encode_png(np.zeros((0, 5, 3), np.uint8))
    with pytest.raises(cv.errors.InternalError):
        cv.io.encode_png(np.zeros((0, 5, 3), np.uint8))
