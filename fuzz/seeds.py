"""The seed corpora, generated: ``python3 fuzz/seeds.py DIR`` writes DIR/<target>/*.

Seeds are valid inputs of each target, flag byte(s) first: TFRecord files of
a few records in every compression and mode, Examples of each spec, the
shared test JPEGs (../shared/testdata, found as tests/_jpeg_files.py finds
them) with a few flag combinations, and cache files written by each
cache_reader pipeline. They are generated on every run rather than
committed, so that they follow the formats (a cache file written by this
build) and the repository holds no copies of the test images.
"""
import glob
import os
import shutil
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import cache_reader  # noqa: E402
import iterator_state  # noqa: E402
import example_parser  # noqa: E402
import tfrecord_reader  # noqa: E402
from _jpeg_files import ALL as JPEGS  # noqa: E402
from conveyor.io import Feature, serialize_example  # noqa: E402

CORPUS = None  # set by write()


def put(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def tfrecord_seeds():
    frame = tfrecord_reader.repair
    records = [b"abc", b"", b"0123456789" * 3, bytes(range(40))]
    raw = frame(b"".join(len(r).to_bytes(8, "little") + b"\0" * 4 + r + b"\0" * 4
                         for r in records))
    put("tfrecord_reader", "plain-repaired", bytes([4]) + raw)
    for kind, bits in (("gzip", 1), ("zlib", 2)):
        if bits:
            put("tfrecord_reader", f"{kind}-compressed-here", bytes([bits | 8]) + raw)
            put("tfrecord_reader", f"{kind}-stream-buffer7",
                bytes([bits | 32]) + tfrecord_reader.compress(raw, kind.upper()))
    put("tfrecord_reader", "plain-buffer1-interleaved", bytes([16 | 128]) + raw)
    put("tfrecord_reader", "plain-max64", bytes([64]) + raw)
    put("tfrecord_reader", "torn-header", bytes([0]) + raw[:-20])


def example_seeds():
    ex = [
        serialize_example({"i": 7, "f": [1.0, 2.0], "s": b"hello"}),
        serialize_example({"v": [1, 2, 3], "w": [0.5], "t": [b"a", b"bc"]}),
        serialize_example({"x": [1, 2, 3], "q": [1.0, 2.0, 3.0, 4.0],
                           "y": [b"p", b"q"], "z": Feature(float_list=[])}),
    ]
    for spec, data in enumerate(ex):
        put("example_parser", f"spec{spec}", bytes([spec]) + data)
        put("example_parser", f"spec{spec}-traced-batch2", bytes([spec | 4 | 16]) + data * 2)
    put("example_parser", "spec0-empty-batch4", bytes([12]))


def image_seeds():
    for i, path in enumerate(JPEGS):
        with open(path, "rb") as f:
            data = f.read()
        name = os.path.splitext(os.path.basename(path))[0]
        # Rotate the options over the files so that each appears with a few.
        put("image_decoders", f"{name}", bytes([0, 0]) + data)
        put("image_decoders", f"{name}-opts", bytes([(i * 37) & 0xEF, (i * 3) & 7]) + data)
    if JPEGS:
        with open(JPEGS[0], "rb") as f:
            put("image_decoders", "image-float-traced", bytes([16 | 32 | 3, 4]) + f.read())


def cache_seeds():
    tmp = tempfile.mkdtemp()
    try:
        for which, ds in enumerate(cache_reader.PIPELINES):
            prefix = os.path.join(tmp, f"c{which}")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                list(ds.cache(prefix))
            with open(prefix + ".cvcache", "rb") as f:
                data = f.read()
            put("cache_reader", f"pipeline{which}", bytes([which]) + data)
            put("cache_reader", f"pipeline{which}-repaired", bytes([which | 4]) + data)
    finally:
        shutil.rmtree(tmp)


def iterator_state_seeds():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for which, (ds, total) in enumerate(iterator_state.PIPELINES):
            for k in sorted({0, 1, total // 2, total - 1}):
                it = iter(ds)
                for _ in range(k):
                    next(it)
                put("iterator_state", f"pipeline{which}-at{k}", bytes([which]) + it._save_engine())


def string_seeds():
    texts = [b"", b"a b  c\td ", b" a,b,,c, ", b"1.5e3", b" -42 ", b"0x1p3", b"inf", b"nan(1)",
             b"9223372036854775808", "h\u00e9llo \u20ac\U0001d11e".encode(),
             b"a\xffb\xc3c\xe2\x82d\xed\xa0\x80e\xf4\x90\x80\x80f\xc0\xaf\x01", b"x" * 100]
    for op in range(8):
        for i, text in enumerate(texts):
            variant = i % 8
            body = (b",<>"[: variant % 4 + 1] + text) if op == 1 else text
            put("string_ops", f"op{op}-{i}", bytes([op | variant << 3 | (i % 2) << 7, i]) + body)


def wav_seeds():
    """WAV files the way encoders write them (mono, stereo, an 18-byte fmt
    chunk, a LIST chunk, an odd data length) with each option byte."""
    import struct

    import numpy as np

    def wav(samples, ch=1, fmtsize=16, extra=b"", datalen=None):
        data = np.asarray(samples, "<i2").tobytes()
        fmt = struct.pack("<HHIIHH", 1, ch, 8000, 8000 * ch * 2, ch * 2, 16)
        body = (b"WAVEfmt " + struct.pack("<I", fmtsize) + fmt + b"\0" * (fmtsize - 16) + extra +
                b"data" + struct.pack("<I", len(data) if datalen is None else datalen) + data)
        return b"RIFF" + struct.pack("<I", len(body)) + body

    samples = (np.arange(24) * 2731 - 32768).astype(np.int16)
    files = [wav(samples), wav(samples, ch=2), wav(samples, ch=3, fmtsize=18),
             wav(samples, extra=b"LIST" + struct.pack("<I", 4) + b"info"),
             wav(samples, datalen=15), wav(samples[:0])]
    for i, f in enumerate(files):
        for flags in (0, 16 | 5, 10, 16 | 15):
            put("audio_wav", f"wav{i}-{flags}", bytes([flags]) + f)


def write(root):
    """Write every target's seeds under root/<target>/; returns {target: count}."""
    global CORPUS
    CORPUS = root
    tfrecord_seeds()
    example_seeds()
    image_seeds()  # none when the shared test data is missing
    cache_seeds()
    iterator_state_seeds()
    string_seeds()
    wav_seeds()
    return {t: len(glob.glob(os.path.join(root, t, "*"))) for t in sorted(os.listdir(root))}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for target, count in write(sys.argv[1]).items():
        print(f"{target}: {count} seeds")
