"""The real JPEG files of the image tests and deterministic damaged variants.

The files live in the project's shared test data (baseline, progressive,
grayscale, Adobe CMYK, arithmetic-coded, 4:2:0 and 4:4:4 images, and a
truncated progressive file). It is looked up in $CONVEYOR_TESTDATA, then in
``shared/`` beside the repository (where CI puts it), then /work/shared.
"""
import glob
import os
import random

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def jpeg_dir():
    candidates = [os.environ.get("CONVEYOR_TESTDATA", ""),
                  os.path.join(_ROOT, "shared", "testdata"),
                  os.path.join(os.path.dirname(_ROOT), "shared", "testdata"),
                  "/work/shared/testdata"]
    for base in candidates:
        if base and glob.glob(os.path.join(base, "jpeg", "*.jpg")):
            return os.path.join(base, "jpeg")
    return None


JPEG_DIR = jpeg_dir()
ALL = sorted(glob.glob(os.path.join(JPEG_DIR, "*.jpg"))) if JPEG_DIR else []
GOOD = [p for p in ALL if "truncated" not in os.path.basename(p)]
TRUNCATED = [p for p in ALL if "truncated" in os.path.basename(p)]

needs_files = pytest.mark.skipif(not ALL, reason="the shared JPEG test files are not here")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def damaged(data, rng):
    """One damaged copy of `data` (truncated, a bit flipped, bytes replaced or
    zeroed) and a label saying how."""
    out = bytearray(data)
    kind = rng.choice(["truncate", "flip", "replace", "zero"])
    if kind == "truncate":
        n = rng.randrange(1, len(data))
        return bytes(out[:n]), f"truncated to {n}"
    if kind == "flip":
        p, bit = rng.randrange(len(data)), 1 << rng.randrange(8)
        out[p] ^= bit
        return bytes(out), f"bit {bit} flipped at {p}"
    if kind == "replace":
        spots = [rng.randrange(len(data)) for _ in range(rng.randint(2, 20))]
        for p in spots:
            out[p] = rng.randrange(256)
        return bytes(out), f"bytes replaced at {spots}"
    p, n = rng.randrange(len(data)), rng.randint(1, 200)
    out[p:p + n] = bytes(len(out[p:p + n]))
    return bytes(out), f"{n} bytes zeroed at {p}"


def damaged_cases(paths, per_file, seed):
    """(data, label) pairs, the same for a given seed."""
    rng = random.Random(seed)
    for path in paths:
        data = read(path)
        for _ in range(per_file):
            bad, how = damaged(data, rng)
            yield bad, f"{os.path.basename(path)} {how}"
