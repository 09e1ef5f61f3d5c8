"""Replay the fuzz targets of fuzz/ on their generated seeds and on every input a
fuzzing run found (tests/fuzz_regressions/<target>/): each must end in a result
that passes the target's checks or a conveyor.errors exception. A crash fails the
run (under .ci/sanitize, with the sanitizer's report); a hang is stopped after 120 s."""
import faulthandler
import glob
import importlib
import os
import sys

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
FUZZ = os.path.join(os.path.dirname(TESTS), "fuzz")
TARGETS = ["tfrecord_reader", "example_parser", "image_decoders", "cache_reader", "string_ops",
           "audio_wav"]
REGRESSIONS = sorted(glob.glob(os.path.join(TESTS, "fuzz_regressions", "*", "*")))


def target(name):
    if FUZZ not in sys.path:
        sys.path.insert(0, FUZZ)
    return importlib.import_module(name)


@pytest.fixture(autouse=True)
def _process_settings_restored():
    """The image target lowers the process-wide pixel limit when imported
    and on each input: put it back for the tests that run after these."""
    import conveyor as cv
    limit = cv.io.get_max_image_pixels()
    yield
    cv.io.set_max_image_pixels(limit)


def replay(name, data):
    faulthandler.dump_traceback_later(120, exit=True)
    try:
        target(name).one_input(data)
    finally:
        faulthandler.cancel_dump_traceback_later()


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("seeds"))
    target("seeds").write(root)
    return root


@pytest.mark.parametrize("name", TARGETS)
def test_seeds(name, seeds):
    files = sorted(glob.glob(os.path.join(seeds, name, "*")))
    assert files or name == "image_decoders"  # no JPEG seeds without the shared test data
    for path in files:
        with open(path, "rb") as f:
            replay(name, f.read())


@pytest.mark.parametrize("path", REGRESSIONS,
                         ids=[os.path.relpath(p, os.path.join(TESTS, "fuzz_regressions"))
                              for p in REGRESSIONS])
def test_regression(path):
    name = os.path.basename(os.path.dirname(path))
    assert name in TARGETS, f"{path}: no fuzz target {name}"
    with open(path, "rb") as f:
        replay(name, f.read())
